"""The attention model as a kind: Tacotron-style encoder, location-aware attention, autoregressive
decoder with a stop token (vc/model/seq2seq.py).

Trains teacher-forced on spectral + stop + guided-attention losses (Tachibana et al. 2018); its
dev views are the signature of the toolkit: free-running and teacher-forced alignments, the
alignment-evolution strip, focus rate and diagonal ratio. Its teacher-forced alignments time the
non-autoregressive converter (`vc durations --checkpoint`).
"""

from __future__ import annotations

import logging

import torch

from vc.config import Config
from vc.errors import ConfigError
from vc.kinds.alignment import diagonal_ratio, focus_rate
from vc.kinds.base import DevViews, ModelKind
from vc.kinds.losses import Losses, compute_losses, with_phonetic
from vc.model.content import build_attention_model
from vc.model.seq2seq import Seq2SeqVC, decoder_steps
from vc.settings.inference import InferenceConfig
from vc.settings.kinds import AttentionConfig, ModelConfig

log = logging.getLogger(__name__)


class AttentionKind(ModelKind):
    name = "attention"
    config = AttentionConfig
    network = Seq2SeqVC  # over content: its subclass ContentSeq2SeqVC (model.encoder_input)
    teaches_durations = True
    selects_free_running = True
    dev_terms = ("spectral", "stop", "guided_attention")
    selection_terms = ("spectral", "stop")  # what conversion needs: spectra and stopping

    def build(self, n_mels: int, config: ModelConfig):
        return build_attention_model(n_mels, config)

    def needs_recognizer(self, model: ModelConfig) -> bool:
        return model.encoder_input != "mels"

    def needs_pitch(self, model: ModelConfig) -> bool:
        return model.encoder_input != "mels"

    def check(self, config: Config) -> None:
        super().check(config)
        m = config.model
        if self.needs_recognizer(m) and not config.data.phones:
            raise ConfigError(
                f"model.encoder_input {m.encoder_input} needs data.phones (the alignments of vc durations "
                "--phones): the phone recognizer whose content it reads learns from them"
            )

    def initialise(self, model, durations, recognizer=None) -> None:
        if self.needs_recognizer(model.config):
            model.load_recognizer(recognizer)

    def fixed_content(self, model, batch):
        """The frozen recognizer's content of the sources (and of the targets, which self-reconstruction
        reads), read once per recording."""
        if not self.needs_recognizer(model.config):
            return None
        read = {"src_content": model.content(batch.src, batch.src_lens)}
        if model.config.self_steps > 0:
            read["tgt_content"] = model.content(batch.tgt, batch.tgt_lens)
        return read

    @staticmethod
    def reads(batch, config: ModelConfig, self_reconstruction: bool = False) -> tuple:
        """What the network reads of a Batch: (input frames, their lengths, keyword arguments): the
        source's, or in self-reconstruction the target's own recording."""
        if self_reconstruction:
            frames, lens, pitch, content = batch.tgt, batch.tgt_lens, batch.tgt_pitch, batch.tgt_content
        else:
            frames, lens, pitch, content = batch.src, batch.src_lens, batch.src_pitch, batch.src_content
        extras = {} if config.encoder_input == "mels" else {"pitch": pitch, "content": content}
        return frames, lens, extras

    def losses(self, model, batch, config: Config, step: int | None, critic=None) -> Losses:
        """Teacher-forced forward and losses; on the dev set the guided attention loss weighs 1. The
        first model.self_steps training steps read the target's own recordings (self-reconstruction).
        With a critic, the phonetic loss on the output against the target's phones."""
        m = config.model
        src, src_lens, extras = self.reads(batch, m, step is not None and step < m.self_steps)
        out = model(src, src_lens, batch.tgt, batch.tgt_lens, **extras)
        losses = compute_losses(
            out,
            batch.tgt,
            batch.tgt_lens,
            m.reduction_factor,
            m.stop_pos_weight,
            m.guided_attention_sigma,
            1.0 if step is None else m.guided_attention_weight,
        )
        return with_phonetic(losses, critic, out.after, batch, config)

    def step_stats(self, config: Config, step: int) -> dict[str, float]:
        return {"opt/guided_attention_weight": config.model.guided_attention_weight}

    def prepare_for_conversion(self, model, inference: InferenceConfig) -> None:
        if inference.prenet_dropout is not None:  # on in eval mode too
            model.decoder.prenet.dropout = inference.prenet_dropout

    def teacher_forced(self, model, src, src_lens, tgt, tgt_lens, durations, src_pitch=None, tgt_pitch=None):
        extras = {"pitch": src_pitch} if self.needs_pitch(model.config) else {}
        return model(src, src_lens, tgt, tgt_lens, **extras)

    def frames_per_row(self, config: ModelConfig) -> int:
        return config.reduction_factor  # one row per decoder step

    def log_fixed_utterances(self, views: DevViews, model, batch, step: int) -> None:
        """Free-running and teacher-forced alignments, the evolution strip, mels, stop curve, audio."""
        # matplotlib: not on the import path of conversion
        from vc.plotting import alignment_figure, mel_figure, stop_figure

        config, writer = views.config, views.writer
        r = config.model.reduction_factor
        src, src_lens, extras = self.reads(batch, config.model)
        teacher = model(src, src_lens, batch.tgt, batch.tgt_lens, **extras)
        free = model.inference(src, src_lens, config.inference, **extras)
        free_steps = decoder_steps(free.lens, r)
        focus = float(focus_rate(free.alignments, free_steps, free.enc_lens).mean())
        diagonal = float(diagonal_ratio(free.alignments, free_steps, free.enc_lens).mean())
        length_ratio = float((free.lens.float() / batch.tgt_lens.float()).mean())
        writer.add_scalar("valid/align/focus_rate", focus, step)
        writer.add_scalar("valid/align/diagonal", diagonal, step)
        writer.add_scalar("valid/align/length_ratio", length_ratio, step)
        log.info(
            "step %d: focus rate %.3f, diagonal %.3f, length ratio %.2f", step, focus, diagonal, length_ratio
        )
        waves, wave_lens = views.vocoder(views.target_stats.denormalize(free.after), free.lens)
        teacher_steps = decoder_steps(batch.tgt_lens, r)
        for k, utt_id in enumerate(batch.utt_ids):
            enc_len = int(free.enc_lens[k])
            aligned = free.alignments[k, : int(free_steps[k]), :enc_len].float().cpu().numpy()
            forced = teacher.alignments[k, : int(teacher_steps[k]), :enc_len].float().cpu().numpy()
            writer.add_figure(
                f"valid/alignment/{utt_id}", alignment_figure(aligned, f"{utt_id} step {step}"), step
            )
            writer.add_figure(
                f"valid/alignment_teacher_forced/{utt_id}",
                alignment_figure(forced, f"{utt_id} teacher-forced, step {step}"),
                step,
            )
            target = batch.tgt[k, : int(batch.tgt_lens[k])].cpu().numpy()
            predicted = free.after[k, : int(free.lens[k])].float().cpu().numpy()
            writer.add_figure(f"valid/mel/{utt_id}", mel_figure(target, predicted, utt_id), step)
            stop = torch.sigmoid(free.stop_logits[k, : int(free.lens[k])]).float().cpu().numpy()
            writer.add_figure(f"valid/stop/{utt_id}", stop_figure(stop, int(batch.tgt_lens[k])), step)
            views.audio(utt_id, waves[k, : int(wave_lens[k])].float().cpu(), step)
            views.evolution(utt_id, step, aligned)


ATTENTION = AttentionKind()
