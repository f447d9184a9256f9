"""A failed run fails loudly and keeps its last good state: write failures and diverging training."""

from __future__ import annotations

import dataclasses
import errno
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.helpers import save_tiny_checkpoint, tensorboard_scalars, tiny_training_config, write_pair_list
from vc.artifacts.checkpoint import load_checkpoint, save_checkpoint, step_checkpoints
from vc.audio import write_audio
from vc.cli import main
from vc.config import dump_config
from vc.errors import CheckpointError, TrainingError, WriteError
from vc.fileio import atomic_save, atomic_write_text
from vc.settings.training import PostfilterConfig
from vc.training.nonfinite import NonFiniteGuard
from vc.training.postfilter import train_postfilter
from vc.training.trainer import model_loop

WRITE_ERRORS = [errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EIO]


def fail_writes_to(monkeypatch, fragment: str, code: int = errno.ENOSPC) -> None:
    """Every write whose file path contains ``fragment`` fails when flushed to disk, with ``code``."""
    real_fsync = os.fsync

    def fsync(fd):
        if fragment in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(code, os.strerror(code))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def temp_files(folder: Path) -> list[Path]:
    return list(folder.rglob("*.tmp"))


# ------------------------------------------------------------------------------ write failures


@pytest.mark.parametrize("code", WRITE_ERRORS, ids=[errno.errorcode[c] for c in WRITE_ERRORS])
@pytest.mark.parametrize("writer", ["tensors", "text", "audio"])
def test_a_failed_write_names_the_path_and_reason_and_keeps_the_old_file(tmp_path, monkeypatch, code, writer):
    path = tmp_path / {"tensors": "model.pt", "text": "scores.txt", "audio": "out.wav"}[writer]
    path.write_bytes(b"the previous output")
    write = {
        "tensors": lambda: atomic_save(path, {"w": torch.zeros(3)}),
        "text": lambda: atomic_write_text(path, "new"),
        "audio": lambda: write_audio(path, np.zeros(160), 16000),
    }[writer]
    fail_writes_to(monkeypatch, path.name, code)
    with pytest.raises(WriteError) as caught:
        write()
    assert str(caught.value) == f"cannot write {path}: {os.strerror(code)}"
    assert path.read_bytes() == b"the previous output" and temp_files(tmp_path) == []


def _train_cli(config, out: Path, *extra: str) -> int:
    config_file = out.parent / "config.yaml"
    config_file.write_text(dump_config(config))
    return main(["train", "--config", str(config_file), "--out", str(out), "--no-progress", *extra])


def test_a_full_disk_while_caching_features_is_one_line(tmp_path, monkeypatch, capsys):
    config = tiny_training_config(tmp_path)
    fail_writes_to(monkeypatch, f"{os.sep}cache{os.sep}")
    assert _train_cli(config, tmp_path / "exp") == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"vc train: error: cannot write {tmp_path / 'cache'}")
    assert last.endswith("No space left on device")
    assert temp_files(tmp_path) == []


def test_a_full_disk_at_a_checkpoint_keeps_the_last_one_and_the_run_resumes(tmp_path, monkeypatch, capsys):
    config = tiny_training_config(tmp_path)
    out = tmp_path / "exp"
    with monkeypatch.context() as patch:
        fail_writes_to(patch, "step0000006.pt")
        assert _train_cli(config, out) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        last
        == f"vc train: error: cannot write {out / 'checkpoints' / 'step0000006.pt'}: No space left on device"
    )
    assert temp_files(tmp_path) == []
    assert [p.name for p in step_checkpoints(out / "checkpoints")] == ["step0000003.pt"]
    assert load_checkpoint(out / "checkpoints" / "best.pt")["step"] == 3
    assert _train_cli(config, out, "--resume") == 0  # the disk has room again
    assert load_checkpoint(step_checkpoints(out / "checkpoints")[-1])["step"] == 6


def test_a_failed_tensorboard_write_is_one_line_naming_the_folder(tmp_path, monkeypatch, capsys):
    from tensorboard.summary.writer.record_writer import RecordWriter

    def full(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(RecordWriter, "write", full)
    out = tmp_path / "exp"
    assert _train_cli(tiny_training_config(tmp_path), out) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == f"vc train: error: cannot write {out / 'tensorboard'}: No space left on device"


# ------------------------------------------------------------------------ non-finite training


def test_the_guard_skips_non_finite_steps_and_stops_after_several_in_a_row():
    guard = NonFiniteGuard(limit=3, what="training")
    assert not guard.skip(1, finite=True)
    assert guard.skip(2, finite=False) and guard.skip(3, finite=False)
    assert not guard.skip(4, finite=True)  # a finite step ends the run of bad ones
    assert guard.skip(5, finite=False) and guard.skip(6, finite=False)
    with pytest.raises(TrainingError, match=r"3 steps in a row up to step 7 .*lower the rate"):
        guard.skip(7, finite=False, advice="lower the rate")
    assert guard.skipped == 5


def test_a_non_finite_loss_skips_that_update_and_training_goes_on(tmp_path, monkeypatch):
    from vc.kinds.attention import AttentionKind

    real = AttentionKind.losses
    calls = []

    def losses(self, model, batch, config, step):
        result = real(self, model, batch, config, step)
        calls.append(step)
        return result._replace(total=result.total * math.nan) if calls == [0, 1] else result

    monkeypatch.setattr(AttentionKind, "losses", losses)
    config = tiny_training_config(tmp_path)
    loop = model_loop(config, tmp_path / "exp", progress=False)
    loop.run()
    loop.job.close()
    assert loop.step == 6 and loop.guard.skipped == 1
    assert all(torch.isfinite(p).all() for p in loop.job.model.parameters())
    assert tensorboard_scalars(tmp_path / "exp" / "tensorboard")["train/opt/skipped_updates"][:2] == [1, 2]


DIVERGE = """
import sys
from vc.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_diverging_run_exits_non_zero_and_leaves_only_finite_checkpoints(tmp_path):
    config = tiny_training_config(tmp_path)
    config.train = dataclasses.replace(config.train, max_steps=40, eval_every=2, keep_checkpoints=100)
    (tmp_path / "config.yaml").write_text(dump_config(config))
    out = tmp_path / "exp"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    argv = ["train", "--config", str(tmp_path / "config.yaml"), "--out", str(out), "--no-progress"]
    result = subprocess.run(
        [sys.executable, "-c", DIVERGE, *argv, "train.learning_rate=1e30"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("vc train: error: training diverged") and "train.learning_rate" in last, last
    assert "done" not in result.stdout and "best checkpoint" not in result.stdout
    for path in out.glob("checkpoints/*.pt"):
        weights = torch.load(path, weights_only=True)["model"]
        assert all(torch.isfinite(w).all() for w in weights.values()), path


def _poison(path: Path) -> None:
    payload = torch.load(path, weights_only=True)
    name = next(iter(payload["model"]))
    payload["model"][name] = torch.full_like(payload["model"][name], math.nan)
    torch.save(payload, path)  # as an older vc could have written it


def test_non_finite_weights_are_never_written_and_refused_when_read(tmp_path, capsys):
    save_tiny_checkpoint(tmp_path / "good.pt")
    payload = torch.load(tmp_path / "good.pt", weights_only=True)
    payload["model"] = {k: v * math.inf for k, v in payload["model"].items()}
    with pytest.raises(CheckpointError, match="refusing to write .*bad.pt: its weights are not finite"):
        save_checkpoint(tmp_path / "bad.pt", payload)
    assert not (tmp_path / "bad.pt").exists() and temp_files(tmp_path) == []
    for step in (1, 2):
        save_tiny_checkpoint(tmp_path / "run" / f"step{step:07d}.pt")
    _poison(tmp_path / "run" / "step0000002.pt")
    with pytest.raises(CheckpointError, match="step0000002.pt holds non-finite weights"):
        load_checkpoint(tmp_path / "run" / "step0000002.pt")
    for argv in (
        ["average", str(tmp_path / "run"), "--out", str(tmp_path / "averaged.pt")],
        ["export", str(tmp_path / "run" / "step0000002.pt"), str(tmp_path / "exported.pt")],
    ):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "non-finite weights" in err, err
    assert not (tmp_path / "averaged.pt").exists() and not (tmp_path / "exported.pt").exists()


def test_a_diverging_post_filter_stops_with_one_error_and_writes_nothing(tmp_path):
    path = tmp_path / "model.pt"
    save_tiny_checkpoint(path)
    pairs = write_pair_list(tmp_path, 3)
    options = PostfilterConfig(
        max_steps=40, warmup_steps=1, batch_size=2, crop_frames=8, valid_files=1, channels=8,
        learning_rate=1e30,
    )  # fmt: skip
    with pytest.raises(TrainingError, match="post-filter training diverged"):
        train_postfilter([pairs], path, tmp_path / "postfilter.pt", options, progress=False)
    assert not (tmp_path / "postfilter.pt").exists()


def test_a_diverging_mel2linear_network_stops_with_one_line_and_writes_nothing(tmp_path, capsys):
    folder = tmp_path / "wavs"
    folder.mkdir()
    for k in range(4):
        write_audio(folder / f"utt{k}.wav", 0.3 * np.sin(np.arange(8000) * (0.05 + 0.01 * k)), 16000)
    out = tmp_path / "mel2linear.pt"
    argv = ["mel2linear-train", str(folder), "--out", str(out), "--no-progress", "--max-steps", "40"]
    assert (
        main([*argv, "--batch-size", "2", "--valid-files", "1", "--set", "mel2linear.learning_rate=1e30"])
        == 1
    )
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("vc mel2linear-train: error: mel -> linear training diverged"), last
    assert "mel2linear.learning_rate" in last and not out.exists()
