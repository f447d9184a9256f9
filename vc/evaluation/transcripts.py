"""Transcripts, the text normalisation both sides of a WER go through, and edit distances.

Normalisation (applied to reference and recognised text alike): Unicode NFKC,
numbers in digits spelt as words (vc.evaluation.spoken_numbers: "18th" ->
"eighteenth", "1908" -> "nineteen oh eight": Whisper writes digits where ARCTIC's
prompts mostly spell), lower case, hyphens and slashes become spaces
("twenty-five" -> "twenty five", as a recogniser's dictionary spells compounds),
every other character that is not a letter, a digit or a word-internal
apostrophe is dropped ("Steels," -> "steels", "don't" stays), runs of spaces
collapse, and the spoken forms of two titles written either way become the
written ones ("mister" -> "mr", "missus" -> "mrs").
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from vc.errors import DataError
from vc.evaluation.spoken_numbers import spell_numbers

# ( arctic_a0001 "Author of the danger trail, Philip Steels, etc." )
ARCTIC_LINE = re.compile(r'^\(\s*(\S+)\s+"(.*)"\s*\)\s*$')
ARCTIC_FILE = Path("etc") / "txt.done.data"
# Words a reader says one way and a text writes either way: the spoken form -> the written one.
WRITTEN_FORMS = {"mister": "mr", "missus": "mrs", "missis": "mrs"}


def normalize_text(text: str) -> str:
    text = spell_numbers(unicodedata.normalize("NFKC", text)).lower()
    text = re.sub(r"[-/\u2010-\u2015]", " ", text)
    text = text.replace("\u2019", "'")
    text = re.sub(r"[^\w\s']|_", " ", text)  # \w keeps letters and digits of any script
    text = re.sub(r"(?<!\w)'|'(?!\w)", " ", text)  # quotes, not apostrophes inside words
    return " ".join(WRITTEN_FORMS.get(word, word) for word in text.split())


def read_transcripts(path: str | Path) -> dict[str, str]:
    """utt id -> text from a CMU ARCTIC/festival ``txt.done.data`` or a ``utt_id<TAB>text`` file."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read transcripts {path}: {exc}") from None
    texts: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        festival = ARCTIC_LINE.match(line)
        if festival:
            utt, text = festival.groups()
        elif "\t" in line:
            utt, text = line.split("\t", 1)
        else:
            raise DataError(
                f"{path}:{number}: expected 'utt_id<TAB>text' or '( utt_id \"text\" )', got {line[:60]!r}"
            )
        texts[utt.strip()] = text.strip()
    if not texts:
        raise DataError(f"no transcripts in {path}")
    return texts


def find_transcripts(reference_dir: str | Path) -> Path | None:
    """The corpus transcript file beside an ARCTIC-layout ``wav`` folder, if there is one."""
    candidate = Path(reference_dir).resolve().parent / ARCTIC_FILE
    return candidate if candidate.is_file() else None


def edit_distance(reference: list[str] | str, hypothesis: list[str] | str) -> int:
    """Levenshtein distance (substitutions, deletions, insertions each cost 1)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        current = [i]
        for j, hyp in enumerate(hypothesis, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp)))
        previous = current
    return previous[-1]


def error_counts(reference: str, hypothesis: str) -> dict[str, int]:
    """Word and character edits and lengths of normalised texts.

    Characters are counted without spaces, so CER measures spelling, not word
    breaks. Corpus-level rates are sums of edits over sums of lengths.
    """
    ref, hyp = normalize_text(reference), normalize_text(hypothesis)
    ref_chars, hyp_chars = ref.replace(" ", ""), hyp.replace(" ", "")
    return {
        "word_edits": edit_distance(ref.split(), hyp.split()),
        "words": len(ref.split()),
        "char_edits": edit_distance(ref_chars, hyp_chars),
        "chars": len(ref_chars),
    }
