"""Models that ship inside the package, so `vc convert in.wav out.wav` works right after install.

``models.json`` beside this file lists them: file name, what they convert, the
data and the recipe command that made them, and the scores `vc score` gave
them. The files are inference-only exports (`vc export`: fp16 weights, config,
feature statistics and the Griffin-Lim network inside).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from vc.errors import CheckpointError

INDEX = "models.json"


@dataclass
class PretrainedModel:
    name: str
    file: str
    description: str
    training_data: str
    licence: str
    recipe: str
    scores: dict = field(default_factory=dict)  # on its training source's eval utterances
    scored_on: str = ""
    # voice -> scores of the same eval prompts read by a voice it never heard (recipe stage 8),
    # "input Whisper WER %" being Whisper's WER on that voice's input itself
    heldout_scores: dict = field(default_factory=dict)
    default: bool = False

    @property
    def path(self) -> Path:
        return Path(str(resources.files(__name__) / self.file))


def list_models() -> list[PretrainedModel]:
    """Every bundled model, the default first."""
    index = json.loads((resources.files(__name__) / INDEX).read_text(encoding="utf-8"))
    models = [
        PretrainedModel(name=name, default=name == index["default"], **entry)
        for name, entry in index["models"].items()
    ]
    return sorted(models, key=lambda model: not model.default)


def get_model(name: str | None = None) -> PretrainedModel:
    """The bundled model called ``name``; None: the default one."""
    models = list_models()
    for model in models:
        if model.name == name or (name is None and model.default):
            return model
    known = ", ".join(model.name for model in models)
    raise CheckpointError(f"no bundled model named '{name}'; bundled: {known} (see vc models)")


def model_path(name: str | None = None) -> Path:
    model = get_model(name)
    if not model.path.is_file():
        raise CheckpointError(f"bundled model '{model.name}' is missing from the installation: {model.path}")
    return model.path
