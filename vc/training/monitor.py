"""What a user watches during training: TensorBoard scalars, figures and audio.

Tags are ``{split}/{group}/{name}``. Every evaluation logs the model kind's dev
losses over the dev list and its views of a few FIXED dev utterances (the first
``data.num_fixed_utterances`` ids of the dev list; vc/kinds/). The attention
model's include the alignment-evolution strip that this module keeps: the
utterance's free-running alignment at K evaluations spread over the run (the
first ones, log-spaced ones, the latest) side by side (also written as PNG
under EXP/alignments/; every evaluation's alignment is kept there as
stepNNNNNNN.npy). Alignment health is judged on free-running decodes:
teacher-forced maps look diagonal long before the model converts on its own.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from vc.artifacts.checkpoint import private_rng
from vc.audio import FeatureStats
from vc.config import Config
from vc.fileio import atomic_open, writing
from vc.kinds import DevViews, get_kind
from vc.plotting import evolution_figure, load_evolution, save_figure
from vc.training.converts import ConvertsRule
from vc.training.data import ParallelDataset, batches_in_order, collate
from vc.training.selection import free_running_check
from vc.vocoders import built_in, make_vocoder

log = logging.getLogger(__name__)


LOG_EVERY = 10  # steps between the companion trainings' TensorBoard scalars


class EventWriter:
    """TensorBoard's SummaryWriter, whose failed writes (a full disk, ...) are one WriteError naming its folder.

    SummaryWriter writes from a thread and raises that thread's OSError at a later call, without a path.
    """

    def __init__(self, folder: Path):
        self.folder = folder
        with writing(folder):
            self._writer = SummaryWriter(str(folder))

    def __getattr__(self, name: str):
        method = getattr(self._writer, name)

        def guarded(*args, **kwargs):
            with writing(self.folder):
                return method(*args, **kwargs)

        return guarded


def companion_writer(out: str | Path, name: str) -> EventWriter:
    """TensorBoard for a network trained after the model and saved at ``out``: beside the model's own
    logs (EXP/tensorboard/<name> for EXP/checkpoints/<file>), else in a tensorboard/ folder beside ``out``."""
    out = Path(out)
    root = out.parent.parent if out.parent.name == "checkpoints" else out.parent
    return EventWriter(root / "tensorboard" / name)


class Monitor:
    def __init__(self, config: Config, out_dir: Path, device: torch.device, tgt_stats: FeatureStats):
        self.config = config
        self.out_dir = out_dir
        self.device = device
        self.tgt_stats = tgt_stats
        self.writer = EventWriter(out_dir / "tensorboard")
        self.kind = get_kind(config.model.kind)
        # The built-in vocoder, without weights: the dev audio of every run sounds through the same one.
        vocoder = make_vocoder(config.audio, replace(config.vocoder, kind=built_in()), device=device)
        self.views = DevViews(self.writer, vocoder, tgt_stats, config, self._evolution)
        m = config.model
        converts = self.kind.stops_when_converts(config)
        self.converts = (
            ConvertsRule(m.converts_focus, m.converts_gain_db, getattr(m, "self_steps", 0))
            if converts
            else None
        )

    @torch.no_grad()
    def evaluate(self, model: torch.nn.Module, dev_set: ParallelDataset, step: int) -> float:
        """Log the dev views and return the score that train.select_by ranks checkpoints by (lower wins).

        The teacher-forced dev loss over the whole dev list always; with ``select_by: free_running`` or
        ``until_converts`` also the free-running dev check (vc/training/selection.py): its distance, and
        whether the model now converts (vc/training/converts.py).
        """
        model.eval()
        # A private RNG stream: evaluation neither perturbs training (exact resume)
        # nor changes between evaluations (prenet dropout stays on at inference).
        with private_rng(self.config.train.seed, self.device):
            valid_loss = self._dev_loss(model, dev_set, step)
            count = min(self.config.data.num_fixed_utterances, len(dev_set))
            batch = collate([dev_set[k] for k in range(count)]).to(self.device)
            self.kind.log_fixed_utterances(self.views, model, batch, step)
        score = valid_loss
        if self.config.train.select_by == "free_running" or self.converts is not None:
            # Its own stream, after the views: the fixed utterances' figures are the
            # same whichever rule selects checkpoints.
            with private_rng(self.config.train.seed, self.device):
                check = free_running_check(model, dev_set, self.config, self.tgt_stats, self.device)
            self.writer.add_scalar("valid/free_running/mel_cepstral_distance", check.distance, step)
            self.writer.add_scalar("valid/free_running/focus_rate", check.focus, step)
            if self.config.train.select_by == "free_running":
                score = check.distance
            if self.converts is not None and self.converts.converts_at is None:
                if self.converts.update(step, check):
                    log.info(
                        "step %d: the model converts (free-running dev check: focus rate %.3f >= %.2f, "
                        "distance %.2f dB, fallen less than %.2f dB): training ends here",
                        step, check.focus, self.converts.focus, check.distance, self.converts.gain_db,
                    )  # fmt: skip
                else:
                    fallen = (
                        "its first"
                        if math.isinf(self.converts.fallen)
                        else f"fallen {self.converts.fallen:.2f} dB"
                    )
                    log.info(
                        "step %d: free-running dev check: focus rate %.3f (converts from %.2f), distance "
                        "%.2f dB (%s; converts when it falls less than %.2f)",
                        step, check.focus, self.converts.focus, check.distance, fallen, self.converts.gain_db,
                    )  # fmt: skip
        model.train()
        self.writer.flush()
        return score

    @property
    def converts_at(self) -> int | None:
        """The step at which model.until_converts's check passed (None: not yet, or not asked)."""
        return None if self.converts is None else self.converts.converts_at

    def _dev_loss(self, model, dev_set, step) -> float:
        """The kind's dev losses over the whole dev list, frame-weighted; their selection terms summed."""
        totals = dict.fromkeys(self.kind.dev_terms, 0.0)
        frames = 0
        for batch in batches_in_order(dev_set, self.config.data.batch_size):
            batch = batch.to(self.device)
            losses = self.kind.losses(model, batch, self.config, step=None)
            weight = int(batch.tgt_lens.sum())
            frames += weight
            for name in totals:
                totals[name] += float(getattr(losses, name)) * weight
        for name, value in totals.items():
            self.writer.add_scalar(f"valid/loss/{name}", value / frames, step)
        valid_loss = sum(totals[name] for name in self.kind.selection_terms) / frames
        self.writer.add_scalar("valid/loss/total", valid_loss, step)
        return valid_loss

    def _evolution(self, utt_id: str, step: int, alignment: np.ndarray) -> None:
        """Store this evaluation's alignment on disk and redraw K of those stored, side by side."""
        folder = self.out_dir / "alignments" / utt_id
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_open(folder / f"step{step:07d}.npy") as out:
            np.save(out, alignment)
        fig = evolution_figure(
            load_evolution(folder, self.config.train.evolution_columns),
            f"{utt_id}: free-running alignment during training",
        )
        save_figure(fig, self.out_dir / "alignments" / f"{utt_id}_evolution.png")
        self.writer.add_figure(f"valid/evolution/{utt_id}", fig, step)

    def close(self) -> None:
        self.writer.close()
