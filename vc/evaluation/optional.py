"""Optional evaluation packages: quiet imports and a clear word when one is missing."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.resources
import sys
import types
import warnings
from collections.abc import Iterator

from vc import DIST_NAME
from vc.packages import missing

INSTALL_HINT = f"pip install '{DIST_NAME}[eval]'"


@contextlib.contextmanager
def pkg_resources_stand_in() -> Iterator[None]:
    """Let an old package that imports ``pkg_resources`` load where setuptools >= 81 dropped it.

    pyworld, pysptk and webrtcvad (used by resemblyzer) import it only to read
    their own version or locate bundled files. When it is absent, a stand-in
    answering those two calls exists for the duration of the import only, so no
    other code ever sees it. Library warnings raised while importing are not
    the user's business and are silenced.
    """
    stand_in = None
    if missing("pkg_resources"):
        stand_in = types.ModuleType("pkg_resources")
        stand_in.get_distribution = lambda name: types.SimpleNamespace(
            version=importlib.metadata.version(name)
        )
        stand_in.resource_filename = lambda package, name: str(importlib.resources.files(package) / name)
        sys.modules["pkg_resources"] = stand_in
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if stand_in is not None and sys.modules.get("pkg_resources") is stand_in:
            del sys.modules["pkg_resources"]
