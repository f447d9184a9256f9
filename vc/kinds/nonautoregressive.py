"""The non-autoregressive converter as a kind: every output frame from the source content at its own
position, timed by durations (vc/model/nonautoregressive.py; FastSpeech, Ren et al. 2019; Hayashi et
al., ICASSP 2021).

Trains on data.durations (from DTW of each pair or the attention model's alignments) with spectral
and duration losses; its dev views show predicted against taught durations, mels and audio.
"""

from __future__ import annotations

import logging

import torch

from vc.config import Config
from vc.kinds.base import DevViews, ModelKind
from vc.kinds.losses import StudentLosses, duration_loss, masked_spectral_loss, with_phonetic
from vc.model.nonautoregressive import NonAutoregressiveVC
from vc.settings.kinds import NonAutoregressiveConfig

log = logging.getLogger(__name__)


class NonAutoregressiveKind(ModelKind):
    name = "nonautoregressive"
    config = NonAutoregressiveConfig
    network = NonAutoregressiveVC
    needs_durations = True
    dev_terms = ("spectral", "duration")
    selection_terms = ("spectral", "duration")

    def initialise(self, model, durations, recognizer=None) -> None:
        """The duration predictor starts at log(1 + the mean frames per step): an untrained model speaks
        at the average rate instead of collapsing every step to zero frames."""
        rate = torch.cat([d.float() for d in durations.values()]).mean()
        with torch.no_grad():
            model.duration_predictor.out.bias.fill_(float(torch.log1p(rate)))

    def losses(self, model, batch, config: Config, step: int | None, critic=None) -> StudentLosses:
        """Forward at the extracted durations (they sum to batch.tgt_lens: the output has the target's
        frames) and the losses; with a critic, the phonetic loss on the output too."""
        out = model(batch.src, batch.src_lens, batch.durations)
        losses = self.loss_terms(out, batch, config)
        return with_phonetic(losses, critic, out.after, batch, config)

    def loss_terms(self, out, batch, config: Config) -> StudentLosses:
        """The spectral and duration losses of an output at the extracted durations."""
        spectral = masked_spectral_loss(out.before, batch.tgt, batch.tgt_lens) + masked_spectral_loss(
            out.after, batch.tgt, batch.tgt_lens
        )
        duration = duration_loss(out.log_durations, batch.durations, out.enc_lens)
        return StudentLosses(spectral + config.model.duration_loss_weight * duration, spectral, duration)

    def teacher_forced(self, model, src, src_lens, tgt, tgt_lens, durations):
        return model(src, src_lens, durations)  # at the durations it trained on

    def log_fixed_utterances(self, views: DevViews, model, batch, step: int) -> None:
        """Per fixed dev utterance: extracted vs predicted durations, target vs converted mels, audio."""
        from vc.plotting import durations_figure, mel_figure  # matplotlib: not on conversion's import path

        config, writer = views.config, views.writer
        free = model.inference(batch.src, batch.src_lens, config.inference)
        length_ratio = (free.lens.float() / batch.tgt_lens.float()).mean()
        writer.add_scalar("valid/durations/length_ratio", float(length_ratio), step)
        log.info("step %d: predicted length / target length %.2f", step, float(length_ratio))
        waves, wave_lens = views.vocoder(views.target_stats.denormalize(free.after), free.lens)
        for k, utt_id in enumerate(batch.utt_ids):
            steps = int(free.enc_lens[k])
            extracted = batch.durations[k, :steps].cpu().numpy()
            predicted = free.durations[k, :steps].cpu().numpy()
            writer.add_figure(
                f"valid/durations/{utt_id}",
                durations_figure(extracted, predicted, f"{utt_id} step {step}"),
                step,
            )
            target = batch.tgt[k, : int(batch.tgt_lens[k])].cpu().numpy()
            converted = free.after[k, : int(free.lens[k])].float().cpu().numpy()
            writer.add_figure(f"valid/mel/{utt_id}", mel_figure(target, converted, utt_id), step)
            views.audio(utt_id, waves[k, : int(wave_lens[k])].float().cpu(), step)


NONAUTOREGRESSIVE = NonAutoregressiveKind()
