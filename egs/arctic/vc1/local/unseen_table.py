#!/usr/bin/env python3
"""Seen vs unseen voices: one row per input voice, from the unseen-voice stage's vc score JSON files.

  unseen_table.py EXP     reads EXP/unseen_scores/<voice>.json and, for the seen row, EXP/scores.json
                          restricted to the same utterances; prints the table and writes
                          EXP/unseen_scores.txt

Columns: the recognizer's WER on the input itself (how intelligible the voice
was before conversion), then the converted speech's WER, CER, MCD and F0 RMSE
against the natural target, similarity to the target's centroid and predicted MOS.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

MODEL_ROW, INPUT_ROW = "model", "no conversion (source)"
COLUMNS = (
    ("input WER [%]", "input_wer", "{:.1f}"),
    ("WER [%]", "wer", "{:.1f}"),
    ("CER [%]", "cer", "{:.1f}"),
    ("MCD [dB]", "mcd", "{:.2f}"),
    ("F0 RMSE [Hz]", "f0_rmse", "{:.1f}"),
    ("sim to tgt", "sim_target", "{:.3f}"),
    ("MOS ovrl", "mos_ovrl", "{:.2f}"),
    ("utterances", "utterances", "{:.0f}"),
)


def subset(row: dict, utts: set[str]) -> dict:
    """A vc score row's summary over only these utterances (means; error rates pooled)."""
    rows = [scores for utt, scores in row["per_utterance"].items() if utt in utts]
    summary = {"utterances": len(rows)}
    for key in ("mcd", "f0_rmse", "sim_target", "mos_ovrl"):
        values = [r[key] for r in rows if r.get(key) is not None and math.isfinite(r[key])]
        summary[key] = sum(values) / len(values) if values else math.nan
    for rate, edits, total in (("wer", "word_edits", "words"), ("cer", "char_edits", "chars")):
        count = sum(r.get(total, 0) for r in rows)
        summary[rate] = 100.0 * sum(r.get(edits, 0) for r in rows) / count if count else math.nan
    return summary


def voice_row(scores: dict, utts: set[str]) -> dict:
    row = subset(scores["rows"][MODEL_ROW], utts)
    if INPUT_ROW in scores["rows"]:
        row["input_wer"] = subset(scores["rows"][INPUT_ROW], utts)["wer"]
    return row


def render(rows: dict[str, dict]) -> str:
    header = ["input voice"] + [title for title, _, _ in COLUMNS]
    body = []
    for name, row in rows.items():
        cells = []
        for _, key, fmt in COLUMNS:
            value = row.get(key)
            cells.append("-" if value is None or not math.isfinite(value) else fmt.format(value))
        body.append([name, *cells])
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = [
        [line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)]
        for line in [header, *body]
    ]
    rule = "  ".join("-" * w for w in widths)
    text = ["  ".join(line).rstrip() for line in lines]
    return "\n".join([text[0], rule, *text[1:]])


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    exp = Path(sys.argv[1])
    voices = sorted((exp / "unseen_scores").glob("*.json"))
    if not voices:
        sys.exit(f"unseen_table.py: no scores in {exp / 'unseen_scores'} (run the unseen-voice stage)")
    unseen = {path.stem: json.loads(path.read_text()) for path in voices}
    utts = set.intersection(*(set(s["rows"][MODEL_ROW]["per_utterance"]) for s in unseen.values()))
    rows = {}
    seen = exp / "scores.json"
    if seen.is_file():
        rows["seen source (the training source)"] = voice_row(json.loads(seen.read_text()), utts)
    rows.update({f"unseen: {name}": voice_row(scores, utts) for name, scores in unseen.items()})
    table = (
        render(rows)
        + f"\n({len(utts)} eval utterances each; WER of the input itself, then of the converted speech)"
    )
    print(table)
    partial = exp / ".unseen_scores.txt.tmp"
    partial.write_text(table + "\n")
    partial.replace(exp / "unseen_scores.txt")


if __name__ == "__main__":
    main()
