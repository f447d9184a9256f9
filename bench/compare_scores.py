"""Is a difference between two scorings larger than the eval set's own noise?

    python bench/compare_scores.py A/scores.json B/scores.json [--row ROW] [--row-b ROW] [--resamples 2000]

Reads two `vc score --json` files of the same eval utterances and prints, per metric, B - A and
a 95 % paired bootstrap interval over utterances: the utterances are drawn with replacement, the
same draw for both, and the metric recomputed as `vc score` computes it (error rates pooled over
words and characters, the rest means over utterances). With 100 ARCTIC eval sentences (under 900
words) a WER difference of a few points is often inside that interval. The interval covers the
choice of sentences only, not the training seed's or the post-filter's own spread, which come on
top (docs/ablation.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from vc.evaluation.scoring import TABLE_COLUMNS

COMPARED = ("wer", "cer", "mcd", "f0_rmse", "sim_target", "mos_ovrl")  # `vc score`'s keys, in this order
POOLED = {
    "wer": ("word_edits", "words"),
    "cer": ("char_edits", "chars"),
}  # as vc.evaluation.scoring.summarize pools
# (label, per-utterance key or (edits, total), signed format), with `vc score`'s table titles and precision
METRICS = tuple(
    (title, POOLED.get(key, key), fmt.replace("{:", "{:+"))
    for key in COMPARED
    for title, column, fmt in TABLE_COLUMNS
    if column == key
)


def metric(rows: list[dict], key, draws: np.ndarray) -> np.ndarray:
    """The metric over each draw of utterance indices (draws: (R, N)) -> (R,); NaNs skipped."""
    if isinstance(key, tuple):
        edits = np.array([row.get(key[0], 0) for row in rows], dtype=float)
        total = np.array([row.get(key[1], 0) for row in rows], dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return 100.0 * edits[draws].sum(axis=1) / total[draws].sum(axis=1)
    values = np.array([row.get(key, np.nan) for row in rows], dtype=float)[draws]
    with np.errstate(invalid="ignore"):
        return np.nanmean(values, axis=1)


def compare(a: dict, b: dict, resamples: int = 2000, seed: int = 0) -> tuple[int, list[dict]]:
    """The number of utterances both have, and per metric both have: B - A on those utterances and
    its 95 % paired bootstrap interval.

    a, b: per-utterance dicts (utterance id -> metrics), as in a scores.json row's per_utterance.
    """
    ids = sorted(set(a) & set(b))
    if not ids:
        raise ValueError("the two scorings share no utterance")
    rows_a, rows_b = [a[i] for i in ids], [b[i] for i in ids]
    everything = np.arange(len(ids))[None, :]
    draws = np.random.default_rng(seed).integers(0, len(ids), size=(resamples, len(ids)))
    out = []
    for label, key, fmt in METRICS:
        needed = key if isinstance(key, tuple) else (key,)
        if not all(k in row for k in needed for row in rows_a + rows_b):
            continue
        diff = float((metric(rows_b, key, everything) - metric(rows_a, key, everything))[0])
        spread = metric(rows_b, key, draws) - metric(rows_a, key, draws)
        low, high = np.nanpercentile(spread, [2.5, 97.5])
        out.append(dict(metric=label, diff=diff, low=float(low), high=float(high), fmt=fmt))
    return len(ids), out


def _per_utterance(path: Path, row: str | None) -> dict:
    """The per-utterance scores of ``row``; None: the model's row (vc score --name), else "model"."""
    try:
        data = json.loads(path.read_text())
        row = row or data.get("model_row") or "model"
        return data["rows"][row]["per_utterance"]
    except (OSError, ValueError) as exc:
        sys.exit(f"compare_scores: cannot read {path}: {exc}")
    except KeyError:
        sys.exit(f"compare_scores: {path} has no row '{row}' with per-utterance scores")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="scores.json of the reference run (A)")
    parser.add_argument("b", type=Path, help="scores.json of the run to compare (B)")
    parser.add_argument(
        "--row", help="row of A (and of B unless --row-b); default: the model's row ('model' unless renamed)"
    )
    parser.add_argument("--row-b", default=None, help="row of B, when it differs from A's")
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args(argv)
    a = _per_utterance(args.a, args.row)
    b = _per_utterance(args.b, args.row_b or args.row)
    try:
        shared, results = compare(a, b, args.resamples)
    except ValueError as exc:
        sys.exit(f"compare_scores: {exc}")
    print(f"B - A over {shared} shared utterances (95 % paired bootstrap):")
    for r in results:
        fmt = r["fmt"]
        inside = r["low"] <= 0 <= r["high"]
        print(
            f"  {r['metric']:<13} {fmt.format(r['diff']):>7}  "
            f"[{fmt.format(r['low'])}, {fmt.format(r['high'])}]{'  (inside the noise)' if inside else ''}"
        )


if __name__ == "__main__":
    main()
