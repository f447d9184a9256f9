"""The metric families `vc score` computes, in the order of its table: one line each (vc/evaluation/metric.py
says what a family is). `vc score`'s columns and families, `vc compare`, the listening report and the
held-out voices' table read them here, when they run.
"""

from __future__ import annotations

from vc.evaluation.metric import Column, Metric
from vc.evaluation.metrics import DISTANCES
from vc.evaluation.naturalness import NATURALNESS
from vc.evaluation.speaker import SIMILARITY
from vc.evaluation.sphinx import POCKETSPHINX
from vc.evaluation.whisper import WHISPER

METRICS: tuple[Metric, ...] = (DISTANCES, WHISPER, POCKETSPHINX, SIMILARITY, NATURALNESS)
UTTERANCES = Column("utterances", "utterances", "{:d}")  # how many utterances a row's numbers cover


def families() -> dict[str, Metric]:
    return {metric.name: metric for metric in METRICS}


def optional_families() -> tuple[str, ...]:
    """The families `vc score` may leave out (its --families may name any of them)."""
    return tuple(metric.name for metric in METRICS if metric.optional)


def default_families() -> tuple[str, ...]:
    """The optional families `vc score` computes when --families names none (the default ``families``
    of scoring): all but those only computed when asked for (pocketsphinx)."""
    return tuple(metric.name for metric in METRICS if metric.optional and metric.by_default)


def columns() -> list[Column]:
    """Every column of the score table, in its order, the utterance count last."""
    return [column for metric in METRICS for column in metric.columns] + [UTTERANCES]


def table_columns() -> list[tuple[str, str, str]]:
    """(title, key, format) per column: format_table's and scores.json's "columns"."""
    return [(c.title, c.key, c.fmt) for c in columns()]
