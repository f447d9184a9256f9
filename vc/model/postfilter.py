"""A GAN post-filter on converted log-mels, and the discriminator that trains it.

A sequence-to-sequence model trained with L1/L2 losses predicts the mean of
what could follow: where the target's exact timing is uncertain, its envelope
comes out averaged over about five frames, and a recognizer loses the words to
that blur (docs/ablation.md, "Where the words go"). Kaneko, Kameoka, Hojo,
Ijima, Hiramatsu and Kashino ("Generative adversarial network-based postfilter
for statistical parametric speech synthesis", ICASSP 2017) restore such
over-smoothed features with a generator trained against a discriminator that
tells natural from predicted. Here the generator is a residual stack of dilated
1-D convolutions over time on the log-mel (the blur is in time), its output
layer initialised at zero so that training starts from the identity, and the
discriminator a strided 1-D convolution stack scoring patches of about half a
second (least-squares GAN, Mao et al. 2017, plus feature matching).

Padding never reaches valid frames: every convolution's input is zeroed past
each item's length, so an item in a padded batch gives what it gives alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from vc.masks import make_pad_mask

SLOPE = 0.2  # leaky ReLU slope, as in most GAN vocoders and post-filters


class MelPostfilter(nn.Module):
    """log-mel (B, T, n_mels) -> log-mel of the same shape, sharpened in time.

    Works on the log-mels vc.audio.LogMel makes (target scale, not normalised):
    ``in_mean`` and ``in_std`` (the target speaker's statistics, set by the
    trainer) normalise inside, so the network travels without the model's stats.

    With ``source_dim`` > 0 it also reads the model's own (normalised) input
    frames at the output's timing (vc.model.aligned_source): the source's sharp
    transitions, which the converted frames have lost.

    Shapes:
        logmel: (B, T, n_mels); lens: (B,) or None for all frames
        source: (B, T, source_dim), needed when source_dim > 0
        returns: (B, T, n_mels), the input itself on padding frames
    """

    def __init__(
        self,
        n_mels: int,
        channels: int = 256,
        dilations: Sequence[int] = (1, 2, 4, 1),
        kernel: int = 5,
        source_dim: int = 0,
    ):
        super().__init__()
        if kernel % 2 == 0:
            raise ValueError(f"kernel must be odd (to keep lengths), got {kernel}")
        self.hparams = dict(
            n_mels=n_mels, channels=channels, dilations=list(dilations), kernel=kernel, source_dim=source_dim
        )
        self.source_dim = source_dim
        self.register_buffer("in_mean", torch.zeros(n_mels))
        self.register_buffer("in_std", torch.ones(n_mels))
        self.inp = nn.Conv1d(n_mels + source_dim, channels, kernel, padding=kernel // 2)
        self.blocks = nn.ModuleList(
            nn.ModuleList(
                [
                    nn.Conv1d(
                        channels, channels, kernel, padding=dilation * (kernel // 2), dilation=dilation
                    ),
                    nn.Conv1d(channels, channels, 1),
                ]
            )
            for dilation in dilations
        )
        self.out = nn.Conv1d(channels, n_mels, kernel, padding=kernel // 2)
        nn.init.zeros_(self.out.weight)  # start as the identity
        nn.init.zeros_(self.out.bias)

    def forward(
        self, logmel: torch.Tensor, lens: torch.Tensor | None = None, source: torch.Tensor | None = None
    ) -> torch.Tensor:
        batch, frames, _ = logmel.shape
        if lens is None:
            lens = torch.full((batch,), frames, dtype=torch.long, device=logmel.device)
        keep = (~make_pad_mask(lens, frames)).unsqueeze(1).to(logmel.dtype)  # (B, 1, T)
        x = (logmel - self.in_mean) / self.in_std
        if self.source_dim:
            if source is None or source.shape != (batch, frames, self.source_dim):
                got = None if source is None else tuple(source.shape)
                raise ValueError(
                    f"this post-filter needs source frames {(batch, frames, self.source_dim)}, got {got}"
                )
            x = torch.cat([x, source.to(x.dtype)], dim=2)
        elif source is not None:
            raise ValueError("this post-filter reads no source frames; pass source=None")
        x = x.transpose(1, 2) * keep  # (B, n_mels + source_dim, T)
        h = self.inp(x) * keep
        for dilated, pointwise in self.blocks:
            h = h + pointwise(F.leaky_relu(dilated(F.leaky_relu(h, SLOPE)), SLOPE)) * keep
        residual = self.out(F.leaky_relu(h, SLOPE)) * keep
        return logmel + (residual * self.in_std[:, None]).transpose(1, 2)


class MelDiscriminator(nn.Module):
    """Normalised log-mel patches -> realness scores, one per 4 frames, and its hidden features.

    Shapes:
        x: (B, T, n_mels), normalised as MelPostfilter normalises
        returns: scores (B, ceil(T / 4)) and a list of (B, channels, T_k) features
    """

    def __init__(self, n_mels: int, channels: int = 128):
        super().__init__()
        self.layers = nn.ModuleList(
            [
                nn.Conv1d(n_mels, channels, 5, padding=2),
                nn.Conv1d(channels, channels, 5, stride=2, padding=2),
                nn.Conv1d(channels, channels, 5, stride=2, padding=2),
                nn.Conv1d(channels, channels, 3, padding=1),
            ]
        )
        self.out = nn.Conv1d(channels, 1, 3, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        h = x.transpose(1, 2)
        features = []
        for layer in self.layers:
            h = F.leaky_relu(layer(h), SLOPE)
            features.append(h)
        return self.out(h).squeeze(1), features
