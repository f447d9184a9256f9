"""Phonetic supervision: CTC losses on the transcripts that make the model keep the words.

The spectral loss rewards a prediction that is close to the target on
average, and averaged speech is blurred speech: the converted output aligns
well but a recogniser misses most of its words (docs/ablation.md). Two
auxiliary losses ask for the words themselves, using the corpus transcripts
that parallel corpora ship anyway (training only; conversion needs no text):

- encoder: a linear CTC head on the encoder's annotations, so they carry the
  linguistic content (text supervision, Zhang et al. 2019);
- output: a small character recogniser (vc/model/recognizer.py) learns to read
  the TARGET speaker's natural mels, and its CTC loss on the model's
  predicted mels, with the recogniser's weights held fixed for that term,
  pushes the prediction toward speech that can be read. The recogniser learns
  only from natural speech, so it cannot learn to read the blur instead.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F

from vc.losses import Losses, teacher_forced_losses
from vc.model.recognizer import CharacterRecognizer
from vc.text import BLANK, VOCABULARY_SIZE


def ctc_loss(
    logits: torch.Tensor, lens: torch.Tensor, text: torch.Tensor, text_lens: torch.Tensor
) -> torch.Tensor:
    """Mean per-character CTC loss. logits: (B, T, V); text: (sum of text_lens,) concatenated ids."""
    log_probs = logits.float().log_softmax(-1).transpose(0, 1)  # (T, B, V)
    return F.ctc_loss(log_probs, text, lens, text_lens, blank=BLANK, reduction="mean", zero_infinity=True)


class PhoneticSupervision(nn.Module):
    def __init__(self, n_mels: int, encoder_dim: int, encoder_weight: float, output_weight: float):
        super().__init__()
        self.encoder_weight, self.output_weight = encoder_weight, output_weight
        self.encoder_head = nn.Linear(encoder_dim, VOCABULARY_SIZE) if encoder_weight > 0 else None
        self.recognizer = CharacterRecognizer(n_mels, VOCABULARY_SIZE) if output_weight > 0 else None

    def forward(self, out, batch) -> dict[str, torch.Tensor]:
        """Named CTC losses of a teacher-forced output (vc.model.Seq2SeqOutput) and its vc.data.Batch."""
        text = (batch.text, batch.text_lens)
        losses = {}
        if self.encoder_head is not None:
            losses["encoder"] = ctc_loss(self.encoder_head(out.memory), out.enc_lens, *text)
        if self.recognizer is not None:
            losses["recognizer"] = ctc_loss(*self.recognizer(batch.tgt, batch.tgt_lens), *text)
            fixed = {name: p.detach() for name, p in self.recognizer.named_parameters()}
            losses["output"] = ctc_loss(
                *functional_call(self.recognizer, fixed, (out.after, out.lens)), *text
            )
        return losses

    def total(self, losses: dict[str, torch.Tensor]) -> torch.Tensor:
        """The weighted sum; the recogniser's own loss moves only the recogniser, so it has weight 1."""
        weights = {"encoder": self.encoder_weight, "recognizer": 1.0, "output": self.output_weight}
        return sum(weights[name] * loss for name, loss in losses.items())


class TrainingObjective(nn.Module):
    """The model and its training-only phonetic heads as one module, so that DDP syncs them all.

    forward(batch, guided_weight) -> (Losses with the phonetic losses in .total, {name: phonetic loss})
    """

    def __init__(self, model: nn.Module, config):
        super().__init__()
        self.model = model
        self.config = config
        t = config.train
        self.phonetic = (
            PhoneticSupervision(
                config.audio.n_mels, model.encoder.output_dim, t.encoder_ctc_weight, t.output_ctc_weight
            )
            if t.encoder_ctc_weight > 0 or t.output_ctc_weight > 0
            else None
        )

    def forward(self, batch, guided_weight: float) -> tuple[Losses, dict[str, torch.Tensor]]:
        losses, out = teacher_forced_losses(self.model, batch, self.config, guided_weight, return_output=True)
        if self.phonetic is None:
            return losses, {}
        phonetic = self.phonetic(out, batch)
        return losses._replace(total=losses.total + self.phonetic.total(phonetic)), phonetic


def uses_text(config) -> bool:
    return config.train.encoder_ctc_weight > 0 or config.train.output_ctc_weight > 0
