"""The non-autoregressive converter trained adversarially (an experiment of issue 45, item 4).

An L1/L2-trained converter predicts the mean of what a frame could be, and the mean of neighbouring
envelopes is a blurred envelope: the words lost between the model and its vocoder ceiling are in the
envelope (docs/ablation.md, "Where the student's words go"). Here the converter's own loss also
rewards frames a discriminator takes for natural ones: a least-squares GAN over mel patches with
feature matching (Mao et al. 2017; Kumar et al., MelGAN, 2019), the post-filter's discriminator
(vc/model/postfilter.py) judging the converter's output directly instead of a second network's.

Both players train in one step with the trainer's one optimizer: the discriminator's loss reaches only
its own weights (the fake frames are detached), and the converter's adversarial terms pass through a
copy of the discriminator's weights that gets no gradient.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn
from torch.func import functional_call

from vc.config import Config, InferenceConfig, ModelConfig
from vc.kinds.nonautoregressive import NonAutoregressiveKind
from vc.model.nonautoregressive import NonAutoregressiveVC
from vc.model.postfilter import MelDiscriminator

WARMUP_STEPS = 400  # L1/L2 alone first: the discriminator meets a converter that already speaks
ADVERSARIAL_WEIGHT = 0.5
FEATURE_MATCHING_WEIGHT = 1.0
DISCRIMINATOR_STRIDE = 4  # frames per discriminator score


class AdversarialConverter(nn.Module):
    """The non-autoregressive converter (``generator``) and the discriminator trained beside it."""

    def __init__(self, n_mels: int, config: ModelConfig):
        super().__init__()
        self.generator = NonAutoregressiveVC(n_mels, config)
        self.discriminator = MelDiscriminator(n_mels)

    def forward(self, src, src_lens, durations):
        return self.generator(src, src_lens, durations)

    def inference(self, src, src_lens, config: InferenceConfig | None = None):
        return self.generator.inference(src, src_lens, config)


class AdversarialLosses(NamedTuple):
    total: torch.Tensor
    spectral: torch.Tensor
    duration: torch.Tensor
    adversarial: torch.Tensor  # the converter's least-squares term
    feature_matching: torch.Tensor
    discriminator: torch.Tensor


def _masked_mean(scores: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    return (scores * keep).sum() / keep.sum().clamp(min=1)


class AdversarialKind(NonAutoregressiveKind):
    name = "nonautoregressive_gan"
    network = AdversarialConverter

    def initialise(self, model, durations) -> None:
        super().initialise(model.generator, durations)

    def losses(self, model, batch, config: Config, step: int | None) -> AdversarialLosses:
        out = model.generator(batch.src, batch.src_lens, batch.durations)
        base = self.loss_terms(out, batch, config)
        zero = base.total.new_zeros(())
        if step is None or step < WARMUP_STEPS:  # dev losses stay those of the plain converter
            return AdversarialLosses(base.total, base.spectral, base.duration, zero, zero, zero)
        lens = (batch.tgt_lens + DISCRIMINATOR_STRIDE - 1) // DISCRIMINATOR_STRIDE
        real_scores, real_features = model.discriminator(batch.tgt)
        keep = (torch.arange(real_scores.shape[1], device=lens.device)[None] < lens[:, None]).float()
        fake_scores, _ = model.discriminator(out.after.detach())
        d_loss = _masked_mean((real_scores - 1).square(), keep) + _masked_mean(fake_scores.square(), keep)
        frozen = {name: p.detach() for name, p in model.discriminator.named_parameters()}
        g_scores, g_features = functional_call(model.discriminator, frozen, (out.after,))
        adversarial = _masked_mean((g_scores - 1).square(), keep)
        matching = sum(
            (f - r.detach()).abs().mean() for f, r in zip(g_features, real_features, strict=True)
        ) / len(g_features)
        total = base.total + ADVERSARIAL_WEIGHT * adversarial + FEATURE_MATCHING_WEIGHT * matching + d_loss
        return AdversarialLosses(total, base.spectral, base.duration, adversarial, matching, d_loss)

    def teacher_forced(self, model, src, src_lens, tgt, tgt_lens, durations):
        return model.generator(src, src_lens, durations)

    def prepare_for_conversion(self, model, inference: InferenceConfig) -> None:
        super().prepare_for_conversion(model.generator, inference)


ADVERSARIAL = AdversarialKind()
