"""The frame-wise converter: one output frame per source frame, trained on the target warped onto the
source's timeline; its teacher-forced output warped back onto the target's."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
import torch

from tests.helpers import teacher_forced_training_pairs, tiny_config, tiny_training_config
from vc import Converter
from vc.artifacts.checkpoint import load_checkpoint
from vc.audio import read_audio
from vc.cli import main
from vc.config import InferenceConfig, dump_config
from vc.kinds.framewise import source_on_target, target_on_source
from vc.model.framewise import FrameWiseOutput, FrameWiseVC, resample_frames, source_durations
from vc.pairs import read_pair_list


def numbered(lens: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T, 1) frames whose value is their index (+1, so padding's 0 is told apart), and the lengths."""
    frames = torch.zeros(len(lens), max(lens), 1)
    for b, n in enumerate(lens):
        frames[b, :n, 0] = torch.arange(1, n + 1)
    return frames, torch.tensor(lens)


def test_source_durations_sum_to_each_length():
    durations = source_durations(torch.tensor([5, 4, 1]), 3, 2)
    assert durations.tolist() == [[2, 2, 1], [2, 2, 0], [1, 0, 0]]


def test_the_target_is_read_at_the_same_place_inside_each_step():
    # 6 source frames in steps of 2; the target's 7 frames: 4 for step 0, 1 for step 1, 2 for step 2
    tgt, tgt_lens = numbered([7])
    durations = torch.tensor([[4, 1, 2]])  # sums to 7
    warped = target_on_source(tgt, tgt_lens, durations, torch.tensor([6]), 2)
    # step 0 (target 1..4): places 0.25, 0.75 of 4 -> frames 1, 3 (0-based) -> values 2, 4
    # step 1 (target 5): both source frames read it -> 5, 5; step 2 (target 6, 7) -> 6, 7
    assert warped[0, :, 0].tolist() == [2, 4, 5, 5, 6, 7]


def test_a_step_without_target_frames_reads_the_next_one_and_padding_stays_zero():
    tgt, tgt_lens = numbered([3, 2])
    durations = torch.tensor([[2, 0, 1], [2, 0, 0]])
    src_lens = torch.tensor([6, 3])
    warped = target_on_source(tgt, tgt_lens, durations, src_lens, 2)
    assert warped[0, :, 0].tolist() == [1, 2, 3, 3, 3, 3]
    # the second row: 3 source frames (the last step holds one), the target's last frame past its end
    assert warped[1, :, 0].tolist() == [1, 2, 2, 0, 0, 0]


def test_identity_durations_warp_nothing_either_way():
    frames, lens = numbered([6, 5])
    durations = source_durations(lens, 3, 2)
    assert torch.equal(target_on_source(frames, lens, durations, lens, 2), frames)
    alignments = torch.nn.functional.one_hot(torch.arange(6) // 2, 3).float()[None].repeat(2, 1, 1)
    output = FrameWiseOutput(frames, frames, alignments, lens, torch.tensor([3, 3]))
    back = source_on_target(output, durations, lens, lens, 2)
    assert torch.equal(back.after, frames) and back.lens.tolist() == [6, 5]


def test_the_output_is_warped_onto_a_slower_target():
    frames, src_lens = numbered([4])
    durations = torch.tensor([[4, 2]])  # target 6 frames: step 0 stretched to 4, step 1 kept at 2
    alignments = torch.nn.functional.one_hot(torch.arange(4) // 2, 2).float()[None]
    output = FrameWiseOutput(frames, frames, alignments, src_lens, torch.tensor([2]))
    back = source_on_target(output, durations, src_lens, torch.tensor([6]), 2)
    assert back.after[0, :, 0].tolist() == [1, 1, 2, 2, 3, 4]
    assert back.alignments[0].argmax(dim=1).tolist() == [0, 0, 0, 0, 1, 1]


def test_resampling_keeps_whole_frames():
    frames, lens = numbered([6, 3])
    same, same_lens = resample_frames(frames, lens, 1.0)
    assert same is frames and same_lens is lens
    faster, faster_lens = resample_frames(frames, lens, 2.0)
    assert faster_lens.tolist() == [3, 2] and faster[0, :, 0].tolist() == [2, 4, 6]
    assert faster[1, :, 0].tolist() == [2, 3, 0]
    slower, slower_lens = resample_frames(frames, lens, 0.5)
    assert slower_lens.tolist() == [12, 6] and slower[0, :4, 0].tolist() == [1, 1, 2, 2]


def test_one_output_frame_per_source_frame_and_a_padded_item_computes_as_alone():
    torch.manual_seed(0)
    model = FrameWiseVC(8, tiny_config("framewise")).eval()
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


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(folder, config, experiment): DTW durations and a tiny frame-wise converter trained on them."""
    tmp = tmp_path_factory.mktemp("framewise")
    config = tiny_training_config(tmp)
    config = config.with_overrides(
        ["model.kind=framewise", "model.parallel_decoder_layers=2", "model.parallel_decoder_channels=8",
         "model.parallel_decoder_kernel=3", f"data.durations={tmp / 'durations.pt'}"]
    )  # fmt: skip
    (tmp / "framewise.yaml").write_text(dump_config(config))
    args = ["durations", "--dtw", "--config", str(tmp / "framewise.yaml"), "--no-progress"]
    args += ["--features-dir", config.data.cache_dir, "--out", str(tmp / "durations.pt")]
    assert main([*args, config.data.train_list, config.data.dev_list]) == 0
    exp = tmp / "exp"
    assert main(["train", "--config", str(tmp / "framewise.yaml"), "--out", str(exp), "--no-progress"]) == 0
    return tmp, config, exp


def test_it_trains_and_its_checkpoint_holds_no_duration_predictor(trained):
    _, config, exp = trained
    payload = load_checkpoint(exp / "checkpoints" / "best.pt")
    assert payload["config"]["model"]["kind"] == "framewise"
    assert not any(name.startswith("duration_predictor") for name in payload["model"])
    log = (exp / "train.log").read_text()
    assert f"step {config.train.max_steps}" in log


def test_vc_convert_keeps_the_source_length_and_speed_shortens_it(trained, tmp_path):
    tmp, config, exp = trained
    first = str(read_pair_list(config.data.train_list)[0].source)
    converter = Converter.from_checkpoint(exp / "checkpoints" / "best.pt", mel2linear=False)
    result = converter.convert_file(first)
    wave = torch.from_numpy(read_audio(first, config.audio))[None]
    _, src_lens = converter.features(wave, torch.tensor([wave.shape[1]]))
    assert result.mel.shape[0] == int(src_lens[0])
    assert result.alignment.argmax(axis=1).tolist() == [i // 2 for i in range(int(src_lens[0]))]
    faster = converter.with_options(speed=2.0).convert_file(first)
    assert abs(faster.mel.shape[0] - round(result.mel.shape[0] / 2)) <= 1
    out = tmp_path / "out.wav"
    assert main(["convert", "--checkpoint", str(exp / "checkpoints" / "best.pt"), first, str(out)]) == 0
    assert np.isfinite(sf.read(out)[0]).all()


def test_teacher_forcing_pairs_the_output_with_the_target_frames(trained, tmp_path):
    _, config, exp = trained
    outputs, targets, _ = teacher_forced_training_pairs(config, exp / "checkpoints" / "best.pt")
    assert [len(mel) for mel, _ in outputs] == [len(t) for t in targets]
    assert all(torch.isfinite(mel).all() for mel, _ in outputs)
    out = tmp_path / "mel2linear.pt"
    args = ["mel2linear-train", config.data.train_list, "--checkpoint", str(exp / "checkpoints" / "best.pt")]
    args += ["--config", str(exp / "config.yaml"), "--out", str(out), "--max-steps", "2", "--no-progress"]
    assert main(args) == 0 and out.exists()
