"""Small builders the tests share: tiny model configs, synthetic audio and pair lists, tiny checkpoints.

Fixtures live in conftest.py; plain functions live here, imported by name.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from vc.artifacts.checkpoint import save_checkpoint
from vc.audio import FeatureStats
from vc.config import Config
from vc.kinds import build_model
from vc.packages import missing
from vc.settings.kinds import ModelConfig, model_section
from vc.settings.training import DataConfig, TrainConfig
from vc.settings.vocoders import GriffinLimConfig
from vc.training.data import load_features
from vc.training.loop import Job, Loop, Update

TINY_MELS = 6  # mel bands of every tiny model here


# A tiny value of every model setting of every kind; each kind's section takes the keys it has.
TINY_MODEL = {
    "encoder_reduction_factor": 2,
    "encoder_prenet_dim": 8,
    "encoder_conv_layers": 2,
    "encoder_conv_channels": 8,
    "encoder_conv_kernel": 3,
    "encoder_hidden_dim": 4,
    "encoder_dropout": 0.0,
    "attention_dim": 8,
    "attention_location_filters": 4,
    "attention_location_kernel": 5,
    "decoder_prenet_dim": 8,
    "decoder_prenet_dropout": 0.0,
    "attention_rnn_dim": 8,
    "decoder_rnn_dim": 8,
    "postnet_layers": 2,
    "postnet_channels": 8,
    "postnet_kernel": 3,
    "postnet_dropout": 0.0,
}


def tiny_config(kind: str = "attention", **overrides) -> ModelConfig:
    """The model section of ``kind`` with tiny layers (its other settings at their defaults)."""
    section = model_section(kind)
    keys = {f.name for f in dataclasses.fields(section)}
    return section(kind=kind, **{**{k: v for k, v in TINY_MODEL.items() if k in keys}, **overrides})


def speech_like(seconds: float = 1.0, sr: int = 16000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    return 0.3 * np.sin(2 * np.pi * 150 * t) * (1 + np.sin(2 * np.pi * 3 * t)) + 0.01 * rng.standard_normal(
        len(t)
    )


def synthetic_pairs(folder: Path, count: int, seed: int = 0) -> list[str]:
    """Pairs of short harmonic 'utterances': the target is the source a fifth higher."""
    rng = np.random.default_rng(seed)
    sr = 16000
    lines = []
    for k in range(count):
        duration = rng.uniform(0.4, 0.8)
        t = np.arange(int(sr * duration)) / sr
        f0 = 110 * (1 + 0.3 * np.sin(2 * np.pi * rng.uniform(0.5, 2) * t))
        phase = 2 * np.pi * np.cumsum(f0) / sr
        for name, shift in (("src", 1.0), ("tgt", 1.5)):
            wave = sum(np.sin(h * shift * phase) / h for h in range(1, 6)) * 0.2
            sf.write(folder / f"{name}{k}.wav", wave, sr)
        lines.append(f"utt{k}\tsrc{k}.wav\ttgt{k}.wav")
    return lines


def tiny_training_config(tmp_path: Path, **train_overrides) -> Config:
    lines = synthetic_pairs(tmp_path, 6)
    (tmp_path / "train.tsv").write_text("\n".join(lines[:4]) + "\n")
    (tmp_path / "dev.tsv").write_text("\n".join(lines[4:]) + "\n")
    config = Config()
    config.audio = dataclasses.replace(config.audio, n_mels=TINY_MELS)
    config.model = tiny_config()
    config.data = DataConfig(
        train_list=str(tmp_path / "train.tsv"),
        dev_list=str(tmp_path / "dev.tsv"),
        cache_dir=str(tmp_path / "cache"),
        batch_size=2,
        num_fixed_utterances=2,
    )
    config.train = dataclasses.replace(
        TrainConfig(),
        max_steps=6,
        eval_every=3,
        log_every=1,
        warmup_steps=2,
        evolution_columns=4,
        **train_overrides,
    )
    config.vocoder = dataclasses.replace(config.vocoder, griffin_lim=GriffinLimConfig(iters=2))
    return config


def write_pair_list(folder, count: int):
    """``count`` synthetic source/target wav pairs in ``folder`` and their list, train.tsv."""
    lines = []
    for k in range(count):
        for role in ("src", "tgt"):
            sf.write(folder / f"{role}{k}.wav", speech_like(0.5, seed=10 * k + len(role)), 16000)
        lines.append(f"utt{k}\tsrc{k}.wav\ttgt{k}.wav")
    pairs = folder / "train.tsv"
    pairs.write_text("\n".join(lines) + "\n")
    return pairs


def save_tiny_checkpoint(path: Path) -> Config:
    """An untrained tiny model in a complete checkpoint at ``path``: enough to exercise every path."""
    config = Config()
    config.audio = dataclasses.replace(config.audio, n_mels=TINY_MELS)
    config.model = tiny_config()
    config.vocoder = dataclasses.replace(config.vocoder, griffin_lim=GriffinLimConfig(iters=2))
    torch.manual_seed(0)
    model = build_model(TINY_MELS, config.model)
    stats = FeatureStats(np.full(TINY_MELS, -2.0, np.float32), np.ones(TINY_MELS, np.float32)).to_dict()
    payload = {"step": 1, "model": model.state_dict(), "config": config.to_dict()}
    save_checkpoint(path, {**payload, "stats": {"source": stats, "target": stats}})
    return config


def needs(*modules: str) -> None:
    """Skip where an eval package is absent, except under CI (`.ci/run` installs the eval extra)."""
    absent = missing(*modules)
    if absent and os.environ.get("CI"):
        pytest.fail(f"CI must install the eval extra; missing {absent}")
    if absent:
        pytest.skip(f"not installed: {absent}")


def tensorboard_scalars(folder) -> dict[str, list[int]]:
    """The steps logged for each scalar tag of the TensorBoard event files in ``folder``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder))
    events.Reload()
    return {tag: [event.step for event in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def venv_env() -> dict[str, str]:
    """The environment with this interpreter's bin folder first on PATH: the recipes' `vc` is this one."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def write_half_phones(config: Config, path: Path) -> None:
    """A phones file (vc durations --phones' format) for every pair of the config's lists: each side's
    first half 'AA', its second half 'S'."""
    seconds = config.audio.hop_length / config.audio.sample_rate
    phones = {}
    for lst in (config.data.train_list, config.data.dev_list):
        for utt, pair in load_features(lst, config.audio, config.data.cache_dir, progress=False).items():
            phones[utt] = {
                side: [
                    ["AA", 0.0, len(mels) * seconds / 2],
                    ["S", len(mels) * seconds / 2, len(mels) * seconds],
                ]
                for side, mels in zip(("source", "target"), pair, strict=True)
            }
    path.write_text(json.dumps(phones))


def with_recognizer_phones(config: Config, folder: Path) -> None:
    """The config given what a run's phone recognizer trains on, in place: half phones (write_half_phones)
    in FOLDER/phones.json as data.phones, and a training of a moment (train.phonetic_minutes 0.01)."""
    write_half_phones(config, folder / "phones.json")
    config.data = dataclasses.replace(config.data, phones=str(folder / "phones.json"))
    config.train = dataclasses.replace(config.train, phonetic_minutes=0.01)


def teacher_forced_training_pairs(config: Config, checkpoint: Path):
    """(outputs, natural targets, converter): a checkpoint's teacher-forced predictions (teacher_forced)
    for every pair of the config's training list, beside those targets' log-mels."""
    from vc.inference.teacher_forcing import for_teacher_forcing, teacher_forced
    from vc.pairs import read_pair_list

    pairs = read_pair_list(config.data.train_list)
    features = load_features(config.data.train_list, config.audio, config.data.cache_dir, progress=False)
    targets = [torch.as_tensor(features[pair.utt_id][1]) for pair in pairs]
    converter = for_teacher_forcing(checkpoint)
    outputs = teacher_forced(
        converter, [config.data.train_list], [p.target for p in pairs], targets, config.audio, progress=False
    )
    return outputs, targets, converter


class _OneBatch(Job):
    """A job of the training loop that lowers one loss of one network on one fixed batch."""

    name = "overfit"

    def __init__(self, model: torch.nn.Module, loss, lr: float, clip: float | None):
        self.model, self.loss = model, loss
        self.optimizers = {"model": torch.optim.Adam(model.parameters(), lr=lr)}
        self.grad_clip = {"model": clip}
        self.losses: list[float] = []

    def batches(self, step: int):
        while True:
            yield None

    def updates(self, batch, step: int):
        loss = self.loss()
        self.losses.append(loss.item())
        yield Update(loss)

    def evaluate(self, step: int) -> float:
        return 0.0

    def networks(self) -> dict[str, torch.nn.Module]:
        return {"model": self.model}


def fit(model: torch.nn.Module, loss, steps: int, lr: float, clip: float | None = None) -> list[float]:
    """Train ``model`` for ``steps`` steps of Adam on ``loss()`` (a closure over one fixed batch) through
    the one training loop (vc/training/loop.py); returns the loss before each step."""
    job = _OneBatch(model, loss, lr, clip)
    Loop(job, max_steps=steps, progress=False).run()
    return job.losses
