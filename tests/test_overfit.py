"""A small model overfits one real bdl -> slt pair: the whole training path learns."""

from __future__ import annotations

import dataclasses

import torch

from tests.conftest import arctic_file
from tests.helpers import fit
from vc.audio import FeatureStats, logmel_numpy, read_audio
from vc.config import Config
from vc.kinds import build_model
from vc.kinds.losses import compute_losses
from vc.settings.audio import AudioConfig
from vc.settings.inference import InferenceConfig


def normalised_logmel(speaker: str, config: AudioConfig) -> torch.Tensor:
    mel = logmel_numpy(read_audio(arctic_file(speaker, "arctic_a0001"), config), config)
    return torch.from_numpy(FeatureStats.from_features([mel]).normalize(mel))[None]


def test_small_model_overfits_one_real_pair():
    audio = AudioConfig()
    src, tgt = normalised_logmel("bdl", audio), normalised_logmel("slt", audio)
    src_lens, tgt_lens = torch.tensor([src.shape[1]]), torch.tensor([tgt.shape[1]])
    config = dataclasses.replace(
        Config().model,
        encoder_prenet_dim=64,
        encoder_conv_channels=64,
        encoder_hidden_dim=32,
        attention_dim=32,
        attention_location_filters=8,
        reduction_factor=3,
        decoder_prenet_dim=64,
        attention_rnn_dim=64,
        decoder_rnn_dim=64,
        postnet_layers=3,
        postnet_channels=32,
        encoder_dropout=0.0,
        postnet_dropout=0.0,
    )
    torch.manual_seed(0)
    model = build_model(audio.n_mels, config)

    def loss():
        out = model(src, src_lens, tgt, tgt_lens)
        return compute_losses(out, tgt, tgt_lens, config.reduction_factor, 5.0, 0.4, 1.0).total

    losses = fit(model, loss, steps=250, lr=3e-3, clip=1.0)
    assert min(losses[-10:]) * 5 <= losses[0], (losses[0], losses[-10:])
    model.eval()
    free = model.inference(src, src_lens, InferenceConfig(min_ratio=0.0, max_ratio=3.0))
    assert abs(int(free.lens[0]) - int(tgt_lens[0])) <= 0.2 * int(tgt_lens[0]), (free.lens, tgt_lens)
