"""Padded batches: the padding mask every one uses ((B,) lengths -> (B, T), True on padding, ``~`` for
valid), and windows cut from their rows."""

from __future__ import annotations

import torch


def make_pad_mask(lens: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """(B,) lengths -> (B, max_len) bool mask, True on padding, on the lengths' device."""
    max_len = int(lens.max()) if max_len is None else max_len
    steps = torch.arange(max_len, device=lens.device)
    return steps[None, :] >= lens[:, None]


def random_windows(lens: torch.Tensor, frames: int, max_len: int) -> torch.Tensor:
    """(B,) lengths of a batch padded to ``max_len`` -> (B, W) frame indices, W = min(frames, max_len):
    one window of W consecutive frames per row, uniform over the places it fits inside the row's length
    (a shorter row from its start: its window ends in padding, which lens.clamp(max=W) masks)."""
    width = min(frames, max_len)
    room = (lens - width + 1).clamp(min=1)
    start = (torch.rand(lens.shape, device=lens.device) * room).long()
    return start[:, None] + torch.arange(width, device=lens.device)


def take_frames(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(B, T) or (B, T, D) -> (B, W) or (B, W, D): each row's frames at ``index`` (B, W)."""
    return x.gather(1, index if x.dim() == 2 else index[:, :, None].expand(-1, -1, x.shape[2]))
