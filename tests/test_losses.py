"""The attention-entropy term: its value, its masks, and that its weight only adds to training."""

from __future__ import annotations

import math

import pytest
import torch

from tests.test_model import batch, tiny_model
from vc.config import Config
from vc.errors import ConfigError
from vc.losses import attention_entropy, compute_losses


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
