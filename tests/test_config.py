from __future__ import annotations

import pytest

from vc.config import Config, dump_config, load_config
from vc.errors import ConfigError


def test_yaml_round_trip(tmp_path):
    config = load_config(
        overrides=["model.reduction_factor=3", "train.learning_rate=0.002", "audio.fmax=8000"]
    )
    path = tmp_path / "config.yaml"
    path.write_text(dump_config(config))
    again = load_config(path)
    assert again == config
    assert again.model.reduction_factor == 3 and again.audio.fmax == 8000.0
    assert isinstance(again.audio.fmax, float)


def test_missing_sections_keep_defaults(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  attention_type: content\n")
    config = load_config(path)
    assert config.model.attention_type == "content" and config.train == Config().train


def test_unknown_key_names_the_valid_keys(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  reduction_facter: 3\n")
    with pytest.raises(
        ConfigError, match=r"unknown config key 'model.reduction_facter'.*model.reduction_factor"
    ):
        load_config(path)
    with pytest.raises(ConfigError, match=r"unknown config key 'train.nope'.*train.max_steps"):
        load_config(overrides=["train.nope=1"])
    with pytest.raises(ConfigError, match=r"unknown config section 'modle'.*model"):
        load_config(overrides=["modle.reduction_factor=1"])


@pytest.mark.parametrize(
    "override,message",
    [
        ("model.reduction_factor=2.5", "expects int"),
        ("train.amp=yes please", "expects bool"),
        ("model.reduction_factor=true", "expects int"),
        ("audio.fmin=low", "expects float"),
    ],
)
def test_wrong_type_is_an_error(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(overrides=[override])


def test_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
