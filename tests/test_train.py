"""Trainer behaviour on a tiny model and synthetic audio: logging, resume, crash safety."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.helpers import tiny_training_config
from vc.artifacts.checkpoint import load_checkpoint, save_checkpoint, step_checkpoints
from vc.cli import main
from vc.config import Config, dump_config
from vc.errors import CheckpointError, TrainingError
from vc.training.trainer import learning_rate_factor, model_loop, train


def test_training_logs_alignment_figures_evolution_and_scalars(tmp_path):
    config = tiny_training_config(tmp_path)
    out = tmp_path / "exp"
    (tmp_path / "config.yaml").write_text(dump_config(config))
    assert main(["train", "--config", str(tmp_path / "config.yaml"), "--out", str(out), "--no-progress"]) == 0
    assert (out / "checkpoints" / "best.pt").is_file()
    # The source speaker's codebook travels with the model, for warping other voices at conversion.
    stats = load_checkpoint(out / "checkpoints" / "best.pt")["stats"]
    codebook = stats["source_codebook"]["centroids"]
    assert len(codebook) > 0 and len(codebook[0]) == config.audio.n_mels
    # ... and how far its utterances stray from its mean, for inference.source_normalization auto
    assert stats["source"]["utterance_spread"] > 0
    log = (out / "train.log").read_text()
    assert "step 3: focus rate" in log and "step 6: focus rate" in log
    events = EventAccumulator(str(out / "tensorboard"), size_guidance={"images": 0, "scalars": 0}).Reload()
    scalars, images = events.Tags()["scalars"], events.Tags()["images"]
    for tag in (
        "valid/align/focus_rate",
        "valid/align/diagonal",
        "train/loss/total",
        "train/opt/lr",
        "train/opt/grad_norm",
        "valid/loss/total",
    ):
        assert tag in scalars, tag
    assert [e.step for e in events.Scalars("valid/align/diagonal")] == [3, 6]
    for utt in ("utt4", "utt5"):
        for group in ("alignment", "alignment_teacher_forced", "evolution", "mel", "stop"):
            assert f"valid/{group}/{utt}" in images, (group, utt)
        assert f"valid/audio/{utt}" in events.Tags()["audio"]
        assert (out / "alignments" / f"{utt}_evolution.png").is_file()
        assert len(list((out / "alignments" / utt).glob("step*.npy"))) == 2


def _final_weights(out: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(step_checkpoints(out / "checkpoints")[-1])["model"]


def test_resume_ends_with_the_same_weights_as_an_uninterrupted_run(tmp_path):
    config = tiny_training_config(tmp_path)
    config.model = dataclasses.replace(config.model, decoder_prenet_dropout=0.5, encoder_dropout=0.1)
    # The half run below ends by a smaller step budget; a linear decay would follow that budget, so the
    # schedule here is one that does not read it.
    config.train = dataclasses.replace(config.train, decay="noam")
    train(config, tmp_path / "straight", progress=False)

    half = dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=3))
    train(half, tmp_path / "resumed", progress=False)
    assert step_checkpoints(tmp_path / "resumed" / "checkpoints")[-1].name == "step0000003.pt"
    train(config, tmp_path / "resumed", resume=True, progress=False)

    straight, resumed = _final_weights(tmp_path / "straight"), _final_weights(tmp_path / "resumed")
    assert straight.keys() == resumed.keys()
    for name in straight:
        torch.testing.assert_close(resumed[name], straight[name], rtol=0, atol=0, msg=name)
    # and the resumed run really trained: its weights moved away from the step-3 checkpoint
    moved = load_checkpoint(tmp_path / "resumed" / "checkpoints" / "step0000003.pt")
    assert moved["step"] == 3
    assert any(not torch.equal(moved["model"][n], resumed[n]) for n in resumed)


def test_resume_reads_checkpoints_onto_the_cpu(tmp_path, monkeypatch):
    """The RNG states must stay on the CPU (numpy and torch.set_rng_state take no CUDA tensor: --resume
    on a GPU failed so); load_state_dict copies the weights and optimizer state to the model's device."""
    config = tiny_training_config(tmp_path)
    train(config, tmp_path / "exp", progress=False)
    seen = []

    def recording(path, map_location="cpu", **options):
        seen.append(map_location)
        return load_checkpoint(path, map_location=map_location, **options)

    monkeypatch.setattr("vc.training.loop.load_checkpoint", recording)
    model_loop(config, tmp_path / "exp", resume=True, progress=False).job.close()
    assert seen == ["cpu"]


def test_a_new_run_never_writes_over_an_earlier_runs_checkpoints(tmp_path):
    """Without --resume a second run into the same folder wrote its step 3 over the first run's and its
    best.pt over the first run's best (and pruning keeps the highest step numbers: the old ones)."""
    config = tiny_training_config(tmp_path)
    train(config, tmp_path / "exp", progress=False)
    folder = tmp_path / "exp" / "checkpoints"
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    with pytest.raises(CheckpointError, match="earlier run's checkpoints .*--resume continues it"):
        train(config, tmp_path / "exp", progress=False)
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before


def test_resume_without_a_checkpoint_is_a_clear_error(tmp_path):
    config = tiny_training_config(tmp_path)
    with pytest.raises(CheckpointError, match="no stepNNNNNNN.pt checkpoint"):
        model_loop(config, tmp_path / "empty", resume=True, progress=False)


def test_init_from_starts_at_step_0_from_another_runs_weights(tmp_path):
    config = tiny_training_config(tmp_path)
    train(config, tmp_path / "first", progress=False)
    start = tmp_path / "first" / "checkpoints" / "step0000006.pt"
    tuned = dataclasses.replace(config, train=dataclasses.replace(config.train, init_from=str(start)))
    loop = model_loop(tuned, tmp_path / "tuned", progress=False)
    assert loop.step == 0
    weights = load_checkpoint(start)["model"]
    for name, value in loop.job.model.state_dict().items():
        assert torch.equal(value, weights[name]), name
    fresh = model_loop(config, tmp_path / "fresh", progress=False).job.model.state_dict()
    assert any(not torch.equal(fresh[n], weights[n]) for n in weights)


def test_init_from_a_checkpoint_of_another_model_shape_is_a_clear_error(tmp_path):
    config = tiny_training_config(tmp_path)
    train(config, tmp_path / "first", progress=False)
    start = tmp_path / "first" / "checkpoints" / "step0000006.pt"
    other = dataclasses.replace(config.model, decoder_rnn_dim=config.model.decoder_rnn_dim * 2)
    tuned = dataclasses.replace(
        config, model=other, train=dataclasses.replace(config.train, init_from=str(start))
    )
    with pytest.raises(CheckpointError, match="train.init_from .* does not fit this config's model"):
        model_loop(tuned, tmp_path / "tuned", progress=False)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "foreign", "folder", "missing"])
def test_damaged_checkpoints_are_one_line_errors(tmp_path, damage):
    good = tmp_path / "good.pt"
    save_checkpoint(good, {"step": 1, "model": {"w": torch.ones(1000)}, "config": {}, "stats": {}})
    path = tmp_path / "bad.pt"
    if damage == "truncated":
        path.write_bytes(good.read_bytes()[:500])
    elif damage == "garbage":
        path.write_bytes(os.urandom(2000))
    elif damage == "foreign":
        torch.save({"state_dict": {"w": torch.ones(3)}}, path)
    elif damage == "folder":
        path.mkdir()
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


KILL_SCRIPT = """
import sys, torch
from vc.artifacts.checkpoint import save_checkpoint
path = sys.argv[1]
big = {"w": torch.randn(20_000_000)}
print("ready", flush=True)
while True:
    save_checkpoint(path, {"step": 2, "model": big, "config": {}, "stats": {}})
"""


def test_a_write_killed_midway_leaves_the_previous_checkpoint_loadable(tmp_path):
    path = tmp_path / "last.pt"
    save_checkpoint(path, {"step": 1, "model": {"w": torch.zeros(3)}, "config": {}, "stats": {}})
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    # kill while the 80 MB payload is being written (before the first rename can happen)
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob(".last.pt.*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert list(tmp_path.glob(".last.pt.*.tmp")), "the writer never started a temp file"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    payload = load_checkpoint(path)
    assert payload["step"] in (1, 2)  # the old file or a complete new one, never half of one
    if payload["step"] == 2:
        assert payload["model"]["w"].numel() == 20_000_000


def _spawn(target, arg_lists: list[tuple]) -> None:
    """Run target(*args) in fresh processes (one per arg tuple) and require a clean exit."""
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=target, args=args) for args in arg_lists]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
        assert proc.exitcode == 0, f"a worker exited with {proc.exitcode}"


def _ddp_worker(rank: int, world_size: int, port: int, config: Config, out: str) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
    )
    torch.set_num_threads(1)
    loop = model_loop(config, out, progress=False)
    loop.run()
    # Parameters, not buffers: DDP broadcasts batch-norm running statistics from
    # rank 0 at each forward, so after the last step each rank holds its own.
    torch.save(dict(loop.job.model.named_parameters()), Path(out) / f"weights_rank{rank}.pt")
    loop.job.close()
    torch.distributed.destroy_process_group()


def test_ddp_two_gloo_processes_end_with_identical_weights(tmp_path):
    config = tiny_training_config(tmp_path)
    config.train = dataclasses.replace(config.train, max_steps=3, eval_every=100)
    out = tmp_path / "ddp"
    _spawn(_ddp_worker, [(r, 2, 29500 + os.getpid() % 1000, config, str(out)) for r in range(2)])
    results = [torch.load(out / f"weights_rank{r}.pt") for r in range(2)]
    for name in results[0]:
        torch.testing.assert_close(results[0][name], results[1][name], rtol=0, atol=0, msg=name)
    start = dict(model_loop(config, tmp_path / "fresh", progress=False).job.model.named_parameters())
    assert any(not torch.equal(start[n], results[0][n]) for n in start)


def _equal_length_batch():
    generator = torch.Generator().manual_seed(3)
    src, tgt = torch.randn(4, 10, 6, generator=generator), torch.randn(4, 8, 6, generator=generator)
    return src, torch.full((4,), 10), tgt, torch.full((4,), 8)


def _gradients(model, src, src_lens, tgt, tgt_lens) -> dict[str, torch.Tensor]:
    from vc.kinds.losses import compute_losses

    out = model(src, src_lens, tgt, tgt_lens)
    compute_losses(out, tgt, tgt_lens, 2, 5.0, 0.4, 1.0).total.backward()
    module = getattr(model, "module", model)
    return {n: p.grad.clone() for n, p in module.named_parameters()}


def _ddp_gradient_worker(rank: int, port: int, out: str) -> None:
    from tests.test_model import tiny_model

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.distributed.init_process_group("gloo", rank=rank, world_size=2)
    model = torch.nn.parallel.DistributedDataParallel(tiny_model())  # eval mode: see the test's docstring
    src, src_lens, tgt, tgt_lens = _equal_length_batch()
    half = slice(2 * rank, 2 * rank + 2)
    torch.save(
        _gradients(model, src[half], src_lens[half], tgt[half], tgt_lens[half]), f"{out}/grad{rank}.pt"
    )
    # Teardown aborted a worker twice in CI ("terminate called without an active exception",
    # torch 2.14.1 and 2.13.0; never in 70 local runs): gloo's C++ threads died in whatever
    # order interpreter exit freed them. So tear down in a fixed order: the DDP reducer (it
    # holds the group) first, then the group once both ranks are done, then leave without
    # the finalizers. The results are on disk and the test checks them.
    del model
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    os._exit(0)


def test_ddp_gradient_equals_the_single_process_gradient_of_the_combined_batch(tmp_path):
    """Two gloo ranks, each on half a batch of equal lengths (so per-rank means average to
    the combined mean). Batch norm runs in eval mode: in train mode each rank would
    normalise with its own half's statistics, which is what DDP without SyncBatchNorm does."""
    from tests.test_model import tiny_model

    _spawn(_ddp_gradient_worker, [(r, 30500 + os.getpid() % 1000, str(tmp_path)) for r in range(2)])
    results = [torch.load(tmp_path / f"grad{r}.pt") for r in range(2)]
    single = _gradients(tiny_model(), *_equal_length_batch())
    for name, grad in single.items():
        torch.testing.assert_close(results[0][name], grad, atol=1e-6, rtol=1e-5, msg=name)
        torch.testing.assert_close(results[1][name], grad, atol=1e-6, rtol=1e-5, msg=name)


def test_resume_falls_back_past_a_damaged_newest_checkpoint_and_keeps_it(tmp_path, caplog):
    config = tiny_training_config(tmp_path)
    train(config, tmp_path / "exp", progress=False)
    folder = tmp_path / "exp" / "checkpoints"
    newest = step_checkpoints(folder)[-1]
    assert newest.name == "step0000006.pt"
    damaged = newest.read_bytes()[:700]
    newest.write_bytes(damaged)  # a disk that filled mid-copy
    with caplog.at_level("WARNING", logger="vc.training.loop"):
        loop = model_loop(config, tmp_path / "exp", resume=True, progress=False)
    loop.job.close()
    assert loop.step == 3
    assert (
        "skipping damaged step0000006.pt" in caplog.text and "kept as step0000006.pt.damaged" in caplog.text
    )
    assert (folder / "step0000006.pt.damaged").read_bytes() == damaged  # never deleted
    for path in step_checkpoints(folder):
        path.write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="every checkpoint in .* is damaged"):
        model_loop(config, tmp_path / "exp", resume=True, progress=False)


def test_training_progress_in_a_log_is_plain_lines(tmp_path, caplog, capsys, monkeypatch):
    monkeypatch.delenv("VC_PROGRESS", raising=False)
    config = tiny_training_config(tmp_path)
    with caplog.at_level("INFO"):
        train(config, tmp_path / "exp", progress=True)
    assert "\r" not in capsys.readouterr().err
    assert "training: done 6/6 step (100%)" in caplog.text, caplog.text


def test_train_frees_only_a_process_group_it_created(tmp_path):
    """A caller's own group (a notebook, a launcher) outlives train(); train() frees only its own."""
    store = torch.distributed.FileStore(str(tmp_path / "store"), 1)
    torch.distributed.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        train(tiny_training_config(tmp_path), tmp_path / "exp", progress=False)
        assert torch.distributed.is_initialized()
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def test_a_many_voice_list_keeps_the_source_speakers_statistics_and_codebook(tmp_path):
    """data.stats_list: other voices in the training list do not move the statistics or the warp
    codebook, which describe the source speaker that conversion warps and normalises inputs toward."""
    config = tiny_training_config(tmp_path)
    speaker = (tmp_path / "train.tsv").read_text()
    other = "".join(f"other{k}\ttgt{k}.wav\ttgt{k}.wav\n" for k in range(4))  # a voice a fifth higher
    (tmp_path / "many.tsv").write_text(speaker + other)
    many = f"data.train_list={tmp_path / 'many.tsv'}"
    found = {}
    for name, overrides in {
        "speaker only": [],
        "many, stats_list": [many, f"data.stats_list={tmp_path / 'train.tsv'}"],
        "many": [many],
    }.items():
        loop = model_loop(config.with_overrides(overrides), tmp_path / name, progress=False)
        assert len(loop.job.train_set) == (8 if overrides else 4)
        found[name] = (loop.job.src_stats.mean, loop.job.source_codebook.centroids)
        loop.job.close()
    for ours, theirs in zip(found["many, stats_list"], found["speaker only"], strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert not np.allclose(found["many"][0], found["speaker only"][0], atol=1e-3)


def test_linear_decay_falls_to_zero_at_the_end_of_the_budget():
    assert learning_rate_factor(0, 2, "linear", budget_spent=0.0) == pytest.approx(0.5)  # warmup
    assert learning_rate_factor(10, 2, "linear", budget_spent=0.25) == pytest.approx(0.75)
    assert learning_rate_factor(10, 2, "linear", budget_spent=1.0) == 0.0
    assert learning_rate_factor(10, 2, "noam", budget_spent=0.9) == pytest.approx((2 / 11) ** 0.5)


def test_linear_decay_follows_the_steps_in_a_run(tmp_path):
    config = tiny_training_config(tmp_path, decay="linear", learning_rate=0.01)
    train(config, tmp_path / "exp", progress=False)
    events = EventAccumulator(str(tmp_path / "exp" / "tensorboard"), size_guidance={"scalars": 0}).Reload()
    lrs = {e.step: e.value for e in events.Scalars("train/opt/lr")}
    # after the 2 warmup steps the rate falls by the same amount every step, toward 0 at step 6
    after = [lrs[step] for step in range(2, 7)]
    assert after == pytest.approx([0.01 * (1 - (step - 1) / 6) for step in range(2, 7)])


def test_a_time_budget_sets_the_spent_fraction_and_ends_training(tmp_path):
    config = tiny_training_config(tmp_path, max_minutes=1.0)
    config.train = dataclasses.replace(config.train, max_steps=1000)
    loop = model_loop(config, tmp_path / "exp", progress=False)
    loop.started = time.monotonic() - 30
    assert not loop._should_stop() and loop.spent == pytest.approx(0.5, abs=0.01)
    loop.started -= 31
    assert loop._should_stop() and loop.spent == 1.0
    loop.job.close()


def test_a_stop_file_ends_training_as_its_budget_would(tmp_path):
    """vc train --stop-file: once the file is there training ends at the next step, evaluated and saved
    (the recipe's side lane stops the attention model this way); the budget's fraction stays where it was."""
    config = tiny_training_config(tmp_path)
    config.train = dataclasses.replace(config.train, max_steps=1000, max_minutes=0.0)
    (tmp_path / "config.yaml").write_text(dump_config(config))
    stop, out = tmp_path / "stop", tmp_path / "exp"
    loop = model_loop(config, tmp_path / "probe", progress=False, stop_file=stop)
    assert not loop._should_stop()
    stop.touch()
    assert loop._should_stop() and loop.spent == 0.0
    loop.job.close()
    command = ["train", "--config", str(tmp_path / "config.yaml"), "--out", str(out), "--no-progress"]
    assert main([*command, "--stop-file", str(stop)]) == 0
    assert f"0 steps in 0.0 min, ended by the stop file {stop}" in (out / "train.log").read_text()
    assert (out / "checkpoints" / "best.pt").is_file()


def test_the_loop_refuses_networks_that_are_not_on_its_device():
    """A job whose network stayed on the CPU while the loop runs on a GPU trained on the CPU unnoticed
    (the post-filter did, on a lent H200): the loop says so before the first step."""
    from vc.training.loop import Job, Loop

    class Stray(Job):
        def __init__(self):
            self.net = torch.nn.Linear(2, 2)
            self.optimizers = {"model": torch.optim.SGD(self.net.parameters(), lr=0.1)}
            self.grad_clip = {"model": None}

        def networks(self):
            return {"model": self.net}

    with pytest.raises(TrainingError, match="'model' is on cpu, the loop runs on meta"):
        Loop(Stray(), device=torch.device("meta"))
    Loop(Stray(), device=torch.device("cpu"))  # where it is: fine
