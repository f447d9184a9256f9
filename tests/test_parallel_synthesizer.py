"""The parallel synthesizer (the recognition-synthesis converter's model.decoder parallel): one output frame
per input frame; inference.speed resamples whole frames."""

from __future__ import annotations

import torch

from tests.helpers import tiny_config
from vc.model.parallel_synthesizer import ParallelSynthesizer, resample_frames, source_durations
from vc.settings.inference import InferenceConfig


def numbered(lens: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T, 1) frames whose value is their index (+1, so padding's 0 is told apart), and the lengths."""
    frames = torch.zeros(len(lens), max(lens), 1)
    for b, n in enumerate(lens):
        frames[b, :n, 0] = torch.arange(1, n + 1)
    return frames, torch.tensor(lens)


def test_source_durations_sum_to_each_length():
    durations = source_durations(torch.tensor([5, 4, 1]), 3, 2)
    assert durations.tolist() == [[2, 2, 1], [2, 2, 0], [1, 0, 0]]


def test_resampling_keeps_whole_frames():
    frames, lens = numbered([6, 3])
    same, same_lens = resample_frames(frames, lens, 1.0)
    assert same is frames and same_lens is lens
    faster, faster_lens = resample_frames(frames, lens, 2.0)
    assert faster_lens.tolist() == [3, 2] and faster[0, :, 0].tolist() == [2, 4, 6]
    assert faster[1, :, 0].tolist() == [2, 3, 0]
    slower, slower_lens = resample_frames(frames, lens, 0.5)
    assert slower_lens.tolist() == [12, 6] and slower[0, :4, 0].tolist() == [1, 1, 2, 2]


def test_one_output_frame_per_input_frame_and_a_padded_item_computes_as_alone():
    torch.manual_seed(0)
    model = ParallelSynthesizer(8, tiny_config("recognition_synthesis")).eval()
    src = torch.randn(2, 9, 8)
    lens = torch.tensor([9, 5])
    out = model.inference(src, lens, InferenceConfig())
    assert out.after.shape == (2, 9, 8) and out.lens.tolist() == [9, 5]
    assert torch.all(out.after[1, 5:] == 0)
    alone = model.inference(src[1:, :5], lens[1:], InferenceConfig())
    torch.testing.assert_close(out.after[1, :5], alone.after[0], rtol=1e-4, atol=1e-5)
    assert out.alignments[0].argmax(dim=1).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4]
    faster = model.inference(src, lens, InferenceConfig(speed=1.5))
    assert faster.lens.tolist() == [6, 3] and faster.alignments.shape[1] == 6
