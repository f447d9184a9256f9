"""Postnet (Tacotron 2, Shen et al. 2018): a residual conv stack that refines
the decoder's mels using context on both sides of each frame."""

from __future__ import annotations

import torch
from torch import nn

from vc.model.layers import MaskedConvStack


class Postnet(nn.Module):
    """Shapes: mels (B, T, n_mels), pad_mask (B, T) -> residual (B, T, n_mels).

    With ``source_dim`` > 0 the first layer also reads ``source`` (B, T, source_dim): the model's
    input frames at the output's timing (vc.model.aligned_source).
    """

    def __init__(
        self,
        n_mels: int,
        postnet_layers: int,
        postnet_channels: int,
        postnet_kernel: int,
        postnet_dropout: float,
        source_dim: int = 0,
    ):
        super().__init__()
        self.source_dim = source_dim
        self.convs = MaskedConvStack(
            n_mels + source_dim,
            postnet_channels,
            n_mels,
            postnet_layers,
            postnet_kernel,
            postnet_dropout,
            activation="tanh",
            last_activation=False,
        )

    def forward(
        self, mels: torch.Tensor, pad_mask: torch.Tensor, source: torch.Tensor | None = None
    ) -> torch.Tensor:
        if self.source_dim:
            if source is None or source.shape != (*mels.shape[:2], self.source_dim):
                got = None if source is None else tuple(source.shape)
                raise ValueError(
                    f"this postnet needs source frames {(*mels.shape[:2], self.source_dim)}, got {got}"
                )
            mels = torch.cat([mels, source.to(mels.dtype)], dim=2)
        return self.convs(mels, pad_mask)
