"""Training losses: masked spectral L1 + L2, stop-token BCE, guided attention; the non-autoregressive
converter's spectral and duration losses. Each model kind (vc/kinds/) runs its forward and picks its terms."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch.nn import functional as F

from vc.masks import make_pad_mask
from vc.model import Seq2SeqOutput, decoder_steps


class Losses(NamedTuple):
    total: torch.Tensor
    spectral: torch.Tensor  # L1 + L2, before and after the postnet
    stop: torch.Tensor
    guided_attention: torch.Tensor
    phonetic: torch.Tensor | None = None  # with train.phonetic_weight > 0 (in total, weighted)


def masked_spectral_loss(pred: torch.Tensor, tgt: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """L1 + L2 over the true frames only. pred, tgt: (B, T, D); lens: (B,).

    Where the target's timing is uncertain, L2 is minimised by the mean of the
    timings, a ramp across a transition; L1 by their median, a step. The L2 term
    outweighs L1 wherever the error passes 1 (in feature standard deviations),
    which is at the transitions.
    """
    valid = (~make_pad_mask(lens, tgt.shape[1])).unsqueeze(-1).to(pred.dtype)
    count = valid.sum() * tgt.shape[2]
    diff = (pred - tgt) * valid
    return (diff.abs().sum() + diff.square().sum()) / count


def stop_labels(lens: torch.Tensor, frames: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Labels and mask on the FRAME axis (B, frames): 1 on each item's last frame.

    With r > 1 the decoder emits one stop logit per frame of its group, so the
    label belongs to the last true frame, not to the last decoder step;
    indexing by step teaches the model to stop at a fraction of the length.
    """
    steps = torch.arange(frames, device=lens.device)[None, :]
    labels = (steps == (lens[:, None] - 1)).float()
    return labels, ~make_pad_mask(lens, frames)


def stop_loss(stop_logits: torch.Tensor, lens: torch.Tensor, pos_weight: float) -> torch.Tensor:
    labels, valid = stop_labels(lens, stop_logits.shape[1])
    weight = torch.tensor(pos_weight, device=stop_logits.device, dtype=stop_logits.dtype)
    loss = F.binary_cross_entropy_with_logits(
        stop_logits, labels.to(stop_logits.dtype), pos_weight=weight, reduction="none"
    )
    return (loss * valid).sum() / valid.sum()


def guided_attention_weights(
    dec_lens: torch.Tensor, enc_lens: torch.Tensor, sigma: float, dec_steps: int, enc_steps: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """W_ij = 1 - exp(-(j/N - i/T)^2 / (2 sigma^2)) (Tachibana et al. 2018), and its validity mask.

    Returns (B, dec_steps, enc_steps) weights and a bool mask, True inside each item's lengths.
    """
    i = torch.arange(dec_steps, device=dec_lens.device)[None, :, None] / dec_lens[:, None, None]
    j = torch.arange(enc_steps, device=enc_lens.device)[None, None, :] / enc_lens[:, None, None]
    weights = 1.0 - torch.exp(-((j - i) ** 2) / (2.0 * sigma**2))
    valid = (i < 1.0) & (j < 1.0)
    return weights, valid


def guided_attention_loss(
    alignments: torch.Tensor, dec_lens: torch.Tensor, enc_lens: torch.Tensor, sigma: float
) -> torch.Tensor:
    """Attention mass off the diagonal band: sum_j alpha_ij W_ij, averaged over valid decoder steps.

    Normalised per decoder step rather than per cell (as ESPnet does) so that
    the loss reads as a fraction in [0, 1] whatever the input length, and its
    weight need not grow with N to be felt.
    """
    weights, valid = guided_attention_weights(
        dec_lens, enc_lens, sigma, alignments.shape[1], alignments.shape[2]
    )
    return (alignments * weights * valid.to(alignments.dtype)).sum() / dec_lens.sum()


def compute_losses(
    out: Seq2SeqOutput,
    tgt: torch.Tensor,
    tgt_lens: torch.Tensor,
    reduction_factor: int,
    stop_pos_weight: float,
    guided_sigma: float,
    guided_weight: float,
) -> Losses:
    spectral = masked_spectral_loss(out.before, tgt, tgt_lens) + masked_spectral_loss(
        out.after, tgt, tgt_lens
    )
    stop = stop_loss(out.stop_logits, tgt_lens, stop_pos_weight)
    dec_lens = decoder_steps(tgt_lens, reduction_factor)
    if guided_weight > 0:
        guided = guided_attention_loss(out.alignments, dec_lens, out.enc_lens, guided_sigma)
    else:
        guided = tgt.new_zeros(())
    return Losses(spectral + stop + guided_weight * guided, spectral, stop, guided)


IGNORE = -100  # a frame without a phone label (padding)


def phonetic_loss(classifier: torch.nn.Module, mels: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of a phone classifier (vc/model/phone_classifier.py) on (B, T, n_mels) frames
    against (B, T') labels, IGNORE on padding (the shorter of T and T' decides): the phonetic loss
    (vc/training/phonetic.py)."""
    frames = min(mels.shape[1], labels.shape[1])
    logits = classifier(mels[:, :frames].float())
    return F.cross_entropy(logits.transpose(1, 2), labels[:, :frames], ignore_index=IGNORE)


def with_phonetic(losses: NamedTuple, critic, mels: torch.Tensor, batch, config) -> NamedTuple:
    """A converter's ``losses`` (with a ``phonetic`` field) plus train.phonetic_weight x the phonetic loss
    of its output ``mels`` against batch.phones; unchanged without a ``critic`` (the loss off)."""
    if critic is None:
        return losses
    phonetic = phonetic_loss(critic, mels, batch.phones)
    return losses._replace(total=losses.total + config.train.phonetic_weight * phonetic, phonetic=phonetic)


class SpectralLosses(NamedTuple):
    total: torch.Tensor
    spectral: torch.Tensor  # L1 + L2 before and after the postnet
    phonetic: torch.Tensor | None = None  # with train.phonetic_weight > 0 (in total, weighted)


class StudentLosses(NamedTuple):
    total: torch.Tensor
    spectral: torch.Tensor  # L1 + L2 before and after the postnet
    duration: torch.Tensor  # mean squared error of log(d + 1) over the true encoder steps
    phonetic: torch.Tensor | None = None  # with train.phonetic_weight > 0 (in total, weighted)


def duration_loss(
    log_durations: torch.Tensor, durations: torch.Tensor, enc_lens: torch.Tensor
) -> torch.Tensor:
    """MSE between predicted and extracted log(d + 1) (FastSpeech), over the true encoder steps."""
    valid = (~make_pad_mask(enc_lens, durations.shape[1])).to(log_durations.dtype)
    target = torch.log1p(durations.to(log_durations.dtype))
    return ((log_durations - target).square() * valid).sum() / valid.sum()
