"""A package people can install anywhere (issue 34): its name, version, licences and entry points,
and a core install that needs no C compiler (pyworld and pysptk only in the eval extra)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf

import vc
from vc.cli import main

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_version_flag_prints_the_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"vc {vc.__version__}\n"


def test_plain_vc_prints_the_help_and_succeeds(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: vc") and "convert" in out and "score" in out


def test_python_dash_m_vc_is_the_vc_command():
    done = subprocess.run(
        [sys.executable, "-m", "vc", "--version"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0 and done.stdout == f"vc {vc.__version__}\n", done.stderr


def test_the_version_and_the_distribution_name_come_from_pyproject():
    """A source tree without installed metadata falls back to the constant, which must agree."""
    assert PROJECT["project"]["version"] == vc.__version__ == vc.SOURCE_VERSION == "0.2.0"
    assert PROJECT["project"]["name"] == vc.DIST_NAME != "vc"  # `vc` on PyPI is an unrelated package


def test_licences_and_notices_ship_with_the_package():
    assert "Apache License\n                           Version 2.0" in (ROOT / "LICENSE").read_text()
    assert PROJECT["project"]["license"] == {"text": "Apache-2.0"}
    notice = (ROOT / "vc" / "artifacts" / "pretrained" / "NOTICE").read_text()
    for words in ("CMU ARCTIC", "bdl", "slt", "Carnegie Mellon University", "arctic_bdl_slt.pt"):
        assert words in notice
    data = PROJECT["tool"]["setuptools"]["package-data"]
    assert "NOTICE" in data["vc.artifacts.pretrained"] and "py.typed" in data["vc"]
    assert (ROOT / "vc" / "py.typed").is_file()
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## 0.2.0" in changelog and "## 0.1.0" in changelog


def test_the_core_install_needs_no_c_compiler():
    names = [dep.split(">")[0].split("=")[0] for dep in PROJECT["project"]["dependencies"]]
    assert not {"pyworld", "pysptk"} & set(names)
    extra = " ".join(PROJECT["project"]["optional-dependencies"]["eval"])
    assert "pyworld" in extra and "pysptk" in extra


BLOCKED = "import sys; sys.modules['pyworld'] = None; sys.modules['pysptk'] = None; "


def test_converting_imports_without_pyworld_and_pysptk():
    code = BLOCKED + (
        "import vc, vc.cli, vc.inference, vc.artifacts.pretrained, vc.evaluation.scoring, vc.training.selection, vc.training.monitor; "
        "vc.cli.build_parser(); print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.stdout == "ok\n", done.stderr


def test_without_pyworld_scoring_fails_with_one_line_that_says_how_to_install(tmp_path, monkeypatch, capsys):
    from vc.errors import VcError
    from vc.evaluation import metrics

    monkeypatch.setitem(sys.modules, "pyworld", None)
    metrics.analysis_libraries.cache_clear()
    try:
        with pytest.raises(VcError, match=r"pyworld and pysptk.*pip install 'vc-tacotron\[eval\]'"):
            metrics.analysis_libraries()
        for name in ("converted", "reference"):
            (tmp_path / name).mkdir()
            sf.write(tmp_path / name / "a.wav", [0.0] * 1600, 16000)
        out = tmp_path / "scores.txt"
        argv = ["score", "--no-progress", "--no-ceiling", "--no-natural", "--out", str(out)]
        code = main(
            [*argv, "--converted", str(tmp_path / "converted"), "--reference", str(tmp_path / "reference")]
        )
    finally:
        metrics.analysis_libraries.cache_clear()
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith("vc score: error: ") and "pip install 'vc-tacotron[eval]'" in err
    assert not out.exists()
