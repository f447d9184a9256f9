"""Intelligibility by pocketsphinx, kept beside Whisper (vc/evaluation/whisper.py) for continuity with
every earlier row: its columns keep their keys ("wer", "cer"), titled "sphinx WER/CER".

pocketsphinx 5 (CMU Sphinx; Huggins-Daines et al., ICASSP 2006) with the en-us acoustic model,
dictionary and language model bundled in the wheel: no download, deterministic, about 0.2-0.5 x real
time on one core. It misses about a third of natural slt's words and hears a vocoder's buzz worse than
a model's blur, so it does not decide which system keeps more words: Whisper does. It cost a fifth of
the scoring of natural speech and nearly half of converted speech's on one CPU, so `vc score` runs it
only when --families names it (docs/ablation_archive.md, "The main job without pocketsphinx").
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vc.evaluation.optional import INSTALL_HINT, pkg_resources_stand_in
from vc.evaluation.word_errors import SAMPLE_RATE, WordErrors
from vc.packages import missing

MODULES = ("pocketsphinx",)


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


# Its WER stays a headline column after Whisper's (vc compare against earlier scorings), and the report
# sorts by it where a scoring has no Whisper column; its CER is not a headline.
WER, CER = WordErrors.columns_for("", "sphinx ", headline=True, report_rank=1)


class Pocketsphinx(WordErrors):
    name = "pocketsphinx"
    columns = (WER, replace(CER, headline=False))
    by_default = False  # only when asked for (vc score --families ...,pocketsphinx)
    packages = MODULES
    version = 2  # 2: numbers and titles normalised (vc/evaluation/transcripts.py)

    def unavailable(self) -> str | None:
        if missing(*MODULES):
            return f"pocketsphinx WER/CER: pocketsphinx is not installed ({INSTALL_HINT})"
        return None

    def load(self) -> Recognizer:
        return Recognizer()


POCKETSPHINX = Pocketsphinx()
