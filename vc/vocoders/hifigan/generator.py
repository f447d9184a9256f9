"""HiFi-GAN's generator (Kong, Kim and Bae, NeurIPS 2020, "HiFi-GAN: Generative Adversarial Networks for
Efficient and High Fidelity Speech Synthesis"), version 1 by default.

A stack of transposed convolutions upsamples mel frames to samples (8 x 8 x 2 x 2 = 256 samples per
frame in V1); after each, the multi-receptive-field fusion (MRF) module averages residual blocks with
different kernels (3, 7, 11), each block three pairs of a dilated convolution (dilations 1, 3, 5) and
an undilated one, leaky ReLU (slope 0.1) before each (the paper's figure 1, "ResBlock1"). A last
convolution and tanh give the waveform.

Weight normalisation is a training device: checkpoints that store it (``weight_g``/``weight_v``, or
torch's parametrisations) are folded into plain weights on loading (``fold_weight_norm``), so this
module holds ordinary convolutions.

Fully convolutional: a frame's samples depend on RECEPTIVE_FRAMES frames on each side, no more, so a
long input vocoded in chunks with that much context each side gives the whole input's samples
(vc/vocoders/hifigan/vocoder.py).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

LEAKY_SLOPE = 0.1


class ResBlock(nn.Module):
    """x -> x + conv(lrelu(conv_dilated(lrelu(x)))), once per dilation (the paper's ResBlock1)."""

    def __init__(self, channels: int, kernel: int, dilations: tuple[int, ...]):
        super().__init__()
        self.convs1 = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, dilation=d, padding=d * (kernel - 1) // 2)
            for d in dilations
        )
        self.convs2 = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, padding=(kernel - 1) // 2) for _ in dilations
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for dilated, plain in zip(self.convs1, self.convs2, strict=True):
            x = x + plain(F.leaky_relu(dilated(F.leaky_relu(x, LEAKY_SLOPE)), LEAKY_SLOPE))
        return x


class HifiganGenerator(nn.Module):
    """Natural-log mel (B, n_mels, frames) -> waveform (B, 1, frames * hop) in [-1, 1].

    Shapes:
        mel: (B, n_mels, frames), channels first as HiFi-GAN's checkpoints expect
        returns: (B, 1, frames * prod(upsample_rates))
    """

    def __init__(
        self,
        n_mels: int = 80,
        upsample_rates: tuple[int, ...] = (8, 8, 2, 2),
        upsample_kernel_sizes: tuple[int, ...] = (16, 16, 4, 4),
        upsample_initial_channel: int = 512,
        resblock_kernel_sizes: tuple[int, ...] = (3, 7, 11),
        resblock_dilation_sizes: tuple[tuple[int, ...], ...] = ((1, 3, 5), (1, 3, 5), (1, 3, 5)),
    ):
        super().__init__()
        self.hparams = dict(
            n_mels=n_mels,
            upsample_rates=list(upsample_rates),
            upsample_kernel_sizes=list(upsample_kernel_sizes),
            upsample_initial_channel=upsample_initial_channel,
            resblock_kernel_sizes=list(resblock_kernel_sizes),
            resblock_dilation_sizes=[list(d) for d in resblock_dilation_sizes],
        )
        self.hop_length = 1
        for rate in upsample_rates:
            self.hop_length *= rate
        self.conv_pre = nn.Conv1d(n_mels, upsample_initial_channel, 7, padding=3)
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        channels = upsample_initial_channel
        for rate, kernel in zip(upsample_rates, upsample_kernel_sizes, strict=True):
            self.ups.append(
                nn.ConvTranspose1d(channels, channels // 2, kernel, rate, padding=(kernel - rate) // 2)
            )
            channels //= 2
            for res_kernel, dilations in zip(resblock_kernel_sizes, resblock_dilation_sizes, strict=True):
                self.resblocks.append(ResBlock(channels, res_kernel, tuple(dilations)))
        self.conv_post = nn.Conv1d(channels, 1, 7, padding=3)
        self.blocks_per_level = len(resblock_kernel_sizes)

    def forward(self, mel: torch.Tensor, bfloat16_levels: int = 0) -> torch.Tensor:
        """``bfloat16_levels``: the input convolution and this many upsampling levels compute in
        bfloat16 (autocast), the later ones in float32."""
        device = mel.device.type
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bfloat16_levels > 0):
            x = self.conv_pre(mel)  # (B, C, frames)
        n = self.blocks_per_level
        for level, up in enumerate(self.ups):
            with torch.autocast(device, dtype=torch.bfloat16, enabled=level < bfloat16_levels):
                x = up(F.leaky_relu(x, LEAKY_SLOPE))  # (B, C / 2, frames * rate so far)
                blocks = self.resblocks[level * n : (level + 1) * n]
                x = sum(block(x) for block in blocks) / n  # multi-receptive-field fusion
            x = x.float()
        # The reference implementation's last activation uses leaky ReLU's default slope (0.01).
        return torch.tanh(self.conv_post(F.leaky_relu(x)))


def receptive_frames(generator: HifiganGenerator) -> int:
    """Frames on each side of a frame that can change its samples (an upper bound).

    Each convolution at a level upsampled by ``scale`` samples per frame reaches (kernel - 1) / 2 *
    dilation of its samples, i.e. that over ``scale`` frames; transposed convolutions reach about
    kernel / rate input positions.
    """
    h = generator.hparams
    reach = 3.0  # conv_pre, kernel 7
    scale = 1
    for rate, kernel in zip(h["upsample_rates"], h["upsample_kernel_sizes"], strict=True):
        reach += kernel / rate / scale
        scale *= rate
        per_level = max(
            sum(d * (k - 1) // 2 + (k - 1) // 2 for d in dilations)
            for k, dilations in zip(h["resblock_kernel_sizes"], h["resblock_dilation_sizes"], strict=True)
        )
        reach += per_level / scale
    reach += 3 / scale  # conv_post
    return int(reach) + 1


def fold_weight_norm(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A state dict with weight normalisation (``name.weight_g``/``name.weight_v``, or
    ``name.parametrizations.weight.original0/1``) -> plain ``name.weight`` = g * v / ||v||.

    The norm is over every dimension but the first, as torch.nn.utils.weight_norm's default (dim 0)
    computes it for Conv1d and ConvTranspose1d alike.
    """
    pairs = (
        (".weight_g", ".weight_v"),
        (".parametrizations.weight.original0", ".parametrizations.weight.original1"),
    )
    folded = {}
    for key, value in state.items():
        dotted = "." + key  # a module's own parameters have no stem: "weight_g"
        if any(dotted.endswith(v) for _, v in pairs):
            continue
        for g_suffix, v_suffix in pairs:
            if dotted.endswith(g_suffix):
                stem = dotted[: -len(g_suffix)]
                v = state[(stem + v_suffix)[1:]]
                norm = v.flatten(1).norm(dim=1).view(-1, *([1] * (v.dim() - 1)))
                folded[(stem + ".weight")[1:]] = value * v / norm
                break
        else:
            folded[key] = value
    return folded
