"""Section 2: Griffin-Lim, vc.vocoder.griffin_lim against librosa (and torchaudio when importable).

All run fast Griffin-Lim with n_iter=32, momentum=0.99 on the true STFT magnitudes of real
utterances (LogMel.magnitude: n_fft, hop, win, periodic Hann window, centred zero-padded frames)
from the same initial phases: 2 pi * numpy.random.RandomState(seed).random(S.shape), which is
exactly what librosa.griffinlim(init="random", random_state=RandomState(seed)) draws and what ours
receives as init=phases. Spectral convergence is vc.vocoder.spectral_convergence against S.
"""

from __future__ import annotations

import statistics
import time

import librosa
import numpy as np
import torch
from benchlib import Setup, list_pairs, read_waves

from vc.audio import LogMel
from vc.config import load_config
from vc.vocoder import griffin_lim, spectral_convergence

N_ITER = 32
MOMENTUM = 0.99
SEED = 1234


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


def ours(mags: list[np.ndarray], seeds: list[int], audio) -> list[np.ndarray]:
    """vc.vocoder.griffin_lim on a zero-padded batch (frame_lens) or a single item."""
    frames = max(m.shape[1] for m in mags)
    batch = np.zeros((len(mags), mags[0].shape[0], frames), dtype=np.float32)
    phase = np.zeros(batch.shape, dtype=np.float32)
    for k, (m, seed) in enumerate(zip(mags, seeds, strict=True)):
        batch[k, :, : m.shape[1]] = m
        phase[k, :, : m.shape[1]] = initial_phases(m.shape, seed)
    frame_lens = torch.tensor([m.shape[1] for m in mags]) if len(mags) > 1 else None
    waves = griffin_lim(
        torch.from_numpy(batch),
        window=torch.hann_window(audio.win_length),
        n_iter=N_ITER,
        momentum=MOMENTUM,
        init=torch.from_numpy(phase),
        frame_lens=frame_lens,
        **stft_kwargs(audio),
    )
    return [waves[k, : (m.shape[1] - 1) * audio.hop_length].numpy() for k, m in enumerate(mags)]


def librosa_one(mag: np.ndarray, seed: int, audio) -> np.ndarray:
    return librosa.griffinlim(
        mag,
        n_iter=N_ITER,
        momentum=MOMENTUM,
        window="hann",
        center=True,
        pad_mode="constant",
        init="random",
        random_state=np.random.RandomState(seed),
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


def run_method(name: str, fn, mags, groups, repeats: int, audio) -> dict | None:
    """Mean seconds per utterance (over repeats, summed over groups) and mean spectral convergence."""
    if fn([mags[groups[0][0]]], [SEED]) is None:  # also the warm-up (FFT plans, allocator)
        return None
    totals, outputs = [], []
    for _ in range(repeats):
        total, outputs = 0.0, []
        for group in groups:
            items, seeds = [mags[k] for k in group], [SEED + k for k in group]
            start = time.perf_counter()
            outputs += fn(items, seeds)
            total += time.perf_counter() - start
        totals.append(total)
    order = [k for group in groups for k in group]
    sc = convergence([mags[k] for k in order], outputs, audio)
    return {
        "method": name,
        "seconds_per_utterance": statistics.mean(totals) / len(mags),
        "repeat_seconds": totals,
        "spectral_convergence": statistics.mean(sc),
        "spectral_convergence_per_item": sc,
    }


def groups_for(count: int, batch_size: int, mags) -> list[list[int]]:
    order = sorted(range(count), key=lambda k: mags[k].shape[1])
    return [order[i : i + batch_size] for i in range(0, count, batch_size)]


def methods(audio, threads: int) -> dict:
    """name -> fn(items, seeds) returning a list of waves (or None when unavailable)."""

    def ours_single_thread(items, seeds):
        torch.set_num_threads(1)
        try:
            return ours(items, seeds, audio)
        finally:
            torch.set_num_threads(threads)

    return {
        f"vc.vocoder.griffin_lim ({threads} threads)": lambda items, seeds: ours(items, seeds, audio),
        "vc.vocoder.griffin_lim (1 thread)": ours_single_thread,
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


def measure_griffinlim(setup: Setup) -> dict:
    """Batch 1 and batch 8 rows for every method; run in a fresh process."""
    mags, audio = magnitudes(setup)
    threads = torch.get_num_threads()
    stacked_ok = librosa_stacked_supported(mags, audio)
    rows = {}
    for batch_size in (1, 8):
        groups = groups_for(len(mags), batch_size, mags)
        rows[batch_size] = []
        for name, fn in methods(audio, threads).items():
            if batch_size == 1 and "stacked" in name:
                continue  # identical to item by item for one item
            if "stacked" in name and not stacked_ok:
                continue
            row = run_method(name, fn, mags, groups, setup.sizes.gl_repeats, audio)
            rows[batch_size].append(row or {"method": name, "not_installed": True})
    return {
        "utterances": len(mags),
        "frames": [int(m.shape[1]) for m in mags],
        "audio_seconds": sum((m.shape[1] - 1) * audio.hop_length for m in mags) / audio.sample_rate,
        "repeats": setup.sizes.gl_repeats,
        "n_iter": N_ITER,
        "momentum": MOMENTUM,
        "librosa_stacked_supported": stacked_ok,
        "torch_threads": threads,
        "rows": {str(k): v for k, v in rows.items()},
    }
