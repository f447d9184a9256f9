#!/usr/bin/env python3
"""Seen vs unseen voices: one row per input voice, from the unseen-voice stage's vc score JSON files.

  unseen_table.py EXP     reads EXP/unseen_scores/<voice>.json and, for the seen row, EXP/scores.json
                          restricted to the same utterances; prints the table and writes
                          EXP/unseen_scores.txt

Columns: Whisper's WER on the input itself (how intelligible the voice was
before conversion; pocketsphinx's in scorings made before Whisper), then the
converted speech's headline columns of the metric registry
(vc/evaluation/registry.py: MCD, F0 RMSE, DDUR, Whisper's WER and CER,
pocketsphinx's WER, similarity to the target's centroid, predicted MOS) and the
utterance count.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from vc.evaluation.registry import UTTERANCES, columns
from vc.evaluation.scoring import format_table, summarize
from vc.fileio import atomic_write_text

MODEL_ROW, INPUT_ROW = "model", "no conversion (source)"


def table_columns() -> list[tuple[str, str, str]]:
    shown = [c for c in columns() if c.headline] + [UTTERANCES]
    return [("input WER [%]", "input_wer", "{:.1f}")] + [(c.title, c.key, c.fmt) for c in shown]


def subset(row: dict, utts: set[str]) -> dict:
    """A vc score row's summary over only these utterances (means; error rates pooled)."""
    return summarize({utt: dict(s) for utt, s in row["per_utterance"].items() if utt in utts}, {})


def model_row(scores: dict) -> dict:
    """The model's row: the one scores.json names (vc score --name), "model" in older files."""
    return scores["rows"][scores.get("model_row", MODEL_ROW)]


def voice_row(scores: dict, utts: set[str]) -> dict:
    row = subset(model_row(scores), utts)
    if INPUT_ROW in scores["rows"]:
        heard = subset(scores["rows"][INPUT_ROW], utts)
        row["input_wer"] = heard.get("whisper_wer", heard.get("wer"))
    return row


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    exp = Path(sys.argv[1])
    voices = sorted((exp / "unseen_scores").glob("*.json"))
    if not voices:
        sys.exit(f"unseen_table.py: no scores in {exp / 'unseen_scores'} (run the unseen-voice stage)")
    unseen = {path.stem: json.loads(path.read_text()) for path in voices}
    utts = set.intersection(*(set(model_row(s)["per_utterance"]) for s in unseen.values()))
    rows = {}
    seen = exp / "scores.json"
    if seen.is_file():
        rows["seen source (the training source)"] = voice_row(json.loads(seen.read_text()), utts)
    rows.update({f"unseen: {name}": voice_row(scores, utts) for name, scores in unseen.items()})
    table = (
        format_table(rows, table_columns(), first="input voice")
        + f"\n({len(utts)} eval utterances each; WER of the input itself, then of the converted speech)"
    )
    print(table)
    atomic_write_text(exp / "unseen_scores.txt", table + "\n")


if __name__ == "__main__":
    main()
