"""Pitch per mel frame: YIN (de Cheveigné and Kawahara, JASA 2002), batched in torch, no dependency.

For each frame of the log-mel's framing (centred, n_fft samples, one per hop; vc/audio/features.py's
LogMel), the cumulative-mean-normalised difference function d'(tau) over lags of fmax..fmin; the period
is the first lag whose d' dips below the threshold, taken at that dip's minimum and refined by a
parabola. Voicing is decided apart from the period (YIN's step 4 chooses the deepest dip where none
passes the threshold): a frame whose d' never dips below ``VOICING``, or quieter than the utterance's
loudest by more than ``SILENCE_DB``, is unvoiced; a weakly periodic frame takes the first dip within
``MARGIN`` of its deepest. Against DIO + StoneMask on ARCTIC this voices 62 % of bdl's frames (DIO 64 %;
one threshold for both, 52 %) and 63 % of slt's (60 %).

The recognition-synthesis converter (vc/model/recognition_synthesis.py) reads pitch_features: log-F0 as
a z-score and the voicing flag; it learns from its target's z-scores in the target's range, and converts
an input read in the input's own range (pitch_of), so a voice of any range arrives as its contour.
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from vc.masks import make_pad_mask
from vc.settings.audio import AudioConfig

FMIN, FMAX = 60.0, 500.0  # Hz: the speaking voices' range
THRESHOLD = 0.25  # d' below this is a period (YIN's absolute threshold; 0.1-0.15 there)
VOICING = 0.4  # a frame whose d' dips below this is voiced: a low voice's weak periods dip above THRESHOLD
MARGIN = 0.05  # a weakly periodic frame's period: the first dip this close to its deepest
WINDOW_SECONDS = 0.015  # the difference function's window: short against a low voice's pitch changes
SILENCE_DB = 40.0  # frames this far below the utterance's loudest are unvoiced
# what an F0 cache was made with (vc/training/data.py keys its file on it)
SETTINGS = (FMIN, FMAX, THRESHOLD, VOICING, MARGIN, WINDOW_SECONDS, SILENCE_DB)
FEATURES = 2  # pitch_features per frame: the z-scored log-F0 and the voicing flag
MIN_DEVIATION = 0.05  # natural-log units: the smallest spread a contour is divided by


def yin(waves: torch.Tensor, wave_lens: torch.Tensor, audio: AudioConfig) -> torch.Tensor:
    """(B, samples) zero-padded waves, (B,) lengths -> (B, frames) F0 in Hz, 0 where unvoiced or past an
    item's frames (frames = samples // hop_length + 1, the log-mel's)."""
    sample_rate, hop = audio.sample_rate, audio.hop_length
    lag_min = max(2, int(sample_rate / FMAX))
    lag_max = int(math.ceil(sample_rate / FMIN))
    window = int(WINDOW_SECONDS * sample_rate)  # the sum's length: each lag compares two such windows
    size = 2 * ((window + lag_max + 1) // 2)  # even: frame t is centred on sample t x hop
    waves = waves.float()
    frames = F.pad(waves, (size // 2, size // 2)).unfold(-1, size, hop)  # (B, T, size)
    n = 1 << (size + window - 1).bit_length()
    spectrum = torch.fft.rfft(frames, n)
    head = torch.fft.rfft(frames[..., :window], n)
    cross = torch.fft.irfft(spectrum * head.conj(), n)[..., : lag_max + 1]  # sum_j x[j] x[j + lag]
    energy = F.pad(frames.square().cumsum(-1), (1, 0))  # energy[k] = sum_{j < k} x[j]^2
    lags = torch.arange(lag_max + 1, device=waves.device)
    shifted = energy[..., lags + window] - energy[..., lags]
    difference = (energy[..., window : window + 1] + shifted - 2 * cross).clamp(min=0)[..., 1:]  # lags 1..
    lag = lags[1:].to(difference.dtype)
    normalised = difference * lag / difference.cumsum(-1).clamp(min=1e-9)  # d'(lag), lag = index + 1
    in_range = lag >= lag_min
    # voiced where d' dips below VOICING anywhere in range; the period is the first dip below THRESHOLD,
    # or, in a weakly periodic frame, the first one within MARGIN of the deepest (not the deepest
    # itself: a noisy voice's dip at twice the period can be as deep as the period's)
    lowest = normalised.masked_fill(~in_range, math.inf).amin(-1, keepdim=True)
    below = (normalised < (lowest + MARGIN).clamp(min=THRESHOLD)) & in_range
    dipped = lowest.squeeze(-1) < VOICING
    first = below.to(torch.uint8).argmax(-1, keepdim=True)
    rising = F.pad(normalised[..., 1:] >= normalised[..., :-1], (0, 1), value=True)
    index = torch.arange(normalised.shape[-1], device=waves.device)
    k = (rising & (index >= first)).to(torch.uint8).argmax(-1, keepdim=True)
    # a parabola through the dip and its neighbours refines the lag
    left = normalised.gather(-1, (k - 1).clamp(min=0))
    middle = normalised.gather(-1, k)
    right = normalised.gather(-1, (k + 1).clamp(max=normalised.shape[-1] - 1))
    curve = left - 2 * middle + right
    offset = torch.where(curve > 1e-9, 0.5 * (left - right) / curve.clamp(min=1e-9), torch.zeros_like(curve))
    period = (k + 1).to(offset.dtype) + offset.clamp(-1, 1)
    f0 = (sample_rate / period).squeeze(-1)
    # loudness per frame against the utterance's loudest
    frame_lens = wave_lens.to(waves.device) // hop + 1
    pad = make_pad_mask(frame_lens, frames.shape[1])
    level = 10 * torch.log10(frames.square().mean(-1).clamp(min=1e-12))
    loudest = level.masked_fill(pad, -math.inf).amax(-1, keepdim=True)
    voiced = dipped & (level > loudest - SILENCE_DB) & ~pad
    return torch.where(voiced, f0, torch.zeros_like(f0))


def pitch_features(
    f0: torch.Tensor, frame_lens: torch.Tensor, speaker: tuple[float, float] | None = None
) -> torch.Tensor:
    """(B, T) F0 in Hz (0 unvoiced), (B,) frames -> (B, T, 2): log-F0 as a z-score (0 where unvoiced),
    and the voicing flag. The z-score is in ``speaker``'s range (its voiced frames' log-F0 mean and
    deviation: log_f0_stats) where given, else in each utterance's own: a converter trained on its
    speaker's z-scores learns where that speaker's harmonics lie, and any input read in its own range
    arrives as a contour around that speaker's mean."""
    voiced = (f0 > 0) & ~make_pad_mask(frame_lens.to(f0.device), f0.shape[1])
    weight = voiced.to(f0.dtype)
    log_f0 = torch.log(f0.clamp(min=1.0)) * weight
    if speaker is not None:
        mean, deviation = (torch.tensor(value, dtype=f0.dtype, device=f0.device) for value in speaker)
    else:
        count = weight.sum(-1, keepdim=True).clamp(min=1)
        mean = log_f0.sum(-1, keepdim=True) / count
        deviation = (((log_f0 - mean) * weight).square().sum(-1, keepdim=True) / count).sqrt()
    z = (log_f0 - mean) / deviation.clamp(min=MIN_DEVIATION) * weight
    return torch.stack([z, weight], dim=-1)


def log_f0_stats(curves: list[torch.Tensor]) -> tuple[float, float]:
    """A speaker's (mean, deviation) of log-F0 over the voiced frames of its F0 curves (Hz, 0 unvoiced)."""
    voiced = torch.cat([curve[curve > 0] for curve in curves]).log()
    return float(voiced.mean()), float(voiced.std())


def pitch_of(
    waves: torch.Tensor,
    wave_lens: torch.Tensor,
    audio: AudioConfig,
    speaker: tuple[float, float] | None = None,
) -> torch.Tensor:
    """(B, samples) zero-padded waves, (B,) lengths -> (B, frames, 2) pitch features at the log-mel's
    frames (yin, then pitch_features, in ``speaker``'s range where given)."""
    f0 = yin(waves, wave_lens, audio)
    return pitch_features(f0, wave_lens.to(f0.device) // audio.hop_length + 1, speaker)
