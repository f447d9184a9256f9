"""Attention health (pure torch, batched): whether the decoder has learned to follow the source.

A healthy alignment is sharp (high focus rate) and close to the diagonal of the
(decoder step, encoder step) plane. The attention model's dev views log both
(TensorBoard's valid/align/*).
"""

from __future__ import annotations

import torch

from vc.masks import make_pad_mask


def _length_masks(alignments: torch.Tensor, dec_lens, enc_lens):
    """(B,) lengths -> long lengths on the alignments' device and (B, T_dec), (B, N_enc) masks."""
    if alignments.dim() != 3:
        raise ValueError(f"alignments must be (B, T_dec, N_enc), got shape {tuple(alignments.shape)}")
    batch, t_dec, n_enc = alignments.shape
    dec_lens = torch.as_tensor(dec_lens, device=alignments.device).long().reshape(-1)
    enc_lens = torch.as_tensor(enc_lens, device=alignments.device).long().reshape(-1)
    if dec_lens.numel() != batch or enc_lens.numel() != batch:
        raise ValueError(
            f"need {batch} decoder and encoder lengths, got {dec_lens.numel()} and {enc_lens.numel()}"
        )
    if bool((dec_lens > t_dec).any()) or bool((enc_lens > n_enc).any()):
        raise ValueError(f"lengths exceed the alignment shape {tuple(alignments.shape)}")
    dec_mask = ~make_pad_mask(dec_lens.to(alignments.device), t_dec)
    enc_mask = ~make_pad_mask(enc_lens.to(alignments.device), n_enc)
    return dec_lens, enc_lens, dec_mask, enc_mask


def focus_rate(alignments: torch.Tensor, dec_lens, enc_lens) -> torch.Tensor:
    """Mean over valid decoder steps of the largest attention weight (Ren et al., FastSpeech, 2019).

    Shapes:
        alignments: (B, T_dec, N_enc) weights, rows summing to 1 over the valid
            encoder steps, zero-padded; dec_lens, enc_lens: (B,)
        returns: (B,) float in [1/N_enc, 1]; 1 = every step attends to one
            encoder step, 1/N = uniform blur. An item with dec_len 0 scores 0.
    """
    dec_lens, _, dec_mask, enc_mask = _length_masks(alignments, dec_lens, enc_lens)
    weights = alignments.detach().float().masked_fill(~enc_mask[:, None, :], 0.0)
    peaks = weights.amax(dim=-1) * dec_mask  # (B, T_dec)
    return peaks.sum(dim=-1) / dec_lens.clamp(min=1)


def diagonal_ratio(alignments: torch.Tensor, dec_lens, enc_lens, tolerance: float = 0.15) -> torch.Tensor:
    """Fraction of valid decoder steps whose attention peak lies near the diagonal.

    Decoder step i (0-based, of T = dec_len) with peak j = argmax over the valid
    encoder steps (0-based, of N = enc_len) counts when |j/N - i/T| <= tolerance.
    Both positions use index / length, so step 0 maps to 0 on both axes and a
    perfect diagonal (T = N) gives exactly 0 offset. The test runs as the exact
    integer comparison |j*T - i*N| <= tolerance*N*T, so no float rounding at the
    boundary. Monotonic but not diagonal alignments (long pauses) score lower;
    the diagonal prior is the one of guided attention (Tachibana et al., 2018).

    Shapes:
        alignments: (B, T_dec, N_enc); dec_lens, enc_lens: (B,)
        returns: (B,) float in [0, 1]; an item with dec_len 0 scores 0.
    """
    dec_lens, enc_lens, dec_mask, enc_mask = _length_masks(alignments, dec_lens, enc_lens)
    scores = alignments.detach().float().masked_fill(~enc_mask[:, None, :], float("-inf"))
    peak = scores.argmax(dim=-1)  # (B, T_dec)
    step = torch.arange(alignments.shape[1], device=alignments.device)[None]  # (1, T_dec)
    offset = (peak * dec_lens[:, None] - step * enc_lens[:, None]).abs()
    near = offset.double() <= tolerance * (dec_lens * enc_lens).double()[:, None]
    return (near & dec_mask).sum(dim=-1).float() / dec_lens.clamp(min=1)
