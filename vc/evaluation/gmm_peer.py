"""The classical peer: joint-density GMM voice conversion with MLPG, the GV post-filter and WORLD.

    vc gmm-peer --train-list data/bdl_slt/train.tsv --eval-list data/bdl_slt/eval.tsv --out-dir DIR
    vc score --converted EXP/converted/eval --reference <target wav folder> --system "GMM peer=DIR" ...

Toda, Black and Tokuda, "Voice conversion based on maximum-likelihood estimation of spectral
parameter trajectory", IEEE TASLP 2007, as the sprocket toolkit (Kobayashi and Toda, Odyssey
2018) runs it by default:

- WORLD analysis every 5 ms (DIO + StoneMask, CheapTrick, D4C) and mel-cepstra of order 24,
  with vc.evaluation.metrics' settings, so the converter and the scorer see the same features;
- the first ``pairs`` training pairs, speech frames only (the scorer's rule, vc.evaluation.metrics.speech_frames),
  aligned by DTW on mel-cepstra without c0; joint vectors [x, dx, y, dy] of statics and deltas;
  a full-covariance GMM (EM, k-means start);
- per source frame the most likely mixture given [x, dx] (the suboptimal mixture sequence of
  Toda et al.), its conditional mean and variance of [y, dy], and the static trajectory that
  maximises their likelihood (MLPG, one banded solve per dimension);
- the global-variance post-filter (Toda et al. 2007, sec. IV; sprocket's ``GV.postfilter``):
  each converted dimension c1.. is scaled about its utterance mean so its variance is the
  target speaker's mean per-utterance variance on the training pairs (speech frames). MLPG's
  trajectories are over-smoothed, and the GV restores their spread (docs/ablation.md has the
  peer's scores with and without it);
- log F0 moved to the target's mean and variance; c0 and the aperiodicity are the source's.

scikit-learn fits the GMM; it, pyworld and pysptk come with the ``eval`` extra.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse
import scipy.sparse.linalg
from scipy.stats import multivariate_normal

from vc.audio import read_audio, write_audio
from vc.errors import VcError
from vc.evaluation.metrics import (
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
from vc.evaluation.optional import INSTALL_HINT
from vc.packages import missing
from vc.pairs import Pair, read_pair_list
from vc.parallel import process_map
from vc.settings.audio import AudioConfig

log = logging.getLogger(__name__)

MODULES = ("sklearn", "pyworld", "pysptk")


def world_features(wave: np.ndarray, sample_rate: int) -> dict[str, np.ndarray]:
    """F0 (T,), mel-cepstrum (T, MCEP_ORDER + 1), aperiodicity (T, bins) and speech mask (T,) of one wave."""
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


def global_variance(trajectories: list[np.ndarray]) -> np.ndarray:
    """The global variance of a speaker: per dimension, the mean over utterances of the variance
    over each utterance's frames (Toda et al. 2007, eq. 41). Shapes: each (T, D); returns (D,)."""
    return np.mean([trajectory.var(axis=0) for trajectory in trajectories], axis=0)


def gv_postfilter(
    mcep: np.ndarray,
    target_gv: np.ndarray,
    weight: float = 1.0,
    start_dim: int = 1,
    frames: np.ndarray | None = None,
) -> np.ndarray:
    """Scale each dimension from ``start_dim`` about its utterance mean so its variance is ``target_gv``.

    The variance-scaling form of the GV post-filter (Toda et al. 2007; sprocket's ``GV.postfilter``,
    whose default keeps c0 and uses weight 1). ``weight`` blends the result with the input
    (0: unchanged, 1: the target's variance exactly). ``frames`` (T,) bool picks the frames whose
    mean and variance are measured (e.g. speech only, as ``target_gv`` was); all frames are scaled.
    Shapes: mcep (T, D), target_gv (D,); returns (T, D).
    """
    measured = mcep if frames is None else mcep[frames]
    mean, variance = measured.mean(axis=0), measured.var(axis=0)
    ratio = np.sqrt(target_gv / np.maximum(variance, 1e-12))
    out = mcep.copy()
    scaled = (mcep[:, start_dim:] - mean[start_dim:]) * ratio[start_dim:] + mean[start_dim:]
    out[:, start_dim:] = weight * scaled + (1.0 - weight) * mcep[:, start_dim:]
    return out


def unavailable() -> str | None:
    """Why the peer cannot run here (scikit-learn, pyworld or pysptk missing), or None."""
    absent = missing(*MODULES)
    if absent:
        names = ", ".join("scikit-learn" if name == "sklearn" else name for name in absent)
        return f"the GMM peer needs {names}, not installed here ({INSTALL_HINT})"
    return None


def _gaussian_mixture(mixtures: int, seed: int):
    reason = unavailable()
    if reason:
        raise VcError(reason)
    from sklearn.mixture import GaussianMixture

    return GaussianMixture(mixtures, covariance_type="full", reg_covar=1e-4, max_iter=100, random_state=seed)


class JointDensityGMM:
    """A GMM on joint [x, dx, y, dy] vectors and the conditional model of [y, dy] given [x, dx]."""

    def __init__(self, mixtures: int, seed: int = 1):
        self.gmm = _gaussian_mixture(mixtures, seed)

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


@dataclass
class GmmPeer:
    """A trained peer: the spectral GMM, the log-F0 statistics and the target's global variance."""

    gmm: JointDensityGMM
    source_log_f0: tuple[float, float]  # mean, standard deviation
    target_log_f0: tuple[float, float]
    target_gv: np.ndarray  # (MCEP_ORDER + 1,), c0 included (the post-filter leaves it)
    sample_rate: int = 16000
    gv_weight: float = 1.0  # 0: no GV post-filter

    def convert_mcep(self, mcep: np.ndarray, speech: np.ndarray | None = None) -> np.ndarray:
        """(T, MCEP_ORDER + 1) source mel-cepstra -> converted, c0 kept; ``speech`` (T,) bool: the
        frames the post-filter measures the variance on (as the target's GV was)."""
        converted = np.concatenate([mcep[:, :1], self.gmm.convert(mcep[:, 1:])], axis=1)
        if self.gv_weight == 0.0:
            return converted
        return gv_postfilter(converted, self.target_gv, self.gv_weight, start_dim=1, frames=speech)

    def convert(self, wave: np.ndarray) -> np.ndarray:
        """A mono source wave at ``sample_rate`` -> the converted wave (WORLD synthesis)."""
        pyworld, pysptk = analysis_libraries()
        src = world_features(wave, self.sample_rate)
        mcep = self.convert_mcep(src["mcep"], src["speech"])
        (src_mean, src_std), (tgt_mean, tgt_std) = self.source_log_f0, self.target_log_f0
        f0 = np.where(
            src["f0"] > 0,
            np.exp((np.log(np.maximum(src["f0"], 1e-3)) - src_mean) / src_std * tgt_std + tgt_mean),
            0.0,
        )
        fft_size = pyworld.get_cheaptrick_fft_size(self.sample_rate, F0_FLOOR)
        envelope = pysptk.mc2sp(np.ascontiguousarray(mcep), mcep_alpha(self.sample_rate), fft_size)
        return pyworld.synthesize(f0, envelope, src["aperiodicity"], self.sample_rate, FRAME_PERIOD_MS)


def _pair_frames(job: tuple[Pair, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One training pair -> (its DTW-aligned joint vectors, source F0, target F0, target speech mel-cepstra)."""
    pair, sample_rate = job
    audio = AudioConfig(sample_rate=sample_rate, trim_top_db=0.0)
    src = world_features(read_audio(pair.source, audio), sample_rate)
    tgt = world_features(read_audio(pair.target, audio), sample_rate)
    x, y = src["mcep"][src["speech"], 1:], tgt["mcep"][tgt["speech"], 1:]
    path_x, path_y, _ = dtw(x, y)
    joint = np.concatenate([with_deltas(x)[path_x], with_deltas(y)[path_y]], axis=1)
    return joint, src["f0"], tgt["f0"], tgt["mcep"][tgt["speech"]]


def train_gmm_peer(
    pairs: list[Pair],
    *,
    mixtures: int = 16,
    sample_rate: int = 16000,
    gv_weight: float = 1.0,
    seed: int = 1,
    workers: int = 2,
    progress: bool = True,
) -> GmmPeer:
    """Fit the peer on (source, target) pairs: DTW-aligned joint GMM, log-F0 and GV statistics. The pairs
    are analysed by ``workers`` processes (the result is the same for any number)."""
    gmm = JointDensityGMM(mixtures, seed)  # fails now, not after the analysis, without scikit-learn
    analysed = process_map(
        _pair_frames,
        [(pair, sample_rate) for pair in pairs],
        workers,
        desc="training pairs",
        unit="pair",
        progress=progress,
    )
    joint, source_f0, target_f0, target_mcep = (list(part) for part in zip(*analysed, strict=True))
    joint_frames = np.concatenate(joint)
    log.info("%d pairs, %d aligned frames; fitting %d mixtures", len(pairs), len(joint_frames), mixtures)
    gmm.fit(joint_frames)
    return GmmPeer(
        gmm=gmm,
        source_log_f0=log_f0_stats(source_f0),
        target_log_f0=log_f0_stats(target_f0),
        target_gv=global_variance(target_mcep),
        sample_rate=sample_rate,
        gv_weight=gv_weight,
    )


def _convert_pair(job: tuple[GmmPeer, Pair, Path]) -> Path:
    peer, pair, out_dir = job
    path = out_dir / f"{pair.utt_id}.wav"
    audio = AudioConfig(sample_rate=peer.sample_rate, trim_top_db=0.0)
    write_audio(path, peer.convert(read_audio(pair.source, audio)), peer.sample_rate)
    return path


def convert_pairs(
    peer: GmmPeer, pairs: list[Pair], out_dir: str | Path, progress: bool = True, workers: int = 2
) -> list[Path]:
    """Convert every pair's source to OUT_DIR/<utt id>.wav over ``workers`` processes; returns the files
    written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = [(peer, pair, out_dir) for pair in pairs]
    return process_map(_convert_pair, jobs, workers, desc="converting", unit="utt", progress=progress)


def run_gmm_peer(
    train_list: str | Path,
    eval_list: str | Path,
    out_dir: str | Path,
    *,
    pairs: int = 120,
    mixtures: int = 16,
    sample_rate: int = 16000,
    gv_weight: float = 1.0,
    workers: int = 2,
    progress: bool = True,
) -> dict:
    """Train on the first ``pairs`` of ``train_list``, convert the sources of ``eval_list`` into
    ``out_dir``, both over ``workers`` processes. Returns {"pairs", "files", "train_minutes", "minutes"}."""
    if not 0.0 <= gv_weight <= 1.0:
        raise VcError(f"the GV post-filter weight must lie in [0, 1], got {gv_weight}")
    started = time.monotonic()
    training = read_pair_list(train_list)[:pairs]
    evaluation = read_pair_list(eval_list)  # read before training: a wrong path fails at once
    peer = train_gmm_peer(
        training,
        mixtures=mixtures,
        sample_rate=sample_rate,
        gv_weight=gv_weight,
        workers=workers,
        progress=progress,
    )
    trained = time.monotonic()
    files = convert_pairs(peer, evaluation, out_dir, progress=progress, workers=workers)
    return dict(
        pairs=len(training),
        files=len(files),
        train_minutes=(trained - started) / 60.0,
        minutes=(time.monotonic() - started) / 60.0,
    )
