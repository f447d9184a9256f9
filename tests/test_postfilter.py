"""The GAN post-filter: shapes, masking, gradients, save/load, training and its use by vc convert."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import soundfile as sf
import torch

from tests.helpers import TINY_MELS, speech_like, tensorboard_scalars, write_pair_list
from vc import Converter
from vc.artifacts.companion import POSTFILTER, network_from_payload
from vc.artifacts.export import export_model
from vc.cli import main
from vc.config import Config
from vc.errors import CheckpointError, ConfigError
from vc.model.postfilter import MelDiscriminator, MelPostfilter
from vc.settings.audio import AudioConfig
from vc.settings.training import PostfilterConfig
from vc.training.postfilter import temporal_detail, train_postfilter

N_MELS = TINY_MELS  # the model_checkpoint fixture's


def trained_like(seed: int = 0) -> MelPostfilter:
    """A tiny post-filter whose output layer is no longer zero, as after training."""
    torch.manual_seed(seed)
    net = MelPostfilter(N_MELS, channels=8, dilations=(1, 2), kernel=3)
    torch.nn.init.normal_(net.out.weight, std=0.3)
    net.in_mean.fill_(-2.0)
    net.in_std.fill_(0.5)
    return net.eval()


def test_starts_as_the_identity():
    net = MelPostfilter(N_MELS, channels=8, dilations=(1,), kernel=3)
    logmel = torch.randn(2, 11, N_MELS)
    torch.testing.assert_close(net(logmel, torch.tensor([11, 6])), logmel)


def test_shapes_and_padding_frames_pass_through():
    net = trained_like()
    logmel = torch.randn(2, 13, N_MELS)
    out = net(logmel, torch.tensor([13, 7]))
    assert out.shape == logmel.shape
    torch.testing.assert_close(out[1, 7:], logmel[1, 7:])
    assert not torch.allclose(out[1, :7], logmel[1, :7])


def test_an_item_in_a_padded_batch_gives_what_it_gives_alone():
    net = trained_like()
    short = torch.randn(1, 7, N_MELS)
    batch = torch.cat([torch.randn(1, 13, N_MELS), torch.cat([short, 50 * torch.randn(1, 6, N_MELS)], 1)])
    together = net(batch, torch.tensor([13, 7]))[1, :7]
    torch.testing.assert_close(together, net(short)[0])


def reading_source(seed: int = 0) -> MelPostfilter:
    """A tiny trained-like post-filter that also reads the source at the output's timing."""
    torch.manual_seed(seed)
    net = MelPostfilter(N_MELS, channels=8, dilations=(1, 2), kernel=3, source_dim=N_MELS)
    torch.nn.init.normal_(net.out.weight, std=0.3)
    return net.eval()


def test_a_source_reading_post_filter_uses_the_source_and_refuses_without_it():
    net = reading_source()
    logmel, source = torch.randn(2, 13, N_MELS), torch.randn(2, 13, N_MELS)
    out = net(logmel, torch.tensor([13, 7]), source)
    assert out.shape == logmel.shape and not torch.allclose(out, net(logmel, None, source.flip(1)))
    torch.testing.assert_close(out[1, 7:], logmel[1, 7:])
    alone = net(logmel[1:, :7], None, source[1:, :7])[0]
    padded_source = torch.cat([source[1:, :7], 50 * torch.randn(1, 6, N_MELS)], 1)
    padded_mel = torch.cat([logmel[1:, :7], 50 * torch.randn(1, 6, N_MELS)], 1)
    torch.testing.assert_close(net(padded_mel, torch.tensor([7]), padded_source)[0, :7], alone)
    with pytest.raises(ValueError, match="needs source frames"):
        net(logmel)
    with pytest.raises(ValueError, match="needs source frames"):
        net(logmel, None, source[:, :5])
    with pytest.raises(ValueError, match="reads no source"):
        trained_like()(logmel, None, source)
    fresh = MelPostfilter(N_MELS, channels=8, dilations=(1,), kernel=3, source_dim=N_MELS)
    torch.testing.assert_close(fresh(logmel, None, source), logmel)  # the identity at first, too


def test_a_post_filter_file_from_before_source_reading_still_loads(tmp_path):
    audio = dataclasses.replace(AudioConfig(), n_mels=N_MELS)
    net, path = trained_like(), tmp_path / "old.pt"
    POSTFILTER.save(path, net, audio)
    payload = POSTFILTER.read_payload(path)
    del payload["hparams"]["source_dim"]  # what files written before it hold
    loaded = network_from_payload(payload, POSTFILTER.build, POSTFILTER.what, path)
    assert loaded.source_dim == 0
    logmel = torch.randn(1, 9, N_MELS)
    torch.testing.assert_close(loaded(logmel), net(logmel))


def test_every_parameter_gets_a_gradient():
    net, critic = trained_like().train(), MelDiscriminator(N_MELS, channels=8)
    out = net(torch.randn(2, 16, N_MELS), torch.tensor([16, 9]))
    scores, features = critic(out)
    assert scores.shape == (2, 4) and len(features) == 4
    (scores.square().mean() + out.square().mean()).backward()
    for name, parameter in [*net.named_parameters(), *critic.named_parameters()]:
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_temporal_detail_falls_with_a_blur_in_time():
    logmel = torch.randn(40, N_MELS)
    blurred = torch.nn.functional.avg_pool1d(logmel.T[None], 5, stride=1, padding=2, count_include_pad=False)[
        0
    ].T
    assert temporal_detail(blurred) < 0.6 * temporal_detail(logmel)


def test_save_load_round_trip_and_refusals(tmp_path):
    audio = dataclasses.replace(AudioConfig(), n_mels=N_MELS)
    net = trained_like()
    path = tmp_path / "postfilter.pt"
    POSTFILTER.save(path, net, audio, {"steps": 3})
    loaded = POSTFILTER.load(audio, None, path)
    logmel = torch.randn(1, 9, N_MELS)
    torch.testing.assert_close(loaded(logmel), net(logmel))
    assert POSTFILTER.read_payload(path)["info"]["steps"] == 3
    with pytest.raises(CheckpointError, match="hop_length"):
        POSTFILTER.load(dataclasses.replace(audio, hop_length=128), None, path)
    (tmp_path / "junk.pt").write_bytes(b"junk")
    with pytest.raises(CheckpointError, match="not a readable post-filter"):
        POSTFILTER.load(audio, None, tmp_path / "junk.pt")
    with pytest.raises(CheckpointError, match="not found"):
        POSTFILTER.load(audio, None, tmp_path / "missing.pt")
    with pytest.raises(CheckpointError, match="not a usable post-filter"):
        network_from_payload(
            {**POSTFILTER.read_payload(path), "hparams": {}}, POSTFILTER.build, POSTFILTER.what, path
        )


def test_converter_applies_the_companion_and_export_embeds_it(model_checkpoint, tmp_path):  # noqa: F811
    path, config = model_checkpoint
    wave = speech_like(0.5)
    plain = Converter.from_checkpoint(path)
    assert plain.postfilter is None
    POSTFILTER.save(path.parent / POSTFILTER.file_name, trained_like(), config.audio)
    filtered = Converter.from_checkpoint(path)
    assert isinstance(filtered.postfilter, MelPostfilter)
    assert Converter.from_checkpoint(path, postfilter=False).postfilter is None
    out_plain, out_filtered = plain.convert(wave, 16000)[0], filtered.convert(wave, 16000)[0]
    assert np.isfinite(out_filtered).all() and not np.allclose(out_plain, out_filtered)
    exported = tmp_path / "model.pt"
    assert export_model(path, exported)["postfilter"] == path.parent / POSTFILTER.file_name
    (path.parent / POSTFILTER.file_name).unlink()
    assert isinstance(Converter.from_checkpoint(exported).postfilter, MelPostfilter)
    assert export_model(path, tmp_path / "bare.pt")["postfilter"] is None
    POSTFILTER.save(path.parent / POSTFILTER.file_name, reading_source(), config.audio)
    reading = Converter.from_checkpoint(path)
    assert reading.postfilter.source_dim == N_MELS
    out_reading = reading.convert(wave, 16000)[0]
    assert np.isfinite(out_reading).all() and not np.allclose(out_plain, out_reading)


def test_convert_cli_bad_postfilter_file_is_one_line(model_checkpoint, tmp_path, capsys):  # noqa: F811
    path, _ = model_checkpoint
    sf.write(tmp_path / "in.wav", speech_like(0.5), 16000)
    (tmp_path / "bad.pt").write_bytes(b"junk")
    argv = ["convert", "--no-progress", "--checkpoint", str(path), "--postfilter", str(tmp_path / "bad.pt")]
    assert main([*argv, str(tmp_path / "in.wav"), str(tmp_path / "out.wav")]) == 1
    err = capsys.readouterr().err
    assert "not a readable post-filter" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out.wav").exists()


def test_postfilter_train_cli_on_the_model_s_own_pairs(model_checkpoint, tmp_path, capsys):  # noqa: F811
    path, _ = model_checkpoint
    pairs = write_pair_list(tmp_path, 3)
    out = tmp_path / "postfilter.pt"
    argv = ["postfilter-train", str(pairs), "--checkpoint", str(path), "--out", str(out), "--no-progress"]
    assert main([*argv, "--max-steps", "3", "--valid-files", "1"]) == 0
    assert "post-filter:" in capsys.readouterr().out
    info = POSTFILTER.read_payload(out)["info"]
    assert info["steps"] == 3 and info["pairs"] == 2 and info["valid_pairs"] == 1
    assert tensorboard_scalars(tmp_path / "tensorboard" / "postfilter")["valid/l1"] == [0, 3]
    options = PostfilterConfig(
        max_steps=3, warmup_steps=1, batch_size=2, crop_frames=8, valid_files=1, channels=8
    )
    info = train_postfilter([pairs], path, out, options, progress=False)  # two adversarial steps
    assert info["steps"] == 3 and info["detail"] != info["detail_before"]
    assert POSTFILTER.read_payload(out)["hparams"]["source_dim"] == N_MELS  # reads the source by default
    assert main([*argv, "--max-steps", "2", "--valid-files", "1"]) == 1  # out exists
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out) in err and "--overwrite" in err
    argv.append("--overwrite")
    assert main([*argv, "--max-steps", "2", "--valid-files", "1"]) == 0
    capsys.readouterr()
    unbounded = ["postfilter-train", str(pairs), "--checkpoint", str(path), "--out", str(tmp_path / "x.pt")]
    no_limit = ["--max-minutes", "0", "--set", "postfilter.max_steps=0", "--no-progress"]
    assert main([*unbounded, *no_limit]) == 1
    assert "needs a time limit" in capsys.readouterr().err and not (tmp_path / "x.pt").exists()
    missing = ["postfilter-train", str(tmp_path / "none.tsv"), "--checkpoint", str(path), "--out", str(out)]
    assert main([*missing, "--no-progress"]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_stored_postfilter_adversarial_true_loads_and_false_is_refused():
    """postfilter.adversarial left the code (L1 alone, docs/ablation.md): the bundled models' configs and
    older checkpoints store true, which is what the post-filter still does; false is an error."""
    stored = Config.from_dict({"postfilter": {"adversarial": True, "channels": 8}}, stored=True)
    assert stored.postfilter.channels == 8 and not hasattr(stored.postfilter, "adversarial")
    with pytest.raises(ConfigError, match="postfilter.adversarial was an experiment and has been removed"):
        Config.from_dict({"postfilter": {"adversarial": False}}, stored=True)


def test_an_interrupted_adversarial_training_resumes_to_the_same_generator(
    model_checkpoint,
    tmp_path,
    monkeypatch,  # noqa: F811
):
    """Both players' weights and optimizers, the crop stream and the RNG come back from OUT_training/."""
    from vc.training.loop import Loop

    path, _ = model_checkpoint
    pairs = write_pair_list(tmp_path, 3)
    options = PostfilterConfig(
        max_steps=4, warmup_steps=1, batch_size=2, crop_frames=8, valid_files=1, channels=8, max_minutes=0
    )
    straight = tmp_path / "straight" / "postfilter.pt"
    train_postfilter([pairs], path, straight, options, progress=False)
    step = Loop.train_step

    def stopped_after_step_2(loop, batch):  # a state saved at step 2, then the run dies
        stats = step(loop, batch)
        if loop.step == 2:
            loop._evaluate_and_keep()
            raise KeyboardInterrupt
        return stats

    out = tmp_path / "resumed" / "postfilter.pt"
    monkeypatch.setattr(Loop, "train_step", stopped_after_step_2)
    with pytest.raises(KeyboardInterrupt):
        train_postfilter([pairs], path, out, options, progress=False)
    monkeypatch.setattr(Loop, "train_step", step)
    assert (tmp_path / "resumed" / "postfilter_training" / "step0000002.pt").is_file()
    info = train_postfilter([pairs], path, out, options, progress=False, resume=True)
    assert info["steps"] == 4
    ours, theirs = POSTFILTER.read_payload(out), POSTFILTER.read_payload(straight)
    assert ours["info"]["valid_l1_before"] == theirs["info"]["valid_l1_before"]
    assert all(torch.equal(ours["model"][name], theirs["model"][name]) for name in theirs["model"])
