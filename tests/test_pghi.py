"""Griffin-Lim's phase from the magnitude's gradients (vc/vocoders/pghi.py, issue 98): the phase it
integrates is a real signal's, it starts Griffin-Lim closer, and the vocoder's option runs batched."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vc.config import Config
from vc.errors import ConfigError
from vc.settings.audio import AudioConfig
from vc.settings.vocoders import GriffinLimConfig
from vc.vocoders.griffin_lim import GriffinLimVocoder, griffin_lim, spectral_convergence
from vc.vocoders.pghi import pghi_phase, pghi_start

SR, N_FFT, HOP = 16000, 1024, 256


def stft(wave: np.ndarray) -> torch.Tensor:
    return torch.stft(
        torch.from_numpy(wave),
        n_fft=N_FFT,
        hop_length=HOP,
        window=torch.hann_window(N_FFT, dtype=torch.float64),
        center=True,
        pad_mode="constant",
        return_complex=True,
    )


def harmonic_signal(seconds: float = 1.0, f0: float = 140.0) -> np.ndarray:
    t = np.arange(int(SR * seconds)) / SR
    contour = f0 * (1 + 0.1 * np.sin(2 * np.pi * 1.5 * t))  # a gliding pitch, as in speech
    phase = 2 * np.pi * np.cumsum(contour) / SR
    return sum(np.cos(k * phase) / k for k in range(1, 12)) * 0.1


def test_the_integrated_phase_advances_as_the_signals_own():
    """On a known signal the frame-to-frame phase advance PGHI integrates matches the true STFT's
    at the loud coefficients (the relation the method rests on)."""
    spec = stft(harmonic_signal()).numpy()
    magnitude = np.abs(spec)
    phase = pghi_phase(magnitude, HOP, N_FFT, N_FFT, start=np.zeros(magnitude.shape))
    loud = magnitude[:, 1:] > magnitude.max() * 0.1
    true_advance = np.angle(spec[:, 1:] * np.conj(spec[:, :-1]))
    ours = np.angle(np.exp(1j * (phase[:, 1:] - phase[:, :-1])))
    error = np.abs(np.angle(np.exp(1j * (ours - true_advance))))[loud]
    assert loud.sum() > 100 and np.median(error) < 0.2  # radians; a random phase gives ~pi/2


def test_as_griffin_lims_start_it_reconstructs_closer_than_a_random_one():
    wave = harmonic_signal()
    magnitude = stft(wave).abs().float()[None]
    window = torch.hann_window(N_FFT)
    settings = dict(n_fft=N_FFT, hop_length=HOP, win_length=N_FFT, window=window)
    lens = torch.tensor([magnitude.shape[-1]])
    start = pghi_start(magnitude, lens, hop_length=HOP, n_fft=N_FFT, win_length=N_FFT)
    assert start.shape == magnitude.shape and start.dtype == magnitude.dtype
    generator = torch.Generator().manual_seed(0)
    errors = {}
    for name, init in (("random", "random"), ("pghi", start)):
        out = griffin_lim(magnitude, init=init, generator=generator, n_iter=8, length=len(wave), **settings)
        errors[name] = float(spectral_convergence(magnitude, out, **settings)[0])
    assert errors["pghi"] < 0.5 * errors["random"]


def test_the_vocoder_option_gives_each_item_of_a_batch_its_own_phase():
    """vocoder.griffin_lim.init=pghi through GriffinLimVocoder: in a padded batch each item's phase is
    integrated from its own frames (another neighbour leaves it as it was), also beside a long item
    (20 s); it differs from the random start; a wrong value is a config error."""
    config = Config().with_overrides(["vocoder.griffin_lim.init=pghi", "vocoder.griffin_lim.iters=2"])
    audio = AudioConfig()
    vocoder = GriffinLimVocoder(audio, config.vocoder.griffin_lim)
    rng = torch.Generator().manual_seed(1)
    long, short = 20 * SR // audio.hop_length, 40
    logmel = torch.randn(2, long, audio.n_mels, generator=rng) - 4.0
    lens = torch.tensor([long, short])
    waves, wave_lens = vocoder(logmel, lens, generator=torch.Generator().manual_seed(0))
    other = logmel.clone()
    other[0] += torch.randn(long, audio.n_mels, generator=rng)
    beside, _ = vocoder(other, lens, generator=torch.Generator().manual_seed(0))
    assert waves.shape == (2, long * audio.hop_length) and wave_lens.tolist() == [long * 256, short * 256]
    assert torch.isfinite(waves).all() and waves[1, short * audio.hop_length :].abs().max() == 0
    assert torch.equal(waves[1], beside[1]) and not torch.allclose(waves[0], beside[0])
    plain = GriffinLimVocoder(audio, GriffinLimConfig(iters=2))
    random_start, _ = plain(logmel, lens, generator=torch.Generator().manual_seed(0))
    assert not torch.allclose(waves[1], random_start[1])
    with pytest.raises(ConfigError, match="vocoder.griffin_lim.init"):
        Config().with_overrides(["vocoder.griffin_lim.init=zero"])
