"""Section 2: Griffin-Lim, vc.vocoders.griffin_lim.griffin_lim against librosa (and torchaudio when importable).

All run fast Griffin-Lim with n_iter=32, momentum=0.99 on the true STFT magnitudes of real
utterances (LogMel.magnitude: n_fft, hop, win, periodic Hann window, centred zero-padded frames)
from the same initial phases: 2 pi * numpy.random.RandomState(seed).random(S.shape), which is
exactly what librosa.griffinlim(init="random", random_state=RandomState(seed)) draws and what ours
receives as init=phases; the row "from PGHI's phase" (vocoder.griffin_lim_init: pghi) starts from the
phase vc.vocoders.pghi integrates from S, that work timed with it. Spectral convergence is
vc.vocoders.griffin_lim.spectral_convergence against S. The
methods are timed interleaved (each repeat runs every method once), so that load from other
processes falls on all of them alike.

Matched quality ("matched_quality" in the result): the fewest iterations with which ours (fast
Griffin-Lim) reaches librosa's
32-iteration mean spectral convergence over the utterances, within SC_TOLERANCE, found by
bisection on batch-8 runs; then ms per utterance at that count against librosa's 32 iterations,
batch 1 and 8, interleaved.
"""

from __future__ import annotations

import inspect
import statistics
import sys
import time

import librosa
import numpy as np
import torch
from benchlib import Setup, list_pairs, read_waves
from report import matched_quality_lines

from vc.audio import LogMel
from vc.config import load_config
from vc.vocoders.griffin_lim import griffin_lim, spectral_convergence
from vc.vocoders.pghi import pghi_start

N_ITER = 32
MOMENTUM = 0.99
SEED = 1234
SC_TOLERANCE = 0.01  # "equal" spectral convergence, as bench/report.py's GL_SC_TOLERANCE
MAX_ITER = 64  # bisection range for the matched-quality iteration counts


def magnitudes(setup: Setup) -> tuple[list[np.ndarray], object]:
    """(F, T) float32 STFT magnitudes of the first N eval source utterances, and the audio config."""
    audio = load_config(setup.config).audio
    pairs = list_pairs(setup, "eval", setup.sizes.gl_utterances)
    waves, _ = read_waves([p.source for p in pairs], audio)
    extractor = LogMel(audio)
    with torch.no_grad():
        mags = [extractor.magnitude(torch.from_numpy(w)[None])[0].numpy() for w in waves]
    return mags, audio


def initial_phases(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """librosa's random initial phase for random_state=RandomState(seed)."""
    return 2 * np.pi * np.random.RandomState(seed).random(size=shape)


def stft_kwargs(audio) -> dict:
    return dict(n_fft=audio.n_fft, hop_length=audio.hop_length, win_length=audio.win_length)


def ours(
    mags: list[np.ndarray], seeds: list[int], audio, n_iter: int = N_ITER, start: str = "random"
) -> list[np.ndarray]:
    """vc.vocoders.griffin_lim.griffin_lim on a zero-padded batch (frame_lens) or a single item; start
    "pghi": from PGHI's phase (vc.vocoders.pghi.pghi_start, as vocoder.griffin_lim_init: pghi), its
    integration inside the time."""
    frames = max(m.shape[1] for m in mags)
    batch = np.zeros((len(mags), mags[0].shape[0], frames), dtype=np.float32)
    phase = np.zeros(batch.shape, dtype=np.float32)
    for k, (m, seed) in enumerate(zip(mags, seeds, strict=True)):
        batch[k, :, : m.shape[1]] = m
        phase[k, :, : m.shape[1]] = initial_phases(m.shape, seed)
    frame_lens = torch.tensor([m.shape[1] for m in mags])
    init = torch.from_numpy(phase)
    if start == "pghi":
        generator = torch.Generator().manual_seed(seeds[0])
        init = pghi_start(torch.from_numpy(batch), frame_lens, generator=generator, **stft_kwargs(audio))
    waves = griffin_lim(
        torch.from_numpy(batch),
        window=torch.hann_window(audio.win_length),
        n_iter=n_iter,
        momentum=MOMENTUM,
        init=init,
        frame_lens=frame_lens if len(mags) > 1 else None,
        **stft_kwargs(audio),
    )
    return [waves[k, : (m.shape[1] - 1) * audio.hop_length].numpy() for k, m in enumerate(mags)]


def librosa_seed(seed: int) -> dict:
    """librosa.griffinlim's seed keyword: `rng` from librosa 1.0 (`random_state` warns there), else
    `random_state`; a RandomState either way, so the phases are the same draws in both."""
    name = "rng" if "rng" in inspect.signature(librosa.griffinlim).parameters else "random_state"
    return {name: np.random.RandomState(seed)}


def librosa_one(mag: np.ndarray, seed: int, audio) -> np.ndarray:
    return librosa.griffinlim(
        mag,
        n_iter=N_ITER,
        momentum=MOMENTUM,
        window="hann",
        center=True,
        pad_mode="constant",
        init="random",
        **librosa_seed(seed),
        **stft_kwargs(audio),
    )


def librosa_loop(mags: list[np.ndarray], seeds: list[int], audio) -> list[np.ndarray]:
    """librosa one item at a time: each item is exactly what it would be alone."""
    return [librosa_one(m, s, audio) for m, s in zip(mags, seeds, strict=True)]


def librosa_stacked(mags: list[np.ndarray], seed: int, audio) -> list[np.ndarray]:
    """librosa on one zero-padded (B, F, T) ndarray (multichannel input, librosa >= 0.9).

    Padding frames take part in the iterations, so items differ slightly from the loop; the
    initial phases are one draw of shape (B, F, T), not per-item draws.
    """
    frames = max(m.shape[1] for m in mags)
    batch = np.zeros((len(mags), mags[0].shape[0], frames), dtype=np.float32)
    for k, m in enumerate(mags):
        batch[k, :, : m.shape[1]] = m
    waves = librosa_one(batch, seed, audio)
    return [waves[k, : (m.shape[1] - 1) * audio.hop_length] for k, m in enumerate(mags)]


def torchaudio_batch(mags: list[np.ndarray], seed: int, audio):
    """torchaudio.transforms.GriffinLim (its own torch.rand initial phase), or None if not installed."""
    try:
        import torchaudio
    except ImportError:
        return None
    transform = torchaudio.transforms.GriffinLim(
        n_iter=N_ITER, momentum=MOMENTUM, power=1.0, rand_init=True, **stft_kwargs(audio)
    )
    torch.manual_seed(seed)
    return [transform(torch.from_numpy(m)).numpy() for m in mags]


def convergence(mags: list[np.ndarray], waves: list[np.ndarray], audio) -> list[float]:
    window = torch.hann_window(audio.win_length)
    return [
        float(
            spectral_convergence(
                torch.from_numpy(m), torch.from_numpy(w), window=window, **stft_kwargs(audio)
            )
        )
        for m, w in zip(mags, waves, strict=True)
    ]


def run_methods(fns: dict, mags, groups, repeats: int, audio) -> dict[str, dict | None]:
    """Mean seconds per utterance (over repeats, summed over groups) and mean spectral convergence.

    Methods run interleaved: each repeat times every method once, in turn. None for a method
    that is not installed.
    """
    available = {}
    for name, fn in fns.items():
        if fn([mags[groups[0][0]]], [SEED]) is not None:  # also the warm-up (FFT plans, allocator)
            available[name] = fn
    totals = {name: [] for name in available}
    outputs = {}
    for _ in range(repeats):
        for name, fn in available.items():
            total, outputs[name] = 0.0, []
            for group in groups:
                items, seeds = [mags[k] for k in group], [SEED + k for k in group]
                start = time.perf_counter()
                outputs[name] += fn(items, seeds)
                total += time.perf_counter() - start
            totals[name].append(total)
    order = [k for group in groups for k in group]
    rows = {name: None for name in fns}
    for name in available:
        sc = convergence([mags[k] for k in order], outputs[name], audio)
        rows[name] = {
            "method": name,
            "seconds_per_utterance": statistics.mean(totals[name]) / len(mags),
            "min_seconds_per_utterance": min(totals[name]) / len(mags),
            "repeat_seconds": totals[name],
            "spectral_convergence": statistics.mean(sc),
            "spectral_convergence_per_item": sc,
        }
    return rows


def groups_for(count: int, batch_size: int, mags) -> list[list[int]]:
    order = sorted(range(count), key=lambda k: mags[k].shape[1])
    return [order[i : i + batch_size] for i in range(0, count, batch_size)]


def methods(audio, threads: int) -> dict:
    """name -> fn(items, seeds) returning a list of waves (or None when unavailable)."""

    def ours_single_thread(items, seeds, start="random"):
        torch.set_num_threads(1)
        try:
            return ours(items, seeds, audio, start=start)
        finally:
            torch.set_num_threads(threads)

    # Our rows keep the name results.json has stored them under since before vc/vocoders/griffin_lim.py.
    return {
        f"vc.audio.griffin_lim.griffin_lim ({threads} threads)": lambda items, seeds: ours(
            items, seeds, audio
        ),
        "vc.audio.griffin_lim.griffin_lim (1 thread)": ours_single_thread,
        # vocoder.griffin_lim_init: pghi, the time of integrating PGHI's phase included.
        "vc.audio.griffin_lim.griffin_lim (1 thread) from PGHI's phase": lambda items, seeds: (
            ours_single_thread(items, seeds, start="pghi")
        ),
        "librosa.griffinlim, item by item": lambda items, seeds: librosa_loop(items, seeds, audio),
        "librosa.griffinlim, stacked (B, F, T)": lambda items, seeds: librosa_stacked(items, seeds[0], audio),
        "torchaudio.transforms.GriffinLim": lambda items, seeds: torchaudio_batch(items, seeds[0], audio),
    }


def librosa_stacked_supported(mags, audio) -> bool:
    """Does librosa.griffinlim accept a (B, F, T) ndarray and give (B, samples)?"""
    small = np.stack([m[:, :8] for m in mags[:2]])
    try:
        out = librosa_one(small, SEED, audio)
    except Exception:
        return False
    return out.shape == (2, 7 * audio.hop_length)


def iterations_to_reach(target: float, mags, audio) -> tuple[int | None, float]:
    """Fewest iterations whose mean spectral convergence is <= target * (1 + SC_TOLERANCE), and that SC.

    Bisection over 1..MAX_ITER on batch-8 runs: spectral convergence falls with the iteration
    count for these methods, not strictly at every step, so this finds a count that reaches the
    target, at most a step or two above the first that does.
    """
    groups = groups_for(len(mags), 8, mags)

    def mean_sc(n_iter: int) -> float:
        waves = []
        for group in groups:
            waves += ours([mags[k] for k in group], [SEED + k for k in group], audio, n_iter)
        order = [k for group in groups for k in group]
        return statistics.mean(convergence([mags[k] for k in order], waves, audio))

    def reached(n_iter: int) -> bool:
        return mean_sc(n_iter) <= target * (1 + SC_TOLERANCE)

    if not reached(MAX_ITER):
        return None, mean_sc(MAX_ITER)
    low, high = 0, MAX_ITER  # low fails (0 iterations never reaches it), high reaches
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if reached(middle) else (middle, high)
    return high, mean_sc(high)


def matched_quality(mags, audio, librosa_rows: dict, repeats: int) -> dict:
    """Iterations and time for ours to reach librosa-32's spectral convergence (batch 1 and 8)."""
    target = librosa_rows["1"]["spectral_convergence"]
    n_iter, sc = iterations_to_reach(target, mags, audio)
    result = {
        "librosa_n_iter": N_ITER,
        "librosa_spectral_convergence": target,
        "tolerance": SC_TOLERANCE,
        "max_iter": MAX_ITER,
        "n_iter": n_iter,
        "spectral_convergence": sc,
    }
    if n_iter is None:
        return result
    for batch_size in (1, 8):
        groups = groups_for(len(mags), batch_size, mags)
        fns = {
            "ours": lambda items, seeds: ours(items, seeds, audio, n_iter),
            "librosa": lambda items, seeds: librosa_loop(items, seeds, audio),
        }
        rows = run_methods(fns, mags, groups, repeats, audio)
        result[str(batch_size)] = {
            "ms_per_utterance": 1000 * rows["ours"]["seconds_per_utterance"],
            "librosa_ms_per_utterance": 1000 * rows["librosa"]["seconds_per_utterance"],
            "speedup": rows["librosa"]["seconds_per_utterance"] / rows["ours"]["seconds_per_utterance"],
            "speedup_of_minima": rows["librosa"]["min_seconds_per_utterance"]
            / rows["ours"]["min_seconds_per_utterance"],
        }
    return result


def measure_griffinlim(setup: Setup) -> dict:
    """Batch 1 and batch 8 rows for every method, and the matched-quality comparison; run in a fresh process."""
    mags, audio = magnitudes(setup)
    threads = torch.get_num_threads()
    stacked_ok = librosa_stacked_supported(mags, audio)
    rows = {}
    for batch_size in (1, 8):
        groups = groups_for(len(mags), batch_size, mags)
        fns = {
            name: fn
            for name, fn in methods(audio, threads).items()
            if not ("stacked" in name and (batch_size == 1 or not stacked_ok))  # batch 1: as item by item
        }
        measured = run_methods(fns, mags, groups, setup.sizes.gl_repeats, audio)
        rows[str(batch_size)] = [
            row or {"method": name, "not_installed": True} for name, row in measured.items()
        ]
    librosa_rows = {
        b: next(r for r in batch_rows if r["method"] == "librosa.griffinlim, item by item")
        for b, batch_rows in rows.items()
    }
    matched = matched_quality(mags, audio, librosa_rows, setup.sizes.gl_repeats)
    print("\n".join(matched_quality_lines(matched)), file=sys.stderr, flush=True)
    return {
        "utterances": len(mags),
        "frames": [int(m.shape[1]) for m in mags],
        "audio_seconds": sum((m.shape[1] - 1) * audio.hop_length for m in mags) / audio.sample_rate,
        "repeats": setup.sizes.gl_repeats,
        "n_iter": N_ITER,
        "momentum": MOMENTUM,
        "librosa_stacked_supported": stacked_ok,
        "torch_threads": threads,
        "rows": rows,
        "matched_quality": matched,
    }
