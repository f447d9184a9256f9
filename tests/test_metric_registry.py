"""A metric is one module and one registry line (vc/evaluation/registry.py): a new one shows up in
`vc score`'s table and JSON, in `vc compare` and in the listening report, with nothing else touched."""

from __future__ import annotations

import json

import numpy as np

from tests.helpers import needs
from tests.synthetic_exp import UTTS, make_experiment
from vc.audio import read_audio, write_audio
from vc.cli import main
from vc.config import AudioConfig
from vc.evaluation import registry
from vc.evaluation.metric import Column, FileJob, Metric


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
