"""What every config section does: the keys that must be positive, odd or one of some values are named
in class lists and checked when the section is built, so an error names its key wherever the section
comes from (YAML, an override, a checkpoint, a test's constructor call)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from vc.errors import ConfigError


@dataclass
class Section:
    """A section's checks. A subclass lists its own keys (each class's lists are checked, a subclass's
    added to its parents'), and check() holds what a list cannot say."""

    # Where the section stands in the config, for its errors: "audio", "model"; a sub-section's dotted place.
    NAME: ClassVar[str] = ""
    POSITIVE: ClassVar[tuple[str, ...]] = ()
    ODD: ClassVar[tuple[str, ...]] = ()  # odd, to keep lengths (convolution kernels)
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {}  # text keys with a fixed set of values

    def __post_init__(self) -> None:
        for cls in type(self).__mro__:
            for key in vars(cls).get("POSITIVE", ()):
                if getattr(self, key) <= 0:
                    raise ConfigError(f"{self.NAME}.{key} must be positive, got {getattr(self, key)}")
            for key in vars(cls).get("ODD", ()):
                if getattr(self, key) % 2 == 0:
                    raise ConfigError(
                        f"{self.NAME}.{key} must be odd (to keep lengths), got {getattr(self, key)}"
                    )
        for cls in type(self).__mro__:
            for key, allowed in vars(cls).get("CHOICES", {}).items():
                if getattr(self, key) not in allowed:
                    raise ConfigError(
                        f"{self.NAME}.{key} must be one of {', '.join(allowed)}, got {getattr(self, key)!r}"
                    )
        self.check()

    def check(self) -> None:
        """Value checks the lists cannot express; a ConfigError names the key."""

    @classmethod
    def upgrade(cls, values: dict[str, Any]) -> dict[str, Any]:
        """A stored section (a checkpoint's, an experiment's config.yaml) from an older version, in today's
        keys: a section whose keys moved maps them here (only stored configs: one written now spells the
        new keys)."""
        return values
