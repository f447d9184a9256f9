"""The parallel synthesizer: one output frame per input frame, so no timing is guessed.

    input frames -> encoder -> h_1..h_N (N = ceil(T / f), f = encoder_reduction_factor)
        -> each h_j back to its f input frames -> parallel decoder (residual conv blocks)
        -> postnet -> log-mels on the input's timeline

The recognition-synthesis converter's synthesizer (vc/model/recognition_synthesis.py), reading content
and pitch features. The layers after the
encoder are the non-autoregressive converter's (vc.model.nonautoregressive), at durations of f frames
per step. ``inference.speed`` changes the rate after the network.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn
from torch.profiler import record_function

from vc.model.encoder import Encoder
from vc.model.nonautoregressive import add_frame_decoder, decode_frames
from vc.settings.inference import InferenceConfig
from vc.settings.kinds import ModelConfig


class ParallelOutput(NamedTuple):
    before: torch.Tensor  # (B, T, n_mels) decoder mels
    after: torch.Tensor  # (B, T, n_mels) after the postnet
    alignments: torch.Tensor  # (B, T, N) one-hot: the encoder step each output frame reads
    lens: torch.Tensor  # (B,) output frames
    enc_lens: torch.Tensor  # (B,) encoder steps


def source_durations(src_lens: torch.Tensor, steps: int, factor: int) -> torch.Tensor:
    """(B,) input frames -> (B, steps) input frames per encoder step: ``factor`` each, fewer in the
    last step of an odd length, 0 past it; each row sums to its length."""
    start = torch.arange(steps, device=src_lens.device) * factor
    return (src_lens[:, None] - start[None, :]).clamp(min=0, max=factor)


def resample_frames(
    frames: torch.Tensor, lens: torch.Tensor, speed: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row of ``frames`` (B, T, D) at ``speed`` x its rate (> 1: fewer frames): output frame k takes
    the nearest input frame, whole (a mix of two would blur what the network made sharp).
    Returns (B, T', D) zero past each new length, and the lengths (B,), at least one frame."""
    if speed == 1.0:
        return frames, lens
    new_lens = (lens.float() / speed).round().long().clamp(min=1)
    k = torch.arange(int(new_lens.max()), device=frames.device)
    index = ((k[None, :].float() + 0.5) * speed).floor().long()
    index = torch.minimum(index, (lens - 1).clamp(min=0)[:, None])
    out = frames.gather(1, index[:, :, None].expand(-1, -1, frames.shape[2]))
    keep = (k[None, :] < new_lens[:, None]).to(frames.dtype)
    return out * keep[:, :, None], new_lens


class ParallelSynthesizer(nn.Module):
    """Encoder, the encoder states back at the input frames, parallel conv decoder, postnet.

    Shapes: src (B, T_src, n_in), src_lens (B,) -> mels (B, T_src, n_mels) at the input's timing;
    ``n_in``: the input's features per frame (the recognition-synthesis converter's content and pitch
    features, vc/model/recognition_synthesis.py), n_mels by default.
    """

    def __init__(self, n_mels: int, config: ModelConfig, n_in: int | None = None):
        super().__init__()
        self.config = config
        self.encoder = Encoder.from_config(n_in or n_mels, config)
        add_frame_decoder(self, n_mels, self.encoder.output_dim, config)

    def forward(self, src: torch.Tensor, src_lens: torch.Tensor) -> ParallelOutput:
        """Training and teacher forcing: one output frame per input frame."""
        with record_function("encoder"):  # stage labels for torch.profiler (bench/convert_rtf.py)
            memory, enc_lens = self.encoder(src, src_lens)
        factor = self.config.encoder_reduction_factor
        durations = source_durations(src_lens.to(memory.device), memory.shape[1], factor)
        before, after, alignments, lens = decode_frames(self, memory, durations)
        return ParallelOutput(before, after, alignments, lens, enc_lens)

    @torch.no_grad()
    def inference(self, src, src_lens, config: InferenceConfig | None = None) -> ParallelOutput:
        """Conversion on the input's timeline; inference.speed > 1 speaks faster (fewer frames)."""
        config = config or InferenceConfig()
        out = self(src, src_lens)
        if config.speed == 1.0:
            return out
        before, _ = resample_frames(out.before, out.lens, config.speed)
        after, lens = resample_frames(out.after, out.lens, config.speed)
        alignments, _ = resample_frames(out.alignments, out.lens, config.speed)
        return ParallelOutput(before, after, alignments, lens, out.enc_lens)
