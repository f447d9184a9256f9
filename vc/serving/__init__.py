"""`vc serve`: a local page to record, convert and compare, and the HTTP API under it (needs Flask:
``pip install 'vc-tacotron[serve]'``)."""

from __future__ import annotations

from vc import DIST_NAME
from vc.errors import MissingPackageError
from vc.packages import missing


def require_flask() -> None:
    """Stop with one line, before any work, when the serve extra is not installed."""
    if missing("flask"):
        raise MissingPackageError(f"vc serve needs Flask: pip install '{DIST_NAME}[serve]'")
