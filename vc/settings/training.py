"""The trainers' sections: data and augment (what every model trains on), train (the model's training,
vc/training/trainer.py and loop.py), mel2linear and postfilter (stage 4's networks, vc/training/)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vc.errors import ConfigError
from vc.settings.section import Section


@dataclass
class DataConfig(Section):
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

    NAME: ClassVar[str] = "data"
    POSITIVE: ClassVar[tuple[str, ...]] = ("batch_size", "num_fixed_utterances")


@dataclass
class AugmentConfig(Section):
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

    NAME: ClassVar[str] = "augment"

    def check(self) -> None:
        for key in ("probability", "recognizer_probability"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise ConfigError(f"augment.{key} must be in [0, 1], got {getattr(self, key)}")
        if not 0 < self.warp_min <= self.warp_max:
            raise ConfigError(
                f"augment.warp_min ({self.warp_min}) must be positive and not exceed augment.warp_max"
            )
        for key in ("gain_db", "tilt_db", "freq_masks", "freq_mask_width", "time_masks", "time_mask_width"):
            if getattr(self, key) < 0:
                raise ConfigError(f"augment.{key} must not be negative, got {getattr(self, key)}")


@dataclass
class TrainConfig(Section):
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
    # The phonetic loss (vc/training/phonetic.py; every kind, with data.phones): this weight x the
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

    NAME: ClassVar[str] = "train"
    POSITIVE: ClassVar[tuple[str, ...]] = (
        "max_steps", "eval_every", "log_every", "evolution_columns", "select_utterances"
    )  # fmt: skip
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "select_by": ("loss", "free_running"),
        "decay": ("noam", "constant", "linear"),
    }


@dataclass
class Mel2LinearConfig(Section):
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

    NAME: ClassVar[str] = "mel2linear"
    POSITIVE: ClassVar[tuple[str, ...]] = (
        "channels", "layers", "batch_size", "crop_frames", "max_steps", "valid_every"
    )  # fmt: skip


@dataclass
class PostfilterConfig(Section):
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

    NAME: ClassVar[str] = "postfilter"
    POSITIVE: ClassVar[tuple[str, ...]] = ("batch_size", "crop_frames", "channels")
