"""The attention-entropy term and the time-tolerant spectral loss: values, masks, and that they only add to training."""

from __future__ import annotations

import math

import pytest
import torch

from tests.test_model import batch, tiny_model
from vc.config import Config
from vc.errors import ConfigError
from vc.losses import attention_entropy, compute_losses, masked_spectral_loss, time_tolerant_spectral_loss


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


def step_sequence(at: float, frames: int = 8) -> torch.Tensor:
    """(1, frames, 2): 0 before frame index `at`, 1 after, linear inside a fractional step."""
    t = torch.arange(frames, dtype=torch.float32)
    return (t - at + 0.5).clamp(0, 1)[None, :, None].expand(1, frames, 2).contiguous()


def test_time_tolerance_prefers_a_sharp_transition_one_frame_off_to_the_blurred_average():
    target = step_sequence(4.0)
    early = step_sequence(3.0)
    blurred = (early + target) / 2  # the average of two timings the model cannot tell apart
    lens = torch.tensor([8])
    assert time_tolerant_spectral_loss(early, target, lens, 1).item() == 0.0
    assert time_tolerant_spectral_loss(blurred, target, lens, 1).item() > 0.0
    # the exact loss ranks them the other way: that is the blur it teaches
    assert masked_spectral_loss(blurred, target, lens) < masked_spectral_loss(early, target, lens)


def test_time_tolerance_zero_is_the_exact_loss_and_padding_never_matches():
    torch.manual_seed(0)
    pred, tgt = torch.randn(2, 6, 3), torch.randn(2, 6, 3)
    lens = torch.tensor([6, 4])
    torch.testing.assert_close(
        time_tolerant_spectral_loss(pred, tgt, lens, 0), masked_spectral_loss(pred, tgt, lens)
    )
    # item 1 (4 true frames): frames 0-2 are exact; frame 3 equals the target's first PADDED frame,
    # which its +-1 window reaches but must not match; padded predictions must not count at all
    pred[1, :3] = tgt[1, :3]
    pred[1, 3] = tgt[1, 4]
    pred[1, 4:] = 1e6

    def cost(a, b):
        return ((a - b).abs() + (a - b).square()).sum()

    expected = min(cost(pred[1, 3], tgt[1, 2]), cost(pred[1, 3], tgt[1, 3])) / (4 * 3)
    loss = time_tolerant_spectral_loss(pred[1:], tgt[1:], lens[1:], 1)
    torch.testing.assert_close(loss, expected)
    assert loss > 0


def test_time_tolerance_is_training_only_and_validated():
    model = tiny_model().train()
    src, src_lens, tgt, tgt_lens = batch()
    out = model(src, src_lens, tgt, tgt_lens)
    exact = compute_losses(out, tgt, tgt_lens, 2, 5.0, 0.4, 1.0)
    tolerant = compute_losses(out, tgt, tgt_lens, 2, 5.0, 0.4, 1.0, time_tolerance=2)
    assert tolerant.spectral < exact.spectral  # the closest of 5 frames is never farther than the centre
    tolerant.total.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    with pytest.raises(ConfigError, match="train.time_tolerance must not be negative"):
        Config().with_overrides(["train.time_tolerance=-1"])
