"""A frame-wise phone classifier over normalised log-mels: the critic of the phonetic loss.

    log-mels (B, T, n_mels) -> [conv (kernel k) -> ReLU -> LayerNorm -> dropout] x layers -> linear
        -> phone logits (B, T, n_phones)

Trained on the target speaker's natural frames and their phone labels (vc/training/phonetic.py), then
frozen: a converter's output frames that it cannot tell apart lost the phone they carried.
Convolutions only: about 20 frames (0.3 s) of context, no recurrence, cheap beside the converter.
"""

from __future__ import annotations

import torch
from torch import nn

from vc.model.layers import dropout


class PhoneClassifier(nn.Module):
    def __init__(self, n_mels: int, n_phones: int, channels: int = 256, layers: int = 4, kernel: int = 5):
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv1d(n_mels if k == 0 else channels, channels, kernel, padding=kernel // 2)
            for k in range(layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(channels) for _ in range(layers))
        self.out = nn.Linear(channels, n_phones)
        self.dropout = 0.1

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        """(B, T, n_mels) -> (B, T, n_phones) logits."""
        return self.out(self.hidden(mels))

    def hidden(self, mels: torch.Tensor) -> torch.Tensor:
        """(B, T, n_mels) -> (B, T, channels): the last layer before the phone logits."""
        x = mels
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = norm(torch.relu(conv(x.transpose(1, 2))).transpose(1, 2))
            x = dropout(x, self.dropout, self.training)
        return x
