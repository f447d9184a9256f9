"""Intelligibility: an offline speech recogniser whose model ships inside its package.

pocketsphinx 5 (CMU Sphinx; Huggins-Daines et al., ICASSP 2006) with the en-us
acoustic model, dictionary and language model bundled in the wheel: no
download, deterministic, about 0.2-0.5 x real time on one core. Its absolute
error rates are high even on natural speech (about a third of ARCTIC's words
for slt), which is why every row is printed beside the natural target's.
"""

from __future__ import annotations

import numpy as np

from vc.evaluation.metric import Column, FileJob, Metric
from vc.evaluation.optional import INSTALL_HINT, pkg_resources_stand_in
from vc.evaluation.transcripts import error_counts
from vc.packages import missing

MODULES = ("pocketsphinx",)
SAMPLE_RATE = 16000


def unavailable() -> str | None:
    """Why the recogniser cannot run here, or None."""
    if missing(*MODULES):
        return f"WER/CER: pocketsphinx is not installed ({INSTALL_HINT})"
    return None


class Recognizer:
    """16 kHz mono float wave -> recognised text (lower case words)."""

    def __init__(self):
        with pkg_resources_stand_in():
            from pocketsphinx import Decoder

        # FATAL: pocketsphinx otherwise logs hundreds of lines per utterance to stderr.
        self.decoder = Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")

    def __call__(self, wave: np.ndarray) -> str:
        pcm = (np.clip(wave, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
        # Without this the cepstral mean carried over from earlier utterances changes the result:
        # the same file decoded after different ones gave different words.
        self.decoder.reinit_feat()
        self.decoder.start_utt()
        self.decoder.process_raw(pcm, full_utt=True)
        self.decoder.end_utt()
        hypothesis = self.decoder.hyp()
        return hypothesis.hypstr if hypothesis is not None else ""


class Intelligibility(Metric):
    """Word and character error rates of the recogniser's text against the transcript, pooled over the
    utterances' words and characters."""

    name = "intelligibility"
    columns = (
        Column(
            "WER [%]",
            "wer",
            "{:.1f}",
            lower_is_better=True,
            headline=True,
            pooled=("word_edits", "words"),
            report_rank=0,
        ),
        Column(
            "CER [%]", "cer", "{:.1f}", lower_is_better=True, headline=True, pooled=("char_edits", "chars")
        ),
    )
    packages = MODULES

    def unavailable(self) -> str | None:
        return unavailable()

    def depends_on(self, job: FileJob) -> dict:
        return {"text": job.text}

    def missing_input(self, transcripts, speakers) -> str | None:
        if not transcripts:
            return "WER/CER: no transcripts (ARCTIC etc/txt.done.data beside the references, or --text)"
        return None

    def load(self) -> Recognizer:
        return Recognizer()

    def score(self, model: Recognizer, wave: np.ndarray, job: FileJob) -> dict:
        if job.text is None:
            return {}
        hypothesis = model(wave)
        return {**error_counts(job.text, hypothesis), "hypothesis": hypothesis}

    def finish(self, row: dict, found: dict) -> None:
        if "words" in row:
            row["wer"] = 100.0 * row["word_edits"] / max(row["words"], 1)
            row["cer"] = 100.0 * row["char_edits"] / max(row["chars"], 1)


INTELLIGIBILITY = Intelligibility()
