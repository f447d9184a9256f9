import numpy as np
import pytest
import torch

from vc.audio import FeatureStats
from vc.config import Config
from vc.errors import ConfigError
from vc.settings.audio import AudioConfig
from vc.settings.training import AugmentConfig
from vc.training.augment import SourceAugment, warp_table

AUDIO = AudioConfig()
N_MELS = AUDIO.n_mels


def stats(mean=-2.0, std=0.5) -> FeatureStats:
    return FeatureStats(np.full(N_MELS, mean, np.float32), np.full(N_MELS, std, np.float32))


def plain(**changes) -> AugmentConfig:
    """Everything off but what the test turns on; every utterance augmented."""
    base = dict(
        probability=1.0, warp_min=1.0, warp_max=1.0, gain_db=0.0, tilt_db=0.0, freq_masks=0, time_masks=0
    )
    return AugmentConfig(**{**base, **changes})


def test_warp_factor_one_reads_every_bin_from_itself():
    np.testing.assert_allclose(warp_table(AUDIO, np.array([1.0]))[0].numpy(), np.arange(N_MELS), atol=1e-4)


def test_a_higher_voice_moves_a_formant_up_and_a_lower_one_down():
    raw = torch.full((1, 10, N_MELS), -3.0)
    raw[:, :, 30] = 0.0  # a formant peak at band 30
    src_stats = stats()
    src = torch.from_numpy(src_stats.normalize(raw.numpy()))
    lens = torch.tensor([10])
    for factor, moved in ((1.2, lambda peak: peak > 30), (0.8, lambda peak: peak < 30)):
        out = SourceAugment(plain(warp_min=factor, warp_max=factor), AUDIO, src_stats)(src, lens)
        assert moved(int(out[0, 0].argmax())), factor


def test_gain_shifts_every_band_by_the_same_amount_within_its_range():
    src_stats = stats()
    src = torch.randn(4, 12, N_MELS)
    out = SourceAugment(plain(gain_db=6.0), AUDIO, src_stats)(src, torch.full((4,), 12))
    shift = (out - src) * torch.from_numpy(src_stats.std)  # back in log10 units
    per_utt = shift[:, 0, 0]
    torch.testing.assert_close(shift, per_utt[:, None, None].expand_as(shift), rtol=0, atol=1e-5)
    assert per_utt.abs().max() <= 6.0 / 20 + 1e-6
    assert per_utt.std() > 0  # drawn per utterance


def test_padding_stays_zero_and_masks_stay_inside_the_utterance():
    src = torch.zeros(3, 20, N_MELS)
    src[:, :, :] = 1.0
    lens = torch.tensor([20, 11, 4])
    src[1, 11:] = 0
    src[2, 4:] = 0
    config = plain(warp_min=0.8, warp_max=1.25, gain_db=6.0, tilt_db=6.0, time_masks=2, time_mask_width=3)
    out = SourceAugment(config, AUDIO, stats())(src, lens)
    assert out.shape == src.shape
    assert out[1, 11:].abs().sum() == 0 and out[2, 4:].abs().sum() == 0
    assert (out[0].abs().sum(dim=1) == 0).sum() <= 2 * 3  # at most the masked frames are zeroed


def test_frequency_masks_zero_whole_bands():
    torch.manual_seed(0)
    src = torch.ones(8, 6, N_MELS)
    out = SourceAugment(plain(freq_masks=1, freq_mask_width=5), AUDIO, stats(0.0, 1.0))(
        src, torch.full((8,), 6)
    )
    zero_bands = (out == 0).all(dim=1)  # (B, n_mels): a band masked over every frame
    assert zero_bands.sum(dim=1).max() <= 5 and zero_bands.any()
    assert ((out == 0) == zero_bands[:, None, :]).all()  # nothing else was masked


def test_probability_zero_leaves_the_batch_alone_and_half_augments_about_half():
    src = torch.randn(200, 5, N_MELS)
    lens = torch.full((200,), 5)
    assert SourceAugment(plain(probability=0.0, gain_db=6.0), AUDIO, stats())(src, lens) is src
    out = SourceAugment(plain(probability=0.5, gain_db=6.0), AUDIO, stats())(src, lens)
    changed = (out != src).flatten(1).any(dim=1).float().mean()
    assert 0.3 < changed < 0.7


def test_rows_of_two_speakers_are_each_warped_through_their_own_statistics():
    """The phone recognizer's batches mix both speakers' frames, each normalised by its own statistics:
    a row is taken back to its log-mel, warped and normalised again by the statistics its index names."""
    low = stats(-2.0, 0.5)
    rising = FeatureStats(np.linspace(-6.0, 0.0, N_MELS, dtype=np.float32), np.full(N_MELS, 2.0, np.float32))
    torch.manual_seed(0)
    src = torch.randn(2, 9, N_MELS)
    lens = torch.tensor([9, 7])
    src[1, 7:] = 0
    config = plain(warp_min=1.2, warp_max=1.2)
    mixed = SourceAugment(config, AUDIO, [low, rising])(src, lens, torch.tensor([1, 0]))
    torch.testing.assert_close(mixed[0], SourceAugment(config, AUDIO, rising)(src[:1], lens[:1])[0])
    torch.testing.assert_close(mixed[1], SourceAugment(config, AUDIO, low)(src[1:], lens[1:])[0])
    # Not the same warp through the other statistics: the index is what chose them.
    assert not torch.allclose(mixed[0], SourceAugment(config, AUDIO, low)(src[:1], lens[:1])[0])
    # The probability given overrides the config's.
    assert SourceAugment(config, AUDIO, low, probability=0.0)(src, lens) is src


@pytest.mark.parametrize(
    "item",
    [
        "augment.probability=1.5",
        "augment.recognizer_probability=-0.1",
        "augment.recognizer_probability=0.5 augment.freq_mask_width=80",
        "augment.warp_min=1.3",
        "augment.gain_db=-1",
        "augment.probability=0.5 augment.freq_mask_width=80",
    ],
)
def test_bad_augment_settings_are_config_errors_naming_the_key(item):
    *_, last = item.split()
    with pytest.raises(ConfigError, match=last.split("=")[0].split(".")[1]):
        Config().with_overrides(item.split())
