"""The phonetic loss: frame labels from the phone alignments, a frozen classifier, its loss in training."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from tests.helpers import tensorboard_scalars, tiny_config, tiny_training_config, write_half_phones
from vc.artifacts.companion import read_network_payload
from vc.errors import ConfigError, DataError
from vc.kinds import get_kind
from vc.kinds.losses import IGNORE, phonetic_loss
from vc.model.phone_classifier import PhoneClassifier
from vc.training.durations import extract_dtw_durations
from vc.training.phonetic import MARKER, PHONES, WARMUP_STEPS, frame_labels, train_phone_classifier
from vc.training.trainer import model_loop, train


def test_frames_take_the_phone_they_fall_in_and_silence_elsewhere():
    labels = frame_labels([["AO", 0.02, 0.05], ["TH", 0.05, 0.07], ["XX", 0.07, 0.09]], 10, 0.01)
    ao, th = PHONES.index("AO"), PHONES.index("TH")
    assert labels.tolist() == [0, 0, ao, ao, ao, th, th, 0, 0, 0]
    assert frame_labels([["AO", 0.0, 5.0]], 3, 0.01).tolist() == [ao] * 3  # clipped to the frames


def test_the_loss_ignores_padding_and_reads_the_shorter_length():
    torch.manual_seed(0)
    classifier = PhoneClassifier(6, len(PHONES), channels=8, layers=1).eval()
    mels = torch.randn(2, 7, 6)
    labels = torch.full((2, 5), IGNORE)
    labels[0, :3] = 4
    # the second item has no label; frames past the labels' 5 are not read
    alone = phonetic_loss(classifier, mels[:1, :5], labels[:1])
    torch.testing.assert_close(phonetic_loss(classifier, mels, labels), alone)
    logits = classifier(mels[:1, :5])[0, :3]
    torch.testing.assert_close(alone, torch.nn.functional.cross_entropy(logits, labels[0, :3]))


def test_a_classifier_learns_separable_phones():
    torch.manual_seed(0)
    means = torch.randn(3, 6) * 3
    pairs = []
    for k in range(8):
        labels = torch.randint(3, (60,), generator=torch.Generator().manual_seed(k))
        pairs.append((means[labels] + 0.3 * torch.randn(60, 6), labels))
    classifier, accuracy = train_phone_classifier(
        pairs[:6], pairs[6:], 1.0, 0, torch.device("cpu"), max_steps=40, batch_size=8
    )
    assert accuracy > 0.9
    assert not any(p.requires_grad for p in classifier.parameters())


def test_the_classifiers_rate_warms_up_then_decays_to_zero_at_the_end_of_its_budget(monkeypatch):
    """The recognizer's schedule: its learning rate rises over the warmup, then falls linearly to
    zero at the end of its budget, the steps here (a constant rate read 2.2 points fewer frames right)."""
    rates = []
    step = torch.optim.AdamW.step

    def recorded(optimizer, *args, **kwargs):
        rates.append(optimizer.param_groups[0]["lr"])
        return step(optimizer, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", recorded)
    means = torch.randn(3, 6, generator=torch.Generator().manual_seed(0)) * 3
    pairs = [(means[labels] + 0.3 * torch.randn(60, 6), labels) for labels in torch.randint(3, (8, 60))]
    train_phone_classifier(pairs[:6], pairs[6:], 1.0, 0, torch.device("cpu"), max_steps=200, batch_size=8)
    assert len(rates) == 200
    peak = max(rates)
    assert rates[1] == pytest.approx(2 * rates[0]) and rates[9] == pytest.approx(10 * rates[0])  # linear rise
    warmup, decay = rates[: rates.index(peak) + 1], rates[rates.index(peak) :]
    assert warmup == sorted(warmup) and decay == sorted(decay, reverse=True)
    assert rates.index(peak) <= WARMUP_STEPS and rates[-1] < peak / 50


def test_the_classifier_hears_its_training_crops_augmented_by_their_speakers_statistics():
    """With an augment, training items are (mels, labels, speaker): every batch goes through it
    with each crop's speaker index and lengths; the dev frames are never augmented."""
    torch.manual_seed(0)
    means = torch.randn(3, 6) * 3
    pairs = [(means[labels] + 0.3 * torch.randn(60, 6), labels) for labels in torch.randint(3, (8, 60))]
    train = [(mel, label, k % 2) for k, (mel, label) in enumerate(pairs[:6])]
    heard = []

    def augment(batch, lens, speakers):
        heard.append((batch.clone(), lens, speakers))
        return batch + 100.0  # nothing a classifier could learn the dev frames from

    _, accuracy = train_phone_classifier(
        train, pairs[6:], 0, 0, torch.device("cpu"), max_steps=30, batch_size=8, crop=20, augment=augment
    )
    assert len(heard) >= 30  # one per step (the loop may draw the next batch ahead)
    for batch, lens, speakers in heard:
        assert batch.shape == (8, 20, 6) and lens.tolist() == [20] * 8
        # each crop's speaker index is that of the item it was cut from (the item's mels tell which)
        for row, speaker in zip(batch, speakers, strict=True):
            item = next(k for k, (mel, _, _) in enumerate(train) if any(torch.equal(row[0], f) for f in mel))
            assert int(speaker) == item % 2
    assert accuracy < 0.9  # it learned the shifted frames, not the dev frames it is measured on


def test_an_interrupted_classifier_training_continues_from_its_state(tmp_path, monkeypatch):
    """The critic's training state (PATH_training/, every save_every steps) takes an interrupted run on
    to the weights the uninterrupted one reaches (and the evaluations that save it draw no random
    number: they measured the classifier with its dropout on, and shifted the rest of the run)."""
    from vc.training.loop import Loop

    torch.manual_seed(0)
    means = torch.randn(3, 6) * 3
    pairs = [(means[labels] + 0.3 * torch.randn(60, 6), labels) for labels in torch.randint(3, (8, 60))]
    options = dict(max_steps=6, batch_size=4, save_every=3)
    straight, _ = train_phone_classifier(pairs[:6], pairs[6:], 0, 0, torch.device("cpu"), **options)
    step = Loop.train_step

    def dies_after_step_4(loop, batch):
        stats = step(loop, batch)
        if loop.step == 4:
            raise KeyboardInterrupt
        return stats

    state = tmp_path / "phone_classifier_training"
    monkeypatch.setattr(Loop, "train_step", dies_after_step_4)
    with pytest.raises(KeyboardInterrupt):
        train_phone_classifier(pairs[:6], pairs[6:], 0, 0, torch.device("cpu"), state=state, **options)
    monkeypatch.setattr(Loop, "train_step", step)
    assert [p.name for p in sorted(state.glob("step*.pt"))] == ["step0000003.pt"]
    resumed, _ = train_phone_classifier(
        pairs[:6], pairs[6:], 0, 0, torch.device("cpu"), state=state, **options
    )
    for name, value in straight.state_dict().items():
        assert torch.equal(resumed.state_dict()[name], value), name


@pytest.fixture()
def phonetic_config(tmp_path):
    """A tiny student with DTW durations and a phones file that labels every frame 'AA' then 'S'."""
    config = tiny_training_config(tmp_path)
    config.model = tiny_config(
        "nonautoregressive",
        parallel_decoder_layers=1,
        parallel_decoder_channels=8,
        parallel_decoder_kernel=3,
        duration_predictor_layers=1,
        duration_predictor_channels=8,
    )
    extract_dtw_durations(
        config,
        [config.data.train_list, config.data.dev_list],
        config.data.cache_dir,
        tmp_path / "d.pt",
        False,
    )
    write_half_phones(config, tmp_path / "phones.json")
    config.data = dataclasses.replace(
        config.data, durations=str(tmp_path / "d.pt"), phones=str(tmp_path / "phones.json")
    )
    config.train = dataclasses.replace(config.train, phonetic_weight=0.5, phonetic_minutes=0.01)
    return config


def test_training_with_the_phonetic_loss_logs_it_and_keeps_its_classifier(phonetic_config, tmp_path):
    out = tmp_path / "exp"
    train(phonetic_config, out, progress=False)
    assert "train/loss/phonetic" in tensorboard_scalars(out / "tensorboard")
    saved = read_network_payload(out / "phone_classifier.pt", MARKER, "phone classifier")
    assert saved["info"]["phones"] == PHONES and 0.0 <= saved["info"]["accuracy"] <= 1.0
    before = (out / "phone_classifier.pt").stat().st_mtime_ns
    longer = dataclasses.replace(
        phonetic_config, train=dataclasses.replace(phonetic_config.train, max_steps=8)
    )
    loop = model_loop(longer, out, resume=True, progress=False)  # the same classifier, not a new one
    assert (out / "phone_classifier.pt").stat().st_mtime_ns == before
    assert loop.job.loss_extras["critic"].out.weight.equal(saved["model"]["out.weight"])
    loop.job.close()


def test_the_attention_model_trains_with_the_phonetic_loss(phonetic_config, tmp_path):
    """Teacher-forced, its output frames (reduction_factor 2: padded past the target's) carry the target's
    phones: the term is logged, and taking it away changes the step's total by exactly weight x it."""
    config = dataclasses.replace(phonetic_config, model=tiny_config(reduction_factor=2))
    out = tmp_path / "exp"
    train(config, out, progress=False)
    assert "train/loss/phonetic" in tensorboard_scalars(out / "tensorboard")
    loop = model_loop(config, out, resume=True, progress=False)
    job = loop.job
    batch = next(iter(job.batches(0)))
    kind = get_kind("attention")
    torch.manual_seed(0)
    with_term = kind.losses(job.model, batch, config, 5, **job.loss_extras)
    torch.manual_seed(0)
    without = kind.losses(job.model, batch, config, 5)
    assert without.phonetic is None and with_term.phonetic > 0
    torch.testing.assert_close(with_term.total - without.total, 0.5 * with_term.phonetic)
    job.close()


def test_without_the_phonetic_loss_no_term_is_logged(phonetic_config, tmp_path):
    config = dataclasses.replace(
        phonetic_config, train=dataclasses.replace(phonetic_config.train, phonetic_weight=0.0)
    )
    out = tmp_path / "exp"
    train(config, out, progress=False)
    assert "train/loss/phonetic" not in tensorboard_scalars(out / "tensorboard")
    assert not (out / "phone_classifier.pt").exists()


def test_the_phonetic_loss_needs_the_labels_of_every_pair(phonetic_config, tmp_path):
    no_phones = dataclasses.replace(
        phonetic_config, data=dataclasses.replace(phonetic_config.data, phones="")
    )
    with pytest.raises(ConfigError, match="needs data.phones"):
        model_loop(no_phones, tmp_path / "a", progress=False)
    (tmp_path / "partial.json").write_text(json.dumps({"utt0": {"source": [], "target": []}}))
    partial = dataclasses.replace(
        phonetic_config, data=dataclasses.replace(phonetic_config.data, phones=str(tmp_path / "partial.json"))
    )
    with pytest.raises(DataError, match="has no phones of utt1"):
        model_loop(partial, tmp_path / "c", progress=False)
