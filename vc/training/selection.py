"""Which checkpoint to keep: a free-running dev distance instead of the teacher-forced loss.

The teacher-forced dev loss stops falling long before conversions stop improving
(a resumed default bdl -> slt run kept that loss flat while the recognizer's word
error rate and stage 6's MCD kept falling; docs/ablation_archive.md, "Earlier measurements").
Conversion runs free, so the model is
judged free-running here: the first dev utterances are converted as ``vc convert``
does for the source speaker's own speech (its statistics; no warp), and each
predicted log-mel is compared with the target's by a mel-cepstral distance after
dynamic time warping (so a slower or faster output is not punished for its
timing). It is a cheap stand-in for stage 6's MCD, on the same dB scale but from
log-mels, so the two numbers are not interchangeable.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch

from vc.audio import FeatureStats
from vc.config import Config
from vc.evaluation.metrics import dtw, mel_cepstral_distortion
from vc.kinds import get_kind
from vc.kinds.alignment import focus_rate
from vc.settings.audio import AudioConfig
from vc.training.data import ParallelDataset, batches_in_order

CEPSTRAL_ORDER = 24  # coefficients 1..24 compared; c0 (level) left out, as MCD does


def log_mel_cepstrum(log_mel: np.ndarray, audio: AudioConfig, order: int = CEPSTRAL_ORDER) -> np.ndarray:
    """Cepstrum of log-mel frames, c1..c_order: the DCT-II of natural-log mel magnitudes, scaled 1/n_mels.

    That scale is the real cepstrum of the (even, 2 * n_mels point) log spectrum, the
    scale the MCD formula expects. Features are log_base of mel magnitudes raised to
    spectrogram_power, so ln(magnitude) = ln(log_base) / spectrogram_power * feature.
    Shapes: (frames, n_mels) -> (frames, min(order, n_mels - 1)).
    """
    n_mels = log_mel.shape[1]
    k = np.arange(1, min(order, n_mels - 1) + 1)[:, None]
    n = np.arange(n_mels)[None, :]
    basis = np.cos(math.pi * k * (n + 0.5) / n_mels) / n_mels
    to_ln_magnitude = math.log(audio.log_base) / audio.spectrogram_power
    return (to_ln_magnitude * np.asarray(log_mel, dtype=np.float64)) @ basis.T


def mel_cepstral_distance(predicted: np.ndarray, target: np.ndarray, audio: AudioConfig) -> float:
    """Mean distance in dB (the MCD formula) between DTW-paired cepstra of two log-mel sequences."""
    a, b = log_mel_cepstrum(predicted, audio), log_mel_cepstrum(target, audio)
    path_a, path_b, _ = dtw(a, b)
    return mel_cepstral_distortion(a[path_a], b[path_b])


class FreeRunning(NamedTuple):
    """The free-running dev check: the first ``train.select_utterances`` dev utterances converted."""

    distance: float  # their mean mel-cepstral distance to the targets [dB]
    focus: float  # their alignments' mean focus rate (vc/kinds/alignment.py)


@torch.no_grad()
def free_running_check(
    model, dev_set: ParallelDataset, config: Config, tgt_stats: FeatureStats, device: torch.device
) -> FreeRunning:
    """Convert the first ``train.select_utterances`` dev utterances and measure them."""
    count = min(config.train.select_utterances, len(dev_set))
    if count == 0:
        raise ValueError("the free-running dev check needs at least one dev utterance")
    kind = get_kind(config.model.kind)
    distances, focus = [], []
    for batch in batches_in_order(dev_set, config.data.batch_size, count):
        batch = batch.to(device)
        extras = {} if batch.src_pitch is None else {"pitch": batch.src_pitch}  # a network that reads pitch
        out = model.inference(batch.src, batch.src_lens, config.inference, **extras)
        focus.extend(
            focus_rate(out.alignments, kind.alignment_rows(out.lens, config.model), out.enc_lens).tolist()
        )
        predicted = tgt_stats.denormalize(out.after.float()).cpu().numpy()
        target = tgt_stats.denormalize(batch.tgt.float()).cpu().numpy()
        for k in range(len(batch.utt_ids)):
            distances.append(
                mel_cepstral_distance(
                    predicted[k, : int(out.lens[k])], target[k, : int(batch.tgt_lens[k])], config.audio
                )
            )
    return FreeRunning(float(np.mean(distances)), float(np.mean(focus)))
