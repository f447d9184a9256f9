"""Train, save and find the mel -> linear magnitude network (vc.model.mel2linear).

Training needs only the target speaker's recordings: the log-mel and the STFT
magnitude of the same audio, with exactly LogMel's STFT. Features are computed
once and kept in memory; each step reads random fixed-length crops.

    vc mel2linear-train data/bdl_slt/train.tsv --out exp/.../checkpoints/mel2linear.pt

The file is a small companion of the conversion checkpoint: `vc convert` and
Converter.from_checkpoint use ``mel2linear.pt`` beside the checkpoint when it
is there (COMPANION_NAME), and the filterbank pseudo-inverse otherwise.
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

from vc.artifacts.mel2linear import save_mel2linear
from vc.audio import AUDIO_FORMATS, LogMel, audio_files, read_audio
from vc.config import AudioConfig, Mel2LinearConfig
from vc.errors import DataError
from vc.inference.teacher_forcing import for_teacher_forcing, teacher_forced
from vc.model.mel2linear import Mel2Linear, fit_linear
from vc.pairs import read_pair_list
from vc.progress import progress as show_progress
from vc.training.budget import Budget, seconds_left  # `progress` is a parameter name here
from vc.training.monitor import LOG_EVERY, companion_writer
from vc.training.nonfinite import NonFiniteGuard, all_finite, companion_advice

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


def _crop_batch(items, batch_size: int, crop: int, rng: random.Random):
    """Random crops of ``crop`` frames (shorter items whole, padded): (mel, mag, lens)."""
    chosen = [items[rng.randrange(len(items))] for _ in range(batch_size)]
    mels, mags, lens = [], [], []
    for mel, mag in chosen:
        start = rng.randrange(max(1, len(mel) - crop + 1))
        mels.append(mel[start : start + crop])
        mags.append(mag[start : start + crop].float())
        lens.append(len(mels[-1]))
    pad = torch.nn.utils.rnn.pad_sequence
    return pad(mels, batch_first=True), pad(mags, batch_first=True), torch.tensor(lens)


def _keep(pred: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """(B, T, 1) 1 on valid frames, 0 on padding."""
    return (
        (torch.arange(pred.shape[1], device=lens.device)[None, :] < lens[:, None])
        .unsqueeze(-1)
        .to(pred.dtype)
    )


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
    total, count = 0.0, 0
    for mel, mag in items:
        pred = net(mel[None])[0].clamp(min=math.log10(MAGNITUDE_FLOOR))
        total += float((pred - mag.float()).abs().sum())
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
) -> dict[str, Any]:
    """Train on the recordings in ``paths`` (see target_files) and save the best network to ``out``.

    ``checkpoint``: a conversion model; its teacher-forced predicted mels of the
    pairs in ``paths`` (pair lists only) are added as inputs beside the natural
    ones, with the same target magnitudes, so the network learns to undo their blur.
    """
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
    start_db = validation_db(net, valid_items)
    log.info(
        "%d training, %d validation items; before training: %.2f dB",
        len(train_items),
        len(valid_items),
        start_db,
    )
    # The time limit covers feature extraction too; what is left of it trains (at least a second).
    budget = seconds_left(options.max_minutes, started)
    with closing(companion_writer(out, "mel2linear")) as writer:
        writer.add_scalar("mel2linear/valid_db", start_db, 0)
        steps, best_db = _optimise(net, train_items, valid_items, options, budget, start_db, progress, writer)
    info = dict(
        files=len(files) - valid_count, valid_files=valid_count, steps=steps, minutes=(time.monotonic() - started) / 60,
        valid_db=best_db, linear_db=start_db, predicted_mels=checkpoint is not None,
        options=dataclasses.asdict(options),
    )  # fmt: skip
    save_mel2linear(out, net, audio, info)
    log.info(
        "mel2linear: %d steps in %.1f min, validation %.2f dB (at start %.2f dB)",
        steps,
        info["minutes"],
        best_db,
        start_db,
    )
    return info


def _optimise(
    net,
    train_items,
    valid_items,
    options: Mel2LinearConfig,
    budget: float,
    best_db: float,
    progress: bool,
    writer,
):
    """AdamW on random crops until max_steps or ``budget`` seconds; leaves the best validated state in ``net``.
    TensorBoard (``writer``): the training loss and learning rate, and the validation dB at each validation."""
    rng = random.Random(options.seed)
    best_state = {k: v.clone() for k, v in net.state_dict().items()}
    optimizer = torch.optim.AdamW(net.parameters(), lr=options.learning_rate, weight_decay=0.0)
    guard = NonFiniteGuard(what="mel -> linear training")
    advice = companion_advice("mel2linear", options.learning_rate)
    limit, step = Budget(options.max_steps, budget), 0
    # With a time limit the step count is not known in advance: no total, no misleading time left.
    total = options.max_steps if math.isinf(budget) else None
    bar = show_progress(total=total, desc="mel2linear", unit="step", disable=not progress)
    while (done := limit.spent(step)) < 1.0:
        for group in optimizer.param_groups:  # short warmup, then cosine to zero over steps or time
            group["lr"] = (
                options.learning_rate * min(1.0, (step + 1) / 100) * 0.5 * (1 + math.cos(math.pi * done))
            )
        mel, mag, lens = _crop_batch(train_items, options.batch_size, options.crop_frames, rng)
        pred = net(mel, lens)
        loss = masked_l1(pred, mag, lens)
        if options.spectral_convergence_weight > 0:
            loss = loss + options.spectral_convergence_weight * spectral_convergence_loss(pred, mag, lens)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        finite = all_finite(loss, grad_norm)
        if finite:
            optimizer.step()
        step += 1
        guard.skip(step, finite, advice)
        bar.update(1)
        if step % LOG_EVERY == 0:
            writer.add_scalar("mel2linear/loss", loss.item(), step)
            writer.add_scalar("mel2linear/learning_rate", optimizer.param_groups[0]["lr"], step)
        if step % options.valid_every == 0 or step == options.max_steps:
            db = validation_db(net, valid_items)
            writer.add_scalar("mel2linear/valid_db", db, step)
            bar.set_postfix(loss=f"{loss.item():.3f}", valid_db=f"{db:.2f}")
            if db < best_db:
                best_db, best_state = db, {k: v.clone() for k, v in net.state_dict().items()}
    bar.close()
    db = validation_db(net, valid_items)
    if db < best_db:
        best_db, best_state = db, net.state_dict()
    net.load_state_dict(best_state)
    return step, best_db


def predicted_mels(
    checkpoint, paths, files: list[Path], target_mels, audio: AudioConfig, progress: bool = True
):
    """The conversion model's teacher-forced log-mels (target scale) of the pairs whose targets are ``files``.

    Frame k of each is the model's estimate of target frame k, so it pairs with
    the target's magnitude. Shapes: target_mels and the result, lists of (T, n_mels).
    """
    outputs = teacher_forced(for_teacher_forcing(checkpoint), paths, files, target_mels, audio, progress)
    return [mel for mel, _ in outputs]
