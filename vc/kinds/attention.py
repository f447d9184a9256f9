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
from vc.kinds.alignment import diagonal_ratio, focus_rate
from vc.kinds.base import DevViews, ModelKind
from vc.kinds.losses import Losses, compute_losses
from vc.model.seq2seq import Seq2SeqVC, decoder_steps
from vc.settings.inference import InferenceConfig
from vc.settings.kinds import AttentionConfig, ModelConfig

log = logging.getLogger(__name__)


class AttentionKind(ModelKind):
    name = "attention"
    config = AttentionConfig
    network = Seq2SeqVC
    teaches_durations = True
    selects_free_running = True
    dev_terms = ("spectral", "stop", "guided_attention")
    selection_terms = ("spectral", "stop")  # what conversion needs: spectra and stopping

    def losses(self, model, batch, config: Config, step: int | None) -> Losses:
        """Teacher-forced forward and losses; on the dev set the guided attention loss weighs 1."""
        out = model(batch.src, batch.src_lens, batch.tgt, batch.tgt_lens)
        m = config.model
        return compute_losses(
            out,
            batch.tgt,
            batch.tgt_lens,
            m.reduction_factor,
            m.stop_pos_weight,
            m.guided_attention_sigma,
            1.0 if step is None else m.guided_attention_weight,
        )

    def step_stats(self, config: Config, step: int) -> dict[str, float]:
        return {"opt/guided_attention_weight": config.model.guided_attention_weight}

    def prepare_for_conversion(self, model, inference: InferenceConfig) -> None:
        if inference.prenet_dropout is not None:  # on in eval mode too
            model.decoder.prenet.dropout = inference.prenet_dropout

    def teacher_forced(self, model, src, src_lens, tgt, tgt_lens, durations):
        return model(src, src_lens, tgt, tgt_lens)

    def frames_per_row(self, config: ModelConfig) -> int:
        return config.reduction_factor  # one row per decoder step

    def log_fixed_utterances(self, views: DevViews, model, batch, step: int) -> None:
        """Free-running and teacher-forced alignments, the evolution strip, mels, stop curve, audio."""
        # matplotlib: not on the import path of conversion
        from vc.plotting import alignment_figure, mel_figure, stop_figure

        config, writer = views.config, views.writer
        r = config.model.reduction_factor
        teacher = model(batch.src, batch.src_lens, batch.tgt, batch.tgt_lens)
        free = model.inference(batch.src, batch.src_lens, config.inference)
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
