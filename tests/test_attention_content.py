"""The attention model over content (model.encoder_input content or both): its encoder reads what the
run's frozen phone recognizer hears of the source and the source's pitch (and its log-mels); with
model.self_steps it first learns to say the target's own recordings back."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import soundfile as sf
import torch

from tests.helpers import (
    teacher_forced_training_pairs,
    tensorboard_scalars,
    tiny_config,
    tiny_training_config,
    with_recognizer_phones,
)
from vc import Converter
from vc.artifacts.checkpoint import load_checkpoint
from vc.artifacts.companion import read_network_payload
from vc.cli import main
from vc.config import Config, InferenceConfig
from vc.errors import CheckpointError, ConfigError
from vc.kinds import build_model, get_kind
from vc.model.content import ContentSeq2SeqVC
from vc.model.seq2seq import Seq2SeqVC
from vc.pairs import read_pair_list
from vc.training.converts import ConvertsRule
from vc.training.data import Batch
from vc.training.durations import extract_durations
from vc.training.phonetic import MARKER
from vc.training.selection import FreeRunning
from vc.training.trainer import ModelJob, model_loop, train

KIND = get_kind("attention")


@pytest.mark.parametrize("encoder_input, width", [("content", 256 + 2), ("both", 256 + 2 + 8)])
def test_the_encoder_reads_content_pitch_and_for_both_the_mels(encoder_input, width):
    torch.manual_seed(0)
    model = build_model(8, tiny_config(encoder_input=encoder_input)).eval()
    assert isinstance(model, ContentSeq2SeqVC)
    src, lens, pitch = torch.randn(2, 9, 8), torch.tensor([9, 5]), torch.randn(2, 9, 2)
    inputs = model.inputs(src, lens, pitch)
    assert inputs.shape == (2, 9, width)
    torch.testing.assert_close(inputs[:, :, 256:258], pitch)
    if encoder_input == "both":
        torch.testing.assert_close(inputs[:, :, 258:], src)
    # a padded item reads and converts as it does alone
    torch.testing.assert_close(inputs[1, :5], model.inputs(src[1:, :5], lens[1:], pitch[1:, :5])[0])
    torch.manual_seed(1)
    out = model.inference(src, lens, InferenceConfig(prenet_dropout=0.0, max_ratio=2.0), pitch=pitch)
    torch.manual_seed(1)
    alone = model.inference(
        src[1:, :5], lens[1:], InferenceConfig(prenet_dropout=0.0, max_ratio=2.0), pitch=pitch[1:, :5]
    )
    assert out.after.shape[2] == 8 and out.alignments.shape[2] == out.enc_lens.max()
    assert int(out.lens[1]) == int(alone.lens[0])
    torch.testing.assert_close(
        out.after[1, : int(out.lens[1])], alone.after[0, : int(alone.lens[0])], rtol=1e-4, atol=1e-5
    )


def test_over_mels_it_is_the_attention_model_of_old():
    """model.encoder_input mels (the default) builds Seq2SeqVC itself: old checkpoints load as they were."""
    model = build_model(8, tiny_config())
    assert type(model) is Seq2SeqVC and not hasattr(model, "recognizer")
    assert not KIND.needs_recognizer(tiny_config()) and KIND.needs_pitch(tiny_config(encoder_input="both"))


def test_the_recognizer_stays_frozen_and_the_loss_reads_the_source_then_self_reconstruction():
    """Before model.self_steps the loss reads the target's own recording (garbage in the source changes
    nothing), from then on the source's; the recognizer never learns."""
    torch.manual_seed(0)
    config = Config(model=tiny_config(encoder_input="content", self_steps=3))
    model = build_model(8, config.model).train()
    assert not model.recognizer.training
    tgt, lens, tgt_pitch = torch.randn(2, 6, 8), torch.tensor([6, 4]), torch.randn(2, 6, 2)

    def loss(src, src_pitch, step):
        torch.manual_seed(5)  # the prenet's dropout
        batch = Batch(
            ["a", "b"], src, torch.tensor([5, 5]), tgt, lens, src_pitch=src_pitch, tgt_pitch=tgt_pitch
        )
        return KIND.losses(model, batch, config, step).total

    sane = (torch.randn(2, 5, 8), torch.randn(2, 5, 2))
    nan = (torch.full((2, 5, 8), float("nan")), torch.full((2, 5, 2), float("nan")))
    assert torch.isfinite(loss(*sane, 2)) and torch.equal(loss(*sane, 2), loss(*nan, 2))
    assert torch.isfinite(loss(*sane, 3)) and not torch.isfinite(loss(*nan, 3))
    loss(*sane, 3).backward()
    assert all(p.grad is None for p in model.recognizer.parameters())
    assert model.encoder.prenet.layers[0].weight.grad is not None


def test_it_converts_only_after_its_self_reconstruction_steps():
    rule = ConvertsRule(0.75, 0.2, first_step=200)
    assert not rule.update(100, FreeRunning(8.0, 0.9)) and not rule.update(200, FreeRunning(8.0, 0.9))
    assert rule.update(300, FreeRunning(8.0, 0.9)) and rule.converts_at == 300


@pytest.fixture(scope="module", params=["content", "both"])
def trained(tmp_path_factory, request):
    """(config, experiment): a tiny attention model over content trained by vc train, with a
    self-reconstruction step first."""
    tmp = tmp_path_factory.mktemp("content")
    config = tiny_training_config(tmp)
    config.model = tiny_config(encoder_input=request.param, self_steps=1)
    with_recognizer_phones(config, tmp)
    exp = tmp / "exp"
    train(config, exp, progress=False)
    return config, exp


def test_it_trains_converts_alone_and_saves_its_alignment(trained, tmp_path):
    config, exp = trained
    best = exp / "checkpoints" / "best.pt"
    payload = load_checkpoint(best)
    recognizer = read_network_payload(exp / "phone_classifier.pt", MARKER, "phone classifier")["model"]
    for name, weight in recognizer.items():
        assert torch.equal(payload["model"][f"recognizer.{name}"], weight)
    (exp / "phone_classifier.pt").rename(tmp_path / "away.pt")  # conversion needs only the checkpoint
    try:
        first = str(read_pair_list(config.data.train_list)[0].source)
        result = Converter.from_checkpoint(best, mel2linear=False).convert_file(first)
        rows = -(-result.mel.shape[0] // config.model.reduction_factor)
        assert result.alignment.shape[0] == rows and np.isfinite(result.wave).all()
        out = tmp_path / "out.wav"
        image = tmp_path / "alignment.png"
        args = ["convert", "--checkpoint", str(best), "--save-alignment", str(image), first, str(out)]
        assert main(args) == 0
        assert np.isfinite(sf.read(out)[0]).all() and image.read_bytes().startswith(b"\x89PNG")
    finally:
        (tmp_path / "away.pt").rename(exp / "phone_classifier.pt")
    scalars = tensorboard_scalars(exp / "tensorboard")
    assert {"valid/align/focus_rate", "valid/align/diagonal"} <= set(scalars)


def test_its_batches_carry_both_sides_content_read_once(trained, tmp_path):
    config, _ = trained
    job = ModelJob(config, tmp_path / "exp", progress=False)
    job.start(None)
    batch = job.prepare(next(iter(job._loader(0))))
    torch.testing.assert_close(
        batch.src_content, job.model.content(batch.src, batch.src_lens), rtol=1e-5, atol=1e-6
    )
    torch.testing.assert_close(
        batch.tgt_content, job.model.content(batch.tgt, batch.tgt_lens), rtol=1e-5, atol=1e-6
    )
    torch.manual_seed(3)
    cached = KIND.losses(job.model, batch, config, step=5)
    torch.manual_seed(3)
    read = KIND.losses(job.model, dataclasses.replace(batch, src_content=None), config, step=5)
    torch.testing.assert_close(cached.total, read.total)
    augmented = ModelJob(
        config.with_overrides(["augment.probability=1", "augment.freq_mask_width=2"]),
        tmp_path / "aug",
        progress=False,
    )
    augmented.start(None)
    assert augmented.prepare(next(iter(augmented._loader(0)))).src_content is None


def test_its_companions_learn_from_its_teacher_forced_mels(trained):
    config, exp = trained
    outputs, targets, _ = teacher_forced_training_pairs(config, exp / "checkpoints" / "best.pt")
    assert [len(mel) for mel, _ in outputs] == [len(target) for target in targets]
    assert all(
        torch.isfinite(mel).all() and read is not None and read.shape[1] == config.audio.n_mels
        for mel, read in outputs
    )


def test_it_needs_phones_and_a_known_input(trained, tmp_path):
    config, _ = trained
    no_phones = dataclasses.replace(config, data=dataclasses.replace(config.data, phones=""))
    with pytest.raises(ConfigError, match="model.encoder_input .* needs data.phones"):
        model_loop(no_phones, tmp_path / "a", progress=False)
    with pytest.raises(ConfigError, match="model.encoder_input must be one of mels, content, both"):
        model_loop(config.with_overrides(["model.encoder_input=ppg"]), tmp_path / "b", progress=False)
    with pytest.raises(ConfigError, match="model.self_steps must be 0 or more"):
        model_loop(config.with_overrides(["model.self_steps=-1"]), tmp_path / "c", progress=False)
    with pytest.raises(
        ConfigError, match="model.self_steps is a setting of model.kind attention, not of rec"
    ):
        config.with_overrides(["model.kind=recognition_synthesis", "model.self_steps=5"])


def test_durations_come_from_an_attention_model_over_mels(trained, tmp_path):
    config, exp = trained
    with pytest.raises(
        CheckpointError, match=f"attention model over {config.model.encoder_input}; durations"
    ):
        extract_durations(
            exp / "checkpoints" / "best.pt", [config.data.train_list], tmp_path, tmp_path / "d.pt"
        )
