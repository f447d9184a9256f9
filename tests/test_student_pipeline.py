"""The attention model teaches the timing: train it, extract durations, train the student, convert."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.helpers import tiny_training_config
from vc import Converter
from vc.artifacts.checkpoint import load_checkpoint
from vc.artifacts.durations import check_durations, load_durations
from vc.cli import main
from vc.config import dump_config, load_config
from vc.errors import DataError
from vc.training.data import load_features
from vc.training.trainer import model_loop


@pytest.fixture(scope="module")
def taught(tmp_path_factory):
    """(folder, teacher config, student experiment): a tiny teacher, its durations, a tiny student."""
    tmp = tmp_path_factory.mktemp("student")
    config = tiny_training_config(tmp)
    teacher = tmp / "teacher"
    (tmp / "teacher.yaml").write_text(dump_config(config))
    assert main(["train", "--config", str(tmp / "teacher.yaml"), "--out", str(teacher), "--no-progress"]) == 0
    durations = tmp / "durations.pt"
    args = ["durations", "--checkpoint", str(teacher / "checkpoints" / "best.pt"), "--no-progress"]
    args += ["--features-dir", config.data.cache_dir, "--out", str(durations)]
    assert main([*args, config.data.train_list, config.data.dev_list]) == 0
    student_config = config.with_overrides(
        ["model.kind=nonautoregressive", "model.parallel_decoder_layers=2", "model.parallel_decoder_channels=8",
         "model.parallel_decoder_kernel=3", "model.duration_predictor_layers=1",
         "model.duration_predictor_channels=8", f"data.durations={durations}"]
    )  # fmt: skip
    (tmp / "student.yaml").write_text(dump_config(student_config))
    student = tmp / "student"
    assert main(["train", "--config", str(tmp / "student.yaml"), "--out", str(student), "--no-progress"]) == 0
    return tmp, config, student


def test_durations_cover_every_pair_and_sum_to_its_target(taught):
    tmp, config, _ = taught
    durations = load_durations(tmp / "durations.pt", config.model.encoder_reduction_factor)
    features = {}
    for path in (config.data.train_list, config.data.dev_list):
        features.update(load_features(path, config.audio, config.data.cache_dir, progress=False))
    assert set(durations) == set(features)
    check_durations(durations, features, config.model.encoder_reduction_factor)  # raises on a mismatch
    wrong = {**durations, "utt0": durations["utt0"] + 1}
    with pytest.raises(DataError, match="utt0"):
        check_durations(wrong, features, config.model.encoder_reduction_factor)
    with pytest.raises(DataError, match="stacks 3"):
        load_durations(tmp / "durations.pt", 3)


def test_dtw_durations_need_no_model_and_fit_the_features(taught, tmp_path, capsys):
    tmp, config, _ = taught
    out = tmp_path / "dtw.pt"
    args = ["durations", "--features-dir", config.data.cache_dir, "--out", str(out), "--no-progress"]
    lists = [config.data.train_list, config.data.dev_list]
    assert main([*args, "--dtw", "--config", str(tmp / "teacher.yaml"), *lists]) == 0
    assert "DTW" in capsys.readouterr().out
    durations = load_durations(out, config.model.encoder_reduction_factor)
    features = {}
    for path in lists:
        features.update(load_features(path, config.audio, config.data.cache_dir, progress=False))
    check_durations(durations, features, config.model.encoder_reduction_factor)
    # --set overrides the config: one step per source frame
    assert main([*args, "--overwrite", "--dtw", "--config", str(tmp / "teacher.yaml"), *lists,
                 "--set", "model.encoder_reduction_factor=1"]) == 0  # fmt: skip
    check_durations(load_durations(out, 1), features, 1)
    for wrong in (
        ["--dtw"],
        ["--dtw", "--config", str(tmp / "teacher.yaml"), "--checkpoint", "x.pt"],
        [],
        ["--checkpoint", "x.pt", "--set", "model.encoder_reduction_factor=1"],
    ):
        assert main([*args, "--overwrite", *wrong, *lists]) != 0
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and ("--config" in err or "--checkpoint" in err or "--set" in err), err


def test_student_checkpoint_holds_its_kind_and_logs_durations(taught):
    _, _, student = taught
    payload = load_checkpoint(student / "checkpoints" / "best.pt")
    assert payload["config"]["model"]["kind"] == "nonautoregressive"
    events = EventAccumulator(
        str(student / "tensorboard"), size_guidance={"images": 0, "scalars": 0}
    ).Reload()
    assert "train/loss/duration" in events.Tags()["scalars"]
    assert "valid/loss/duration" in events.Tags()["scalars"]
    for utt in ("utt4", "utt5"):
        assert f"valid/durations/{utt}" in events.Tags()["images"]
        assert f"valid/mel/{utt}" in events.Tags()["images"]


def test_vc_convert_runs_the_student(taught, tmp_path, capsys):
    tmp, _, student = taught
    model = student / "checkpoints" / "best.pt"
    out = tmp_path / "out.wav"
    args = ["convert", "--checkpoint", str(model), str(tmp / "src0.wav"), str(out), "--no-progress"]
    assert main([*args, "--save-alignment", str(tmp_path / "alignment.png")]) == 0
    assert (tmp_path / "alignment.png").is_file()
    wave, rate = sf.read(out)
    assert rate == 16000 and len(wave) > 0
    converter = Converter.from_checkpoint(model, device="cpu")
    wave, _ = sf.read(tmp / "src0.wav", dtype="float32")
    first, _ = converter.convert(wave, 16000)
    again, _ = converter.convert(wave, 16000)
    np.testing.assert_array_equal(first, again)
    slow = Converter.from_checkpoint(model, device="cpu", overrides=["inference.speed=0.5"])
    assert slow.config.inference.speed == 0.5  # what the speed does: test_nonautoregressive.py
    result = converter.convert_file(tmp / "src0.wav")
    assert result.alignment.shape[0] == result.mel.shape[0]  # one row per output frame
    assert torch.all(torch.from_numpy(result.alignment).sum(dim=1) == 1)


def test_student_without_durations_is_a_clear_error(taught, tmp_path, capsys):
    tmp, _, _ = taught
    text = (tmp / "student.yaml").read_text()
    args = ["train", "--config", str(tmp / "student.yaml"), "--out", str(tmp_path / "x"), "--no-progress"]
    assert main([*args, "data.durations="]) != 0
    assert "data.durations" in capsys.readouterr().err
    assert (tmp / "student.yaml").read_text() == text


def test_mel2linear_learns_from_the_students_predictions(taught, tmp_path):
    tmp, config, student = taught
    out = tmp_path / "mel2linear.pt"
    args = [
        "mel2linear-train",
        config.data.train_list,
        "--checkpoint",
        str(student / "checkpoints" / "best.pt"),
    ]
    args += ["--config", str(student / "config.yaml"), "--out", str(out), "--max-steps", "2", "--no-progress"]
    assert main(args) == 0
    assert out.is_file()


def test_an_untrained_student_speaks_at_the_mean_rate(taught):
    """The duration predictor starts at log(1 + the mean frames per step), not at zero frames."""
    tmp, config, _ = taught
    student_config = load_config(tmp / "student.yaml", ["train.max_steps=1"])
    loop = model_loop(student_config, tmp / "untrained", progress=False)
    try:
        durations = load_durations(tmp / "durations.pt", config.model.encoder_reduction_factor)
        rate = torch.cat([d.float() for d in durations.values()]).mean()
        assert loop.job.model.duration_predictor.out.bias.item() == pytest.approx(torch.log1p(rate).item())
    finally:
        loop.job.close()
