"""How this machine's cores share training work: two 1-thread processes side by side against one 2-thread
process, on a small training step shaped like ours (a convolution, a bidirectional GRU, a projection;
forward, backward and an optimizer step).

    from vc.cores import side_by_side_gain
    gain = side_by_side_gain(seconds=4)["gain"]  # 1.7 on one 2-core VM, 0.9 on another

The recipe trains its attention model beside the converter when the gain is worth it (recipes/vc1/vc.sh,
--side_by_side). Small recurrent networks gain little from a second thread on some CPUs (one process
does nearly as much on one), while on others two processes contend for one core's caches and do less
together than one process on both: only a measurement on the machine tells (docs/ablation.md, "The
main job's time").
"""

from __future__ import annotations

import multiprocessing
import time

from vc.errors import VcError


def _steps(threads: int, seconds: float, barrier, results, index: int) -> None:
    """Worker: training steps of the probe's network done in ``seconds`` after every worker is ready."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(index)
    conv = torch.nn.Conv1d(80, 256, 5, padding=2)
    gru = torch.nn.GRU(256, 128, batch_first=True, bidirectional=True)
    out = torch.nn.Linear(256, 80)
    parameters = [*conv.parameters(), *gru.parameters(), *out.parameters()]
    optimizer = torch.optim.AdamW(parameters, lr=1e-4)
    x = torch.randn(16, 200, 80)  # (batch, frames, mels)

    def step() -> None:
        hidden = torch.relu(conv(x.transpose(1, 2))).transpose(1, 2)
        loss = (out(gru(hidden)[0]) - x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for _ in range(2):  # warm-up: allocations, thread pools
        step()
    barrier.wait()
    done, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        step()
        done += 1
    results[index] = done


def _run(threads: list[int], seconds: float) -> list[int]:
    context = multiprocessing.get_context("spawn")  # fresh interpreters: no forked thread pools
    barrier = context.Barrier(len(threads))
    results = context.Array("i", len(threads))
    workers = [
        context.Process(target=_steps, args=(count, seconds, barrier, results, index))
        for index, count in enumerate(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if any(worker.exitcode != 0 for worker in workers):
        raise VcError("the side-by-side probe's worker failed")
    return list(results)


def side_by_side_gain(seconds: float = 4.0) -> dict:
    """Steps of one 2-thread process in ``seconds``, of two 1-thread processes at once, and the gain:
    what the two did together over what the one did (above 1: side by side does more work)."""
    if not seconds > 0:
        raise VcError(f"the probe needs a positive number of seconds, got {seconds}")
    (alone,) = _run([2], seconds)
    together = _run([1, 1], seconds)
    return {
        "seconds": seconds,
        "alone_2_threads": alone,
        "side_by_side_1_thread": together,
        "gain": sum(together) / max(alone, 1),
    }
