"""The GAN post-filter's file (vc.model.postfilter): save, find and load it.

The file is a small companion of the conversion checkpoint: `vc convert` and
Converter.from_checkpoint apply ``postfilter.pt`` beside the checkpoint when it
is there (COMPANION_NAME), and `vc export` embeds it. vc.training.postfilter trains it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from vc.artifacts.companion import (
    CompanionKind,
    find_companion,
    load_companion,
    read_network_payload,
    save_network,
)
from vc.config import AudioConfig
from vc.model.postfilter import MelPostfilter

log = logging.getLogger(__name__)

FORMAT = "vc-postfilter"
COMPANION_NAME = "postfilter.pt"
EMBEDDED_KEY = "postfilter"  # where `vc export` puts the network inside a model file
KIND = CompanionKind(MelPostfilter, FORMAT, "post-filter", COMPANION_NAME, EMBEDDED_KEY)


def save_postfilter(
    path: str | Path, net: MelPostfilter, audio: AudioConfig, info: dict | None = None
) -> None:
    """Atomic torch.save of the generator, its hyper-parameters and the audio settings it expects."""
    save_network(path, FORMAT, net, net.hparams, audio, info)


def read_postfilter_payload(path: str | Path, map_location: str | torch.device = "cpu") -> dict:
    """The saved dict of a post-filter file (format checked), for loading or embedding."""
    return read_network_payload(path, KIND.marker, KIND.what, map_location)


def find_postfilter(checkpoint: str | Path | None, explicit: str | Path | bool | None = None) -> Path | None:
    """The post-filter file to use: ``explicit`` when a path, none when False, else the companion if present."""
    return find_companion(checkpoint, COMPANION_NAME, explicit)


def load_postfilter(
    audio: AudioConfig,
    checkpoint: str | Path | None,
    postfilter: str | Path | bool | None = None,
    device: str | torch.device = "cpu",
    payload: dict | None = None,
) -> MelPostfilter | None:
    """The post-filter `vc convert` applies with ``checkpoint``, or None.

    ``postfilter``: a file; False: none; None: the one inside an exported model
    file, else the companion beside the checkpoint (vc.artifacts.companion.load_companion).
    """
    net, where = load_companion(KIND, audio, checkpoint, postfilter, device, payload)
    log.debug("post-filter: %s", "none" if net is None else f"the network {where}")
    return net
