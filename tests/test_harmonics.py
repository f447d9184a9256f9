"""Tests for vc.vocoders.harmonics: the pitch read from a magnitude, the smeared harmonics lifted, the depth."""

from __future__ import annotations

import math

import pytest
import torch

import vc.vocoders.griffin_lim
from vc.audio import LogMel
from vc.errors import ConfigError
from vc.settings.audio import AudioConfig
from vc.settings.vocoders import GriffinLimConfig
from vc.vocoders.griffin_lim import GriffinLimVocoder
from vc.vocoders.harmonics import (
    NATURAL_CONTRAST,
    VOICED,
    deepen_harmonics,
    frame_pitch,
    harmonic_contrast,
    lift_harmonics,
    spectral_envelope,
)

AUDIO = AudioConfig()  # the product's STFT: 16 kHz, a 46 ms window in 1024 points, 16 ms hops
SR, N_FFT = AUDIO.sample_rate, AUDIO.n_fft
BIN_HZ = SR / N_FFT


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def voice(pitch: torch.Tensor, seconds: float = 1.0) -> torch.Tensor:
    """A harmonic voice at ``pitch`` (Hz, a constant or a (samples,) contour), its harmonics falling 6 dB
    an octave up to 7.6 kHz."""
    samples = int(seconds * SR)
    contour = pitch.expand(samples) if pitch.dim() == 0 else pitch
    phase = 2 * math.pi * torch.cumsum(contour.double(), 0) / SR
    wave = torch.zeros(samples, dtype=torch.float64)
    for k in range(1, int(7600 // float(contour.min())) + 1):
        wave += torch.where(k * contour < 7600, torch.sin(k * phase) / k, 0.0)
    return (0.1 * wave).float()


def magnitude_of(wave: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return LogMel(AUDIO).magnitude(wave[None])  # (1, bins, frames)


def smeared(magnitude: torch.Tensor) -> torch.Tensor:
    """``magnitude`` with its harmonics above 1.5 kHz smeared away (its envelope there instead), as a
    converter's through the mel -> linear network."""
    log_magnitude = magnitude.clamp_min(1e-10).log()
    above = (torch.arange(magnitude.shape[1]) * BIN_HZ > 1500)[None, :, None]
    return torch.where(above, spectral_envelope(log_magnitude, SR), log_magnitude).exp()


def ripple_of(magnitude: torch.Tensor) -> torch.Tensor:
    log_magnitude = magnitude.clamp_min(1e-10).log()
    return log_magnitude - spectral_envelope(log_magnitude, SR)


def heights(magnitude: torch.Tensor, pitch: float, low: float, high: float) -> torch.Tensor:
    """The mean contrast of the harmonics of ``pitch`` between ``low`` and ``high`` Hz, per frame."""
    k = torch.arange(math.ceil(low / pitch), int(high // pitch) + 1, dtype=torch.float32)
    ripple = ripple_of(magnitude)
    frames = ripple.shape[-1]
    centres = (k * pitch)[None, :, None].expand(1, -1, frames)
    return harmonic_contrast(ripple, centres, torch.full((1, 1, frames), pitch), BIN_HZ).mean(1)[0]


@pytest.mark.parametrize("pitch", [85.0, 140.0, 210.0, 330.0])
def test_frame_pitch_reads_a_voices_pitch_from_its_magnitude(pitch):
    """Not its double or its half: a subharmonic's halfway points are harmonics, a double's skip half of
    them."""
    got, score = frame_pitch(ripple_of(magnitude_of(voice(torch.tensor(pitch)))), SR, N_FFT)
    inner = slice(3, -3)  # the edges' frames see the zero padding
    assert got.shape == score.shape == (1, magnitude_of(voice(torch.tensor(pitch))).shape[-1])
    assert torch.allclose(got[0, inner], torch.tensor(pitch), rtol=0.01)
    assert score[0, inner].min() > VOICED[1]


def test_frame_pitch_follows_a_gliding_pitch():
    contour = torch.linspace(120.0, 240.0, SR)  # one octave in a second
    got, _ = frame_pitch(ripple_of(magnitude_of(voice(contour))), SR, N_FFT)
    centres = torch.arange(got.shape[1]) * AUDIO.hop_length
    truth = contour[centres.clamp(max=SR - 1)]
    assert torch.allclose(got[0, 3:-3], truth[3:-3], rtol=0.02)


def test_lift_raises_smeared_harmonics_to_the_recordings_height_and_keeps_the_power():
    """A voice whose harmonics above 1.5 kHz were smeared away: lifted by 1, its harmonics at 2-2.5 kHz
    stand a recording's height above their midpoints again; below 1.2 kHz, where they stand higher
    already, nothing moves; each band's power stays within 1 dB. The voice itself, a recording's
    magnitude, is returned as it is."""
    recording = magnitude_of(voice(torch.tensor(180.0)))
    magnitude = smeared(recording)
    assert heights(magnitude, 180.0, 2000, 2500)[3:-3].max() < 0.1

    lifted = lift_harmonics(magnitude, 1.0, SR, N_FFT)

    wanted = torch.tensor(NATURAL_CONTRAST)
    at_2250 = float(wanted[(wanted[:, 0] - 2250).abs().argmin(), 1])
    assert torch.allclose(heights(lifted, 180.0, 2000, 2500)[3:-3], torch.tensor(at_2250), atol=0.3)
    freqs = torch.arange(magnitude.shape[1]) * BIN_HZ
    below = freqs < 1200
    torch.testing.assert_close(lifted[:, below, 3:-3], magnitude[:, below, 3:-3], rtol=1e-3, atol=0)
    band = (freqs > 1500) & (freqs < 4000)
    ratio_db = 10 * torch.log10((lifted[0, band] ** 2).sum(0) / (magnitude[0, band] ** 2).sum(0))
    assert ratio_db[3:-3].abs().max() < 1.0
    # a lift of 2 asks for twice the height
    assert heights(lift_harmonics(magnitude, 2.0, SR, N_FFT), 180.0, 2000, 2500)[3:-3].mean() > 1.6 * at_2250
    assert torch.equal(lift_harmonics(recording, 1.5, SR, N_FFT), recording)


def test_lift_leaves_noise_alone():
    """Unvoiced frames (white noise: no harmonics stand above their midpoints) are returned as they are."""
    noise = 0.05 * torch.randn(SR, generator=torch.Generator().manual_seed(0))
    magnitude = magnitude_of(noise)
    lifted = lift_harmonics(magnitude, 1.5, SR, N_FFT)
    unchanged = (lifted / magnitude.clamp_min(1e-10) - 1).abs().amax(1) < 1e-4
    assert unchanged.float().mean() > 0.9


def test_lift_of_a_padded_batch_equals_each_item_alone_and_runs_on_long_inputs():
    """Each frame's lift reads that frame and its neighbours' pitch: with the lengths, a shorter item's
    padding does not reach it; a minute of frames goes through at once."""
    first = smeared(magnitude_of(voice(torch.tensor(150.0), 1.0)))
    second = smeared(magnitude_of(voice(torch.tensor(230.0), 0.6)))
    frames = first.shape[-1]
    batch = torch.cat([first, torch.nn.functional.pad(second, (0, frames - second.shape[-1]), value=3.0)])
    lifted = lift_harmonics(batch, 1.5, SR, N_FFT, torch.tensor([frames, second.shape[-1]]))
    assert lifted.shape == batch.shape
    torch.testing.assert_close(lifted[:1], lift_harmonics(first, 1.5, SR, N_FFT))
    n = second.shape[-1]
    torch.testing.assert_close(lifted[1:, :, :n], lift_harmonics(second, 1.5, SR, N_FFT))
    assert not torch.equal(lifted[:1], first) and not torch.equal(lifted[1:, :, :n], second)
    minute = smeared(magnitude_of(voice(torch.linspace(100.0, 300.0, 60 * SR), 60.0)))
    long = lift_harmonics(minute, 1.5, SR, N_FFT)
    assert long.shape == minute.shape and torch.isfinite(long).all() and (long > 0).all()


def test_the_vocoder_lifts_by_its_setting(monkeypatch):
    """vocoder.griffin_lim.harmonic_lift: the default lifts (the adopted setting) with the items' lengths,
    0 leaves the magnitude as the network gave it, and a negative lift is refused."""
    assert GriffinLimConfig().harmonic_lift == 1.5
    calls = []

    def spy(magnitude, lift, sample_rate, n_fft, frame_lens=None):
        calls.append((lift, sample_rate, n_fft, frame_lens.tolist()))
        return magnitude

    monkeypatch.setattr(vc.vocoders.griffin_lim, "lift_harmonics", spy)
    logmel, lens = LogMel(AUDIO)(voice(torch.tensor(180.0), 0.5)[None])
    for lift in (0.0, 1.5):
        GriffinLimVocoder(AUDIO, GriffinLimConfig(iters=2, harmonic_lift=lift))(logmel, lens)
    assert calls == [(1.5, SR, N_FFT, lens.tolist())]
    with pytest.raises(ConfigError, match="harmonic_lift must be 0"):
        GriffinLimConfig(harmonic_lift=-0.5)


def test_deepen_harmonics_scales_the_ripple_about_the_envelope_and_keeps_the_envelope():
    """A log spectrum that is an envelope (quefrency 3 samples) plus a harmonic ripple (a 200 Hz pitch at
    16 kHz: quefrency 80): depth d scales the ripple by d and leaves the envelope; depth 1 is the input."""
    k = torch.arange(N_FFT // 2 + 1, dtype=torch.float64)
    envelope = 1.5 * torch.cos(2 * math.pi * k * 3 / N_FFT) - 2.0
    ripple = 0.4 * torch.cos(2 * math.pi * k * 80 / N_FFT)
    magnitude = (envelope + ripple).exp()[None, :, None].repeat(2, 1, 3)  # (B, bins, frames)
    for depth in (0.0, 1.6):
        deepened = deepen_harmonics(magnitude, depth, SR).log()
        torch.testing.assert_close(deepened, (envelope + depth * ripple)[None, :, None].expand_as(deepened))
    torch.testing.assert_close(deepen_harmonics(magnitude, 1.0, SR), magnitude)
    assert GriffinLimConfig().harmonic_depth == 1.0  # the vocoder leaves the depth alone by default
