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
from vc.kinds.alignment import diagonal_ratio, focus_rate
from vc.kinds.attention import ATTENTION
from vc.kinds.base import DevViews, ModelKind
from vc.kinds.losses import SpectralLosses, compute_losses, masked_spectral_loss, with_phonetic
from vc.masks import random_windows, take_frames
from vc.model.recognition_synthesis import CONTENTS, DECODERS, RecognitionSynthesisVC
from vc.settings.inference import InferenceConfig
from vc.settings.kinds import ModelConfig, RecognitionSynthesisConfig


class RecognitionSynthesisKind(ModelKind):
    name = "recognition_synthesis"
    config = RecognitionSynthesisConfig
    network = RecognitionSynthesisVC
    postfilter_reads_input = False  # teacher-forced, its input is the target it must predict
    phonetic_loss = True  # it learns the target's frames at their own timing
    trains_on_crops = True  # the parallel decoder's: content, pitch and frames share one timeline
    augments = "target"  # its content is read from the target's own frames

    def needs_recognizer(self, model: ModelConfig) -> bool:
        return True

    def needs_pitch(self, model: ModelConfig) -> bool:
        return True

    def check(self, config: Config) -> None:
        super().check(config)
        if config.model.encoder_input != "mels" or config.model.self_steps:
            raise ConfigError(
                "model.encoder_input and model.self_steps are the attention model's: the "
                "recognition-synthesis converter always reads content and trains on the target alone"
            )
        if config.model.decoder not in DECODERS:
            raise ConfigError(
                f"model.decoder must be one of {', '.join(DECODERS)}, got {config.model.decoder!r}"
            )
        if config.model.decoder == "attention" and config.train.phonetic_weight > 0:
            raise ConfigError(
                "train.phonetic_weight needs model.decoder parallel (its frames at the target's timing)"
            )
        if config.model.decoder == "attention" and config.train.crop_frames > 0:
            raise ConfigError(
                "train.crop_frames needs model.decoder parallel (the attention decoder learns where an "
                "utterance stops); set it to 0"
            )
        if config.model.content not in CONTENTS:
            raise ConfigError(
                f"model.content must be one of {', '.join(CONTENTS)}, got {config.model.content!r}"
            )
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
        training steps read a random window of each utterance (the dev set reads them whole). The
        attention decoder adds the attention model's stop and guided-attention losses (its guide weighs 1
        on the dev set)."""
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
        if config.model.decoder == "attention":
            m = config.model
            guide = 1.0 if step is None else m.guided_attention_weight
            return compute_losses(
                out, batch.tgt, batch.tgt_lens, m.reduction_factor, m.stop_pos_weight,
                m.guided_attention_sigma, guide,
            )  # fmt: skip
        spectral = masked_spectral_loss(out.before, batch.tgt, batch.tgt_lens) + masked_spectral_loss(
            out.after, batch.tgt, batch.tgt_lens
        )
        return with_phonetic(SpectralLosses(spectral, spectral), critic, out.after, batch, config)

    def prepare_for_conversion(self, model, inference: InferenceConfig) -> None:
        if model.config.decoder == "attention":
            ATTENTION.prepare_for_conversion(model.synthesizer, inference)

    def frames_per_row(self, config: ModelConfig) -> int:
        return config.reduction_factor if config.decoder == "attention" else 1

    def teacher_forced(self, model, src, src_lens, tgt, tgt_lens, durations, src_pitch=None, tgt_pitch=None):
        return model(tgt, tgt_lens, tgt_pitch)  # the target resynthesised: at its own timing

    def log_fixed_utterances(self, views: DevViews, model, batch, step: int) -> None:
        """Per fixed dev utterance: the target against the source converted (each at its own timing),
        and the conversion's audio; through the attention decoder also its free-running alignment over
        the source's content (figure, evolution strip, focus rate and diagonal)."""
        from vc.plotting import alignment_figure, mel_figure  # matplotlib: not on conversion's import path

        config, writer = views.config, views.writer
        free = model.inference(batch.src, batch.src_lens, config.inference, pitch=batch.src_pitch)
        attention = config.model.decoder == "attention"
        if attention:
            rows = self.alignment_rows(free.lens, config.model)
            writer.add_scalar(
                "valid/align/focus_rate", float(focus_rate(free.alignments, rows, free.enc_lens).mean()), step
            )
            writer.add_scalar(
                "valid/align/diagonal",
                float(diagonal_ratio(free.alignments, rows, free.enc_lens).mean()),
                step,
            )
        waves, wave_lens = views.vocoder(views.target_stats.denormalize(free.after), free.lens)
        for k, utt_id in enumerate(batch.utt_ids):
            target = batch.tgt[k, : int(batch.tgt_lens[k])].cpu().numpy()
            converted = free.after[k, : int(free.lens[k])].float().cpu().numpy()
            writer.add_figure(f"valid/mel/{utt_id}", mel_figure(target, converted, utt_id), step)
            views.audio(utt_id, waves[k, : int(wave_lens[k])].float().cpu(), step)
            if attention:
                aligned = free.alignments[k, : int(rows[k]), : int(free.enc_lens[k])].float().cpu().numpy()
                writer.add_figure(
                    f"valid/alignment/{utt_id}", alignment_figure(aligned, f"{utt_id} step {step}"), step
                )
                views.evolution(utt_id, step, aligned)


RECOGNITION_SYNTHESIS = RecognitionSynthesisKind()
