"""What every model kind answers: the model's training job, the monitor, the Converter, teacher forcing and the
durations tools ask these instead of comparing ``model.kind`` strings.

A kind (seq2seq-vc's ar_vc / nar_vc trainers, coqui's per-model train_step, ESPnet2's
model.forward returning loss and stats) owns its network, its forward-and-losses
step, its dev evaluation and TensorBoard views, and the few choices conversion
makes per kind. The base class holds the defaults a plain kind needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from vc.config import Config
from vc.errors import ConfigError
from vc.settings.inference import InferenceConfig
from vc.settings.kinds import ModelConfig


@dataclass
class DevViews:
    """What a kind's dev views write to: the monitor's TensorBoard writer and its tools."""

    writer: Any  # a SummaryWriter (vc.training.monitor.EventWriter)
    vocoder: nn.Module  # Griffin-Lim without the mel -> linear network: (B, T, n_mels), lens -> waves
    target_stats: Any  # vc.audio.FeatureStats of the target speaker
    config: Config
    # (utt_id, step, alignment) -> None: stores an alignment for the evolution strip
    evolution: Callable[[str, int, np.ndarray], None]

    def audio(self, utt_id: str, wave: torch.Tensor, step: int) -> None:
        self.writer.add_audio(
            f"valid/audio/{utt_id}", wave.clamp(-1, 1)[None], step, sample_rate=self.config.audio.sample_rate
        )


class ModelKind:
    """One model kind. Subclasses set ``name`` and ``network`` and override what differs."""

    name: str = ""
    config: type[ModelConfig] = ModelConfig  # its model section: ModelConfig's settings and its own
    network: Callable[[int, ModelConfig], nn.Module]  # (n_mels, model config) -> the network
    needs_durations = False  # trains on data.durations (frames per encoder step)
    # A post-filter (vc/training/postfilter.py) reads the model's input at the output's timing beside the
    # output (vc.model.aligned_source). Not for a kind whose teacher-forced input is the target itself:
    # the post-filter would learn to copy that input, and copy the source at conversion.
    postfilter_reads_input = True
    # Whether its network converts at another model's timing (inference(..., timing=Timing)).
    speaks_at_timing = False
    teaches_durations = False  # its teacher-forced alignments time another kind (vc durations)
    # The dev losses logged (valid/loss/<name>), and those summed into the score best.pt is chosen by.
    dev_terms: tuple[str, ...] = ("spectral",)
    selection_terms: tuple[str, ...] = ("spectral",)
    # train.select_by free_running: best.pt by the distance of free-running dev conversions
    # (vc/training/selection.py), which only the attention model needs (its loss goes flat early);
    # model.until_converts (its section's): the same conversions end its training (vc/training/converts.py).
    selects_free_running = False
    # Trains on windows of its utterances (train.crop_frames): input and output on one timeline.
    trains_on_crops = False
    # What augment.probability changes in training (vc/training/augment.py): the source, or, for a kind
    # whose input is the target's own frames, what it hears of them (Batch.heard; the frames it must
    # predict stay as they are).
    augments = "source"

    def stops_when_converts(self, config: Config) -> bool:
        """Whether training ends once its free-running dev conversions convert (model.until_converts of a
        section that has it: the attention model's)."""
        return bool(getattr(config.model, "until_converts", False))

    def needs_recognizer(self, model: ModelConfig) -> bool:
        """Whether the network reads content features of the run's phone recognizer (trained on both
        speakers' frames of data.phones, vc/training/phonetic.py): initialise receives it."""
        return False

    def needs_pitch(self, model: ModelConfig) -> bool:
        """Whether the network reads pitch features (vc/audio/pitch.py): the batches carry them, and
        conversion, the dev views and teacher forcing pass them to the network (``pitch=``)."""
        return False

    def build(self, n_mels: int, config: ModelConfig) -> nn.Module:
        return self.network(n_mels, config)

    def check(self, config: Config) -> None:
        """Raise ConfigError for settings this kind cannot train with."""
        if config.train.select_by != "loss" and not self.selects_free_running:
            raise ConfigError(f"train.select_by free_running needs model.kind attention, not {self.name}")
        if config.train.crop_frames < 0:
            raise ConfigError(
                f"train.crop_frames must be 0 (whole utterances) or more, got {config.train.crop_frames}"
            )
        if config.train.crop_frames > 0 and not self.trains_on_crops:
            raise ConfigError(
                f"train.crop_frames needs input and output on one timeline, not model.kind {self.name}; "
                "set it to 0"
            )
        if config.train.phonetic_weight > 0 and not config.data.phones:
            raise ConfigError(
                "train.phonetic_weight needs data.phones (the alignments of vc durations --phones); "
                "set train.phonetic_weight=0 to train without the phonetic loss"
            )

    def initialise(
        self, model: nn.Module, durations: dict[str, torch.Tensor] | None, recognizer: nn.Module | None = None
    ) -> None:
        """Set up a new network before its first step (the training durations, the phone recognizer,
        when it needs them)."""

    def fixed_content(self, model: nn.Module, batch) -> dict[str, torch.Tensor] | None:
        """What the network's frozen recognizer reads of a Batch's recordings: the same at every step
        that reads it, so training reads it once per recording. Batch field -> its value: "tgt_content"
        (B, T_tgt, width) of the targets, "src_content" (B, T_src, width) of the sources; None: the
        network reads nothing frozen."""
        return None

    def losses(self, model: nn.Module, batch, config: Config, step: int | None, critic=None) -> NamedTuple:
        """Forward a vc.training.data.Batch and return its losses (field ``total`` first).

        ``step`` is the training step about to be taken; None on the dev set. ``critic``: the frozen phone
        classifier of the phonetic loss (training steps with train.phonetic_weight > 0; batch.phones holds
        the target's labels, every kind's output being at the target's timing in training); None
        otherwise."""
        raise NotImplementedError

    def step_stats(self, config: Config, step: int) -> dict[str, float]:
        """Training scalars beside the losses (train/opt/...)."""
        return {}

    def log_fixed_utterances(self, views: DevViews, model: nn.Module, batch, step: int) -> None:
        """TensorBoard views of the fixed dev utterances (a collated Batch) at an evaluation."""

    def prepare_for_conversion(self, model: nn.Module, inference: InferenceConfig) -> None:
        """Conversion settings that live on the network."""

    def teacher_forced(
        self, model: nn.Module, src, src_lens, tgt, tgt_lens, durations, src_pitch=None, tgt_pitch=None
    ) -> NamedTuple:
        """The prediction at the target's own timing (normalised ``tgt``; ``durations``, (B, N), when
        needs_durations; the source's and the target's pitch features when needs_pitch), for the
        networks that learn from it."""
        raise NotImplementedError

    def frames_per_row(self, config: ModelConfig) -> int:
        """Output frames per alignment row (the output's alignments are rows x encoder steps)."""
        return 1

    def alignment_rows(self, out_lens: torch.Tensor, config: ModelConfig) -> torch.Tensor:
        """(B,) alignment rows of each output of ``out_lens`` frames."""
        factor = self.frames_per_row(config)
        return (out_lens + factor - 1) // factor
