"""`vc convert` and the Python API: the happy paths, and one test per kind of bad input."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
import soundfile as sf
import torch

from tests.test_model import tiny_config
from vc import Converter
from vc.audio import FeatureStats
from vc.checkpoint import save_checkpoint
from vc.cli import main
from vc.config import Config
from vc.errors import AudioError
from vc.model import build_model

N_MELS = 6


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """An untrained tiny model in a complete checkpoint: enough to exercise every path."""
    config = Config()
    config.audio = dataclasses.replace(config.audio, n_mels=N_MELS, max_duration=60.0)
    config.model = tiny_config()
    config.vocoder = dataclasses.replace(config.vocoder, griffin_lim_iters=2)
    torch.manual_seed(0)
    model = build_model(N_MELS, config.model)
    stats = FeatureStats(np.full(N_MELS, -2.0, np.float32), np.ones(N_MELS, np.float32)).to_dict()
    path = tmp_path_factory.mktemp("ckpt") / "model.pt"
    save_checkpoint(
        path,
        {
            "step": 1,
            "model": model.state_dict(),
            "config": config.to_dict(),
            "stats": {"source": stats, "target": stats},
        },
    )
    return path


def speech_like(seconds: float = 1.0, sr: int = 16000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    return 0.3 * np.sin(2 * np.pi * 150 * t) * (1 + np.sin(2 * np.pi * 3 * t)) + 0.01 * rng.standard_normal(
        len(t)
    )


def run(capsys, *args) -> tuple[int, str]:
    code = main(["convert", "--no-progress", *map(str, args)])
    return code, capsys.readouterr().err


def test_convert_one_file(tmp_path, checkpoint, capsys):
    source = tmp_path / "in.wav"
    sf.write(source, speech_like(), 16000)
    out = tmp_path / "out" / "converted.wav"
    code, _ = run(capsys, "--checkpoint", checkpoint, "--save-alignment", tmp_path / "align.npy", source, out)
    assert code == 0
    wave, sr = sf.read(out)
    assert sr == 16000 and len(wave) > 0 and np.isfinite(wave).all()
    alignment = np.load(tmp_path / "align.npy")
    assert alignment.ndim == 2 and np.allclose(alignment.sum(1), 1, atol=1e-4)
    assert len(wave) == 256 * int(round(len(wave) / 256))  # frames x hop


def test_convert_a_folder_of_mixed_formats_rates_and_channels(tmp_path, checkpoint, capsys):
    folder = tmp_path / "inputs"
    folder.mkdir()
    sf.write(folder / "a.wav", speech_like(0.8), 16000)
    sf.write(folder / "b.flac", speech_like(1.2, 22050), 22050)
    sf.write(folder / "c.ogg", np.stack([speech_like(0.6, 44100)] * 2, axis=1), 44100)
    (folder / "notes.txt").write_text("ignored: not audio by suffix")
    out = tmp_path / "converted"
    code, _ = run(
        capsys,
        "--checkpoint",
        checkpoint,
        "--out-dir",
        out,
        "--save-alignment",
        "png",
        "--griffin-lim-iters",
        1,
        folder,
    )
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "a.wav",
        "a_alignment.png",
        "b.wav",
        "b_alignment.png",
        "c.wav",
        "c_alignment.png",
    ]


def test_python_api(checkpoint):
    converter = Converter.from_checkpoint(checkpoint, device="cpu")
    wave, sr = converter.convert(speech_like(1.0, 8000), 8000)
    assert sr == 16000 and wave.dtype == np.float32 and wave.ndim == 1 and len(wave) > 0


def _write(tmp_path, case: str):
    """Build the bad input named by case; returns the path to pass as IN."""
    path = tmp_path / "in.wav"
    if case == "missing input":
        return tmp_path / "nope.wav"
    if case == "folder as file":
        return tmp_path
    if case == "not audio":
        path.write_text("this is text, not audio\n" * 100)
    elif case == "zero samples":
        sf.write(path, np.zeros(0), 16000)
    elif case == "all silence":
        sf.write(path, np.zeros(16000), 16000)
    elif case == "nan samples":
        wave = speech_like().astype(np.float32)
        wave[100] = np.nan
        sf.write(path, wave, 16000, subtype="FLOAT")
    elif case == "inf samples":
        wave = speech_like().astype(np.float32)
        wave[100] = np.inf
        sf.write(path, wave, 16000, subtype="FLOAT")
    elif case == "shorter than a frame":
        sf.write(path, speech_like(0.02), 16000)
    elif case == "five minutes":
        sf.write(path, np.tile(speech_like(1.0), 300), 16000)
    return path


@pytest.mark.parametrize(
    "case,message",
    [
        ("missing input", "not found"),
        ("folder as file", "is a folder"),
        ("not audio", "cannot read"),
        ("zero samples", "no samples"),
        ("all silence", "silent"),
        ("nan samples", "NaN or infinite"),
        ("inf samples", "NaN or infinite"),
        ("shorter than a frame", "too short"),
        ("five minutes", "max_duration"),
    ],
)
def test_bad_input_is_one_error_line_and_no_output(tmp_path, checkpoint, capsys, case, message):
    source = _write(tmp_path, case)
    out = tmp_path / "out.wav"
    code, err = run(capsys, "--checkpoint", checkpoint, source, out)
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("vc convert: error:") and message in err, err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.wav")]  # no temp left behind


@pytest.mark.parametrize("damage", ["missing", "corrupt", "truncated", "foreign"])
def test_bad_checkpoint_is_one_error_line(tmp_path, checkpoint, capsys, damage):
    source = tmp_path / "in.wav"
    sf.write(source, speech_like(), 16000)
    bad = tmp_path / "bad.pt"
    if damage == "corrupt":
        bad.write_bytes(b"\x00garbage" * 1000)
    elif damage == "truncated":
        bad.write_bytes(checkpoint.read_bytes()[:1000])
    elif damage == "foreign":
        torch.save({"state_dict": {}}, bad)
    code, err = run(capsys, "--checkpoint", bad, source, tmp_path / "out.wav")
    assert code == 1 and err.count("\n") == 1 and "checkpoint" in err, err
    assert not (tmp_path / "out.wav").exists()


def test_unwritable_output_is_one_error_line(tmp_path, checkpoint, capsys):
    source = tmp_path / "in.wav"
    sf.write(source, speech_like(), 16000)
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a folder")
    code, err = run(capsys, "--checkpoint", checkpoint, source, blocker / "out.wav")
    assert code == 1 and err.count("\n") == 1 and "cannot write" in err, err
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if not os.access(locked, os.W_OK):  # root can write anywhere
        code, err = run(capsys, "--checkpoint", checkpoint, source, locked / "out.wav")
        assert code == 1 and "cannot write" in err


def test_bad_config_override_is_one_error_line(tmp_path, checkpoint, capsys):
    source = tmp_path / "in.wav"
    sf.write(source, speech_like(), 16000)
    code, err = run(
        capsys, "--checkpoint", checkpoint, "--set", "inference.max_ratoi=2", source, tmp_path / "o.wav"
    )
    assert code == 1 and err.count("\n") == 1 and "inference.max_ratio" in err, err


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--set", "audio.hop_length=128"], "only inference.* and vocoder.*"),
        (["--device", "nope"], "unknown device"),
        (["--set", "inference.max_ratio=["], "not valid YAML"),
    ],
)
def test_bad_options_are_one_error_line(tmp_path, checkpoint, capsys, extra, message):
    source = tmp_path / "in.wav"
    sf.write(source, speech_like(), 16000)
    code, err = run(capsys, "--checkpoint", checkpoint, *extra, source, tmp_path / "o.wav")
    assert code == 1 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "o.wav").exists()


def test_output_format_follows_the_suffix(tmp_path, checkpoint, capsys):
    source = tmp_path / "in.wav"
    sf.write(source, speech_like(), 16000)
    assert run(capsys, "--checkpoint", checkpoint, source, tmp_path / "out.flac")[0] == 0
    assert sf.info(tmp_path / "out.flac").format == "FLAC"
    code, err = run(capsys, "--checkpoint", checkpoint, source, tmp_path / "out.mp3")
    assert code == 1 and "must end in" in err and not (tmp_path / "out.mp3").exists()


def test_python_api_refuses_long_input_and_is_deterministic(checkpoint):
    converter = Converter.from_checkpoint(checkpoint, device="cpu")
    with pytest.raises(AudioError, match="max_duration"):
        converter.convert(np.tile(speech_like(1.0), 61), 16000)
    first, _ = converter.convert(speech_like(0.7), 16000)
    again, _ = converter.convert(speech_like(0.7), 16000)
    assert np.array_equal(first, again)
