"""vc/audio/dsp.py gives what librosa gives, so features do not depend on which computed them."""

from __future__ import annotations

import librosa
import numpy as np
import pytest

from tests.conftest import arctic_file
from vc.audio import read_audio
from vc.audio.dsp import mel_filterbank, mel_frequencies, trim_silence


@pytest.mark.parametrize(
    "sample_rate, n_fft, n_mels, fmin, fmax",
    [
        (16000, 1024, 80, 80.0, 7600.0),
        (22050, 1024, 80, 0.0, 8000.0),
        (16000, 512, 40, 0.0, 8000.0),
        (24000, 2048, 100, 50.0, 11000.0),
    ],
)
def test_mel_filterbank_equals_librosa(sample_rate, n_fft, n_mels, fmin, fmax):
    ours = mel_filterbank(sample_rate, n_fft=n_fft, n_mels=n_mels, fmin=fmin, fmax=fmax)
    theirs = librosa.filters.mel(
        sr=sample_rate, n_fft=n_fft, n_mels=n_mels, fmin=fmin, fmax=fmax, htk=False, norm="slaney"
    )
    assert ours.dtype == np.float32 and ours.shape == theirs.shape == (n_mels, n_fft // 2 + 1)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(
        mel_frequencies(n_mels, fmin=fmin, fmax=fmax), librosa.mel_frequencies(n_mels, fmin=fmin, fmax=fmax)
    )


def _trim_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    t = np.arange(16000) / 16000
    tone = 0.5 * np.sin(2 * np.pi * 220 * t)
    quiet = 1e-4 * rng.standard_normal(8000)
    return [
        np.concatenate([quiet, tone, quiet]).astype(np.float32),  # silence both ends
        np.concatenate([tone, quiet]).astype(np.float32),  # sound from the first sample
        (tone * np.linspace(0, 1, t.size) ** 4).astype(np.float32),  # a slow fade in
        rng.standard_normal(3001).astype(np.float32),  # no silence, length not a hop multiple
        np.zeros(5000, dtype=np.float32),  # all zero: kept whole, as librosa keeps it
    ]


@pytest.mark.parametrize("case", range(5))
@pytest.mark.parametrize(
    "top_db, frame_length, hop_length", [(30.0, 1024, 256), (60.0, 2048, 512), (20.0, 400, 160)]
)
def test_trim_silence_equals_librosa(case, top_db, frame_length, hop_length):
    wave = _trim_cases()[case]
    theirs, _ = librosa.effects.trim(wave, top_db=top_db, frame_length=frame_length, hop_length=hop_length)
    np.testing.assert_array_equal(
        trim_silence(wave, top_db=top_db, frame_length=frame_length, hop_length=hop_length), theirs
    )


@pytest.mark.parametrize(
    "speaker, utt", [("bdl", "arctic_a0001"), ("slt", "arctic_b0500"), ("bdl", "arctic_b0340")]
)
def test_trim_silence_equals_librosa_on_real_speech(speaker, utt):
    from vc.settings.audio import AudioConfig

    config = AudioConfig(trim_top_db=0.0)  # read untrimmed, then trim both ways
    wave = read_audio(arctic_file(speaker, utt), config)
    theirs, _ = librosa.effects.trim(wave, top_db=30.0, frame_length=1024, hop_length=256)
    ours = trim_silence(wave, top_db=30.0, frame_length=1024, hop_length=256)
    assert 0 < ours.size < wave.size
    np.testing.assert_array_equal(ours, theirs)
