"""Scores kept on disk: a file scored once is not scored again while nothing its score depends on changed.

Every metric family scores one file at a time (vc/evaluation/metric.py), so the cache keeps one entry per
file and family, keyed on everything that score depends on: the file's bytes, the sample rate it is read
at, what the family says it depends on besides (the reference's bytes and the F0 method for the
distances, the transcript for the error rates), the family's own version and the versions of the
packages that compute it. No path is part of a key: the same recordings scored from another folder, by
another run or as another row (the natural target, and the target read as a held-out voice) are scored
once. A ceiling row's files are made by the run's vocoder path, so they hit the cache exactly when that
path made the same bytes.

The entries are small JSON files under the cache folder (two hex digits of the key, then the key), each
written atomically; an unreadable entry is scored again and rewritten.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from pathlib import Path
from typing import Any

import numpy as np

from vc.evaluation.metric import FileJob, Metric
from vc.fileio import atomic_write_text

CHUNK = 1 << 20


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {"__array__": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot keep a {type(value).__name__} in the score cache")


def _decode(entry: dict) -> Any:
    if "__array__" in entry:
        return np.asarray(entry["__array__"], dtype=entry["dtype"])
    return entry


class ScoreCache:
    """One folder of per-file, per-family scores (see the module's docstring)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._digests: dict[tuple[str, int, int], str] = {}
        self._versions: dict[str, dict[str, str | None]] = {}

    def digest(self, path: str | Path) -> str:
        """sha256 of a file's bytes (once per file, size and modification time, per cache object)."""
        stat = Path(path).stat()
        memo = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
        if memo not in self._digests:
            sha = hashlib.sha256()
            with open(path, "rb") as handle:
                while block := handle.read(CHUNK):
                    sha.update(block)
            self._digests[memo] = sha.hexdigest()
        return self._digests[memo]

    def key(self, metric: Metric, job: FileJob) -> str:
        if metric.name not in self._versions:
            self._versions[metric.name] = {name: package_version(name) for name in metric.packages}
        inputs = {
            name: self.digest(value) if isinstance(value, Path) else value
            for name, value in metric.depends_on(job).items()
        }
        described = {
            "family": metric.name,
            "version": metric.version,
            "packages": self._versions[metric.name],
            "file": self.digest(job.path),
            "sample_rate": job.sample_rate,
            "inputs": inputs,
        }
        return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def read(self, key: str) -> dict | None:
        """The kept values of ``key``, or None (absent or unreadable: scored again)."""
        try:
            values = json.loads(self._path(key).read_text(), object_hook=_decode)
        except (OSError, ValueError):
            return None
        return values if isinstance(values, dict) else None

    def write(self, key: str, values: dict) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(values, default=_encode) + "\n")
