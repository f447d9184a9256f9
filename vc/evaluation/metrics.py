"""Objective scores after conversion (attention health during training: vc/kinds/alignment.py).

Objective evaluation follows the usual protocol of parallel voice-conversion
papers (e.g. Toda et al., "Voice conversion based on maximum-likelihood
estimation of spectral parameter trajectory", IEEE TASLP 2007; Zhang et al.,
"Sequence-to-sequence acoustic modeling for voice conversion", IEEE TASLP 2019):

* WORLD analysis (Morise et al., IEICE Trans. 2016) every 5 ms, float64: F0 by
  DIO + StoneMask (or Harvest), spectral envelope by CheapTrick;
* envelope -> mel-cepstrum of order 24 with an all-pass constant of 0.42 at
  16 kHz (``pysptk.sp2mc``, computed here as one matrix product, see ``sp2mc``);
* silent frames dropped (rule in ``speech_frames``), then dynamic time
  warping (Sakoe and Chiba, IEEE TASSP 1978) on mel-cepstra without c0;
* mel-cepstral distortion (Kubichek, IEEE PACRIM 1993) in dB averaged over the
  DTW path, F0 RMSE [Hz] and Pearson correlation over the path frames voiced on
  both sides, the ratio of speech durations (converted / reference) and DDUR,
  their absolute difference in seconds (as the seq2seq VC papers report it:
  AAS-VC, Huang et al. 2023; Urhythmic, van Niekerk et al. 2023), each speech
  duration from the first to the last speech frame.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.ndimage import median_filter
from scipy.spatial.distance import cdist

from vc.audio import prepare_wave, read_audio
from vc.errors import DataError, MissingPackageError
from vc.evaluation.metric import Column, FileJob, Metric
from vc.evaluation.optional import INSTALL_HINT, pkg_resources_stand_in
from vc.packages import missing
from vc.settings.audio import AudioConfig

FRAME_PERIOD_MS = 5.0
MCEP_ORDER = 24
# Covers low male to high female voices; DIO's octave errors grow with the range.
F0_FLOOR = 70.0
F0_CEIL = 500.0
# A frame is speech if its (median-smoothed) envelope power is within this of the loudest frame.
SILENCE_DB = 40.0
SILENCE_MEDIAN_FRAMES = 5  # 25 ms: removes isolated clicks in pauses, keeps any real phone
# The DTW cost matrix is N x M float64; this caps it at 320 MB (about 30 s x 30 s of speech).
MAX_DTW_CELLS = 40_000_000
# 10 / ln(10) * sqrt(2): turns a Euclidean mel-cepstral distance into dB (Kubichek 1993).
MCD_SCALE = 10.0 / math.log(10.0) * math.sqrt(2.0)


# ---------------------------------------------------------------------------
# WORLD / SPTK analysis
# ---------------------------------------------------------------------------


def require_analysis_libraries() -> None:
    """Fail in one line, before any work, where pyworld or pysptk is not installed.

    Both are C extensions that pip often compiles, so they come with the eval
    extra, not the core install: converting never needs them, MCD and F0 do.
    """
    if missing("pyworld", "pysptk"):
        raise MissingPackageError(f"MCD and F0 need pyworld and pysptk, not installed here: {INSTALL_HINT}")


@functools.lru_cache(maxsize=1)
def analysis_libraries():
    """Import pyworld and pysptk lazily, so the attention metrics and conversion never need them.

    pyworld 0.3.5 and pysptk 1.0.1 import ``pkg_resources`` only to read their
    version and locate example audio; setuptools >= 81 no longer ships it
    (vc.evaluation.optional.pkg_resources_stand_in answers for it meanwhile).
    """
    require_analysis_libraries()
    with pkg_resources_stand_in():
        import pysptk
        import pyworld
    return pyworld, pysptk


def mcep_alpha(sample_rate: int) -> float:
    """All-pass constant that approximates the mel scale at this sample rate.

    0.42 at 16 kHz as in the SPTK examples and most VC papers (pysptk's
    ``mcepalpha`` fit gives 0.41); other rates use that fit.
    """
    if sample_rate == 16000:
        return 0.42
    _, pysptk = analysis_libraries()
    return float(pysptk.util.mcepalpha(sample_rate))


@functools.lru_cache(maxsize=8)
def _sp2mc_matrix(bins: int, order: int, alpha: float) -> np.ndarray:
    """(bins, order + 1) matrix taking a log power envelope to its mel-cepstrum.

    ``pysptk.sp2mc`` is log power -> real cepstrum (inverse real FFT, c0 halved)
    -> ``freqt`` (all-pass frequency warping). After the log every step is
    linear, so pushing each unit log-spectrum through them once gives a matrix
    that does all frames in one product instead of one FFT and C call per frame.
    """
    _, pysptk = analysis_libraries()
    cepstra = np.fft.irfft(np.eye(bins), axis=1)  # (bins, fft_size)
    cepstra[:, 0] /= 2.0
    return np.stack([pysptk.freqt(cepstrum, order, alpha) for cepstrum in cepstra])


def sp2mc(envelope: np.ndarray, order: int, alpha: float) -> np.ndarray:
    """(frames, fft_size // 2 + 1) power envelope -> (frames, order + 1) mel-cepstrum.

    Same result as ``pysptk.sp2mc(envelope, order, alpha)``, vectorised over frames.
    """
    return np.log(envelope) @ _sp2mc_matrix(envelope.shape[1], order, alpha)


def speech_frames(envelope: np.ndarray) -> np.ndarray:
    """(frames, bins) power envelope -> (frames,) bool, True for speech.

    Frame power is the mean of the WORLD envelope over frequency, in dB, median
    filtered over 5 frames (25 ms) so an isolated click in a pause does not count
    as speech. Frames more than 40 dB below the loudest frame are silence; the
    rule is relative, so it ignores the recording level, like c0 being excluded.
    """
    power_db = 10.0 * np.log10(np.maximum(envelope.mean(axis=1), 1e-30))
    power_db = median_filter(power_db, size=SILENCE_MEDIAN_FRAMES, mode="nearest")
    return power_db > power_db.max() - SILENCE_DB


@dataclass
class Analysis:
    """Speech frames of one utterance (silent frames already dropped).

    mcep: (frames, 25) mel-cepstrum, c0 first; f0: (frames,) Hz, 0 = unvoiced;
    duration: seconds from the first to the last speech frame.
    """

    mcep: np.ndarray
    f0: np.ndarray
    duration: float


@dataclass
class WorldFrames:
    """WORLD's F0 and spectral envelope of one wave, every frame (silence included)."""

    f0: np.ndarray  # (frames,) Hz, 0 = unvoiced
    times: np.ndarray  # (frames,) s
    envelope: np.ndarray  # (frames, fft_size // 2 + 1) power
    fft_size: int


def world_frames(x: np.ndarray, sample_rate: int, f0_method: str = "dio") -> WorldFrames:
    """F0 and CheapTrick envelope of a float64 wave at 5 ms frames, with the scorer's settings.

    ``f0_method`` is "dio" (DIO + StoneMask, fast) or "harvest" (Morise,
    Interspeech 2017: fewer voicing errors, about 25x slower).
    """
    pyworld, _ = analysis_libraries()
    if f0_method == "dio":
        f0, times = pyworld.dio(
            x, sample_rate, f0_floor=F0_FLOOR, f0_ceil=F0_CEIL, frame_period=FRAME_PERIOD_MS
        )
        f0 = pyworld.stonemask(x, f0, times, sample_rate)
    elif f0_method == "harvest":
        f0, times = pyworld.harvest(
            x, sample_rate, f0_floor=F0_FLOOR, f0_ceil=F0_CEIL, frame_period=FRAME_PERIOD_MS
        )
    else:
        raise ValueError(f"f0_method must be 'dio' or 'harvest', got {f0_method!r}")
    fft_size = pyworld.get_cheaptrick_fft_size(sample_rate, F0_FLOOR)
    envelope = pyworld.cheaptrick(x, f0, times, sample_rate, f0_floor=F0_FLOOR, fft_size=fft_size)
    return WorldFrames(f0=f0, times=times, envelope=envelope, fft_size=fft_size)


def analyse(wave: np.ndarray, sample_rate: int, f0_method: str = "dio", name: str = "input") -> Analysis:
    """WORLD + SPTK analysis of one mono wave at 5 ms frames (see the module docstring)."""
    config = AudioConfig(sample_rate=sample_rate, trim_top_db=0.0)
    x = prepare_wave(wave, sample_rate, config, name=name).astype(np.float64)
    frames = world_frames(x, sample_rate, f0_method)
    f0, envelope = frames.f0, frames.envelope
    speech = speech_frames(envelope)
    kept = np.flatnonzero(speech)
    duration = (kept[-1] - kept[0] + 1) * FRAME_PERIOD_MS / 1000.0
    mcep = sp2mc(envelope[speech], MCEP_ORDER, mcep_alpha(sample_rate))
    return Analysis(mcep=mcep, f0=f0[speech], duration=float(duration))


# ---------------------------------------------------------------------------
# Dynamic time warping and scores
# ---------------------------------------------------------------------------


def _accumulate(cost: np.ndarray) -> np.ndarray:
    """Accumulated DTW cost, in place, with steps (1, 0), (0, 1), (1, 1) of weight 1.

    Row i needs A[i, j] = min(B[j], A[i, j-1] + D[i, j]) with
    B[j] = D[i, j] + min(A[i-1, j], A[i-1, j-1]). Unrolling the horizontal
    recursion gives A[i, j] = C[j] + min_{k<=j} (B[k] - C[k]) with C the cumulative
    sum of row i of D, so each row is a cumsum and a running minimum: one Python
    step per row instead of per cell.
    """
    np.cumsum(cost[0], out=cost[0])
    best_prev = np.empty(cost.shape[1])
    for i in range(1, cost.shape[0]):
        prev, row = cost[i - 1], cost[i]
        best_prev[0] = prev[0]
        np.minimum(prev[1:], prev[:-1], out=best_prev[1:])
        through = row + best_prev  # B
        running = np.cumsum(row)  # C
        cost[i] = running + np.minimum.accumulate(through - running)
    return cost


def _backtrack(acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Optimal path from (N-1, M-1) back to (0, 0); ties prefer the diagonal step."""
    i, j = acc.shape[0] - 1, acc.shape[1] - 1
    path = [(i, j)]
    while i > 0 or j > 0:
        if i == 0:
            j -= 1
        elif j == 0:
            i -= 1
        else:
            diagonal, up, left = acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]
            if diagonal <= up and diagonal <= left:
                i, j = i - 1, j - 1
            elif up <= left:
                i -= 1
            else:
                j -= 1
        path.append((i, j))
    steps = np.asarray(path[::-1])
    return steps[:, 0], steps[:, 1]


def dtw(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Dynamic time warping with Euclidean frame distance (Sakoe and Chiba, 1978).

    Shapes:
        x: (N, D), y: (M, D)
        returns: path indices into x and y, both (L,), max(N, M) <= L <= N + M - 1,
            starting at (0, 0) and ending at (N-1, M-1); and the summed distance
            along the path (unweighted steps, as in fastdtw and most MCD scripts).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1] or len(x) == 0 or len(y) == 0:
        raise ValueError(f"dtw needs two non-empty (frames, dim) arrays, got {x.shape} and {y.shape}")
    if len(x) * len(y) > MAX_DTW_CELLS:
        raise DataError(
            f"utterances too long for DTW ({len(x)} x {len(y)} frames of speech); split them at pauses"
        )
    acc = _accumulate(cdist(x, y))
    path_x, path_y = _backtrack(acc)
    return path_x, path_y, float(acc[-1, -1])


def mel_cepstral_distortion(mcep_a: np.ndarray, mcep_b: np.ndarray) -> float:
    """Mean MCD in dB of paired frames: 10/ln10 * sqrt(2 * sum_d (a_d - b_d)^2).

    Shapes: (L, D) each, already aligned and without c0.
    """
    distances = np.sqrt(np.square(mcep_a - mcep_b).sum(axis=1))
    return float(MCD_SCALE * distances.mean())


def _f0_scores(f0_a: np.ndarray, f0_b: np.ndarray) -> tuple[float, float, int]:
    """RMSE [Hz] and Pearson correlation over paired frames voiced on both sides.

    NaN where undefined: RMSE with no such frame, correlation with fewer than
    two or with a constant F0 on one side.
    """
    voiced = (f0_a > 0) & (f0_b > 0)
    a, b = f0_a[voiced], f0_b[voiced]
    if a.size == 0:
        return math.nan, math.nan, 0
    rmse = float(np.sqrt(np.mean(np.square(a - b))))
    a, b = a - a.mean(), b - b.mean()
    norm = math.sqrt(float(np.dot(a, a) * np.dot(b, b)))
    corr = float(np.dot(a, b) / norm) if a.size > 1 and norm > 0 else math.nan
    return rmse, corr, int(a.size)


def score_analyses(converted: Analysis, reference: Analysis) -> dict:
    """Scores of two analysed utterances; see ``score_pair``."""
    path_c, path_r, _ = dtw(converted.mcep[:, 1:], reference.mcep[:, 1:])
    mcd = mel_cepstral_distortion(converted.mcep[path_c, 1:], reference.mcep[path_r, 1:])
    f0_rmse, f0_corr, voiced = _f0_scores(converted.f0[path_c], reference.f0[path_r])
    return {
        "mcd": mcd,
        "f0_rmse": f0_rmse,
        "f0_corr": f0_corr,
        "duration_ratio": converted.duration / reference.duration,
        "ddur": abs(converted.duration - reference.duration),
        "path_frames": int(path_c.size),
        "voiced_frames": voiced,
    }


def score_pair(
    converted_wave: np.ndarray, reference_wave: np.ndarray, sample_rate: int, f0_method: str = "dio"
) -> dict:
    """Objective scores of one converted utterance against its reference.

    Both waves are mono at ``sample_rate``. Returns a dict of floats:
    mcd [dB], f0_rmse [Hz], f0_corr (NaN where undefined), duration_ratio
    (converted / reference speech duration), ddur (|converted - reference| speech
    duration [s]), and the counts path_frames and
    voiced_frames. Raises AudioError for an empty, silent or non-finite wave.
    """
    converted = analyse(converted_wave, sample_rate, f0_method, name="converted wave")
    reference = analyse(reference_wave, sample_rate, f0_method, name="reference wave")
    return score_analyses(converted, reference)


# ---------------------------------------------------------------------------
# Folders and tables
# ---------------------------------------------------------------------------


class Distances(Metric):
    """MCD, F0 RMSE and correlation, the duration ratio and DDUR against the same utterance of the
    reference (every row scored against one; the reference itself is not)."""

    name = "distances"
    optional = False  # `vc score` always computes them (require_analysis_libraries fails early without)
    columns = (
        Column("MCD [dB]", "mcd", "{:.2f}", lower_is_better=True, headline=True, report_rank=2),
        Column("F0 RMSE [Hz]", "f0_rmse", "{:.1f}", lower_is_better=True, headline=True),
        Column("F0 corr", "f0_corr", "{:.3f}"),
        Column("duration ratio", "duration_ratio", "{:.3f}"),
        Column("DDUR [s]", "ddur", "{:.3f}", lower_is_better=True, headline=True),
    )
    packages = ("pyworld", "pysptk", "scipy", "numpy")
    version = 2  # 2: DDUR

    def depends_on(self, job: FileJob) -> dict:
        return {"reference": job.reference, "f0_method": job.f0_method}

    def score(self, model, wave: np.ndarray, job: FileJob) -> dict:
        if job.reference is None:
            return {}
        config = AudioConfig(sample_rate=job.sample_rate, trim_top_db=0.0)
        return score_pair(wave, read_audio(job.reference, config), job.sample_rate, job.f0_method)


DISTANCES = Distances()
