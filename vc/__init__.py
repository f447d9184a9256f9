"""vc: attention-based (Tacotron-style) parallel voice conversion."""

from importlib.metadata import PackageNotFoundError, version

# The name on the package index (`pip install vc-tacotron`); `vc` there is an unrelated package.
DIST_NAME = "vc-tacotron"
# pyproject.toml's version, for a source tree used without installed metadata (tests check they agree).
SOURCE_VERSION = "0.2.0"

try:
    # Recorded in every checkpoint (vc.artifacts.checkpoint), so it must be the installed release's.
    __version__ = version(DIST_NAME)
except PackageNotFoundError:
    __version__ = SOURCE_VERSION

__all__ = ["Converter", "__version__"]


def __getattr__(name):
    # Imported lazily so `import vc` stays cheap for the CLI and the config.
    if name == "Converter":
        from vc.inference import Converter

        return Converter
    raise AttributeError(f"module 'vc' has no attribute {name!r}")
