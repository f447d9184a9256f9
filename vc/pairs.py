"""Pair lists, the corpus format of parallel voice conversion.

A pair list is a text file with one utterance per line:

    utt_id<TAB>source_audio<TAB>target_audio

Relative paths are resolved against the list's folder; lines starting with # are comments.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vc.errors import DataError
from vc.fileio import atomic_write_text


@dataclass(frozen=True)
class Pair:
    utt_id: str
    source: Path
    target: Path


def read_pair_list(path: str | Path) -> list[Pair]:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"pair list not found: {path}")
    pairs = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise DataError(f"{path}:{number}: expected 'utt_id<TAB>source<TAB>target', got {line!r}")
        utt_id, source, target = fields
        pairs.append(Pair(utt_id, path.parent / source, path.parent / target))
    if not pairs:
        raise DataError(f"pair list {path} is empty")
    return pairs


def write_pair_list(path: str | Path, pairs: list[Pair]) -> None:
    lines = [f"{p.utt_id}\t{Path(p.source).resolve()}\t{Path(p.target).resolve()}" for p in pairs]
    atomic_write_text(Path(path), "\n".join(lines) + "\n")
