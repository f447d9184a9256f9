"""One CLI convention: one module per subcommand, help with a description, an example and defaults;
--out-dir folders; --set overrides; starter configs by name; the conversion's thread count; the
checks a library caller shares."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import yaml

from vc.cli import COMMANDS, build_parser, main
from vc.config import Config, load_config, starter_configs
from vc.errors import ConfigError
from vc.inference.files import DEFAULT_CONVERT_THREADS, convert_threads


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
    assert "%%" not in text  # argparse prints a description as it is: "%%" is for help strings only


def test_each_subcommand_is_one_module_with_its_parser_and_handler():
    for name, sub in subcommands().items():
        module = sub.get_default("func").__module__
        assert module == f"vc.cli.{name.replace('-', '_')}", (name, module)
    assert len(COMMANDS) == len(subcommands())


def test_the_old_names_are_gone():
    assert "vocoder-train" not in subcommands()
    for name in ("convert", "export"):
        options = {o for action in subcommands()[name]._actions for o in action.option_strings}
        assert {"--mel2linear", "--no-mel2linear"} <= options
        assert not {"--vocoder-net", "--no-vocoder-net"} & options


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
    from vc.cli.convert import DEFAULT_THREADS_SHOWN

    assert DEFAULT_THREADS_SHOWN == DEFAULT_CONVERT_THREADS  # the --help names the library's default
    monkeypatch.delenv("VC_THREADS", raising=False)
    assert convert_threads(None) == DEFAULT_CONVERT_THREADS
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


@pytest.mark.parametrize(
    "options,message",
    [
        ([], "needs one of --checkpoint (an attention model), --dtw or --phones"),
        (["--checkpoint", "teacher.pt", "--dtw", "--config", "student"], "needs one of --checkpoint"),
        (["--dtw", "--phones", "--config", "student"], "needs one of --checkpoint"),
        (["--dtw"], "--dtw needs --config"),
        (["--phones"], "--phones needs --config"),
        (
            ["--checkpoint", "teacher.pt", "--set", "model.encoder_reduction_factor=1"],
            "--set goes with --dtw",
        ),
    ],
)
def test_durations_refuses_an_unclear_request_in_one_line(tmp_path, capsys, options, message):
    out = tmp_path / "durations.pt"
    argv = ["durations", "list.tsv", "--features-dir", str(tmp_path), "--out", str(out), *options]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("vc durations: error:") and message in err, err
    assert not out.exists()


def test_durations_checks_are_the_library_s(tmp_path):
    from vc.errors import OutputExistsError
    from vc.training.durations import write_durations

    with pytest.raises(ConfigError, match="--dtw needs --config"):
        write_durations(["list.tsv"], tmp_path, tmp_path / "d.pt", dtw=True)
    (tmp_path / "d.pt").write_bytes(b"kept")
    with pytest.raises(OutputExistsError, match="already exists"):
        write_durations(["list.tsv"], tmp_path, tmp_path / "d.pt", checkpoint="teacher.pt")
    assert (tmp_path / "d.pt").read_bytes() == b"kept"


def test_vc_config_prints_the_config_train_would_resolve_whole_or_by_key(capsys):
    assert main(["config", "--config", "student", "train.max_minutes=5", "--set", "data.batch_size=7"]) == 0
    text = capsys.readouterr().out
    resolved = load_config("student", ["train.max_minutes=5", "data.batch_size=7"])
    assert Config.from_dict(yaml.safe_load(text)) == resolved  # the YAML loads back as the same config
    keys = ["train.max_minutes", "model.kind", "train.amp", "data.train_list"]
    get = [arg for key in keys for arg in ("--get", key)]
    assert main(["config", "--config", "student", "train.max_minutes=5", *get]) == 0
    assert capsys.readouterr().out.split("\n") == ["5.0", "nonautoregressive", "true", "", ""]
    assert main(["config", "--config", "student", "--get", "train.nope"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown config key 'train.nope'" in err and "train.max_minutes" in err


def test_vc_config_prints_the_recipes_budget_and_vocoders_as_shell_lines(capsys, monkeypatch):
    assert (
        main(["config", "--config", "recognition_synthesis", "train.max_minutes=0.05", "--budget", "1.6"])
        == 0
    )
    lines = capsys.readouterr().out.split()
    assert lines == ["max_minutes=0.05", "cap_seconds=3", "scaled_minutes=0.08", "phone_recognizer=1"]
    assert main(["config", "--config", "default", "--budget", "2"]) == 0
    assert "scaled_minutes=40.00" in capsys.readouterr().out.split()
    assert main(["config", "--vocoders", "hifigan,griffin-lim"]) == 0
    assert capsys.readouterr().out.split("\n")[:2] == ["vocoders=hifigan,griffin-lim", "beside='hifigan'"]
    monkeypatch.setattr("vc.packages.missing", lambda *names: list(names))  # no weights installed
    assert main(["config", "--vocoders", "auto"]) == 0
    assert capsys.readouterr().out.split("\n")[:2] == ["vocoders=griffin-lim", "beside=''"]
    for bad in ("hifigan", "griffin-lim,wavenet"):
        assert main(["config", "--vocoders", bad]) == 1
        assert capsys.readouterr().err.strip() == (
            f"vc config: error: --vocoders takes griffin-lim and optionally hifigan (griffin-lim,hifigan), "
            f"got '{bad}'"
        )


def test_a_reader_that_closes_the_pipe_early_gets_no_error_line():
    reader = "pass"  # closes the pipe before vc has started
    run = subprocess.run(
        f"{sys.executable} -m vc config --config default | {sys.executable} -c '{reader}'",
        shell=True, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "error" not in run.stderr and "Traceback" not in run.stderr, run.stderr
