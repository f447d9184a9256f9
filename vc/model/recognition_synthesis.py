"""The recognition-synthesis converter: the target's frames from content features, trained on the target's
own recordings (phonetic-posteriorgram conversion: Sun et al., ICME 2016).

    log-mels of any speaker (normalised by that speaker's statistics)
        -> phone recognizer (vc/model/phone_classifier.py: trained on both speakers' frames, frozen)
        -> content features per frame: the recognizer's last hidden layer (model.content: hidden)
        + pitch features per frame (vc/audio/pitch.py: log-F0 as a z-score, voicing): in training the
          target's in her own range, at conversion the input's in its utterance's range
        -> the parallel synthesizer (encoder, parallel decoder, postnet; vc/model/parallel_synthesizer.py),
           one output frame per input frame
        -> the target's log-mels

Training reads the target's own frames and predicts them (vc/kinds/recognition_synthesis.py): input
and output come from the same recording, so no alignment pairs frames of two speakers, and the output
learns no average of what an uncertain alignment might pair. Conversion reads the source's frames: what
the recognizer hears of them, in the target's voice.
"""

from __future__ import annotations

import torch
from torch import nn

from vc.audio.pitch import FEATURES as PITCH_FEATURES
from vc.masks import take_frames
from vc.model.aligned_source import Timing
from vc.model.content import ReadsContent, frozen_recognizer
from vc.model.parallel_synthesizer import ParallelSynthesizer
from vc.settings.inference import InferenceConfig
from vc.settings.kinds import ModelConfig


class RecognitionSynthesisVC(ReadsContent, nn.Module):
    """The frozen recognizer and the synthesizer behind it.

    Shapes: mels (B, T, n_mels), lens (B,), pitch (B, T, 2) -> mels (B, T, n_mels). The recognizer's
    weights come from the run's phone classifier (load_recognizer); they are part of the network's state,
    so a checkpoint converts on its own.
    """

    def __init__(self, n_mels: int, config: ModelConfig):
        super().__init__()
        self.config = config
        self.recognizer = frozen_recognizer(n_mels)
        width = self.recognizer.out.in_features
        self.synthesizer = ParallelSynthesizer(n_mels, config, n_in=width + PITCH_FEATURES)

    def inputs(
        self, mels: torch.Tensor, lens: torch.Tensor, pitch: torch.Tensor, content=None, window=None
    ) -> torch.Tensor:
        """The synthesizer's input: content features (``content``, (B, T, width), when already read) and
        the pitch features beside them (B, T, width + 2); with ``window`` (B, W) frame indices
        (vc.masks.random_windows) only those frames' (B, W, width + 2), each row's content read over its
        window and the frames around it that the recognizer reaches (read_content)."""
        pitch = pitch[:, : mels.shape[1]].to(mels.dtype)
        if content is None:
            content = self.content(mels, lens, window)
        elif window is not None:
            content = take_frames(content, window)
        if window is not None:
            pitch = take_frames(pitch, window)
        return torch.cat([content.to(mels.dtype), pitch], dim=-1)

    def forward(
        self,
        mels: torch.Tensor,
        lens: torch.Tensor,
        pitch: torch.Tensor,
        window=None,
        heard=None,
        content=None,
    ):
        """The input resynthesised (training, teacher forcing): its own frames are the target.
        ParallelOutput. ``window`` (B, W) frame indices (vc.masks.random_windows): only each row's window
        is synthesised, from the content the recognizer reads there of the whole utterance. ``heard``
        (B, T, n_mels): the frames whose content is read, where not ``mels`` themselves (augmented in
        training: vc/training/augment.py); ``content`` (B, T, width): what the recognizer reads of them,
        where already read (training reads it once per recording, vc.training.data.Batch.content)."""
        if heard is not None and content is not None:
            raise ValueError("heard and content are two readings of one input: pass one")
        inputs = self.inputs(mels if heard is None else heard, lens, pitch, content, window)
        if window is not None:
            lens = lens.clamp(max=window.shape[1])
        return self.synthesizer(inputs, lens)

    @torch.no_grad()
    def inference(
        self, mels, lens, config: InferenceConfig | None = None, pitch=None, timing: Timing | None = None
    ):
        """Conversion (inference.speed as the parallel synthesizer's); ``pitch``: the input's pitch
        features (vc/audio/pitch.py), (B, T, 2). With ``timing`` (an attention model's conversion of the
        same inputs), the input's content re-timed by its alignment, with its output's pitch: frames at
        its timing (timing.lens), not the input's."""
        inputs = self.inputs(mels, lens, pitch)
        if timing is None:
            return self.synthesizer.inference(inputs, lens, config)
        content = timing.retime(inputs[..., :-PITCH_FEATURES], lens)
        inputs = torch.cat([content, timing.pitch.to(content.dtype)], dim=-1)
        return self.synthesizer.inference(inputs, timing.lens, config)
