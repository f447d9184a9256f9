"""Section 1: `vc convert` real-time factor on CPU, and where the time goes inside Converter.convert_batch.

The conversion timed is the product's own: Converter.convert_batch, called on length-sorted batches
as vc.inference.convert_files forms them. The split into stages comes from the torch.profiler labels
(torch.profiler.record_function) that convert_batch and the models put around their stages: features,
encoder, durations (the non-autoregressive converter), decoder, postnet, postfilter, vocoder. The
profiler adds its own overhead, so the real-time factor is timed on a second, unprofiled pass and
the profiled pass only gives each stage's share of it.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from benchlib import Setup, current_rss_mb, list_pairs, load_converter, peak_rss_mb, read_waves
from torch.profiler import ProfilerActivity, profile

STAGES = ("features", "encoder", "durations", "decoder", "postnet", "postfilter", "vocoder")


def batches_like_convert_files(waves: list[np.ndarray], batch_size: int) -> list[list[int]]:
    """Length-sorted chunks, as vc.inference.convert_files forms them."""
    order = sorted(range(len(waves)), key=lambda k: len(waves[k]))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def convert_all(converter, waves, batches) -> list:
    return [result for chunk in batches for result in converter.convert_batch([waves[k] for k in chunk])]


def stopped_by_cap(results, waves, batches, limit: float, hop_length: int) -> int:
    """Conversions as long as inference.max_ratio allows (their stop token never fired).

    ``results`` come in the batches' (length-sorted) order, each paired here with its own input.
    """
    inputs = [waves[k] for chunk in batches for k in chunk]
    return sum(len(r.mel) >= int(limit * len(w) / hop_length) for r, w in zip(results, inputs, strict=True))


def stage_seconds(prof) -> dict[str, float]:
    """Seconds inside each labelled stage (a label's range, children included) of a profiled run."""
    found = {event.key: event.cpu_time_total / 1e6 for event in prof.key_averages() if event.key in STAGES}
    return {stage: found.get(stage, 0.0) for stage in STAGES}


def measure_convert(setup: Setup, batch_size: int) -> dict:
    """RTF of convert_batch and its stage shares over the first N eval utterances; run in a fresh process."""
    baseline_rss = current_rss_mb()
    converter, load_seconds, description = load_converter(setup)
    audio = converter.config.audio
    pairs = list_pairs(setup, "eval", setup.sizes.convert_utterances)
    waves, read_seconds = read_waves([p.source for p in pairs], audio)
    duration = sum(len(w) for w in waves) / audio.sample_rate
    batches = batches_like_convert_files(waves, batch_size)
    converter.convert_batch([waves[k] for k in batches[0]])  # warm-up
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        convert_all(converter, waves, batches)
        profiled_seconds = time.perf_counter() - start
    stages = stage_seconds(prof)
    start = time.perf_counter()
    results = convert_all(converter, waves, batches)
    seconds = time.perf_counter() - start
    rtf = {stage: seconds * stages[stage] / profiled_seconds / duration for stage in STAGES}
    rtf["total"] = seconds / duration
    steps = sum(len(r.alignment) for r in results)  # decoder steps, or output frames when non-autoregressive
    frames = sum(len(r.mel) for r in results)
    limit = converter.config.inference.max_ratio
    capped = stopped_by_cap(results, waves, batches, limit, audio.hop_length)
    return {
        "batch_size": batch_size,
        "model": description,
        "model_kind": converter.config.model.kind,
        "utterances": [p.utt_id for p in pairs],
        "audio_seconds": duration,
        "seconds": seconds,
        "stage_seconds_profiled": stages,
        "profiled_seconds": profiled_seconds,
        "rtf": rtf,
        "rtf_read": read_seconds / duration,
        "load_seconds": load_seconds,
        "decoder_steps": steps,
        "decoder_ms_per_step": 1000 * seconds * stages["decoder"] / profiled_seconds / max(steps, 1),
        "output_frames": frames,
        "items_stopped_by_cap": int(capped),
        "max_ratio": limit,
        "torch_threads": torch.get_num_threads(),
        "rss_baseline_mb": baseline_rss,
        "peak_rss_mb": peak_rss_mb(),
    }
