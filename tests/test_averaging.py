"""vc average: the mean weights of a run's last checkpoints as one model file."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tests.helpers import speech_like, tiny_config
from vc import Converter
from vc.artifacts.averaging import average_checkpoints, checkpoints_to_average
from vc.artifacts.checkpoint import load_checkpoint, save_checkpoint
from vc.audio import FeatureStats
from vc.cli import main
from vc.config import Config
from vc.errors import CheckpointError
from vc.kinds import build_model
from vc.settings.vocoders import GriffinLimConfig

N_MELS = 16


def write_snapshots(folder, steps=(100, 200, 300), stats_mean=-2.0, **model):
    """Snapshots of one 'run': the same config and statistics, weights drawn anew per step; ``model``:
    model settings other than tiny_config's."""
    config = Config()
    config.audio = dataclasses.replace(config.audio, n_mels=N_MELS)
    config.model = tiny_config(**model)
    config.vocoder = dataclasses.replace(config.vocoder, griffin_lim=GriffinLimConfig(iters=2))
    stats = FeatureStats(np.full(N_MELS, stats_mean, np.float32), np.ones(N_MELS, np.float32)).to_dict()
    paths = []
    for step in steps:
        torch.manual_seed(step)
        model = build_model(N_MELS, config.model)
        path = folder / f"step{step:07d}.pt"
        save_checkpoint(
            path,
            {
                "step": step,
                "model": model.state_dict(),
                "config": config.to_dict(),
                "stats": {"source": stats, "target": stats},
                "optimizer": {"state": {}},
            },
        )
        paths.append(path)
    return paths


def test_the_average_is_the_mean_of_every_weight_and_converts(tmp_path):
    paths = write_snapshots(tmp_path / "checkpoints")
    out = tmp_path / "checkpoints" / "averaged.pt"
    summary = average_checkpoints(paths, out)
    assert summary["count"] == 3 and summary["steps"] == [100, 200, 300]
    averaged = load_checkpoint(out)
    inputs = [load_checkpoint(p) for p in paths]
    for key, value in averaged["model"].items():
        assert value.dtype == inputs[0]["model"][key].dtype
        if value.is_floating_point():
            expected = sum(p["model"][key] for p in inputs) / 3
            torch.testing.assert_close(value, expected)
    assert averaged["step"] == 300 and averaged["stats"] == inputs[2]["stats"]
    assert "optimizer" not in averaged and averaged["info"]["averaged_steps"] == [100, 200, 300]
    wave, _ = Converter.from_checkpoint(out).convert(speech_like(0.5), 16000)
    assert np.isfinite(wave).all() and wave.size > 0


def test_a_folder_stands_for_its_snapshots_and_last_keeps_the_newest(tmp_path):
    folder = tmp_path / "checkpoints"
    write_snapshots(folder, steps=(300, 100, 200))  # written out of order: the names give the order
    (folder / "best.pt").write_bytes((folder / "step0000200.pt").read_bytes())
    names = [p.name for p in checkpoints_to_average([folder])]
    assert names == ["step0000100.pt", "step0000200.pt", "step0000300.pt"]
    assert [p.name for p in checkpoints_to_average([folder], last=2)] == ["step0000200.pt", "step0000300.pt"]
    with pytest.raises(CheckpointError, match="at least 2"):
        checkpoints_to_average([folder], last=1)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="no stepNNNNNNN.pt"):
        checkpoints_to_average([tmp_path / "empty"])


def test_checkpoints_of_other_runs_or_models_are_refused(tmp_path):
    first = write_snapshots(tmp_path / "a", steps=(100,))
    other_stats = write_snapshots(tmp_path / "b", steps=(200,), stats_mean=-3.0)
    with pytest.raises(CheckpointError, match="different runs"):
        average_checkpoints(first + other_stats, tmp_path / "out.pt")
    other_model = write_snapshots(tmp_path / "c", steps=(200,), decoder_rnn_dim=24)
    with pytest.raises(CheckpointError, match="different models"):
        average_checkpoints(first + other_model, tmp_path / "out.pt")
    assert not (tmp_path / "out.pt").exists()


def test_a_run_resumed_with_other_training_settings_is_one_model(tmp_path):
    # Resumed with another stopping rule, self-reconstruction span or loss weights: the same network.
    before = write_snapshots(tmp_path / "a", steps=(400, 500), until_converts=True, self_steps=150)
    after = write_snapshots(tmp_path / "b", steps=(600,), guided_attention_weight=0.5)
    summary = average_checkpoints(before + after, tmp_path / "out.pt")
    assert summary["steps"] == [400, 500, 600]
    stored = load_checkpoint(tmp_path / "out.pt")["config"]["model"]
    assert stored["until_converts"] is False and stored["guided_attention_weight"] == 0.5  # the newest's
    other_network = write_snapshots(tmp_path / "c", steps=(700,), encoder_input="content")
    with pytest.raises(CheckpointError, match="different models"):
        average_checkpoints(before + other_network, tmp_path / "out2.pt")


def test_cli_writes_the_average_and_never_overwrites_an_input(tmp_path, capsys):
    paths = write_snapshots(tmp_path / "checkpoints")
    before = paths[0].read_bytes()
    assert main(["average", str(paths[0].parent), "--out", str(paths[0])]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is one of the checkpoints to average" in err
    assert paths[0].read_bytes() == before
    out = tmp_path / "averaged.pt"
    assert main(["average", str(paths[0].parent), "--last", "2", "--out", str(out)]) == 0
    assert "2 checkpoints, steps 200, 300" in capsys.readouterr().out
    assert load_checkpoint(out)["info"]["averaged_from"] == ["step0000200.pt", "step0000300.pt"]
    assert main(["average", str(tmp_path / "missing.pt"), str(out), "--out", str(tmp_path / "x.pt")]) == 1
    assert "checkpoint not found" in capsys.readouterr().err


def test_cli_replaces_an_existing_average_only_when_asked(tmp_path, capsys):
    paths = write_snapshots(tmp_path / "checkpoints")
    out = tmp_path / "averaged.pt"
    out.write_bytes(b"the user's file")
    assert main(["average", str(paths[0].parent), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out) in err and "already exists" in err and "--overwrite" in err
    assert out.read_bytes() == b"the user's file"
    assert main(["average", str(paths[0].parent), "--out", str(out), "--overwrite"]) == 0
    assert load_checkpoint(out)["info"]["averaged_steps"] == [100, 200, 300]
    # An input is never replaced, --overwrite or not.
    assert main(["average", str(paths[0].parent), "--out", str(paths[0]), "--overwrite"]) == 1
    assert "is one of the checkpoints to average" in capsys.readouterr().err
