"""The file format of the small networks that travel with a conversion checkpoint.

The mel -> linear network (vc.training.mel2linear) and the GAN post-filter
(vc.training.postfilter) are each saved beside the checkpoint they serve, or embedded in
an exported model file, as one dict: a format marker, the vc version, the
network's constructor arguments, its weights, the audio settings it was
trained under and a free ``info`` dict. ``load_companion`` finds the one that
serves a checkpoint, the same way for every kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from vc import __version__
from vc.artifacts.checkpoint import load_checkpoint, nonfinite_weights
from vc.config import AudioConfig
from vc.errors import CheckpointError
from vc.fileio import atomic_save, load_marked

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
