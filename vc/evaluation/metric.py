"""What a metric family is to `vc score`, `vc compare`, the listening report and the held-out voices' table.

A family (the distances to the reference, the recogniser's error rates, speaker similarity, predicted MOS)
is one module holding one Metric, listed once in vc/evaluation/registry.py: its columns (title, key,
format, which way is better, how utterances sum up), what it needs, and how it scores one file in a
scoring worker. Nothing else names a metric.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Column:
    """One number of the score table, per utterance and per row."""

    title: str  # the table's heading
    key: str  # the per-utterance and per-row key in scores.json
    fmt: str  # its format in tables
    lower_is_better: bool = False
    headline: bool = False  # in `vc compare` and the short tables (the held-out voices')
    pooled: tuple[str, str] | None = (
        None  # (edits, total) keys: 100 x their sums over utterances, else a mean
    )
    report_rank: int | None = None  # the listening report sorts worst first by the lowest rank a run has


@dataclass
class FileJob:
    """One file to score: the row (system) it belongs to, its utterance, path and what it is scored against."""

    row: str
    utt: str
    path: Path
    sample_rate: int
    reference: Path | None = None  # the natural target of the same utterance, for the distances
    text: str | None = None  # its transcript, for the error rates
    families: tuple[str, ...] = ()
    f0_method: str = "dio"


class Metric:
    """A metric family. ``score`` runs in a scoring worker, once per file, with the model ``load`` made
    there; a family may score files of its own once per run (``run_files``, e.g. the training files of
    the speaker centroids) and turn them into what every file needs (``run_found``); ``finish`` turns a
    file's raw values into its columns', once every file is scored."""

    name = ""
    columns: tuple[Column, ...] = ()
    optional = True  # `vc score` may leave it out (its package missing, or not asked for)
    by_default = True  # `vc score` computes it unless --families names others (False: only when named)
    # What a file's score depends on beyond its bytes and the sample rate (the score cache's key,
    # vc/evaluation/score_cache.py): the distributions whose models or code compute it, and ``version``,
    # raised whenever this module's own way of scoring changes.
    packages: tuple[str, ...] = ()
    version = 1

    def unavailable(self) -> str | None:
        """Why the family cannot run here (a missing package, and how to get it), or None."""
        return None

    def missing_input(self, transcripts: dict | None, speakers: dict | None) -> str | None:
        """Why this scoring cannot compute it (no transcripts, no speaker files), or None."""
        return None

    def load(self) -> Any:
        return None

    def score(self, model: Any, wave: np.ndarray, job: FileJob) -> dict:
        raise NotImplementedError

    def run_files(self, transcripts: dict | None, speakers: dict | None) -> dict[str, list[Path]]:
        """Files this family scores once per run besides the rows' (role -> files), e.g. the training
        files that give the speaker centroids; their scores reach ``run_found``."""
        return {}

    def run_found(self, scored: dict[str, list[dict]]) -> dict:
        """What ``run_files``' scores (role -> each file's) give every file's ``finish`` (its ``found``)."""
        return {}

    def depends_on(self, job: FileJob) -> dict:
        """What else of ``job`` the file's score depends on (values; a Path counts by its contents)."""
        return {}

    def finish(self, row: dict, found: dict) -> None:
        """Turn ``row``'s raw values (one utterance) into its columns' values, in place; ``found``: what
        every family's ``run_found`` gave. Every row comes here, also one its family did not score
        (System.families, distances=False): leave such a row as it is."""
