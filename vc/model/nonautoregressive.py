"""The non-autoregressive converter: every output frame from the source content at its own position.

    source mels -> encoder -> h_1..h_N
        durations d_1..d_N (training: from the attention model's alignments; conversion: predicted)
        -> length regulator: h_j repeated d_j times -> parallel decoder (residual conv blocks)
        -> postnet -> log-mels at the target's timing

FastSpeech (Ren et al. 2019) for text-to-speech; for voice conversion with
durations from an autoregressive teacher's attention, Hayashi et al.,
"Non-autoregressive sequence-to-sequence voice conversion", ICASSP 2021.
No recurrence runs over output frames, so no output frame is an average of
where an attention happens to look: the measured cause of the attention
model's lost words (docs/ablation.md, "Where the words go").

The encoder is the attention model's (frame stacking, prenet, convolutions,
bidirectional LSTM); durations count target frames per encoder step, so they
sum to the target length exactly.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F
from torch.profiler import record_function

from vc.masks import make_pad_mask
from vc.model.encoder import Encoder
from vc.model.layers import dropout
from vc.model.postnet import Postnet
from vc.settings.inference import InferenceConfig
from vc.settings.kinds import ModelConfig


class NonAutoregressiveOutput(NamedTuple):
    before: torch.Tensor  # (B, T, n_mels) decoder mels
    after: torch.Tensor  # (B, T, n_mels) after the postnet
    log_durations: torch.Tensor  # (B, N) predicted log(d + 1)
    durations: torch.Tensor  # (B, N) the durations the output was expanded with
    alignments: torch.Tensor  # (B, T, N) one-hot: the encoder step each output frame reads
    lens: torch.Tensor  # (B,) output frames
    enc_lens: torch.Tensor  # (B,) encoder steps


def runs(durations: torch.Tensor, frames: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Frames 0..frames-1 laid out as runs of durations[:, j] frames for step j: each frame's step, its
    place inside its step's run (0, 1, ...) and that run's length. Frames past a row's sum take its
    last step. Shapes: durations (B, N) non-negative integers -> three (B, frames) long tensors."""
    ends = durations.cumsum(dim=1)  # (B, N): one past the last frame of step j
    t = torch.arange(frames, device=durations.device)
    step = torch.searchsorted(ends, t.expand(len(ends), -1).contiguous(), right=True)
    step = step.clamp(max=durations.shape[1] - 1)
    length = durations.gather(1, step)
    return step, t[None, :] - (ends.gather(1, step) - length), length


def length_regulate(
    memory: torch.Tensor, durations: torch.Tensor, max_frames: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Repeat encoder step j durations[:, j] times (FastSpeech's length regulator).

    Shapes:
        memory: (B, N, D); durations: (B, N) non-negative integers, 0 on padding
        returns: expanded (B, T, D) zero past each length, index (B, T) of the encoder step
        each frame reads, position (B, T) in [0, 1) of the frame inside its step's run, lens (B,)
    """
    durations = durations.long().clamp(min=0)
    lens = durations.sum(dim=1)
    frames = int(lens.max()) if max_frames is None else max_frames
    frames = max(frames, 1)
    index, place, length = runs(durations, frames)
    position = place.clamp(min=0).to(memory.dtype) / length.clamp(min=1).to(memory.dtype)
    keep = (~make_pad_mask(lens.to(memory.device), frames)).to(memory.dtype)
    expanded = memory.gather(1, index[:, :, None].expand(-1, -1, memory.shape[2])) * keep[:, :, None]
    return expanded, index, position * keep, lens


class ResidualConvBlock(nn.Module):
    """x + dropout(conv(relu(conv(layer_norm(x))))), padding zeroed so a batch item computes as alone."""

    def __init__(self, channels: int, kernel: int, dropout_rate: float):
        super().__init__()
        self.norm = nn.LayerNorm(channels)
        self.conv1 = nn.Conv1d(channels, channels, kernel, padding=kernel // 2)
        self.conv2 = nn.Conv1d(channels, channels, kernel, padding=kernel // 2)
        self.dropout = dropout_rate

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """x: (B, T, C); keep: (B, T, 1), 1 on true frames."""
        y = self.norm(x).transpose(1, 2)
        y = F.relu(self.conv1(y * keep.transpose(1, 2)))
        y = self.conv2(dropout(y, self.dropout, self.training) * keep.transpose(1, 2))
        return (x + dropout(y.transpose(1, 2), self.dropout, self.training)) * keep


class DurationPredictor(nn.Module):
    """Conv layers on the encoder states -> log(d + 1) per encoder step (FastSpeech).

    Shapes: memory (B, N, D), pad_mask (B, N) -> (B, N), 0 on padding.
    """

    def __init__(self, in_dim: int, channels: int, layers: int, kernel: int, dropout_rate: float):
        super().__init__()
        self.inp = nn.Linear(in_dim, channels)
        self.blocks = nn.ModuleList(ResidualConvBlock(channels, kernel, dropout_rate) for _ in range(layers))
        self.out = nn.Linear(channels, 1)

    def forward(self, memory: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        keep = (~pad_mask).unsqueeze(-1).to(memory.dtype)
        x = self.inp(memory) * keep
        for block in self.blocks:
            x = block(x, keep)
        return self.out(x).squeeze(-1) * keep.squeeze(-1)


class NonAutoregressiveVC(nn.Module):
    """Encoder, duration predictor, length regulator, parallel conv decoder, postnet.

    Shapes:
        src: (B, T_src, n_mels), src_lens: (B,); durations: (B, N) target frames per
        encoder step (N = ceil(T_src / encoder_reduction_factor)), 0 on padding
    """

    def __init__(self, n_mels: int, config: ModelConfig):
        super().__init__()
        c = config
        self.config = config
        self.encoder = Encoder.from_config(n_mels, c)
        self.duration_predictor = DurationPredictor(
            self.encoder.output_dim,
            c.duration_predictor_channels,
            c.duration_predictor_layers,
            c.duration_predictor_kernel,
            c.parallel_decoder_dropout,
        )
        add_frame_decoder(self, n_mels, self.encoder.output_dim, c)

    def _decode(self, memory, enc_lens, log_durations, durations, max_frames=None):
        before, after, alignments, lens = decode_frames(self, memory, durations, max_frames)
        return NonAutoregressiveOutput(before, after, log_durations, durations, alignments, lens, enc_lens)

    def forward(self, src, src_lens, durations) -> NonAutoregressiveOutput:
        """Training and teacher forcing: the output takes the given durations' timing."""
        memory, enc_lens = self.encoder(src, src_lens)
        pad_mask = make_pad_mask(enc_lens, memory.shape[1])
        log_durations = self.duration_predictor(memory, pad_mask)
        return self._decode(memory, enc_lens, log_durations, durations.masked_fill(pad_mask, 0))

    @torch.no_grad()
    def inference(self, src, src_lens, config: InferenceConfig | None = None) -> NonAutoregressiveOutput:
        """Conversion at the predicted timing; inference.speed > 1 speaks faster (fewer frames)."""
        config = config or InferenceConfig()
        with record_function("encoder"):  # stage labels for torch.profiler (bench/convert_rtf.py)
            memory, enc_lens = self.encoder(src, src_lens)
        with record_function("durations"):
            pad_mask = make_pad_mask(enc_lens, memory.shape[1])
            log_durations = self.duration_predictor(memory, pad_mask)
            durations = predicted_durations(log_durations, pad_mask, config.speed)
            # The same bounds as the attention model's decode: at least one frame, at most max_ratio x.
            max_frames = (src_lens.float() * config.max_ratio).long().clamp(min=1)
            durations = cap_durations(durations, max_frames)
        return self._decode(memory, enc_lens, log_durations, durations)


def add_frame_decoder(module: nn.Module, n_mels: int, memory_dim: int, config: ModelConfig) -> None:
    """The parallel decoder's layers as attributes of ``module`` (inp, blocks, norm, proj, postnet): the
    converters that expand encoder steps into frames share them (decode_frames), and their checkpoints
    keep the same parameter names."""
    c = config
    dim = c.parallel_decoder_channels
    # The frame's place inside its encoder step's run (start 0 .. end ~1) joins the repeated state,
    # so the decoder can move through a step instead of holding it.
    module.inp = nn.Linear(memory_dim + 1, dim)
    module.blocks = nn.ModuleList(
        ResidualConvBlock(dim, c.parallel_decoder_kernel, c.parallel_decoder_dropout)
        for _ in range(c.parallel_decoder_layers)
    )
    module.norm = nn.LayerNorm(dim)
    module.proj = nn.Linear(dim, n_mels)
    module.postnet = Postnet(
        n_mels, c.postnet_layers, c.postnet_channels, c.postnet_kernel, c.postnet_dropout
    )


def decode_frames(module: nn.Module, memory: torch.Tensor, durations: torch.Tensor, max_frames=None):
    """Encoder states (B, N, D) repeated by ``durations`` (B, N) -> the layers add_frame_decoder gave
    ``module`` -> (before, after) (B, T, n_mels), one-hot alignments (B, T, N), lens (B,)."""
    with record_function("decoder"):
        expanded, index, position, lens = length_regulate(memory, durations, max_frames)
        keep = (~make_pad_mask(lens, expanded.shape[1])).unsqueeze(-1).to(expanded.dtype)
        x = module.inp(torch.cat([expanded, position.unsqueeze(-1)], dim=-1)) * keep
        for block in module.blocks:
            x = block(x, keep)
        before = module.proj(module.norm(x)) * keep
    with record_function("postnet"):
        after = (before + module.postnet(before, keep.squeeze(-1) == 0)) * keep
    alignments = F.one_hot(index, memory.shape[1]).to(memory.dtype) * keep
    return before, after, alignments, lens


def predicted_durations(log_durations: torch.Tensor, pad_mask: torch.Tensor, speed: float) -> torch.Tensor:
    """log(d + 1) -> integer frames per encoder step, divided by the speed factor; at least one frame
    per utterance (its first step gets it when everything rounds to zero)."""
    frames = ((log_durations.float().exp() - 1.0).clamp(min=0) / speed).round().long()
    frames = frames.masked_fill(pad_mask, 0)
    empty = frames.sum(dim=1) == 0
    frames[:, 0] += empty.long()
    return frames


def cap_durations(durations: torch.Tensor, max_frames: torch.Tensor) -> torch.Tensor:
    """Trim each row's durations from its end so they sum to at most max_frames (B,)."""
    ends = durations.cumsum(dim=1)
    return (
        torch.minimum(ends, max_frames[:, None]) - torch.minimum(ends - durations, max_frames[:, None])
    ).clamp(min=0)
