"""The inference section: the choices conversion makes (vc/inference/, and each kind's network)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vc.errors import ConfigError
from vc.settings.section import Section


@dataclass
class InferenceConfig(Section):
    stop_threshold: float = 0.5
    # Never stop before min_ratio x source frames, never decode past max_ratio x.
    min_ratio: float = 0.2
    max_ratio: float = 3.0
    # Monotonic window at inference: attend only to [peak - back, peak + forward].
    use_monotonic_window: bool = False
    window_backward: int = 2
    window_forward: int = 6
    # How inputs are normalised before the encoder (FeatureStats.normalize_source): "speaker" subtracts
    # the training source speaker's per-band mean, as training does; "utterance" each input's own mean,
    # so a voice or microphone with another average spectrum reaches the encoder centred like the
    # source speaker's speech; "auto" moves the speaker's mean toward the input's by as much as the
    # input strays further than the source speaker's own utterances do: the seen voice converts as
    # with "speaker", a far one nearly as with "utterance" (docs/ablation.md, "Per-input
    # normalisation"). All divide by the source speaker's deviation. Models from before "auto"
    # existed hold no spread and get "speaker".
    source_normalization: str = "auto"
    # "auto" warps each input's frequency axis toward the training source speaker first (vocal
    # tract length normalisation, vc/audio/voice_warp.py) when the model holds that speaker's codebook
    # (models trained since it existed); "none" never warps.
    source_warp: str = "auto"
    # Dropout of the decoder prenet at inference (it trains with model.decoder_prenet_dropout, on so the
    # decoder cannot copy its last frame); None keeps the training rate. 0 is what the ablation adopted
    # (docs/ablation.md, "Averaging and the decode options").
    prenet_dropout: float | None = 0.0
    # Free-running conversion scales the attention energies by this before the softmax: above 1, each
    # step reads a narrower stretch of the source, against the blur a wide attention leaves in the
    # output (docs/ablation.md, "Where the words go"); 1 keeps the trained softmax.
    attention_sharpness: float = 2.0
    # Non-autoregressive converter only: predicted durations are divided by this (> 1 speaks faster).
    speed: float = 1.0

    NAME: ClassVar[str] = "inference"
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "source_normalization": ("speaker", "utterance", "auto"),
        "source_warp": ("auto", "none"),
    }

    def check(self) -> None:
        if not 0 < self.max_ratio or self.min_ratio > self.max_ratio:
            raise ConfigError(
                "inference.min_ratio must not exceed inference.max_ratio, and max_ratio must be positive"
            )
        if self.prenet_dropout is not None and not 0.0 <= self.prenet_dropout < 1.0:
            raise ConfigError(
                f"inference.prenet_dropout must be in [0, 1) or null, got {self.prenet_dropout}"
            )
        if not self.speed > 0:
            raise ConfigError(f"inference.speed must be positive, got {self.speed}")
        if not self.attention_sharpness > 0:
            raise ConfigError(
                f"inference.attention_sharpness must be positive, got {self.attention_sharpness}"
            )
