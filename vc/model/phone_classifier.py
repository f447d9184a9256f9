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

# Its labels: CMU's 39 phones (pocketsphinx's en-us set, no stress), and silence (every frame outside a
# phone).
PHONES = (
    "SIL AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH"
).split()


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

    def hidden(self, mels: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, n_mels) -> (B, T, channels): the last layer before the phone logits. ``keep`` (B, T, 1),
        1 on true frames: every layer's padding is zeroed, so an item reads the same alone or padded."""
        x = mels if keep is None else mels * keep
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = norm(torch.relu(conv(x.transpose(1, 2))).transpose(1, 2))
            x = dropout(x, self.dropout, self.training)
            if keep is not None:
                x = x * keep
        return x
