"""The source's frames read at the converted output's timing, through the attention.

The decoder builds each output frame from an attention-weighted average of
encoder annotations about five source frames wide, and that average blurs the
speech sounds' transitions in time (docs/ablation.md, "Where the words go").
The source itself has them sharp. Its frames, re-timed by where the attention
looks, carry those transitions to a post-filter (vc.model.postfilter) beside
the converted frames. Vocoded as they are, the source frames at the output's
timing keep far more words than the converted frames (docs/ablation.md, "The
post-filter reads the source at the output's timing").

Where the attention looks is its centroid: for decoder step d, the expected
encoder step sum_n alpha[d, n] * n. Decoder step d emits output frames
d*r .. d*r + r-1, so its centroid sits at output frame d*r + (r-1)/2 and
frames between centroids interpolate linearly (the ends hold their value).
Encoder step n stacks source frames n*f .. n*f + f-1 (centre n*f + (f-1)/2).
Each output frame takes the nearest source frame whole, not a mix of two, so
a transition stays as sharp as it was.

The same re-timing lets a frame-synchronous converter speak at an attention model's timing (Timing):
the recognition-synthesis converter's content features, re-timed by the attention model's alignment,
and the pitch the attention model gave its own output, say the converter's words at the rhythm and
intonation the attention model learned from the pairs (docs/ablation.md, "The attention model's
timing").
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vc.masks import make_pad_mask


def aligned_source(
    src: torch.Tensor,
    src_lens: torch.Tensor,
    alignments: torch.Tensor,
    enc_lens: torch.Tensor,
    out_lens: torch.Tensor,
    reduction_factor: int,
    encoder_reduction_factor: int,
) -> torch.Tensor:
    """Source frames at the output's timing; zeros past each output's length.

    Shapes:
        src: (B, T_src, D), src_lens: (B,)
        alignments: (B, T_dec, N) attention weights, enc_lens: (B,)
        out_lens: (B,) output frames, T_dec >= ceil(out_lens / reduction_factor)
        returns: (B, T_out, D), T_out = max(out_lens)
    """
    _, dec_steps, enc_steps = alignments.shape
    frames = int(out_lens.max())
    device = alignments.device
    positions = torch.arange(enc_steps, device=device, dtype=torch.float32)
    valid_enc = positions[None, :] < enc_lens[:, None].to(device)  # padding weights are 0; make sure
    centroid = (alignments.float() * valid_enc[:, None, :]) @ positions  # (B, T_dec)
    r, f = reduction_factor, encoder_reduction_factor
    steps = torch.div(out_lens.to(device) + r - 1, r, rounding_mode="floor").clamp(max=dec_steps)  # (B,)
    step = (torch.arange(frames, device=device, dtype=torch.float32) - (r - 1) / 2) / r  # (T_out,)
    step = torch.minimum(step[None, :].clamp(min=0), (steps - 1).clamp(min=0)[:, None].float())
    lower = step.floor().long()
    upper = torch.minimum(lower + 1, (steps - 1).clamp(min=0)[:, None])
    weight = step - lower
    encoder_pos = centroid.gather(1, lower) * (1 - weight) + centroid.gather(1, upper) * weight
    source_pos = encoder_pos * f + (f - 1) / 2
    last = (src_lens.to(device) - 1).clamp(min=0)[:, None].float()
    index = torch.minimum(source_pos.clamp(min=0), last).round().long()  # (B, T_out)
    out = src.gather(1, index[:, :, None].expand(-1, -1, src.shape[2]))
    keep = ~make_pad_mask(out_lens.to(device), frames)
    return out * keep[:, :, None].to(out.dtype)


@dataclass
class Timing:
    """An attention model's conversion of a batch, as another converter speaks at it: where each of its
    output frames reads the source, and the pitch features (vc/audio/pitch.py) of its own output.

    Shapes:
        alignments: (B, T_dec, N), enc_lens: (B,), lens: (B,) output frames
        pitch: (B, max(lens), 2), zeros past each length
    """

    alignments: torch.Tensor
    enc_lens: torch.Tensor
    lens: torch.Tensor
    reduction_factor: int
    encoder_reduction_factor: int
    pitch: torch.Tensor

    def retime(self, src: torch.Tensor, src_lens: torch.Tensor) -> torch.Tensor:
        """(B, T_src, D) frames on the source's timeline -> (B, max(lens), D) at this timing."""
        return aligned_source(
            src,
            src_lens,
            self.alignments,
            self.enc_lens,
            self.lens,
            self.reduction_factor,
            self.encoder_reduction_factor,
        )
