"""Section 3: training throughput of the default ARCTIC config, one process vs two DDP gloo processes.

Both runs go through the model's training loop (vc.training.trainer.model_loop: its model, optimizer,
losses and, with two processes, its DistributedDataParallel wrapper) and call Loop.train_step on the
same fixed batches of data.batch_size
(32) real training utterances: the length-bucketed batches of BucketBatchSampler's first epoch. Batches 0
and 1 are warm-up (one per rank); the next 2 x S batches are timed: one process runs all of them,
with torch's default threads and again with torch.set_num_threads(1) (what each DDP process gets);
two processes run S each (rank r takes every other one) with torch.set_num_threads(1)
each. Throughput = target frames of the timed batches / wall time.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp
from benchlib import Setup, list_pairs, peak_rss_mb
from profiles import profiled

WARMUP_BATCHES = 2  # batch r warms up rank r


def list_paths(setup: Setup) -> tuple[Path, Path]:
    folder = Path(setup.work_dir) / "train_lists"
    return folder / "train.tsv", folder / "dev.tsv"


def write_lists(setup: Setup) -> None:
    """A training list with just the pairs the fixed batches need, and a 4-pair dev list."""
    from vc.config import load_config
    from vc.pairs import write_pair_list

    train, dev = list_paths(setup)
    batch_size = load_config(setup.config).data.batch_size
    needed = (WARMUP_BATCHES + 2 * setup.sizes.train_steps) * batch_size
    write_pair_list(train, list_pairs(setup, "train", needed))
    write_pair_list(dev, list_pairs(setup, "dev", 4))


def fixed_batches(job, count: int) -> list[list[int]]:
    """The first ``count`` batches of the training sampler's first epoch (dataset indices)."""
    from vc.training.data import BucketBatchSampler

    sampler = BucketBatchSampler(job.train_set.lengths(), job.config.data.batch_size, job.config.train.seed)
    batches = sampler.epoch_batches(0)
    if len(batches) < count:
        raise RuntimeError(f"need {count} batches, the training list gives {len(batches)}")
    return batches[:count]


def sync(name: str, rank: int, processes: int, ddp: bool, out_dir: str) -> None:
    """Wait for every process: dist.barrier under DDP, marker files for independent processes."""
    if processes == 1:
        return
    if ddp:
        from torch import distributed as dist

        dist.barrier()
        return
    folder = Path(out_dir)
    (folder / f"{name}.{rank}").touch()
    while not all((folder / f"{name}.{r}").exists() for r in range(processes)):
        time.sleep(0.005)


def worker(rank: int, processes: int, threads: int, ddp: bool, setup: Setup, port: int, out_dir: str) -> None:
    """One training process: build the model's training loop, warm up, time its share of the batches.

    With ``ddp`` the processes form one DDP gloo job; without, each is an independent
    single-process run (a check of how two processes share this machine).
    """
    from vc.config import load_config
    from vc.training.data import collate
    from vc.training.trainer import model_loop

    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(processes if ddp else 1),
        LOCAL_RANK=str(rank),
    )
    if threads:
        torch.set_num_threads(threads)
    train_list, dev_list = list_paths(setup)
    config = load_config(
        setup.config,
        [
            f"data.train_list={train_list}",
            f"data.dev_list={dev_list}",
            f"data.cache_dir={Path(setup.work_dir) / 'features'}",
        ],
    )
    loop = model_loop(config, Path(out_dir) / f"exp_rank{rank}", progress=False)
    steps = setup.sizes.train_steps
    batches = fixed_batches(loop.job, WARMUP_BATCHES + 2 * steps)
    mine = batches[WARMUP_BATCHES + rank :: processes]
    data = loop.job.train_set

    def step(indices: list[int]) -> dict[str, float]:
        return loop.train_step(loop.job.prepare(collate([data[i] for i in indices])))

    step(batches[rank])
    sync("start", rank, processes, ddp, out_dir)
    start = time.perf_counter()
    losses = [step(b)["loss/total"] for b in mine]
    sync("end", rank, processes, ddp, out_dir)
    wall = time.perf_counter() - start
    frames = sum(int(data[i][2].shape[0]) for b in mine for i in b)
    result = {
        "rank": rank,
        "steps": len(mine),
        "batch_size": len(mine[0]),
        "seconds": wall,
        "target_frames": frames,
        "utterances": sum(len(b) for b in mine),
        "threads": torch.get_num_threads(),
        "last_loss": losses[-1],
        "peak_rss_mb": peak_rss_mb(),
    }
    # One more step (every rank takes part: DDP all-reduces) under torch.profiler, after the timing.
    result["profile"] = profiled(lambda: step(mine[0]))
    result["profile"]["what"] = (
        f"one train_step, process {rank} of {processes}, {torch.get_num_threads()} thread(s)"
    )
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(result))
    loop.job.close()
    if ddp and processes > 1:
        from torch import distributed as dist

        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(setup: Setup, processes: int, threads: int = 0, ddp: bool = True) -> dict:
    """Spawn ``processes`` training processes (``threads`` torch threads each, 0 = torch's default;
    one DDP job, or independent ones) and combine what they measured."""
    out_dir = Path(setup.work_dir) / f"train_p{processes}_t{threads}_{'ddp' if ddp else 'independent'}"
    out_dir.mkdir(parents=True, exist_ok=True)
    args = (processes, threads, ddp, setup, free_port(), str(out_dir))
    mp.spawn(worker, args=args, nprocs=processes, join=True)
    ranks = [json.loads((out_dir / f"rank{r}.json").read_text()) for r in range(processes)]
    wall = max(r["seconds"] for r in ranks)
    frames = sum(r["target_frames"] for r in ranks)
    steps = sum(r["steps"] for r in ranks)
    return {
        "processes": processes,
        "ddp": ddp and processes > 1,
        "threads_per_process": ranks[0]["threads"],
        "batch_size_per_process": ranks[0]["batch_size"],
        "timed_batches": steps,
        "seconds": wall,
        "target_frames": frames,
        "frames_per_second": frames / wall,
        "utterances_per_second": sum(r["utterances"] for r in ranks) / wall,
        "seconds_per_batch": wall * processes / steps,
        "peak_rss_mb_per_process": [r["peak_rss_mb"] for r in ranks],
        "peak_rss_mb_total": sum(r["peak_rss_mb"] for r in ranks),
        "ranks": ranks,
    }


def measure_training(setup: Setup) -> dict:
    """One process first (it also computes the feature cache the others read), the same with one
    thread (what each DDP process gets), two DDP processes with one thread each, and two
    independent one-thread processes on different batches (no DDP: what the machine itself gives)."""
    write_lists(setup)
    single = run(setup, 1)
    single_1thread = run(setup, 1, threads=1)
    ddp = run(setup, 2, threads=1)
    independent = run(setup, 2, threads=1, ddp=False)
    return {
        "config": Path(setup.config).name,
        "steps_per_rank": setup.sizes.train_steps,
        "single": single,
        "single_1thread": single_1thread,
        "ddp2": ddp,
        "independent2": independent,
        "speedup": ddp["frames_per_second"] / single["frames_per_second"],
    }
