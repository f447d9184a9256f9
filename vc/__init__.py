"""vc: attention-based (Tacotron-style) parallel voice conversion."""

__version__ = "0.1.0"

__all__ = ["Converter", "__version__"]


def __getattr__(name):
    # Imported lazily so `import vc` stays cheap for the CLI and the config.
    if name == "Converter":
        from vc.inference import Converter

        return Converter
    raise AttributeError(f"module 'vc' has no attribute {name!r}")
