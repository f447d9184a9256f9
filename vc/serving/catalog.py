"""The models `vc serve` offers: the bundled ones and every vc model file under a folder.

A request picks a model by name from this list, never by path, so nothing a
client sends reaches the file system. Each model loads on first use and stays.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from vc.artifacts.checkpoint import FORMAT
from vc.artifacts.pretrained import list_models
from vc.errors import ConfigError, VcError
from vc.fileio import load_marked
from vc.inference.converter import Converter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelEntry:
    name: str  # what the page and the API call it: a bundled name, or the path under --models
    path: Path
    description: str
    bundled: bool


def is_model_file(path: Path) -> bool:
    """Whether ``path`` is a vc checkpoint or exported model (not a companion network, a durations file or
    a feature cache); memory-mapped, so only the small header is read."""
    try:
        load_marked(path, FORMAT, "model", VcError, map_location="cpu", mmap=True)
    except VcError:
        return False
    return True


def find_models(folder: Path) -> list[ModelEntry]:
    """Every model file under ``folder``, named by its path relative to it."""
    found = []
    for path in sorted(folder.rglob("*.pt")):
        if path.is_file() and is_model_file(path):
            name = path.relative_to(folder).as_posix()
            found.append(ModelEntry(name, path, f"{name} under {folder}", bundled=False))
    return found


class ModelCatalog:
    """The bundled models, then those under ``models_dir``; converters load once and are kept."""

    def __init__(self, models_dir: str | Path | None = None, device: str | None = "cpu"):
        entries = [
            ModelEntry(m.name, m.path, m.description, bundled=True) for m in list_models() if m.path.is_file()
        ]
        if models_dir is not None:
            folder = Path(models_dir)
            if not folder.is_dir():
                raise ConfigError(f"--models: not a folder: {folder}")
            entries += find_models(folder)
        self.entries = {entry.name: entry for entry in entries}
        self.default = next(iter(self.entries), None)
        self.device = device
        self._loaded: dict[str, Converter] = {}
        self._lock = threading.Lock()

    def describe(self) -> list[dict]:
        return [
            {
                "name": e.name,
                "description": e.description,
                "bundled": e.bundled,
                "default": e.name == self.default,
            }
            for e in self.entries.values()
        ]

    def converter(self, name: str) -> Converter:
        """The loaded model called ``name`` (KeyError for a name not in the list)."""
        entry = self.entries[name]
        with self._lock:
            if name not in self._loaded:
                log.info("loading %s from %s", name, entry.path)
                self._loaded[name] = Converter.from_checkpoint(entry.path, device=self.device)
            return self._loaded[name]
