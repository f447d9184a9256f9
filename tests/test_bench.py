"""bench/run.py: which model it times, and where its JSON goes (issue 12, item 5)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import benchlib  # noqa: E402
import run as bench_run  # noqa: E402


def _experiment(repo: Path, corpus: str, name: str, age: float) -> Path:
    path = repo / "egs" / corpus / "vc1" / "exp" / name / "checkpoints" / "best.pt"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"checkpoint")
    os.utime(path, (age, age))
    return path


def test_the_newest_best_checkpoint_of_any_recipe_experiment_is_used(tmp_path):
    _experiment(tmp_path, "arctic", "bdl_slt_default", 1_000)
    newest = _experiment(tmp_path, "arctic", "bdl_slt_mytag", 2_000)
    _experiment(tmp_path, "other", "a_b_x", 1_500)
    assert benchlib.resolve_checkpoint(None, False, repo=tmp_path) == str(newest)
    given = tmp_path / "given.pt"
    given.write_bytes(b"x")
    assert benchlib.resolve_checkpoint(str(given), False, repo=tmp_path) == str(given.resolve())
    assert benchlib.resolve_checkpoint(None, True, repo=tmp_path) == ""


def test_no_trained_checkpoint_is_an_error_unless_untrained_is_asked_for(tmp_path):
    with pytest.raises(SystemExit, match="no trained checkpoint.*--untrained"):
        benchlib.resolve_checkpoint(None, False, repo=tmp_path)
    with pytest.raises(SystemExit, match="no such file"):
        benchlib.resolve_checkpoint(str(tmp_path / "missing.pt"), False, repo=tmp_path)


def test_run_refuses_to_time_conversion_of_an_untrained_model_before_any_work(monkeypatch, capsys):
    monkeypatch.setattr(benchlib, "RECIPE_CHECKPOINTS", "no/such/exp/*/best.pt")
    monkeypatch.setattr(bench_run, "prepare_lists", lambda *a: pytest.fail("work started"))
    with pytest.raises(SystemExit, match="no trained checkpoint"):
        bench_run.main(["--quick", "--sections", "convert"])
    # sections that time no conversion need no checkpoint, and say so
    assert bench_run.choose_checkpoint(bench_run.parse_args(["--sections", "griffinlim"])) == ""
    assert "model: UNTRAINED (no section times conversion)" in capsys.readouterr().err


def test_default_json_is_ignored_by_git_and_reference_results_stay_tracked():
    default = Path(bench_run.parse_args([]).json)
    ignored = subprocess.run(["git", "check-ignore", "-q", str(default)], cwd=REPO)
    assert ignored.returncode == 0, f"{default} is not ignored by git"
    tracked = subprocess.run(
        ["git", "ls-files", "--error-unmatch", "bench/results.json"],
        cwd=REPO,
        capture_output=True,
    )
    assert tracked.returncode == 0


def test_cold_start_times_vc_convert_with_the_bundled_model_on_an_eval_utterance(tmp_path, monkeypatch):
    import cold_start

    eval_wav = tmp_path / "arctic_b0440.wav"
    sf.write(eval_wav, 0.1 * np.sin(np.arange(64000) / 10.0), 16000)
    (tmp_path / "eval.tsv").write_text(f"arctic_b0440\t{eval_wav}\t{eval_wav}\n")
    setup = benchlib.Setup("", "", "", str(tmp_path), str(tmp_path), benchlib.QUICK)
    commands = []
    monkeypatch.setattr(cold_start, "_wall", lambda command, cwd: commands.append(command) or 1.5)
    result = cold_start.measure_cold_start(setup)
    assert result["input"] == "arctic_b0440.wav, first 3 s" and result["input_seconds"] == 3.0
    assert result["convert_median_s"] == 1.5 and result["repeats"] >= 3
    convert = [c for c in commands if "convert" in c]
    assert convert and all("--checkpoint" not in c for c in convert)  # the bundled model, as a user runs it
    # the measurement behind vc convert's default of one thread: 1 and 2 threads, idle and busy
    assert {f"{load}_threads{n}_median_s" for load in ("idle", "busy") for n in (1, 2)} <= result.keys()
    assert {tuple(c[-2:]) for c in convert if "--threads" in c} == {("--threads", "1"), ("--threads", "2")}


def _gl_rows(ours_s: float, librosa_s: float, ours_sc: float = 0.05) -> list[dict]:
    return [
        {
            "method": "vc.audio.griffin_lim.griffin_lim (2 threads)",
            "seconds_per_utterance": ours_s,
            "spectral_convergence": ours_sc,
        },
        {
            "method": "librosa.griffinlim, item by item",
            "seconds_per_utterance": librosa_s,
            "spectral_convergence": 0.05,
        },
    ]


def test_griffin_lim_goal_counts_ours_run_to_librosas_convergence():
    import report

    at_32 = {"1": _gl_rows(0.04, 0.1), "8": _gl_rows(0.05, 0.1)}  # 2.5x and 2.0x
    matched = {  # ms per utterance; librosa's rows: 100 ms
        "tolerance": 0.01,
        "n_iter": 26,
        "1": {"speedup": 3.2, "ms_per_utterance": 31.0},
        "8": {"speedup": 3.3, "ms_per_utterance": 31.5},  # 3.17x against the 100 ms of the rows
    }
    assert not report.goal_griffinlim({"rows": at_32})["met"]
    goal = report.goal_griffinlim({"rows": at_32, "matched_quality": matched})
    assert goal["met"] and "ours to librosa-32's SC in 26 iterations: 3.17x" in goal["value"]
    matched["8"]["ms_per_utterance"] = 35.0  # one batch size short of the fastest librosa
    assert not report.goal_griffinlim({"rows": at_32, "matched_quality": matched})["met"]
    worse = {
        "1": _gl_rows(0.01, 0.1, ours_sc=0.06),
        "8": _gl_rows(0.01, 0.1, ours_sc=0.06),
    }  # fast, not converged
    assert not report.goal_griffinlim({"rows": worse})["met"]


def test_convert_rtf_splits_the_real_convert_batch_by_its_profiler_labels(model_checkpoint):  # noqa: F811
    """The stages come from Converter.convert_batch's own torch.profiler labels, not a re-implementation."""
    from convert_rtf import STAGES, stage_seconds
    from torch.profiler import ProfilerActivity, profile

    from vc import Converter

    path, _ = model_checkpoint
    converter = Converter.from_checkpoint(path, device="cpu")
    wave = np.sin(np.arange(8000) / 8.0).astype(np.float32) * 0.3
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        converter.convert_batch([wave])
    seconds = stage_seconds(prof)
    assert set(seconds) == set(STAGES)
    for stage in ("features", "encoder", "decoder", "postnet", "vocoder"):
        assert seconds[stage] > 0, stage
    assert seconds["durations"] == 0.0  # an attention model has no duration predictor


def test_the_cap_count_pairs_each_conversion_with_its_own_input():
    # convert_all returns results in the length-sorted batch order; counting them against the inputs in
    # list order called a long utterance's ordinary output "capped" (bench of 2026-11-26: 1 of 16).
    from types import SimpleNamespace

    from convert_rtf import batches_like_convert_files, stopped_by_cap

    hop = 256
    waves = [np.zeros(frames * hop) for frames in (100, 10, 50)]
    batches = batches_like_convert_files(waves, 2)
    results = [SimpleNamespace(mel=np.zeros((len(waves[k]) // hop, 4))) for chunk in batches for k in chunk]
    assert stopped_by_cap(results, waves, batches, limit=3.0, hop_length=hop) == 0
    results[0] = SimpleNamespace(mel=np.zeros((30, 4)))  # the shortest input (10 frames) decoded to 3x
    assert stopped_by_cap(results, waves, batches, limit=3.0, hop_length=hop) == 1
