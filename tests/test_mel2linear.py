"""The mel -> linear magnitude network: shapes, masking, fitting, files, vocoder and CLI."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import soundfile as sf
import torch
import yaml

from tests.helpers import speech_like, tensorboard_scalars, write_pair_list
from vc import Converter
from vc.artifacts.companion import MEL2LINEAR
from vc.cli import main
from vc.config import Config
from vc.errors import CheckpointError
from vc.model.mel2linear import Mel2Linear, fit_linear
from vc.settings.audio import AudioConfig
from vc.settings.vocoders import GriffinLimConfig
from vc.training.mel2linear import masked_l1, spectral_convergence_loss
from vc.vocoders import build_vocoder
from vc.vocoders.griffin_lim import GriffinLimVocoder

N_MELS, N_BINS = 6, 9
SMALL = AudioConfig(sample_rate=8000, n_fft=256, win_length=256, hop_length=64, n_mels=N_MELS, fmax=4000.0)


def tiny() -> Mel2Linear:
    torch.manual_seed(0)
    net = Mel2Linear(N_MELS, N_BINS, channels=8, layers=2, kernel=3)
    for p in net.out.parameters():  # zero-initialised: give the body a path to the output
        torch.nn.init.normal_(p, std=0.1)
    return net


def test_shapes_and_padding_is_zero():
    net = tiny().eval()
    out = net(torch.randn(2, 7, N_MELS), torch.tensor([7, 4]))
    assert out.shape == (2, 7, N_BINS)
    assert torch.all(out[1, 4:] == 0)


def test_padding_does_not_change_valid_frames():
    net = tiny().eval()
    short = torch.randn(1, 5, N_MELS)
    batch = torch.cat([torch.randn(1, 9, N_MELS), torch.cat([short, 100 * torch.randn(1, 4, N_MELS)], 1)])
    together = net(batch, torch.tensor([9, 5]))
    alone = net(short)
    torch.testing.assert_close(together[1, :5], alone[0], atol=1e-5, rtol=1e-5)


def test_every_parameter_gets_a_gradient():
    net = tiny().train()
    lens = torch.tensor([7, 5])
    loss = masked_l1(net(torch.randn(2, 7, N_MELS), lens), torch.randn(2, 7, N_BINS), lens)
    loss.backward()
    for name, param in net.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_masked_l1_ignores_padding():
    pred, target = torch.zeros(2, 4, 3), torch.zeros(2, 4, 3)
    target[1, 2:] = 50.0  # padding of item 1
    target[0] += 1.0
    assert masked_l1(pred, target, torch.tensor([4, 2])).item() == pytest.approx(4 / 6)


def test_spectral_convergence_loss_is_relative_and_ignores_padding():
    target = torch.randn(2, 5, 4)
    pred = target.clone()
    pred[1, 3:] += 20.0  # padding of item 1
    lens = torch.tensor([5, 3])
    assert spectral_convergence_loss(pred, target, lens).item() == pytest.approx(0.0, abs=1e-6)
    louder = target + torch.log10(torch.tensor(2.0))  # twice the magnitude: error = 1 x the reference
    assert spectral_convergence_loss(louder, target, lens).item() == pytest.approx(1.0, rel=1e-4)


def test_fit_linear_recovers_a_linear_map():
    torch.manual_seed(0)
    mels = torch.randn(500, N_MELS) * 2 - 3
    weight, bias = torch.randn(N_BINS, N_MELS), torch.randn(N_BINS)
    mags = mels @ weight.T + bias
    net = Mel2Linear(N_MELS, N_BINS, channels=8, layers=1, kernel=3)
    fit_linear(net, mels, mags, ridge=1e-9)
    with torch.no_grad():
        torch.testing.assert_close(net(mels[None])[0], mags, atol=1e-3, rtol=1e-3)


def test_save_load_round_trip_and_refusals(tmp_path):
    net = tiny().eval()
    path = tmp_path / "net.pt"
    audio = dataclasses.replace(SMALL, n_fft=16, win_length=16, hop_length=4)
    MEL2LINEAR.save(path, net, audio, {"steps": 3})
    loaded = MEL2LINEAR.load(audio, None, path)
    x = torch.randn(1, 6, N_MELS)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), net(x))
    with pytest.raises(CheckpointError, match="audio.sample_rate=8000"):
        MEL2LINEAR.load(AudioConfig(n_mels=N_MELS), None, path)
    (tmp_path / "bad.pt").write_bytes(b"not a network")
    with pytest.raises(CheckpointError, match="not a readable mel2linear network"):
        MEL2LINEAR.load(audio, None, tmp_path / "bad.pt")
    torch.save({"format": "something else"}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="no 'vc-mel2linear' marker"):
        MEL2LINEAR.load(audio, None, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not found"):
        MEL2LINEAR.load(audio, None, tmp_path / "missing.pt")


def test_a_file_that_names_the_only_body_still_loads(tmp_path):
    """Files from before the body's name was dropped record architecture "resconv"."""
    path = tmp_path / "old.pt"
    MEL2LINEAR.save(path, tiny(), SMALL)
    payload = torch.load(path, weights_only=True)
    payload["hparams"]["architecture"] = "resconv"
    torch.save(payload, path)
    assert isinstance(MEL2LINEAR.load(SMALL, None, path), Mel2Linear)
    payload["hparams"]["architecture"] = "cbhg"
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match="unknown architecture 'cbhg'"):
        MEL2LINEAR.load(SMALL, None, path)


def test_vocoder_uses_the_network_magnitude():
    audio = dataclasses.replace(SMALL, n_fft=16, win_length=16, hop_length=4, n_mels=N_MELS, fmin=0.0)
    net = tiny().eval()
    vocoder = GriffinLimVocoder(audio, GriffinLimConfig(iters=2), net)
    logmel = torch.randn(2, 10, N_MELS) - 2
    lens = torch.tensor([10, 6])
    waves, wave_lens = vocoder(logmel, lens, generator=torch.Generator().manual_seed(0))
    assert waves.shape == (2, 40) and wave_lens.tolist() == [40, 24]
    assert torch.isfinite(waves).all() and torch.all(waves[1, 24:] == 0)
    plain, _ = GriffinLimVocoder(audio, GriffinLimConfig(iters=2))(
        logmel, lens, generator=torch.Generator().manual_seed(0)
    )
    assert not torch.allclose(waves, plain)


def test_converter_picks_up_the_companion_file(model_checkpoint, caplog):
    path, config = model_checkpoint
    assert Converter.from_checkpoint(path).vocoder.mel2linear is None
    assert MEL2LINEAR.find(path) is None
    net = Mel2Linear(N_MELS, config.audio.n_fft // 2 + 1, channels=8, layers=1, kernel=3)
    MEL2LINEAR.save(path.parent / MEL2LINEAR.file_name, net, config.audio)
    with caplog.at_level("DEBUG", logger="vc.artifacts.companion"):
        converter = Converter.from_checkpoint(path)
    assert isinstance(converter.vocoder.mel2linear, Mel2Linear)
    assert MEL2LINEAR.file_name in caplog.text
    wave, sample_rate = converter.convert(speech_like(0.5), 16000)
    assert sample_rate == 16000 and len(wave) > 0 and np.isfinite(wave).all()
    assert Converter.from_checkpoint(path, mel2linear=False).vocoder.mel2linear is None
    assert build_vocoder(config, path).mel2linear is not None
    assert build_vocoder(config, path, mel2linear=False).mel2linear is None


def test_convert_cli_with_a_bad_network_file_is_one_line(model_checkpoint, tmp_path, capsys):
    path, _ = model_checkpoint
    sf.write(tmp_path / "in.wav", speech_like(0.5), 16000)
    (tmp_path / "bad.pt").write_bytes(b"junk")
    code = main(
        ["convert", "--no-progress", "--checkpoint", str(path), "--mel2linear", str(tmp_path / "bad.pt")]
        + [str(tmp_path / "in.wav"), str(tmp_path / "out.wav")]
    )
    err = capsys.readouterr().err
    assert code == 1 and "not a readable mel2linear network" in err and len(err.strip().splitlines()) == 1


def test_vocoder_train_cli_on_synthetic_audio(tmp_path, capsys):
    folder = tmp_path / "wavs"
    folder.mkdir()
    for k in range(4):
        sf.write(folder / f"utt{k}.wav", speech_like(0.6, sr=8000, seed=k), 8000)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"audio": dataclasses.asdict(SMALL)}))
    out = tmp_path / "exp" / "mel2linear.pt"
    argv = ["mel2linear-train", str(folder), "--out", str(out), "--config", str(config), "--no-progress"]
    assert main([*argv, "--max-steps", "3", "--batch-size", "2", "--valid-files", "1"]) == 0
    assert "mel -> linear network" in capsys.readouterr().out
    net = MEL2LINEAR.load(SMALL, None, out)
    assert net.hparams["n_bins"] == SMALL.n_fft // 2 + 1
    # its losses in TensorBoard, beside the model's logs (the one loop's tags): the validation before
    # training and at the end, the training scalars at step 1
    scalars = tensorboard_scalars(tmp_path / "exp" / "tensorboard" / "mel2linear")
    assert scalars["valid/db"] == [0, 3]
    assert scalars["train/loss/total"] == scalars["train/opt/lr"] == [1]


def test_vocoder_train_cli_bad_input_is_one_line(tmp_path, capsys):
    code = main(
        ["mel2linear-train", str(tmp_path / "nothing"), "--out", str(tmp_path / "x.pt"), "--no-progress"]
    )
    err = capsys.readouterr().err
    assert code == 1 and "input not found" in err and len(err.strip().splitlines()) == 1


def test_mel2linear_train_learns_from_predicted_mels_too(model_checkpoint, tmp_path, capsys):
    path, config = model_checkpoint
    pairs = write_pair_list(tmp_path, 3)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump({"audio": dataclasses.asdict(config.audio)}))
    first, tuned = tmp_path / "first.pt", tmp_path / "tuned.pt"
    common = ["--config", str(config_file), "--no-progress", "--max-steps", "2", "--batch-size", "2"]
    assert main(["mel2linear-train", str(pairs), "--out", str(first), *common]) == 0
    argv = ["mel2linear-train", str(pairs), "--out", str(tuned), "--checkpoint", str(path)]
    assert main([*argv, *common]) == 0
    assert "mel -> linear network" in capsys.readouterr().out
    assert torch.load(tuned, weights_only=True)["info"]["predicted_mels"] is True
    assert main([*argv, *common]) == 1  # tuned.pt exists now
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tuned) in err and "--overwrite" in err
    assert main([*argv, *common, "--overwrite"]) == 0
    capsys.readouterr()
    folder_argv = ["mel2linear-train", str(tmp_path), "--out", str(tuned), "--checkpoint", str(path), *common]
    folder_argv.append("--overwrite")
    assert main(folder_argv) == 1
    assert "needs pair lists" in capsys.readouterr().err


def test_mel2linear_train_without_config_reads_the_models_own(model_checkpoint, tmp_path, capsys):
    """With --checkpoint and no --config the model's settings (its audio, its mel2linear budget) are read
    from the checkpoint, as vc postfilter-train reads them."""
    path, config = model_checkpoint
    assert config.audio != Config().audio  # the tiny model's mels: the defaults would not fit it
    stored = torch.load(path, weights_only=False)
    stored["config"]["mel2linear"] = {**stored["config"].get("mel2linear", {}), "max_steps": 3}
    torch.save(stored, path)
    pairs = write_pair_list(tmp_path, 3)
    out = tmp_path / "m2l.pt"
    argv = ["mel2linear-train", str(pairs), "--out", str(out), "--checkpoint", str(path), "--no-progress"]
    assert main([*argv, "--batch-size", "2"]) == 0
    assert "(3 steps," in capsys.readouterr().out
    assert main([*argv, "--batch-size", "2", "--max-steps", "2", "--overwrite"]) == 0  # a flag still wins
    assert "(2 steps," in capsys.readouterr().out


def test_an_interrupted_training_resumes_to_the_same_network_and_keeps_no_state_once_saved(
    tmp_path, monkeypatch
):
    """The one loop's checkpoints and --resume, for a network saved once at the end (OUT_training/)."""
    from vc.settings.training import Mel2LinearConfig
    from vc.training.loop import Loop
    from vc.training.mel2linear import train_mel2linear

    folder = tmp_path / "wavs"
    folder.mkdir()
    for k in range(4):
        sf.write(folder / f"utt{k}.wav", speech_like(0.6, sr=8000, seed=k), 8000)
    options = Mel2LinearConfig(
        channels=8,
        layers=1,
        batch_size=2,
        crop_frames=16,
        max_steps=6,
        max_minutes=0,
        valid_files=1,
        valid_every=3,
    )
    straight = tmp_path / "straight" / "mel2linear.pt"
    train_mel2linear([folder], SMALL, straight, options, progress=False)
    assert not (tmp_path / "straight" / "mel2linear_training").exists()  # saved: no state left

    save = Loop._save

    def crash_after_step_3(loop, improved):
        save(loop, improved)
        if loop.step == 3:
            raise KeyboardInterrupt

    out = tmp_path / "resumed" / "mel2linear.pt"
    monkeypatch.setattr(Loop, "_save", crash_after_step_3)
    with pytest.raises(KeyboardInterrupt):
        train_mel2linear([folder], SMALL, out, options, progress=False)
    monkeypatch.setattr(Loop, "_save", save)
    assert not out.exists() and (tmp_path / "resumed" / "mel2linear_training" / "step0000003.pt").is_file()
    with pytest.raises(CheckpointError, match="--resume continues it"):  # a new run must not write over it
        train_mel2linear([folder], SMALL, out, options, progress=False)
    info = train_mel2linear([folder], SMALL, out, options, progress=False, resume=True)
    assert info["steps"] == 6
    ours, theirs = MEL2LINEAR.read_payload(out)["model"], MEL2LINEAR.read_payload(straight)["model"]
    assert all(torch.equal(ours[name], theirs[name]) for name in theirs)
    assert not (tmp_path / "resumed" / "mel2linear_training").exists()
