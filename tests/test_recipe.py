"""CI's mini recipe: every stage of egs/arctic/vc1/run.sh on a handful of real ARCTIC utterances."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ARCTIC

RUN = Path(__file__).resolve().parents[1] / "egs" / "arctic" / "vc1" / "run.sh"


@pytest.mark.slow
def test_every_stage_runs_and_writes_its_files(tmp_path):
    if not ARCTIC.is_dir():
        pytest.skip(f"CMU ARCTIC data not found at {ARCTIC}")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    command = [
        str(RUN),
        "--db_root",
        str(ARCTIC),
        "--conf",
        "conf/ci.yaml",
        "--work",
        str(tmp_path),
        "--data_prep_args",
        "--limit 3",
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    exp = tmp_path / "exp" / "bdl_slt_ci"
    for split in ("train", "dev", "eval"):
        assert len((tmp_path / "data" / "bdl_slt" / f"{split}.tsv").read_text().splitlines()) == 3
    assert list((exp / "features").glob("train-*.pt")) and (exp / "stats.json").is_file()
    assert (exp / "checkpoints" / "best.pt").is_file() and list((exp / "tensorboard").iterdir())
    assert (exp / "alignments" / "arctic_b0340_evolution.png").is_file()
    converted = sorted(p.name for p in (exp / "converted" / "eval").glob("*.wav"))
    assert converted == ["arctic_b0440.wav", "arctic_b0441.wav", "arctic_b0442.wav"]
    scores = (exp / "scores.txt").read_text()
    assert "model" in scores and "no conversion" in scores and "Griffin-Lim ceiling" in scores
    for n in range(6):
        assert (exp / "logs" / f"stage{n}.log").is_file()
    last = done.stdout.strip().splitlines()[-3:]
    assert last[0].startswith("checkpoint:") and last[1].startswith("converted:") and "tensorboard" in last[2]
    # idempotent: running again skips training and rewrites the same outputs
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "already done" in again.stdout
