"""The whole config: every job's section (vc/settings/) in one Config, strict YAML loading and dotted
overrides.

YAML keys equal dataclass field names equal constructor keyword arguments, so a key means the same thing
everywhere. Unknown keys and wrong types are errors that name the valid keys: a typo must never be
silently ignored. Each section checks its own values when it is built (vc/settings/section.py); Config
checks what ties two sections together, and reads stored configs of older versions.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from vc.errors import ConfigError
from vc.settings.audio import AudioConfig
from vc.settings.inference import InferenceConfig
from vc.settings.kinds import MODEL_SECTIONS, ModelConfig, model_section
from vc.settings.training import AugmentConfig, DataConfig, Mel2LinearConfig, PostfilterConfig, TrainConfig
from vc.settings.vocoders import VocoderConfig


@dataclass
class Config:
    audio: AudioConfig = field(default_factory=AudioConfig)
    model: ModelConfig = field(default_factory=lambda: model_section("attention")())
    inference: InferenceConfig = field(default_factory=InferenceConfig)
    vocoder: VocoderConfig = field(default_factory=VocoderConfig)
    data: DataConfig = field(default_factory=DataConfig)
    augment: AugmentConfig = field(default_factory=AugmentConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    mel2linear: Mel2LinearConfig = field(default_factory=Mel2LinearConfig)
    postfilter: PostfilterConfig = field(default_factory=PostfilterConfig)

    def __post_init__(self):
        augment = self.augment
        augments = augment.probability > 0 or augment.recognizer_probability > 0
        if augments and augment.freq_masks > 0 and augment.freq_mask_width >= self.audio.n_mels:
            raise ConfigError(f"augment.freq_mask_width must be below audio.n_mels ({self.audio.n_mels})")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, stored: bool = False) -> Config:
        """A config from its dict (YAML). ``stored``: a config a checkpoint or experiment folder holds;
        those from before each kind had its own section list every kind's model settings, and the
        other kinds' are dropped; a section whose keys have moved since reads them as they were
        (Section.upgrade: a vocoder's settings moved into its own section)."""
        data = _without_retired(data or {})
        if stored:
            _upgraded(data)
        model = data.get("model", {})
        section = model_section(model.get("kind", "attention") if isinstance(model, dict) else "attention")
        if isinstance(model, dict):
            data["model"] = _other_kinds_dropped(model, section) if stored else model
            _check_model_keys(data["model"], section)
        return _build(cls, data, prefix="", classes={"model": section})

    def with_overrides(self, overrides: list[str]) -> Config:
        """The config with each section.key=value set, in order. A new model.kind keeps the shared model
        settings and takes that kind's defaults for its own (set them after it)."""
        data = self.to_dict()
        for item in overrides:
            key = item.split("=", 1)[0].strip()
            if key.startswith("train.") and key[len("train.") :] in MOVED_TO_MODEL:
                item = "model." + item.strip()[len("train.") :]  # its section now (MOVED_TO_MODEL)
            kind = data["model"]["kind"]
            try:
                _apply_override(data, item)
            except ConfigError:
                key = item.split("=", 1)[0].strip()
                if key.startswith("model."):  # another kind's setting: say so
                    _check_model_keys({"kind": kind, key[len("model.") :]: None}, model_section(kind))
                raise
            if data["model"]["kind"] != kind:
                new = model_section(data["model"]["kind"])
                shared = {k: v for k, v in data["model"].items() if k in _shared_keys()}
                data["model"] = {**dataclasses.asdict(new()), **shared}
        return Config.from_dict(data)


# Keys of dropped experiments (docs/ablation.md names each and the commit that removed it) -> the value
# that means what the code does now (for most, "off"). Stored configs (checkpoints from before the
# removal) load when they hold that value; any other value is an error that names the experiment.
RETIRED = {
    ("train", "attention_entropy_weight"): 0.0,
    ("train", "attention_entropy_from"): None,  # any value: it only mattered with a weight
    ("train", "spectral_loss"): "l1+l2",
    ("train", "init_encoder"): "",
    ("train", "guided_attention_decay"): 1.0,
    ("postfilter", "adversarial"): True,  # False (L1 alone, --no-adversarial) removed in e23b1f5
    ("model", "decoder"): "parallel",  # the recognition-synthesis converter's; attention removed (issue 99)
}


# Training settings that one kind's losses or stopping rule read, moved from the train section into the
# model section of the kinds that have them (each kind owns its settings, vc/settings/kinds.py). An older
# config or checkpoint's train.KEY is read as model.KEY when model.kind's section has it, and dropped when
# it has not (it changed nothing for that kind); an override train.KEY=VALUE is read as model.KEY=VALUE.
MOVED_TO_MODEL = (
    "stop_pos_weight",
    "guided_attention_sigma",
    "guided_attention_weight",
    "duration_loss_weight",
    "until_converts",
    "converts_focus",
    "converts_gain_db",
)


def _moved_to_model(data: dict[str, Any]) -> None:
    """train.KEY of MOVED_TO_MODEL -> model.KEY (where model.kind's section has it; else dropped), in place."""
    train, model = data.get("train"), data.get("model", {})
    if not isinstance(train, dict) or not isinstance(model, dict):
        return  # a malformed section: reading it says what is wrong
    section = model_section(model.get("kind", "attention"))
    fields = {f.name for f in dataclasses.fields(section)}
    for key in MOVED_TO_MODEL:
        if key in train:
            value = train.pop(key)
            if key in fields:
                model.setdefault(key, value)
    if model:
        data["model"] = model


def _upgraded(data: dict[str, Any]) -> None:
    """Each stored section in today's keys (its class's Section.upgrade), in place."""
    for name, kind in _field_types(Config).items():
        if isinstance(data.get(name), dict):
            data[name] = kind.upgrade(data[name])


def _without_retired(data: dict[str, Any]) -> dict[str, Any]:
    data = {section: dict(values) if isinstance(values, dict) else values for section, values in data.items()}
    _moved_to_model(data)
    for (section, key), off in RETIRED.items():
        values = data.get(section)
        if not isinstance(values, dict) or key not in values:
            continue
        value = values.pop(key)
        if off is not None and value != off:
            raise ConfigError(
                f"{section}.{key} was an experiment and has been removed (docs/ablation.md names the "
                f"commit); only {off!r}, what the code does now, is still read"
            )
    return data


def _shared_keys() -> set[str]:
    """The model settings every kind has (ModelConfig's)."""
    return {f.name for f in dataclasses.fields(ModelConfig)}


def _own_keys(section: type) -> set[str]:
    """The keys a kind's section adds to the shared model settings."""
    return {f.name for f in dataclasses.fields(section)} - _shared_keys()


def _other_kinds_dropped(model: dict[str, Any], section: type) -> dict[str, Any]:
    """A stored model section without the settings of the kinds it is not (see Config.from_dict)."""
    others = set().union(*map(_own_keys, MODEL_SECTIONS.values())) - _own_keys(section)
    return {key: value for key, value in model.items() if key not in others}


def _check_model_keys(model: dict[str, Any], section: type) -> None:
    """A key of another kind's section is named as such (an unknown one _build names)."""
    for key in model:
        owners = [name for name, other in MODEL_SECTIONS.items() if key in _own_keys(other)]
        if owners and key not in _own_keys(section):
            raise ConfigError(
                f"model.{key} is a setting of model.kind {' / '.join(owners)}, not of {model.get('kind', 'attention')}"
            )


def _field_types(cls) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _build(cls, data: dict[str, Any], prefix: str, classes: dict[str, type] | None = None):
    """``cls`` from ``data``, every key checked; ``classes``: the class of a section other than its
    type hint's (the model section's kind)."""
    if not isinstance(data, dict):
        raise ConfigError(f"'{prefix.rstrip('.') or 'config'}' must be a mapping, got {data!r}")
    types_ = {**_field_types(cls), **(classes or {})}
    unknown = sorted(set(data) - set(types_))
    if unknown:
        raise ConfigError(
            f"unknown config key '{prefix}{unknown[0]}'; valid keys: {', '.join(prefix + k for k in types_)}"
        )
    kwargs = {}
    for name, value in data.items():
        kind = types_[name]
        key = prefix + name
        if dataclasses.is_dataclass(kind):
            kwargs[name] = _build(kind, value, prefix=key + ".")
        else:
            kwargs[name] = _check_type(key, value, kind)
    return cls(**kwargs)


def _check_type(key: str, value: Any, kind: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(kind):
            try:
                return _check_type(key, value, option)
            except ConfigError:
                continue
        raise ConfigError(f"config key '{key}' expects {kind}, got {value!r}")
    if kind is type(None):
        if value is None:
            return None
    elif kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads 1e-3 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind is bool or kind is str:
        if isinstance(value, kind):
            return value
    elif origin is list:
        if isinstance(value, list):
            (item_kind,) = typing.get_args(kind)
            return [_check_type(key, v, item_kind) for v in value]
    else:
        raise ConfigError(f"config key '{key}' has an unsupported type {kind}")
    name = getattr(kind, "__name__", str(kind))
    raise ConfigError(f"config key '{key}' expects {name}, got {value!r}")


def _locate(data: dict[str, Any], dotted: str) -> tuple[dict[str, Any], str]:
    """The section of ``data`` holding the key ``dotted`` (section.key), and the key; an unknown section
    or key is an error that lists the valid ones."""
    parts = dotted.strip().split(".")
    node = data
    for depth, part in enumerate(parts[:-1]):
        if not isinstance(node.get(part), dict):
            valid = ", ".join(k for k, v in node.items() if isinstance(v, dict))
            where = ".".join(parts[: depth + 1])
            raise ConfigError(f"unknown config section '{where}'; valid sections: {valid}")
        node = node[part]
    if parts[-1] not in node:
        prefix = ".".join(parts[:-1])
        valid = ", ".join(f"{prefix}.{k}" if prefix else k for k in node)
        raise ConfigError(f"unknown config key '{dotted}'; valid keys: {valid}")
    return node, parts[-1]


def _apply_override(data: dict[str, Any], item: str) -> None:
    if "=" not in item:
        raise ConfigError(f"override '{item}' must look like section.key=value")
    dotted, raw = item.split("=", 1)
    node, key = _locate(data, dotted)
    if isinstance(node[key], str):  # text fields (paths, names) take the text as typed
        node[key] = raw
        return
    # YAML parses the value so that 3 -> int, 0.5 -> float, true -> bool.
    try:
        node[key] = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        raise ConfigError(f"override '{item}': the value is not valid YAML") from None


# The recipe's configs ship in the package (egs/arctic/vc1/conf links here): `--config default` finds them.
STARTER_DIR = Path(__file__).resolve().parent / "configs"


def starter_configs() -> dict[str, Path]:
    """Name -> file of the configs that ship with the package."""
    return {path.stem: path for path in sorted(STARTER_DIR.glob("*.yaml"))}


def resolve_config_path(path: str | Path) -> Path:
    """A config file, or the name of a starter config (vc/configs/NAME.yaml) when no such file exists."""
    path = Path(path)
    if path.is_file():
        return path
    starters = starter_configs()
    if str(path) in starters:
        return starters[str(path)]
    raise ConfigError(f"config file not found: {path} (starter configs by name: {', '.join(starters)})")


def load_config(
    path: str | Path | None = None, overrides: list[str] | None = None, stored: bool = False
) -> Config:
    """Load a YAML config or a starter config by name (missing sections keep their defaults); apply overrides.
    A file's keys that have moved since (Section.upgrade) are read at their new place, as any file may be an
    older run's config.yaml (vc score --config EXP/config.yaml); a dict or an override must spell the new
    key. ``stored``: an experiment's config.yaml, perhaps from an older version (Config.from_dict)."""
    data: dict[str, Any] = {}
    if path is not None:
        path = resolve_config_path(path)
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if isinstance(data, dict) and not stored:  # from_dict upgrades a stored config itself
        _upgraded(data)
    config = Config.from_dict(data, stored=stored)
    return config.with_overrides(overrides or [])


def dump_config(config: Config) -> str:
    return yaml.safe_dump(config.to_dict(), sort_keys=False)


def config_value(config: Config, dotted: str) -> str:
    """The value of one key (section.key) as text: a string as it is, a section as YAML, anything else as
    the YAML an override would take (3, 0.5, true)."""
    node, key = _locate(config.to_dict(), dotted)
    value = node[key]
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return yaml.safe_dump(value, sort_keys=False).rstrip("\n")
    return yaml.safe_dump(value, default_flow_style=True).splitlines()[0]
