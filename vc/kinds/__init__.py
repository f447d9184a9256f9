"""Model kinds: each one module that owns its network, its training step, its dev views and the choices
conversion makes for it (vc/kinds/base.py says what a kind answers).

The model's training job, the monitor, the Converter, teacher forcing and the durations tools ask
``get_kind(config.model.kind)``. Adding a kind is one module here and one line in KINDS, and its model
section in vc/settings/kinds.py (a class and a line in MODEL_SECTIONS, which the config floor reads
without importing a kind; a test checks that both name the same class).
"""

from __future__ import annotations

from torch import nn

from vc.errors import ConfigError
from vc.kinds.attention import ATTENTION
from vc.kinds.base import DevViews, ModelKind
from vc.kinds.nonautoregressive import NONAUTOREGRESSIVE
from vc.kinds.recognition_synthesis import RECOGNITION_SYNTHESIS
from vc.settings.kinds import ModelConfig

KINDS: dict[str, ModelKind] = {
    kind.name: kind for kind in (ATTENTION, NONAUTOREGRESSIVE, RECOGNITION_SYNTHESIS)
}


def get_kind(name: str) -> ModelKind:
    """The kind model.kind names; a ConfigError listing the known ones for any other name."""
    try:
        return KINDS[name]
    except KeyError:
        raise ConfigError(f"model.kind must be one of {', '.join(KINDS)}, got {name!r}") from None


def build_model(n_mels: int, config: ModelConfig) -> nn.Module:
    """The network of the kind model.kind names."""
    return get_kind(config.kind).build(n_mels, config)


__all__ = ["KINDS", "DevViews", "ModelKind", "build_model", "get_kind"]
