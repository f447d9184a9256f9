"""The padding mask every padded batch uses: (B,) lengths -> (B, T), True on padding (``~`` for valid)."""

from __future__ import annotations

import torch


def make_pad_mask(lens: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """(B,) lengths -> (B, max_len) bool mask, True on padding, on the lengths' device."""
    max_len = int(lens.max()) if max_len is None else max_len
    steps = torch.arange(max_len, device=lens.device)
    return steps[None, :] >= lens[:, None]
