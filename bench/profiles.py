"""Profiles for missed goals: torch.profiler (CPU) over one representative call.

Each profile lists the labelled stages (torch.profiler.record_function, inclusive time), the
operators with the most self CPU time, and the share of the wall time no operator accounts for
(Python and dispatch overhead between operators).
"""

from __future__ import annotations

import time

from benchlib import Setup, list_pairs, load_converter, read_waves
from torch.profiler import ProfilerActivity, profile

TOP = 10
# Operator kinds for the one-line summary of a profile (anything else counts as "elementwise/other").
KINDS = {
    "FFT": ("aten::_fft_r2c", "aten::_fft_c2r", "aten::_fft_c2c"),
    "overlap-add (istft)": ("aten::unfold_backward",),
    "matmul": (
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::matmul",
        "aten::mkldnn_rnn_layer",
        "aten::lstm_cell",
    ),
    "convolution": ("aten::_slow_conv2d_forward", "aten::mkldnn_convolution", "aten::convolution_backward"),
}
STAGE_NAMES = ("features", "encoder", "durations", "decoder", "postnet", "postfilter", "vocoder", "rest")


def summarize(prof, wall: float) -> dict:
    """Stages and top operators of a finished profile, in milliseconds and % of wall time."""
    events = prof.key_averages()
    ms = 1000 * wall
    stages = [
        {"name": e.key, "ms": e.cpu_time_total / 1000, "percent": 100 * e.cpu_time_total / 1000 / ms}
        for e in events
        if e.key in STAGE_NAMES
    ]
    ops = [e for e in events if e.key not in STAGE_NAMES]
    ops_self = sum(e.self_cpu_time_total for e in ops) / 1000
    top = sorted(ops, key=lambda e: e.self_cpu_time_total, reverse=True)[:TOP]
    return {
        "wall_ms": ms,
        "stages": sorted(stages, key=lambda s: -s["ms"]),
        "top_ops": [
            {
                "name": e.key,
                "self_ms": e.self_cpu_time_total / 1000,
                "percent": 100 * e.self_cpu_time_total / 1000 / ms,
                "calls": e.count,
            }
            for e in top
        ],
        "by_kind_percent": by_kind(ops, ms),
        "outside_ops_percent": max(0.0, 100 * (1 - ops_self / ms)),
    }


def by_kind(ops, wall_ms: float) -> dict[str, float]:
    """Self CPU time of all operators grouped by KINDS, in % of the wall time, largest first."""
    totals: dict[str, float] = {}
    for e in ops:
        kind = next((k for k, names in KINDS.items() if e.key in names), "elementwise/other")
        totals[kind] = totals.get(kind, 0.0) + e.self_cpu_time_total / 1000
    return {k: 100 * v / wall_ms for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


def profiled(fn) -> dict:
    """Run fn() once under the CPU profiler and summarise it."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        fn()
        wall = time.perf_counter() - start
    return summarize(prof, wall)


def profile_convert(setup: Setup) -> list[dict]:
    """One `vc convert IN OUT` conversion (batch 1) of the first eval utterance."""
    converter, _, _ = load_converter(setup)
    (wave,), _ = read_waves([list_pairs(setup, "eval", 1)[0].source], converter.config.audio)
    converter.convert_batch([wave])  # warm-up
    result = profiled(lambda: converter.convert_batch([wave]))
    result["what"] = "convert, batch 1, first eval utterance"
    return [result]


def profile_griffinlim(setup: Setup) -> list[dict]:
    """vc.audio.griffin_lim.griffin_lim on the first eval utterance alone, then on a padded batch of 8."""
    from griffinlim_speed import SEED, magnitudes, ours

    mags, audio = magnitudes(setup)
    results = []
    for count in (1, min(8, len(mags))):
        items, seeds = mags[:count], [SEED + k for k in range(count)]
        ours(items, seeds, audio)  # warm-up
        result = profiled(lambda items=items, seeds=seeds: ours(items, seeds, audio))
        result["what"] = f"vc.audio.griffin_lim.griffin_lim, batch {count} (first eval utterances)"
        results.append(result)
    return results


PROFILERS = {"convert": profile_convert, "griffinlim": profile_griffinlim}


def run_profile(name: str, setup: Setup) -> list[dict]:
    return PROFILERS[name](setup)
