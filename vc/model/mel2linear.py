"""Mel -> linear magnitude network for Griffin-Lim (the post-network of Tacotron 1).

80 mel bands keep too little of a 513-bin spectrum for a filterbank inverse to
restore it: the pseudo-inverse/NNLS estimate is smooth between band centres
and Griffin-Lim turns that into buzz. Tacotron (Wang et al., Interspeech 2017)
predicts the linear spectrogram from the decoder's mels with a CBHG module;
here a network trained on one speaker's recordings (mel and magnitude of the
same audio, no parallel data) does the same.

Two bodies are offered and share everything else: ``resconv``, residual 1-D
convolutions (GELU), and ``cbhg``, a small CBHG (conv bank, max-pool,
projections, highway layers, bidirectional GRU). Both add their output to a
frame-wise linear map of the log-mel, initialised by least squares
(``fit_linear``), so training starts from the best frame-wise linear inverse
in the log domain and the body learns the rest.

Padding never reaches valid frames: every convolution's input is zeroed past
each item's length and the GRU runs on packed sequences, so an item in a
padded batch gives what it gives alone.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from vc.model.layers import make_pad_mask

ARCHITECTURES = ("resconv", "cbhg")


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
        architecture: str = "resconv",
        channels: int = 256,
        layers: int = 4,
        kernel: int = 5,
    ):
        super().__init__()
        if architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {architecture!r}")
        if kernel % 2 == 0:
            raise ValueError(f"kernel must be odd (to keep lengths), got {kernel}")
        self.hparams = dict(
            n_mels=n_mels,
            n_bins=n_bins,
            architecture=architecture,
            channels=channels,
            layers=layers,
            kernel=kernel,
        )
        # Input normalisation, set from training data by fit_linear().
        self.register_buffer("in_mean", torch.zeros(n_mels))
        self.register_buffer("in_std", torch.ones(n_mels))
        self.linear = nn.Linear(n_mels, n_bins)
        if architecture == "resconv":
            self.body = ResConvBody(n_mels, channels, layers, kernel)
        else:
            self.body = CBHGBody(n_mels, channels, layers)
        self.out = nn.Linear(self.body.out_dim, n_bins)
        nn.init.zeros_(self.out.weight)  # start exactly at the linear map
        nn.init.zeros_(self.out.bias)

    def forward(self, logmel: torch.Tensor, lens: torch.Tensor | None = None) -> torch.Tensor:
        batch, frames, _ = logmel.shape
        if lens is None:
            lens = torch.full((batch,), frames, dtype=torch.long, device=logmel.device)
        keep = (~make_pad_mask(lens, frames)).unsqueeze(-1).to(logmel.dtype)  # (B, T, 1)
        x = (logmel - self.in_mean) / self.in_std * keep
        y = self.linear(x) + self.out(self.body(x, keep, lens))
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

    def forward(self, x: torch.Tensor, keep: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
        keep = keep.transpose(1, 2)  # (B, 1, T)
        h = self.inp(x.transpose(1, 2)) * keep
        for conv in self.convs:
            h = h + conv(F.gelu(h)) * keep
        return F.gelu(h).transpose(1, 2)


class CBHGBody(nn.Module):
    """CBHG (Wang et al. 2017) at small width: a bank of convolutions with kernels
    1..K, max-pool (stride 1), two projection convolutions with a residual to the
    input, ``layers`` highway layers and a bidirectional GRU."""

    def __init__(self, n_mels: int, channels: int, layers: int, bank: int = 8):
        super().__init__()
        width = channels // 2
        self.bank = nn.ModuleList(
            nn.Conv1d(n_mels, width // 2, k, padding=k // 2) for k in range(1, bank + 1)
        )
        self.bank_norm = nn.BatchNorm1d(bank * (width // 2))
        self.proj1 = nn.Conv1d(bank * (width // 2), width, 3, padding=1)
        self.proj2 = nn.Conv1d(width, n_mels, 3, padding=1)
        self.pre_highway = nn.Linear(n_mels, width)
        self.highways = nn.ModuleList(nn.Linear(width, 2 * width) for _ in range(layers))
        self.gru = nn.GRU(width, width, batch_first=True, bidirectional=True)
        self.out_dim = 2 * width

    def forward(self, x: torch.Tensor, keep: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
        frames = x.shape[1]
        k1 = keep.transpose(1, 2)
        h = x.transpose(1, 2)
        # Even kernels give one extra frame; keep the first T.
        h = torch.cat([conv(h)[..., :frames] for conv in self.bank], dim=1)
        h = F.relu(self.bank_norm(h)) * k1
        h = F.max_pool1d(F.pad(h, (1, 0)), 2, stride=1) * k1  # frame t: max of t-1 and t
        h = F.relu(self.proj1(h)) * k1
        h = self.proj2(h).transpose(1, 2) + x
        h = self.pre_highway(h)
        for layer in self.highways:
            transform, gate = layer(h).chunk(2, dim=-1)
            gate = torch.sigmoid(gate)
            h = gate * F.relu(transform) + (1 - gate) * h
        packed = nn.utils.rnn.pack_padded_sequence(h, lens.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.gru(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=frames)
        return out


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
