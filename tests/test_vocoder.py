"""Tests for vc.vocoders.griffin_lim and .magnitude: fast Griffin-Lim against librosa, padded batches, the mel vocoder."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import librosa
import numpy as np
import pytest
import soundfile as sf
import torch

import vc.vocoders.griffin_lim
from vc.audio import LogMel, mel_basis
from vc.errors import ConfigError
from vc.settings.audio import AudioConfig
from vc.settings.vocoders import GriffinLimConfig
from vc.vocoders.griffin_lim import GriffinLimVocoder, griffin_lim, spectral_convergence
from vc.vocoders.magnitude import MAGNITUDE_FLOOR, mel_to_linear

ARCTIC = Path(__file__).resolve().parents[2] / "shared" / "data" / "cmu_arctic"
UTTERANCE = ARCTIC / "cmu_us_slt_arctic" / "wav" / "arctic_a0001.flac"
SEED = 0
# Same algorithm, same start: only float rounding may separate us from librosa.
TOLERANCE = 1e-3
# A small STFT keeps the synthetic tests in milliseconds.
SMALL = dict(sample_rate=8000, n_fft=256, win_length=256, hop_length=64, n_mels=40, fmin=0.0, fmax=4000.0)


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def stft_args(config: AudioConfig) -> dict:
    return dict(n_fft=config.n_fft, hop_length=config.hop_length, win_length=config.win_length)


def tone(samples: int, sample_rate: int = 8000, f0: float = 140.0) -> torch.Tensor:
    """Harmonic tone with vibrato: voiced-speech-like, deterministic."""
    t = torch.arange(samples, dtype=torch.float32) / sample_rate
    phase = 2 * math.pi * (f0 * t + 2.0 * torch.sin(2 * math.pi * 5 * t))
    return 0.1 * sum(torch.sin(k * phase) / k for k in range(1, 12))


@pytest.fixture(scope="module")
def real_magnitude() -> torch.Tensor:
    """(n_fft // 2 + 1, frames) magnitude of a real ARCTIC utterance, LogMel's STFT."""
    if not ARCTIC.is_dir():
        pytest.skip(f"CMU ARCTIC not found at {ARCTIC}")
    wave, _ = sf.read(str(UTTERANCE), dtype="float32")
    with torch.no_grad():
        return LogMel(AudioConfig()).magnitude(torch.from_numpy(wave)[None])[0]


def librosa_seed(seed: int) -> dict:
    """librosa.griffinlim's seed keyword: `rng` from librosa 1.0 (`random_state` warns there), else
    `random_state`; a RandomState either way, so the phases are the same draws in both."""
    name = "rng" if "rng" in inspect.signature(librosa.griffinlim).parameters else "random_state"
    return {name: np.random.RandomState(seed)}


def librosa_and_ours(magnitude: torch.Tensor, init: str, **ours) -> tuple[float, float]:
    """Spectral convergence of librosa.griffinlim and of griffin_lim from the same initial phase.

    For init="random" our phases are exactly the ones librosa draws from
    RandomState(SEED), so the two runs differ only in float rounding.
    """
    config = AudioConfig()
    window = torch.hann_window(config.win_length)
    spec = magnitude.numpy()
    expected = librosa.griffinlim(
        spec,
        n_iter=32,
        momentum=0.99,
        init="random" if init == "random" else None,
        **librosa_seed(SEED),
        window="hann",
        center=True,
        pad_mode="constant",
        **stft_args(config),
    )
    if init == "random":
        phase = 2 * np.pi * np.random.RandomState(SEED).random_sample(spec.shape)
        start = torch.from_numpy(phase).float()
    else:
        start = "zero"
    got = griffin_lim(magnitude, **stft_args(config), window=window, init=start, **{"n_iter": 32, **ours})

    def score(wave):
        return spectral_convergence(
            magnitude, torch.as_tensor(wave), **stft_args(config), window=window
        ).item()

    return score(expected), score(got)


@pytest.mark.parametrize("init", ["random", "zero"])
def test_as_good_as_librosa_on_real_speech(real_magnitude, init):
    expected, got = librosa_and_ours(real_magnitude, init, momentum=0.99)
    assert expected < 0.1, "librosa did not converge: the comparison would be meaningless"
    assert got <= expected * (1 + TOLERANCE), f"ours {got:.5f} vs librosa {expected:.5f}"


@pytest.mark.parametrize("weaker", [dict(momentum=0.0), dict(momentum=0.99, n_iter=16)])
def test_librosa_comparison_can_fail(real_magnitude, weaker):
    # Plain Griffin-Lim, or half the iterations, must lose: the tolerance above
    # is tight enough to catch a lost momentum term or a skipped iteration.
    expected, got = librosa_and_ours(real_magnitude, "random", **weaker)
    assert got > expected * (1 + TOLERANCE)


@pytest.mark.parametrize("win_length,hop_length", [(64, 16), (48, 16), (64, 32), (64, 24)])
@pytest.mark.parametrize("extra_frame", [False, True])
@pytest.mark.parametrize("item_by_item", [True, False], ids=["cpu_item_by_item", "batched"])
def test_padded_batch_equals_each_item_alone(win_length, hop_length, extra_frame, item_by_item, monkeypatch):
    # The batched path is the one CUDA takes; on a CPU a batch runs item by item.
    monkeypatch.setattr(vc.vocoders.griffin_lim, "_ITEM_BY_ITEM_ON_CPU", item_by_item)
    n_fft, lens = 64, [20, 13]
    kwargs = dict(
        n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=torch.hann_window(win_length)
    )
    gen = torch.Generator().manual_seed(SEED)
    mags = [torch.rand(n_fft // 2 + 1, n, generator=gen) + 0.1 for n in lens]
    phases = [2 * math.pi * torch.rand(n_fft // 2 + 1, n, generator=gen) for n in lens]
    frames = max(lens)
    # Garbage in the padding must not leak into the shorter item.
    magnitude = torch.stack([torch.nn.functional.pad(m, (0, frames - m.shape[1]), value=5.0) for m in mags])
    phase = torch.stack([torch.nn.functional.pad(p, (0, frames - p.shape[1])) for p in phases])

    def length(n):
        return n * hop_length if extra_frame else None

    batch = griffin_lim(magnitude, **kwargs, init=phase, frame_lens=torch.tensor(lens), length=length(frames))
    assert batch.shape == (2, frames * hop_length if extra_frame else (frames - 1) * hop_length)
    for item, n in enumerate(lens):
        alone = griffin_lim(mags[item], **kwargs, init=phases[item], length=length(n))
        torch.testing.assert_close(batch[item, : alone.shape[0]], alone, atol=1e-5, rtol=1e-4)
        assert torch.all(batch[item, alone.shape[0] :] == 0)


def reference_griffin_lim(magnitude, phase, n_iter, momentum, **kwargs):
    """The plain form of fast Griffin-Lim (librosa's), on torch.stft / torch.istft."""
    args = dict(**kwargs, center=True)
    angles, previous = torch.polar(magnitude, phase), None
    for _ in range(n_iter):
        rebuilt = torch.stft(torch.istft(angles, **args), **args, pad_mode="constant", return_complex=True)
        update = rebuilt if previous is None else rebuilt - momentum / (1 + momentum) * previous
        angles, previous = magnitude * torch.sgn(update), rebuilt
    return torch.istft(angles, **args)


@pytest.mark.parametrize("n_fft,win_length,hop_length", [(64, 64, 16), (64, 48, 16), (64, 64, 24)])
@pytest.mark.parametrize("momentum", [0.0, 0.99])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_same_math_as_torch_stft_and_istft(n_fft, win_length, hop_length, momentum, dtype):
    # The signal-domain iterations are fast Griffin-Lim rearranged, not a new algorithm.
    kwargs = dict(n_fft=n_fft, hop_length=hop_length, win_length=win_length)
    window = torch.hann_window(win_length, dtype=dtype)
    gen = torch.Generator().manual_seed(SEED)
    magnitude = torch.rand(n_fft // 2 + 1, 12, generator=gen, dtype=dtype) + 0.1
    phase = 2 * math.pi * torch.rand(magnitude.shape, generator=gen, dtype=dtype)
    for n_iter in (0, 1, 4):
        got = griffin_lim(magnitude, **kwargs, window=window, n_iter=n_iter, momentum=momentum, init=phase)
        expected = reference_griffin_lim(magnitude, phase, n_iter, momentum, **kwargs, window=window)
        assert got.dtype == dtype
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


def test_random_phase_is_seeded_and_shapes_follow_the_input():
    kwargs = dict(n_fft=64, hop_length=16, win_length=64, window=torch.hann_window(64))
    magnitude = torch.rand(33, 10, generator=torch.Generator().manual_seed(SEED))

    def run(seed):
        return griffin_lim(magnitude, **kwargs, n_iter=4, generator=torch.Generator().manual_seed(seed))

    assert run(1).shape == (9 * 16,)
    torch.testing.assert_close(run(1), run(1), rtol=0, atol=0)
    assert not torch.allclose(run(1), run(2))
    with pytest.raises(ValueError, match="magnitude must be"):
        griffin_lim(magnitude[:-1], **kwargs)
    with pytest.raises(ValueError, match="init must be"):
        griffin_lim(magnitude, **kwargs, init="pghi")


@pytest.mark.parametrize("spectrogram_power", [1.0, 2.0])
def test_vocoder_end_to_end(spectrogram_power):
    audio = AudioConfig(spectrogram_power=spectrogram_power, **SMALL)
    extractor = LogMel(audio)
    wave_lens = torch.tensor([3000, 2000])
    waves = torch.stack([torch.nn.functional.pad(tone(n), (0, 3000 - n)) for n in wave_lens.tolist()])
    with torch.no_grad():
        logmel, frame_lens = extractor(waves, wave_lens)
        reference = extractor.magnitude(waves)
    # Power 1 so that the output can be compared with the input's magnitude.
    vocoder = GriffinLimVocoder(audio, GriffinLimConfig(magnitude_power=1.0))
    assert not vocoder.state_dict(), "window and pseudo-inverse are derived, not saved"

    out, out_lens = vocoder(logmel, frame_lens, generator=torch.Generator().manual_seed(SEED))

    assert out.shape == (2, logmel.shape[1] * audio.hop_length)
    assert torch.equal(out_lens, frame_lens * audio.hop_length)
    assert torch.isfinite(out).all()
    for item in range(2):
        assert torch.all(out[item, out_lens[item] :] == 0)
        mine = out[item, : out_lens[item]]
        score = spectral_convergence(
            reference[item, :, : frame_lens[item]], mine, **stft_args(audio), window=extractor.window
        )
        # About 0.3 on this tone; a missing root for power spectrograms gives about 3.
        assert score < 0.5


def test_vocoder_default_config_runs():
    audio = AudioConfig(**SMALL)
    logmel, frame_lens = LogMel(audio)(tone(2000)[None])
    out, out_lens = GriffinLimVocoder(audio, GriffinLimConfig())(logmel, frame_lens)
    assert out.shape == (1, logmel.shape[1] * audio.hop_length) and out_lens.tolist() == [out.shape[1]]
    assert torch.isfinite(out).all() and out.abs().max() > 0
    with pytest.raises(ConfigError, match="hop_length"):
        GriffinLimVocoder(AudioConfig(**{**SMALL, "hop_length": 160}), GriffinLimConfig())


@pytest.mark.parametrize("nnls_steps", [0, 10])
def test_mel_to_linear(nnls_steps):
    audio = AudioConfig(**SMALL)
    basis = torch.from_numpy(mel_basis(audio))
    pinv = torch.linalg.pinv(basis.double()).float()
    linear = torch.rand(2, audio.n_fft // 2 + 1, 7, generator=torch.Generator().manual_seed(SEED))
    mel = torch.matmul(basis, linear).transpose(1, 2)  # (B, frames, n_mels)

    got = mel_to_linear(mel, pinv, basis=basis, nnls_steps=nnls_steps)

    assert got.shape == linear.shape
    assert got.min() >= MAGNITUDE_FLOOR > 0
    if nnls_steps:
        # Refinement must fit the mel better than the clamped pseudo-inverse.
        def residual(x):
            return torch.linalg.vector_norm(torch.matmul(basis, x) - mel.transpose(1, 2))

        assert residual(got) < 0.8 * residual(mel_to_linear(mel, pinv))
    with pytest.raises(ValueError, match="basis"):
        mel_to_linear(mel, pinv, nnls_steps=1)


def test_spectral_convergence():
    kwargs = dict(n_fft=64, hop_length=16, win_length=64, window=torch.hann_window(64))
    wave = tone(400)[None]
    magnitude = torch.stft(wave, **kwargs, center=True, pad_mode="constant", return_complex=True).abs()
    assert spectral_convergence(magnitude, wave, **kwargs).item() < 1e-5
    assert spectral_convergence(magnitude[0], torch.zeros(400), **kwargs).item() == pytest.approx(1.0)
