"""Model kinds behind one registry: a new kind is one module and one registry line, beside its model
section and that section's line in vc/settings/kinds.py."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest
import torch
from torch import nn

from tests.helpers import speech_like, tiny_config, tiny_training_config
from vc import Converter
from vc.artifacts.checkpoint import load_checkpoint, step_checkpoints
from vc.errors import ConfigError
from vc.kinds import KINDS, ModelKind, build_model, get_kind
from vc.masks import make_pad_mask
from vc.settings.kinds import MODEL_SECTIONS, ModelConfig
from vc.training.trainer import model_loop, train


class FrameOutput(NamedTuple):
    after: torch.Tensor  # (B, T, n_mels)
    lens: torch.Tensor
    alignments: torch.Tensor  # (B, T, T): output frame t reads input frame t
    enc_lens: torch.Tensor


@dataclasses.dataclass
class ToyConfig(ModelConfig):
    """The toy kind's own model section: the shared settings and one of its own."""

    kind: str = "toy"
    toy_gain: float = 1.0


class FrameNet(nn.Module):
    """A toy converter that needs no timing: one output frame per input frame."""

    def __init__(self, n_mels: int, config: ToyConfig):
        super().__init__()
        self.proj = nn.Linear(n_mels, n_mels)
        self.gain = config.toy_gain

    def forward(self, src, src_lens) -> FrameOutput:
        keep = ~make_pad_mask(src_lens, src.shape[1])
        after = self.gain * self.proj(src) * keep.unsqueeze(-1)
        alignments = torch.eye(src.shape[1])[None].expand(len(src), -1, -1) * keep.unsqueeze(-1)
        return FrameOutput(after, src_lens, alignments, src_lens)

    def inference(self, src, src_lens, config) -> FrameOutput:
        return self(src, src_lens)


class ToyLosses(NamedTuple):
    total: torch.Tensor
    spectral: torch.Tensor


class FrameKind(ModelKind):
    name = "toy"
    config = ToyConfig
    network = FrameNet

    def losses(self, model, batch, config, step) -> ToyLosses:
        out = model(batch.src, batch.src_lens)
        frames = min(out.after.shape[1], batch.tgt.shape[1])
        lens = torch.minimum(batch.src_lens, batch.tgt_lens)
        keep = (~make_pad_mask(lens, frames)).unsqueeze(-1)
        spectral = ((out.after[:, :frames] - batch.tgt[:, :frames]).abs() * keep).sum() / keep.sum()
        return ToyLosses(spectral, spectral)

    def log_fixed_utterances(self, views, model, batch, step) -> None:
        views.writer.add_scalar("valid/toy/frames", float(batch.src_lens.sum()), step)


@pytest.fixture()
def toy_kind(monkeypatch):
    monkeypatch.setitem(MODEL_SECTIONS, FrameKind.name, ToyConfig)  # its section's line
    monkeypatch.setitem(KINDS, FrameKind.name, FrameKind())  # its kind's line


def test_a_registered_kind_trains_checkpoints_resumes_and_converts(tmp_path, toy_kind):
    config = tiny_training_config(tmp_path).with_overrides(["model.kind=toy", "model.toy_gain=0.5"])
    assert isinstance(config.model, ToyConfig) and config.model.toy_gain == 0.5
    assert config.model.encoder_hidden_dim == tiny_config().encoder_hidden_dim  # shared settings kept
    config.train = dataclasses.replace(config.train, max_steps=3)
    out = tmp_path / "exp"
    train(config, out, progress=False)
    assert [p.name for p in step_checkpoints(out / "checkpoints")] == ["step0000003.pt"]
    longer = dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=6))
    loop = model_loop(longer, out, resume=True, progress=False)
    assert loop.step == 3
    loop.run()
    loop.job.close()
    payload = load_checkpoint(out / "checkpoints" / "step0000006.pt")
    assert payload["config"]["model"]["kind"] == "toy" and set(payload["model"]) == {
        "proj.weight",
        "proj.bias",
    }
    converter = Converter.from_checkpoint(out / "checkpoints" / "step0000006.pt", mel2linear=False)
    assert converter.config.model == config.model and converter.model.gain == 0.5
    wave, rate = converter.convert(speech_like(0.5), 16000)
    assert rate == 16000 and len(wave) > 0 and np.isfinite(wave).all()
    result = converter.convert_file(tmp_path / "src0.wav")
    assert result.alignment.shape[0] == result.alignment.shape[1]  # one row per output frame


def test_the_config_floor_knows_every_kind_by_the_section_its_kind_names():
    assert {name: kind.config for name, kind in KINDS.items()} == MODEL_SECTIONS


def test_every_kind_is_built_by_name_and_an_unknown_one_is_a_clear_error():
    for name, kind in KINDS.items():
        assert get_kind(name) is kind and kind.name == name
        section = tiny_config(name)
        assert type(section) is kind.config and isinstance(build_model(6, section), kind.network)
    with pytest.raises(
        ConfigError, match="model.kind must be one of attention, nonautoregressive.*, got 'x'"
    ):
        build_model(6, dataclasses.replace(tiny_config(), kind="x"))
