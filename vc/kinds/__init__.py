"""Model kinds: each one module that owns its network, its training step, its dev views and the choices
conversion makes for it (vc/kinds/base.py says what a kind answers).

The model's training job, the monitor, the Converter, teacher forcing and the durations tools ask
``get_kind(config.model.kind)``. Adding a kind is one module and one line in KINDS. Importing this
package's ``model_sections`` gives vc.config each kind's model section (the class KINDS names for it)
when a config is read.
"""

from __future__ import annotations

from torch import nn

from vc.config import ModelConfig
from vc.errors import ConfigError
from vc.kinds.attention import ATTENTION
from vc.kinds.base import DevViews, ModelKind
from vc.kinds.nonautoregressive import NONAUTOREGRESSIVE
from vc.kinds.recognition_synthesis import RECOGNITION_SYNTHESIS

KINDS: dict[str, ModelKind] = {
    kind.name: kind for kind in (ATTENTION, NONAUTOREGRESSIVE, RECOGNITION_SYNTHESIS)
}


def model_sections() -> dict[str, type[ModelConfig]]:
    """model.kind -> its section's class, what KINDS holds now: vc.config asks it, when it reads a config,
    through the package's entry point "vc: model_sections" (pyproject.toml)."""
    return {name: kind.config for name, kind in KINDS.items()}


def get_kind(name: str) -> ModelKind:
    """The kind model.kind names; a ConfigError listing the known ones for any other name."""
    try:
        return KINDS[name]
    except KeyError:
        raise ConfigError(f"model.kind must be one of {', '.join(KINDS)}, got {name!r}") from None


def build_model(n_mels: int, config: ModelConfig) -> nn.Module:
    """The network of the kind model.kind names."""
    return get_kind(config.kind).build(n_mels, config)


__all__ = ["KINDS", "DevViews", "ModelKind", "build_model", "get_kind", "model_sections"]
