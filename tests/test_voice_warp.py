"""vc/audio/voice_warp.py: the source speaker's codebook and the warp that moves other voices toward it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tests.conftest import arctic_file
from vc import Converter
from vc.artifacts.checkpoint import load_checkpoint, save_checkpoint
from vc.audio import LogMel, read_audio
from vc.audio.dsp import mel_frequencies
from vc.audio.voice_warp import VoiceCodebook, VoiceWarp
from vc.config import Config
from vc.errors import CheckpointError, ConfigError
from vc.settings.audio import AudioConfig

AUDIO = AudioConfig()


def formant_frames(count: int, seed: int, factor: float = 1.0) -> np.ndarray:
    """(count, n_mels) log-mels of a toy voice: a few formant peaks per frame, all at `factor` x their Hz.

    The peaks are drawn from a small inventory ("phones"), so the voice has a codebook to learn.
    """
    rng = np.random.default_rng(seed)
    centers = mel_frequencies(AUDIO.n_mels + 2, fmin=AUDIO.fmin, fmax=AUDIO.fmax)[1:-1]
    phones = np.array([[500, 1500, 2500], [300, 2300, 3000], [700, 1100, 2400], [400, 900, 2200]])
    chosen = phones[rng.integers(len(phones), size=count)] * factor
    width = 0.12 * chosen  # bandwidth grows with frequency
    peaks = np.exp(-(((centers[None, None, :] - chosen[:, :, None]) / width[:, :, None]) ** 2)).sum(1)
    level = rng.uniform(-1, 1, size=(count, 1))  # loudness must not matter
    return (np.log10(peaks + 1e-3) + level).astype(np.float32)


def fitted(seed: int = 0) -> VoiceCodebook:
    return VoiceCodebook.fit([formant_frames(200, seed + k) for k in range(5)], AUDIO)


def estimated_factor(warp: VoiceWarp, frames: np.ndarray) -> float:
    mels = torch.from_numpy(frames)[None]
    _, factors = warp(mels, torch.tensor([len(frames)]))
    return float(factors[0])


def test_codebook_shape_and_round_trip():
    codebook = fitted()
    assert codebook.centroids.shape == (64, AUDIO.n_mels)
    again = VoiceCodebook.from_dict(codebook.to_dict())
    np.testing.assert_allclose(again.centroids, codebook.centroids, rtol=0, atol=1e-6)


def test_fitting_leaves_the_global_rng_alone_and_is_deterministic():
    torch.manual_seed(3)
    before = torch.get_rng_state()
    first = fitted()
    assert torch.equal(torch.get_rng_state(), before)  # training's seeded draws are unchanged
    np.testing.assert_array_equal(first.centroids, fitted().centroids)


def test_the_source_voice_is_left_alone_and_a_warped_voice_is_warped_back():
    warp = VoiceWarp(fitted(), AUDIO)
    own = torch.from_numpy(formant_frames(150, seed=99))[None]
    warped, factors = warp(own, torch.tensor([150]))
    assert float(factors[0]) == pytest.approx(1.0, abs=1e-9)
    torch.testing.assert_close(warped, own)  # exactly as it came in
    # Within 3.5 % of the source's vocal tract: no warp either.
    assert estimated_factor(warp, formant_frames(150, seed=8, factor=1.02)) == pytest.approx(1.0, abs=1e-9)
    for factor in (1.2, 0.85):  # a shorter and a longer vocal tract than the source's
        estimate = estimated_factor(warp, formant_frames(150, seed=7, factor=factor))
        assert estimate == pytest.approx(1 / factor, rel=0.04), factor


def test_the_estimate_ignores_padding_and_the_other_items_of_the_batch():
    warp = VoiceWarp(fitted(), AUDIO)
    short = formant_frames(40, seed=5, factor=1.2)
    other = formant_frames(90, seed=6, factor=0.85)
    batch = torch.full((2, 90, AUDIO.n_mels), 5.0)  # padding far louder than speech
    batch[0, :40] = torch.from_numpy(short)
    batch[1] = torch.from_numpy(other)
    warped, factors = warp(batch, torch.tensor([40, 90]))
    alone, factor_alone = warp(torch.from_numpy(short)[None], torch.tensor([40]))
    assert factors[0] == factor_alone[0] and factors[0] != factors[1]
    torch.testing.assert_close(warped[0, :40], alone[0])
    assert warped.shape == batch.shape


def test_a_codebook_for_other_audio_settings_is_refused():
    with pytest.raises(ValueError, match="codebook"):
        VoiceWarp(fitted(), dataclasses.replace(AUDIO, n_mels=40))


def test_config_refuses_an_unknown_warp_mode():
    with pytest.raises(ConfigError, match="inference.source_warp"):
        Config().with_overrides(["inference.source_warp=sometimes"])


def with_codebook(path, tmp_path, centroids: np.ndarray):
    payload = load_checkpoint(path, map_location="cpu")
    payload["stats"]["source_codebook"] = VoiceCodebook(centroids).to_dict()
    out = tmp_path / "with_codebook.pt"
    save_checkpoint(out, payload)
    return out


def test_converter_warps_only_with_a_codebook_and_source_warp_auto(checkpoint, tmp_path):  # noqa: F811
    assert Converter.from_checkpoint(checkpoint, device="cpu").voice_warp is None  # an older model
    config = Config.from_dict(load_checkpoint(checkpoint, map_location="cpu")["config"])
    path = with_codebook(checkpoint, tmp_path, np.zeros((4, config.audio.n_mels), np.float32))
    assert isinstance(Converter.from_checkpoint(path, device="cpu").voice_warp, VoiceWarp)
    off = Converter.from_checkpoint(path, device="cpu", overrides=["inference.source_warp=none"])
    assert off.voice_warp is None


def test_a_codebook_that_does_not_fit_the_model_is_a_checkpoint_error(checkpoint, tmp_path):  # noqa: F811
    path = with_codebook(checkpoint, tmp_path, np.zeros((4, 3), np.float32))
    with pytest.raises(CheckpointError, match="not a usable vc model checkpoint"):
        Converter.from_checkpoint(path, device="cpu")


def test_real_voices_bdl_codebook_keeps_bdl_and_lowers_slt():
    """On real ARCTIC speech: bdl's eval sentences stay near 1, slt's (higher voice) go well below."""
    features = LogMel(AUDIO)

    def mels(speaker, utt):
        wave = read_audio(arctic_file(speaker, utt), AUDIO)
        return features(torch.from_numpy(wave)[None], torch.tensor([len(wave)]))[0][0].numpy()

    codebook = VoiceCodebook.fit([mels("bdl", f"arctic_a{i:04d}") for i in range(1, 41)], AUDIO)
    warp = VoiceWarp(codebook, AUDIO)
    for utt in ("arctic_b0440", "arctic_b0500"):
        assert 0.93 <= estimated_factor(warp, mels("bdl", utt)) <= 1.07
        assert estimated_factor(warp, mels("slt", utt)) <= 0.9
