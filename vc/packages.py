"""Optional packages: whether one is installed and where its files are, found without importing it.

The evaluation extra's scorers, HiFi-GAN's weights package and onnxruntime, Flask: each is asked for
here before any work, so a missing one is one line naming its extra, and a package whose import is
slow or breaks (the weights package imports torchaudio) is never imported just to be found.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def missing(*modules: str) -> list[str]:
    """The modules among ``modules`` that are not installed here."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def package_folder(module: str) -> Path | None:
    """The folder of the installed package ``module``, or None where it is not installed."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))
