"""The harmonic-plus-noise vocoder (vc/audio/harmonic.py): harmonics where the F0 says, at the level and
in the envelope of the magnitude, noise where unvoiced; and the F0 cleaned before it drives them."""

from __future__ import annotations

import pytest
import torch

from vc.audio.harmonic import clean_f0, harmonic_noise
from vc.config import AudioConfig

AUDIO = AudioConfig()
BINS = AUDIO.n_fft // 2 + 1
HZ = torch.arange(BINS) * AUDIO.sample_rate / AUDIO.n_fft


def spectrum(wave: torch.Tensor, n_fft: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
    """(Hz, mean power) of a long-window STFT: fine enough to tell harmonics 100 Hz apart."""
    power = torch.stft(wave, n_fft, window=torch.hann_window(n_fft), return_complex=True).abs().square()
    return torch.arange(n_fft // 2 + 1) * AUDIO.sample_rate / n_fft, power.mean(-1)


@pytest.mark.parametrize("f0", [110.0, 230.0])
def test_voiced_frames_are_harmonics_of_the_f0(f0):
    frames = 120
    wave = harmonic_noise(torch.ones(1, BINS, frames), torch.full((1, frames), f0), torch.tensor([frames]), AUDIO)
    hz, power = spectrum(wave[0, 10 * AUDIO.hop_length : 110 * AUDIO.hop_length])
    low = hz < 2000
    peaks = hz[low][power[low].topk(5).indices].sort().values
    harmonics = torch.arange(1, int(2000 / f0) + 1) * f0
    for peak in peaks:  # each of the strongest bins lies on a harmonic (not half or twice the F0)
        assert (harmonics - peak).abs().min() < 2 * AUDIO.sample_rate / 4096
    between = power[low][((hz[low] / f0) % 1 - 0.5).abs() < 0.1].mean()
    assert power[low].topk(5).values.min() > 1000 * between  # clean harmonics, no noise floor below 4 kHz


def test_the_output_follows_the_magnitudes_level_and_envelope():
    """Band by band, the output's power is the magnitude's (smoothed over one F0): the envelope of a
    prediction, wherever the harmonics fall."""
    frames = 100
    magnitude = torch.where(HZ < 2000, 3.0, 0.03)[None, :, None].expand(1, BINS, frames)
    wave = harmonic_noise(magnitude, torch.full((1, frames), 150.0), torch.tensor([frames]), AUDIO)
    out = torch.stft(
        wave[0], AUDIO.n_fft, AUDIO.hop_length, window=torch.hann_window(AUDIO.n_fft), return_complex=True
    ).abs()[:, 10:90]
    for band, level in (((300, 1800), 3.0), ((2500, 3500), 0.03)):
        inside = (HZ > band[0]) & (HZ < band[1])
        ratio = out[inside].square().mean().sqrt() / level
        assert 0.7 < ratio < 1.4, (band, ratio)


def test_unvoiced_frames_are_noise():
    frames = 100
    wave = harmonic_noise(torch.ones(1, BINS, frames), torch.zeros(1, frames), torch.tensor([frames]), AUDIO)
    _, power = spectrum(wave[0, 10 * AUDIO.hop_length : 90 * AUDIO.hop_length])
    flatness = power[20:1800].log().mean().exp() / power[20:1800].mean()
    assert flatness > 0.5  # white: no harmonic comb (a voiced frame's is far below 0.1)


def test_lengths_padding_and_seed():
    frames = torch.tensor([80, 50])
    magnitude, f0 = torch.rand(2, BINS, 80), torch.full((2, 80), 180.0)
    first = harmonic_noise(magnitude, f0, frames, AUDIO, torch.Generator().manual_seed(3))
    again = harmonic_noise(magnitude, f0, frames, AUDIO, torch.Generator().manual_seed(3))
    assert first.shape == (2, 80 * AUDIO.hop_length) and torch.equal(first, again)
    assert first[1, 50 * AUDIO.hop_length :].abs().max() == 0 and first[1, : 50 * AUDIO.hop_length].abs().max() > 0
    silent = harmonic_noise(torch.zeros(1, BINS, 30), torch.zeros(1, 30), torch.tensor([30]), AUDIO)
    assert torch.isfinite(silent).all() and silent.abs().max() < 1e-6
    with pytest.raises(ValueError, match="magnitude"):
        harmonic_noise(torch.ones(1, 10, 30), torch.zeros(1, 30), torch.tensor([30]), AUDIO)


def test_clean_f0_closes_dropouts_drops_blips_and_smooths_octave_jumps():
    f0 = torch.zeros(1, 40)
    f0[0, 5:30] = 200.0
    f0[0, 12:14] = 0.0  # a two-frame dropout inside voicing
    f0[0, 20] = 400.0  # one frame an octave up
    f0[0, 35] = 180.0  # a one-frame blip of voicing
    cleaned = clean_f0(f0, torch.tensor([40]))
    torch.testing.assert_close(cleaned[0, 5:30], torch.full((25,), 200.0))
    assert (cleaned[0, :5] == 0).all() and (cleaned[0, 30:] == 0).all()
    padded = clean_f0(torch.full((1, 40), 200.0), torch.tensor([25]))
    assert (padded[0, 25:] == 0).all()
    torch.testing.assert_close(padded[0, :25], torch.full((25,), 200.0))
