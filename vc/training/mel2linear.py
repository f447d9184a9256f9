"""Train, save and find the mel -> linear magnitude network (vc.model.mel2linear).

Training needs only the target speaker's recordings: the log-mel and the STFT
magnitude of the same audio, with exactly LogMel's STFT. Features are computed
once and kept in memory; each step reads random fixed-length crops.

    vc mel2linear-train data/bdl_slt/train.tsv --out exp/.../checkpoints/mel2linear.pt

The file is a small companion of the conversion checkpoint: `vc convert` and
Converter.from_checkpoint use ``mel2linear.pt`` beside the checkpoint when it
is there (MEL2LINEAR.file_name), and the filterbank pseudo-inverse otherwise.
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

from vc.artifacts.checkpoint import TRAINING_STATE, restore_random
from vc.artifacts.companion import MEL2LINEAR
from vc.audio import AUDIO_FORMATS, LogMel, audio_files, read_audio
from vc.errors import DataError
from vc.inference.converter import pick_device
from vc.inference.teacher_forcing import for_teacher_forcing, teacher_forced
from vc.masks import make_pad_mask
from vc.model.mel2linear import Mel2Linear, fit_linear
from vc.pairs import read_pair_list
from vc.progress import progress as show_progress  # `progress` is a parameter name here
from vc.settings.audio import AudioConfig
from vc.settings.training import Mel2LinearConfig
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

# Target magnitudes are log10(max(|STFT|, MAGNITUDE_FLOOR)). Sixteen-bit
# recordings have their noise floor near 1e-3 on this scale; below 1e-5 nothing
# is audible, and a lower floor would let silent bins dominate an L1 loss.
MAGNITUDE_FLOOR = 1e-5


def target_files(paths: list[str | Path]) -> list[Path]:
    """Target files of pair lists (.tsv), audio files, and audio files in folders, sorted."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files = audio_files(path)
            if not files:
                raise DataError(f"no {'/'.join(AUDIO_FORMATS)} files in folder {path}")
            found += files
        elif path.suffix.lower() in (".tsv", ".txt", ".scp"):
            found += [pair.target for pair in read_pair_list(path)]
        elif path.is_file():
            found.append(path)
        else:
            raise DataError(f"input not found: {path}")
    return sorted(set(found), key=lambda p: (p.name, str(p)))


@torch.no_grad()
def extract(
    files: list[Path], audio: AudioConfig, progress: bool = True
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(log-mel (T, n_mels) float32, log10 magnitude (T, n_bins) float16) per file."""
    extractor = LogMel(audio)
    items = []
    for path in show_progress(files, desc="features", unit="file", disable=not progress):
        wave = torch.from_numpy(read_audio(path, audio))[None]
        logmel, _ = extractor(wave)
        magnitude = extractor.magnitude(wave)[0].T
        items.append((logmel[0], magnitude.clamp(min=MAGNITUDE_FLOOR).log10().half()))
    return items


def _keep(pred: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """(B, T, 1) 1 on valid frames, 0 on padding."""
    return (~make_pad_mask(lens, pred.shape[1])).unsqueeze(-1).to(pred.dtype)


def masked_l1(pred: torch.Tensor, target: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """Mean |pred - target| over valid frames and all bins. Shapes: (B, T, bins), lens (B,)."""
    keep = _keep(pred, lens)
    return ((pred - target).abs() * keep).sum() / (keep.sum() * pred.shape[-1])


def spectral_convergence_loss(pred: torch.Tensor, target: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """Mean over items of || 10^pred - 10^target ||_F / || 10^target ||_F on valid frames.

    The log-domain L1 weighs every bin alike; this term weighs the loud ones
    (harmonic peaks, formants), which carry what Griffin-Lim rebuilds.
    Shapes: log10 magnitudes (B, T, bins), lens (B,).
    """
    keep = _keep(pred, lens)
    predicted = torch.pow(10.0, pred.clamp(max=target.max() + 1.0)) * keep  # no overflow early in training
    true = torch.pow(10.0, target) * keep
    return (
        torch.linalg.vector_norm(predicted - true, dim=(1, 2)) / torch.linalg.vector_norm(true, dim=(1, 2))
    ).mean()


@torch.no_grad()
def validation_db(net: Mel2Linear, items) -> float:
    """Mean absolute log-spectral difference in dB (20 |log10 pred - log10 true|) over held-out files."""
    net.eval()
    device = next(net.parameters()).device
    total, count = 0.0, 0
    for mel, mag in items:
        pred = net(mel[None].to(device))[0].clamp(min=math.log10(MAGNITUDE_FLOOR))
        total += float((pred - mag.to(device).float()).abs().sum())
        count += mag.numel()
    net.train()
    return 20.0 * total / max(count, 1)


def train_mel2linear(
    paths: list[str | Path],
    audio: AudioConfig,
    out: str | Path,
    options: Mel2LinearConfig,
    progress: bool = True,
    checkpoint: str | Path | None = None,
    device: str | None = None,
    amp: bool = False,
    resume: bool = False,
) -> dict[str, Any]:
    """Train on the recordings in ``paths`` (see target_files) and save the best network to ``out``.

    ``checkpoint``: a conversion model; its teacher-forced predicted mels of the
    pairs in ``paths`` (pair lists only) are added as inputs beside the natural
    ones, with the same target magnitudes, so the network learns to undo their blur.
    ``device``: where it trains (default: cuda if available); ``amp``: mixed precision there.
    The training state is kept in OUT_training/ until the network is saved; ``resume`` continues from it.
    """
    device = pick_device(device)
    state = training_state_folder(out)
    if not resume:
        refuse_earlier_run(state)
    started = time.monotonic()
    files = target_files(paths)
    if len(files) < 2:
        raise DataError(f"need at least 2 audio files to train and validate, found {len(files)}")
    valid_count = min(options.valid_files, len(files) // 2)
    torch.manual_seed(options.seed)
    items = extract(files, audio, progress)
    train_items, valid_items = items[: len(items) - valid_count], items[len(items) - valid_count :]
    if checkpoint is not None:
        predicted = [
            (mel, mag)
            for mel, (_, mag) in zip(
                predicted_mels(checkpoint, paths, files, [mel for mel, _ in items], audio, progress),
                items,
                strict=True,
            )
        ]
        train_items += predicted[: len(items) - valid_count]
        valid_items += predicted[len(items) - valid_count :]
    net = Mel2Linear(
        audio.n_mels,
        audio.n_fft // 2 + 1,
        channels=options.channels,
        layers=options.layers,
        kernel=options.kernel,
    )
    frames = torch.cat([mel for mel, _ in train_items])
    pick = torch.randperm(len(frames))[:200_000]
    fit_linear(net, frames[pick], torch.cat([mag for _, mag in train_items])[pick].float())
    del frames
    job = Mel2LinearJob(
        net.to(device), train_items, valid_items, options, companion_writer(out, "mel2linear")
    )
    # The time limit covers feature extraction too; what is left of it trains (at least a second).
    seconds = seconds_left(options.max_minutes, started)
    loop = Loop(
        job, max_steps=options.max_steps, max_minutes=0 if math.isinf(seconds) else seconds / 60,
        eval_every=options.valid_every, log_every=LOG_EVERY, evaluate_first=True, checkpoints=state,
        keep_checkpoints=1, amp=amp, device=device, progress=progress,
    )  # fmt: skip
    with closing(job.writer):
        if resume:
            loop.resume()
        steps = loop.run()
    start_db, best_db = job.scores[0], loop.best_score
    info = dict(
        files=len(files) - valid_count, valid_files=valid_count, steps=steps, minutes=(time.monotonic() - started) / 60,
        valid_db=best_db, linear_db=start_db, predicted_mels=checkpoint is not None,
        options=dataclasses.asdict(options),
    )  # fmt: skip
    MEL2LINEAR.save(out, net.cpu(), audio, info)
    discard_training_state(state)
    log.info(
        "mel2linear: %d steps in %.1f min, validation %.2f dB (at start %.2f dB)",
        steps,
        info["minutes"],
        best_db,
        start_db,
    )
    return info


class Mel2LinearJob(Job):
    """AdamW on random crops, a short warmup then cosine to zero over the budget; the network with the
    lowest validation dB (the linear fit at step 0 included) is kept."""

    name = "mel -> linear training"
    select_by = "valid_db"
    score_label = "validation dB"
    restore_best = True
    marker = TRAINING_STATE
    shown = (("loss", "loss/total"),)

    def __init__(self, net: Mel2Linear, train_items, valid_items, options: Mel2LinearConfig, writer):
        self.net, self.train_items, self.valid_items = net, train_items, valid_items
        self.options, self.writer = options, writer
        self.rng = random.Random(options.seed)
        self.device = next(net.parameters()).device
        self.optimizers = {
            "model": torch.optim.AdamW(net.parameters(), lr=options.learning_rate, weight_decay=0.0)
        }
        self.grad_clip = {"model": 1.0}
        self.scores: dict[int, float] = {}

    def batches(self, step: int):
        while True:
            crops = random_crops(
                self.train_items, self.options.batch_size, self.options.crop_frames, self.rng
            )
            pad = torch.nn.utils.rnn.pad_sequence
            mels, mags = zip(*crops, strict=True)
            yield (
                pad(mels, batch_first=True).to(self.device),
                pad([m.float() for m in mags], batch_first=True).to(self.device),
                torch.tensor([len(m) for m in mels], device=self.device),
            )

    def updates(self, batch, step: int):
        mel, mag, lens = batch
        pred = self.net(mel, lens)
        l1 = masked_l1(pred, mag, lens)
        loss = l1
        if self.options.spectral_convergence_weight > 0:
            loss = loss + self.options.spectral_convergence_weight * spectral_convergence_loss(
                pred, mag, lens
            )
        yield Update(loss, stats={"total": loss, "l1": l1})

    def learning_rate_factor(self, step: int, spent: float) -> float:
        return min(1.0, (step + 1) / 100) * 0.5 * (1 + math.cos(math.pi * spent))

    def evaluate(self, step: int) -> float:
        db = self.scores[step] = validation_db(self.net, self.valid_items)
        self.writer.add_scalar("valid/db", db, step)
        if step == 0:
            log.info("%d training, %d validation items; before training: %.2f dB",
                     len(self.train_items), len(self.valid_items), db)  # fmt: skip
        return db

    def networks(self) -> dict[str, torch.nn.Module]:
        return {"model": self.net}

    def payload(self) -> dict:
        return {"crop_rng": self.rng.getstate(), "linear_db": self.scores[0]}

    def restore(self, payload: dict) -> None:
        restore_random(self.rng, payload["crop_rng"])
        self.scores[0] = payload["linear_db"]

    def advice(self) -> str:
        return companion_advice("mel2linear", self.options.learning_rate)


def predicted_mels(
    checkpoint, paths, files: list[Path], target_mels, audio: AudioConfig, progress: bool = True
):
    """The conversion model's teacher-forced log-mels (target scale) of the pairs whose targets are ``files``.

    Frame k of each is the model's estimate of target frame k, so it pairs with
    the target's magnitude. Shapes: target_mels and the result, lists of (T, n_mels).
    """
    outputs = teacher_forced(for_teacher_forcing(checkpoint), paths, files, target_mels, audio, progress)
    return [mel for mel, _ in outputs]
