"""Progress: a bar on a terminal only; in logs, a plain line now and then (issue 12, item 4)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import soundfile as sf

from tests.helpers import speech_like

REPO = Path(__file__).resolve().parents[1]


def test_off_a_terminal_progress_is_a_few_plain_log_lines(caplog, monkeypatch):
    from vc.progress import progress

    monkeypatch.delenv("VC_PROGRESS", raising=False)
    with caplog.at_level(logging.INFO, logger="vc.progress"):
        assert sum(progress(range(1000), desc="items", unit="item", every_percent=25)) == 499500
        with progress(total=10, desc="files", unit="file", every_seconds=3600, every_percent=50) as bar:
            for _ in range(10):
                bar.update(1)
                bar.set_postfix(loss="0.5")
        with progress(total=10, desc="skipped", disable=True) as bar:
            bar.update(10)
    lines = [record.getMessage() for record in caplog.records]
    items = [line for line in lines if line.startswith("items:")]
    assert 4 <= len(items) <= 6 and items[-1].startswith("items: done 1000/1000 item (100%)"), items
    files = [line for line in lines if line.startswith("files:")]
    assert len(files) == 2 and "loss=0.5" in files[-1], files  # 50 %, then done
    assert not [line for line in lines if line.startswith("skipped")]
    assert not any("\r" in line for line in lines)


def test_progress_keeps_tqdms_call_shape_for_the_bar(monkeypatch):
    from tqdm import tqdm

    from vc.progress import progress

    monkeypatch.setenv("VC_PROGRESS", "bar")
    bar = progress(
        total=3,
        desc="x",
        unit="file",
        disable=False,
        initial=1,
        dynamic_ncols=True,
        file=open(os.devnull, "w"),
    )
    assert isinstance(bar, tqdm) and bar.total == 3 and bar.n == 1
    bar.close()


def test_vc_convert_into_a_log_has_no_carriage_returns(tmp_path, checkpoint):  # noqa: F811
    folder = tmp_path / "in"
    folder.mkdir()
    for k in range(3):
        sf.write(folder / f"u{k}.wav", speech_like(0.5, seed=k), 16000)
    env = {key: value for key, value in os.environ.items() if key != "VC_PROGRESS"}
    env["PYTHONPATH"] = str(REPO)
    with open(tmp_path / "stage4.log", "w") as log:  # what a recipe's stage log gets
        result = subprocess.run(
            [sys.executable, "-m", "vc.cli", "convert", "--checkpoint", str(checkpoint)]
            + ["--out-dir", str(tmp_path / "out"), str(folder)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=300,
        )
    text = (tmp_path / "stage4.log").read_text()
    assert result.returncode == 0, text
    assert "\r" not in text, repr(text[:500])
    assert "converting: done 3/3 file (100%)" in text, text
