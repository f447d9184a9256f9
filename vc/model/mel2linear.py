"""Mel -> linear magnitude network for Griffin-Lim (the post-network of Tacotron 1).

80 mel bands keep too little of a 513-bin spectrum for a filterbank inverse to
restore it: the pseudo-inverse/NNLS estimate is smooth between band centres
and Griffin-Lim turns that into buzz. Tacotron (Wang et al., Interspeech 2017)
predicts the linear spectrogram from the decoder's mels with a CBHG module;
here a network trained on one speaker's recordings (mel and magnitude of the
same audio, no parallel data) does the same.

The body, residual 1-D convolutions (GELU), adds its output to a frame-wise
linear map of the log-mel, initialised by least squares (``fit_linear``), so
training starts from the best frame-wise linear inverse in the log domain and
the body learns the rest.

Padding never reaches valid frames: every convolution's input is zeroed past
each item's length, so an item in a padded batch gives what it gives alone.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from vc.masks import make_pad_mask


class Mel2Linear(nn.Module):
    """log_base mel (B, T, n_mels) -> log10 magnitude (B, T, n_bins).

    Shapes:
        logmel: (B, T, n_mels), as vc.audio.LogMel makes it (not normalised)
        lens: (B,) valid frames per item, or None for all
        returns: (B, T, n_bins), n_bins = n_fft // 2 + 1; padding frames are 0
    """

    def __init__(
        self,
        n_mels: int,
        n_bins: int,
        channels: int = 256,
        layers: int = 4,
        kernel: int = 5,
    ):
        super().__init__()
        if kernel % 2 == 0:
            raise ValueError(f"kernel must be odd (to keep lengths), got {kernel}")
        self.hparams = dict(
            n_mels=n_mels,
            n_bins=n_bins,
            channels=channels,
            layers=layers,
            kernel=kernel,
        )
        # Input normalisation, set from training data by fit_linear().
        self.register_buffer("in_mean", torch.zeros(n_mels))
        self.register_buffer("in_std", torch.ones(n_mels))
        self.linear = nn.Linear(n_mels, n_bins)
        self.body = ResConvBody(n_mels, channels, layers, kernel)
        self.out = nn.Linear(self.body.out_dim, n_bins)
        nn.init.zeros_(self.out.weight)  # start exactly at the linear map
        nn.init.zeros_(self.out.bias)

    def forward(self, logmel: torch.Tensor, lens: torch.Tensor | None = None) -> torch.Tensor:
        batch, frames, _ = logmel.shape
        if lens is None:
            lens = torch.full((batch,), frames, dtype=torch.long, device=logmel.device)
        keep = (~make_pad_mask(lens, frames)).unsqueeze(-1).to(logmel.dtype)  # (B, T, 1)
        x = (logmel - self.in_mean) / self.in_std * keep
        y = self.linear(x) + self.out(self.body(x, keep))
        return y * keep


class ResConvBody(nn.Module):
    """Conv(k) to ``channels``, then residual blocks x + conv(gelu(x)) with zeroed padding."""

    def __init__(self, n_mels: int, channels: int, layers: int, kernel: int):
        super().__init__()
        self.inp = nn.Conv1d(n_mels, channels, kernel, padding=kernel // 2)
        self.convs = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, padding=kernel // 2) for _ in range(layers)
        )
        self.out_dim = channels

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        keep = keep.transpose(1, 2)  # (B, 1, T)
        h = self.inp(x.transpose(1, 2)) * keep
        for conv in self.convs:
            h = h + conv(F.gelu(h)) * keep
        return F.gelu(h).transpose(1, 2)


@torch.no_grad()
def fit_linear(net: Mel2Linear, logmel: torch.Tensor, logmag: torch.Tensor, ridge: float = 1e-3) -> None:
    """Set the input normalisation and the linear map by ridge regression.

    Shapes:
        logmel: (N, n_mels) frames; logmag: (N, n_bins) log10 magnitudes of the same frames
    """
    mean, std = logmel.mean(0), logmel.std(0).clamp(min=1e-3)
    net.in_mean.copy_(mean)
    net.in_std.copy_(std)
    x = torch.cat([(logmel - mean) / std, torch.ones(len(logmel), 1)], dim=1).double()
    gram = x.T @ x + ridge * len(x) * torch.eye(x.shape[1], dtype=x.dtype)
    solution = torch.linalg.solve(gram, x.T @ logmag.double())  # (n_mels + 1, n_bins)
    net.linear.weight.copy_(solution[:-1].T.float())
    net.linear.bias.copy_(solution[-1].float())
