"""The classical peer: joint-density GMM voice conversion with MLPG and WORLD synthesis.

    python bench/gmm_baseline.py --train-list data/bdl_slt/train.tsv --eval-list data/bdl_slt/eval.tsv \\
        --out-dir DIR [--pairs 120] [--mixtures 16]
    vc score --converted DIR --reference <target wav folder> ...     # the same scorer as the model's

Toda, Black and Tokuda, "Voice conversion based on maximum-likelihood estimation of spectral
parameter trajectory", IEEE TASLP 2007, as the sprocket toolkit (Kobayashi and Toda, Odyssey
2018) runs it, without its global-variance post-filter:

- WORLD analysis every 5 ms (DIO + StoneMask, CheapTrick, D4C) and mel-cepstra of order 24,
  with vc.metrics' settings, so the converter and the scorer see the same features;
- the first --pairs training pairs, speech frames only (the scorer's rule, vc.metrics.speech_frames),
  aligned by DTW on mel-cepstra without c0; joint vectors [x, dx, y, dy] of statics and deltas;
  a full-covariance GMM (EM, k-means start);
- per source frame the most likely mixture given [x, dx] (the suboptimal mixture sequence of
  Toda et al.), its conditional mean and variance of [y, dy], and the static trajectory that
  maximises their likelihood (MLPG, one banded solve per dimension);
- log F0 moved to the target's mean and variance; c0 and the aperiodicity are the source's.

Writes one wav per eval pair, named by its utterance id, to --out-dir.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import numpy as np
import scipy.sparse
import scipy.sparse.linalg
from scipy.stats import multivariate_normal
from sklearn.mixture import GaussianMixture

from vc.audio import read_audio, write_audio
from vc.config import AudioConfig
from vc.data import read_pair_list
from vc.metrics import (
    F0_FLOOR,
    FRAME_PERIOD_MS,
    MCEP_ORDER,
    analysis_libraries,
    dtw,
    mcep_alpha,
    sp2mc,
    speech_frames,
    world_frames,
)
from vc.progress import progress


def world_features(wave: np.ndarray, sample_rate: int) -> dict[str, np.ndarray]:
    """F0 (T,), mel-cepstrum (T, MCEP_ORDER + 1) and aperiodicity (T, bins) of one wave, 5 ms frames."""
    pyworld, _ = analysis_libraries()
    x = wave.astype(np.float64)
    frames = world_frames(x, sample_rate)  # the scorer's F0 and envelope analysis, DIO + StoneMask
    aperiodicity = pyworld.d4c(x, frames.f0, frames.times, sample_rate, fft_size=frames.fft_size)
    return dict(
        f0=frames.f0,
        mcep=sp2mc(frames.envelope, MCEP_ORDER, mcep_alpha(sample_rate)),
        aperiodicity=aperiodicity,
        # the scorer's silence rule: training sees the frames MCD counts
        speech=speech_frames(frames.envelope),
    )


def delta_operator(frames: int) -> scipy.sparse.csr_matrix:
    """(T, T) sparse matrix of the delta 0.5 (x[t+1] - x[t-1]), edges repeating the end frames."""
    after = np.minimum(np.arange(frames) + 1, frames - 1)
    before = np.maximum(np.arange(frames) - 1, 0)
    rows = np.concatenate([np.arange(frames), np.arange(frames)])
    cols = np.concatenate([after, before])
    values = np.concatenate([np.full(frames, 0.5), np.full(frames, -0.5)])
    return scipy.sparse.csr_matrix((values, (rows, cols)), shape=(frames, frames))


def with_deltas(x: np.ndarray) -> np.ndarray:
    """(T, D) -> (T, 2D): statics, then their deltas (delta_operator)."""
    return np.concatenate([x, delta_operator(len(x)) @ x], axis=1)


def mlpg(mean: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """The static trajectory that maximises the likelihood of per-frame static + delta Gaussians.

    For each dimension, (W' P W) y = W' P m with W = [I; delta], P the diagonal precisions
    (Tokuda et al., ICASSP 2000). Shapes: mean, variance (T, 2D), statics first; returns (T, D).
    """
    frames, dims = mean.shape[0], mean.shape[1] // 2
    delta = delta_operator(frames)
    precision = 1.0 / np.maximum(variance, 1e-8)
    out = np.empty((frames, dims))
    for d in range(dims):
        static_p, delta_p = precision[:, d], precision[:, dims + d]
        system = scipy.sparse.diags(static_p) + delta.T @ scipy.sparse.diags(delta_p) @ delta
        rhs = static_p * mean[:, d] + delta.T @ (delta_p * mean[:, dims + d])
        out[:, d] = scipy.sparse.linalg.spsolve(system.tocsc(), rhs)
    return out


class JointDensityGMM:
    """A GMM on joint [x, dx, y, dy] vectors and the conditional model of [y, dy] given [x, dx]."""

    def __init__(self, mixtures: int, seed: int = 1):
        self.gmm = GaussianMixture(
            mixtures, covariance_type="full", reg_covar=1e-4, max_iter=100, random_state=seed
        )

    def fit(self, joint: np.ndarray) -> JointDensityGMM:
        """Shapes: joint (N, 4D), source statics and deltas then target statics and deltas."""
        self.gmm.fit(joint)
        half = joint.shape[1] // 2
        means, covs = self.gmm.means_, self.gmm.covariances_
        self.mean_x, self.mean_y = means[:, :half], means[:, half:]
        self.cov_xx = covs[:, :half, :half]
        cov_yx = covs[:, half:, :half]
        # Regression of y on x per mixture, and what it leaves unexplained.
        self.gain = cov_yx @ np.linalg.inv(self.cov_xx)  # (M, 2D, 2D)
        self.cond_var = np.diagonal(
            covs[:, half:, half:] - self.gain @ covs[:, :half, half:], axis1=1, axis2=2
        ).copy()  # (M, 2D)
        return self

    def convert(self, x: np.ndarray) -> np.ndarray:
        """Source statics (T, D) -> converted statics (T, D): best mixture per frame, then MLPG."""
        source = with_deltas(x)
        log_post = np.stack(
            [
                np.log(weight) + multivariate_normal.logpdf(source, mean, cov, allow_singular=True)
                for weight, mean, cov in zip(self.gmm.weights_, self.mean_x, self.cov_xx, strict=True)
            ],
            axis=1,
        )  # (T, M)
        best = log_post.argmax(axis=1)
        centred = source - self.mean_x[best]
        mean = self.mean_y[best] + np.einsum("tij,tj->ti", self.gain[best], centred)
        return mlpg(mean, self.cond_var[best])


def log_f0_stats(f0s: list[np.ndarray]) -> tuple[float, float]:
    """Mean and standard deviation of log F0 over the voiced frames of all utterances."""
    voiced = np.log(np.concatenate([f0[f0 > 0] for f0 in f0s]))
    return float(voiced.mean()), float(voiced.std())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-list", required=True, type=Path, help="pair list (id, source, target)")
    parser.add_argument("--eval-list", required=True, type=Path, help="pairs whose sources are converted")
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument("--pairs", type=int, default=120, help="training pairs, from the top of the list")
    parser.add_argument("--mixtures", type=int, default=16)
    parser.add_argument("--sample-rate", type=int, default=16000)
    args = parser.parse_args()
    # Progress goes through logging when stderr is not a terminal (vc.progress): show it.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    started = time.monotonic()
    audio = AudioConfig(sample_rate=args.sample_rate, trim_top_db=0.0)
    pairs = read_pair_list(args.train_list)[: args.pairs]
    joint, source_f0, target_f0 = [], [], []
    for pair in progress(pairs, desc="training pairs", unit="pair"):
        src = world_features(read_audio(pair.source, audio), audio.sample_rate)
        tgt = world_features(read_audio(pair.target, audio), audio.sample_rate)
        x, y = src["mcep"][src["speech"], 1:], tgt["mcep"][tgt["speech"], 1:]
        path_x, path_y, _ = dtw(x, y)
        joint.append(np.concatenate([with_deltas(x)[path_x], with_deltas(y)[path_y]], axis=1))
        source_f0.append(src["f0"])
        target_f0.append(tgt["f0"])
    joint_frames = np.concatenate(joint)
    print(
        f"{len(pairs)} pairs, {len(joint_frames)} aligned frames; fitting {args.mixtures} mixtures",
        flush=True,
    )
    model = JointDensityGMM(args.mixtures).fit(joint_frames)
    (src_mean, src_std), (tgt_mean, tgt_std) = log_f0_stats(source_f0), log_f0_stats(target_f0)
    print(f"trained in {(time.monotonic() - started) / 60:.1f} min", flush=True)

    pyworld, pysptk = analysis_libraries()
    fft_size = pyworld.get_cheaptrick_fft_size(audio.sample_rate, F0_FLOOR)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    eval_pairs = read_pair_list(args.eval_list)
    for pair in progress(eval_pairs, desc="converting", unit="utt"):
        src = world_features(read_audio(pair.source, audio), audio.sample_rate)
        mcep = np.concatenate([src["mcep"][:, :1], model.convert(src["mcep"][:, 1:])], axis=1)
        f0 = np.where(
            src["f0"] > 0,
            np.exp((np.log(np.maximum(src["f0"], 1e-3)) - src_mean) / src_std * tgt_std + tgt_mean),
            0.0,
        )
        envelope = pysptk.mc2sp(np.ascontiguousarray(mcep), mcep_alpha(audio.sample_rate), fft_size)
        wave = pyworld.synthesize(f0, envelope, src["aperiodicity"], audio.sample_rate, FRAME_PERIOD_MS)
        write_audio(args.out_dir / f"{pair.utt_id}.wav", wave, audio.sample_rate)
    print(
        f"{len(eval_pairs)} conversions in {args.out_dir}; {(time.monotonic() - started) / 60:.1f} min in all"
    )


if __name__ == "__main__":
    main()
