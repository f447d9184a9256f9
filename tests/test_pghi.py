"""Griffin-Lim's phase from the magnitude's gradients (vc/vocoders/pghi.py, issue 98): the phase it
integrates is a real signal's (steady sinusoids' known frequencies, a gliding voice's STFT, also a long
one's), the spanning tree keeps to the loud coefficients, it starts Griffin-Lim closer, and the vocoder's
option runs batched, each item on its own frames."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vc.config import Config
from vc.errors import ConfigError
from vc.settings.audio import AudioConfig
from vc.settings.vocoders import GriffinLimConfig
from vc.vocoders.griffin_lim import GriffinLimVocoder, griffin_lim, spectral_convergence
from vc.vocoders.pghi import pghi_phase, pghi_start, spanning_tree_integral

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


def wrapped(phase: np.ndarray) -> np.ndarray:
    return np.angle(np.exp(1j * phase))


@pytest.mark.parametrize("seconds", [1.0, 30.0])
def test_the_integrated_phase_advances_as_the_signals_own(seconds):
    """On a known signal the frame-to-frame and bin-to-bin phase differences PGHI integrates match the
    true STFT's at the loud coefficients (the relation the method rests on), over a long input's last
    second as over a short one's."""
    spec = stft(harmonic_signal(seconds)).numpy()
    magnitude = np.abs(spec)
    phase = pghi_phase(magnitude, HOP, N_FFT, N_FFT, start=np.zeros(magnitude.shape))
    assert phase.shape == magnitude.shape
    last = slice(-SR // HOP, None)
    spec, magnitude, phase = spec[:, last], magnitude[:, last], phase[:, last]
    for here, there in ((np.s_[:, :-1], np.s_[:, 1:]), (np.s_[:-1], np.s_[1:])):  # frame to frame, bin to bin
        loud = np.minimum(magnitude[here], magnitude[there]) > magnitude.max() * 0.1
        true = np.angle(spec[there] * np.conj(spec[here]))
        error = np.abs(wrapped(phase[there] - phase[here] - true))[loud]
        assert loud.sum() > 100 and np.median(error) < 0.2  # radians; a random phase gives ~pi/2


def test_sinusoids_phases_advance_at_their_known_frequencies():
    """Three steady sinusoids off the bins' centres: in each one's main lobe the phase advances from
    frame to frame by 2 pi f hop / rate and steps by pi from bin to bin, as their STFT's does (frames
    centred, the phase referenced to each frame's start)."""
    t = np.arange(SR) / SR
    tones = {440.3: 0.5, 1234.5: 0.2, 3000.7: 0.05}
    wave = sum(amplitude * np.cos(2 * np.pi * f * t + f) for f, amplitude in tones.items())
    magnitude = stft(wave).abs().numpy()
    phase = pghi_phase(magnitude, HOP, N_FFT, N_FFT, start=np.zeros(magnitude.shape))
    frames = np.arange(4, magnitude.shape[1] - 5)  # away from the signal's ends
    for f in tones:
        centre = round(f * N_FFT / SR)
        lobe = np.arange(centre - 1, centre + 2)[:, None]
        advance = wrapped(phase[lobe, frames + 1] - phase[lobe, frames] - 2 * np.pi * f * HOP / SR)
        step = wrapped(phase[lobe[1:], frames] - phase[lobe[:-1], frames] - np.pi)
        assert np.abs(advance).max() < 0.05 and np.abs(step).max() < 0.05, f


@pytest.mark.parametrize("weights", ["distinct", "ties", "flat"])
def test_the_spanning_tree_gives_an_exact_potential_back(weights):
    """Increments that are a potential's own differences integrate back to it (less a constant) on
    any weights, ties and a flat grid included: the tree spans the grid without cycles."""
    rng = np.random.default_rng(0)
    potential = rng.normal(size=(9, 13)) * 10
    weight = {
        "distinct": rng.normal(size=potential.shape),
        "ties": rng.integers(0, 3, size=potential.shape).astype(float),
        "flat": np.zeros(potential.shape),
    }[weights]
    out = spanning_tree_integral(weight, np.diff(potential, axis=1), np.diff(potential, axis=0))
    assert np.allclose(out - potential, (out - potential)[0, 0], atol=1e-9)


def test_the_spanning_tree_keeps_to_the_heaviest_coefficients():
    """Where the increments are wrong on every edge that touches a light node, the heavy nodes (a
    connected cross) still get the exact potential: the tree joins them through heavy edges only."""
    rng = np.random.default_rng(1)
    potential = rng.normal(size=(12, 15)) * 10
    heavy = np.zeros(potential.shape, dtype=bool)
    heavy[4], heavy[:, 6] = True, True
    weight = np.where(heavy, 5.0, 0.0) + rng.uniform(0, 1, size=potential.shape)
    along_time, along_bins = np.diff(potential, axis=1), np.diff(potential, axis=0)
    light_time, light_bins = ~(heavy[:, :-1] & heavy[:, 1:]), ~(heavy[:-1] & heavy[1:])
    along_time[light_time] += rng.normal(size=light_time.sum())
    along_bins[light_bins] += rng.normal(size=light_bins.sum())
    out = spanning_tree_integral(weight, along_time, along_bins)
    difference = (out - potential)[heavy]
    assert np.allclose(difference, difference[0], atol=1e-9)


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


def test_a_padded_batch_gives_each_item_the_phase_it_has_alone():
    """pghi_start integrates each item on its own frames: the short item's phase beside a longer one
    (padded) is its phase alone wherever it is integrated (within the tolerance of its loudest)."""
    short = stft(harmonic_signal(0.5)).abs().float()
    long = stft(harmonic_signal(1.5, f0=210.0)).abs().float()
    batch = torch.zeros(2, *long.shape)
    batch[0, :, : short.shape[1]], batch[1] = short, long
    settings = dict(hop_length=HOP, n_fft=N_FFT, win_length=N_FFT)
    together = pghi_start(batch, torch.tensor([short.shape[1], long.shape[1]]), **settings)
    alone = pghi_start(short[None], torch.tensor([short.shape[1]]), **settings)
    assert together.shape == batch.shape and together.dtype == batch.dtype
    integrated = short > short.max() * 1e-4
    assert torch.equal(together[0, :, : short.shape[1]][integrated], alone[0][integrated])


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
    plain = GriffinLimVocoder(audio, GriffinLimConfig(iters=2, init="random"))
    random_start, _ = plain(logmel, lens, generator=torch.Generator().manual_seed(0))
    assert not torch.allclose(waves[1], random_start[1])
    with pytest.raises(ConfigError, match="vocoder.griffin_lim.init"):
        Config().with_overrides(["vocoder.griffin_lim.init=zero"])
