"""The mel -> linear magnitude network's file (vc.model.mel2linear): save, find and load it.

The file is a small companion of the conversion checkpoint: `vc convert` and
Converter.from_checkpoint use ``mel2linear.pt`` beside the checkpoint when it
is there (COMPANION_NAME), the one embedded in an exported model file first,
and the filterbank pseudo-inverse otherwise. vc.training.mel2linear trains it.
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
from vc.model.mel2linear import Mel2Linear

log = logging.getLogger(__name__)

FORMAT = "vc-mel2linear"
COMPANION_NAME = "mel2linear.pt"
EMBEDDED_KEY = "vocoder_net"  # where `vc export` puts the network inside a model file


def _build(architecture: str = "resconv", **hparams) -> Mel2Linear:
    """Files written before the body's name was dropped record architecture "resconv", the only body."""
    if architecture != "resconv":
        raise ValueError(f"unknown architecture {architecture!r}")
    return Mel2Linear(**hparams)


KIND = CompanionKind(_build, FORMAT, "mel2linear network", COMPANION_NAME, EMBEDDED_KEY)


def save_mel2linear(path: str | Path, net: Mel2Linear, audio: AudioConfig, info: dict | None = None) -> None:
    """Atomic torch.save of the network, its hyper-parameters and the audio settings it expects."""
    save_network(path, FORMAT, net, net.hparams, audio, info)


def read_mel2linear_payload(path: str | Path, map_location: str | torch.device = "cpu") -> dict:
    """The saved dict of a network file (format checked), for loading or for embedding elsewhere."""
    return read_network_payload(path, KIND.marker, KIND.what, map_location)


def find_mel2linear(checkpoint: str | Path | None, explicit: str | Path | bool | None = None) -> Path | None:
    """The network file to use: ``explicit`` when a path, none when False, else the companion if present."""
    return find_companion(checkpoint, COMPANION_NAME, explicit)


def load_companion_mel2linear(
    audio: AudioConfig,
    checkpoint: str | Path | None,
    mel2linear: str | Path | bool | None = None,
    device: str | torch.device = "cpu",
    payload: dict | None = None,
) -> Mel2Linear | None:
    """The network `vc convert` uses with ``checkpoint``, or None (the pseudo-inverse); logs which.

    ``mel2linear``: a network file; False: none; None: the one inside an exported
    or bundled model file, else the companion beside the checkpoint (see
    vc.artifacts.companion.load_companion). ``payload``: the checkpoint when already loaded,
    so it is not read twice.
    """
    net, where = load_companion(KIND, audio, checkpoint, mel2linear, device, payload)
    # debug, not info: vc convert's stderr on bad input must stay one error line (vc -v shows it)
    if net is None:
        log.debug("vocoder: mel -> linear by filterbank pseudo-inverse (%s)", where)
    else:
        log.debug("vocoder: mel -> linear by the network %s", where)
    return net
