"""Postnet (Tacotron 2, Shen et al. 2018): a residual conv stack that refines
the decoder's mels using context on both sides of each frame."""

from __future__ import annotations

import torch
from torch import nn

from vc.model.layers import MaskedConvStack


class Postnet(nn.Module):
    """Shapes: mels (B, T, n_mels), pad_mask (B, T) -> residual (B, T, n_mels)."""

    def __init__(
        self,
        n_mels: int,
        postnet_layers: int,
        postnet_channels: int,
        postnet_kernel: int,
        postnet_dropout: float,
    ):
        super().__init__()
        self.convs = MaskedConvStack(
            n_mels,
            postnet_channels,
            n_mels,
            postnet_layers,
            postnet_kernel,
            postnet_dropout,
            activation="tanh",
            last_activation=False,
        )

    def forward(self, mels: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        return self.convs(mels, pad_mask)
