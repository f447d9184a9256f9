"""What a recogniser's error rates are to `vc score`: one family per recogniser, the same columns.

A family (vc/evaluation/metric.py) whose model turns a 16 kHz wave into text: its word and character
error rates against the transcript, pooled over the utterances' words and characters (both texts
normalised alike, vc/evaluation/transcripts.py), and the recognised text per utterance. Each recogniser
names its keys with its own prefix, so two recognisers' columns sit side by side in one table and in
one scores.json.
"""

from __future__ import annotations

import numpy as np

from vc.evaluation.metric import Column, FileJob, Metric
from vc.evaluation.transcripts import error_counts

SAMPLE_RATE = 16000  # what every recogniser here reads


class WordErrors(Metric):
    """Word and character error rates of one recogniser. A subclass sets ``name``, ``packages``,
    ``unavailable`` and ``load`` (a callable wave -> text), and builds its columns with ``columns_for``."""

    # Of every key this family writes: "" (pocketsphinx: the keys of every earlier run), "whisper_".
    prefix = ""

    @staticmethod
    def columns_for(prefix: str, title: str, headline: bool, report_rank: int | None) -> tuple[Column, ...]:
        """WER and CER (in that order), pooled over words and characters; ``report_rank`` is WER's."""
        return tuple(
            Column(
                f"{title}{unit}ER [%]",
                f"{prefix}{unit.lower()}er",
                "{:.1f}",
                lower_is_better=True,
                headline=headline,
                pooled=(f"{prefix}{counted}_edits", f"{prefix}{counted}s"),
                report_rank=report_rank if unit == "W" else None,
            )
            for unit, counted in (("W", "word"), ("C", "char"))
        )

    def depends_on(self, job: FileJob) -> dict:
        return {"text": job.text}

    def missing_input(self, transcripts, speakers) -> str | None:
        if not transcripts:
            return "WER/CER: no transcripts (ARCTIC etc/txt.done.data beside the references, or --text)"
        return None

    def score(self, model, wave: np.ndarray, job: FileJob) -> dict:
        if job.text is None:
            return {}
        if job.sample_rate != SAMPLE_RATE:
            import librosa

            wave = librosa.resample(wave, orig_sr=job.sample_rate, target_sr=SAMPLE_RATE)
        hypothesis = model(wave)
        counts = error_counts(job.text, hypothesis)
        return {
            **{self.prefix + key: value for key, value in counts.items()},
            f"{self.prefix}hypothesis": hypothesis,
        }

    def finish(self, row: dict, found: dict) -> None:
        words, chars = f"{self.prefix}words", f"{self.prefix}chars"
        if words in row:
            row[f"{self.prefix}wer"] = 100.0 * row[f"{self.prefix}word_edits"] / max(row[words], 1)
            row[f"{self.prefix}cer"] = 100.0 * row[f"{self.prefix}char_edits"] / max(row[chars], 1)
