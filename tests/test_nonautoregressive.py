"""The non-autoregressive converter: length regulator, duration predictor, durations from attention."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers import fit, tiny_config
from vc.kinds import build_model, get_kind
from vc.kinds.losses import duration_loss
from vc.model import NonAutoregressiveVC
from vc.model.nonautoregressive import cap_durations, length_regulate, predicted_durations
from vc.settings.audio import AudioConfig
from vc.settings.inference import InferenceConfig
from vc.training.durations import (
    durations_from_alignment,
    durations_from_dtw,
    frame_alignment,
    frame_positions,
)

N_MELS = 6


def tiny_student(**overrides) -> NonAutoregressiveVC:
    torch.manual_seed(0)
    config = tiny_config(
        kind="nonautoregressive",
        parallel_decoder_layers=2,
        parallel_decoder_channels=8,
        parallel_decoder_kernel=3,
        parallel_decoder_dropout=0.0,
        duration_predictor_layers=1,
        duration_predictor_channels=8,
        **overrides,
    )
    return build_model(N_MELS, config)


def batch_of_two():
    """Two sources (9 and 6 frames: 5 and 3 encoder steps) and durations summing to 7 and 4 frames."""
    torch.manual_seed(1)
    src = torch.randn(2, 9, N_MELS)
    src_lens = torch.tensor([9, 6])
    durations = torch.tensor([[1, 2, 0, 3, 1], [2, 1, 1, 0, 0]])
    return src, src_lens, durations


def test_build_model_picks_the_kind():
    assert isinstance(tiny_student(), NonAutoregressiveVC)


def test_length_regulator_repeats_each_step_its_duration_and_masks_the_rest():
    memory = torch.arange(2 * 3 * 1, dtype=torch.float32).reshape(2, 3, 1) + 1
    durations = torch.tensor([[2, 0, 3], [1, 1, 0]])
    expanded, index, position, lens = length_regulate(memory, durations)
    assert lens.tolist() == [5, 2]
    assert expanded.shape == (2, 5, 1)
    assert expanded[0, :, 0].tolist() == [1, 1, 3, 3, 3]
    assert expanded[1, :, 0].tolist() == [4, 5, 0, 0, 0]  # zero past the length
    assert index[0].tolist() == [0, 0, 2, 2, 2]
    assert position[0].tolist() == pytest.approx([0, 0.5, 0, 1 / 3, 2 / 3])
    assert position[1, 2:].tolist() == [0, 0, 0]


def test_forward_shapes_follow_the_durations():
    model = tiny_student()
    src, src_lens, durations = batch_of_two()
    out = model(src, src_lens, durations)
    assert out.lens.tolist() == [7, 4]
    assert out.after.shape == (2, 7, N_MELS)
    assert out.log_durations.shape == (2, 5)
    assert out.enc_lens.tolist() == [5, 3]
    assert out.alignments.shape == (2, 7, 5)
    assert (out.after[1, 4:] == 0).all()  # padding frames are zero
    assert (out.log_durations[1, 3:] == 0).all()
    assert out.alignments[0].sum(dim=1).tolist() == [1.0] * 7


def test_a_batch_item_equals_the_same_item_alone():
    model = tiny_student().eval()
    src, src_lens, durations = batch_of_two()
    together = model(src, src_lens, durations)
    alone = model(src[1:, :6], src_lens[1:], durations[1:, :3])
    torch.testing.assert_close(together.after[1, :4], alone.after[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(together.log_durations[1, :3], alone.log_durations[0], atol=1e-5, rtol=1e-5)
    free_together = model.inference(src, src_lens)
    free_alone = model.inference(src[1:, :6], src_lens[1:])
    assert int(free_together.lens[1]) == int(free_alone.lens[0])
    torch.testing.assert_close(
        free_together.after[1, : int(free_alone.lens[0])], free_alone.after[0], atol=1e-5, rtol=1e-5
    )


def test_every_parameter_gets_a_gradient():
    model = tiny_student()
    src, src_lens, durations = batch_of_two()
    tgt = torch.randn(2, 7, N_MELS)
    batch = type("Batch", (), dict(src=src, src_lens=src_lens, durations=durations, tgt=tgt))()
    batch.tgt_lens = torch.tensor([7, 4])
    config = type("C", (), {"model": type("M", (), {"duration_loss_weight": 1.0})()})()
    get_kind("nonautoregressive").losses(model, batch, config, step=0).total.backward()
    missing = [name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not missing


def test_duration_loss_is_on_log_durations_over_true_steps():
    durations = torch.tensor([[3, 0], [1, 5]])
    perfect = torch.log1p(durations.float())
    perfect[0, 1] = 99.0  # a padded step: ignored
    assert float(duration_loss(perfect, durations, torch.tensor([1, 2]))) == 0.0
    assert float(duration_loss(torch.zeros(2, 2), durations, torch.tensor([2, 2]))) == pytest.approx(
        (np.log(4) ** 2 + np.log(2) ** 2 + np.log(6) ** 2) / 4
    )


def test_predicted_durations_round_divide_by_speed_and_keep_one_frame():
    log_d = torch.log1p(torch.tensor([[3.0, 1.0, 0.2, 9.0]]))
    pad = torch.tensor([[False, False, False, True]])
    assert predicted_durations(log_d, pad, 1.0).tolist() == [[3, 1, 0, 0]]
    assert predicted_durations(log_d, pad, 2.0).tolist() == [[2, 0, 0, 0]]  # 1.5 rounds to 2, 0.5 to 0
    assert predicted_durations(torch.zeros(1, 3), torch.zeros(1, 3, dtype=torch.bool), 1.0).tolist() == [
        [1, 0, 0]
    ]


def test_cap_durations_trims_from_the_end():
    durations = torch.tensor([[3, 4, 5], [1, 1, 1]])
    assert cap_durations(durations, torch.tensor([6, 10])).tolist() == [[3, 3, 0], [1, 1, 1]]


def test_speed_factor_shortens_the_conversion():
    model = tiny_student().eval()
    with torch.no_grad():
        model.duration_predictor.out.bias.fill_(np.log1p(4.0))  # about 4 frames per step
    src, src_lens, _ = batch_of_two()
    normal = model.inference(src, src_lens, InferenceConfig(speed=1.0))
    fast = model.inference(src, src_lens, InferenceConfig(speed=2.0))
    assert (fast.lens < normal.lens).all()
    capped = model.inference(src, src_lens, InferenceConfig(max_ratio=1.0))
    assert (capped.lens <= src_lens).all()


# ------------------------------------------------------------ durations from the attention model
def diagonal_attention(steps: int, enc_steps: int, padded: int = 0) -> np.ndarray:
    """Soft diagonal attention (steps, enc_steps + padded), zeros on the padded columns."""
    i = (np.arange(steps)[:, None] + 0.5) / steps * enc_steps
    weights = np.exp(-((np.arange(enc_steps)[None, :] + 0.5 - i) ** 2) / 0.5)
    weights /= weights.sum(axis=1, keepdims=True)
    return np.pad(weights, ((0, 0), (0, padded)))


def test_frame_alignment_spreads_decoder_steps_to_frames():
    alignment = np.eye(3)
    frames = frame_alignment(alignment, 9, 3)
    assert frames.shape == (9, 3)
    np.testing.assert_allclose(frames.sum(axis=1), 1.0)
    np.testing.assert_allclose(frames[1], [1, 0, 0])  # the middle frame of step 0 is step 0
    np.testing.assert_allclose(frames[2], [2 / 3, 1 / 3, 0])


def test_frame_positions_follow_the_diagonal_and_never_go_back():
    alignment = diagonal_attention(20, 30)
    alignment[7] = alignment[3]  # one decoder step looks back: the path holds instead
    path = frame_positions(frame_alignment(alignment, 60, 3))
    assert path[0] == 0 and path[-1] == 29
    steps = np.diff(path)
    assert (steps >= 0).all() and (steps <= 2).all()  # after holding, the path catches up


@pytest.mark.parametrize("frames,enc_steps", [(60, 15), (14, 20), (31, 31)])
def test_durations_sum_to_the_frames_and_ignore_padding(frames, enc_steps):
    steps = -(-frames // 3)
    alignment = diagonal_attention(steps, enc_steps, padded=4)
    durations, sharpness = durations_from_alignment(alignment, frames, enc_steps, 3)
    assert durations.shape == (enc_steps,)
    assert durations.sum() == frames
    assert 0 < sharpness <= 1
    # about proportional: a diagonal gives each step frames / enc_steps, give or take a few
    assert np.abs(np.cumsum(durations) - np.arange(1, enc_steps + 1) * frames / enc_steps).max() <= 4


def test_durations_of_a_two_frames_per_step_diagonal_are_even():
    """r = 3 frames per decoder step, 1.5 encoder steps per decoder step: 2 frames each, not 3, 0, 3, 0."""
    alignment = diagonal_attention(20, 30)
    durations, _ = durations_from_alignment(alignment, 60, 30, 3)
    assert (durations[1:-1] == 2).mean() > 0.8, durations


def sounds(rng, count: int, bands: int = 20) -> np.ndarray:
    """count distinct random spectra, one per 'phone'."""
    return rng.normal(size=(count, bands)) * 2


@pytest.mark.parametrize("factor", [1, 2, 3])
def test_dtw_durations_recover_a_known_timing(factor):
    """The target says each of the source's phones for a known number of frames: DTW finds those counts."""
    rng = np.random.default_rng(1)
    phones = sounds(rng, 12)
    src_frames, tgt_frames = rng.integers(1, 4, size=12) * factor, rng.integers(1, 6, size=12)
    source = np.repeat(phones, src_frames, axis=0) + rng.normal(size=(src_frames.sum(), 20)) * 0.05
    target = np.repeat(phones, tgt_frames, axis=0) * 1.5 + 0.3  # another voice: other gain and offset
    durations = durations_from_dtw(source, target, factor, AudioConfig())
    assert durations.shape == (-(-len(source) // factor),)
    assert durations.sum() == len(target)
    # each phone's source steps get its target frames (steps are whole phones: src_frames % factor == 0)
    per_phone = np.add.reduceat(durations, np.concatenate([[0], np.cumsum(src_frames // factor)[:-1]]))
    np.testing.assert_array_equal(per_phone, tgt_frames)


def test_dtw_durations_of_an_odd_source_cover_its_last_step():
    rng = np.random.default_rng(2)
    source = sounds(rng, 7)
    durations = durations_from_dtw(source, np.repeat(source, 2, axis=0), 2, AudioConfig())
    assert durations.shape == (4,) and durations.sum() == 14 and durations[-1] == 2


def test_student_overfits_one_pair():
    """A tiny student reproduces a training pair at its durations and learns them."""
    torch.manual_seed(0)
    src = torch.randn(1, 24, N_MELS)
    src_lens = torch.tensor([24])
    durations = torch.tensor([[2, 1, 3, 0, 2, 2, 1, 3, 2, 1, 2, 2]])
    tgt = torch.randn(1, int(durations.sum()), N_MELS)
    model = tiny_student(encoder_hidden_dim=16, encoder_conv_channels=16, encoder_prenet_dim=16)
    config = type("C", (), {"model": type("M", (), {"duration_loss_weight": 1.0})()})()
    batch = type("Batch", (), {})()
    batch.src, batch.src_lens, batch.tgt, batch.durations = src, src_lens, tgt, durations
    batch.tgt_lens = torch.tensor([tgt.shape[1]])
    spectral = []

    def loss():
        losses = get_kind("nonautoregressive").losses(model, batch, config, step=0)
        spectral.append(losses.spectral.item())
        return losses.total

    fit(model, loss, steps=300, lr=1e-2)
    model.eval()
    assert spectral[-1] < 0.1 * spectral[0]
    free = model.inference(src, src_lens)
    assert free.durations[0].tolist() == durations[0].tolist()
    torch.testing.assert_close(free.after, model(src, src_lens, durations).after)
