"""Checkpoint selection by free-running dev conversions (vc/training/selection.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.helpers import tiny_training_config
from vc.artifacts.checkpoint import load_checkpoint
from vc.cli import main
from vc.config import Config, ConfigError, dump_config
from vc.listening.gather import gather
from vc.settings.audio import AudioConfig
from vc.training.converts import ConvertsRule
from vc.training.loop import resumed_best_score
from vc.training.selection import FreeRunning, log_mel_cepstrum, mel_cepstral_distance
from vc.training.trainer import train

AUDIO = AudioConfig()  # log10 of mel magnitudes


def _log_mels(frames: int, seed: int = 0, bands: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # Smooth over time, so that repeating frames is a plausible slower rendition.
    return np.cumsum(rng.normal(0, 0.1, (frames, bands)), axis=0) - 3.0


def test_cepstrum_shape_and_an_identical_sequence_scores_zero():
    mels = _log_mels(30)
    assert log_mel_cepstrum(mels, AUDIO).shape == (30, 24)
    assert log_mel_cepstrum(mels[:, :10], AUDIO).shape == (30, 9)  # never more coefficients than bands allow
    assert mel_cepstral_distance(mels, mels, AUDIO) == pytest.approx(0.0, abs=1e-9)


def test_the_distance_reads_features_by_their_log_base_and_power():
    mels, other = _log_mels(30), _log_mels(30, seed=1)
    base10 = mel_cepstral_distance(mels, other, AUDIO)
    natural = AudioConfig(log_base=math.e)  # the same spectra as natural logs: values x ln 10
    assert mel_cepstral_distance(mels * math.log(10), other * math.log(10), natural) == pytest.approx(base10)
    power = AudioConfig(spectrogram_power=2.0)  # power mels: values x 2
    assert mel_cepstral_distance(mels * 2, other * 2, power) == pytest.approx(base10)


def test_timing_and_level_do_not_count_but_spectral_shape_does():
    mels = _log_mels(30)
    slower = np.repeat(mels, 2, axis=0)  # same frames, twice as long
    louder = mels + 0.5  # +10 dB on every band (log10 magnitudes): c0 only
    assert mel_cepstral_distance(slower, mels, AUDIO) == pytest.approx(0.0, abs=1e-9)
    assert mel_cepstral_distance(louder, mels, AUDIO) == pytest.approx(0.0, abs=1e-9)
    tilted = mels + np.linspace(-0.5, 0.5, 40)  # a spectral tilt changes the shape
    other = _log_mels(30, seed=1)
    assert 0 < mel_cepstral_distance(tilted, mels, AUDIO) < mel_cepstral_distance(other, mels, AUDIO)


def test_free_running_selection_keeps_the_checkpoint_with_the_lowest_distance(tmp_path, caplog):
    caplog.set_level("INFO", logger="vc.training.loop")
    config = tiny_training_config(tmp_path, select_by="free_running", select_utterances=2)
    out = tmp_path / "exp"
    train(config, out, progress=False)
    events = EventAccumulator(str(out / "tensorboard"), size_guidance={"scalars": 0}).Reload()
    distances = {e.step: e.value for e in events.Scalars("valid/free_running/mel_cepstral_distance")}
    assert sorted(distances) == [3, 6]
    best = load_checkpoint(out / "checkpoints" / "best.pt")
    assert best["step"] == min(distances, key=distances.get)
    assert best["best_score"]["select_by"] == "free_running"
    assert best["best_score"]["value"] == pytest.approx(min(distances.values()), rel=1e-5)
    assert "free-running dev distance" in caplog.text


def test_a_resumed_run_compares_only_scores_of_its_own_rule():
    written = {"best_score": {"select_by": "loss", "value": 1.5}}
    assert resumed_best_score(written, "loss") == 1.5
    assert resumed_best_score(written, "free_running") == math.inf  # a loss is no distance
    assert resumed_best_score({"best_valid_loss": 1.2}, "loss") == 1.2  # older checkpoints
    assert resumed_best_score({"best_valid_loss": 1.2}, "free_running") == math.inf


def test_an_unknown_selection_rule_is_a_config_error():
    with pytest.raises(ConfigError, match="train.select_by must be one of loss, free_running"):
        Config.from_dict({"train": {"select_by": "wer"}})


def test_the_model_converts_once_it_attends_and_its_distance_has_stopped_falling_fast():
    rule = ConvertsRule(focus=0.75, gain_db=0.2)
    curve = [
        (100, 0.53, 9.5),
        (200, 0.51, 8.9),
        (300, 0.72, 7.3),
        (400, 0.79, 6.9),
        (500, 0.81, 6.8),
        (600, 0.8, 7.0),
    ]
    passed = [rule.update(step, FreeRunning(distance, focus)) for step, focus, distance in curve]
    # step 400 attends but still fell 0.4 dB; step 500 fell 0.1 dB; it stays passed
    assert passed == [False, False, False, False, True, True] and rule.converts_at == 500
    blurred = ConvertsRule(focus=0.75, gain_db=0.2)
    assert not any(blurred.update(k, FreeRunning(7.0, 0.5)) for k in range(5))  # flat but not attending


def test_training_until_it_converts_ends_at_that_evaluation_and_the_report_says_so(tmp_path, caplog):
    caplog.set_level("INFO", logger="vc.training")
    (tmp_path / "capped").mkdir()
    capped = tiny_training_config(tmp_path / "capped", select_utterances=2).with_overrides(
        ["model.until_converts=true", "model.converts_focus=1.01"]  # never attends that well
    )
    train(capped, tmp_path / "capped_exp", progress=False)
    assert "did not pass its free-running dev check (model.until_converts) by step 6" in caplog.text
    assert "training: 6 steps in " in caplog.text and "ended by the step limit" in caplog.text
    # Any focus and any gain pass: the first evaluation has no previous distance, the second passes.
    config = tiny_training_config(tmp_path, select_utterances=2).with_overrides(
        [
            "model.until_converts=true",
            "model.converts_focus=0",
            "model.converts_gain_db=1000",
            "train.max_steps=30",
        ]
    )
    out = tmp_path / "exp"
    (tmp_path / "config.yaml").write_text(dump_config(config))  # through vc train: its train.log
    assert main(["train", "--config", str(tmp_path / "config.yaml"), "--out", str(out), "--no-progress"]) == 0
    assert load_checkpoint(out / "checkpoints" / "best.pt")["step"] <= 6
    assert sorted(p.name for p in (out / "checkpoints").glob("step*.pt"))[-1] == "step0000006.pt"
    events = EventAccumulator(str(out / "tensorboard"), size_guidance={"scalars": 0}).Reload()
    assert [e.step for e in events.Scalars("valid/free_running/focus_rate")] == [3, 6]
    log = (out / "train.log").read_text()
    assert "step 6: the model converts" in log and "did not pass" not in log
    assert "training: 6 steps in " in log and "ended by its own end" in log
    assert gather(out).training["ended by"].startswith("step 6: the model converts (free-running dev check")
    assert "best.pt chosen by" not in gather(out).training  # the loss chose it


def test_only_the_attention_model_trains_until_it_converts(tmp_path):
    for kind in ("nonautoregressive", "recognition_synthesis"):  # not a setting of their sections
        with pytest.raises(
            ConfigError, match=f"model.until_converts is a setting of model.kind attention, not of {kind}"
        ):
            tiny_training_config(tmp_path).with_overrides([f"model.kind={kind}", "model.until_converts=true"])
