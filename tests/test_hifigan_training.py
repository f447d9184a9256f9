"""Fine-tuning a HiFi-GAN generator: the discriminators, the losses, HiFi-GAN's mel, the examples and the job."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from tests.conftest import arctic_file
from tests.test_vocoders import TINY, TINY_SIGNAL, hifigan_mel_of, tiny_generator, weights_installed
from vc.artifacts.hifigan import V1_SIGNAL, HifiganSignal, load_generator, save_generator
from vc.cli import main
from vc.errors import DataError, OutputExistsError
from vc.model.hifigan import HifiganGenerator
from vc.model.hifigan_discriminator import (
    MultiPeriodDiscriminator,
    MultiScaleDiscriminator,
    discriminator_loss,
    feature_loss,
    generator_loss,
)
from vc.training.hifigan import (
    HifiganLogMel,
    HifiganTrainOptions,
    read_examples,
    train_hifigan,
    with_weight_norm,
)

SMALL = dict(batch_size=2, segment_frames=8, valid_files=1, discriminator_width=1 / 16, eval_every=2)


@pytest.mark.parametrize("length", [999, 1000, 1001])
def test_the_discriminators_score_every_sub_discriminator_and_return_its_feature_maps(length):
    wave = torch.randn(2, 1, length)
    scores, features = MultiPeriodDiscriminator(width=1 / 16)(wave)
    assert len(scores) == len(features) == 5 and all(s.shape[0] == 2 for s in scores)
    assert all(len(maps) == 6 for maps in features)  # five convolutions and the output
    scores, features = MultiScaleDiscriminator(width=1 / 16)(wave)
    assert len(scores) == 3 and [len(maps) for maps in features] == [8, 8, 8]
    assert scores[0].shape[1] > scores[1].shape[1] > scores[2].shape[1]  # each scale pooled by 2 more


def test_full_width_discriminators_have_the_papers_sizes():
    count = lambda net: sum(p.numel() for p in net.parameters())  # noqa: E731
    assert round(count(MultiPeriodDiscriminator()) / 1e6, 1) == 41.1
    assert round(count(MultiScaleDiscriminator()) / 1e6, 1) == 29.6


def test_the_least_squares_losses_vanish_at_their_targets():
    ones, zeros = [torch.ones(2, 5)], [torch.zeros(2, 5)]
    assert float(discriminator_loss(ones, zeros)) == 0 and float(discriminator_loss(zeros, ones)) == 2
    assert float(generator_loss(ones)) == 0 and float(generator_loss(zeros)) == 1
    maps = [[torch.ones(2, 3), torch.zeros(2, 4)]]
    assert float(feature_loss(maps, maps)) == 0
    assert float(feature_loss(maps, [[torch.zeros(2, 3), torch.zeros(2, 4)]])) == 1


def test_hifigans_mel_has_one_frame_per_hop_and_reads_the_band_it_is_given():
    signal = dataclasses.replace(TINY_SIGNAL, n_fft=512, hop_length=128, win_length=512)
    t = torch.arange(40 * signal.hop_length) / signal.sample_rate
    low, high = (torch.sin(2 * torch.pi * f * t)[None] for f in (1000.0, 10000.0))
    narrow, whole = HifiganLogMel(signal), HifiganLogMel(signal, fmax=signal.sample_rate / 2)
    assert narrow(low).shape == (1, 40, signal.n_mels)
    # 10 kHz lies above the input mel's 8 kHz: there it is silence; the loss's mel hears it
    assert float(narrow(high).max()) < float(narrow(low).max()) - 3
    assert float(whole(high).max()) > float(narrow(high).max()) + 3


def test_hifigans_mel_is_jik876s():
    """The input mel of a natural wave is what the test suite's reference (jik876's mel_spectrogram,
    librosa's filterbank) computes."""
    signal = HifiganSignal.from_json(V1_SIGNAL)
    t = np.arange(22050) / 22050
    wave = sum(0.1 / k * np.sin(2 * np.pi * 180 * k * t) for k in range(1, 20)).astype(np.float32)
    ours = HifiganLogMel(signal)(torch.from_numpy(wave)[None])[0]
    torch.testing.assert_close(ours, hifigan_mel_of(wave).float(), atol=1e-3, rtol=0)


def test_weight_normalisation_changes_nothing_and_folds_back_on_saving(tmp_path):
    generator = tiny_generator()
    mel = torch.randn(1, 80, 12)
    before = generator(mel)
    trained = with_weight_norm(tiny_generator())
    assert any("parametrizations" in key for key in trained.state_dict())
    torch.testing.assert_close(trained(mel), before)
    save_generator(tmp_path / "g.pth", trained, TINY_SIGNAL, {"steps": 0})
    loaded, signal = load_generator(tmp_path / "g.pth")
    assert signal == TINY_SIGNAL and loaded.hparams == generator.hparams
    torch.testing.assert_close(loaded(mel), before)


def test_a_generator_is_not_saved_beside_another_generators_settings(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"sampling_rate": 16000}))
    with pytest.raises(OutputExistsError, match="another generator"):
        save_generator(tmp_path / "g.pth", tiny_generator(), TINY_SIGNAL, {})
    assert not (tmp_path / "g.pth").exists()


def write_example(path, seconds=0.4, rate=16000, mel_frames=None, bands=80, seed=0):
    rng = np.random.default_rng(seed)
    wave = (0.3 * np.sin(2 * np.pi * 220 * np.arange(int(seconds * rate)) / rate) + 0.01 * rng.standard_normal(
        int(seconds * rate)
    )).astype(np.float32)  # fmt: skip
    entries = {"wave": np.round(wave * 32767).astype(np.int16), "sample_rate": np.int32(rate)}
    if mel_frames is not None:
        entries["mel"] = rng.standard_normal((mel_frames, bands)).astype(np.float16)
    np.savez_compressed(path, **entries)


def test_examples_are_resampled_to_the_generator_and_cut_to_their_mels_frames(tmp_path):
    write_example(tmp_path / "a.npz")
    write_example(tmp_path / "b.npz", mel_frames=1200)
    (natural, none), (taught, mel) = read_examples(tmp_path, TINY_SIGNAL)
    assert none is None and len(natural) % TINY_SIGNAL.hop_length == 0
    assert abs(len(natural) - 0.4 * 22050) < TINY_SIGNAL.hop_length  # 16 kHz -> 22.05 kHz
    assert mel.shape == (1200, 80) and len(taught) == 1200 * TINY_SIGNAL.hop_length  # padded with silence
    assert float(taught[-100:].abs().max()) == 0


@pytest.mark.parametrize("case", ["empty", "bands", "corrupt"])
def test_bad_examples_are_one_data_error(tmp_path, case):
    if case == "bands":
        write_example(tmp_path / "a.npz", mel_frames=10, bands=40)
    elif case == "corrupt":
        (tmp_path / "a.npz").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(DataError):
        read_examples(tmp_path, TINY_SIGNAL)


@pytest.fixture()
def tiny_start(tmp_path):
    """A tiny generator saved as a fine-tuning start (its config.json beside it)."""
    path = tmp_path / "start" / "g.pth"
    path.parent.mkdir()
    save_generator(path, tiny_generator(), TINY_SIGNAL, {})
    return path


def test_fine_tuning_trains_through_the_loop_and_saves_a_generator_that_loads(tmp_path, tiny_start):
    examples = tmp_path / "examples"
    examples.mkdir()
    for k in range(3):
        write_example(examples / f"u{k}.npz", seed=k)
    write_example(examples / "u3.npz", mel_frames=1200, seed=3)  # a taught one beside natural ones
    out = tmp_path / "tuned" / "g.pth"
    options = HifiganTrainOptions(max_steps=4, discriminator_warmup=1, **SMALL)
    info = train_hifigan(examples, out, options, start=tiny_start, device="cpu", progress=False)
    assert info["steps"] == 4 and info["examples"] == 3 and info["valid_examples"] == 1
    assert info["valid_mel_l1"] <= info["valid_mel_l1_before"]  # the best state is kept, the start included
    generator, signal = load_generator(out)
    assert signal == TINY_SIGNAL and generator.hparams == HifiganGenerator(**TINY).hparams
    assert not (tmp_path / "tuned" / "g_training").exists()  # the training state goes once saved
    assert (tmp_path / "tuned" / "tensorboard" / "hifigan").is_dir()


def test_the_generator_is_held_while_the_discriminators_warm_up(tmp_path, tiny_start, monkeypatch):
    examples = tmp_path / "examples"
    examples.mkdir()
    for k in range(3):
        write_example(examples / f"u{k}.npz", seed=k)
    stepped = []
    original = torch.optim.AdamW.step

    def step(self, *args, **kwargs):
        stepped.append(sum(p.numel() for group in self.param_groups for p in group["params"]))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", step)
    options = HifiganTrainOptions(max_steps=3, discriminator_warmup=2, **SMALL)
    train_hifigan(examples, tmp_path / "g.pth", options, start=tiny_start, device="cpu", progress=False)
    generator_size = sum(p.numel() for p in with_weight_norm(tiny_generator()).parameters())
    assert stepped.count(generator_size) == 1 and len(stepped) == 4  # discriminators 3 times, generator once


def test_fine_tuning_needs_a_budget_and_refuses_an_earlier_runs_state(tmp_path, tiny_start):
    from vc.errors import CheckpointError, ConfigError

    with pytest.raises(ConfigError, match="time limit"):
        train_hifigan(tmp_path, tmp_path / "g.pth", HifiganTrainOptions(), start=tiny_start, device="cpu")
    state = tmp_path / "g_training"
    state.mkdir()
    (state / "step0000005.pt").write_bytes(b"x")
    with pytest.raises(CheckpointError, match="earlier run"):
        train_hifigan(tmp_path, tmp_path / "g.pth", HifiganTrainOptions(max_steps=1), start=tiny_start)


def test_natural_examples_need_no_model(tmp_path):
    pairs = tmp_path / "pairs.tsv"

    target = arctic_file("slt", "arctic_a0001")
    pairs.write_text(f"a0001\t{arctic_file('bdl', 'arctic_a0001')}\t{target}\n")
    assert (
        main(["hifigan-examples", str(pairs), "--natural", "--out", str(tmp_path / "ex"), "--no-progress"])
        == 0
    )
    with np.load(tmp_path / "ex" / "a0001.npz") as data:
        assert set(data.files) == {"wave", "sample_rate"} and int(data["sample_rate"]) == 16000
    # again into the same folder: refused, nothing replaced
    assert main(["hifigan-examples", str(pairs), "--natural", "--out", str(tmp_path / "ex")]) == 1


def test_examples_of_the_models_mels_fit_the_generators_frames(tmp_path, checkpoint):

    weights_installed()

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"a0002\t{arctic_file('bdl', 'arctic_a0002')}\t{arctic_file('slt', 'arctic_a0002')}\n")
    args = ["hifigan-examples", str(pairs), "--checkpoint", str(checkpoint), "--out", str(tmp_path / "ex")]
    assert main([*args, "--no-progress"]) == 0
    ((wave, mel),) = read_examples(tmp_path / "ex", load_generator()[1])
    assert mel.shape[1] == 80 and len(wave) == len(mel) * 256
    seconds = len(wave) / 22050
    with np.load(tmp_path / "ex" / "a0002.npz") as data:
        assert abs(seconds - len(data["wave"]) / 16000) < 0.05


def test_examples_need_either_a_model_or_natural(tmp_path, capsys):
    assert main(["hifigan-examples", str(tmp_path / "p.tsv"), "--out", str(tmp_path / "ex")]) == 1
    assert "--checkpoint" in capsys.readouterr().err
