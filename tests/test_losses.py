"""Training-only loss terms: attention entropy (value, masks, weight) and the L1-only spectral loss."""

from __future__ import annotations

import math

import pytest
import torch

import vc.training.monitor
import vc.training.trainer
from tests.test_model import batch, tiny_model
from tests.test_train import tiny_training_config
from vc.config import Config
from vc.errors import ConfigError
from vc.training.losses import attention_entropy, compute_losses, masked_spectral_loss, teacher_forced_losses
from vc.training.trainer import Trainer


def test_attention_entropy_is_log_of_the_positions_read_and_ignores_padding():
    alignments = torch.zeros(2, 3, 5)
    alignments[0, :, :4] = 0.25  # item 0 reads 4 positions evenly at every step
    alignments[1, :, 2] = 1.0  # item 1 reads exactly one
    alignments[1, 2] = 0.2  # ... but its third step is padding and must not count
    value = attention_entropy(alignments, torch.tensor([3, 2]))
    assert value.item() == pytest.approx(3 * math.log(4) / 5, abs=1e-6)  # 5 valid steps, 3 of them wide


def test_entropy_weight_adds_to_the_total_and_its_gradient_narrows_the_attention():
    model = tiny_model().train()
    src, src_lens, tgt, tgt_lens = batch()
    out = model(src, src_lens, tgt, tgt_lens)
    plain = compute_losses(out, tgt, tgt_lens, 2, 5.0, 0.4, 1.0)
    weighted = compute_losses(out, tgt, tgt_lens, 2, 5.0, 0.4, 1.0, entropy_weight=0.5)
    torch.testing.assert_close(weighted.total, plain.total + 0.5 * plain.attention_entropy)
    assert plain.attention_entropy > 0

    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    before = plain.attention_entropy.item()
    for _ in range(5):
        optimizer.zero_grad()
        entropy = compute_losses(model(src, src_lens, tgt, tgt_lens), tgt, tgt_lens, 2, 5.0, 0.4, 0.0)
        entropy.attention_entropy.backward()
        optimizer.step()
    after = compute_losses(model(src, src_lens, tgt, tgt_lens), tgt, tgt_lens, 2, 5.0, 0.4, 0.0)
    assert after.attention_entropy.item() < before


def test_negative_entropy_weight_is_a_config_error():
    with pytest.raises(ConfigError, match="train.attention_entropy_weight must not be negative"):
        Config().with_overrides(["train.attention_entropy_weight=-0.1"])


def test_l1_only_spectral_loss_is_the_mean_absolute_error_over_true_frames():
    pred, tgt = torch.randn(2, 5, 3) * 3, torch.randn(2, 5, 3)
    lens = torch.tensor([5, 2])
    diff = torch.cat([(pred - tgt)[0], (pred - tgt)[1, :2]])  # item 1's last 3 frames are padding
    assert masked_spectral_loss(pred, tgt, lens, l2=False).item() == pytest.approx(diff.abs().mean().item())
    both = diff.abs().mean() + diff.square().mean()
    assert masked_spectral_loss(pred, tgt, lens).item() == pytest.approx(both.item())


def _fit_one_prediction(targets: torch.Tensor, l2: bool) -> torch.Tensor:
    """The single (T, 1) prediction that minimises the loss over several equally likely targets."""
    pred = torch.full(targets.shape[1:], 0.5, requires_grad=True)
    optimizer = torch.optim.Adam([pred], lr=0.02)
    lens = torch.full((len(targets),), targets.shape[1])
    for _ in range(600):
        optimizer.zero_grad()
        masked_spectral_loss(pred.expand_as(targets), targets, lens, l2=l2).backward()
        optimizer.step()
    return pred.detach().squeeze(-1)


def test_l1_alone_keeps_a_transition_of_uncertain_timing_sharp_where_l1_plus_l2_ramps_it():
    """Three equally likely timings of a 2-unit step: L1's optimum is the median's step, L1 + L2's a ramp."""
    frames = torch.arange(10)
    targets = torch.stack([(frames >= onset).float() * 2 for onset in (3, 4, 5)]).unsqueeze(-1)
    sharp = _fit_one_prediction(targets, l2=False)
    ramp = _fit_one_prediction(targets, l2=True)
    torch.testing.assert_close(sharp, (frames >= 4).float() * 2, atol=0.05, rtol=0)
    assert 0.3 < ramp[3].item() < 1.0 and 1.0 < ramp[4].item() < 1.7  # between the plateaus: blurred


def test_training_passes_the_configured_spectral_loss_and_validation_keeps_l1_plus_l2(tmp_path, monkeypatch):
    seen = {"train": [], "valid": []}

    def recording(where):
        def losses(*args, **kwargs):
            seen[where].append(kwargs.get("l2", True))
            return teacher_forced_losses(*args, **kwargs)

        return losses

    monkeypatch.setattr(vc.training.trainer, "teacher_forced_losses", recording("train"))
    monkeypatch.setattr(vc.training.monitor, "teacher_forced_losses", recording("valid"))
    Trainer(tiny_training_config(tmp_path, spectral_loss="l1"), tmp_path / "exp", progress=False).fit()
    assert seen["train"] and not any(seen["train"])
    assert seen["valid"] and all(seen["valid"])


def test_unknown_spectral_loss_is_a_config_error():
    with pytest.raises(ConfigError, match="train.spectral_loss must be one of l1\\+l2, l1"):
        Config().with_overrides(["train.spectral_loss=l2"])
