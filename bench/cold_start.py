"""Section 5: cold start of `vc convert in.wav out.wav` with the bundled model.

What a new user waits for: a new process (`python -m vc.cli`, as the `vc` script runs) converting
a 3 s input with no --checkpoint, from interpreter start to exit. Timed `repeats` times after one
untimed warm-up run (so the OS file cache holds torch, as it does on a second use); the median
and the minimum are reported, and beside them a process that only imports what `vc convert`
imports, to show how much of the wait is Python and torch start-up rather than conversion.

Then the same conversion with `--threads 1` (the default) and `--threads 2`, on the idle machine
and again beside one spinning process per core (a busy machine, as users' often are): the
measurement behind the default.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import soundfile as sf
from benchlib import Setup, list_pairs

INPUT_SECONDS = 3.0
IMPORTS = "import vc.cli, vc.inference, vc.artifacts.pretrained"


def _wall(command: list[str], cwd: str) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - started


def _threads(convert: list[str], cwd: str, threads: int, repeats: int, busy: bool) -> float:
    """Median wall of `convert --threads N`, optionally beside one spinning process per core."""
    spinners = []
    if busy:
        spin = [sys.executable, "-c", "while True: pass"]
        spinners = [subprocess.Popen(spin) for _ in range(os.cpu_count() or 2)]
    try:
        return statistics.median(_wall([*convert, "--threads", str(threads)], cwd) for _ in range(repeats))
    finally:
        for process in spinners:
            process.kill()
            process.wait()


def measure_cold_start(setup: Setup) -> dict:
    from vc.artifacts.pretrained import get_model

    source = list_pairs(setup, "eval", 1)[0].source
    wave, sample_rate = sf.read(source, dtype="float32")
    wave = wave[: int(INPUT_SECONDS * sample_rate)]
    repeats = max(3, setup.sizes.gl_repeats)
    with tempfile.TemporaryDirectory(prefix="vc-cold-") as work:
        sf.write(Path(work) / "in.wav", wave, sample_rate)
        convert = [
            sys.executable,
            "-m",
            "vc.cli",
            "convert",
            "--no-progress",
            "--overwrite",
            "in.wav",
            "out.wav",
        ]
        imports = [sys.executable, "-c", IMPORTS]
        _wall(convert, work)  # warm-up: file cache
        convert_s = [_wall(convert, work) for _ in range(repeats)]
        import_s = [_wall(imports, work) for _ in range(repeats)]
        threads = {
            f"{load}_threads{n}_median_s": _threads(convert, work, n, repeats, busy=load == "busy")
            for load in ("idle", "busy")
            for n in (1, 2)
        }
    return {
        **threads,
        "model": get_model().name,
        "input": f"{Path(source).name}, first {INPUT_SECONDS:g} s",
        "input_seconds": len(wave) / sample_rate,
        "repeats": repeats,
        "convert_median_s": statistics.median(convert_s),
        "convert_min_s": min(convert_s),
        "imports_median_s": statistics.median(import_s),
        "goal_s": 3.0,
    }
