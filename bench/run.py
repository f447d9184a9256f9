"""CPU benchmark of vc: conversion speed, Griffin-Lim, training throughput, cold start, the vocoders.

    python bench/run.py [--quick] [--json OUT.json] [--checkpoint best.pt] [--db_root DIR]

Prints a table and writes every number to JSON (default bench/out/results.json, which git ignores;
the committed reference results are bench/results.json). Data: the local CMU ARCTIC copy
(../shared/data/cmu_arctic, --db_root), split by the recipe's data_prep.py; the eval sources are bdl
arctic_b0440... Model: --checkpoint (an attention model or a non-autoregressive converter), else the
newest averaged.pt or best.pt of any recipe experiment (egs/*/vc1/exp/*/..., whatever its --tag); the
table says which. With neither, the convert section refuses to run unless --untrained asks for an
UNTRAINED model from egs/arctic/vc1/conf/default.yaml: its stop token is random, so it decodes exactly
1.0 x the source frames (inference.min_ratio = max_ratio = 1.0). Every measurement runs in a fresh
process, so its peak memory (getrusage ru_maxrss) is its own, and the CPU time other processes take
meanwhile (/proc/stat minus our own getrusage) is reported: on a shared machine a run is only clean
when that background load is about 0 %.

1. `vc convert` real-time factor = processing time / input audio duration (after trimming), at
   batch 1 (`vc convert IN OUT`) and batch 8 (length-sorted, as `vc convert --out-dir`): the real
   Converter.convert_batch, split into features / encoder / durations / decoder / postnet /
   post-filter / vocoder by its torch.profiler labels (bench/convert_rtf.py).
2. Griffin-Lim: vc.vocoders.griffin_lim.griffin_lim vs librosa.griffinlim (item by item and stacked) and
   torchaudio.transforms.GriffinLim if importable; n_iter=32, momentum=0.99, identical STFT
   settings and identical seeded random initial phases; wall time and spectral convergence.
3. Training: target frames per second of the training loop's train_step on the default config's batches of 32
   real training utterances: one process (torch's 2 threads, and 1 thread), two DDP gloo processes
   (torch.set_num_threads(1) each), and two independent 1-thread processes (no DDP: what the machine
   gives two processes); one extra step per process is profiled.
4. Cold start: `vc convert in.wav out.wav` with the bundled model in a new process, 3 s input.
5. `vc serve`: cold start until the page answers, then latency (p50, p95) and requests per minute for a
   3 s recording with 1, 4 and 16 concurrent clients (bench/serve_load.py; needs the serve extra).
6. Vocoders: the whole conversion's RTF through Griffin-Lim and through HiFi-GAN (the neural extra; at
   its default precision, bfloat16 on a CPU with the hardware, and in float32), at
   batch 1 and 8 on 1 and 2 threads, each in a fresh process with its peak memory, and each one's cold
   start (bench/vocoder_rtf.py; --checkpoint's model, else the bundled one).
7. Scoring: `vc score`'s cost per metric family with the cache cold, on the natural target's first eval
   files in 2 workers, and what each adds to the main job's stage 6 (bench/score_time.py; the eval extra).

Goals (printed met / NOT MET): convert RTF <= 0.05 on 2 cores; Griffin-Lim >= 3x faster than
librosa at equal or better spectral convergence; cold start < 3 s. A missed goal gets a
torch.profiler profile in the table and the JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shlex
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchlib import (
    DEFAULT_CONFIG,
    DEFAULT_DB_ROOT,
    DEFAULT_JSON,
    FULL,
    QUICK,
    BackgroundLoad,
    Setup,
    machine,
    prepare_lists,
    resolve_checkpoint,
)

SECTIONS = ("convert", "griffinlim", "training", "cold_start", "serve", "vocoder", "scoring")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer utterances, steps and repeats (< 10 min)")
    parser.add_argument("--json", default=str(DEFAULT_JSON), help="output JSON (default: git-ignored)")
    parser.add_argument(
        "--db_root", default=str(DEFAULT_DB_ROOT), help="folder holding cmu_us_{bdl,slt}_arctic"
    )
    parser.add_argument(
        "--checkpoint", help="trained checkpoint (default: the newest egs/*/vc1/exp/*/checkpoints/best.pt)"
    )
    parser.add_argument(
        "--untrained", action="store_true", help="time an untrained model (decodes run to the length cap)"
    )
    parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="config for training / untrained model")
    parser.add_argument(
        "--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {SECTIONS}"
    )
    args = parser.parse_args(argv)
    unknown = set(args.sections.split(",")) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    return args


def in_fresh_process(fn, *args):
    """fn(*args) in a new spawned interpreter, so its peak RSS and warm-up are its own."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def convert_both(setup: Setup) -> dict:
    from convert_rtf import measure_convert

    return {str(b): in_fresh_process(measure_convert, setup, b) for b in (1, 8)}


def measure(setup: Setup, sections: list[str]) -> dict:
    """Run the chosen sections, each in its own process(es), noting other processes' CPU use."""
    from cold_start import measure_cold_start
    from griffinlim_speed import measure_griffinlim
    from score_time import measure_scoring
    from serve_load import measure_serve
    from train_throughput import measure_training
    from vocoder_rtf import measure_vocoders

    runners = {
        "convert": convert_both,
        "griffinlim": lambda s: in_fresh_process(measure_griffinlim, s),
        "training": measure_training,
        "cold_start": measure_cold_start,
        "serve": measure_serve,
        "vocoder": lambda s: measure_vocoders(s, in_fresh_process),
        "scoring": lambda s: in_fresh_process(measure_scoring, s),
    }
    results, background = {}, {}
    for name in SECTIONS:
        if name in sections:
            log(name)
            load = BackgroundLoad()
            results[name] = runners[name](setup)
            background[name] = load.result()
    results["background_by_section"] = background
    return results


def profile_misses(setup: Setup, goals: list[dict]) -> dict:
    """A torch.profiler profile for every missed goal."""
    from profiles import run_profile

    profiles = {}
    for goal in goals:
        if not goal["met"] and goal["profile"]:
            log(f"profiling {goal['profile']} (goal missed)")
            profiles[goal["profile"]] = in_fresh_process(run_profile, goal["profile"], setup)
    return profiles


def model_description(results: dict, checkpoint: str) -> str:
    if "convert" in results:
        return results["convert"]["1"]["model"]
    return f"trained checkpoint {checkpoint}" if checkpoint else "untrained model"


def choose_checkpoint(args: argparse.Namespace) -> str:
    """The checkpoint to time ("" = untrained), said out loud before any work."""
    needs_model = "convert" in args.sections.split(",")
    untrained = args.untrained or (not needs_model and not args.checkpoint)
    checkpoint = resolve_checkpoint(args.checkpoint, untrained)
    if checkpoint:
        log(f"model: trained checkpoint {checkpoint}")
    else:
        log("model: UNTRAINED" + (" (--untrained)" if args.untrained else " (no section times conversion)"))
    return checkpoint


def main(argv: list[str] | None = None) -> None:
    from report import evaluate_goals, render

    args = parse_args(argv)
    checkpoint = choose_checkpoint(args)
    started = time.perf_counter()
    load = BackgroundLoad()
    sections = args.sections.split(",")
    with tempfile.TemporaryDirectory(prefix="vc-bench-") as work:
        setup = Setup(
            db_root=args.db_root,
            config=str(Path(args.config).resolve()),
            checkpoint=checkpoint,
            lists_dir=str(Path(work) / "lists"),
            work_dir=work,
            sizes=QUICK if args.quick else FULL,
        )
        prepare_lists(setup.db_root, setup.lists_dir)
        results = {
            "mode": "quick" if args.quick else "full",
            "command": "python " + shlex.join(["bench/run.py", *(sys.argv[1:] if argv is None else argv)]),
            "machine": machine(),
            "setup": setup.to_dict(),
        }
        results.update(measure(setup, sections))
        results["model"] = model_description(results, setup.checkpoint)
        results["goals"] = evaluate_goals(results)
        results["profiles"] = profile_misses(setup, results["goals"])
    results["seconds"] = time.perf_counter() - started
    results["background_load"] = load.result()
    print(render(results))
    print(f"\n(benchmark took {results['seconds']:.0f} s; JSON: {args.json})")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
