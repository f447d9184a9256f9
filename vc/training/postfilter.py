"""Train, save and find the GAN post-filter (vc.model.postfilter) of a conversion model.

Training pairs come from the model itself: its teacher-forced log-mels of the
training pairs (frame k estimates target frame k) against the target's natural
log-mels. Beside its log-mels the generator reads the model's input frames
re-timed by the model's attention (vc.model.aligned_source), as it will at
conversion: the source's transitions are sharp where the converted ones are
blurred. The generator learns L1 toward the natural frames plus a
least-squares GAN loss and feature matching from a discriminator that tells
natural from post-filtered patches; the first ``warmup_steps`` are L1 alone:
the discriminator meets a sensible generator. The adversarial terms buy words
for some MCD (docs/ablation.md, "The post-filter reads the source").

    vc postfilter-train data/bdl_slt/train.tsv --checkpoint EXP/checkpoints/best.pt \
        --out EXP/checkpoints/postfilter.pt

The file is a small companion of the conversion checkpoint: `vc convert` and
Converter.from_checkpoint apply ``postfilter.pt`` beside the checkpoint when it
is there (POSTFILTER.file_name), and `vc export` embeds it.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import torch

from vc.artifacts.checkpoint import TRAINING_STATE, load_checkpoint, restore_random
from vc.artifacts.companion import POSTFILTER
from vc.audio import FeatureStats, LogMel, read_audio
from vc.config import Config
from vc.errors import ConfigError, DataError
from vc.inference.converter import pick_device
from vc.inference.teacher_forcing import for_teacher_forcing, teacher_forced
from vc.model.postfilter import MelDiscriminator, MelPostfilter
from vc.pairs import read_pair_list
from vc.progress import progress as show_progress
from vc.settings.audio import AudioConfig
from vc.settings.training import PostfilterConfig
from vc.training.budget import seconds_left
from vc.training.data import random_crops
from vc.training.loop import (
    Job,
    Loop,
    Update,
    discard_training_state,
    refuse_earlier_run,
    training_state_folder,
)
from vc.training.monitor import LOG_EVERY, companion_writer
from vc.training.nonfinite import companion_advice

log = logging.getLogger(__name__)


def temporal_detail(logmel: torch.Tensor) -> float:
    """Mean |frame-to-frame change| of a (T, n_mels) log-mel: what a blur in time takes away."""
    return float((logmel[1:] - logmel[:-1]).abs().mean())


def training_examples(
    checkpoint: str | Path, pair_lists: list[str | Path], audio: AudioConfig, progress: bool = True
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Per pair: (the model's teacher-forced log-mel, its input at that output's timing or None, the
    target's natural log-mel), each (T, n_mels)."""
    pairs = [pair for path in pair_lists for pair in read_pair_list(path)]
    if len(pairs) < 2:
        raise DataError(f"need at least 2 pairs to train and validate, found {len(pairs)}")
    extractor = LogMel(audio)
    natural = []
    for pair in show_progress(pairs, desc="features", unit="file", disable=not progress):
        natural.append(extractor(torch.from_numpy(read_audio(pair.target, audio))[None])[0][0])
    files = [pair.target for pair in pairs]
    predicted = teacher_forced(for_teacher_forcing(checkpoint), pair_lists, files, natural, audio, progress)
    return [(mel, source, target) for (mel, source), target in zip(predicted, natural, strict=True)]


def train_postfilter(
    pair_lists: list[str | Path],
    checkpoint: str | Path,
    out: str | Path,
    options: PostfilterConfig,
    progress: bool = True,
    device: str | None = None,
    amp: bool = False,
    resume: bool = False,
) -> dict[str, Any]:
    """Train on the model's own predictions of the pairs in ``pair_lists``; save the generator to ``out``.
    ``device``: where it trains (default: cuda if available); ``amp``: mixed precision there. The
    training state is kept in OUT_training/ until the generator is saved; ``resume`` continues from it."""
    device = pick_device(device)
    state = training_state_folder(out)
    if not resume:
        refuse_earlier_run(state)
    if options.max_minutes <= 0 and options.max_steps <= 0:
        raise ConfigError(
            "the post-filter needs a time limit (--max-minutes > 0) or a step limit (--max-steps)"
        )
    started = time.monotonic()
    payload = load_checkpoint(checkpoint)
    audio = Config.from_dict(payload["config"], stored=True).audio
    stats = FeatureStats.from_dict(payload["stats"]["target"])
    torch.manual_seed(options.seed)
    rng = random.Random(options.seed)
    items = training_examples(checkpoint, pair_lists, audio, progress)
    valid_count = min(options.valid_files, len(items) // 2)
    train_items, valid_items = items[: len(items) - valid_count], items[len(items) - valid_count :]
    # It reads the model's input beside its output unless the model's kind says it must not.
    reads_input = items[0][1] is not None
    generator = MelPostfilter(
        audio.n_mels, channels=options.channels, source_dim=audio.n_mels if reads_input else 0
    )
    generator.in_mean.copy_(torch.as_tensor(stats.mean, dtype=torch.float32))
    generator.in_std.copy_(torch.as_tensor(stats.std, dtype=torch.float32))
    job = PostfilterJob(
        generator.to(device), train_items, valid_items, options, rng, companion_writer(out, "postfilter")
    )
    seconds = seconds_left(options.max_minutes, started)
    loop = Loop(
        job, max_steps=options.max_steps, max_minutes=0 if math.isinf(seconds) else seconds / 60,
        log_every=LOG_EVERY, evaluate_first=True, checkpoints=state, keep_checkpoints=1, amp=amp,
        device=device, progress=progress,
    )  # fmt: skip
    with closing(job.writer):
        if resume:
            loop.resume()
        steps = loop.run()
    generator.eval().cpu()
    before, after = job.validations[0], job.validations[steps]
    info = dict(
        pairs=len(train_items), valid_pairs=valid_count, steps=steps,
        minutes=(time.monotonic() - started) / 60, valid_l1_before=before[0], valid_l1=after[0],
        detail_before=before[1], detail=after[1], detail_natural=before[2],
        options=dataclasses.asdict(options),
    )  # fmt: skip
    POSTFILTER.save(out, generator, audio, info)
    discard_training_state(state)
    log.info(
        "postfilter: %d steps in %.1f min; validation L1 %.3f -> %.3f, temporal detail %.3f -> %.3f (natural %.3f)",
        steps, info["minutes"], before[0], after[0], before[1], after[1], before[2],
    )  # fmt: skip
    return info


@torch.no_grad()
def _validate(generator: MelPostfilter, items) -> tuple[float, float, float]:
    """Mean L1 to the natural frames, and the temporal detail of the output and of the natural frames."""
    generator.eval()
    device = generator.in_mean.device
    l1, detail, natural_detail = [], [], []
    for predicted, source, natural in items:
        source = None if source is None else source[None].to(device)
        out = generator(predicted[None].to(device), source=source)[0]
        natural = natural.to(device)
        l1.append(float((out - natural).abs().mean()))
        detail.append(temporal_detail(out))
        natural_detail.append(temporal_detail(natural))
    return sum(l1) / len(l1), sum(detail) / len(detail), sum(natural_detail) / len(natural_detail)


class PostfilterJob(Job):
    """The generator's L1 (and, after warmup_steps, the adversarial and feature-matching terms against a
    discriminator that steps first); the last state is kept."""

    name = "post-filter training"
    select_by = "valid_l1"
    score_label = "validation L1"
    select_best = False
    marker = TRAINING_STATE
    shown = (("loss", "loss/total"),)

    def __init__(self, generator: MelPostfilter, items, valid_items, options: PostfilterConfig, rng, writer):
        self.generator, self.items, self.valid_items = generator, items, valid_items
        self.options, self.rng, self.writer = options, rng, writer
        betas = (0.5, 0.9)  # the usual GAN setting: a short memory of the other player's moves
        self.optimizers = {
            "generator": torch.optim.Adam(generator.parameters(), options.learning_rate, betas=betas)
        }
        self.discriminator = MelDiscriminator(generator.hparams["n_mels"]).to(generator.in_mean.device)
        self.optimizers["discriminator"] = torch.optim.Adam(
            self.discriminator.parameters(), options.learning_rate, betas=betas
        )
        self.grad_clip = dict.fromkeys(self.optimizers)  # none clipped: only checked
        self.validations: dict[int, tuple[float, float, float]] = {}

    def batches(self, step: int):
        crop = self.options.crop_frames

        def padded(tensor: torch.Tensor) -> torch.Tensor:  # shorter crops repeat their last frame
            return (
                torch.cat([tensor, tensor[-1:].expand(crop - len(tensor), -1)])
                if len(tensor) < crop
                else tensor
            )

        while True:
            crops = random_crops(self.items, self.options.batch_size, crop, self.rng)
            device = self.generator.in_mean.device
            yield tuple(
                None if column[0] is None else torch.stack([padded(t) for t in column]).to(device)
                for column in zip(*crops, strict=True)
            )

    def _normalise(self, mel: torch.Tensor) -> torch.Tensor:
        return (mel - self.generator.in_mean) / self.generator.in_std

    def updates(self, batch, step: int):
        predicted, source, natural = batch
        options, normalise = self.options, self._normalise
        self.generator.train()
        fake = self.generator(predicted, source=source)
        l1 = (normalise(fake) - normalise(natural)).abs().mean()
        loss = options.l1_weight * l1
        if step >= options.warmup_steps:
            real_score, real_features = self.discriminator(normalise(natural))
            fake_score, _ = self.discriminator(normalise(fake.detach()))
            d_loss = (real_score - 1).square().mean() + fake_score.square().mean()
            yield Update(d_loss, "discriminator", {"discriminator": d_loss})
            # Feature matching reads the real features of the discriminator as it was before this
            # step's update: one forward pass fewer, and a one-step-old target is what every later
            # measurement of the post-filter was made with.
            fake_score, fake_features = self.discriminator(normalise(fake))
            matching = sum(
                (f - r.detach()).abs().mean() for f, r in zip(fake_features, real_features, strict=True)
            ) / len(fake_features)
            loss = (
                loss
                + options.adversarial_weight * (fake_score - 1).square().mean()
                + options.feature_matching_weight * matching
            )
        yield Update(loss, "generator", {"total": loss, "l1": l1})

    def evaluate(self, step: int) -> float:
        l1, detail, natural = self.validations[step] = _validate(self.generator, self.valid_items)
        self.writer.add_scalar("valid/l1", l1, step)
        self.writer.add_scalar("valid/temporal_detail", detail, step)
        self.writer.add_scalar("valid/natural_temporal_detail", natural, step)
        return l1

    def networks(self) -> dict[str, torch.nn.Module]:
        return {"generator": self.generator, "discriminator": self.discriminator}

    def payload(self) -> dict:
        return {"crop_rng": self.rng.getstate(), "validation_before": list(self.validations[0])}

    def restore(self, payload: dict) -> None:
        restore_random(self.rng, payload["crop_rng"])
        self.validations[0] = tuple(payload["validation_before"])

    def advice(self) -> str:
        return companion_advice("postfilter", self.options.learning_rate)
