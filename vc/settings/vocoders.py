"""The vocoder section: which vocoder (vocoder.kind, a name of vc.vocoders.VOCODERS), and the sections of
the vocoders that have settings, each read by its plug-in under vc/vocoders/. This floor knows every
vocoder's section without importing a vocoder, as coqui's configs modules do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from vc.errors import ConfigError
from vc.settings.section import Section


@dataclass
class HifiganConfig(Section):
    """The hifigan vocoder's settings (vocoder.hifigan; vc/vocoders/hifigan/ reads them)."""

    # A generator checkpoint in jik876/hifi-gan's format; empty: the universal V1 generator of the
    # weights package.
    checkpoint: str = ""
    # Frames of its mel (its own frame rate) vocoded per call; every input goes in chunks of this many
    # with the generator's receptive field as context on each side (the same samples, memory bounded).
    # 98 + the universal generator's 2 x 15 context: windows of 128 frames, which fit the caches better
    # than longer ones (0.70-0.75x the time of 226; docs/ablation.md "One window shape for HiFi-GAN").
    chunk_frames: int = 98
    # Through onnxruntime: at most this many frames per call, an input cut into as few equal chunks as
    # fit (with the same context). Its time per frame is flat in the window's length, so longer windows
    # read less context: on the eval set 1.13x the frames that matter against 1.58x in windows of 128
    # (docs/ablation.md "HiFi-GAN through onnxruntime").
    onnx_chunk_frames: int = 400
    # The generator's arithmetic. "auto": bfloat16 up to its last level on a CPU that multiplies bfloat16
    # in hardware (AMX or AVX512-BF16; every score level with float32, docs/ablation.md "The HiFi-GAN
    # generator in bfloat16"), float32 elsewhere (other CPUs would emulate it), on GPUs and where
    # runtime names onnxruntime.
    precision: str = "auto"
    # What runs the generator. "auto": onnxruntime where it computes in float32 on a CPU and onnxruntime
    # is installed (the [neural] extra brings it; the whole conversion 1.6x torch's speed there,
    # docs/ablation.md "HiFi-GAN through onnxruntime"), torch elsewhere (bfloat16, GPUs).
    runtime: str = "auto"

    NAME: ClassVar[str] = "vocoder.hifigan"
    POSITIVE: ClassVar[tuple[str, ...]] = ("chunk_frames", "onnx_chunk_frames")
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "precision": ("auto", "float32", "bfloat16"),
        "runtime": ("auto", "torch", "onnxruntime"),
    }


@dataclass
class GriffinLimConfig(Section):
    """The griffin-lim vocoder's settings (vocoder.griffin_lim; vc/vocoders/griffin_lim.py reads them)."""

    # Fast Griffin-Lim's iterations (Perraudin et al. 2013) and its momentum (0: the original algorithm).
    iters: int = 32
    momentum: float = 0.99
    # The starting phase: "pghi", the phase integrated from the magnitude's own gradients
    # (vc/vocoders/pghi.py, along a spanning tree: the main job's model MOS +0.10 [+0.06, +0.14], words
    # and similarity no worse, for RTF 0.022 against 0.016; the heap before it +0.09 and +0.15 on two
    # models; docs/ablation.md, "PGHI along a spanning tree"), or "random".
    init: str = "pghi"
    # Magnitudes are raised to this power before phase recovery. Above 1 sounds crisper but scales
    # the log spectrum, which costs MCD (docs/ablation.md), so 1.0 by default.
    magnitude_power: float = 1.0
    # The harmonics' depth: each frame's log magnitude above and below its spectral envelope (the
    # cepstrum below 2 ms of quefrency) is scaled by this, the envelope kept; 1.0 leaves it as it is.
    # 1.15 on the main job's model, two seeds: MOS +0.25 and +0.22, Whisper WER +1.5 and +1.5 (noise),
    # similarity +0.002 and -0.004; not the default, the rule asks for similarity no worse (docs/ablation.md,
    # "The harmonics' depth before Griffin-Lim").
    harmonic_depth: float = 1.0
    # The harmonics a converter smeared, lifted before Griffin-Lim (vc/vocoders/harmonics.py): in each
    # voiced frame every harmonic standing lower above the points halfway between them than this many
    # times a recording's height at its frequency is raised to it, the pitch read from the frame's own
    # lowest harmonics; 0: off. 1.5 on the main job's model, two seeds: MOS +0.49 and +0.48, Whisper WER
    # +0.3 and +0.3 (noise), similarity +0.015 and +0.002; 1.0 gained MOS +0.15, 2.0 lost similarity
    # (docs/ablation.md, "Harmonics lifted before Griffin-Lim").
    harmonic_lift: float = 1.5

    NAME: ClassVar[str] = "vocoder.griffin_lim"
    POSITIVE: ClassVar[tuple[str, ...]] = ("iters",)
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"init": ("random", "pghi")}

    def check(self) -> None:
        if self.harmonic_lift < 0:
            raise ConfigError(f"{self.NAME}.harmonic_lift must be 0 (off) or more, got {self.harmonic_lift}")


@dataclass
class VocoderConfig(Section):
    """Which vocoder, and a section for each vocoder that has settings, named as vocoder.kind names it
    (its "-" a "_"; vc.vocoders.Vocoder.settings reads it)."""

    # Which vocoder turns the converted mels into audio: a name of vc.vocoders.VOCODERS, the one list of
    # them (checked there: this floor imports no vocoder). "griffin-lim": the mel -> linear network, then
    # Griffin-Lim; built in, the design's default.
    kind: str = "griffin-lim"
    griffin_lim: GriffinLimConfig = field(default_factory=GriffinLimConfig)
    hifigan: HifiganConfig = field(default_factory=HifiganConfig)

    NAME: ClassVar[str] = "vocoder"
    # Each vocoder's settings in this section before they had their own: a stored config (a checkpoint,
    # the bundled models, an experiment's config.yaml) reads the old key (vocoder.hifigan_checkpoint,
    # vocoder.griffin_lim_iters) as its section's (vocoder.hifigan.checkpoint, vocoder.griffin_lim.iters).
    # Stored configs and config files (an older run's config.yaml, vc.config.load_config) only: a dict or an
    # override must spell the new key.
    MOVED: ClassVar[dict[str, str]] = {
        "hifigan_checkpoint": "hifigan.checkpoint",
        "hifigan_chunk_frames": "hifigan.chunk_frames",
        "hifigan_onnx_chunk_frames": "hifigan.onnx_chunk_frames",
        "hifigan_precision": "hifigan.precision",
        "hifigan_runtime": "hifigan.runtime",
        "griffin_lim_iters": "griffin_lim.iters",
        "momentum": "griffin_lim.momentum",
        "griffin_lim_init": "griffin_lim.init",
        "magnitude_power": "griffin_lim.magnitude_power",
    }

    @classmethod
    def upgrade(cls, values: dict[str, Any]) -> dict[str, Any]:
        """Each old key of MOVED -> its key in its vocoder's section (a new dict)."""
        values = dict(values)
        for old, new in cls.MOVED.items():
            if old in values:
                section, key = new.split(".")
                moved = dict(values.get(section) or {})
                moved.setdefault(key, values.pop(old))
                values[section] = moved
        return values
