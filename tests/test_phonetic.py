"""Phonetic supervision: transcripts as character ids, the recogniser, the CTC losses and training with them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.test_model import tiny_model
from tests.test_train import tiny_training_config
from vc.checkpoint import load_checkpoint
from vc.config import Config
from vc.data import ParallelDataset, collate
from vc.errors import DataError
from vc.model.recognizer import CharacterRecognizer
from vc.phonetic import PhoneticSupervision, TrainingObjective
from vc.text import VOCABULARY_SIZE, decode_ids, encode_text, transcripts_for
from vc.train import Trainer, train


def test_text_becomes_character_ids_of_the_normalised_transcript():
    ids = encode_text("Author of the danger trail, Philip Steels, etc.")
    assert decode_ids(ids) == "author of the danger trail philip steels etc"
    assert decode_ids(encode_text("Don't -- STOP!  1908")) == "don't stop"  # digits are dropped
    assert all(0 < i < VOCABULARY_SIZE for i in encode_text("the quick brown fox's jump"))


def _arctic_layout(root: Path) -> Path:
    wav = root / "cmu_us_x_arctic" / "wav"
    wav.mkdir(parents=True)
    (root / "cmu_us_x_arctic" / "etc").mkdir()
    (root / "cmu_us_x_arctic" / "etc" / "txt.done.data").write_text(
        '( arctic_a0001 "Author of the danger trail." )\n( arctic_a0002 "Not at this particular case, Tom." )\n'
    )
    return wav


def test_transcripts_are_found_beside_the_recordings_or_read_from_a_file(tmp_path):
    wav = _arctic_layout(tmp_path)
    found = transcripts_for({"arctic_a0002": wav / "arctic_a0002.flac"})
    assert decode_ids(found["arctic_a0002"]) == "not at this particular case tom"

    listed = tmp_path / "text.tsv"
    listed.write_text("u1\tHello there\n")
    assert (
        decode_ids(transcripts_for({"u1": tmp_path / "anywhere" / "u1.wav"}, listed)["u1"]) == "hello there"
    )


def test_missing_transcripts_are_clear_errors(tmp_path):
    wav = _arctic_layout(tmp_path)
    with pytest.raises(DataError, match="no transcript for arctic_b0001 in"):
        transcripts_for({"arctic_b0001": wav / "arctic_b0001.flac"})
    with pytest.raises(DataError, match="set data.transcripts=FILE"):
        transcripts_for({"u1": tmp_path / "elsewhere" / "u1.wav"})


def test_recognizer_shapes_and_padding_do_not_change_an_item():
    torch.manual_seed(0)
    recognizer = CharacterRecognizer(n_mels=6, vocabulary=VOCABULARY_SIZE, channels=16).eval()
    mels = torch.randn(3, 21, 6)
    lens = torch.tensor([21, 14, 9])
    logits, out_lens = recognizer(mels, lens)
    assert logits.shape == (3, 11, VOCABULARY_SIZE)
    assert out_lens.tolist() == [11, 7, 5]
    for b in range(3):
        alone, _ = recognizer(mels[b : b + 1, : lens[b]], lens[b : b + 1])
        torch.testing.assert_close(logits[b, : out_lens[b]], alone[0], rtol=1e-5, atol=1e-5)


def _text_batch():
    texts = [encode_text("hi"), encode_text("so la")]
    return torch.cat([torch.tensor(t) for t in texts]), torch.tensor([len(t) for t in texts])


def test_output_loss_moves_the_model_not_the_recognizer():
    """The recogniser learns only from natural speech; on predicted mels it is a fixed ear."""
    model = tiny_model()
    phonetic = PhoneticSupervision(6, model.encoder.output_dim, encoder_weight=1.0, output_weight=1.0)
    src, tgt = torch.randn(2, 24, 6), torch.randn(2, 30, 6)
    lens = torch.tensor([30, 26])
    out = model(src, torch.tensor([24, 20]), tgt, lens)
    text, text_lens = _text_batch()
    batch = dataclasses.make_dataclass("B", ["tgt", "tgt_lens", "text", "text_lens"])(
        tgt, lens, text, text_lens
    )
    losses = phonetic(out, batch)
    assert set(losses) == {"encoder", "recognizer", "output"}
    assert all(torch.isfinite(v) and v > 0 for v in losses.values())

    losses["output"].backward(retain_graph=True)
    assert all(p.grad is None for p in phonetic.recognizer.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.postnet.parameters())

    model.zero_grad()
    losses["recognizer"].backward(retain_graph=True)
    assert all(p.grad is None or p.grad.abs().sum() == 0 for p in model.parameters())
    assert all(p.grad is not None for p in phonetic.recognizer.parameters())

    losses["encoder"].backward()
    assert phonetic.encoder_head.weight.grad is not None
    assert model.encoder.rnn.weight_ih_l0.grad.abs().sum() > 0


def test_objective_without_weights_adds_nothing():
    config = Config()
    config.audio = dataclasses.replace(config.audio, n_mels=6)
    objective = TrainingObjective(tiny_model(), config)
    assert objective.phonetic is None
    assert sum(p.numel() for p in objective.parameters()) == sum(
        p.numel() for p in objective.model.parameters()
    )


def test_dataset_items_carry_text_and_batches_concatenate_it():
    features = {
        "b": (torch.zeros(5, 6).numpy(), torch.zeros(7, 6).numpy()),
        "a": (torch.zeros(4, 6).numpy(),) * 2,
    }
    stats = type("Stats", (), {"normalize": staticmethod(lambda x: x)})()
    dataset = ParallelDataset(features, stats, stats, {"a": [3, 4], "b": [5, 6, 7]})
    batch = collate([dataset[0], dataset[1]])
    assert batch.utt_ids == ["a", "b"]
    assert batch.text.tolist() == [3, 4, 5, 6, 7] and batch.text_lens.tolist() == [2, 3]
    assert collate([ParallelDataset(features, stats, stats)[0]]).text is None


def _with_transcripts(tmp_path, **weights) -> Config:
    config = tiny_training_config(tmp_path, **weights)
    words = ["la", "do", "mi", "so", "re", "ti"]
    (tmp_path / "text.tsv").write_text("".join(f"utt{k}\t{w}\n" for k, w in enumerate(words)))
    config.data = dataclasses.replace(config.data, transcripts=str(tmp_path / "text.tsv"))
    return config


def test_training_with_phonetic_losses_logs_saves_and_resumes_them(tmp_path):
    config = _with_transcripts(tmp_path, encoder_ctc_weight=1.0, output_ctc_weight=0.5)
    train(config, tmp_path / "exp", progress=False)
    payload = load_checkpoint(tmp_path / "exp" / "checkpoints" / "best.pt")
    assert "recognizer.out.weight" in payload["phonetic"] and "encoder_head.weight" in payload["phonetic"]
    assert not any(k.startswith(("recognizer", "encoder_head")) for k in payload["model"])
    events = EventAccumulator(str(tmp_path / "exp" / "tensorboard")).Reload()
    for name in ("encoder", "recognizer", "output"):
        assert f"train/loss/ctc_{name}" in events.Tags()["scalars"], name

    longer = dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=8))
    trainer = Trainer(longer, tmp_path / "exp", resume=True, progress=False)
    step6 = load_checkpoint(tmp_path / "exp" / "checkpoints" / "step0000006.pt")["phonetic"]
    torch.testing.assert_close(
        trainer.objective.phonetic.recognizer.out.weight, step6["recognizer.out.weight"]
    )
    trainer.close()


def test_training_with_phonetic_losses_needs_transcripts(tmp_path):
    config = tiny_training_config(tmp_path, encoder_ctc_weight=1.0)
    with pytest.raises(DataError, match="no transcript for utt"):
        Trainer(config, tmp_path / "exp", progress=False)
