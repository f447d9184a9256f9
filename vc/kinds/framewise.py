"""The frame-wise converter as a kind: one output frame per source frame (vc/model/framewise.py).

It trains on the target warped onto the source's timeline by the pair's durations (data.durations:
target frames per encoder step, from DTW or the attention model's alignments; any alignment `vc
durations` writes): source frame i of encoder step j reads the target frame at the same relative place
inside step j's run of target frames, one whole frame, never an average. Where the target is slower, some
of its frames are skipped; where it is faster, some repeat. Its networks after it (mel -> linear,
post-filter) learn at the target's timing, so its teacher-forced output is warped the other way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from vc.config import Config
from vc.kinds.base import DevViews, ModelKind
from vc.kinds.losses import SpectralLosses, masked_spectral_loss, with_phonetic
from vc.kinds.nonautoregressive import ParallelDecoderConfig
from vc.masks import make_pad_mask
from vc.model.framewise import FrameWiseOutput, FrameWiseVC, source_durations
from vc.model.nonautoregressive import runs

log = logging.getLogger(__name__)


def warp_index(from_durations: torch.Tensor, to_durations: torch.Tensor, frames: int):
    """Frames laid out in runs of ``from_durations`` (B, N) per step -> for each, the frame at the same
    relative place inside its step's run of ``to_durations``: the k-th of n reads frame
    start + floor((k + 0.5) / n * d) of the run of d; a run with no frame reads the frame after it.
    Returns a (B, frames) long tensor (indices past the other side's length are the caller's to clamp)."""
    step, place, length = runs(from_durations, frames)
    to_length = to_durations.gather(1, step)
    to_start = to_durations.cumsum(dim=1).gather(1, step) - to_length
    offset = ((place.float() + 0.5) / length.clamp(min=1).float() * to_length.float()).floor().long()
    return to_start + offset


def target_on_source(
    tgt: torch.Tensor, tgt_lens: torch.Tensor, durations: torch.Tensor, src_lens: torch.Tensor, factor: int
) -> torch.Tensor:
    """The target's frames at the source's timing (warp_index from the source's frames per step to the
    target's): one whole target frame per source frame.
    Shapes: tgt (B, T_tgt, D), tgt_lens (B,), durations (B, N), src_lens (B,) -> (B, T_src, D), T_src =
    max(src_lens), zero past each source length.
    """
    device = tgt.device
    frames = int(src_lens.max())
    durations = durations.long().to(device)
    per_step = source_durations(src_lens.to(device), durations.shape[1], factor)
    index = warp_index(per_step, durations, frames)
    index = torch.minimum(index, (tgt_lens.to(device) - 1).clamp(min=0)[:, None])
    out = tgt.gather(1, index[:, :, None].expand(-1, -1, tgt.shape[2]))
    keep = (~make_pad_mask(src_lens.to(device), frames)).unsqueeze(-1).to(tgt.dtype)
    return out * keep


def source_on_target(
    out: FrameWiseOutput, durations: torch.Tensor, src_lens: torch.Tensor, tgt_lens: torch.Tensor, factor: int
) -> FrameWiseOutput:
    """An output on the source's timeline warped onto the target's (warp_index the other way): one
    whole source frame per target frame.
    Shapes: out's frames (B, T_src, D); durations (B, N) -> frames (B, T_tgt, D), one-hot alignments
    (B, T_tgt, N), lens = tgt_lens."""
    device = out.after.device
    frames = int(tgt_lens.max())
    durations = durations.long().to(device)
    per_step = source_durations(src_lens.to(device), durations.shape[1], factor)
    index = warp_index(durations, per_step, frames)
    index = torch.minimum(index, (src_lens.to(device) - 1).clamp(min=0)[:, None])
    keep = (~make_pad_mask(tgt_lens.to(device), frames)).unsqueeze(-1)

    def warp(x: torch.Tensor) -> torch.Tensor:
        return x.gather(1, index[:, :, None].expand(-1, -1, x.shape[2])) * keep.to(x.dtype)

    return FrameWiseOutput(
        warp(out.before), warp(out.after), warp(out.alignments), tgt_lens.to(device), out.enc_lens
    )


@dataclass
class FrameWiseConfig(ParallelDecoderConfig):
    """The model section of kind framewise: the shared encoder and postnet, the parallel decoder."""

    kind: str = "framewise"


class FrameWiseKind(ModelKind):
    name = "framewise"
    config = FrameWiseConfig
    network = FrameWiseVC
    needs_durations = True  # they warp the target onto the source's timeline
    phonetic_labels = "source"  # its output frames are the source's

    def losses(self, model, batch, config: Config, step: int | None, critic=None) -> SpectralLosses:
        """Forward on the source's timeline; L1 + L2 against the target warped onto it; with a critic,
        the phonetic loss against the source's phones too."""
        out = model(batch.src, batch.src_lens)
        factor = config.model.encoder_reduction_factor
        target = target_on_source(batch.tgt, batch.tgt_lens, batch.durations, batch.src_lens, factor)
        spectral = masked_spectral_loss(out.before, target, batch.src_lens) + masked_spectral_loss(
            out.after, target, batch.src_lens
        )
        losses = SpectralLosses(spectral, spectral)
        return with_phonetic(losses, critic, out.after, batch, config)

    def teacher_forced(self, model, src, src_lens, tgt, tgt_lens, durations) -> FrameWiseOutput:
        """The output warped onto the target's timing by the durations it trained on."""
        factor = model.config.encoder_reduction_factor
        return source_on_target(model(src, src_lens), durations, src_lens, tgt_lens, factor)

    def log_fixed_utterances(self, views: DevViews, model, batch, step: int) -> None:
        """Per fixed dev utterance: the target warped onto the source's timeline against the conversion,
        and its audio."""
        from vc.plotting import mel_figure  # matplotlib: not on conversion's import path

        config, writer = views.config, views.writer
        free = model.inference(batch.src, batch.src_lens, config.inference)
        factor = config.model.encoder_reduction_factor
        target = target_on_source(batch.tgt, batch.tgt_lens, batch.durations, batch.src_lens, factor)
        waves, wave_lens = views.vocoder(views.target_stats.denormalize(free.after), free.lens)
        for k, utt_id in enumerate(batch.utt_ids):
            frames = int(batch.src_lens[k])
            warped = target[k, :frames].cpu().numpy()
            converted = free.after[k, : int(free.lens[k])].float().cpu().numpy()
            writer.add_figure(f"valid/mel/{utt_id}", mel_figure(warped, converted, utt_id), step)
            views.audio(utt_id, waves[k, : int(wave_lens[k])].float().cpu(), step)


FRAMEWISE = FrameWiseKind()
