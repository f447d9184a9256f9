"""The recognition-synthesis converter as a kind (vc/model/recognition_synthesis.py): the target learned
from the target.

Every other kind learns the target's frames from the source's, paired by an alignment (DTW, attention,
phones) uncertain frame by frame, and an L1-trained network learns the average of what it might pair.
This one trains on the target's own recordings: the run's phone recognizer (trained on both speakers'
frames, data.phones; vc/training/phonetic.py) reads each target utterance's content, and the
synthesizer learns to say it back in the target's frames, with the utterance's own intonation (pitch
features, vc/audio/pitch.py). The source recordings of the pairs train only
the recognizer. Its dev loss is the dev targets' resynthesis; its dev views show the dev sources
converted.
"""

from __future__ import annotations

import dataclasses

from vc.config import Config
from vc.errors import ConfigError
from vc.kinds.base import DevViews, ModelKind
from vc.kinds.losses import SpectralLosses, masked_spectral_loss, with_phonetic
from vc.masks import random_windows, take_frames
from vc.model.recognition_synthesis import RecognitionSynthesisVC
from vc.settings.kinds import ModelConfig, RecognitionSynthesisConfig


class RecognitionSynthesisKind(ModelKind):
    name = "recognition_synthesis"
    config = RecognitionSynthesisConfig
    network = RecognitionSynthesisVC
    postfilter_reads_input = False  # teacher-forced, its input is the target it must predict
    trains_on_crops = True  # content, pitch and frames share one timeline
    speaks_at_timing = True  # its content re-timed by an attention model's alignment (Converter timing)
    augments = "target"  # its content is read from the target's own frames

    def needs_recognizer(self, model: ModelConfig) -> bool:
        return True

    def needs_pitch(self, model: ModelConfig) -> bool:
        return True

    def check(self, config: Config) -> None:
        super().check(config)
        if not config.data.phones:
            raise ConfigError(
                "model.kind recognition_synthesis needs data.phones (the alignments of vc durations "
                "--phones): its phone recognizer learns from them"
            )

    def initialise(self, model, durations, recognizer=None) -> None:
        model.load_recognizer(recognizer)

    def fixed_content(self, model, batch):
        """The recognizer is frozen: without augmentation of what it hears (Batch.heard), every step
        would read the same content of an utterance again (13-17 % of a step on a CPU; docs/ablation.md,
        "The recognizer's content read once")."""
        return {"tgt_content": model.content(batch.tgt, batch.tgt_lens)}

    def losses(self, model, batch, config: Config, step: int | None, critic=None):
        """The target's frames from their own content: L1 + L2 before and after the postnet; with a
        critic, the phonetic loss on the output against the target's phones; with train.crop_frames,
        training steps read a random window of each utterance (the dev set reads them whole)."""
        window = None
        if step is not None and config.train.crop_frames > 0:
            window = random_windows(batch.tgt_lens, config.train.crop_frames, batch.tgt.shape[1])
        # The content of whole utterances (as conversion reads it), then each one's window.
        out = model(
            batch.tgt,
            batch.tgt_lens,
            batch.tgt_pitch,
            window=window,
            heard=batch.heard,
            content=batch.tgt_content,
        )
        if window is not None:
            batch = dataclasses.replace(
                batch,
                tgt=take_frames(batch.tgt, window),
                tgt_lens=batch.tgt_lens.clamp(max=window.shape[1]),
                phones=None if batch.phones is None else take_frames(batch.phones, window),
            )
        spectral = masked_spectral_loss(out.before, batch.tgt, batch.tgt_lens) + masked_spectral_loss(
            out.after, batch.tgt, batch.tgt_lens
        )
        return with_phonetic(SpectralLosses(spectral, spectral), critic, out.after, batch, config)

    def teacher_forced(self, model, src, src_lens, tgt, tgt_lens, durations, src_pitch=None, tgt_pitch=None):
        return model(tgt, tgt_lens, tgt_pitch)  # the target resynthesised: at its own timing

    def log_fixed_utterances(self, views: DevViews, model, batch, step: int) -> None:
        """Per fixed dev utterance: the target against the source converted (each at its own timing),
        and the conversion's audio."""
        from vc.plotting import mel_figure  # matplotlib: not on conversion's import path

        config, writer = views.config, views.writer
        free = model.inference(batch.src, batch.src_lens, config.inference, pitch=batch.src_pitch)
        waves, wave_lens = views.vocoder(views.target_stats.denormalize(free.after), free.lens)
        for k, utt_id in enumerate(batch.utt_ids):
            target = batch.tgt[k, : int(batch.tgt_lens[k])].cpu().numpy()
            converted = free.after[k, : int(free.lens[k])].float().cpu().numpy()
            writer.add_figure(f"valid/mel/{utt_id}", mel_figure(target, converted, utt_id), step)
            views.audio(utt_id, waves[k, : int(wave_lens[k])].float().cpu(), step)


RECOGNITION_SYNTHESIS = RecognitionSynthesisKind()
