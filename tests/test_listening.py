"""The listening report (`vc report`) and the evolution strip's choice of evaluations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.synthetic_exp import UTTS, make_experiment, write_scores
from vc.cli import main
from vc.evaluation.curve import alignment_curve
from vc.listening import build_report
from vc.plotting import evolution_steps, load_evolution


def test_evolution_steps_spread_over_the_run():
    steps = list(range(100, 2600, 100))  # 25 evaluations
    chosen = evolution_steps(steps, 8)
    assert len(chosen) == 8 and chosen == sorted(set(chosen))
    assert chosen[:2] == [100, 200]  # the first evaluations: the blur
    assert chosen[-1] == 2500  # the latest
    gaps = np.diff(chosen)
    assert all(later >= earlier for earlier, later in zip(gaps, gaps[1:], strict=False))  # log-spaced
    assert chosen[-2] < 2000  # not the last K: most columns in the first part of the run
    assert chosen == [100, 200, 300, 500, 700, 1100, 1600, 2500]


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("evaluations", [1, 4, 8, 9, 30, 1000])
def test_evolution_steps_counts(evaluations, count):
    steps = [10 * k for k in range(1, evaluations + 1)]
    chosen = evolution_steps(list(reversed(steps)), count)
    assert len(chosen) == min(count, evaluations) and chosen == sorted(set(chosen))
    assert chosen[-1] == steps[-1]
    if count > 1:
        assert chosen[0] == steps[0]


def test_load_evolution_reads_the_chosen_snapshots(tmp_path):
    for step in range(10, 260, 10):
        np.save(tmp_path / f"step{step:07d}.npy", np.full((2, 2), step, dtype=np.float32))
    columns = load_evolution(tmp_path, 4)
    assert [step for step, _ in columns] == evolution_steps(list(range(10, 260, 10)), 4)
    assert all(float(alignment[0, 0]) == step for step, alignment in columns)


def _links(html: str) -> list[str]:
    return [link for link in re.findall(r'(?:src|href)="([^"]*)"', html) if link != "data:,"]  # no favicon


def test_report_is_self_contained(tmp_path):
    exp = make_experiment(tmp_path)
    index = build_report(exp, progress=False)
    assert index == exp / "report" / "index.html"
    html = index.read_text()
    links = _links(html)
    assert links and not any(re.match(r"[a-z]+:|/", link) for link in links)  # relative only
    for link in links:
        assert (index.parent / link).is_file(), link
    assert len(re.findall(r"<audio ", html)) == 3 * 3 + 2  # two utterances have a ceiling file
    for path in (index.parent / "audio").rglob("*.wav"):
        info = sf.info(str(path))
        assert info.subtype == "PCM_16" and info.frames > 0
    # the score table: every row, every column
    for name in ("model", "no conversion (source)", "Griffin-Lim ceiling", "natural target"):
        assert f"<td>{name}</td>" in html
    for title in ("MCD [dB]", "F0 RMSE [Hz]", "WER [%]", "utterances"):
        assert f"<th>{title}</th>" in html
    assert "speaker similarity: install vc[eval]" in html
    assert "config.yaml (resolved)" in html and "evolution_columns: 5" in html
    assert "training curves" in html and "img/evolution_arctic_b0001.png" in html
    # worst first by WER: b0002 (55) before b0003 (20) before b0001 (10)
    order = re.findall(r'<section class="utt" id="([^"]+)"', html)
    assert order == ["arctic_b0002", "arctic_b0003", "arctic_b0001"]
    assert 'data-k_wer="55.0"' in html and "the danger" in html and "sentence number 1" in html


def test_report_sorts_by_mcd_without_wer(tmp_path):
    exp = make_experiment(tmp_path)
    files = json.loads((exp / "scores.json").read_text())["files"]
    roles = {"source": "no conversion (source)", "converted": "model", "reference": "natural target"}
    files = {utt: {role: paths[row] for role, row in roles.items()} for utt, paths in files.items()}
    files[UTTS[0]]["other system"] = files[UTTS[0]]["converted"]  # a row the report does not know
    write_scores(exp / "scores.json", files, drop=("wer", "cer", "hypothesis"))
    html = build_report(exp, progress=False).read_text()
    assert "WER" not in html
    assert len(re.findall(r"<audio ", html)) == 3 * 3 + 1 and "audio/other_system/arctic_b0001.wav" in html
    order = re.findall(r'<section class="utt" id="([^"]+)"', html)
    assert order == ["arctic_b0003", "arctic_b0002", "arctic_b0001"]  # MCD 7.9, 6.5, 6.1


def test_report_without_scores_finds_files_from_the_recipe_lists(tmp_path):
    exp = make_experiment(tmp_path, with_scores=False)
    (exp / "tensorboard").rename(tmp_path / "elsewhere")
    index = build_report(exp, out=tmp_path / "page", progress=False)
    html = index.read_text()
    assert "no scores" in html and "no TensorBoard events" in html
    assert len(re.findall(r"<audio ", html)) == 3 * 3  # source and target from data/eval.tsv
    for link in _links(html):
        assert (index.parent / link).is_file(), link


def test_report_skips_unreadable_audio_and_stale_files(tmp_path, caplog):
    exp = make_experiment(tmp_path)
    (exp / "converted" / "eval" / f"{UTTS[0]}.wav").write_bytes(b"not audio")
    stale = exp / "report" / "audio" / "converted" / "old_utterance.wav"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"")
    html = build_report(exp, progress=False).read_text()
    assert not stale.exists()
    assert len(re.findall(r"<audio ", html)) == 3 * 3 + 2 - 1
    assert "cannot copy converted audio" in caplog.text


def test_cli_report_replaces_a_report_or_its_folders_only_when_asked(tmp_path, capsys):
    exp = make_experiment(tmp_path)
    out = tmp_path / "r"
    assert main(["report", str(exp), "--no-progress", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["report", str(exp), "--no-progress", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "index.html" in err and "--overwrite" in err
    assert main(["report", str(exp), "--no-progress", "--out", str(out), "--overwrite"]) == 0
    # A folder of the user's with an audio/ folder of its own: the report would have deleted it.
    music = tmp_path / "music"
    (music / "audio").mkdir(parents=True)
    (music / "audio" / "song.wav").write_bytes(b"the user's file")
    assert main(["report", str(exp), "--no-progress", "--out", str(music)]) == 1
    assert str(music / "audio") in capsys.readouterr().err
    assert (music / "audio" / "song.wav").read_bytes() == b"the user's file"


def test_cli_report_and_curve(tmp_path, capsys):
    exp = make_experiment(tmp_path)
    assert main(["report", str(exp), "--no-progress", "--out", str(tmp_path / "r")]) == 0
    assert capsys.readouterr().out.strip() == f"listening report: {tmp_path / 'r' / 'index.html'}"
    assert main(["report", str(tmp_path / "nothing")]) == 1
    assert "experiment folder not found" in capsys.readouterr().err
    rows = alignment_curve(exp)
    assert [r["step"] for r in rows] == list(range(10, 121, 10)) and rows[-1]["diagonal"] == 1.0
    assert main(["curve", str(exp)]) == 0
    assert "| 120 |" in capsys.readouterr().out


def test_monitor_keeps_early_evaluations_in_the_png(tmp_path):
    """The PNG and TensorBoard strip show the first evaluations after many more (not the last K)."""
    import torch

    from vc.audio import FeatureStats
    from vc.config import Config
    from vc.training.monitor import Monitor

    config = Config.from_dict({"train": {"evolution_columns": 4}})
    stats = FeatureStats(np.zeros(80, np.float32), np.ones(80, np.float32))
    monitor = Monitor(config, tmp_path, torch.device("cpu"), stats)
    try:
        for step in range(10, 110, 10):
            monitor._evolution("utt", step, np.eye(6, dtype=np.float32))
    finally:
        monitor.close()
    assert (tmp_path / "alignments" / "utt_evolution.png").is_file()
    assert len(list((tmp_path / "alignments" / "utt").glob("step*.npy"))) == 10
    assert [s for s, _ in load_evolution(tmp_path / "alignments" / "utt", 4)][:2] == [10, 20]
    assert Path(tmp_path / "tensorboard").is_dir()


def test_report_says_which_steps_the_averaged_model_holds(tmp_path):
    from tests.test_averaging import write_snapshots
    from vc.artifacts.averaging import average_checkpoints

    exp = make_experiment(tmp_path)
    paths = write_snapshots(exp / "checkpoints", steps=(200, 300))
    average_checkpoints(paths, exp / "checkpoints" / "averaged.pt")
    html = build_report(exp, progress=False).read_text()
    assert "mean weights of steps 200, 300; the recipe converts with it" in html
    (exp / "checkpoints" / "averaged.pt").write_bytes(b"not a checkpoint")  # one bad file: a note, no crash
    assert 'averaged.pt</td><td class="text">unreadable' in build_report(exp, progress=False).read_text()


def test_report_follows_a_renamed_model_row_and_shows_more_systems(tmp_path):
    """vc score --name NAME --system PEER=DIR: scores.json's model_row names the model's row, and the
    extra row gets its line in the table and its players."""
    exp = make_experiment(tmp_path)
    scores = json.loads((exp / "scores.json").read_text())
    scores["rows"] = {("attention model" if k == "model" else k): row for k, row in scores["rows"].items()}
    scores["rows"]["GMM peer"] = scores["rows"]["no conversion (source)"]
    for paths in scores["files"].values():
        paths["attention model"] = paths.pop("model")
        paths["GMM peer"] = paths["no conversion (source)"]
    scores["model_row"] = "attention model"
    (exp / "scores.json").write_text(json.dumps(scores))
    html = build_report(exp, progress=False).read_text()
    for name in ("attention model", "GMM peer"):
        assert f"<td>{name}</td>" in html
    assert len(re.findall(r"<audio ", html)) == 4 * 3 + 2 and "audio/GMM_peer/arctic_b0001.wav" in html
    order = re.findall(r'<section class="utt" id="([^"]+)"', html)
    assert order == ["arctic_b0002", "arctic_b0003", "arctic_b0001"]  # worst first by the model row's WER
    assert 'data-k_wer="55.0"' in html  # the model row's, not the peer's (1.5 times as many)


def test_the_training_section_is_that_of_the_model_that_made_the_audio(tmp_path):
    """The recipe's student (EXP/student) made the converted audio, as scores.json's checkpoint says: the
    Training section and curves are its run's, and the teacher's alignment evolution is named as such."""
    from torch.utils.tensorboard import SummaryWriter

    exp = make_experiment(tmp_path)  # the teacher: 120 steps, alignments stored
    student = exp / "student"
    (student / "checkpoints").mkdir(parents=True)
    (student / "config.yaml").write_text((exp / "config.yaml").read_text())
    writer = SummaryWriter(str(student / "tensorboard"))
    for step in range(100, 1401, 100):
        writer.add_scalar("train/loss/total", 1.0 - step / 2000, step)
        writer.add_scalar("valid/loss/total", 1.1 - step / 2000, step)
    writer.close()
    scores = json.loads((exp / "scores.json").read_text())
    scores["checkpoint"] = str(student / "checkpoints" / "averaged.pt")
    (exp / "scores.json").write_text(json.dumps(scores))
    html = build_report(exp, progress=False).read_text()
    assert '<td>steps trained</td><td class="text">1400</td>' in html
    assert f'<td>run</td><td class="text">{student}</td>' in html
    assert "alignment evolution of the attention model (the teacher" in html.lower()
    assert "img/evolution_arctic_b0001.png" in html  # the teacher's strip stays
