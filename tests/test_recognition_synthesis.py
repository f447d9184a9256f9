"""The recognition-synthesis converter: the run's frozen phone recognizer reads content, a synthesizer
learns the target's frames from the target's own recordings; conversion reads the source."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest
import soundfile as sf
import torch

from tests.helpers import (
    save_tiny_checkpoint,
    teacher_forced_training_pairs,
    tiny_config,
    tiny_training_config,
    with_recognizer_phones,
)
from vc import Converter
from vc.artifacts.checkpoint import load_checkpoint
from vc.artifacts.companion import read_network_payload
from vc.audio import read_speech
from vc.audio.pitch import log_f0_stats
from vc.cli import main
from vc.config import Config
from vc.errors import ConfigError
from vc.kinds import get_kind
from vc.masks import random_windows, take_frames
from vc.model.aligned_source import Timing
from vc.model.content import frozen_recognizer, read_content
from vc.model.recognition_synthesis import RecognitionSynthesisVC
from vc.pairs import read_pair_list
from vc.settings.inference import InferenceConfig
from vc.training.data import Batch, feature_cache_dir, load_f0
from vc.training.phonetic import MARKER
from vc.training.trainer import ModelJob, model_loop, train, train_recognizer

SMALL = dict(parallel_decoder_layers=1, parallel_decoder_channels=8, parallel_decoder_kernel=3)


def test_one_output_frame_per_input_frame_and_a_padded_item_computes_as_alone():
    torch.manual_seed(0)
    model = RecognitionSynthesisVC(8, tiny_config("recognition_synthesis", **SMALL)).eval()
    mels, lens = torch.randn(2, 9, 8), torch.tensor([9, 5])
    features = model.content(mels, lens)
    assert features.shape[:2] == (2, 9)
    torch.testing.assert_close(features[1, :5], model.content(mels[1:, :5], lens[1:])[0])
    pitch = torch.randn(2, 9, 2)
    out = model.inference(mels, lens, InferenceConfig(), pitch=pitch)
    assert out.after.shape == (2, 9, 8) and out.lens.tolist() == [9, 5]
    alone = model.inference(mels[1:, :5], lens[1:], InferenceConfig(), pitch=pitch[1:, :5])
    torch.testing.assert_close(out.after[1, :5], alone.after[0], rtol=1e-4, atol=1e-5)


def test_its_attention_decoder_is_gone_and_a_stored_parallel_one_still_loads():
    """model.decoder attention left the code (issue 99, docs/ablation.md): asking for it is a one-line
    error; a stored config (a checkpoint's, the bundled model's) holds decoder parallel and the attention
    decoder's settings beside it, and still loads, without them."""
    with pytest.raises(ConfigError, match=r"^model.decoder was an experiment and has been removed") as error:
        Config.from_dict({"model": {"kind": "recognition_synthesis", "decoder": "attention"}})
    assert "\n" not in str(error.value)
    stored = {"kind": "recognition_synthesis", "decoder": "parallel", "attention_dim": 128, "reduction_factor": 2,
              "stop_pos_weight": 5.0, "until_converts": False, "parallel_decoder_layers": 3}  # fmt: skip
    model = Config.from_dict({"model": stored}, stored=True).model
    assert type(model).__name__ == "RecognitionSynthesisConfig" and model.parallel_decoder_layers == 3
    assert not any(
        hasattr(model, key) for key in ("decoder", "attention_dim", "reduction_factor", "self_steps")
    )


def test_the_recognizer_stays_frozen_and_without_dropout_in_training():
    model = RecognitionSynthesisVC(8, tiny_config("recognition_synthesis", **SMALL)).train()
    assert model.synthesizer.training and not model.recognizer.training
    mels, lens = torch.randn(2, 7, 8), torch.tensor([7, 7])
    first = model.content(mels, lens)
    assert torch.equal(first, model.content(mels, lens))  # no dropout drawn
    model(mels, lens, torch.randn(2, 7, 2)).after.sum().backward()
    assert all(p.grad is None for p in model.recognizer.parameters())
    assert any(p.grad is not None for p in model.synthesizer.parameters())


def test_it_learns_from_the_target_alone():
    """The loss never reads the source's frames or pitch: garbage there changes nothing."""
    torch.manual_seed(0)
    config = Config(model=tiny_config("recognition_synthesis", **SMALL))
    model = RecognitionSynthesisVC(8, config.model).eval()
    tgt, lens, tgt_pitch = torch.randn(2, 6, 8), torch.tensor([6, 4]), torch.randn(2, 6, 2)
    kind = get_kind("recognition_synthesis")
    losses = [
        kind.losses(
            model,
            Batch(["a", "b"], src, torch.tensor([5, 5]), tgt, lens, src_pitch=src_pitch, tgt_pitch=tgt_pitch),
            config,
            step=None,
        ).total
        for src, src_pitch in (
            (torch.randn(2, 5, 8), torch.randn(2, 5, 2)),
            (torch.full((2, 5, 8), float("nan")), torch.full((2, 5, 2), float("nan"))),
        )
    ]
    assert torch.isfinite(losses[0]) and torch.equal(losses[0], losses[1])


def test_it_reads_the_content_of_what_augmentation_made_of_the_target_and_predicts_the_target():
    """With augment.probability, the content comes from Batch.heard (the target's frames augmented, so
    the synthesizer learns to make the target's voice from content of other-sounding voices); the frames
    it must predict stay the target's."""
    torch.manual_seed(0)
    config = Config(model=tiny_config("recognition_synthesis", **SMALL))
    model = RecognitionSynthesisVC(8, config.model).eval()
    tgt, lens, pitch = torch.randn(2, 6, 8), torch.tensor([6, 4]), torch.randn(2, 6, 2)
    heard = torch.randn(2, 6, 8)
    seen = []
    content = model.content
    model.content = lambda mels, lens, window=None: seen.append(mels) or content(mels, lens, window)
    kind = get_kind("recognition_synthesis")

    def loss(**extra):
        return kind.losses(
            model, Batch(["a", "b"], tgt, lens, tgt, lens, tgt_pitch=pitch, **extra), config, None
        )

    plain, augmented = loss(), loss(heard=heard)
    assert seen[0] is tgt and seen[1] is heard
    assert torch.equal(loss(heard=tgt).total, plain.total) and not torch.equal(augmented.total, plain.total)
    assert kind.augments == "target" and get_kind("nonautoregressive").augments == "source"


def test_training_windows_are_one_slice_of_each_utterance():
    torch.manual_seed(0)
    lens = torch.tensor([30, 12, 5])
    starts = set()
    for _ in range(20):
        index = random_windows(lens, 8, 30)
        assert index.shape == (3, 8)
        assert torch.equal(index - index[:, :1], torch.arange(8).expand(3, 8))  # consecutive frames
        assert (index[:2, -1] < lens[:2]).all() and index[2, 0] == 0  # inside each row; a short row whole
        starts.add(int(index[0, 0]))
    assert len(starts) > 5  # the windows move
    assert random_windows(lens, 50, 30).shape == (3, 30)  # wider than the batch: whole rows
    x = torch.arange(3 * 30 * 2).reshape(3, 30, 2)
    index = random_windows(lens, 8, 30)
    torch.testing.assert_close(take_frames(x, index)[1], x[1, int(index[1, 0]) : int(index[1, 0]) + 8])
    assert torch.equal(take_frames(x[:, :, 0], index), take_frames(x, index)[:, :, 0])


def test_a_training_window_reads_the_content_of_the_whole_utterance_and_the_dev_set_reads_it_whole():
    torch.manual_seed(0)
    config = Config(model=tiny_config("recognition_synthesis", **SMALL)).with_overrides(
        ["train.crop_frames=4"]
    )
    model = RecognitionSynthesisVC(8, config.model).eval()
    tgt, lens, pitch = torch.randn(2, 9, 8), torch.tensor([9, 6]), torch.randn(2, 9, 2)
    seen = []
    synthesize = model.synthesizer.forward
    model.synthesizer.forward = lambda inputs, lens: seen.append((inputs, lens)) or synthesize(inputs, lens)
    batch = Batch(["a", "b"], tgt, lens, tgt, lens, tgt_pitch=pitch)
    kind = get_kind("recognition_synthesis")
    torch.manual_seed(1)
    kind.losses(model, batch, config, step=5)
    torch.manual_seed(1)
    window = random_windows(lens, 4, 9)
    inputs, window_lens = seen[-1]
    torch.testing.assert_close(inputs, take_frames(model.inputs(tgt, lens, pitch), window))
    assert inputs.shape[1] == 4 and window_lens.tolist() == [4, 4]
    dev = kind.losses(model, batch, config, step=None)
    assert seen[-1][0].shape[1] == 9  # whole utterances
    assert torch.equal(
        dev.total, kind.losses(model, batch, config.with_overrides(["train.crop_frames=0"]), None).total
    )


def test_a_window_s_content_is_read_from_the_window_and_the_frames_the_recognizer_reaches_around_it():
    torch.manual_seed(0)
    recognizer = frozen_recognizer(8).eval()  # 4 layers of kernel 5: 8 frames of context each side
    mels, lens = torch.randn(3, 40, 8), torch.tensor([40, 25, 6])
    window = random_windows(lens, 10, 40)
    window[0] = torch.arange(10) + 30  # the last frames: no context after them
    window[1] = torch.arange(10) + 3  # context cut short by the utterance's start
    heard = []
    hidden = recognizer.hidden
    recognizer.hidden = lambda x, keep=None: heard.append(x.shape[1]) or hidden(x, keep)
    whole = read_content(recognizer, mels, lens)
    windowed = read_content(recognizer, mels, lens, window)
    torch.testing.assert_close(windowed, take_frames(whole, window), rtol=1e-4, atol=1e-5)
    assert heard == [40, 10 + 2 * 8]  # the windows' reading: 26 frames of each row, not 40
    assert windowed[2, 6:].abs().max() == 0  # a short row's window ends in padding, read as zeros


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(config, experiment): a tiny recognition-synthesis converter trained by vc train."""
    tmp = tmp_path_factory.mktemp("recsyn")
    config = tiny_training_config(tmp)
    config.model = tiny_config("recognition_synthesis", encoder_reduction_factor=1, **SMALL)
    with_recognizer_phones(config, tmp)
    exp = tmp / "exp"
    train(config, exp, progress=False)
    return config, exp


def test_its_checkpoint_carries_the_runs_recognizer_and_converts_alone(trained, tmp_path):
    config, exp = trained
    payload = load_checkpoint(exp / "checkpoints" / "best.pt")
    recognizer = read_network_payload(exp / "phone_classifier.pt", MARKER, "phone classifier")["model"]
    for name, weight in recognizer.items():
        assert torch.equal(payload["model"][f"recognizer.{name}"], weight)
    (exp / "phone_classifier.pt").rename(tmp_path / "away.pt")  # conversion needs only the checkpoint
    try:
        first = str(read_pair_list(config.data.train_list)[0].source)
        converter = Converter.from_checkpoint(exp / "checkpoints" / "best.pt", mel2linear=False)
        result = converter.convert_file(first)
        assert result.alignment.shape[0] == result.mel.shape[0]  # rows: output frames
        out = tmp_path / "out.wav"
        assert main(["convert", "--checkpoint", str(exp / "checkpoints" / "best.pt"), first, str(out)]) == 0
        assert np.isfinite(sf.read(out)[0]).all()
    finally:
        (tmp_path / "away.pt").rename(exp / "phone_classifier.pt")


def test_its_training_batches_augment_what_it_hears_of_the_target_not_the_source(trained, tmp_path):
    config, _ = trained
    augmented = config.with_overrides(["augment.probability=1", "augment.freq_mask_width=2"])
    job = ModelJob(augmented, tmp_path / "exp", progress=False)
    batch = next(iter(job._loader(0)))
    prepared = job.prepare(batch)
    assert torch.equal(prepared.src, batch.src) and torch.equal(prepared.tgt, batch.tgt)
    assert prepared.heard.shape == batch.tgt.shape and not torch.equal(prepared.heard, batch.tgt)


def test_its_training_batches_carry_the_content_read_once_per_recording(trained, tmp_path):
    """The frozen recognizer's content of each training target, read once when training starts
    (Batch.tgt_content), is what it reads of the batch's utterances each step; with augmentation of
    what it hears the content changes every step and is read each step (no Batch.tgt_content)."""
    config, _ = trained
    job = ModelJob(config, tmp_path / "exp", progress=False)
    job.start(None)
    batch = job.prepare(next(iter(job._loader(0))))
    live = job.model.content(batch.tgt, batch.tgt_lens)
    assert batch.tgt_content is not None and batch.heard is None and batch.src_content is None
    torch.testing.assert_close(batch.tgt_content, live, rtol=1e-5, atol=1e-6)
    kind = job.kind
    torch.manual_seed(3)
    cached = kind.losses(job.model, batch, config, step=1)
    torch.manual_seed(3)
    read = kind.losses(job.model, dataclasses.replace(batch, tgt_content=None), config, step=1)
    torch.testing.assert_close(cached.total, read.total)
    heard = config.with_overrides(["augment.probability=1", "augment.freq_mask_width=2"])
    augmented = ModelJob(heard, tmp_path / "aug", progress=False)
    augmented.start(None)
    assert augmented.prepare(next(iter(augmented._loader(0)))).tgt_content is None


def test_teacher_forcing_resynthesises_the_target(trained):
    config, exp = trained
    outputs, targets, _ = teacher_forced_training_pairs(config, exp / "checkpoints" / "best.pt")
    assert [len(mel) for mel, _ in outputs] == [len(target) for target in targets]
    assert all(torch.isfinite(mel).all() for mel, _ in outputs)


def test_its_post_filter_never_reads_the_input_it_was_taught_on(trained, tmp_path):
    """Teacher-forced, the converter reads the target itself: a post-filter given that input beside the
    output learns to copy it, and copies the source at conversion (a main job's row with the source's
    voice). Its post-filter reads the output alone."""
    config, exp = trained
    outputs, _, _ = teacher_forced_training_pairs(config, exp / "checkpoints" / "best.pt")
    assert all(read is None for _, read in outputs)
    out = tmp_path / "postfilter.pt"
    args = ["postfilter-train", config.data.train_list, "--checkpoint", str(exp / "checkpoints" / "best.pt")]
    assert main([*args, "--out", str(out), "--max-steps", "2", "--no-progress"]) == 0
    converter = Converter.from_checkpoint(exp / "checkpoints" / "best.pt", mel2linear=False, postfilter=out)
    assert converter.postfilter.source_dim == 0
    first = str(read_pair_list(config.data.train_list)[0].source)
    assert np.isfinite(converter.convert_file(first).wave).all()


def test_at_a_timing_it_reads_its_content_where_the_alignment_looks_and_says_it_with_the_timings_pitch(
    trained, monkeypatch
):
    config, exp = trained
    converter = Converter.from_checkpoint(exp / "checkpoints" / "best.pt", mel2linear=False)
    model = converter.model
    torch.manual_seed(0)
    mels, lens = torch.randn(2, 12, config.audio.n_mels), torch.tensor([12, 9])
    pitch = torch.randn(2, 12, 2)
    # One output frame per decoder step, one source frame per encoder step (vc.model.aligned_source's
    # tests cover other factors): output frame t looks at source frame looked_at[t]; the second item
    # is shorter (3 frames) and padded.
    looked_at = torch.tensor([[0, 2, 2, 5, 7, 8, 11], [1, 1, 3, 0, 0, 0, 0]])
    alignments = torch.nn.functional.one_hot(looked_at, 12).float()
    timing_pitch = torch.randn(2, 7, 2)
    timing_pitch[1, 3:] = 0
    timing = Timing(alignments, lens, torch.tensor([7, 3]), 1, 1, timing_pitch)
    heard = {}
    original = model.synthesizer.inference

    def spy(inputs, input_lens, inference=None):
        heard.update(inputs=inputs, lens=input_lens)
        return original(inputs, input_lens, inference)

    monkeypatch.setattr(model.synthesizer, "inference", spy)
    out = model.inference(mels, lens, converter.config.inference, pitch=pitch, timing=timing)
    content = model.inputs(mels, lens, pitch)[..., :-2]
    assert heard["lens"].tolist() == [7, 3] and out.lens.tolist() == [7, 3]
    for k, frames in enumerate((7, 3)):
        torch.testing.assert_close(heard["inputs"][k, :frames, :-2], content[k, looked_at[k, :frames]])
        torch.testing.assert_close(heard["inputs"][k, :frames, -2:], timing_pitch[k, :frames])


def test_it_converts_at_an_attention_models_timing_with_its_alignment(trained, tmp_path):
    config, exp = trained
    attention = tmp_path / "attention.pt"
    save_tiny_checkpoint(attention)
    first = str(read_pair_list(config.data.train_list)[0].source)
    own = Converter.from_checkpoint(exp / "checkpoints" / "best.pt", mel2linear=False).convert_file(first)
    alone = Converter.from_checkpoint(attention, mel2linear=False).convert_file(first)
    assert alone.mel.shape[0] != own.mel.shape[0]  # the attention model has its own timing
    timed = Converter.from_checkpoint(
        exp / "checkpoints" / "best.pt", mel2linear=False, timing=attention
    ).convert_file(first)
    assert timed.mel.shape == (alone.mel.shape[0], own.mel.shape[1])  # its frames, the converter's mels
    np.testing.assert_array_equal(timed.alignment, alone.alignment)  # the attention model's, shown
    assert np.isfinite(timed.wave).all()
    out, image = tmp_path / "out.wav", tmp_path / "alignment.npy"
    args = ["convert", "--checkpoint", str(exp / "checkpoints" / "best.pt"), "--timing", str(attention)]
    assert main([*args, "--save-alignment", str(image), "--no-progress", first, str(out)]) == 0
    np.testing.assert_allclose(np.load(image), alone.alignment, atol=1e-6)  # on the CLI's threads
    assert len(sf.read(out)[0]) == len(timed.wave)


def test_a_timings_pitch_is_read_in_the_range_the_converter_learned_its_targets_pitch_in(
    trained, tmp_path, monkeypatch
):
    """The attention model's output is the target's voice: its pitch, read in the target's training
    range (the checkpoint's target_pitch), keeps its level, which an output's own range would lose."""
    config, exp = trained
    payload = load_checkpoint(exp / "checkpoints" / "best.pt")
    targets = load_f0(config.data.train_list, config.audio, feature_cache_dir(config, exp), progress=False)
    expected = log_f0_stats([target for _, target in targets.values()])
    assert payload["stats"]["target_pitch"] == pytest.approx(list(expected))
    attention = tmp_path / "attention.pt"
    save_tiny_checkpoint(attention)
    converter = Converter.from_checkpoint(exp / "checkpoints" / "best.pt", mel2linear=False, timing=attention)
    assert converter.target_pitch == pytest.approx(expected)
    asked = []
    timing_of = converter.timing.timing_of
    monkeypatch.setattr(
        converter.timing, "timing_of", lambda *args: asked.append(args[-1]) or timing_of(*args)
    )
    first = str(read_pair_list(config.data.train_list)[0].source)
    converter.convert_file(first)
    assert asked == [converter.target_pitch]
    # whatever the untrained attention model says, YIN hears 200 Hz throughout: z in the given range
    monkeypatch.setattr("vc.audio.pitch.yin", lambda waves, lens, audio: torch.full(waves.shape[:1] + (
        int(lens.max()) // audio.hop_length + 1,), 200.0))  # fmt: skip
    wave = torch.from_numpy(read_speech(first, config.audio).wave)[None]
    timing = timing_of(wave, torch.tensor([wave.shape[1]]), (5.0, 0.2))
    frames = int(timing.lens[0])
    torch.testing.assert_close(
        timing.pitch[0, :frames, 0], torch.full((frames,), (np.log(200.0) - 5.0) / 0.2)
    )
    assert (timing.pitch[0, :frames, 1] == 1).all()


def test_only_an_attention_model_times_only_a_recognition_synthesis_converter(trained, tmp_path, capsys):
    config, exp = trained
    attention = tmp_path / "attention.pt"
    save_tiny_checkpoint(attention)
    model = exp / "checkpoints" / "best.pt"
    with pytest.raises(
        ConfigError, match="re-times a recognition-synthesis converter's content; this model is attention"
    ):
        Converter.from_checkpoint(attention, timing=attention)
    with pytest.raises(
        ConfigError, match="the timing model must be an attention model; it is recognition_synthesis"
    ):
        Converter.from_checkpoint(model, timing=model)
    first = str(read_pair_list(config.data.train_list)[0].source)
    out = tmp_path / "out.wav"
    assert main(["convert", "--checkpoint", str(attention), "--timing", str(attention), first, str(out)]) == 1
    assert "this model is attention" in capsys.readouterr().err and not out.exists()


def test_it_needs_phones_and_a_known_content(trained, tmp_path):
    config, _ = trained
    no_phones = dataclasses.replace(config, data=dataclasses.replace(config.data, phones=""))
    with pytest.raises(ConfigError, match="recognition_synthesis needs data.phones"):
        model_loop(no_phones, tmp_path / "a", progress=False)
    with pytest.raises(ConfigError, match="model.content must be one of hidden, got 'posteriors'"):
        model_loop(config.with_overrides(["model.content=posteriors"]), tmp_path / "b", progress=False)
    student = config.with_overrides(["model.kind=nonautoregressive", "train.crop_frames=64"])
    with pytest.raises(ConfigError, match="crop_frames needs input and output on one timeline"):
        model_loop(student, tmp_path / "f", progress=False)


def test_the_recognizer_trains_alone_and_the_run_after_it_reuses_it(tmp_path, caplog):
    """`vc train --recognizer-only` (the recipe's first step beside the attention model): the phone
    recognizer's file and nothing of the synthesizer; the next vc train into the folder reads it."""
    config = tiny_training_config(tmp_path)
    config.model = tiny_config("recognition_synthesis", **SMALL)
    with_recognizer_phones(config, tmp_path)
    exp = tmp_path / "exp"
    assert train_recognizer(config, exp, progress=False) == exp / "phone_classifier.pt"
    first = (exp / "phone_classifier.pt").read_bytes()
    assert not (exp / "checkpoints").exists()
    with caplog.at_level(logging.INFO, logger="vc.training.phonetic"):
        train(config, exp, progress=False)
    assert f"phone classifier: {exp / 'phone_classifier.pt'} (dev frame accuracy" in caplog.text
    assert (exp / "phone_classifier.pt").read_bytes() == first and (exp / "checkpoints" / "best.pt").is_file()


def test_the_recognizer_hears_both_speakers_frames_augmented(tmp_path, monkeypatch):
    """augment.recognizer_probability: the recognizer's training crops of both speakers go through one
    SourceAugment over the source's and the target's statistics, each crop naming its own."""
    from vc.training.augment import SourceAugment

    config = tiny_training_config(tmp_path)
    config.model = tiny_config("recognition_synthesis", **SMALL)
    with_recognizer_phones(config, tmp_path)
    config = config.with_overrides(["augment.recognizer_probability=1.0", "augment.freq_mask_width=2"])
    calls = []
    call = SourceAugment.__call__

    def spy(self, src, lens, speakers=None):
        calls.append((self.probability, self.mean.shape[0], speakers))
        return call(self, src, lens, speakers)

    monkeypatch.setattr(SourceAugment, "__call__", spy)
    train_recognizer(config, tmp_path / "exp", progress=False)
    assert calls and all(probability == 1.0 and count == 2 for probability, count, _ in calls)
    assert {int(k) for *_, speakers in calls for k in speakers} == {0, 1}


def test_a_run_without_a_recognizer_refuses_to_train_one(tmp_path):
    config = tiny_training_config(tmp_path)  # the attention model, no phonetic loss
    with pytest.raises(ConfigError, match="no phone recognizer to train"):
        train_recognizer(config, tmp_path / "exp", progress=False)
    assert not (tmp_path / "exp").exists()
