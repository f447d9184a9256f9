"""One CLI convention: help with a description, an example and defaults; --out-dir folders; --set
overrides; starter configs by name; the conversion's thread count."""

from __future__ import annotations

import pytest
import torch

from vc.cli import build_parser, convert_threads, main
from vc.config import load_config, starter_configs
from vc.errors import ConfigError


def subcommands() -> dict:
    parser = build_parser()
    return next(a for a in parser._actions if a.dest == "command").choices


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_subcommand_help_has_a_description_an_example_and_defaults(name):
    text = subcommands()[name].format_help()
    example = text.lower().split("example:")
    assert len(example) == 2 and "vc " in example[1], text
    description = text.split("\n\n")[1]
    assert description.strip() and description.strip()[0].isupper()


def test_help_shows_the_defaults():
    assert "(default: 8)" in subcommands()["convert"].format_help()  # --batch-size
    assert "(default 2000)" in subcommands()["compare"].format_help()  # --resamples, written in its help


def test_folders_are_out_dir_and_the_old_out_still_works(tmp_path):
    parser = build_parser()
    new = parser.parse_args(["train", "--config", "default", "--out-dir", "exp/a", "--set", "train.seed=2"])
    old = parser.parse_args(["train", "--config", "default", "--out", "exp/a", "train.seed=2"])
    assert new.out == old.out == "exp/a"
    assert new.set_overrides == ["train.seed=2"] and old.overrides == ["train.seed=2"]


def test_starter_configs_load_by_name_and_are_listed_in_the_help():
    assert {"default", "student", "long", "any2one"} <= set(starter_configs())
    assert load_config("student").model.kind == "nonautoregressive"
    assert load_config("default").model.kind == "attention"
    assert "default, " in subcommands()["train"].format_help().replace("\n", " ").replace("  ", " ")
    with pytest.raises(ConfigError, match="starter configs by name"):
        load_config("no_such_config")


def test_conversion_threads_come_from_the_flag_then_vc_threads(monkeypatch):
    monkeypatch.delenv("VC_THREADS", raising=False)
    assert convert_threads(3) == 3
    monkeypatch.setenv("VC_THREADS", "2")
    assert convert_threads(None) == 2 and convert_threads(1) == 1
    monkeypatch.setenv("VC_THREADS", "two")
    with pytest.raises(ConfigError, match="VC_THREADS"):
        convert_threads(None)


def test_vc_convert_sets_the_thread_count(checkpoint, tmp_path, monkeypatch):
    import soundfile as sf

    from tests.helpers import speech_like

    monkeypatch.delenv("VC_THREADS", raising=False)
    before = torch.get_num_threads()
    sf.write(tmp_path / "in.wav", speech_like(0.5), 16000)
    try:
        args = [
            "convert",
            "--checkpoint",
            str(checkpoint),
            str(tmp_path / "in.wav"),
            str(tmp_path / "out.wav"),
        ]
        assert main([*args, "--threads", "1", "--no-progress"]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
