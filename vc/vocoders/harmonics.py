"""The harmonics of a magnitude before Griffin-Lim: deepened about the envelope, or lifted where a
converter smeared them.

A converter's mels are smoother than recorded ones. Through the mel -> linear network the harmonics of the
main job's model stand 2.5 nepers above the points halfway between them below 1.5 kHz, 0.4 from 1.5 to
3 kHz and 0.1 from 3 to 5 kHz in its clearly voiced frames; slt's own recordings through the same network
stand 3.3, 1.4 and 0.33 (their STFT 3.3, 1.4 and 0.38). HiFi-GAN draws the missing harmonics; Griffin-Lim
keeps the smear. ``lift_harmonics`` reads each frame's pitch from its own lowest harmonics, where they
survive, and lifts every harmonic that stands lower than ``lift`` times a recording's height at its
frequency (NATURAL_CONTRAST) to it (docs/ablation.md, "Harmonics lifted before Griffin-Lim").
``deepen_harmonics`` scales whatever ripple there is about the envelope, the pitch unread.
"""

from __future__ import annotations

import math

import torch

from vc.vocoders.magnitude import MAGNITUDE_FLOOR

# The pitches a frame may have [Hz].
PITCH_RANGE = (60.0, 400.0)
# The band the pitch is read from [Hz]: where a converter's harmonics survive.
PITCH_BAND = 1500.0
# How far a frame's harmonics below PITCH_BAND stand above their midpoints [nepers] to count as voiced:
# a ramp from the first to the second. slt through the network: voiced frames' median 3.3, 10th
# percentile 0.75; unvoiced frames' median 0.59, 90th percentile 0.93.
VOICED = (1.0, 2.0)
# How far a recording's harmonics stand above their midpoints [nepers] at each frequency [Hz]: slt's
# recordings through the mel -> linear network, the medians of its voiced frames in the bands 0-1.5,
# 1.5-3, 3-5 and 5-7.6 kHz at their centres; linear between, flat beyond.
NATURAL_CONTRAST = ((750.0, 3.3), (2250.0, 1.4), (4000.0, 0.35), (6300.0, 0.0))
# A harmonic's height is compared averaged with this many neighbours on each side (one harmonic alone
# reads the noise).
NEIGHBOURS = 2
# Which items are smeared: the median over an item's clearly voiced frames of how far its harmonics
# between 1.5 and 3 kHz stand above their midpoints [nepers], a ramp from the first (lifted fully) to
# the second (left as it is). Per utterance, slt's recordings through the network read 1.13-1.97 (the
# 100 eval utterances), the main job's model 0.22-0.68: a recording's magnitude is not lifted.
SMEARED = (0.8, 1.1)
SMEAR_BAND = (1500.0, 3000.0)


def spectral_envelope(log_magnitude: torch.Tensor, sample_rate: int) -> torch.Tensor:
    """Each frame's log magnitude liftered at 2 ms of quefrency: above any voice's pitch period under
    500 Hz, so the harmonics' ripple is left out.

    Shapes: (B, n_fft // 2 + 1, frames) -> the same."""
    bins = log_magnitude.shape[1]
    cepstrum = torch.fft.irfft(log_magnitude, dim=1)  # (B, n_fft, frames), even in quefrency
    cut = max(1, round(0.002 * sample_rate))
    lifter = torch.zeros(cepstrum.shape[1], dtype=cepstrum.dtype, device=cepstrum.device)
    lifter[:cut] = 1.0
    lifter[lifter.shape[0] - cut + 1 :] = 1.0  # the mirrored quefrencies 1 .. cut - 1
    return torch.fft.rfft(cepstrum * lifter[:, None], dim=1).real[:, :bins]


def deepen_harmonics(magnitude: torch.Tensor, depth: float, sample_rate: int) -> torch.Tensor:
    """Each frame's log magnitude about its envelope (``spectral_envelope``) scaled by ``depth``; the
    envelope is kept.

    Shapes: magnitude (B, n_fft // 2 + 1, frames) -> the same."""
    log_magnitude = magnitude.clamp_min(MAGNITUDE_FLOOR).log()  # the floor Magnitude itself keeps
    envelope = spectral_envelope(log_magnitude, sample_rate)
    return (envelope + depth * (log_magnitude - envelope)).exp()


def _read(ripple: torch.Tensor, freqs: torch.Tensor, bin_hz: float) -> torch.Tensor:
    """``ripple`` (B, bins, T) read at ``freqs`` (B, M, T) [Hz], linear between bins -> (B, M, T)."""
    position = (freqs / bin_hz).clamp(0, ripple.shape[1] - 1.001)
    low = position.floor().long()
    weight = position - low
    return ripple.gather(1, low) * (1 - weight) + ripple.gather(1, low + 1) * weight


def _peaks_and_midpoints(ripple: torch.Tensor, centres: torch.Tensor, pitch: torch.Tensor, bin_hz: float):
    """``ripple`` (B, bins, T) at ``centres`` (B, M, T) [Hz], and the mean of its points half a ``pitch``
    (B, 1 or M, T) [Hz] either side -> (B, M, T), (B, M, T)."""
    half = 0.5 * pitch
    midpoints = 0.5 * (_read(ripple, centres - half, bin_hz) + _read(ripple, centres + half, bin_hz))
    return _read(ripple, centres, bin_hz), midpoints


def harmonic_contrast(ripple: torch.Tensor, centres: torch.Tensor, pitch: torch.Tensor, bin_hz: float):
    """How far ``ripple`` (B, bins, T) stands at ``centres`` (B, M, T) [Hz] above the mean of the points
    half a ``pitch`` (B, 1, T) [Hz] either side -> (B, M, T) [nepers]."""
    peaks, midpoints = _peaks_and_midpoints(ripple, centres, pitch, bin_hz)
    return peaks - midpoints


def _harmonic_means(ripple: torch.Tensor, candidates: torch.Tensor, band: float, bin_hz: float):
    """The harmonics below ``band`` of each candidate pitch (B, C, T) [Hz]: the mean of ``ripple`` at them,
    and their mean contrast (``harmonic_contrast``) -> (B, C, T), (B, C, T)."""
    batch, count, frames = candidates.shape
    most = max(1, int(band // PITCH_RANGE[0]))
    k = torch.arange(1, most + 1, dtype=ripple.dtype, device=ripple.device)[None, None, :, None]
    centres = candidates[:, :, None, :] * k  # (B, C, K, T)
    pitch = candidates[:, :, None, :].expand_as(centres).reshape(batch, -1, frames)
    peaks, midpoints = _peaks_and_midpoints(ripple, centres.reshape(batch, -1, frames), pitch, bin_hz)
    contrast = peaks - midpoints
    weights = (centres <= band).to(ripple.dtype)
    counts = weights.sum(2).clamp_min(1)

    def mean(values):
        return (values.reshape(centres.shape) * weights).sum(2) / counts

    return mean(peaks), mean(contrast)


def frame_pitch(ripple: torch.Tensor, sample_rate: int, n_fft: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each frame's pitch [Hz] and how far its harmonics below PITCH_BAND stand above the points halfway
    between them [nepers]. The octave: of candidates 3 % apart, the one whose harmonics below half the
    band stand highest above their midpoints (a subharmonic's midpoints are harmonics, a double's
    harmonics skip half of them); then, 0.5 % apart about it, the one whose harmonics below the band
    stand highest (the midpoints' notches would pull it a little).

    Shapes: ripple (B, n_fft // 2 + 1, T), the log magnitude less its envelope -> (B, T), (B, T)."""
    bin_hz = sample_rate / n_fft
    batch, _, frames = ripple.shape
    low, high = PITCH_RANGE
    coarse = torch.exp(torch.arange(math.log(low), math.log(high), 0.03, dtype=torch.float64)).to(ripple)
    _, contrast = _harmonic_means(
        ripple, coarse[None, :, None].expand(batch, -1, frames), PITCH_BAND / 2, bin_hz
    )
    best = coarse[contrast.argmax(1)]  # (B, T)
    steps = torch.exp(torch.arange(-6, 7, dtype=ripple.dtype, device=ripple.device) * 0.005)
    fine = (best[:, None, :] * steps[None, :, None]).clamp(low, high)  # (B, 13, T)
    peaks, contrast = _harmonic_means(ripple, fine, PITCH_BAND, bin_hz)
    index = peaks.argmax(1, keepdim=True)
    return fine.gather(1, index)[:, 0], contrast.gather(1, index)[:, 0]


def _interpolate(x: torch.Tensor, points: tuple[tuple[float, float], ...]) -> torch.Tensor:
    """Piecewise linear through ``points`` (x, y), flat beyond the ends (numpy.interp for tensors)."""
    xp, fp = (torch.tensor(column, dtype=x.dtype, device=x.device) for column in zip(*points, strict=True))
    index = torch.searchsorted(xp, x.contiguous()).clamp(1, len(xp) - 1)
    x0, x1, f0, f1 = xp[index - 1], xp[index], fp[index - 1], fp[index]
    return f0 + ((x - x0) / (x1 - x0)).clamp(0, 1) * (f1 - f0)


def lift_harmonics(
    magnitude: torch.Tensor,
    lift: float,
    sample_rate: int,
    n_fft: int,
    frame_lens: torch.Tensor | None = None,
) -> torch.Tensor:
    """Each voiced frame's harmonics lifted where they stand lower than ``lift`` x a recording's height at
    their frequency (NATURAL_CONTRAST), by a raised cosine about each in the log magnitude (its mean
    power kept); the pitch read from the frame's own lowest harmonics (``frame_pitch``, a median over 3
    frames), the lift scaled by how voiced the frame is (VOICED). Unvoiced frames are left as they are,
    and so is an item whose harmonics are not smeared (SMEARED): a recording's. With ``frame_lens``, a
    padded item is lifted as it would be alone.

    Shapes: magnitude (B, n_fft // 2 + 1, frames), frame_lens (B,) -> the same as magnitude."""
    bin_hz = sample_rate / n_fft
    log_magnitude = magnitude.clamp_min(MAGNITUDE_FLOOR).log()
    ripple = log_magnitude - spectral_envelope(log_magnitude, sample_rate)
    pitch, score = frame_pitch(ripple, sample_rate, n_fft)
    if frame_lens is not None:  # past its end an item's pitch is its last frame's, as alone
        last = (frame_lens.to(pitch.device) - 1).clamp(min=0)[:, None]
        inside = torch.arange(pitch.shape[1], device=pitch.device)[None] <= last
        pitch = torch.where(inside, pitch, pitch.gather(1, last))
    padded = torch.nn.functional.pad(pitch.log()[:, None], (1, 1), mode="replicate")[:, 0]
    pitch = padded.unfold(-1, 3, 1).median(-1).values.exp()  # one frame's octave slip does not move it
    voiced = ((score - VOICED[0]) / (VOICED[1] - VOICED[0])).clamp(0, 1)  # (B, T)
    count = int((sample_rate / 2) // PITCH_RANGE[0])  # harmonics up to Nyquist at the lowest pitch
    k = torch.arange(1, count + 1, dtype=ripple.dtype, device=ripple.device)[None, :, None]
    centres = k * pitch[:, None, :]  # (B, K, T)
    contrast = harmonic_contrast(ripple, centres, pitch[:, None, :], bin_hz)
    smeared = _smeared(contrast, centres, score, frame_lens)
    if not bool((smeared > 0).any()):  # recordings only: nothing to lift
        return magnitude
    batch, _, frames = contrast.shape
    smooth = (
        torch.nn.functional.avg_pool1d(
            contrast.transpose(1, 2).reshape(-1, 1, count),
            2 * NEIGHBOURS + 1,
            stride=1,
            padding=NEIGHBOURS,
            count_include_pad=False,
        )
        .reshape(batch, frames, count)
        .transpose(1, 2)
    )
    wanted = lift * _interpolate(centres, NATURAL_CONTRAST)
    raise_by = (wanted - smooth).clamp_min(0) * voiced[:, None, :] * (centres < sample_rate / 2)
    raise_by = raise_by * smeared[:, None, None]
    # Onto the bins: each bin's place in harmonics, the lift linear between the two harmonics beside it
    # (none below the first).
    freqs = torch.arange(magnitude.shape[1], dtype=ripple.dtype, device=ripple.device) * bin_hz
    place = freqs[None, :, None] / pitch[:, None, :]  # (B, bins, T)
    raise_by = torch.nn.functional.pad(raise_by, (0, 0, 1, 1))  # harmonic 0 and one past the last
    index = place.floor().long().clamp(0, count)
    weight = place - place.floor()
    amount = raise_by.gather(1, index) * (1 - weight) + raise_by.gather(1, index + 1) * weight
    # +amount / 2 at each harmonic, -amount / 2 halfway; log I0(amount / 2), the mean of exp(cos), keeps
    # the power.
    half = 0.5 * amount
    lifted = (log_magnitude + half * torch.cos(2 * math.pi * place) - torch.special.i0(half).log()).exp()
    return torch.where(smeared[:, None, None] > 0, lifted, magnitude)  # the others exactly as they were


def _smeared(contrast, centres, score, frame_lens) -> torch.Tensor:
    """How smeared each item's harmonics are, 0 (a recording's) to 1 (SMEARED): the median over its
    clearly voiced frames (VOICED[1]) of its harmonics' mean contrast in SMEAR_BAND; 0 with no such
    frame. Shapes: contrast, centres (B, K, T); score (B, T); frame_lens (B,) or None -> (B,)."""
    band = ((centres >= SMEAR_BAND[0]) & (centres <= SMEAR_BAND[1])).to(contrast.dtype)
    height = (contrast * band).sum(1) / band.sum(1).clamp_min(1)  # (B, T)
    clear = score > VOICED[1]
    if frame_lens is not None:
        clear &= (
            torch.arange(score.shape[1], device=score.device)[None] < frame_lens.to(score.device)[:, None]
        )
    median = torch.where(clear, height, torch.nan).nanmedian(1).values
    ramp = ((SMEARED[1] - median) / (SMEARED[1] - SMEARED[0])).clamp(0, 1)
    return torch.nan_to_num(ramp, nan=0.0)
