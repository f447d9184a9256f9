"""vc export (inference-only model files) and the bundled models (issue 11, items 3 and 4)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf
import torch

from tests.conftest import arctic_file
from tests.helpers import TINY_MELS as N_MELS
from tests.helpers import speech_like
from vc import Converter
from vc.artifacts.checkpoint import load_checkpoint
from vc.artifacts.companion import MEL2LINEAR, POSTFILTER
from vc.artifacts.export import export_model
from vc.artifacts.pretrained import get_model, list_models, model_path
from vc.cli import main
from vc.errors import CheckpointError
from vc.evaluation.systems import CEILING, ceiling_vocoders
from vc.model.mel2linear import Mel2Linear
from vc.vocoders import build_vocoder


def _with_network(path, config):
    net = Mel2Linear(N_MELS, config.audio.n_fft // 2 + 1, channels=8, layers=1, kernel=3)
    MEL2LINEAR.save(path.parent / MEL2LINEAR.file_name, net, config.audio)


def test_export_keeps_what_conversion_needs_and_converts_the_same(model_checkpoint, tmp_path):  # noqa: F811
    path, config = model_checkpoint
    _with_network(path, config)
    out = tmp_path / "exported.pt"
    summary = export_model(path, out)
    payload = load_checkpoint(out)
    assert set(payload) >= {"model", "config", "stats", "step", MEL2LINEAR.embedded_key, "info"}
    assert not {"optimizer", "scheduler", "scaler", "rng"} & set(payload)
    assert all(v.dtype == torch.float16 for v in payload["model"].values() if v.is_floating_point())
    assert (
        summary["mel2linear"] == path.parent / MEL2LINEAR.file_name and summary["bytes"] == out.stat().st_size
    )

    # The exported file alone (no companion beside it) converts as the checkpoint with its companion,
    # up to the fp16 rounding of the weights.
    alone = tmp_path / "elsewhere" / "model.pt"
    alone.parent.mkdir()
    alone.write_bytes(out.read_bytes())
    original, exported = Converter.from_checkpoint(path), Converter.from_checkpoint(alone)
    assert exported.vocoder.mel2linear is not None
    assert all(p.dtype == torch.float32 for p in exported.model.parameters())
    for a, b in zip(original.model.parameters(), exported.model.parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=2e-3, rtol=1e-3)
    wave = speech_like(0.5)
    first, _ = original.convert(wave, 16000)
    second, _ = exported.convert(wave, 16000)
    assert first.shape == second.shape and np.isfinite(second).all()
    assert Converter.from_checkpoint(alone, mel2linear=False).vocoder.mel2linear is None


def test_score_ceiling_uses_the_network_inside_an_exported_file(model_checkpoint, tmp_path):  # noqa: F811
    """vc score --checkpoint MODEL must vocode its ceiling as vc convert does with MODEL."""
    path, config = model_checkpoint
    _with_network(path, config)
    alone = tmp_path / "elsewhere" / "model.pt"
    alone.parent.mkdir()
    export_model(path, alone)
    assert list(ceiling_vocoders(config, alone)) == [CEILING]  # the pseudo-inverse row: asked for
    rows = ceiling_vocoders(config, alone, pseudo_inverse=True)
    assert isinstance(rows[CEILING].mel2linear, Mel2Linear)
    assert rows[f"{CEILING} (pseudo-inverse)"].mel2linear is None
    assert build_vocoder(config, alone, mel2linear=False).mel2linear is None


def test_export_without_a_network_and_in_float32(model_checkpoint, tmp_path, capsys):  # noqa: F811
    path, _ = model_checkpoint
    out = tmp_path / "plain.pt"
    assert main(["export", str(path), str(out), "--float32"]) == 0
    assert "no mel2linear network" in capsys.readouterr().out
    payload = load_checkpoint(out)
    assert MEL2LINEAR.embedded_key not in payload
    assert all(v.dtype == torch.float32 for v in payload["model"].values() if v.is_floating_point())
    assert main(["export", str(tmp_path / "missing.pt"), str(tmp_path / "x.pt")]) == 1
    assert (
        capsys.readouterr().err.strip()
        == f"vc export: error: checkpoint not found: {tmp_path / 'missing.pt'}"
    )
    assert not (tmp_path / "x.pt").exists()


def test_export_replaces_an_existing_file_only_when_asked(model_checkpoint, tmp_path, capsys):  # noqa: F811
    path, _ = model_checkpoint
    out = tmp_path / "model.pt"
    out.write_bytes(b"the user's file")
    assert main(["export", str(path), str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out) in err and "already exists" in err and "--overwrite" in err
    assert out.read_bytes() == b"the user's file"
    assert main(["export", str(path), str(out), "--overwrite"]) == 0
    assert load_checkpoint(out)["step"] == load_checkpoint(path)["step"]


def test_the_registry_lists_a_default_model_that_is_installed():
    models = list_models()
    assert models[0].default and sum(m.default for m in models) == 1
    default = get_model()
    assert model_path() == default.path and default.path.is_file()
    assert default.path.stat().st_size <= 20e6
    for model in models:
        assert model.training_data and model.licence and model.recipe and model.scores
        assert model.path.is_file() and model.path.stat().st_size <= 20e6
    with pytest.raises(CheckpointError, match="no bundled model named 'nope'"):
        get_model("nope")


def test_vc_models_lists_them_short_and_their_provenance_with_verbose(capsys):
    default = get_model()
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{default.name}  (default)") and "scores:" in out
    assert "made by:" not in out and len(out.splitlines()) <= 6 * len(list_models())
    assert main(["models", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert str(default.path) in out and "made by:" in out and "licence:" in out


def test_vc_models_shows_the_scores_on_held_out_voices(capsys):
    # Issue 35: the bundled model's scores on voices it never heard, beside the seen source's.
    default = get_model()
    assert len(default.heldout_scores) >= 2
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for voice, scores in default.heldout_scores.items():
        line = next(line for line in out.splitlines() if line.strip().startswith(f"held-out {voice}:"))
        assert f"Whisper WER % {scores['Whisper WER %']}" in line and "input Whisper WER %" in line


def test_the_bundled_model_centres_a_far_voice_by_default():
    # Issue 35: per-input normalisation (auto) needs the source speaker's utterance spread in the file.
    converter = Converter.from_pretrained()
    assert converter.config.inference.source_normalization == "auto"
    assert 0 < converter.src_stats.utterance_spread < 1


@pytest.mark.parametrize("name", [model.name for model in list_models()])
def test_every_bundled_model_converts_an_utterance_no_training_used(name):
    converter = Converter.from_pretrained(name)
    assert converter.vocoder.mel2linear is not None
    wave, sr = sf.read(arctic_file("bdl", "arctic_b0450"), dtype="float32")  # an eval utterance
    converted, out_sr = converter.convert(wave, sr)
    assert out_sr == 16000 and np.isfinite(converted).all()
    # The decoder stopped by itself, near the input's length (not at the max_ratio cap).
    assert 0.5 < len(converted) / len(wave) < 2.0


def test_convert_without_checkpoint_uses_the_bundled_model_and_says_so_once(tmp_path):
    sf.write(tmp_path / "in.wav", sf.read(arctic_file("bdl", "arctic_b0451"))[0], 16000)
    done = subprocess.run(
        [sys.executable, "-m", "vc.cli", "convert", "--no-progress", "in.wav", "out.wav"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"bundled model '{get_model().name}'" in lines[0]
    assert sf.info(tmp_path / "out.wav").frames > 16000


def test_re_exporting_an_exported_file_keeps_what_it_embeds(model_checkpoint, tmp_path):  # noqa: F811
    """A bundled model gains a post-filter by exporting it again: its mel2linear network stays inside."""
    from vc.model.postfilter import MelPostfilter

    path, config = model_checkpoint
    _with_network(path, config)
    first = tmp_path / "first" / "model.pt"
    first.parent.mkdir()
    export_model(path, first)
    POSTFILTER.save(
        tmp_path / "postfilter.pt", MelPostfilter(N_MELS, channels=8, dilations=(1,)), config.audio
    )
    again = tmp_path / "again.pt"
    summary = export_model(first, again, postfilter=tmp_path / "postfilter.pt")
    payload = load_checkpoint(again)
    assert MEL2LINEAR.embedded_key in payload and POSTFILTER.embedded_key in payload
    assert summary["mel2linear"] == first and summary["postfilter"] == tmp_path / "postfilter.pt"
    for name, kwargs, kept in (
        ("third.pt", {}, {MEL2LINEAR.embedded_key, POSTFILTER.embedded_key}),
        ("bare.pt", {"postfilter": False}, {MEL2LINEAR.embedded_key}),
        ("nonet.pt", {"mel2linear": False}, {POSTFILTER.embedded_key}),
    ):
        export_model(again, tmp_path / name, **kwargs)
        assert (
            set(load_checkpoint(tmp_path / name)) & {MEL2LINEAR.embedded_key, POSTFILTER.embedded_key} == kept
        ), name
