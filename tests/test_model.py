"""Shapes, masks, lengths and step-by-step agreement of the model, tiny dims on CPU."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tests.helpers import tiny_config
from vc.kinds import build_model
from vc.kinds.losses import compute_losses
from vc.masks import make_pad_mask
from vc.model.attention import ATTENTION_TYPES
from vc.settings.inference import InferenceConfig

N_MELS = 6


def tiny_model(attention_type="location", reduction_factor=2, **overrides):
    torch.manual_seed(0)
    model = build_model(
        N_MELS, tiny_config(attention_type=attention_type, reduction_factor=reduction_factor, **overrides)
    )
    return model.eval()


def batch(lens=(11, 7), tgt_lens=(9, 6)):
    generator = torch.Generator().manual_seed(1)
    src_lens, tgt_lens = torch.tensor(lens), torch.tensor(tgt_lens)
    src = torch.randn(2, max(lens), N_MELS, generator=generator) * ~make_pad_mask(src_lens).unsqueeze(-1)
    tgt = torch.randn(2, max(tgt_lens), N_MELS, generator=generator) * ~make_pad_mask(tgt_lens).unsqueeze(-1)
    return src, src_lens, tgt, tgt_lens


switches = pytest.mark.parametrize(
    "attention_type,reduction_factor", [(a, 2) for a in ATTENTION_TYPES] + [("location", 1), ("location", 3)]
)


@switches
def test_attention_sums_to_one_and_is_zero_on_padding(attention_type, reduction_factor):
    model = tiny_model(attention_type, reduction_factor)
    src, src_lens, tgt, tgt_lens = batch()
    out = model(src, src_lens, tgt, tgt_lens)
    assert out.alignments.shape == (2, -(-9 // reduction_factor), 6)
    assert torch.allclose(out.alignments.sum(-1), torch.ones(2, out.alignments.shape[1]), atol=1e-6)
    # item 1 has 7 source frames -> 4 encoder steps; steps 4, 5 are padding
    assert out.enc_lens.tolist() == [6, 4]
    assert torch.all(out.alignments[1, :, 4:] == 0)


@switches
def test_teacher_forcing_equals_stepping_by_hand(attention_type, reduction_factor):
    model = tiny_model(attention_type, reduction_factor)
    src, src_lens, tgt, tgt_lens = batch()
    out = model(src, src_lens, tgt, tgt_lens)
    memory, keys, pad_mask, _ = model.encode(src, src_lens)
    decoder = model.decoder
    state = decoder.initial_state(memory)
    frame = torch.zeros(2, N_MELS)
    for i in range(out.alignments.shape[1]):
        state, hidden = decoder.step(decoder.prenet(frame), state, memory, keys, pad_mask)
        frames, stop = decoder.project(hidden.unsqueeze(1))
        group = slice(i * reduction_factor, (i + 1) * reduction_factor)
        width = out.before[:, group].shape[1]
        torch.testing.assert_close(frames[:, :width], out.before[:, group])
        torch.testing.assert_close(stop[:, :width], out.stop_logits[:, group])
        torch.testing.assert_close(state.alpha, out.alignments[:, i])
        # teacher forcing feeds the last ground-truth frame of the group
        frame = tgt[:, min((i + 1) * reduction_factor, tgt.shape[1]) - 1]


@switches
def test_every_parameter_gets_a_gradient(attention_type, reduction_factor):
    model = tiny_model(attention_type, reduction_factor).train()
    src, src_lens, tgt, tgt_lens = batch()
    out = model(src, src_lens, tgt, tgt_lens)
    losses = compute_losses(out, tgt, tgt_lens, reduction_factor, 5.0, 0.4, 1.0)
    losses.total.backward()
    missing = [name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not missing


@switches
def test_batched_inference_equals_one_by_one(attention_type, reduction_factor):
    model = tiny_model(attention_type, reduction_factor)
    src, src_lens, _, _ = batch(lens=(13, 8))
    config = InferenceConfig(min_ratio=0.0, max_ratio=2.0)
    both = model.inference(src, src_lens, config)
    for k in range(2):
        alone = model.inference(src[k : k + 1, : src_lens[k]], src_lens[k : k + 1], config)
        length = int(alone.lens[0])
        assert int(both.lens[k]) == length
        torch.testing.assert_close(both.after[k, :length], alone.after[0], atol=1e-5, rtol=1e-5)
        assert torch.all(both.after[k, length:] == 0)
        steps = alone.alignments.shape[1]
        torch.testing.assert_close(
            both.alignments[k, :steps, : alone.alignments.shape[2]], alone.alignments[0], atol=1e-5, rtol=1e-5
        )


def test_inference_stops_at_the_cap_and_at_the_stop_token():
    model = tiny_model(reduction_factor=2)
    src, src_lens, _, _ = batch(lens=(13, 8))
    with torch.no_grad():
        model.decoder.stop_proj.bias.fill_(-100.0)  # never wants to stop
    out = model.inference(src, src_lens, InferenceConfig(min_ratio=0.0, max_ratio=1.5))
    assert out.lens.tolist() == [19, 12]  # floor(1.5 x source frames)
    with torch.no_grad():
        model.decoder.stop_proj.bias.fill_(100.0)  # wants to stop at once
    out = model.inference(src, src_lens, InferenceConfig(min_ratio=0.5, max_ratio=3.0))
    assert out.lens.tolist() == [7, 5]  # the first frame at or after floor(0.5 x source frames), plus one
    # a stop on the second frame of a group ends there, not at the group's end
    with torch.no_grad():
        model.decoder.stop_proj.bias.copy_(torch.tensor([-100.0, 100.0]))
    out = model.inference(src, src_lens, InferenceConfig(min_ratio=0.0, max_ratio=3.0))
    assert out.lens.tolist() == [2, 2]


def test_monotonic_window_keeps_attention_near_the_previous_peak():
    model = tiny_model()
    src, src_lens, _, _ = batch(lens=(40, 30))
    config = InferenceConfig(
        min_ratio=0.0, max_ratio=1.0, use_monotonic_window=True, window_backward=1, window_forward=2
    )
    out = model.inference(src, src_lens, config)
    peaks = out.alignments.argmax(-1)  # (B, steps)
    previous = torch.cat([torch.zeros(2, 1, dtype=torch.long), peaks[:, :-1]], dim=1)
    assert torch.all(peaks - previous <= 2) and torch.all(previous - peaks <= 1)


@pytest.mark.parametrize("attention_type", ATTENTION_TYPES)
def test_attention_sharpness_scales_the_energies(attention_type):
    """alpha(sharpness=s) = softmax(s * energies) over the unpadded positions; padding stays at 0."""
    model = tiny_model(attention_type)
    attention = model.decoder.attention
    generator = torch.Generator().manual_seed(3)
    memory = torch.randn(2, 7, 8, generator=generator)  # memory_dim = 2 x encoder_hidden_dim
    query = torch.randn(2, 8, generator=generator)
    pad_mask = make_pad_mask(torch.tensor([7, 4]))
    keys = attention.prepare(memory)
    prev = torch.zeros(2, 7)
    energies = attention.score(query, keys, memory, prev, prev)
    _, plain = attention(query, memory, keys, pad_mask, prev, prev)
    _, sharp = attention(query, memory, keys, pad_mask, prev, prev, sharpness=3.0)
    expected = torch.softmax((3.0 * energies).masked_fill(pad_mask, -torch.inf), dim=-1)
    torch.testing.assert_close(sharp, expected)
    assert torch.all(sharp[1, 4:] == 0)
    entropy = lambda a: -(a * a.clamp_min(1e-12).log()).sum(-1)  # noqa: E731
    assert torch.all(entropy(sharp) < entropy(plain))


def test_attention_sharpness_reaches_free_running_decoding_only():
    model = tiny_model()
    src, src_lens, tgt, tgt_lens = batch(lens=(40, 30), tgt_lens=(20, 15))
    # fixed lengths: same steps either way; sharpness 1 keeps the trained softmax
    config = InferenceConfig(min_ratio=0.5, max_ratio=0.5, attention_sharpness=1.0)
    plain = model.inference(src, src_lens, config)
    same = model.inference(src, src_lens, dataclasses.replace(config, attention_sharpness=1.0))
    sharp = model.inference(src, src_lens, dataclasses.replace(config, attention_sharpness=4.0))
    torch.testing.assert_close(same.after, plain.after)
    assert plain.lens.tolist() == sharp.lens.tolist()
    assert sharp.alignments.amax(-1).mean() > plain.alignments.amax(-1).mean()
    assert not torch.allclose(sharp.after, plain.after)


def test_unknown_attention_type_is_a_clear_error():
    from vc.errors import ConfigError

    with pytest.raises(ConfigError, match="location, content, dot"):
        tiny_model("nope")


def test_decoder_prenet_dropout_stays_on_at_inference():
    model = tiny_model(decoder_prenet_dropout=0.5)  # eval mode
    src, src_lens, _, _ = batch()
    config = InferenceConfig(min_ratio=0.0, max_ratio=1.0)
    torch.manual_seed(1)
    first = model.inference(src, src_lens, config)
    torch.manual_seed(2)
    second = model.inference(src, src_lens, config)
    assert not torch.equal(first.before, second.before)
    model.decoder.prenet.always_dropout = False  # the Tacotron 1 behaviour: deterministic in eval mode
    torch.manual_seed(1)
    third = model.inference(src, src_lens, config)
    torch.manual_seed(2)
    assert torch.equal(third.before, model.inference(src, src_lens, config).before)


def test_encoder_ignores_whatever_the_padding_holds():
    """Normalised features make padding non-zero; an odd-length item stacks a padding frame."""
    model = tiny_model()
    src, src_lens, _, _ = batch(lens=(12, 7))
    garbage = src.clone()
    garbage[1, 7:] = 5.0
    clean, _ = model.encoder(src, src_lens)
    dirty, _ = model.encoder(garbage, src_lens)
    torch.testing.assert_close(dirty, clean, rtol=0, atol=0)
