"""Encoder: mel frames -> annotations h_1..h_N.

Frame stacking shortens the input (speech is long; halving it speeds attention
and helps it align), a prenet and a conv stack (Tacotron 2, Shen et al. 2018)
add local context, and a bidirectional LSTM (Bahdanau et al. 2015) makes each
annotation the concatenation of the forward and backward states at its frame.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from vc.masks import make_pad_mask
from vc.model.layers import MaskedConvStack, Prenet
from vc.settings.kinds import ModelConfig


def stack_frames(x: torch.Tensor, lens: torch.Tensor, factor: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T, D) -> (B, ceil(T / factor), factor * D); lengths round up."""
    if factor == 1:
        return x, lens
    batch, frames, dim = x.shape
    pad = -frames % factor
    x = nn.functional.pad(x, (0, 0, 0, pad))
    return x.reshape(batch, (frames + pad) // factor, factor * dim), (lens + factor - 1) // factor


class Encoder(nn.Module):
    """Shapes:
    src: (B, T_src, n_mels), src_lens: (B,)
    returns annotations (B, N, 2 * hidden_dim), enc_lens (B,), N = ceil(T_src / factor)
    """

    def __init__(
        self,
        n_mels: int,
        encoder_reduction_factor: int,
        encoder_prenet_dim: int,
        encoder_conv_layers: int,
        encoder_conv_channels: int,
        encoder_conv_kernel: int,
        encoder_hidden_dim: int,
        encoder_dropout: float,
    ):
        super().__init__()
        self.factor = encoder_reduction_factor
        self.prenet = Prenet(n_mels * self.factor, [encoder_prenet_dim], encoder_dropout)
        self.convs = MaskedConvStack(
            encoder_prenet_dim,
            encoder_conv_channels,
            encoder_conv_channels,
            encoder_conv_layers,
            encoder_conv_kernel,
            encoder_dropout,
        )
        self.rnn = nn.LSTM(encoder_conv_channels, encoder_hidden_dim, batch_first=True, bidirectional=True)
        self.output_dim = 2 * encoder_hidden_dim

    @classmethod
    def from_config(cls, n_mels: int, config: ModelConfig) -> Encoder:
        """The encoder both model kinds build from the model.encoder_* keys."""
        c = config
        return cls(
            n_mels,
            c.encoder_reduction_factor,
            c.encoder_prenet_dim,
            c.encoder_conv_layers,
            c.encoder_conv_channels,
            c.encoder_conv_kernel,
            c.encoder_hidden_dim,
            c.encoder_dropout,
        )

    def forward(self, src: torch.Tensor, src_lens: torch.Tensor):
        # Zero the padding first: stacking folds a padding frame into the last
        # stacked frame of an odd-length item, and normalised padding is not zero.
        src = src.masked_fill(make_pad_mask(src_lens, src.shape[1]).unsqueeze(-1), 0.0)
        x, enc_lens = stack_frames(src, src_lens, self.factor)
        pad_mask = make_pad_mask(enc_lens, x.shape[1])
        x = self.convs(self.prenet(x), pad_mask)
        # Packing keeps the backward direction from reading padding, so a batch
        # encodes each utterance exactly as it would be encoded alone.
        packed = pack_padded_sequence(x, enc_lens.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return out, enc_lens
