"""The spectral loss's masks, and the keys of dropped loss experiments in stored configs."""

from __future__ import annotations

import pytest
import torch

from vc.config import Config
from vc.errors import ConfigError
from vc.kinds.losses import masked_spectral_loss


def test_spectral_loss_is_l1_plus_l2_over_true_frames():
    pred, tgt = torch.randn(2, 5, 3) * 3, torch.randn(2, 5, 3)
    lens = torch.tensor([5, 2])
    diff = torch.cat([(pred - tgt)[0], (pred - tgt)[1, :2]])  # item 1's last 3 frames are padding
    both = diff.abs().mean() + diff.square().mean()
    assert masked_spectral_loss(pred, tgt, lens).item() == pytest.approx(both.item())


def test_a_checkpoint_config_from_before_the_removal_of_dropped_loss_experiments_still_loads():
    stored = Config().to_dict()
    stored["train"].update(attention_entropy_weight=0.0, attention_entropy_from=500, spectral_loss="l1+l2")
    assert Config.from_dict(stored) == Config()


@pytest.mark.parametrize(
    "key,value", [("attention_entropy_weight", 0.3), ("spectral_loss", "l1")], ids=["entropy", "l1"]
)
def test_a_dropped_experiment_switched_on_is_a_one_line_error(key, value):
    stored = Config().to_dict()
    stored["train"][key] = value
    with pytest.raises(ConfigError, match=f"train.{key} was an experiment and has been removed"):
        Config.from_dict(stored)
