"""Is a difference between two scorings larger than the eval set's own noise? (`vc compare`)

    vc compare A/scores.json B/scores.json [--row ROW] [--row-b ROW] [--resamples 2000]

Reads two `vc score --json` files of the same eval utterances and gives, per metric, B - A and
a 95 % paired bootstrap interval over utterances: the utterances are drawn with replacement, the
same draw for both, and the metric recomputed as `vc score` computes it (error rates pooled over
words and characters, the rest means over utterances). With 100 ARCTIC eval sentences (under 900
words) a WER difference of a few points is often inside that interval. The interval covers the
choice of sentences only, not the training seed's spread, which comes on top (docs/ablation.md).

Words are decided by Whisper's columns: pocketsphinx's WER is printed after them for continuity with
scorings made before Whisper, and says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from vc.errors import DataError
from vc.evaluation import registry
from vc.evaluation.sphinx import POCKETSPHINX
from vc.evaluation.whisper import WHISPER

WHISPER_WER, SPHINX_WER = WHISPER.columns[0].title, POCKETSPHINX.columns[0].title


def compared_metrics() -> list[tuple[str, str | tuple[str, str], str]]:
    """(label, per-utterance key or (edits, total) when pooled, signed format) of the registry's headline
    columns, with `vc score`'s titles and precision."""
    return [
        (column.title, column.pooled or column.key, column.fmt.replace("{:", "{:+"))
        for column in registry.columns()
        if column.headline
    ]


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
        raise DataError("the two scorings share no utterance")
    rows_a, rows_b = [a[i] for i in ids], [b[i] for i in ids]
    everything = np.arange(len(ids))[None, :]
    draws = np.random.default_rng(seed).integers(0, len(ids), size=(resamples, len(ids)))
    out = []
    for label, key, fmt in compared_metrics():
        needed = key if isinstance(key, tuple) else (key,)
        if not all(k in row for k in needed for row in rows_a + rows_b):
            continue
        diff = float((metric(rows_b, key, everything) - metric(rows_a, key, everything))[0])
        spread = metric(rows_b, key, draws) - metric(rows_a, key, draws)
        low, high = np.nanpercentile(spread, [2.5, 97.5])
        out.append(dict(metric=label, diff=diff, low=float(low), high=float(high), fmt=fmt))
    return len(ids), out


def per_utterance(path: str | Path, row: str | None = None) -> dict:
    """The per-utterance scores of ``row`` in a scores.json; None: the model's row (vc score --name)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None
    row = row or data.get("model_row") or "model"
    try:
        return data["rows"][row]["per_utterance"]
    except (KeyError, TypeError):
        raise DataError(f"{path} has no row '{row}' with per-utterance scores") from None


def format_comparison(shared: int, results: list[dict]) -> list[str]:
    """The lines `vc compare` prints: B - A and its interval per metric, marked when outside the noise."""
    lines = [f"B - A over {shared} shared utterances (95 % paired bootstrap):"]
    labels = {r["metric"] for r in results}
    for r in results:
        fmt = r["fmt"]
        inside = r["low"] <= 0 <= r["high"]
        lines.append(
            f"  {r['metric']:<13} {fmt.format(r['diff']):>7}  "
            f"[{fmt.format(r['low'])}, {fmt.format(r['high'])}]{'  (inside the noise)' if inside else ''}"
        )
    if WHISPER_WER in labels:
        lines.append(f"  words: decided by {WHISPER_WER}; pocketsphinx's beside it for continuity only")
    elif SPHINX_WER in labels:
        lines.append(
            f"  words: no Whisper columns in both scorings; {SPHINX_WER} does not decide (vc score again)"
        )
    return lines
