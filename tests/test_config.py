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


# The model section of each kind: the shared settings (encoder, postnet) and the kind's own (vc/kinds/).
FLAT_STORED_MODEL = {  # a checkpoint's model section from before the kinds had their own: every kind's keys
    "kind": "nonautoregressive",
    "encoder_hidden_dim": 64,
    "attention_type": "location",
    "attention_dim": 128,
    "reduction_factor": 2,
    "decoder_rnn_dim": 256,
    "parallel_decoder_layers": 3,
    "duration_predictor_layers": 2,
    "postnet_channels": 128,
}


def test_each_kind_reads_its_own_section():
    assert type(load_config("default").model).__name__ == "AttentionConfig"
    student = load_config("student").model
    assert type(student).__name__ == "NonAutoregressiveConfig" and not hasattr(student, "attention_dim")
    recognition_synthesis = load_config("recognition_synthesis").model
    assert not hasattr(recognition_synthesis, "duration_predictor_layers")
    assert recognition_synthesis.parallel_decoder_layers == 6


def test_a_setting_of_another_kind_is_named_as_such():
    with pytest.raises(
        ConfigError,
        match="model.attention_dim is a setting of model.kind attention, not of nonauto",
    ):
        Config.from_dict({"model": {"kind": "nonautoregressive", "attention_dim": 8}})
    with pytest.raises(
        ConfigError, match="model.duration_predictor_layers is a setting of model.kind nonauto"
    ):
        load_config("recognition_synthesis", ["model.duration_predictor_layers=1"])
    with pytest.raises(ConfigError, match="unknown config key 'model.attention_dimm'"):
        load_config("default", ["model.attention_dimm=1"])


def test_a_stored_config_from_before_the_sections_loads_without_the_other_kinds_settings():
    with pytest.raises(ConfigError, match="model.attention_type is a setting of model.kind attention"):
        Config.from_dict({"model": FLAT_STORED_MODEL})
    model = Config.from_dict({"model": FLAT_STORED_MODEL}, stored=True).model
    assert type(model).__name__ == "NonAutoregressiveConfig"
    assert (model.encoder_hidden_dim, model.parallel_decoder_layers, model.postnet_channels) == (64, 3, 128)
    assert not hasattr(model, "reduction_factor")
    with pytest.raises(ConfigError, match="unknown config key 'model.typo'"):  # a stored typo is still one
        Config.from_dict({"model": {**FLAT_STORED_MODEL, "typo": 1}}, stored=True)


def test_a_new_kind_by_override_keeps_the_shared_settings_and_takes_its_own_defaults():
    config = load_config("default", ["model.encoder_hidden_dim=32", "model.kind=nonautoregressive"])
    assert type(config.model).__name__ == "NonAutoregressiveConfig"
    assert config.model.encoder_hidden_dim == 32 and config.model.parallel_decoder_layers == 6
    config = config.with_overrides(["model.parallel_decoder_layers=2"])
    assert config.model.parallel_decoder_layers == 2
    assert Config.from_dict(config.to_dict()) == config  # the YAML round trip keeps the kind's class
    with pytest.raises(
        ConfigError, match="model.kind must be one of attention, nonautoregressive, recognition_synthesis"
    ):
        load_config("default", ["model.kind=gan"])
    with pytest.raises(ConfigError, match="model.parallel_decoder_kernel must be odd"):
        load_config("student", ["model.parallel_decoder_kernel=4"])


def test_kind_only_training_settings_from_the_train_section_are_read_into_the_kinds():
    """train.stop_pos_weight, guided attention, duration_loss_weight and until_converts moved into the model
    sections of the kinds that use them: an older config or checkpoint and an old override still read."""
    old = {
        "model": {"kind": "attention"},
        "train": {"stop_pos_weight": 3.0, "guided_attention_weight": 0.5, "until_converts": True,
                  "converts_focus": 0.6, "duration_loss_weight": 2.0, "max_steps": 7},
    }  # fmt: skip
    for stored in (False, True):
        config = Config.from_dict(old, stored=stored)
        model = config.model
        assert (model.stop_pos_weight, model.guided_attention_weight) == (3.0, 0.5)
        assert (model.until_converts, model.converts_focus, config.train.max_steps) == (True, 0.6, 7)
        assert not hasattr(model, "duration_loss_weight")  # not the attention model's: it changed nothing
        assert not hasattr(config.train, "stop_pos_weight")
    student = Config.from_dict({"model": {"kind": "nonautoregressive"}, "train": {"duration_loss_weight": 2.0,
                                "stop_pos_weight": 9.0}})  # fmt: skip
    assert student.model.duration_loss_weight == 2.0 and not hasattr(student.model, "stop_pos_weight")
    assert load_config("default", ["train.until_converts=true"]).model.until_converts is True
    assert load_config("default").model.until_converts is False  # its whole budget since 2026-12-06
    with pytest.raises(ConfigError, match="model.until_converts is a setting of model.kind attention"):
        load_config("student", ["train.until_converts=true"])
