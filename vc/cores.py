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
import threading
import time

from vc.errors import VcError

ROUNDS = 4  # alternations of the two ways: a host whose pace drifts slows both alike
TIMEOUT = 300.0  # seconds a process waits for the others (a failed worker breaks the wait)


def _steps(threads: int, rounds: int, seconds: float, start, end, results, index: int) -> None:
    """Worker: in each of ``rounds`` rounds, after ``start`` lets it go, training steps of the probe's
    network for ``seconds``; then its whole steps and the seconds they took."""
    try:
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
        done, took = 0, 0.0
        for _ in range(rounds):
            start.wait(TIMEOUT)
            began = now = time.perf_counter()
            while now < began + seconds:
                step()
                done += 1
                now = time.perf_counter()
            took += now - began
            end.wait(TIMEOUT)
    except BaseException:
        start.abort()  # the others stop waiting for this one
        end.abort()
        raise
    results[2 * index], results[2 * index + 1] = done, took


def _run(seconds: float, rounds: int = ROUNDS) -> list[tuple[int, float]]:
    """(steps, seconds) of the 2-thread process, then of each 1-thread one: the one alone and the two
    together in turn, ``rounds`` times, ``seconds`` in all each way."""
    context = multiprocessing.get_context("spawn")  # fresh interpreters: no forked thread pools
    # Each way's turn: its processes and this one wait at its start, run, and wait at its end.
    alone = (context.Barrier(2), context.Barrier(2))
    together = (context.Barrier(3), context.Barrier(3))
    results = context.Array("d", 6)
    workers = [
        context.Process(target=_steps, args=(threads, rounds, seconds / rounds, *way, results, index))
        for index, (threads, way) in enumerate(((2, alone), (1, together), (1, together)))
    ]
    for worker in workers:
        worker.start()
    try:
        for _ in range(rounds):
            for start, end in (alone, together):
                start.wait(TIMEOUT)
                end.wait(TIMEOUT)
    except threading.BrokenBarrierError:
        for worker in workers:
            worker.terminate()
    for worker in workers:
        worker.join()
    if any(worker.exitcode != 0 for worker in workers):
        raise VcError("the side-by-side probe's worker failed")
    return [(int(results[2 * k]), results[2 * k + 1]) for k in range(3)]


def side_by_side_gain(seconds: float = 4.0) -> dict:
    """Steps of one 2-thread process and of two 1-thread processes at once, each way for ``seconds`` in
    all, in turns, and the gain: what the two did together a second over what the one did (above 1: side
    by side does more work). The ways alternate in short rounds and each process is rated by its whole
    steps over the seconds they took: one 4-second window each way read 1.20-1.88 on one VM in an hour,
    the rounds 1.29-1.59 (docs/ablation.md, "The recognizer's content read once")."""
    if not seconds > 0:
        raise VcError(f"the probe needs a positive number of seconds, got {seconds}")
    (alone, alone_took), *together = _run(seconds)
    rates = [steps / took for steps, took in together]
    return {
        "seconds": seconds,
        "rounds": ROUNDS,
        "alone_2_threads": alone,
        "side_by_side_1_thread": [steps for steps, _ in together],
        "steps_per_second_alone": alone / alone_took,
        "steps_per_second_side_by_side": rates,
        "gain": sum(rates) / (alone / alone_took),
    }
