"""The synthetic parallel data builder (egs/arctic/vc1/local/tts_voices.py) on two real ARCTIC prompts.

Skipped where a TTS engine or voice is missing, except under CI=true, where .ci/run installs them
(flite, espeak-ng, festival and its voices) and a missing one is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import ARCTIC, arctic_file
from tests.helpers import venv_env

SCRIPT = Path(__file__).resolve().parents[1] / "egs" / "arctic" / "vc1" / "local" / "tts_voices.py"
TRAIN_UTT, DEV_UTT = "arctic_a0001", "arctic_a0002"


def load_tts_voices():
    spec = importlib.util.spec_from_file_location("tts_voices", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["tts_voices"] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


tts = load_tts_voices()


def write_lists(folder: Path) -> Path:
    """data_prep.py's three lists, one pair each: train reads a0001, dev and eval read a0002."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, utt in (("train", TRAIN_UTT), ("dev", DEV_UTT), ("eval", DEV_UTT)):
        line = f"{utt}\t{arctic_file('bdl', utt)}\t{arctic_file('slt', utt)}\n"
        (folder / f"{split}.tsv").write_text(line)
    return folder


def run(data: Path, out: Path) -> None:
    tts.main(["--data", str(data), "--out", str(out), "--db_root", str(ARCTIC), "--tgt", "slt"])


@pytest.fixture(scope="module")
def engines() -> None:
    problem = tts.missing(tts.VOICES)
    if problem and os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"a TTS engine is missing; .ci/run installs them: {problem}")
    if problem:
        pytest.skip(problem)


@pytest.fixture(scope="module")
def built(engines, tmp_path_factory):
    root = tmp_path_factory.mktemp("tts")
    data, out = write_lists(root / "data"), root / "out"
    run(data, out)
    return data, out


def list_rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().splitlines()]


def resolved(rows: list[list[str]]) -> list[tuple[str, Path, Path]]:
    """Pairs with their files' real paths (pair lists store resolved paths; ../shared may be a link)."""
    return [(utt, Path(source).resolve(), Path(target).resolve()) for utt, source, target in rows]


def test_the_voice_table():
    names = [voice.name for voice in tts.VOICES]
    assert len(set(names)) == len(names) and all(name.replace("-", "").isalnum() for name in names)
    train = [v for v in tts.VOICES if v.role == tts.TRAIN]
    heldout = [v for v in tts.VOICES if v.role == tts.HELDOUT]
    assert len({v.engine for v in train}) >= 2 and len({v.engine for v in heldout}) >= 2
    assert {v.role for v in tts.VOICES} == {tts.TRAIN, tts.HELDOUT}
    # flite's awb, rms and slt are CMU ARCTIC speakers: never a training source
    assert not [v for v in train if v.engine == "flite" and v.args[-1] in ("awb", "rms", "slt")]


def test_every_voice_reads_its_prompts_at_16k_mono(built):
    _, out = built
    files = [
        out / v.name / f"{utt}.wav" for v in tts.VOICES if v.role == tts.TRAIN for utt in (TRAIN_UTT, DEV_UTT)
    ]
    files += [out / "heldout" / v.name / f"{DEV_UTT}.wav" for v in tts.VOICES if v.role == tts.HELDOUT]
    for path in files:
        wave, rate = sf.read(path, dtype="float32", always_2d=True)
        assert rate == 16000 and wave.shape[1] == 1, path
        frames = wave[: len(wave) // 400 * 400, 0].reshape(-1, 400)  # 25 ms
        loud = np.sqrt((frames**2).mean(axis=1)) > 0.01
        assert len(wave) > 16000 and loud.mean() > 0.3, f"{path}: no speech ({loud.mean():.0%} loud frames)"
    assert not list(out.rglob("*.tmp")) and not list(out.rglob(".*"))


def test_lists_hold_the_source_and_train_voices_only(built):
    data, out = built
    train_names = {v.name for v in tts.VOICES if v.role == tts.TRAIN}
    heldout_names = {v.name for v in tts.VOICES if v.role == tts.HELDOUT}
    for split, utt in (("train", TRAIN_UTT), ("dev", DEV_UTT)):
        rows = list_rows(out / f"{split}.tsv")
        assert resolved(rows[:1]) == resolved(list_rows(data / f"{split}.tsv"))  # the original pair first
        assert {row[0] for row in rows[1:]} == {f"{name}_{utt}" for name in train_names}
        for utt_id, source, target in rows[1:]:
            assert Path(source) == (out / utt_id.split("_", 1)[0] / f"{utt}.wav").resolve()
            assert Path(target) == arctic_file("slt", utt).resolve()
        assert not [name for name in heldout_names if name in (out / f"{split}.tsv").read_text()]
    assert resolved(list_rows(out / "eval.tsv")) == resolved(list_rows(data / "eval.tsv"))


def test_the_prompt_of_every_id_is_written_for_the_phones_aligner(built):
    _, out = built
    texts = dict(line.split("\t") for line in (out / "text").read_text().splitlines())
    ids = {row[0] for split in ("train", "dev", "eval") for row in list_rows(out / f"{split}.tsv")}
    assert ids <= set(texts)
    prompts = tts.read_prompts(ARCTIC, "slt", arctic_file("slt", TRAIN_UTT))
    assert texts[f"espeak-us-m3_{TRAIN_UTT}"] == texts[TRAIN_UTT] == prompts[TRAIN_UTT]


def test_a_second_run_synthesises_only_what_is_missing(built, monkeypatch):
    data, out = built
    files = sorted(out.rglob("*.wav"))
    before = {path: path.stat().st_mtime_ns for path in files}
    files[0].unlink()
    calls, synthesize = [], tts.synthesize

    def counted(voice, text, path):
        calls.append(path)
        synthesize(voice, text, path)

    monkeypatch.setattr(tts, "synthesize", counted)
    run(data, out)
    assert calls == [files[0]]
    assert {path: path.stat().st_mtime_ns for path in files[1:]} == {p: before[p] for p in files[1:]}


def test_a_missing_engine_is_one_line_naming_the_package(tmp_path):
    data = write_lists(tmp_path / "data")
    empty = tmp_path / "bin"  # a PATH with no TTS engine on it
    empty.mkdir()
    command = [
        sys.executable,
        str(SCRIPT),
        "--data",
        str(data),
        "--out",
        str(tmp_path / "out"),
        "--db_root",
        str(ARCTIC),
    ]
    done = subprocess.run(command, env={**os.environ, "PATH": str(empty)}, capture_output=True, text=True)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("tts_voices: error: voice ") and "apt-get install" in lines[0], lines[0]
    assert lines[0].endswith("apt-get install espeak-ng festival festvox-kallpc16k festvox-kdlpc16k flite")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.wav"))


def test_a_voice_the_engine_lacks_is_missing_too(engines):
    # flite and espeak-ng read an unknown voice in their default one, and say nothing
    unknown = tts.Voice("flite-x", "flite", ("-voice", "nonexistent"), tts.TRAIN, "flite", "")
    assert (
        tts.missing([unknown])
        == "voice flite-x: flite has no voice -voice nonexistent; apt-get install flite"
    )
    assert tts.missing(tts.VOICES) is None


def test_the_recipe_builds_them_in_stage_0_with_tts_voices_yes(engines, tmp_path):
    run_sh = SCRIPT.parents[1] / "run.sh"
    env = venv_env()
    command = [
        str(run_sh),
        "--db_root",
        str(ARCTIC),
        "--work",
        str(tmp_path),
        "--data_prep_args",
        "--limit 1",
    ]
    done = subprocess.run(
        [*command, "--tts_voices", "yes", "--stop_stage", "0"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = list_rows(tmp_path / "data" / "bdl_slt_tts" / "train.tsv")
    train_voices = [v.name for v in tts.VOICES if v.role == tts.TRAIN]
    assert [row[0] for row in rows] == [TRAIN_UTT] + [f"{name}_{TRAIN_UTT}" for name in train_voices]
    assert "=== stage 0: TTS voices" in done.stdout
    wrong = subprocess.run([*command, "--tts_voices", "maybe"], env=env, capture_output=True, text=True)
    assert wrong.returncode == 2 and "--tts_voices takes yes or no" in wrong.stderr
