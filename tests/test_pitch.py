"""Pitch per mel frame (vc/audio/pitch.py): YIN's F0 at the log-mel's frames, and the features the
recognition-synthesis converter reads."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.helpers import write_pair_list
from vc.audio import LogMel
from vc.audio.pitch import log_f0_stats, pitch_features, pitch_of, yin
from vc.settings.audio import AudioConfig
from vc.training import data
from vc.training.data import pitch_inputs

AUDIO = AudioConfig()


def harmonic(f0: float, seconds: float = 0.6, sr: int = 16000) -> torch.Tensor:
    t = np.arange(int(seconds * sr)) / sr
    return torch.from_numpy(
        (0.2 * sum(np.sin(2 * np.pi * f0 * h * t) / h for h in range(1, 8))).astype(np.float32)
    )


@pytest.mark.parametrize("f0", [80.0, 120.0, 210.0, 330.0])
def test_the_period_of_a_voice_is_found_at_every_frame(f0):
    wave = harmonic(f0)
    found = yin(wave[None], torch.tensor([len(wave)]), AUDIO)[0]
    voiced = found[found > 0]
    assert len(voiced) >= len(found) - 2  # the edges may read half silence
    assert torch.allclose(voiced, torch.full_like(voiced, f0), rtol=0.01)


def test_a_breathy_voice_is_voiced_at_its_period_not_twice_it():
    """A voice 3 dB above its noise never dips below THRESHOLD (the old voicing left it unvoiced, as it
    did many of a low voice's frames); it is voiced, at 150 Hz, not at its deeper dip an octave down."""
    voice = harmonic(150.0)
    rng = np.random.default_rng(0)
    noise = torch.from_numpy(rng.standard_normal(len(voice)).astype(np.float32))
    wave = voice + noise * float(voice.square().mean().sqrt()) / 10 ** (3 / 20)
    found = yin(wave[None], torch.tensor([len(wave)]), AUDIO)[0]
    voiced = found[found > 0]
    assert len(voiced) >= len(found) - 2
    assert ((voiced / 150.0 - 1).abs() < 0.05).float().mean() > 0.9


def test_noise_and_silence_are_unvoiced_and_frames_match_the_log_mel():
    noise = torch.from_numpy(np.random.default_rng(0).standard_normal(9000).astype(np.float32) * 0.1)
    wave = torch.cat([harmonic(150.0, 0.5), torch.zeros(8000), noise])
    found = yin(wave[None], torch.tensor([len(wave)]), AUDIO)[0]
    _, frames = LogMel(AUDIO)(wave[None], torch.tensor([len(wave)]))
    assert len(found) == int(frames[0])
    hop = AUDIO.hop_length
    assert (found[5 : 8000 // hop - 3] > 0).all()  # the voice
    assert (found[8000 // hop + 4 : 16000 // hop - 3] == 0).all()  # silence
    assert (found[16000 // hop + 4 :] == 0).float().mean() > 0.9  # noise


def test_a_padded_item_reads_as_alone_and_padding_is_zero():
    low, high = harmonic(110.0, 0.4), harmonic(240.0, 0.7)
    waves = torch.nn.utils.rnn.pad_sequence([low, high], batch_first=True)
    lens = torch.tensor([len(low), len(high)])
    batch = pitch_of(waves, lens, AUDIO)
    alone = pitch_of(low[None], lens[:1], AUDIO)[0]
    frames = len(low) // AUDIO.hop_length + 1
    assert batch.shape == (2, len(high) // AUDIO.hop_length + 1, 2)
    torch.testing.assert_close(batch[0, :frames], alone)
    assert (batch[0, frames:] == 0).all()


def test_features_are_the_contours_z_score_whatever_the_voices_range():
    rise = torch.linspace(100, 150, 20)
    f0 = torch.stack([torch.cat([rise, torch.zeros(5)]), torch.cat([2 * rise, torch.zeros(5)])])
    f0[:, 3] = 0  # an unvoiced frame inside
    features = pitch_features(f0, torch.tensor([25, 22]))
    assert features.shape == (2, 25, 2)
    torch.testing.assert_close(features[0, :20], features[1, :20])  # an octave up reads the same
    assert features[0, 3].tolist() == [0.0, 0.0] and features[1, 22:].abs().sum() == 0
    voiced = features[0, :20, 1] > 0
    z = features[0, :20, 0][voiced]
    assert abs(float(z.mean())) < 1e-5 and abs(float(z.std(unbiased=False)) - 1) < 1e-4
    assert (z[1:] > z[:-1]).all()  # the rise stays a rise


def test_in_a_speakers_range_the_level_is_kept():
    """Trained on its target's z-scores in the target's range, a converter can tell where the harmonics
    lie: an utterance an octave up reads log(2) / deviation higher, not the same."""
    rise = torch.linspace(100, 150, 20)
    f0 = torch.stack([rise, 2 * rise])
    speaker = log_f0_stats([rise, 2 * rise])
    features = pitch_features(f0, torch.tensor([20, 20]), speaker)
    shift = features[1, :, 0] - features[0, :, 0]
    torch.testing.assert_close(shift, torch.full((20,), math.log(2) / speaker[1]))
    assert speaker[0] == pytest.approx(float(torch.cat([rise, 2 * rise]).log().mean()), rel=1e-6)


def test_training_reads_the_target_in_its_speakers_range_and_the_source_in_its_own():
    low, high = torch.linspace(180, 200, 10), torch.linspace(220, 240, 10)
    curves = {"a": (low / 2, low), "b": (high / 2, high)}
    features = pitch_inputs(curves, log_f0_stats([low, high]))
    assert features["b"][1][0, 0] > features["a"][1][-1, 0]  # b's target sits above a's
    torch.testing.assert_close(features["a"][0][:, 0].mean(), torch.tensor(0.0), atol=1e-5, rtol=0)
    torch.testing.assert_close(features["b"][0][:, 0].mean(), torch.tensor(0.0), atol=1e-5, rtol=0)


def test_the_f0_cache_is_made_again_when_the_estimator_changes(tmp_path, monkeypatch):
    pairs = write_pair_list(tmp_path, 2)
    first = data.load_f0(pairs, AUDIO, tmp_path / "cache", progress=False)
    assert len(list((tmp_path / "cache").glob("*.pt"))) == 1
    monkeypatch.setattr(data, "PITCH_SETTINGS", data.PITCH_SETTINGS + ("changed",))
    monkeypatch.setattr(data, "yin", lambda waves, lens, audio: torch.zeros(1, int(lens[0]) // 256 + 1))
    again = data.load_f0(pairs, AUDIO, tmp_path / "cache", progress=False)
    assert len(list((tmp_path / "cache").glob("*.pt"))) == 2  # a new file; the old one read nothing new
    assert first["utt0"][0].abs().sum() > 0 and again["utt0"][0].abs().sum() == 0
