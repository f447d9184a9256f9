"""Durations from the attention model: how many target frames each encoder step becomes.

The trained attention model runs teacher-forced over every pair. Its alignment
(decoder steps x encoder steps) is spread to output frames: frame t sits at the
fractional decoder step (t - (r - 1) / 2) / r, between two rows, so it reads
their linear mix (decoder step d emits frames d*r .. d*r + r - 1). The centroid
of each frame's weights, held monotonic and rounded, is the one encoder step the
frame reads; counting the frames of each step gives integer durations that sum
to the target length exactly. Steps the path passes over get 0 frames (where
the source pauses longer than the target). The non-autoregressive converter
(vc/model/nonautoregressive.py) trains on them; FastSpeech (Ren et al. 2019)
and Hayashi et al. (ICASSP 2021) take durations from a teacher's attention the
same way.

    vc durations --checkpoint EXP/checkpoints/averaged.pt --features-dir EXP/features \\
        --out EXP/durations.pt data/bdl_slt/train.tsv data/bdl_slt/dev.tsv
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from vc.artifacts.checkpoint import load_checkpoint, private_rng
from vc.artifacts.durations import save_durations
from vc.audio import FeatureStats
from vc.config import Config
from vc.errors import CheckpointError
from vc.model import build_model
from vc.progress import progress as show_progress  # `progress` is a parameter name here
from vc.training.data import load_features

log = logging.getLogger(__name__)


def frame_alignment(alignment: np.ndarray, frames: int, reduction_factor: int) -> np.ndarray:
    """(decoder steps, N) attention weights -> (frames, N), each frame between its two nearest steps."""
    steps = alignment.shape[0]
    position = (np.arange(frames) - (reduction_factor - 1) / 2) / reduction_factor
    position = np.clip(position, 0, steps - 1)
    lower = np.floor(position).astype(np.int64)
    upper = np.minimum(lower + 1, steps - 1)
    weight = (position - lower)[:, None]
    return alignment[lower] * (1 - weight) + alignment[upper] * weight


def frame_positions(weights: np.ndarray) -> np.ndarray:
    """(frames, N) frame weights (frame_alignment) -> (frames,) encoder step each frame reads, monotonic.

    Each frame's position is the centroid sum_n w[t, n] n of its weights, a running maximum
    keeps the path from going back, and rounding picks one step per frame.
    The attention is too peaked per decoder step for its argmax: with r = 3 output frames
    per decoder step and about 1.5 encoder steps read per decoder step, the peak jumps
    over every other encoder step (durations 3, 0, 3, 0, ...), where the centroid moves
    half a step per frame.
    """
    steps = weights.shape[1]
    centroid = weights @ np.arange(steps, dtype=np.float64) / np.maximum(weights.sum(axis=1), 1e-8)
    return np.clip(np.round(np.maximum.accumulate(centroid)), 0, steps - 1).astype(np.int64)


def durations_from_alignment(
    alignment: np.ndarray, frames: int, enc_steps: int, reduction_factor: int
) -> tuple[np.ndarray, float]:
    """(decoder steps, >= enc_steps) attention -> (durations (enc_steps,) summing to frames, sharpness).

    Sharpness is the mean attention weight at the encoder step each frame reads (1.0: every
    frame reads one step alone); it says how sure the teacher was of the timing.
    """
    weights = frame_alignment(alignment[:, :enc_steps].astype(np.float64), frames, reduction_factor)
    path = frame_positions(weights)
    sharpness = float(weights[np.arange(frames), path].mean())
    return np.bincount(path, minlength=enc_steps), sharpness


@dataclass
class DurationReport:
    utterances: int
    sharpness: float  # mean attention weight on the hard path
    zero_fraction: float  # encoder steps given no frame


@torch.no_grad()
def extract_durations(
    checkpoint: str | Path,
    lists: list[str | Path],
    features_dir: str | Path,
    out: str | Path,
    batch_size: int = 16,
    progress: bool = True,
) -> DurationReport:
    """Teacher-forced alignments of the attention model ``checkpoint`` on every pair of ``lists``
    (their cached features in ``features_dir``, computed when missing) -> durations file ``out``."""
    payload = load_checkpoint(checkpoint)
    config = Config.from_dict(payload["config"])
    if config.model.kind != "attention":
        raise CheckpointError(
            f"{checkpoint} is a {config.model.kind} model; durations come from an attention model"
        )
    model = build_model(config.audio.n_mels, config.model)
    try:
        model.load_state_dict(payload["model"])
    except RuntimeError as exc:
        raise CheckpointError(f"{checkpoint} is not a usable model: {str(exc).splitlines()[0]}") from None
    model.eval()
    src_stats = FeatureStats.from_dict(payload["stats"]["source"])
    tgt_stats = FeatureStats.from_dict(payload["stats"]["target"])
    features = {}
    for path in lists:
        features.update(load_features(path, config.audio, features_dir, progress))
    r = config.model.reduction_factor
    order = sorted(features, key=lambda utt: len(features[utt][1]))
    durations, sharpness = {}, []
    pad = torch.nn.utils.rnn.pad_sequence
    with show_progress(total=len(order), desc="durations", unit="utt", disable=not progress) as bar:
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            src = [torch.from_numpy(src_stats.normalize(features[u][0])) for u in chunk]
            tgt = [torch.from_numpy(tgt_stats.normalize(features[u][1])) for u in chunk]
            src_lens, tgt_lens = torch.tensor([len(s) for s in src]), torch.tensor([len(t) for t in tgt])
            with private_rng(0, torch.device("cpu")):  # the prenet's dropout, as in training
                out_ = model(pad(src, batch_first=True), src_lens, pad(tgt, batch_first=True), tgt_lens)
            for row, utt in enumerate(chunk):
                frames, enc_steps = int(tgt_lens[row]), int(out_.enc_lens[row])
                steps = (frames + r - 1) // r
                alignment = out_.alignments[row, :steps].float().numpy()
                found, sharp = durations_from_alignment(alignment, frames, enc_steps, r)
                durations[utt] = torch.from_numpy(found.astype(np.int32))
                sharpness.append(sharp)
            bar.update(len(chunk))
    report = DurationReport(
        utterances=len(durations),
        sharpness=float(np.mean(sharpness)),
        zero_fraction=float(np.mean(np.concatenate([(d == 0).numpy() for d in durations.values()]))),
    )
    save_durations(out, durations, config, str(checkpoint), report)
    if report.zero_fraction > 0.3:  # an aligned teacher on ARCTIC leaves about 1 %
        log.warning(
            "%.0f %% of encoder steps get no frame: %s has not aligned source and target; "
            "a student will learn little timing from it (train it longer)",
            100 * report.zero_fraction,
            checkpoint,
        )
    log.info(
        "durations of %d utterances -> %s: sharpness %.3f, %.1f %% of encoder steps get no frame",
        report.utterances,
        out,
        report.sharpness,
        100 * report.zero_fraction,
    )
    return report
