"""vc.model.aligned_source: source frames re-timed by the attention, whole, in order, padding-safe."""

from __future__ import annotations

import torch

from vc.model.aligned_source import aligned_source


def one_hot(positions: list[int], enc_steps: int) -> torch.Tensor:
    """(T_dec, N) alignment that looks at exactly positions[d] at decoder step d."""
    return torch.nn.functional.one_hot(torch.tensor(positions), enc_steps).float()


def test_one_frame_per_step_and_per_annotation_reads_the_frames_looked_at():
    src = torch.randn(1, 6, 4)
    looked_at = [0, 0, 2, 3, 5]
    out = aligned_source(src, torch.tensor([6]), one_hot(looked_at, 6)[None], torch.tensor([6]),
                         torch.tensor([5]), reduction_factor=1, encoder_reduction_factor=1)  # fmt: skip
    torch.testing.assert_close(out[0], src[0, looked_at])


def test_decoder_and_encoder_steps_map_to_their_frames():
    # r = 3 output frames per decoder step, f = 2 source frames per encoder step: decoder step d
    # looking at encoder step 2d sits over source frames 4d .. 4d+1, its centre frame 3d+1 at
    # source position 4d + 0.5; the frames between centres interpolate.
    src = torch.arange(40.0)[None, :, None]
    alignment = one_hot([0, 2, 4, 6], 20)[None]
    out = aligned_source(src, torch.tensor([40]), alignment, torch.tensor([20]), torch.tensor([12]), 3, 2)
    index = out[0, :, 0]
    expected_centres = torch.tensor([0.5, 4.5, 8.5, 12.5]).round()  # half to even, as torch rounds
    torch.testing.assert_close(index[[1, 4, 7, 10]], expected_centres)
    assert (index.diff() >= 0).all() and index[0] == 0 and index[-1] == 12  # the ends hold


def test_output_frames_are_whole_source_frames():
    torch.manual_seed(0)
    src = torch.randn(1, 30, 5)
    alignment = torch.softmax(torch.randn(1, 8, 15) * 3, dim=-1)  # blurred, not one-hot
    out = aligned_source(src, torch.tensor([30]), alignment, torch.tensor([15]), torch.tensor([24]), 3, 2)
    distances = (out[0, :, None] - src[0, None]).abs().amax(dim=-1)  # (24, 30)
    assert (distances.min(dim=1).values == 0).all()  # each output frame is a source frame, not a mix


def test_padding_is_never_read_and_an_item_in_a_batch_gives_what_it_gives_alone():
    torch.manual_seed(1)
    short_src = torch.randn(1, 10, 3)
    short_align = torch.softmax(torch.randn(1, 3, 5), dim=-1)
    alone = aligned_source(
        short_src, torch.tensor([10]), short_align, torch.tensor([5]), torch.tensor([8]), 3, 2
    )
    src = torch.full((2, 16, 3), 1e6)  # padding frames would show as 1e6
    src[0], src[1, :10] = torch.randn(16, 3), short_src[0]
    align = torch.zeros(2, 5, 8)
    align[0] = torch.softmax(torch.randn(5, 8), dim=-1)
    align[1, :3, :5] = short_align[0]
    align[1, 3:, 6] = 1.0  # decoder steps past the item's end: must not count
    out = aligned_source(
        src, torch.tensor([16, 10]), align, torch.tensor([8, 5]), torch.tensor([14, 8]), 3, 2
    )
    assert out.shape == (2, 14, 3)
    torch.testing.assert_close(out[1, :8], alone[0])
    assert (out[1, 8:] == 0).all() and out[0].abs().max() < 1e6
