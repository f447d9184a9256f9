"""A metric is one module and one registry line (vc/evaluation/registry.py): a new one shows up in
`vc score`'s table and JSON, in `vc compare` and in the listening report, with nothing else touched."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.helpers import needs
from tests.synthetic_exp import UTTS, make_experiment
from vc.audio import read_audio, write_audio
from vc.cli import main
from vc.evaluation import registry
from vc.evaluation.metric import Column, FileJob, Metric
from vc.settings.audio import AudioConfig


class Loudness(Metric):
    """The test's metric module: each file's RMS level."""

    name = "loudness"
    columns = (Column("loudness [dB]", "loudness_db", "{:.1f}", headline=True),)

    def score(self, model, wave: np.ndarray, job: FileJob) -> dict:
        return {"loudness_db": float(20 * np.log10(np.sqrt(np.mean(wave**2))))}


def test_a_new_metric_shows_up_in_score_compare_and_the_report(tmp_path, monkeypatch, capsys):
    needs("pyworld", "pysptk")  # vc score's distances
    monkeypatch.setattr(registry, "METRICS", (*registry.METRICS, Loudness()))  # the one registry line
    exp = make_experiment(tmp_path, with_scores=False)
    converted, quieter = exp / "converted" / "eval", tmp_path / "quieter"
    quieter.mkdir()
    for utt in UTTS:  # the same files 6 dB down
        wave = read_audio(converted / f"{utt}.wav", AudioConfig(trim_top_db=0.0))
        write_audio(quieter / f"{utt}.wav", 0.5 * wave, 16000)
    common = ["score", "--no-progress", "--workers", "1", "--no-ceiling", "--no-natural"]
    common += ["--reference", str(tmp_path / "audio" / "target")]
    assert main([*common, "--converted", str(converted), "--json", str(exp / "scores.json")]) == 0
    assert "loudness [dB]" in capsys.readouterr().out.splitlines()[0]  # vc score's table
    scores = json.loads((exp / "scores.json").read_text())
    assert ["loudness [dB]", "loudness_db", "{:.1f}", False] in scores["columns"]
    assert all("loudness_db" in row for row in scores["rows"]["model"]["per_utterance"].values())
    assert main([*common, "--converted", str(quieter), "--json", str(tmp_path / "quieter.json")]) == 0
    capsys.readouterr()

    assert main(["compare", str(exp / "scores.json"), str(tmp_path / "quieter.json")]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "loudness [dB]" in line)
    assert line.split()[2] == "-6.0"  # B - A: 20 log10(0.5)

    out = tmp_path / "report"
    assert main(["report", str(exp), "--no-progress", "--out", str(out)]) == 0
    page = (out / "index.html").read_text()
    assert "<th>loudness [dB]</th>" in page and 'value="loudness_db"' in page  # a column, a sort key


class Contrast(Metric):
    """The test's metric module with a per-run setup: each file's level against the mean level of the
    run's own files (here the speakers' training files), as similarity's centroids are."""

    name = "contrast"
    columns = (Column("contrast [dB]", "contrast_db", "{:.1f}", headline=True),)

    def run_files(self, transcripts, speakers) -> dict:
        return {"target": list((speakers or {}).get("target", []))}

    def run_found(self, scored: dict) -> dict:
        return {"contrast_mean_db": float(np.mean([s["level_db"] for s in scored.get("target", [])]))}

    def score(self, model, wave: np.ndarray, job: FileJob) -> dict:
        return {"level_db": float(20 * np.log10(np.sqrt(np.mean(wave**2))))}

    def finish(self, row: dict, found: dict) -> None:
        if "level_db" in row:  # a row this family scored
            row["contrast_db"] = row.pop("level_db") - found["contrast_mean_db"]


def test_a_metric_with_a_per_run_setup_is_one_module_and_one_line(tmp_path, monkeypatch):
    from vc.evaluation.scoring import System, score_systems

    monkeypatch.setattr(registry, "METRICS", (*registry.METRICS, Contrast()))  # the one registry line
    folder = tmp_path / "files"
    folder.mkdir()
    tone = np.sin(2 * np.pi * 200 * np.arange(8000) / 16000)
    for utt, gain in (("u1", 0.1), ("u2", 0.2)):
        write_audio(folder / f"{utt}.wav", gain * tone, 16000)
    result = score_systems(
        [System("model", folder, distances=False)],
        folder,
        speakers={"target": [folder / "u1.wav", folder / "u2.wav"]},
        families=("contrast",),
        workers=1,
        progress=False,
    )
    per_utt = result["rows"]["model"]["per_utterance"]
    # the run's files are u1 and u2 themselves: their levels sit 3 dB either side of their mean
    assert per_utt["u2"]["contrast_db"] - per_utt["u1"]["contrast_db"] == pytest.approx(6.02, abs=0.01)
    assert per_utt["u1"]["contrast_db"] == pytest.approx(-per_utt["u2"]["contrast_db"], abs=1e-6)
    assert "run files:contrast:target" not in result["rows"]  # the run's files are no row


def test_vc_score_scores_the_source_row_with_the_families_asked_for(tmp_path, monkeypatch, capsys):
    """The held-out voices' table reads only their input's WER: --source-families scores that row with
    those families alone, the other rows with every one."""
    needs("pyworld", "pysptk")  # vc score checks its analysis libraries before any work
    monkeypatch.setattr(registry, "METRICS", (Loudness(), Contrast()))
    exp = make_experiment(tmp_path, with_scores=False)
    common = ["score", "--no-progress", "--workers", "1", "--no-ceiling", "--no-natural"]
    common += [
        "--converted",
        str(exp / "converted" / "eval"),
        "--reference",
        str(tmp_path / "audio" / "target"),
    ]
    common += [
        "--source",
        str(tmp_path / "audio" / "source"),
        "--train-list",
        str(tmp_path / "data" / "eval.tsv"),
    ]
    out = tmp_path / "scores.json"
    assert main([*common, "--source-families", "loudness", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    for utt in UTTS:
        assert set(rows["no conversion (source)"]["per_utterance"][utt]) == {"loudness_db"}
        assert {"loudness_db", "contrast_db"} <= set(rows["model"]["per_utterance"][utt])
    capsys.readouterr()
    assert main([*common, "--source-families", "loudness,pitch"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no metric family 'pitch'" in err
    from vc.errors import ConfigError
    from vc.evaluation.scoring import System

    with pytest.raises(ConfigError, match="no metric family 'pitch'"):  # a library caller's row too
        System("model", tmp_path, families=("pitch",))


def test_vc_score_help_names_every_family_the_source_row_may_get():
    from vc.cli import build_parser

    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    text = " ".join(commands["score"].format_help().split())
    for name in registry.families():
        assert name in text
