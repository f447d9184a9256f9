"""Vocoders: converted log-mels -> audio, one module each behind one registry (as the model kinds are).

griffin-lim   the mel -> linear network (or the filterbank inverse), then fast Griffin-Lim; built in,
              no weights, the design's default (vc.audio.griffin_lim)
hifigan       the same magnitude through HiFi-GAN's mel into a pretrained HiFi-GAN generator
              (vc/vocoders/hifigan.py; the weights come with the [neural] extra)

Every vocoder is a torch module called as ``vocoder(logmel, frame_lens, generator=...)`` that returns
(waves, wave_lens) at the model's sample rate, each wave frames * hop_length samples long.
``build_vocoder`` makes the one a config names with the companion mel -> linear network of a
checkpoint; the Converter, `vc score`'s ceilings and the recipe call it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from vc.artifacts.companion import MEL2LINEAR
from vc.audio.griffin_lim import GriffinLimVocoder
from vc.config import AudioConfig, Config, VocoderConfig
from vc.errors import ConfigError


def _griffin_lim(audio: AudioConfig, vocoder: VocoderConfig, mel2linear, device) -> torch.nn.Module:
    return GriffinLimVocoder(audio, vocoder, mel2linear)


def _hifigan(audio: AudioConfig, vocoder: VocoderConfig, mel2linear, device) -> torch.nn.Module:
    from vc.artifacts.hifigan import load_generator
    from vc.vocoders.hifigan import HifiganVocoder

    generator, signal = load_generator(vocoder.hifigan_checkpoint or None, device)
    return HifiganVocoder(audio, vocoder, generator, signal, mel2linear)


@dataclass(frozen=True)
class Vocoder:
    """One vocoder of the registry."""

    name: str  # vocoder.kind's value, `--vocoder`'s choice
    title: str  # its name in score rows and reports
    build: Callable[..., torch.nn.Module]  # (audio, vocoder settings, mel -> linear network or None, device)


# vocoder.kind's values (vc/config.py CHOICES lists the same names, a test checks).
VOCODERS: dict[str, Vocoder] = {
    v.name: v
    for v in (Vocoder("griffin-lim", "Griffin-Lim", _griffin_lim), Vocoder("hifigan", "HiFi-GAN", _hifigan))
}


def vocoder_name(name: str) -> str:
    """A registry name; ``griffin_lim`` is read as ``griffin-lim``. A ConfigError lists the known ones."""
    name = name.replace("_", "-")
    if name not in VOCODERS:
        raise ConfigError(f"vocoder must be one of {', '.join(VOCODERS)}, got {name!r}")
    return name


def vocoder_overrides(vocoder: str | None, checkpoint: str | Path | None = None) -> list[str]:
    """The vocoder.* overrides that choose ``vocoder`` and a HiFi-GAN generator ``checkpoint`` (which
    implies hifigan); a ConfigError for a checkpoint with another vocoder."""
    if checkpoint is not None:
        if vocoder is not None and vocoder_name(vocoder) != "hifigan":
            raise ConfigError("a vocoder checkpoint is a HiFi-GAN generator: use it with the hifigan vocoder")
        return ["vocoder.kind=hifigan", f"vocoder.hifigan_checkpoint={checkpoint}"]
    return [f"vocoder.kind={vocoder_name(vocoder)}"] if vocoder is not None else []


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
    settings = replace(config.vocoder, kind=vocoder_name(kind)) if kind else config.vocoder
    net = MEL2LINEAR.load(config.audio, checkpoint, mel2linear, device)
    return make_vocoder(config.audio, settings, net, device)


__all__ = ["VOCODERS", "Vocoder", "build_vocoder", "make_vocoder", "vocoder_name", "vocoder_overrides"]
