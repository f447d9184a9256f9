"""The small networks that travel with a conversion checkpoint, one shape for every kind.

A companion kind (``CompanionKind``: MEL2LINEAR, the mel -> linear network of vc.training.mel2linear
that both vocoders read; POSTFILTER, the GAN post-filter of vc.training.postfilter) is saved beside
the checkpoint it serves, or embedded in an exported model file, as one dict: a format marker, the vc
version, the network's constructor arguments, its weights, the audio settings it was trained under
and a free ``info`` dict. Each kind saves, finds, reads and loads its files the same way
(``kind.save``, ``kind.find``, ``kind.read_payload``, ``kind.load``); `vc export` embeds every kind in
COMPANIONS. A new companion is one more CompanionKind here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from vc import __version__
from vc.artifacts.checkpoint import load_checkpoint, nonfinite_weights
from vc.errors import CheckpointError
from vc.fileio import atomic_save, load_marked
from vc.model.mel2linear import Mel2Linear
from vc.model.postfilter import MelPostfilter
from vc.settings.audio import AudioConfig

log = logging.getLogger(__name__)

# The audio settings a network was trained under; any difference changes its input or output.
AUDIO_KEYS = (
    "sample_rate", "n_fft", "win_length", "hop_length", "n_mels", "fmin", "fmax",
    "spectrogram_power", "log_base", "log_floor",
)  # fmt: skip


def save_network(
    path: str | Path, marker: str, net: nn.Module, hparams: dict, audio: AudioConfig, info: dict | None
) -> None:
    """Atomic torch.save of the network, its hyper-parameters and the audio settings it expects;
    refuses weights that are not finite."""
    if bad := nonfinite_weights(net.state_dict()):
        raise CheckpointError(f"refusing to write {path}: its weights are not finite ({bad})")
    payload = {
        "format": marker,
        "vc_version": __version__,
        "hparams": dict(hparams),
        "model": net.state_dict(),
        "audio": {key: getattr(audio, key) for key in AUDIO_KEYS},
        "info": dict(info or {}),
    }
    atomic_save(path, payload)


def read_network_payload(
    path: str | Path, marker: str, what: str, map_location: str | torch.device = "cpu"
) -> dict:
    """The saved dict of a network file, its ``marker`` checked; ``what`` names the kind in errors."""
    return load_marked(path, marker, what, CheckpointError, map_location=map_location)


def network_from_payload(
    payload: dict,
    build: Callable[..., nn.Module],
    what: str,
    where: str | Path,
    audio: AudioConfig | None = None,
    map_location: str | torch.device = "cpu",
) -> nn.Module:
    """``build(**hparams)`` with the saved weights, in eval mode, float32.

    ``payload``: a file's dict or one embedded in a model file. With ``audio``,
    refuse one trained under other audio settings; ``where`` and ``what`` name it in errors.
    """
    try:
        net = build(**payload["hparams"])
        net.load_state_dict(payload["model"])  # copies into float32 parameters, also from fp16
        trained = payload["audio"]
    except (RuntimeError, KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{where} is not a usable {what}: {str(exc).splitlines()[0]}") from None
    if bad := nonfinite_weights(net.state_dict()):
        raise CheckpointError(f"{where} holds a {what} with non-finite weights ({bad}): it diverged")
    if audio is not None:
        check_audio(trained, audio, where)
    return net.to(map_location).eval()


def check_audio(trained: dict, audio: AudioConfig, where: str | Path) -> None:
    """Refuse a network trained under other audio settings than ``audio``."""
    for key in AUDIO_KEYS:
        if trained.get(key) != getattr(audio, key):
            raise CheckpointError(
                f"{where} was trained with audio.{key}={trained.get(key)}, the model uses {getattr(audio, key)}"
            )


def find_companion(
    checkpoint: str | Path | None, name: str, explicit: str | Path | bool | None = None
) -> Path | None:
    """The network file to use: ``explicit`` when a path, none when False, else ``name`` beside the
    checkpoint if present."""
    if explicit is False:
        return None
    if explicit not in (None, True):
        return Path(explicit)
    if checkpoint is None:
        return None
    companion = Path(checkpoint).parent / name
    return companion if companion.is_file() else None


@dataclass(frozen=True)
class CompanionKind:
    """One kind of companion network: how it is built and where its weights are kept."""

    build: Callable[..., nn.Module]  # called with the saved hyper-parameters
    marker: str  # the format marker of its files
    what: str  # its name in messages
    file_name: str  # its file beside a checkpoint
    embedded_key: str  # its key inside an exported or bundled model file

    def save(self, path: str | Path, net: nn.Module, audio: AudioConfig, info: dict | None = None) -> None:
        """Atomic torch.save of the network, its hyper-parameters and the audio settings it expects."""
        save_network(path, self.marker, net, net.hparams, audio, info)

    def read_payload(self, path: str | Path, map_location: str | torch.device = "cpu") -> dict:
        """The saved dict of a file of this kind (marker checked), for loading or embedding elsewhere."""
        return read_network_payload(path, self.marker, self.what, map_location)

    def find(self, checkpoint: str | Path | None, explicit: str | Path | bool | None = None) -> Path | None:
        """The file to use: ``explicit`` when a path, none when False, else the one beside the checkpoint."""
        return find_companion(checkpoint, self.file_name, explicit)

    def load(
        self,
        audio: AudioConfig,
        checkpoint: str | Path | None,
        explicit: str | Path | bool | None = None,
        device: str | torch.device = "cpu",
        payload: dict | None = None,
    ) -> nn.Module | None:
        """The network that serves ``checkpoint`` (see load_companion), or None; logs which."""
        net, where = load_companion(self, audio, checkpoint, explicit, device, payload)
        # debug, not info: vc convert's stderr on bad input must stay one error line (vc -v shows it)
        log.debug("%s: %s", self.what, f"none ({where})" if net is None else f"the network {where}")
        return net


def _mel2linear(architecture: str = "resconv", **hparams) -> Mel2Linear:
    """Files written before the body's name was dropped record architecture "resconv", the only body."""
    if architecture != "resconv":
        raise ValueError(f"unknown architecture {architecture!r}")
    return Mel2Linear(**hparams)


# log-mel -> log10 linear magnitude (vc.model.mel2linear): what both vocoders read; without one, the
# filterbank inverse. "vocoder_net" is where `vc export` has always put it.
MEL2LINEAR = CompanionKind(_mel2linear, "vc-mel2linear", "mel2linear network", "mel2linear.pt", "vocoder_net")
# the converted log-mel, sharpened in time (vc.model.postfilter)
POSTFILTER = CompanionKind(MelPostfilter, "vc-postfilter", "post-filter", "postfilter.pt", "postfilter")
COMPANIONS = (MEL2LINEAR, POSTFILTER)


def load_companion(
    kind: CompanionKind,
    audio: AudioConfig,
    checkpoint: str | Path | None,
    explicit: str | Path | bool | None = None,
    device: str | torch.device = "cpu",
    payload: dict | None = None,
) -> tuple[nn.Module | None, str]:
    """The network of ``kind`` that serves ``checkpoint``, and where it came from.

    ``explicit``: a network file; False: none; None: the one embedded in the
    model file, else the file beside the checkpoint. ``payload``: the
    checkpoint's dict when already loaded, so it is not read twice. Returns
    (None, why) when there is none.
    """
    if explicit is None and checkpoint is not None:
        if payload is None:
            payload = load_checkpoint(checkpoint, map_location=device)
        if kind.embedded_key in payload:
            net = network_from_payload(
                payload[kind.embedded_key], kind.build, kind.what, checkpoint, audio, device
            )
            return net, f"inside {checkpoint}"
    path = find_companion(checkpoint, kind.file_name, explicit)
    if path is None:
        return None, "as asked" if explicit is False else f"no {kind.file_name} beside the checkpoint"
    net = network_from_payload(
        read_network_payload(path, kind.marker, kind.what, device), kind.build, kind.what, path, audio, device
    )
    return net, f"in {path}"
