"""bench/run.py: which model it times, and where its JSON goes (issue 12, item 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from tests.conftest import ARCTIC, arctic_file
from tests.test_mel2linear import model_checkpoint  # noqa: F401 (fixture)
from vc.artifacts.mel2linear import save_mel2linear
from vc.config import AudioConfig
from vc.model.mel2linear import Mel2Linear

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
        ["git", "ls-files", "--error-unmatch", "bench/results.json", "bench/results_full.json"],
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


def test_griffin_lim_goal_counts_a_variant_run_to_librosas_convergence():
    import report

    at_32 = {"1": _gl_rows(0.04, 0.1), "8": _gl_rows(0.05, 0.1)}  # 2.5x and 2.0x
    matched = {  # ms per utterance; librosa's rows: 100 ms
        "tolerance": 0.01,
        "accelerated": {
            "n_iter": 26,
            "1": {"speedup": 3.2, "ms_per_utterance": 31.0},
            "8": {"speedup": 3.3, "ms_per_utterance": 31.5},  # 3.17x against the 100 ms of the rows
        },
    }
    assert not report.goal_griffinlim({"rows": at_32})["met"]
    goal = report.goal_griffinlim({"rows": at_32, "matched_quality": matched})
    assert goal["met"] and "accelerated to librosa-32's SC in 26 iterations: 3.17x" in goal["value"]
    matched["accelerated"]["8"]["ms_per_utterance"] = 35.0  # one batch size short of the fastest librosa
    assert not report.goal_griffinlim({"rows": at_32, "matched_quality": matched})["met"]
    worse = {
        "1": _gl_rows(0.01, 0.1, ours_sc=0.06),
        "8": _gl_rows(0.01, 0.1, ours_sc=0.06),
    }  # fast, not converged
    assert not report.goal_griffinlim({"rows": worse})["met"]


def test_vocoder_ceiling_scores_each_way_of_rebuilding_a_recording(tmp_path):
    """bench/vocoder_ceiling.py on one real recording: nine finite MCDs; the true magnitude's are low."""
    arctic_file("slt", "arctic_b0440")  # skips without the corpus
    audio = AudioConfig()
    torch.manual_seed(0)
    save_mel2linear(tmp_path / "net.pt", Mel2Linear(audio.n_mels, audio.n_fft // 2 + 1, channels=8), audio)
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "vocoder_ceiling.py"),
            "--mel2linear",
            str(tmp_path / "net.pt"),
            "--files",
            "1",
            "--db_root",
            str(ARCTIC),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    scores = {
        line.rsplit(None, 1)[0].strip(): float(line.rsplit(None, 1)[1])
        for line in result.stdout.splitlines()[1:]
    }
    assert len(scores) == 9 and all(np.isfinite(v) for v in scores.values()), result.stdout
    assert scores["true magnitude + Griffin-Lim 32"] < 3.0
    assert scores["true magnitude + PGHI"] < 3.5  # 2.62 over 20 files


def test_pghi_recovers_a_phase_consistent_with_a_gliding_harmonic_tone():
    """Phase-gradient heap integration from the magnitude alone: the rebuilt signal's STFT
    magnitude is within -30 dB of the given one, where zero or random phases stay above -5 dB."""
    from pghi import pghi_phase

    rate = 16000
    t = np.arange(rate) / rate
    cycles = 2 * np.pi * np.cumsum(120 + 60 * t) / rate  # f0 glides from 120 to 180 Hz
    wave = torch.tensor(
        sum(np.sin(k * cycles) / k for k in range(1, 20)) * np.hanning(rate), dtype=torch.float32
    )
    stft = dict(n_fft=1024, hop_length=256, win_length=1024, window=torch.hann_window(1024))
    magnitude = torch.stft(wave, return_complex=True, **stft).abs()

    def spectral_convergence_db(phase: torch.Tensor) -> float:
        rebuilt = torch.istft(torch.polar(magnitude, phase.float()), length=len(wave), **stft)
        error = torch.stft(rebuilt, return_complex=True, **stft).abs() - magnitude
        return float(20 * torch.log10(torch.linalg.norm(error) / torch.linalg.norm(magnitude)))

    phase = torch.from_numpy(pghi_phase(magnitude.numpy(), 256, 1024, 1024))
    assert phase.shape == magnitude.shape
    assert spectral_convergence_db(phase) < -30
    assert spectral_convergence_db(torch.zeros_like(magnitude)) > -5
    generator = torch.Generator().manual_seed(0)
    assert spectral_convergence_db(2 * np.pi * torch.rand(magnitude.shape, generator=generator)) > -5


def test_word_loss_envelope_is_a_projection_and_smoothing_keeps_constants():
    import word_loss

    projection = word_loss.cepstral_envelope(12, 4)
    torch.testing.assert_close(projection @ projection, projection, atol=1e-5, rtol=0)
    assert round(float(torch.trace(projection))) == 4  # keeps exactly 4 directions
    flat = torch.ones(12)  # a level with no spectral shape is all envelope (coefficient 0)
    torch.testing.assert_close(flat @ projection, flat, atol=1e-5, rtol=0)
    x = torch.randn(7, 3)
    torch.testing.assert_close(word_loss.smooth_in_time(x, 1), x)
    steady = torch.full((7, 3), 2.0)
    torch.testing.assert_close(word_loss.smooth_in_time(steady, 5), steady)
    ramp = torch.arange(7.0)[:, None]
    assert word_loss.smooth_in_time(ramp, 3)[3, 0] == 3.0 and word_loss.smooth_in_time(ramp, 3).shape == (
        7,
        1,
    )


def test_word_loss_writes_one_folder_per_probe(model_checkpoint, tmp_path):  # noqa: F811
    """bench/word_loss.py on one real pair: each probe's folder holds its audio; the width is printed."""
    arctic_file("bdl", "arctic_b0440")  # skips without the corpus
    path, _ = model_checkpoint
    out = tmp_path / "probes"
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "word_loss.py"),
            "--checkpoint",
            str(path),
            "--out",
            str(out),
            "--files",
            "1",
            "--smooth",
            "3",
            "--db_root",
            str(ARCTIC),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    probes = {"teacher_forced", "target_envelope", "model_envelope", "target_smoothed_3"}
    assert {p.name for p in out.iterdir()} == probes
    for probe in probes:
        (wav,) = (out / probe).iterdir()
        wave, rate = sf.read(wav)
        assert (
            wav.name == "arctic_b0440.wav" and rate == 16000 and len(wave) > 16000 and np.isfinite(wave).all()
        )
    assert "attention width" in result.stdout


def test_compare_scores_pools_error_rates_and_brackets_the_difference(tmp_path, capsys):
    import compare_scores

    rng = np.random.default_rng(0)
    a, b = {}, {}
    for k in range(40):
        words = int(rng.integers(5, 12))
        base = dict(words=words, chars=5 * words, mcd=6.0 + rng.normal(0, 0.3), sim_target=0.9)
        a[f"u{k}"] = dict(base, word_edits=words // 2, char_edits=words)
        b[f"u{k}"] = dict(base, word_edits=words // 2 - 1, char_edits=words, mcd=base["mcd"] + 0.1)
    b["only_in_b"] = dict(words=10, chars=50, word_edits=10, char_edits=50, mcd=9.0, sim_target=0.1)
    shared, compared = compare_scores.compare(a, b, resamples=500)
    results = {r["metric"]: r for r in compared}
    shared_words = sum(row["words"] for row in a.values())
    wer = results["WER [%]"]
    assert shared == 40  # the utterance B alone has is left out
    assert wer["diff"] == pytest.approx(-100 * 40 / shared_words)  # pooled over words, not a mean of rates
    assert wer["low"] <= wer["diff"] <= wer["high"] < 0  # one word fewer on every file: outside the noise
    assert results["MCD [dB]"]["diff"] == pytest.approx(0.1)
    assert results["CER [%]"]["low"] == results["CER [%]"]["high"] == 0.0
    assert "MOS ovrl" not in results  # neither scoring has it

    path_a, path_b = tmp_path / "a.json", tmp_path / "b.json"
    path_a.write_text(json.dumps({"rows": {"model": {"per_utterance": a}}}))
    path_b.write_text(json.dumps({"rows": {"model": {"per_utterance": b}}}))
    compare_scores.main([str(path_a), str(path_b), "--resamples", "200"])
    out = capsys.readouterr().out
    assert "over 40 shared utterances" in out and "WER [%]" in out
    with pytest.raises(SystemExit, match="has no row 'ceiling'"):
        compare_scores.main([str(path_a), str(path_b), "--row-b", "ceiling"])
    # vc score --name renamed B's model row and --system added a peer's: B's model row is still the default
    renamed = {"attention model": {"per_utterance": b}, "GMM peer": {"per_utterance": a}}
    path_b.write_text(json.dumps({"rows": renamed, "model_row": "attention model"}))
    compare_scores.main([str(path_a), str(path_b), "--resamples", "200"])
    assert "over 40 shared utterances" in capsys.readouterr().out
