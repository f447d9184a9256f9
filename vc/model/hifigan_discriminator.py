"""HiFi-GAN's discriminators (Kong, Kim and Bae, NeurIPS 2020, section 2.2 and figure 2), for fine-tuning
a generator (vc/training/hifigan.py): the multi-period discriminator (MPD) and the multi-scale one (MSD).

MPD: for each period p in (2, 3, 5, 7, 11) the waveform is folded into a 2-D map of width p (samples
p apart in one column) and read by 2-D convolutions with kernels (5, 1): each sub-discriminator sees
one periodic structure. MSD: 1-D grouped convolutions over the waveform at three scales (raw, average
pooled x2, x4). Both return per sub-discriminator a score map and the feature maps after every layer
(the feature-matching loss compares them). Weight normalisation throughout, spectral normalisation on
MSD's raw-scale sub-discriminator, as in the paper.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.parametrizations import spectral_norm, weight_norm

LEAKY_SLOPE = 0.1
PERIODS = (2, 3, 5, 7, 11)

Scores = list[torch.Tensor]  # one score map per sub-discriminator, each (B, ...)
Features = list[list[torch.Tensor]]  # per sub-discriminator, the feature maps of its layers


def read_through(
    layers: nn.ModuleList, out: nn.Module, x: torch.Tensor
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A sub-discriminator's pass: each layer then leaky ReLU, the output layer; its scores (B, -1) and
    every layer's map (the output's too)."""
    features = []
    for layer in layers:
        x = F.leaky_relu(layer(x), LEAKY_SLOPE)
        features.append(x)
    x = out(x)
    features.append(x)
    return x.flatten(1), features


def scaled(channels: int, width: float) -> int:
    """A layer's channels at ``width`` times the paper's (at least 8: small ones for tests)."""
    return max(8, round(channels * width))


class PeriodDiscriminator(nn.Module):
    """The waveform folded by ``period``: (B, 1, T) -> (B, 1, T / period, period) -> 2-D convolutions."""

    CHANNELS = (32, 128, 512, 1024, 1024)

    def __init__(self, period: int, width: float = 1.0):
        super().__init__()
        self.period = period
        layers = []
        previous = 1
        for k, channels in enumerate(self.CHANNELS):
            stride = 1 if k == len(self.CHANNELS) - 1 else 3
            channels = scaled(channels, width)
            layers.append(weight_norm(nn.Conv2d(previous, channels, (5, 1), (stride, 1), padding=(2, 0))))
            previous = channels
        self.layers = nn.ModuleList(layers)
        self.out = weight_norm(nn.Conv2d(previous, 1, (3, 1), padding=(1, 0)))

    def forward(self, wave: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        batch, _, length = wave.shape
        if length % self.period:  # reflect-pad to a whole number of periods
            wave = F.pad(wave, (0, self.period - length % self.period), mode="reflect")
        return read_through(self.layers, self.out, wave.view(batch, 1, -1, self.period))


class ScaleDiscriminator(nn.Module):
    """Grouped 1-D convolutions over the waveform (B, 1, T)."""

    # (in, out, kernel, stride, groups)
    LAYERS = (
        (1, 128, 15, 1, 1),
        (128, 128, 41, 2, 4),
        (128, 256, 41, 2, 16),
        (256, 512, 41, 4, 16),
        (512, 1024, 41, 4, 16),
        (1024, 1024, 41, 1, 16),
        (1024, 1024, 5, 1, 1),
    )

    def __init__(self, spectral: bool = False, width: float = 1.0):
        super().__init__()
        norm = spectral_norm if spectral else weight_norm
        layers = []
        for a, b, k, s, g in self.LAYERS:
            a, b = (1 if a == 1 else scaled(a, width)), scaled(b, width)
            groups = min(g, a // 8 or 1, b // 8)  # the paper's groups at full width
            layers.append(norm(nn.Conv1d(a, b, k, s, groups=groups, padding=(k - 1) // 2)))
        self.layers = nn.ModuleList(layers)
        self.out = norm(nn.Conv1d(scaled(1024, width), 1, 3, padding=1))

    def forward(self, wave: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        return read_through(self.layers, self.out, wave)


class MultiPeriodDiscriminator(nn.Module):
    """One PeriodDiscriminator per period. Shapes: wave (B, 1, T) -> (scores, features)."""

    def __init__(self, periods: tuple[int, ...] = PERIODS, width: float = 1.0):
        super().__init__()
        self.discriminators = nn.ModuleList(PeriodDiscriminator(p, width) for p in periods)

    def forward(self, wave: torch.Tensor) -> tuple[Scores, Features]:
        results = [d(wave) for d in self.discriminators]
        return [r[0] for r in results], [r[1] for r in results]


class MultiScaleDiscriminator(nn.Module):
    """ScaleDiscriminators on the raw waveform and on it average-pooled once and twice (kernel 4, stride 2).
    Shapes: wave (B, 1, T) -> (scores, features)."""

    def __init__(self, scales: int = 3, width: float = 1.0):
        super().__init__()
        self.discriminators = nn.ModuleList(
            ScaleDiscriminator(spectral=k == 0, width=width) for k in range(scales)
        )

    def forward(self, wave: torch.Tensor) -> tuple[Scores, Features]:
        scores, features = [], []
        for k, discriminator in enumerate(self.discriminators):
            if k:
                wave = F.avg_pool1d(wave, 4, 2, padding=2)
            score, maps = discriminator(wave)
            scores.append(score)
            features.append(maps)
        return scores, features


def discriminator_loss(real: Scores, fake: Scores) -> torch.Tensor:
    """Least squares: real scores towards 1, generated ones towards 0, summed over sub-discriminators."""
    return sum(
        ((1 - r.float()) ** 2).mean() + (f.float() ** 2).mean() for r, f in zip(real, fake, strict=True)
    )


def generator_loss(fake: Scores) -> torch.Tensor:
    """Least squares: generated scores towards 1."""
    return sum(((1 - f.float()) ** 2).mean() for f in fake)


def feature_loss(real: Features, fake: Features) -> torch.Tensor:
    """Feature matching: mean |real - generated| of every layer's map, summed (the real maps are targets)."""
    return sum(
        (r.detach().float() - f.float()).abs().mean()
        for real_maps, fake_maps in zip(real, fake, strict=True)
        for r, f in zip(real_maps, fake_maps, strict=True)
    )
