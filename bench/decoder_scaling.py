"""Section 4: per-step time of free-running decoding against source length.

The first eval utterance's normalised log-mel is repeated 1x, 2x, 4x along time and encoded;
model.decoder.inference then runs exactly K steps (min_frames = max_frames = K x r, so the stop
token cannot end it earlier). The attention module alone (model.decoder.attention with the same
memory, keys and mask, K calls) is timed the same way; step - attention is everything else in a
step (prenet, LSTM cells, projections, stop test), which should not depend on the source length.
Batch 1, median over repeats.
"""

from __future__ import annotations

import statistics
import time

import torch
from benchlib import Setup, list_pairs, load_converter, read_waves

LENGTHS = (1, 2, 4)


def encoded(converter, wave, repeat: int):
    """(memory, keys, pad_mask, source frames) of the utterance repeated ``repeat`` times."""
    with torch.no_grad():
        mels, lens = converter.features(torch.from_numpy(wave)[None])
        src = converter.src_stats.normalize(mels).repeat(1, repeat, 1)
        src_lens = lens * repeat
        memory, keys, pad_mask, _ = converter.model.encode(src, src_lens)
    return memory, keys, pad_mask, int(src_lens[0])


def decode_k_steps(decoder, memory, keys, pad_mask, steps: int) -> int:
    """Free-running inference forced to run exactly ``steps`` steps; returns the steps run."""
    frames = torch.tensor([steps * decoder.reduction_factor])
    out = decoder.inference(memory, keys, pad_mask, frames, frames)
    return int(out.alignments.shape[1])


def attention_k_calls(decoder, memory, keys, pad_mask, steps: int) -> None:
    """The attention of ``steps`` decoder steps alone, fed its own alignments back as it would be."""
    attention = decoder.attention
    query = torch.randn(memory.shape[0], decoder.attention_rnn.hidden_size)
    alpha = torch.zeros(memory.shape[:2])
    cum_alpha = torch.zeros(memory.shape[:2])
    with torch.no_grad():
        for _ in range(steps):
            _, alpha = attention(query, memory, keys, pad_mask, alpha, cum_alpha)
            cum_alpha = cum_alpha + alpha


def median_ms_per_step(fn, steps: int, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times) / steps


def measure_decoder(setup: Setup) -> dict:
    """Rows for 1x, 2x, 4x; run in a fresh process."""
    converter, _, description = load_converter(setup)
    decoder = converter.model.decoder
    pair = list_pairs(setup, "eval", 1)[0]
    (wave,), _ = read_waves([pair.source], converter.config.audio)
    steps, repeats = setup.sizes.decoder_steps, setup.sizes.decoder_repeats
    rows = []
    for repeat in LENGTHS:
        memory, keys, pad_mask, src_frames = encoded(converter, wave, repeat)
        assert decode_k_steps(decoder, memory, keys, pad_mask, steps) == steps
        step_ms = median_ms_per_step(
            lambda m=memory, k=keys, p=pad_mask: decode_k_steps(decoder, m, k, p, steps), steps, repeats
        )
        attention_ms = median_ms_per_step(
            lambda m=memory, k=keys, p=pad_mask: attention_k_calls(decoder, m, k, p, steps), steps, repeats
        )
        rows.append(
            {
                "length": f"{repeat}x",
                "source_frames": src_frames,
                "encoder_steps": int(memory.shape[1]),
                "step_ms": step_ms,
                "attention_ms": attention_ms,
                "rest_ms": step_ms - attention_ms,
            }
        )
    return {
        "utterance": pair.utt_id,
        "model": description,
        "steps": steps,
        "repeats": repeats,
        "attention_type": converter.config.model.attention_type,
        "monotonic_window": converter.config.inference.use_monotonic_window,
        "torch_threads": torch.get_num_threads(),
        "rows": rows,
    }
