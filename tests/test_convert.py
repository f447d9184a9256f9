"""`vc convert` and the Python API: the happy paths, and one test per kind of bad input."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from tests.helpers import speech_like
from vc import Converter
from vc.audio import prepare_speech
from vc.cli import main
from vc.errors import AudioError, ConfigError

N_MELS = 6


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
    return path


@pytest.mark.filterwarnings("error")  # a warning from any library must not change the answer
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


@pytest.mark.filterwarnings("error")  # a warning from any library must not change the answer
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


@pytest.mark.filterwarnings("error")  # a warning from any library must not change the answer
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


@pytest.mark.filterwarnings("error")  # a warning from any library must not change the answer
def test_bad_config_override_is_one_error_line(tmp_path, checkpoint, capsys):
    source = tmp_path / "in.wav"
    sf.write(source, speech_like(), 16000)
    code, err = run(
        capsys, "--checkpoint", checkpoint, "--set", "inference.max_ratoi=2", source, tmp_path / "o.wav"
    )
    assert code == 1 and err.count("\n") == 1 and "inference.max_ratio" in err, err


@pytest.mark.filterwarnings("error")  # a warning from any library must not change the answer
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


def test_python_api_is_deterministic(checkpoint):
    converter = Converter.from_checkpoint(checkpoint, device="cpu")
    first, _ = converter.convert(speech_like(0.7), 16000)
    again, _ = converter.convert(speech_like(0.7), 16000)
    assert np.array_equal(first, again)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_gpu_conversion_matches_the_cpu_one():
    # Griffin-Lim's initial phases come from one CPU generator on every device. Drawn from a CUDA
    # generator, the H200's audio was uncorrelated with the CPU's (SNR -3 dB; 2026-11-26).
    wave = speech_like(1.5)
    outputs = [Converter.from_pretrained(device=d).convert(wave, 16000)[0] for d in ("cuda", "cpu")]
    gpu, cpu = (x[: min(map(len, outputs))] for x in outputs)
    assert 10 * np.log10(np.sum(cpu**2) / np.sum((gpu - cpu) ** 2)) > 6


def test_utterance_normalization_makes_the_input_level_irrelevant(checkpoint):
    """inference.source_normalization=utterance: a louder recording of the same speech converts alike."""
    wave = speech_like(0.8)
    outputs = {}
    for mode in ("speaker", "utterance"):
        converter = Converter.from_checkpoint(
            checkpoint, device="cpu", overrides=[f"inference.source_normalization={mode}"]
        )
        mels, lens = converter.features(torch.from_numpy(np.stack([wave, 4 * wave]).astype(np.float32)), None)
        outputs[mode] = converter.normalize_source(mels, torch.tensor([mels.shape[1]] * 2))
    by_speaker, by_utterance = outputs["speaker"], outputs["utterance"]
    assert not torch.allclose(by_speaker[0], by_speaker[1], atol=1e-3)  # the speaker's mean keeps the level
    torch.testing.assert_close(by_utterance[0], by_utterance[1], atol=1e-3, rtol=0)
    # centred per band over the utterance: the mean of each band is 0
    torch.testing.assert_close(by_utterance.mean(dim=1), torch.zeros(2, N_MELS), atol=1e-4, rtol=0)


# ---------------------------------------------------------------------------- nothing lost, nothing dropped


@pytest.mark.parametrize("spelling", ["same path", "other spelling", "symlink", "hard link"])
def test_an_output_that_is_the_input_is_refused_before_any_work(tmp_path, checkpoint, capsys, spelling):
    source = tmp_path / "in.wav"
    sf.write(source, speech_like(), 16000)
    before = source.read_bytes()
    out = {
        "same path": source,
        "other spelling": tmp_path / "sub" / ".." / "in.wav",
        "symlink": tmp_path / "link.wav",
        "hard link": tmp_path / "hard.wav",
    }[spelling]
    (tmp_path / "sub").mkdir()
    if spelling == "symlink":
        out.symlink_to(source)
    elif spelling == "hard link":
        os.link(source, out)
    code, err = run(capsys, "--checkpoint", checkpoint, source, out)
    assert code == 1 and err.count("\n") == 1 and "is the input" in err, err
    assert source.read_bytes() == before


def test_out_dir_that_is_the_input_folder_is_refused(tmp_path, checkpoint, capsys):
    sf.write(tmp_path / "a.wav", speech_like(), 16000)
    before = (tmp_path / "a.wav").read_bytes()
    code, err = run(capsys, "--checkpoint", checkpoint, "--out-dir", tmp_path, tmp_path)
    assert code == 1 and err.count("\n") == 1 and "is the input" in err, err
    assert (tmp_path / "a.wav").read_bytes() == before


def test_two_inputs_with_one_output_name_are_refused(tmp_path, checkpoint, capsys):
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
        sf.write(tmp_path / folder / "a.wav", speech_like(), 16000)
    args = ["--out-dir", tmp_path / "out", tmp_path / "x" / "a.wav", tmp_path / "y" / "a.wav"]
    code, err = run(capsys, "--checkpoint", checkpoint, *args)
    assert code == 1 and err.count("\n") == 1 and "share a file name" in err, err
    from vc.inference import check_outputs

    with pytest.raises(AudioError, match="would both be written"):
        check_outputs([tmp_path / "x" / "a.wav", tmp_path / "y" / "a.wav"], [tmp_path / "o.wav"] * 2)


def _folder_with_one_bad_file(tmp_path):
    folder = tmp_path / "inputs"
    folder.mkdir()
    sf.write(folder / "a.wav", speech_like(0.5), 16000)
    (folder / "b.wav").write_text("not audio at all\n" * 50)
    sf.write(folder / "c.wav", speech_like(0.6, seed=1), 16000)
    return folder


def test_a_folder_with_an_unreadable_file_converts_the_rest_and_lists_the_failure(
    tmp_path, checkpoint, capsys
):
    folder, out = _folder_with_one_bad_file(tmp_path), tmp_path / "out"
    code = main(
        ["convert", "--no-progress", "--checkpoint", str(checkpoint), "--out-dir", str(out), str(folder)]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert sorted(p.name for p in out.iterdir()) == ["a.wav", "c.wav"]
    assert "converted 2 of 3 file(s)" in captured.out
    lines = captured.err.splitlines()
    assert lines[0] == "vc convert: error: 1 of 3 file(s) not converted:", captured.err
    assert len(lines) == 2 and "b.wav" in lines[1] and "cannot read" in lines[1], captured.err


def test_strict_stops_at_the_first_unusable_input_and_writes_nothing(tmp_path, checkpoint, capsys):
    folder, out = _folder_with_one_bad_file(tmp_path), tmp_path / "out"
    code, err = run(capsys, "--checkpoint", checkpoint, "--strict", "--out-dir", out, folder)
    assert code == 1 and err.count("\n") == 1 and "b.wav" in err and "cannot read" in err, err
    assert not out.exists() or not list(out.iterdir())


# ---------------------------------------------------- an existing output is replaced only when asked


def test_an_existing_output_is_refused_before_any_work_unless_overwrite(tmp_path, checkpoint, capsys):
    source, out = tmp_path / "in.wav", tmp_path / "out.wav"
    sf.write(source, speech_like(), 16000)
    out.write_bytes(b"the user's file")
    # A missing checkpoint: the refusal comes before the model would load.
    code, err = run(capsys, "--checkpoint", tmp_path / "missing.pt", source, out)
    assert code == 1 and err.count("\n") == 1, err
    assert str(out) in err and "already exists" in err and "--overwrite" in err
    assert out.read_bytes() == b"the user's file"
    code, err = run(capsys, "--checkpoint", checkpoint, "--overwrite", source, out)
    assert code == 0, err
    assert sf.info(out).frames > 0


def test_two_existing_audio_files_say_what_to_do(tmp_path, checkpoint, capsys):
    first, second = tmp_path / "a.wav", tmp_path / "b.wav"
    sf.write(first, speech_like(), 16000)
    sf.write(second, speech_like(seed=1), 16000)
    before = second.read_bytes()
    code, err = run(capsys, "--checkpoint", checkpoint, first, second)
    assert code == 1 and err.count("\n") == 1, err
    assert str(second) in err and "--out-dir" in err and "--overwrite" in err
    assert second.read_bytes() == before


def test_out_dir_refuses_every_existing_output_at_once(tmp_path, checkpoint, capsys):
    folder, out = tmp_path / "inputs", tmp_path / "out"
    folder.mkdir()
    out.mkdir()
    for name in ("a", "b", "c"):
        sf.write(folder / f"{name}.wav", speech_like(0.5), 16000)
    (out / "a.wav").write_bytes(b"keep a")
    (out / "c_alignment.npy").write_bytes(b"keep c")
    args = ["--out-dir", out, "--save-alignment", "npy", folder]
    code, err = run(capsys, "--checkpoint", tmp_path / "missing.pt", *args)
    assert code == 1 and err.count("\n") == 1, err
    assert "a.wav" in err and "c_alignment.npy" in err and "--overwrite" in err
    assert sorted(p.name for p in out.iterdir()) == ["a.wav", "c_alignment.npy"]
    assert (out / "a.wav").read_bytes() == b"keep a"
    code, err = run(capsys, "--checkpoint", checkpoint, "--overwrite", *args)
    assert code == 0, err
    assert len(list(out.iterdir())) == 6 and sf.info(out / "a.wav").frames > 0


def test_overwrite_never_lets_an_output_replace_its_input(tmp_path, checkpoint, capsys):
    source = tmp_path / "in.wav"
    sf.write(source, speech_like(), 16000)
    before = source.read_bytes()
    code, err = run(capsys, "--checkpoint", checkpoint, "--overwrite", source, source)
    assert code == 1 and "is the input" in err
    assert source.read_bytes() == before


def test_a_library_caller_gets_the_same_output_checks_as_vc_convert(tmp_path):
    """plan_conversion: vc convert's path checks, for a caller of the Python API."""
    from vc.inference.files import plan_conversion

    source, out = tmp_path / "in.wav", tmp_path / "out.wav"
    sf.write(source, speech_like(0.5), 16000)
    plan = plan_conversion([source, out], save_alignment=str(tmp_path / "a.npy"))
    assert plan.inputs == [source] and plan.outputs == [out] and plan.alignments == [tmp_path / "a.npy"]
    plan = plan_conversion([source], out_dir=tmp_path / "o", save_alignment="png")
    assert plan.outputs == [tmp_path / "o" / "in.wav"]
    assert plan.alignments == [tmp_path / "o" / "in_alignment.png"]
    out.write_bytes(b"the user's file")
    for paths, options, message in [
        ([source, source], {}, "is the input"),
        ([source, out], {}, "add --overwrite"),
        ([source, out], {"overwrite": True, "save_alignment": "a.txt"}, "must end in .png or .npy"),
        ([source], {}, "give IN OUT"),
        ([tmp_path, out], {}, "is a folder; use --out-dir"),
        ([source], {"out_dir": tmp_path, "save_alignment": "svg"}, "takes a format: png or npy"),
    ]:
        with pytest.raises(AudioError, match=message):
            plan_conversion(paths, **options)
    assert plan_conversion([source, out], overwrite=True).outputs == [out]


# ------------------------------------------------------------ library noise never reaches the user

FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG, like ENOSPC
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))  # less than any output
from vc.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _vc_process(tmp_path, flags, args):
    """`vc` in a fresh interpreter: its stderr exactly as a user's terminal would get it."""
    script = tmp_path / "full_disk.py"
    script.write_text(FULL_DISK)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run(
        [sys.executable, *flags, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )


@pytest.mark.parametrize("flags", [[], ["-W", "error"]], ids=["default warnings", "warnings as errors"])
@pytest.mark.parametrize("case", ["pickle protocol 5 checkpoint", "not audio", "full disk"])
def test_library_warnings_and_tracebacks_never_reach_stderr(tmp_path, checkpoint, flags, case):
    source, out, model = tmp_path / "in.wav", tmp_path / "out.wav", checkpoint
    sf.write(source, speech_like(3.0), 16000)
    entry = ["-m", "vc.cli"]
    if case == "pickle protocol 5 checkpoint":
        model = tmp_path / "foreign.pt"
        model.write_bytes(pickle.dumps({"weights": [1, 2, 3]}, protocol=5))
    elif case == "not audio":
        source.write_text("text\n" * 100)
    elif case == "full disk":
        entry = [str(tmp_path / "full_disk.py")]
    result = _vc_process(
        tmp_path, flags, [*entry, "convert", "--checkpoint", str(model), str(source), str(out)]
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("vc convert: error:"), result.stderr
    assert not out.exists()


def test_verbose_shows_library_warnings_in_the_debug_log(tmp_path):
    source, model = tmp_path / "in.wav", tmp_path / "foreign.pt"
    sf.write(source, speech_like(), 16000)
    model.write_bytes(pickle.dumps({"weights": [1]}, protocol=5))
    result = _vc_process(
        tmp_path, [], ["-m", "vc.cli", "-v", "convert", "--checkpoint", str(model), str(source), "o.wav"]
    )
    assert "DEBUG py.warnings" in result.stderr and "pickle protocol 5" in result.stderr, result.stderr
    assert result.stderr.splitlines()[-1].startswith("vc convert: error:")


def test_converting_imports_neither_librosa_nor_scipy():
    """Their imports cost about 2 s of a conversion's cold start (vc/audio/dsp.py replaces what it used)."""
    code = (
        "import sys, numpy as np; from vc.audio import prepare_wave, LogMel; from vc.settings.audio import AudioConfig; "
        "import vc.cli, vc.inference, vc.artifacts.pretrained; "
        "t = np.arange(16000) / 16000; prepare_wave(np.sin(2 * np.pi * 200 * t) * (t > 0.3), 16000, AudioConfig()); "
        "LogMel(AudioConfig()); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'librosa', 'scipy', 'numba', 'matplotlib'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_prenet_dropout_override_sets_the_inference_noise(checkpoint):
    """inference.prenet_dropout: 0.5 makes the seed matter (the tiny model trained without dropout); 0 not."""
    wave = speech_like(0.6).astype(np.float32)
    mels = {}
    for dropout in (0.5, 0.0):
        converter = Converter.from_checkpoint(
            checkpoint, device="cpu", overrides=[f"inference.prenet_dropout={dropout}"]
        )
        runs = []
        for seed in (0, 1):
            converter.seed = seed
            runs.append(converter.convert_batch([wave])[0].mel)
        mels[dropout] = runs
    noisy_0, noisy_1 = mels[0.5]
    assert noisy_0.shape != noisy_1.shape or not np.allclose(noisy_0, noisy_1)
    np.testing.assert_array_equal(mels[0.0][0], mels[0.0][1])


@pytest.mark.parametrize("value", ["1.0", "-0.1"])
def test_prenet_dropout_out_of_range_is_a_config_error(checkpoint, value):
    with pytest.raises(ConfigError, match="inference.prenet_dropout"):
        Converter.from_checkpoint(checkpoint, device="cpu", overrides=[f"inference.prenet_dropout={value}"])


@pytest.mark.parametrize("value", ["0", "-1.5"])
def test_attention_sharpness_must_be_positive(checkpoint, value):
    with pytest.raises(ConfigError, match="inference.attention_sharpness must be positive"):
        Converter.from_checkpoint(
            checkpoint, device="cpu", overrides=[f"inference.attention_sharpness={value}"]
        )


def test_convert_cli_takes_the_attention_sharpness(checkpoint, tmp_path):
    """--set inference.attention_sharpness=S reaches the decoder: another output than the default's."""
    sf.write(tmp_path / "in.wav", speech_like(0.6), 16000)
    for value in ("1", "4"):
        assert (
            main(
                [
                    "convert",
                    "--checkpoint",
                    str(checkpoint),
                    "--set",
                    "inference.prenet_dropout=0",
                    "--set",
                    f"inference.attention_sharpness={value}",
                    str(tmp_path / "in.wav"),
                    str(tmp_path / f"out{value}.wav"),
                ]
            )
            == 0
        )
    plain, sharp = (sf.read(tmp_path / f"out{v}.wav")[0] for v in ("1", "4"))
    assert plain.shape != sharp.shape or not np.allclose(plain, sharp)


def test_the_silence_around_the_speech_is_kept(tmp_path, checkpoint, capsys):
    """The model converts the speech alone; the silence trimmed before and after it comes back as
    silence of the same length, in the API, in a file and in a batch of files (a recognizer loses
    the first words of speech that starts at sample 0)."""
    converter = Converter.from_checkpoint(checkpoint, device="cpu")
    audio = converter.config.audio
    padded = np.concatenate([np.zeros(6400), speech_like(1.0), np.zeros(4000)]).astype(np.float32)
    speech = prepare_speech(padded, 16000, audio)
    assert 6400 - audio.win_length <= speech.lead <= 6400 and 4000 - audio.win_length <= speech.tail <= 4000
    bare = converter.convert_batch([speech.wave])[0].wave
    wave, _ = converter.convert(padded, 16000)
    assert len(wave) == speech.lead + len(bare) + speech.tail
    assert not wave[: speech.lead].any() and not wave[len(wave) - speech.tail :].any()
    assert np.array_equal(wave[speech.lead : len(wave) - speech.tail], bare)
    sf.write(tmp_path / "padded.wav", padded, 16000, subtype="FLOAT")
    assert np.array_equal(converter.convert_file(tmp_path / "padded.wav").wave, wave)
    sf.write(tmp_path / "bare.wav", speech.wave, 16000, subtype="FLOAT")
    code, _ = run(
        capsys,
        "--checkpoint",
        checkpoint,
        "--out-dir",
        tmp_path / "out",
        tmp_path / "padded.wav",
        tmp_path / "bare.wav",
    )
    assert code == 0
    written = sf.read(tmp_path / "out" / "padded.wav", dtype="float32")[0]  # 16-bit, batched with bare.wav
    assert (
        len(written) == len(wave) and not written[: speech.lead].any() and not written[-speech.tail :].any()
    )
    assert len(sf.read(tmp_path / "out" / "bare.wav")[0]) == len(bare)
