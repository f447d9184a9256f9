"""Tacotron decoder: prenet, attention RNN, two residual decoder RNN layers.

One ``step`` function drives teacher-forced training, free-running inference
and the tests; its recurrent state is an explicit value (DecoderState), never
hidden on the module (Wang et al. 2017; Shen et al. 2018; residual decoder
layers as in Wu et al. 2016).

    s_i   = LSTM_att(s_{i-1}, [prenet(y_{i-1}), c_{i-1}])
    c_i, alpha_i = attention(s_i, h, alpha_{i-1}, sum_{k<i} alpha_k)
    x_i   = W [s_i, c_i]
    d^1_i = LSTM_1(d^1_{i-1}, x_i) + x_i
    d^2_i = LSTM_2(d^2_{i-1}, d^1_i) + d^1_i
    r frames and r stop logits = linear([d^2_i, c_i])
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from vc.masks import make_pad_mask
from vc.model.attention import Attention
from vc.model.layers import Prenet


class DecoderState(NamedTuple):
    attention_h: torch.Tensor  # (B, attention_rnn_dim)
    attention_c: torch.Tensor
    decoder1_h: torch.Tensor  # (B, decoder_rnn_dim)
    decoder1_c: torch.Tensor
    decoder2_h: torch.Tensor
    decoder2_c: torch.Tensor
    context: torch.Tensor  # (B, memory_dim)
    alpha: torch.Tensor  # (B, N)
    cum_alpha: torch.Tensor  # (B, N)


class DecoderOutput(NamedTuple):
    frames: torch.Tensor  # (B, T, n_mels), before the postnet
    stop_logits: torch.Tensor  # (B, T), one per frame
    alignments: torch.Tensor  # (B, T_dec, N), T_dec = ceil(T / r)
    lens: torch.Tensor  # (B,) frames


class Decoder(nn.Module):
    def __init__(
        self,
        n_mels: int,
        memory_dim: int,
        attention: Attention,
        reduction_factor: int,
        decoder_prenet_dim: int,
        decoder_prenet_dropout: float,
        attention_rnn_dim: int,
        decoder_rnn_dim: int,
    ):
        super().__init__()
        self.n_mels = n_mels
        self.reduction_factor = reduction_factor
        self.prenet = Prenet(n_mels, [decoder_prenet_dim] * 2, decoder_prenet_dropout, always_dropout=True)
        self.attention_rnn = nn.LSTMCell(decoder_prenet_dim + memory_dim, attention_rnn_dim)
        self.attention = attention
        self.input_proj = nn.Linear(attention_rnn_dim + memory_dim, decoder_rnn_dim)
        self.rnn1 = nn.LSTMCell(decoder_rnn_dim, decoder_rnn_dim)
        self.rnn2 = nn.LSTMCell(decoder_rnn_dim, decoder_rnn_dim)
        self.frame_proj = nn.Linear(decoder_rnn_dim + memory_dim, reduction_factor * n_mels)
        self.stop_proj = nn.Linear(decoder_rnn_dim + memory_dim, reduction_factor)

    def initial_state(self, memory: torch.Tensor) -> DecoderState:
        batch, length, _ = memory.shape
        att = memory.new_zeros(batch, self.attention_rnn.hidden_size)
        dec = memory.new_zeros(batch, self.rnn1.hidden_size)
        zeros = memory.new_zeros(batch, length)
        return DecoderState(
            att, att, dec, dec, dec, dec, memory.new_zeros(batch, memory.shape[2]), zeros, zeros
        )

    def step(self, prenet_out, state: DecoderState, memory, keys, pad_mask, sharpness: float = 1.0):
        """One decoder step. prenet_out: (B, prenet_dim) = prenet(y_{i-1}); sharpness: see Attention.

        Returns the new state and the output features [d^2_i, c_i] (B, decoder_rnn_dim + memory_dim).
        """
        att_h, att_c = self.attention_rnn(
            torch.cat([prenet_out, state.context], dim=-1), (state.attention_h, state.attention_c)
        )
        context, alpha = self.attention(
            att_h, memory, keys, pad_mask, state.alpha, state.cum_alpha, sharpness
        )
        x = self.input_proj(torch.cat([att_h, context], dim=-1))
        dec1_h, dec1_c = self.rnn1(x, (state.decoder1_h, state.decoder1_c))
        dec1_out = dec1_h + x
        dec2_h, dec2_c = self.rnn2(dec1_out, (state.decoder2_h, state.decoder2_c))
        dec2_out = dec2_h + dec1_out
        new_state = DecoderState(
            att_h, att_c, dec1_h, dec1_c, dec2_h, dec2_c, context, alpha, state.cum_alpha + alpha
        )
        return new_state, torch.cat([dec2_out, context], dim=-1)

    def project(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, S, H) step outputs -> frames (B, S * r, n_mels) and stop logits (B, S * r)."""
        batch, steps, _ = hidden.shape
        frames = self.frame_proj(hidden).reshape(batch, steps * self.reduction_factor, self.n_mels)
        return frames, self.stop_proj(hidden).reshape(batch, steps * self.reduction_factor)

    def forward(self, memory, keys, pad_mask, tgt: torch.Tensor, tgt_lens: torch.Tensor) -> DecoderOutput:
        """Teacher forcing: step i reads the last ground-truth frame of group i - 1."""
        r = self.reduction_factor
        steps = math.ceil(tgt.shape[1] / r)
        previous = tgt[:, r - 1 :: r][:, : steps - 1]  # (B, steps - 1, n_mels)
        inputs = torch.cat([tgt.new_zeros(tgt.shape[0], 1, self.n_mels), previous], dim=1)
        prenet_out = self.prenet(inputs)  # all steps at once: it does not depend on the state
        state = self.initial_state(memory)
        hiddens, alignments = [], []
        for i in range(steps):
            state, hidden = self.step(prenet_out[:, i], state, memory, keys, pad_mask)
            hiddens.append(hidden)
            alignments.append(state.alpha)
        frames, stop_logits = self.project(torch.stack(hiddens, dim=1))
        frames, stop_logits = frames[:, : tgt.shape[1]], stop_logits[:, : tgt.shape[1]]
        return DecoderOutput(frames, stop_logits, torch.stack(alignments, dim=1), tgt_lens)

    @torch.no_grad()
    def inference(
        self,
        memory,
        keys,
        pad_mask,
        min_frames: torch.Tensor,
        max_frames: torch.Tensor,
        stop_threshold: float = 0.5,
        window: tuple[int, int] | None = None,
        sharpness: float = 1.0,
    ) -> DecoderOutput:
        """Free-running decoding of a batch until every item stops.

        An item stops at the first frame whose stop probability passes the
        threshold at or after min_frames, and at max_frames at the latest, so
        decoding always terminates. ``window=(backward, forward)`` restricts
        attention to positions near the previous peak (monotonic window);
        ``sharpness`` scales the attention energies (see Attention.forward).
        """
        r = self.reduction_factor
        batch = memory.shape[0]
        device = memory.device
        lens = torch.zeros(batch, dtype=torch.long, device=device)
        done = torch.zeros(batch, dtype=torch.bool, device=device)
        offsets = torch.arange(r, device=device)
        positions = torch.arange(memory.shape[1], device=device)
        state = self.initial_state(memory)
        frame = memory.new_zeros(batch, self.n_mels)
        outputs, stops, alignments = [], [], []
        for i in range(math.ceil(int(max_frames.max()) / r)):
            mask = pad_mask
            if window is not None:
                peak = state.alpha.argmax(dim=-1, keepdim=True)  # 0 before the first step
                outside = (positions < peak - window[0]) | (positions > peak + window[1])
                mask = pad_mask | outside
            state, hidden = self.step(self.prenet(frame), state, memory, keys, mask, sharpness)
            frames, stop_logits = self.project(hidden.unsqueeze(1))
            index = i * r + offsets  # (r,) frame indices of this group
            stop = (torch.sigmoid(stop_logits) > stop_threshold) & (index >= min_frames[:, None])
            stop = stop | (index >= max_frames[:, None] - 1)
            first = torch.where(stop.any(dim=1), stop.float().argmax(dim=1), r)  # r = no stop here
            newly = ~done & (first < r)
            lens = torch.where(newly, i * r + first + 1, lens)
            done = done | newly
            outputs.append(frames)
            stops.append(stop_logits)
            alignments.append(state.alpha)
            frame = frames[:, -1]
            if bool(done.all()):
                break
        frames, stop_logits = torch.cat(outputs, dim=1), torch.cat(stops, dim=1)
        length = int(lens.max())
        keep = (~make_pad_mask(lens.to(device), length)).unsqueeze(-1)
        frames = frames[:, :length] * keep
        return DecoderOutput(frames, stop_logits[:, :length], torch.stack(alignments, dim=1), lens)
