"""What a recognizer hears: content features for the networks that read them, and the attention model
over content.

    log-mels of any speaker (normalised by that speaker's statistics)
        -> the run's phone recognizer (vc/model/phone_classifier.py; trained on both speakers' frames,
           frozen): its last hidden layer per frame, the content
        -> beside it the input's pitch features (vc/audio/pitch.py: log-F0 as a z-score, voicing), and
           with model.encoder_input both the log-mels themselves

The recognition-synthesis converter (vc/model/recognition_synthesis.py) synthesises the target from the
content of her own recordings. The attention model (model.encoder_input content or both) reads the
source's content through its encoder and learns the pairs, as SCENT does with a recognizer's bottleneck
features (Zhang, Ling et al., TASLP 2019): what the speaker said, in a form two voices share, where the
attention must otherwise learn to read the source's spectra from about a thousand pairs.
"""

from __future__ import annotations

import torch
from torch import nn

from vc.audio.pitch import FEATURES as PITCH_FEATURES
from vc.masks import make_pad_mask, take_frames
from vc.model.phone_classifier import PHONES, PhoneClassifier
from vc.model.seq2seq import Seq2SeqOutput, Seq2SeqVC
from vc.settings.inference import InferenceConfig
from vc.settings.kinds import ModelConfig


def frozen_recognizer(n_mels: int) -> PhoneClassifier:
    """A phone classifier of the default shape whose weights come from the run's (load_state_dict)."""
    return PhoneClassifier(n_mels, len(PHONES)).requires_grad_(False)


def read_content(
    recognizer: PhoneClassifier, mels: torch.Tensor, lens: torch.Tensor, window: torch.Tensor | None = None
) -> torch.Tensor:
    """(B, T, n_mels), (B,) -> (B, T, width) content features; the padding reads as zeros, so an item's
    features are the same alone or in a batch. ``window`` (B, W) consecutive frame indices
    (vc.masks.random_windows) -> (B, W, width): the same features at those frames, read from the window
    and the frames the recognizer's convolutions reach around it (a training crop of 128 frames reads 144
    of each row, not the batch's longest)."""
    if window is None:
        keep = (~make_pad_mask(lens, mels.shape[1])).unsqueeze(-1).to(mels.dtype)
        with torch.no_grad():
            return recognizer.hidden(mels, keep)
    reach = sum(conv.kernel_size[0] // 2 for conv in recognizer.convs)
    index = window[:, :1] + torch.arange(-reach, window.shape[1] + reach, device=window.device)
    inside = (index >= 0) & (index < lens.to(index.device)[:, None])
    frames = take_frames(mels, index.clamp(0, mels.shape[1] - 1))
    with torch.no_grad():
        return recognizer.hidden(frames, inside.unsqueeze(-1).to(mels.dtype))[
            :, reach : reach + window.shape[1]
        ]


class ReadsContent:
    """What a network with a frozen recognizer (``self.recognizer``, frozen_recognizer) does with it."""

    recognizer: PhoneClassifier

    def load_recognizer(self, classifier: PhoneClassifier) -> None:
        """Take the weights of a trained phone classifier (of the default shape)."""
        self.recognizer.load_state_dict(classifier.state_dict())

    def train(self, mode: bool = True):
        super().train(mode)
        self.recognizer.eval()  # frozen: its dropout never runs
        return self

    def content(
        self, mels: torch.Tensor, lens: torch.Tensor, window: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(B, T, n_mels), (B,) -> (B, T, width) content features, or (B, W, width) at ``window``'s frames
        (read_content)."""
        return read_content(self.recognizer, mels, lens, window)


class ContentSeq2SeqVC(ReadsContent, Seq2SeqVC):
    """The attention model whose encoder reads the recognizer's content of the source and its pitch
    (model.encoder_input content), and the source's log-mels beside them (both).

    Shapes: src (B, T_src, n_mels) normalised log-mels, src_lens (B,), pitch (B, T_src, 2); the encoder
    reads (B, T_src, width + 2 [+ n_mels]). The recognizer's weights are part of the network's state
    (load_recognizer before training), so a checkpoint converts on its own.
    """

    def __init__(self, n_mels: int, config: ModelConfig):
        recognizer = frozen_recognizer(n_mels)
        self.with_mels = config.encoder_input == "both"
        width = recognizer.out.in_features + PITCH_FEATURES + (n_mels if self.with_mels else 0)
        super().__init__(n_mels, config, n_in=width)
        self.recognizer = recognizer

    def inputs(self, src, src_lens, pitch, content=None) -> torch.Tensor:
        """The encoder's input frames: content (``content`` where already read), pitch [, the mels]."""
        content = self.content(src, src_lens) if content is None else content.to(src.dtype)
        parts = [content, pitch[:, : src.shape[1]].to(src.dtype)]
        if self.with_mels:
            parts.append(src)
        return torch.cat(parts, dim=-1)

    def forward(self, src, src_lens, tgt, tgt_lens, pitch=None, content=None) -> Seq2SeqOutput:
        """Teacher-forced forward pass; ``content`` (B, T_src, width): the recognizer's reading of ``src``
        where already read (training reads it once per recording)."""
        return super().forward(self.inputs(src, src_lens, pitch, content), src_lens, tgt, tgt_lens)

    @torch.no_grad()
    def inference(
        self, src, src_lens, config: InferenceConfig | None = None, pitch=None, content=None
    ) -> Seq2SeqOutput:
        """Free-running conversion; ``pitch`` and ``content`` as forward's."""
        return super().inference(self.inputs(src, src_lens, pitch, content), src_lens, config)


def build_attention_model(n_mels: int, config: ModelConfig) -> nn.Module:
    """The attention model model.encoder_input names: over log-mels (Seq2SeqVC) or content."""
    return Seq2SeqVC(n_mels, config) if config.encoder_input == "mels" else ContentSeq2SeqVC(n_mels, config)
