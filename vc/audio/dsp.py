"""The two librosa routines every conversion runs, in plain numpy: mel filterbank and silence trim.

Why not librosa: `vc convert` is a new process per call, and importing
``librosa.filters`` and ``librosa.effects`` pulls in scipy.signal, scipy.stats and
numba-compiled kernels, about 2 s of a 3 s-input conversion's cold start on 2 cores.
Both functions follow librosa 0.11's definitions (Slaney's Auditory Toolbox mel
scale and area normalisation; RMS-energy trimming against the loudest frame), and
tests/test_dsp.py checks them against librosa to float precision, so features and
checkpoints stay interchangeable with those computed by librosa.
"""

from __future__ import annotations

import numpy as np

# Slaney's mel scale: linear (200/3 Hz per mel) below 1 kHz, logarithmic above.
_HZ_PER_MEL = 200.0 / 3.0
_LOG_START_HZ = 1000.0
_LOG_START_MEL = _LOG_START_HZ / _HZ_PER_MEL
_LOG_STEP = np.log(6.4) / 27.0


def hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Frequencies in Hz -> Slaney mels (float64)."""
    hz = np.asarray(hz, dtype=np.float64)
    mel = hz / _HZ_PER_MEL
    upper = hz >= _LOG_START_HZ
    return np.where(upper, _LOG_START_MEL + np.log(np.maximum(hz, 1e-10) / _LOG_START_HZ) / _LOG_STEP, mel)


def mel_to_hz(mel: np.ndarray) -> np.ndarray:
    """Slaney mels -> frequencies in Hz (float64); the inverse of hz_to_mel."""
    mel = np.asarray(mel, dtype=np.float64)
    upper = mel >= _LOG_START_MEL
    return np.where(upper, _LOG_START_HZ * np.exp(_LOG_STEP * (mel - _LOG_START_MEL)), _HZ_PER_MEL * mel)


def mel_frequencies(count: int, *, fmin: float, fmax: float) -> np.ndarray:
    """``count`` frequencies [Hz] equally spaced on the Slaney mel scale from fmin to fmax."""
    return mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), count))


def mel_filterbank(sample_rate: int, *, n_fft: int, n_mels: int, fmin: float, fmax: float) -> np.ndarray:
    """(n_mels, n_fft // 2 + 1) float32 triangles on the Slaney scale, each of unit area in Hz.

    Equal to ``librosa.filters.mel(..., htk=False, norm="slaney")``.
    """
    bins_hz = np.fft.rfftfreq(n_fft, d=1.0 / sample_rate)
    edges = mel_frequencies(n_mels + 2, fmin=fmin, fmax=fmax)
    widths = np.diff(edges)
    ramps = edges[:, None] - bins_hz[None, :]
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    # Rounded to float32 before the area normalisation, as librosa does, so the values match exactly.
    weights = np.maximum(0.0, np.minimum(rising, falling)).astype(np.float32)
    return (weights * (2.0 / (edges[2:] - edges[:-2]))[:, None]).astype(np.float32)


def frame_levels_db(wave: np.ndarray, *, frame_length: int, hop_length: int) -> np.ndarray:
    """Each centred frame's RMS level in dB relative to the loudest frame's (0 dB), as trim_silence
    and librosa.effects.trim measure it: frame k starts at sample k * hop_length - frame_length // 2."""
    padded = np.pad(wave, frame_length // 2)
    frames = np.lib.stride_tricks.sliding_window_view(padded, frame_length)[::hop_length]
    # RMS, then its square, as librosa's rms -> amplitude_to_db path rounds it.
    power = np.square(np.sqrt(np.mean(np.abs(frames) ** 2, axis=-1)))
    floor = np.float32(1e-10)
    return 10.0 * np.log10(np.maximum(power, floor)) - 10.0 * np.log10(np.maximum(power.max(), floor))


def speech_bounds(wave: np.ndarray, *, top_db: float, frame_length: int, hop_length: int) -> tuple[int, int]:
    """[start, end) in samples of what trim_silence keeps: from the first to the last frame louder
    than the loudest frame's RMS minus ``top_db``; the whole of an all-zero wave (every frame is as
    loud as the loudest), (0, 0) for an empty one."""
    loud = np.flatnonzero(frame_levels_db(wave, frame_length=frame_length, hop_length=hop_length) > -top_db)
    if loud.size == 0:
        return 0, 0
    return int(loud[0]) * hop_length, min(wave.size, (int(loud[-1]) + 1) * hop_length)


def trim_silence(wave: np.ndarray, *, top_db: float, frame_length: int, hop_length: int) -> np.ndarray:
    """Cut leading and trailing frames quieter than the loudest frame's RMS minus ``top_db``.

    Equal to ``librosa.effects.trim(wave, top_db=..., frame_length=..., hop_length=...)[0]``:
    centred frames (zero padding of frame_length // 2), RMS level in dB with a
    1e-5 amplitude floor, compared in float32 as librosa does. The loudest frame is
    always kept, so only an all-zero wave (returned whole) has no frame to cut to.
    """
    start, end = speech_bounds(wave, top_db=top_db, frame_length=frame_length, hop_length=hop_length)
    return wave[start:end]


def with_silence(wave: np.ndarray, lead: int, tail: int) -> np.ndarray:
    """``wave`` with ``lead`` zero samples before it and ``tail`` after it."""
    return np.concatenate([np.zeros(lead, wave.dtype), wave, np.zeros(tail, wave.dtype)])
