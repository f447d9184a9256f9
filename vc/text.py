"""Transcripts as character ids, for the phonetic (CTC) training losses of vc/phonetic.py.

Characters, not phonemes: they need no pronunciation dictionary, and an
English recogniser trained with CTC on characters still has to tell the
sounds of speech apart, which is all the losses ask of it. Text goes through
the WER scorer's normalisation; digits and other symbols outside the alphabet
are dropped (ARCTIC prompts spell their numbers).
"""

from __future__ import annotations

from pathlib import Path

from vc.errors import DataError
from vc.evaluation.transcripts import find_transcripts, normalize_text, read_transcripts

SYMBOLS = " '" + "abcdefghijklmnopqrstuvwxyz"
BLANK = 0  # the CTC blank; symbol k has id k + 1
VOCABULARY_SIZE = len(SYMBOLS) + 1
_IDS = {symbol: index + 1 for index, symbol in enumerate(SYMBOLS)}


def encode_text(text: str) -> list[int]:
    """Character ids of the normalised text; characters outside SYMBOLS are dropped."""
    kept = "".join(c for c in normalize_text(text) if c in _IDS)
    return [_IDS[c] for c in " ".join(kept.split())]


def decode_ids(ids: list[int]) -> str:
    return "".join(SYMBOLS[i - 1] for i in ids if i != BLANK)


def transcripts_for(utterances: dict[str, Path], transcripts: str | Path = "") -> dict[str, list[int]]:
    """utt id -> character ids for every utterance, from ``transcripts`` or the corpus's own file.

    ``utterances`` maps each id to one of its recordings; without an explicit
    file, the ARCTIC ``etc/txt.done.data`` beside that recording's folder is read.
    """
    files: dict[Path, dict[str, str]] = {}
    if transcripts:
        files[Path(transcripts)] = read_transcripts(transcripts)
    ids: dict[str, list[int]] = {}
    for utt, recording in utterances.items():
        path = Path(transcripts) if transcripts else find_transcripts(Path(recording).parent)
        if path is None:
            raise DataError(
                f"no transcript for {utt}: no etc/txt.done.data beside {Path(recording).parent}; "
                "set data.transcripts=FILE (utt_id<TAB>text or txt.done.data)"
            )
        if path not in files:
            files[path] = read_transcripts(path)
        text = files[path].get(utt)
        if text is None:
            raise DataError(f"no transcript for {utt} in {path}")
        ids[utt] = encode_text(text)
        if not ids[utt]:
            raise DataError(f"the transcript of {utt} in {path} has no letters")
    return ids
