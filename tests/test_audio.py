from __future__ import annotations

import librosa
import numpy as np
import pytest
import soundfile as sf
import torch

from tests.conftest import arctic_file
from vc.audio import FeatureStats, LogMel, logmel_numpy, mel_basis, prepare_wave, read_audio
from vc.errors import AudioError
from vc.settings.audio import AudioConfig


def test_mel_basis_equals_librosa():
    config = AudioConfig()
    reference = librosa.filters.mel(sr=16000, n_fft=1024, n_mels=80, fmin=80.0, fmax=7600.0)
    assert np.abs(mel_basis(config) - reference).max() < 1e-6


def test_logmel_of_real_speech_matches_librosa():
    config = AudioConfig(trim_top_db=0)
    wave = read_audio(arctic_file("bdl", "arctic_a0001"), config)
    ours = logmel_numpy(wave, config)
    spec = np.abs(
        librosa.stft(
            y=wave,
            n_fft=config.n_fft,
            hop_length=config.hop_length,
            win_length=config.win_length,
            window="hann",
            center=True,
            pad_mode="constant",
        )
    )
    mel = librosa.feature.melspectrogram(S=spec, sr=16000, n_fft=1024, n_mels=80, fmin=80.0, fmax=7600.0)
    reference = np.log10(np.maximum(mel, 1e-10)).T
    assert ours.shape == reference.shape == (1 + len(wave) // 256, 80)
    assert np.abs(ours - reference).max() < 1e-3


def test_batched_logmel_equals_one_by_one():
    config = AudioConfig()
    rng = np.random.default_rng(0)
    waves = [rng.standard_normal(n).astype(np.float32) * 0.1 for n in (4000, 2600)]
    padded = torch.zeros(2, 4000)
    for k, w in enumerate(waves):
        padded[k, : len(w)] = torch.from_numpy(w)
    mels, lens = LogMel(config)(padded, torch.tensor([4000, 2600]))
    assert lens.tolist() == [16, 11]
    for k, w in enumerate(waves):
        alone = logmel_numpy(w, config)
        # centred frames pad with zeros, so batch padding changes nothing, even at the end
        assert np.abs(mels[k, : lens[k]].numpy() - alone).max() < 1e-5


def test_read_audio_mixes_resamples_and_trims(tmp_path):
    sr = 22050
    t = np.arange(sr) / sr
    tone = 0.5 * np.sin(2 * np.pi * 440 * t)
    silence = np.zeros(sr // 2)
    mono = np.concatenate([silence, tone, silence])
    path = tmp_path / "stereo.ogg"
    sf.write(path, np.stack([mono, mono], axis=1), sr)
    wave = read_audio(path, AudioConfig())
    assert wave.dtype == np.float32 and wave.ndim == 1
    assert abs(len(wave) / 16000 - 1.0) < 0.1  # the half seconds of silence are gone


@pytest.mark.parametrize(
    "wave,message",
    [
        (np.zeros(0), "no samples"),
        (np.zeros(16000), "silent"),
        (np.full(16000, np.nan), "NaN"),
        (np.full(100, 0.5), "too short"),
    ],
)
def test_unusable_waves_are_clear_errors(wave, message):
    with pytest.raises(AudioError, match=message):
        prepare_wave(wave, 16000, AudioConfig())


def test_unreadable_files_are_clear_errors(tmp_path):
    with pytest.raises(AudioError, match="not found"):
        read_audio(tmp_path / "missing.wav", AudioConfig())
    with pytest.raises(AudioError, match="is a folder"):
        read_audio(tmp_path, AudioConfig())
    text = tmp_path / "notes.wav"
    text.write_text("not audio")
    with pytest.raises(AudioError, match="cannot read"):
        read_audio(text, AudioConfig())
    long = tmp_path / "long.wav"
    sf.write(long, np.zeros(16000 * 3), 16000)
    with pytest.raises(AudioError, match="max_duration"):
        read_audio(long, AudioConfig(max_duration=2.0))


def _stats_with_spread(spread: float) -> FeatureStats:
    return FeatureStats(np.zeros(4, np.float32), np.full(4, 2.0, np.float32), spread)


def test_utterance_spread_is_how_far_an_utterances_mean_strays_in_deviations():
    rng = np.random.default_rng(0)
    feats = [rng.normal(3.0 + shift, 2.0, size=(4000, 4)).astype(np.float32) for shift in (-1.0, 1.0)]
    stats = FeatureStats.from_features(feats)
    # two utterances, means one deviation of the pooled data (sqrt(4 + 1) = 2.24) either side of it
    assert stats.utterance_spread == pytest.approx((1 / np.sqrt(5)) ** 2, rel=0.05)
    assert FeatureStats.from_dict(stats.to_dict()).utterance_spread == stats.utterance_spread
    assert FeatureStats.from_dict({"mean": [0.0], "std": [1.0]}).utterance_spread is None  # older files


def test_auto_normalisation_keeps_the_speaker_near_its_mean_and_centres_a_far_voice():
    stats = _stats_with_spread(0.04)  # the source's utterance means stray 0.2 deviations
    frames = torch.randn(1, 50, 4)
    lens = torch.tensor([50])
    frames = frames - frames.mean(dim=1, keepdim=True)  # an utterance exactly at the speaker's mean
    for offset, share in ((0.2, 0.0), (0.1, 0.0), (5.0, 1 - 0.04 / 25)):  # in deviations (std 2)
        shifted = frames + 2.0 * offset
        auto = stats.normalize_source(shifted, lens, "auto")
        speaker, utterance = (stats.normalize_source(shifted, lens, m) for m in ("speaker", "utterance"))
        # the mean moves toward the utterance's by the share of its deviation beyond the spread
        torch.testing.assert_close(auto, speaker - share * (speaker - utterance), atol=1e-5, rtol=0)
    no_spread = FeatureStats(stats.mean, stats.std)
    torch.testing.assert_close(no_spread.normalize_source(shifted, lens, "auto"), speaker)


@pytest.mark.parametrize("mode", ["speaker", "utterance", "auto"])
def test_source_normalisation_of_a_batch_item_ignores_padding(mode):
    stats = _stats_with_spread(0.04)
    feats = torch.randn(2, 10, 4) + 3.0
    alone = stats.normalize_source(feats[1:, :6], torch.tensor([6]), mode)
    padded = feats.clone()
    padded[1, 6:] = 99.0  # whatever padding holds must not move the mean
    batch = stats.normalize_source(padded, torch.tensor([10, 6]), mode)
    torch.testing.assert_close(batch[1, :6], alone[0])
    assert batch[1, 6:].abs().sum() == 0


def test_feature_stats_normalise_to_zero_mean_unit_variance():
    rng = np.random.default_rng(0)
    feats = [rng.normal(3.0, 2.0, size=(n, 4)).astype(np.float32) for n in (50, 70)]
    stats = FeatureStats.from_features(feats)
    normed = np.concatenate([stats.normalize(f) for f in feats])
    assert np.abs(normed.mean(0)).max() < 1e-4 and np.abs(normed.std(0) - 1).max() < 1e-3
    back = stats.denormalize(torch.from_numpy(normed))
    assert torch.allclose(back, torch.from_numpy(np.concatenate(feats)), atol=1e-4)
    assert FeatureStats.from_dict(stats.to_dict()).mean.tolist() == stats.mean.tolist()
