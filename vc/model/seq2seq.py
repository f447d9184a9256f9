"""The whole model: encoder, attention decoder, postnet."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn
from torch.profiler import record_function

from vc.masks import make_pad_mask
from vc.model.attention import build_attention
from vc.model.decoder import Decoder
from vc.model.encoder import Encoder
from vc.model.postnet import Postnet
from vc.settings.inference import InferenceConfig
from vc.settings.kinds import ModelConfig


class Seq2SeqOutput(NamedTuple):
    before: torch.Tensor  # (B, T, n_mels) decoder mels
    after: torch.Tensor  # (B, T, n_mels) after the postnet
    stop_logits: torch.Tensor  # (B, T)
    alignments: torch.Tensor  # (B, T_dec, N)
    lens: torch.Tensor  # (B,) output frames
    enc_lens: torch.Tensor  # (B,) encoder steps


class Seq2SeqVC(nn.Module):
    """Tacotron-style sequence-to-sequence voice conversion on normalised log-mels.

    Shapes:
        src: (B, T_src, n_in), src_lens: (B,); tgt: (B, T_tgt, n_mels), tgt_lens: (B,); ``n_in``: the
        input's features per frame, n_mels by default (the attention model over content feeds it the
        recognizer's content features, vc/model/content.py)
    """

    def __init__(self, n_mels: int, config: ModelConfig, n_in: int | None = None):
        super().__init__()
        c = config
        self.config = config
        self.encoder = Encoder.from_config(n_in or n_mels, c)
        attention = build_attention(
            c.attention_type,
            c.attention_rnn_dim,
            self.encoder.output_dim,
            c.attention_dim,
            c.attention_location_filters,
            c.attention_location_kernel,
        )
        self.decoder = Decoder(
            n_mels,
            self.encoder.output_dim,
            attention,
            c.reduction_factor,
            c.decoder_prenet_dim,
            c.decoder_prenet_dropout,
            c.attention_rnn_dim,
            c.decoder_rnn_dim,
        )
        self.postnet = Postnet(
            n_mels, c.postnet_layers, c.postnet_channels, c.postnet_kernel, c.postnet_dropout
        )

    def encode(self, src, src_lens):
        memory, enc_lens = self.encoder(src, src_lens)
        pad_mask = make_pad_mask(enc_lens, memory.shape[1])
        keys = self.decoder.attention.prepare(memory)  # once per utterance, not per step
        return memory, keys, pad_mask, enc_lens

    def _postnet(self, before, lens):
        return before + self.postnet(before, make_pad_mask(lens, before.shape[1]))

    def forward(self, src, src_lens, tgt, tgt_lens) -> Seq2SeqOutput:
        """Teacher-forced forward pass for training."""
        memory, keys, pad_mask, enc_lens = self.encode(src, src_lens)
        out = self.decoder(memory, keys, pad_mask, tgt, tgt_lens)
        after = self._postnet(out.frames, tgt_lens)
        return Seq2SeqOutput(out.frames, after, out.stop_logits, out.alignments, tgt_lens, enc_lens)

    @torch.no_grad()
    def inference(self, src, src_lens, config: InferenceConfig | None = None) -> Seq2SeqOutput:
        """Free-running conversion of a batch; always terminates (see InferenceConfig)."""
        config = config or InferenceConfig()
        with record_function("encoder"):  # stage labels for torch.profiler (bench/convert_rtf.py)
            memory, keys, pad_mask, enc_lens = self.encode(src, src_lens)
        min_frames = (src_lens.float() * config.min_ratio).long()
        max_frames = (src_lens.float() * config.max_ratio).long().clamp(min=1)
        window = (config.window_backward, config.window_forward) if config.use_monotonic_window else None
        with record_function("decoder"):
            out = self.decoder.inference(
                memory,
                keys,
                pad_mask,
                min_frames,
                max_frames,
                config.stop_threshold,
                window,
                config.attention_sharpness,
            )
        with record_function("postnet"):
            after = self._postnet(out.frames, out.lens)
            after = after * ~make_pad_mask(out.lens, after.shape[1]).unsqueeze(-1)
        return Seq2SeqOutput(out.frames, after, out.stop_logits, out.alignments, out.lens, enc_lens)


def decoder_steps(frame_lens: torch.Tensor, reduction_factor: int) -> torch.Tensor:
    """Frames -> decoder steps, ceil(frames / r)."""
    return (frame_lens + reduction_factor - 1) // reduction_factor
