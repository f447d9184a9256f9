"""`vc serve`: a local page to record, convert and compare, and the HTTP API under it (needs Flask:
``pip install 'vc-tacotron[serve]'``)."""

from __future__ import annotations

import importlib.util

from vc import DIST_NAME
from vc.errors import MissingPackageError


def require_flask() -> None:
    """Stop with one line, before any work, when the serve extra is not installed."""
    if importlib.util.find_spec("flask") is None:
        raise MissingPackageError(f"vc serve needs Flask: pip install '{DIST_NAME}[serve]'")
