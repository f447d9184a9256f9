"""Typed configuration: dataclasses, strict YAML loading and dotted overrides.

YAML keys equal dataclass field names equal constructor keyword arguments, so a
key means the same thing everywhere. Unknown keys and wrong types are errors
that name the valid keys: a typo must never be silently ignored.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from vc import DIST_NAME
from vc.errors import ConfigError


@dataclass
class AudioConfig:
    sample_rate: int = 16000
    n_fft: int = 1024
    win_length: int = 1024
    hop_length: int = 256
    n_mels: int = 80
    fmin: float = 80.0
    fmax: float = 7600.0
    # Magnitude (1.0) or power (2.0) spectrogram under the mel filterbank.
    spectrogram_power: float = 1.0
    # log_base(max(mel, log_floor)); both stored in every checkpoint.
    log_base: float = 10.0
    log_floor: float = 1e-10
    # Leading/trailing silence quieter than peak - trim_top_db is cut (0 = off).
    trim_top_db: float = 30.0
    # Inputs longer than this are refused with a clear error (seconds).
    max_duration: float = 60.0


@dataclass
class ModelConfig:
    """The model section's settings every kind shares: which kind, the encoder and the postnet.

    Each kind's own settings extend this class in the kind's module (vc/kinds/; e.g. the attention
    model's decoder in vc/kinds/attention.py): the model section is read into the class of its
    model.kind, so a key of another kind is an error, not silently ignored.
    """

    # Which network: "attention" (vc/kinds/attention.py), "nonautoregressive", "recognition_synthesis"
    # (vc/kinds/).
    kind: str = "attention"
    # The number of mel bands comes from audio.n_mels.
    # Encoder: frame stacking, prenet, convolutions, bidirectional LSTM.
    encoder_reduction_factor: int = 2
    encoder_prenet_dim: int = 256
    encoder_conv_layers: int = 2
    encoder_conv_channels: int = 256
    encoder_conv_kernel: int = 5
    encoder_hidden_dim: int = 128  # per direction; annotations are 2x this
    encoder_dropout: float = 0.1
    # Postnet (Tacotron 2): residual conv stack on the predicted mels.
    postnet_layers: int = 5
    postnet_channels: int = 256
    postnet_kernel: int = 5
    postnet_dropout: float = 0.5

    # Keys that must be positive / odd (to keep lengths); a kind's class adds its own.
    POSITIVE: ClassVar[tuple[str, ...]] = (
        "encoder_reduction_factor", "encoder_conv_layers", "encoder_hidden_dim", "postnet_layers"
    )  # fmt: skip
    ODD: ClassVar[tuple[str, ...]] = ("encoder_conv_kernel", "postnet_kernel")

    def __post_init__(self):
        for cls in type(self).__mro__:
            for key in vars(cls).get("POSITIVE", ()):
                if getattr(self, key) <= 0:
                    raise ConfigError(f"model.{key} must be positive, got {getattr(self, key)}")
            for key in vars(cls).get("ODD", ()):
                if getattr(self, key) % 2 == 0:
                    raise ConfigError(f"model.{key} must be odd (to keep lengths), got {getattr(self, key)}")


# The model kinds' sections by name. A kind owns its settings (vc/kinds/), and this module imports
# nothing above it: the package's entry point "vc: model_sections" (pyproject.toml) names the function
# of vc.kinds that lists them, and reading a config asks it, so `Config()` needs no import beforehand
# and a kind added to vc.kinds.KINDS (a test's toy kind) is read like the others.
ENTRY_POINT_GROUP = "vc"


@functools.cache
def _sections_function() -> Callable[[], dict[str, type[ModelConfig]]]:
    # Every copy's metadata, not entry_points()'s first per name: a stale vc_tacotron.egg-info in a
    # checkout (a build's leftover, first on sys.path) must not hide the installed package's.
    found = [
        entry
        for distribution in importlib.metadata.distributions(name=DIST_NAME)
        for entry in distribution.entry_points
        if entry.group == ENTRY_POINT_GROUP and entry.name == "model_sections"
    ]
    if not found:
        raise ConfigError(
            "vc's model kinds are not registered: install the package (pip install -e .) so its entry "
            "points exist"
        )
    return found[0].load()


def model_sections() -> dict[str, type[ModelConfig]]:
    """model.kind -> the class of its model section, as vc.kinds lists them now."""
    return _sections_function()()


def model_section(kind: str) -> type[ModelConfig]:
    """The class of model.kind's section; a ConfigError listing the kinds for an unknown name."""
    sections = model_sections()
    try:
        return sections[kind]
    except KeyError:
        raise ConfigError(f"model.kind must be one of {', '.join(sections)}, got {kind!r}") from None


@dataclass
class InferenceConfig:
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


@dataclass
class HifiganConfig:
    """The hifigan vocoder's settings (vocoder.hifigan; vc/vocoders/hifigan/ reads them). The config floor
    knows every vocoder's section without importing a vocoder, as coqui's configs modules."""

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

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "precision": ("auto", "float32", "bfloat16"),
        "runtime": ("auto", "torch", "onnxruntime"),
    }

    def __post_init__(self):
        for key in ("chunk_frames", "onnx_chunk_frames"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"vocoder.hifigan.{key} must be positive, got {getattr(self, key)}")
        for key, allowed in self.CHOICES.items():
            if getattr(self, key) not in allowed:
                raise ConfigError(
                    f"vocoder.hifigan.{key} must be one of {', '.join(allowed)}, got {getattr(self, key)!r}"
                )


@dataclass
class VocoderConfig:
    # Which vocoder turns the converted mels into audio: a name of vc.vocoders.VOCODERS, the one list of
    # them (checked there: this floor imports no vocoder). "griffin-lim": the mel -> linear network, then
    # Griffin-Lim; built in, the design's default.
    kind: str = "griffin-lim"
    # Griffin-Lim's settings (the built-in vocoder's, in the section itself).
    griffin_lim_iters: int = 32
    momentum: float = 0.99
    # Griffin-Lim's starting phase: "pghi", the phase integrated from the magnitude's own gradients
    # (vc/vocoders/pghi.py, along a spanning tree: the main job's model MOS +0.10 [+0.06, +0.14], words
    # and similarity no worse, for RTF 0.022 against 0.016; the heap before it +0.09 and +0.15 on two
    # models; docs/ablation.md, "PGHI along a spanning tree"), or "random".
    griffin_lim_init: str = "pghi"
    # Magnitudes are raised to this power before phase recovery. Above 1 sounds crisper but scales
    # the log spectrum, which costs MCD (docs/ablation.md), so 1.0 by default.
    magnitude_power: float = 1.0
    hifigan: HifiganConfig = field(default_factory=HifiganConfig)


@dataclass
class DataConfig:
    train_list: str = ""
    dev_list: str = ""
    cache_dir: str = ""  # defaults to EXP/features
    # The source speaker's pairs, when the training list holds other voices too (many-to-one training):
    # the input statistics and the warp codebook (vc/audio/voice_warp.py) come from its sources.
    # Empty: from the training list.
    stats_list: str = ""
    # The converter timed by durations (nonautoregressive): the file `vc durations` wrote
    # (every train and dev utterance).
    durations: str = ""
    # The phone alignments `vc durations --phones` wrote beside its durations (every train and dev
    # utterance): the labels of the phonetic loss (train.phonetic_weight).
    phones: str = ""
    batch_size: int = 32
    num_workers: int = 0
    # Fixed dev utterances whose alignments are logged (first N of the dev list).
    num_fixed_utterances: int = 2


@dataclass
class AugmentConfig:
    """Source-side augmentation during training (vc/training/augment.py); the target is never changed
    (a kind that reads the target's own frames has what it hears of them augmented)."""

    # Fraction of training source utterances augmented per step; 0 = off (the bdl -> slt default).
    probability: float = 0.0
    # Fraction of the phone recognizer's training crops (both speakers' frames, each by its own
    # statistics) augmented the same way, so what it reads of content is heard through voices and
    # channels the pair never had; 0 = off.
    recognizer_probability: float = 0.0
    # Frequency warp factor range: formants and pitch scaled together (0.8-1.25 spans male to child).
    warp_min: float = 0.8
    warp_max: float = 1.25
    # Uniform gain in +-gain_db, and a spectral tilt of +-tilt_db from the lowest to the highest band.
    gain_db: float = 6.0
    tilt_db: float = 6.0
    # SpecAugment: this many bands / frame spans, each up to this wide, set to the speaker mean.
    freq_masks: int = 2
    freq_mask_width: int = 8
    time_masks: int = 2
    time_mask_width: int = 10


@dataclass
class TrainConfig:
    seed: int = 1
    max_steps: int = 2000
    max_minutes: float = 0.0  # 0 = no time limit
    learning_rate: float = 1e-3
    weight_decay: float = 1e-6
    warmup_steps: int = 100
    # After warmup the learning rate decays as 1/sqrt(step) ("noam"), stays ("constant"), or falls
    # linearly to zero at the end of the budget, max_steps or max_minutes, whichever comes first
    # ("linear"; a time limit makes the schedule follow the clock: budgeted training, Li et al. 2020).
    decay: str = "linear"
    grad_clip: float = 1.0
    # The phonetic loss (vc/training/phonetic.py; the converters, with data.phones): this weight x the
    # cross-entropy of a frozen phone classifier on the output frames; 0 = off. The classifier (the run's
    # phone recognizer, also the recognition-synthesis converter's) trains first, for phonetic_minutes
    # (part of the run's time, not of train.max_minutes).
    phonetic_weight: float = 0.0
    phonetic_minutes: float = 2.0
    # Train on a random window of this many frames of each utterance (the kinds whose input and output
    # share one timeline: the recognition-synthesis converter's parallel decoder); 0 = whole utterances.
    crop_frames: int = 0
    eval_every: int = 200
    log_every: int = 10
    keep_checkpoints: int = 3
    evolution_columns: int = 8
    amp: bool = True  # only used on CUDA
    # A step whose loss or gradient is not finite is skipped; this many in a row stop training with an error
    # (vc/training/nonfinite.py): the weights have diverged, and later checkpoints would be poisoned. Under
    # AMP the first steps may overflow while the gradient scaler halves its scale; 10 halvings are plenty.
    max_nonfinite_steps: int = 10
    # Which checkpoint becomes best.pt: the lowest teacher-forced dev loss ("loss"), or the
    # lowest mel-cepstral distance of free-running dev conversions ("free_running", see
    # vc/training/selection.py), which keeps tracking quality after the loss has gone flat.
    select_by: str = "loss"
    select_utterances: int = 32  # dev utterances converted for "free_running" and model.until_converts
    # Fine-tuning: the model weights of this checkpoint (vc train's, vc average's or an exported model)
    # to start from; the step, optimizer and schedule start fresh. "" = random initial weights.
    init_from: str = ""


@dataclass
class Mel2LinearConfig:
    """The mel -> linear network's training (vc mel2linear-train, recipe stage 4)."""

    channels: int = 128  # 256 trains at half the steps in the same minutes, for no gain (docs/ablation.md)
    layers: int = 4
    kernel: int = 5
    batch_size: int = 16
    crop_frames: int = 96
    learning_rate: float = 1e-3
    # The step budget: what 3 minutes make on the slowest CPU we use (AMD EPYC family 25). Its 6 minutes
    # there and a faster CPU's 9019 steps scored no better (docs/ablation.md, "Stage 4 on step budgets"),
    # so every CPU trains the same network and a fast one finishes sooner; max_minutes stays the cap.
    max_steps: int = 1880
    max_minutes: float = 6.0  # feature extraction included; 0 = no time limit
    valid_files: int = 10  # held out from the end of the (sorted) file list
    valid_every: int = 250
    # Weight of the spectral convergence loss beside the log-magnitude L1 (a weak gain after Griffin-Lim,
    # docs/ablation.md).
    spectral_convergence_weight: float = 1.0
    seed: int = 1


@dataclass
class PostfilterConfig:
    """The GAN post-filter's training (vc postfilter-train, recipe stage 4 with --postfilter_minutes)."""

    max_minutes: float = 6.0  # pair extraction included; 0 = no time limit
    # 0 = no step limit. 484 (3 minutes on the slowest CPU we use): twice that scored level (MCD +0.08
    # dB), a faster CPU's 3548 steps sharpened more and scored worse on MCD and MOS (docs/ablation.md,
    # "Stage 4 on step budgets").
    max_steps: int = 484
    batch_size: int = 32
    crop_frames: int = 64  # about 1 s of 16 ms frames per training example
    learning_rate: float = 2e-4
    warmup_steps: int = 300  # L1 alone first: the discriminator meets a sensible generator
    l1_weight: float = 10.0
    adversarial_weight: float = 1.0
    feature_matching_weight: float = 2.0
    channels: int = 256
    valid_files: int = 10
    seed: int = 0


@dataclass
class Config:
    audio: AudioConfig = field(default_factory=AudioConfig)
    model: ModelConfig = field(default_factory=lambda: model_section("attention")())
    inference: InferenceConfig = field(default_factory=InferenceConfig)
    vocoder: VocoderConfig = field(default_factory=VocoderConfig)
    data: DataConfig = field(default_factory=DataConfig)
    augment: AugmentConfig = field(default_factory=AugmentConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    mel2linear: Mel2LinearConfig = field(default_factory=Mel2LinearConfig)
    postfilter: PostfilterConfig = field(default_factory=PostfilterConfig)

    def __post_init__(self):
        _validate(self)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, stored: bool = False) -> Config:
        """A config from its dict (YAML). ``stored``: a config a checkpoint or experiment folder holds;
        those from before each kind had its own section list every kind's model settings, and the
        other kinds' are dropped; those from before HiFi-GAN had its own section hold its settings as
        vocoder.hifigan_KEY (HIFIGAN_MOVED)."""
        data = _without_retired(data or {})
        if stored:
            _hifigan_moved(data)
        model = data.get("model", {})
        section = model_section(model.get("kind", "attention") if isinstance(model, dict) else "attention")
        if isinstance(model, dict):
            data["model"] = _other_kinds_dropped(model, section) if stored else model
            _check_model_keys(data["model"], section)
        return _build(cls, data, prefix="", classes={"model": section})

    def with_overrides(self, overrides: list[str]) -> Config:
        """The config with each section.key=value set, in order. A new model.kind keeps the shared model
        settings and takes that kind's defaults for its own (set them after it)."""
        data = self.to_dict()
        for item in overrides:
            key = item.split("=", 1)[0].strip()
            if key.startswith("train.") and key[len("train.") :] in MOVED_TO_MODEL:
                item = "model." + item.strip()[len("train.") :]  # its section now (MOVED_TO_MODEL)
            kind = data["model"]["kind"]
            try:
                _apply_override(data, item)
            except ConfigError:
                key = item.split("=", 1)[0].strip()
                if key.startswith("model."):  # another kind's setting: say so
                    _check_model_keys({"kind": kind, key[len("model.") :]: None}, model_section(kind))
                raise
            if data["model"]["kind"] != kind:
                new = model_section(data["model"]["kind"])
                shared = {k: v for k, v in data["model"].items() if k in _shared_keys()}
                data["model"] = {**dataclasses.asdict(new()), **shared}
        return Config.from_dict(data)


POSITIVE = {
    "audio": ("sample_rate", "n_fft", "win_length", "hop_length", "n_mels", "max_duration"),
    "vocoder": ("griffin_lim_iters",),
    "data": ("batch_size", "num_fixed_utterances"),
    "train": ("max_steps", "eval_every", "log_every", "evolution_columns", "select_utterances"),
    "mel2linear": ("channels", "layers", "batch_size", "crop_frames", "max_steps", "valid_every"),
    "postfilter": ("batch_size", "crop_frames", "channels"),
}
# Text keys with a fixed set of values: (section, key) -> the values allowed.
CHOICES = {
    ("inference", "source_normalization"): ("speaker", "utterance", "auto"),
    ("inference", "source_warp"): ("auto", "none"),
    ("train", "select_by"): ("loss", "free_running"),
    ("train", "decay"): ("noam", "constant", "linear"),
    ("vocoder", "griffin_lim_init"): ("random", "pghi"),
}


def _validate(config: Config) -> None:
    """Value checks a type cannot express; each error names the key."""
    for section, keys in POSITIVE.items():
        for key in keys:
            if getattr(getattr(config, section), key) <= 0:
                raise ConfigError(
                    f"{section}.{key} must be positive, got {getattr(getattr(config, section), key)}"
                )
    for (section, key), allowed in CHOICES.items():
        value = getattr(getattr(config, section), key)
        if value not in allowed:
            raise ConfigError(f"{section}.{key} must be one of {', '.join(allowed)}, got {value!r}")
    if config.audio.win_length > config.audio.n_fft:
        raise ConfigError(f"audio.win_length ({config.audio.win_length}) must not exceed audio.n_fft")
    if not 0 < config.inference.max_ratio or config.inference.min_ratio > config.inference.max_ratio:
        raise ConfigError(
            "inference.min_ratio must not exceed inference.max_ratio, and max_ratio must be positive"
        )
    dropout = config.inference.prenet_dropout
    if dropout is not None and not 0.0 <= dropout < 1.0:
        raise ConfigError(f"inference.prenet_dropout must be in [0, 1) or null, got {dropout}")
    if not config.inference.speed > 0:
        raise ConfigError(f"inference.speed must be positive, got {config.inference.speed}")
    if not config.inference.attention_sharpness > 0:
        raise ConfigError(
            f"inference.attention_sharpness must be positive, got {config.inference.attention_sharpness}"
        )
    augment = config.augment
    for key in ("probability", "recognizer_probability"):
        if not 0.0 <= getattr(augment, key) <= 1.0:
            raise ConfigError(f"augment.{key} must be in [0, 1], got {getattr(augment, key)}")
    if not 0 < augment.warp_min <= augment.warp_max:
        raise ConfigError(
            f"augment.warp_min ({augment.warp_min}) must be positive and not exceed augment.warp_max"
        )
    for key in ("gain_db", "tilt_db", "freq_masks", "freq_mask_width", "time_masks", "time_mask_width"):
        if getattr(augment, key) < 0:
            raise ConfigError(f"augment.{key} must not be negative, got {getattr(augment, key)}")
    augments = augment.probability > 0 or augment.recognizer_probability > 0
    if augments and augment.freq_masks > 0 and augment.freq_mask_width >= config.audio.n_mels:
        raise ConfigError(f"augment.freq_mask_width must be below audio.n_mels ({config.audio.n_mels})")


# Keys of dropped experiments (docs/ablation.md names each and the commit that removed it) -> the value
# that means what the code does now (for most, "off"). Stored configs (checkpoints from before the
# removal) load when they hold that value; any other value is an error that names the experiment.
RETIRED = {
    ("train", "attention_entropy_weight"): 0.0,
    ("train", "attention_entropy_from"): None,  # any value: it only mattered with a weight
    ("train", "spectral_loss"): "l1+l2",
    ("train", "init_encoder"): "",
    ("train", "guided_attention_decay"): 1.0,
    ("postfilter", "adversarial"): True,  # False (L1 alone, --no-adversarial) removed in e23b1f5
}


# Training settings that one kind's losses or stopping rule read, moved from the train section into the
# model section of the kinds that have them (each kind owns its settings, vc/kinds/). An older config or
# checkpoint's train.KEY is read as model.KEY when model.kind's section has it, and dropped when it has
# not (it changed nothing for that kind); an override train.KEY=VALUE is read as model.KEY=VALUE.
MOVED_TO_MODEL = (
    "stop_pos_weight",
    "guided_attention_sigma",
    "guided_attention_weight",
    "duration_loss_weight",
    "until_converts",
    "converts_focus",
    "converts_gain_db",
)


def _moved_to_model(data: dict[str, Any]) -> None:
    """train.KEY of MOVED_TO_MODEL -> model.KEY (where model.kind's section has it; else dropped), in place."""
    train, model = data.get("train"), data.get("model", {})
    if not isinstance(train, dict) or not isinstance(model, dict):
        return  # a malformed section: reading it says what is wrong
    section = model_section(model.get("kind", "attention"))
    fields = {f.name for f in dataclasses.fields(section)}
    for key in MOVED_TO_MODEL:
        if key in train:
            value = train.pop(key)
            if key in fields:
                model.setdefault(key, value)
    if model:
        data["model"] = model


# HiFi-GAN's settings in the vocoder section before they had their own (vocoder.hifigan): a stored config
# (a checkpoint, the bundled models, an experiment's config.yaml) reads vocoder.hifigan_KEY as
# vocoder.hifigan.KEY. Only stored configs: a config or an override written now spells the new key.
HIFIGAN_MOVED = ("checkpoint", "chunk_frames", "onnx_chunk_frames", "precision", "runtime")


def _hifigan_moved(data: dict[str, Any]) -> None:
    """vocoder.hifigan_KEY of HIFIGAN_MOVED -> vocoder.hifigan.KEY, in place (the section copied)."""
    vocoder = data.get("vocoder")
    if not isinstance(vocoder, dict) or not any(f"hifigan_{key}" in vocoder for key in HIFIGAN_MOVED):
        return
    vocoder = dict(vocoder)
    section = dict(vocoder.get("hifigan") or {})
    for key in HIFIGAN_MOVED:
        if f"hifigan_{key}" in vocoder:
            section.setdefault(key, vocoder.pop(f"hifigan_{key}"))
    data["vocoder"] = {**vocoder, "hifigan": section}


def _without_retired(data: dict[str, Any]) -> dict[str, Any]:
    data = {section: dict(values) if isinstance(values, dict) else values for section, values in data.items()}
    _moved_to_model(data)
    for (section, key), off in RETIRED.items():
        values = data.get(section)
        if not isinstance(values, dict) or key not in values:
            continue
        value = values.pop(key)
        if off is not None and value != off:
            raise ConfigError(
                f"{section}.{key} was an experiment and has been removed (docs/ablation.md names the "
                f"commit); only {off!r}, what the code does now, is still read"
            )
    return data


def _shared_keys() -> set[str]:
    """The model settings every kind has (ModelConfig's)."""
    return {f.name for f in dataclasses.fields(ModelConfig)}


def _own_keys(section: type) -> set[str]:
    """The keys a kind's section adds to the shared model settings."""
    return {f.name for f in dataclasses.fields(section)} - _shared_keys()


def _other_kinds_dropped(model: dict[str, Any], section: type) -> dict[str, Any]:
    """A stored model section without the settings of the kinds it is not (see Config.from_dict)."""
    others = set().union(*map(_own_keys, model_sections().values())) - _own_keys(section)
    return {key: value for key, value in model.items() if key not in others}


def _check_model_keys(model: dict[str, Any], section: type) -> None:
    """A key of another kind's section is named as such (an unknown one _build names)."""
    for key in model:
        owners = [name for name, other in model_sections().items() if key in _own_keys(other)]
        if owners and key not in _own_keys(section):
            raise ConfigError(
                f"model.{key} is a setting of model.kind {' / '.join(owners)}, not of {model.get('kind', 'attention')}"
            )


def _field_types(cls) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _build(cls, data: dict[str, Any], prefix: str, classes: dict[str, type] | None = None):
    """``cls`` from ``data``, every key checked; ``classes``: the class of a section other than its
    type hint's (the model section's kind)."""
    if not isinstance(data, dict):
        raise ConfigError(f"'{prefix.rstrip('.') or 'config'}' must be a mapping, got {data!r}")
    types_ = {**_field_types(cls), **(classes or {})}
    unknown = sorted(set(data) - set(types_))
    if unknown:
        raise ConfigError(
            f"unknown config key '{prefix}{unknown[0]}'; valid keys: {', '.join(prefix + k for k in types_)}"
        )
    kwargs = {}
    for name, value in data.items():
        kind = types_[name]
        key = prefix + name
        if dataclasses.is_dataclass(kind):
            kwargs[name] = _build(kind, value, prefix=key + ".")
        else:
            kwargs[name] = _check_type(key, value, kind)
    return cls(**kwargs)


def _check_type(key: str, value: Any, kind: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(kind):
            try:
                return _check_type(key, value, option)
            except ConfigError:
                continue
        raise ConfigError(f"config key '{key}' expects {kind}, got {value!r}")
    if kind is type(None):
        if value is None:
            return None
    elif kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads 1e-3 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind is bool or kind is str:
        if isinstance(value, kind):
            return value
    elif origin is list:
        if isinstance(value, list):
            (item_kind,) = typing.get_args(kind)
            return [_check_type(key, v, item_kind) for v in value]
    else:
        raise ConfigError(f"config key '{key}' has an unsupported type {kind}")
    name = getattr(kind, "__name__", str(kind))
    raise ConfigError(f"config key '{key}' expects {name}, got {value!r}")


def _locate(data: dict[str, Any], dotted: str) -> tuple[dict[str, Any], str]:
    """The section of ``data`` holding the key ``dotted`` (section.key), and the key; an unknown section
    or key is an error that lists the valid ones."""
    parts = dotted.strip().split(".")
    node = data
    for depth, part in enumerate(parts[:-1]):
        if not isinstance(node.get(part), dict):
            valid = ", ".join(k for k, v in node.items() if isinstance(v, dict))
            where = ".".join(parts[: depth + 1])
            raise ConfigError(f"unknown config section '{where}'; valid sections: {valid}")
        node = node[part]
    if parts[-1] not in node:
        prefix = ".".join(parts[:-1])
        valid = ", ".join(f"{prefix}.{k}" if prefix else k for k in node)
        raise ConfigError(f"unknown config key '{dotted}'; valid keys: {valid}")
    return node, parts[-1]


def _apply_override(data: dict[str, Any], item: str) -> None:
    if "=" not in item:
        raise ConfigError(f"override '{item}' must look like section.key=value")
    dotted, raw = item.split("=", 1)
    node, key = _locate(data, dotted)
    if isinstance(node[key], str):  # text fields (paths, names) take the text as typed
        node[key] = raw
        return
    # YAML parses the value so that 3 -> int, 0.5 -> float, true -> bool.
    try:
        node[key] = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        raise ConfigError(f"override '{item}': the value is not valid YAML") from None


# The recipe's configs ship in the package (egs/arctic/vc1/conf links here): `--config default` finds them.
STARTER_DIR = Path(__file__).resolve().parent / "configs"


def starter_configs() -> dict[str, Path]:
    """Name -> file of the configs that ship with the package."""
    return {path.stem: path for path in sorted(STARTER_DIR.glob("*.yaml"))}


def resolve_config_path(path: str | Path) -> Path:
    """A config file, or the name of a starter config (vc/configs/NAME.yaml) when no such file exists."""
    path = Path(path)
    if path.is_file():
        return path
    starters = starter_configs()
    if str(path) in starters:
        return starters[str(path)]
    raise ConfigError(f"config file not found: {path} (starter configs by name: {', '.join(starters)})")


def load_config(
    path: str | Path | None = None, overrides: list[str] | None = None, stored: bool = False
) -> Config:
    """Load a YAML config or a starter config by name (missing sections keep their defaults); apply overrides.
    ``stored``: an experiment's config.yaml, perhaps from an older version (Config.from_dict)."""
    data: dict[str, Any] = {}
    if path is not None:
        path = resolve_config_path(path)
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    config = Config.from_dict(data, stored=stored)
    return config.with_overrides(overrides or [])


def dump_config(config: Config) -> str:
    return yaml.safe_dump(config.to_dict(), sort_keys=False)


def config_value(config: Config, dotted: str) -> str:
    """The value of one key (section.key) as text: a string as it is, a section as YAML, anything else as
    the YAML an override would take (3, 0.5, true)."""
    node, key = _locate(config.to_dict(), dotted)
    value = node[key]
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return yaml.safe_dump(value, sort_keys=False).rstrip("\n")
    return yaml.safe_dump(value, default_flow_style=True).splitlines()[0]
