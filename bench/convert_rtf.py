"""Section 1: `vc convert` real-time factor on CPU, split into the stages of Converter.convert_batch."""

from __future__ import annotations

import math
import time

import numpy as np
import torch
from benchlib import Setup, Stopwatch, current_rss_mb, list_pairs, load_converter, peak_rss_mb, read_waves

from vc.model.layers import make_pad_mask

STAGES = ("features", "encoder", "decoder", "postnet", "vocoder", "output")


def run_pipeline(converter, waves: list[np.ndarray], watch: Stopwatch) -> dict:
    """Converter.convert_batch, piece by piece, each piece timed into ``watch``.

    Seeded like convert_batch (a forked global RNG seeded with converter.seed around the model, a
    generator with the same seed for Griffin-Lim), so the output is the same, sample for sample.
    Returns the output waves and what the decoder did (steps, frames, items stopped by the cap).
    """
    model, config = converter.model, converter.config
    with torch.no_grad():
        with watch("features"):
            wave_lens = torch.tensor([len(w) for w in waves])
            padded = torch.zeros(len(waves), int(wave_lens.max()))
            for k, w in enumerate(waves):
                padded[k, : len(w)] = torch.from_numpy(w)
            mels, mel_lens = converter.features(padded, wave_lens)
            src = converter.normalize_source(mels, mel_lens)  # with the source warp, as convert_batch
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(converter.seed)
            with watch("encoder"):
                memory, keys, pad_mask, enc_lens = model.encode(src, mel_lens)
            with watch("decoder"):
                inf = config.inference
                min_frames = (mel_lens.float() * inf.min_ratio).long()
                max_frames = (mel_lens.float() * inf.max_ratio).long().clamp(min=1)
                window = (inf.window_backward, inf.window_forward) if inf.use_monotonic_window else None
                out = model.decoder.inference(
                    memory, keys, pad_mask, min_frames, max_frames, inf.stop_threshold, window
                )
            with watch("postnet"):
                mask = make_pad_mask(out.lens, out.frames.shape[1])
                after = out.frames + model.postnet(out.frames, mask)
                after = after * ~mask.unsqueeze(-1)
                converted = converter.tgt_stats.denormalize(after)
                if converter.postfilter is not None:  # the GAN post-filter, when the model has one
                    source = converter.aligned_source(src, mel_lens, out.alignments, enc_lens, out.lens)
                    converted = converter.postfilter(converted, out.lens, source)
        with watch("vocoder"):
            generator = torch.Generator().manual_seed(converter.seed)
            audio, audio_lens = converter.vocoder(converted, out.lens, generator=generator)
        with watch("output"):
            outputs = [audio[k, : int(audio_lens[k])].float().cpu().numpy() for k in range(len(waves))]
    return {
        "waves": outputs,
        "decoder_steps": int(out.alignments.shape[1]),
        "frames": int(out.lens.sum()),
        "capped": int((out.lens >= max_frames).sum()),
    }


def batches_like_convert_files(waves: list[np.ndarray], batch_size: int) -> list[list[int]]:
    """Length-sorted chunks, as vc.inference.convert_files forms them."""
    order = sorted(range(len(waves)), key=lambda k: len(waves[k]))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def check_matches_convert_batch(converter, waves: list[np.ndarray]) -> float:
    """Largest sample difference between our piecewise pipeline and convert_batch; inf if the
    lengths differ (then vc changed and run_pipeline no longer mirrors convert_batch)."""
    reference = converter.convert_batch(waves)
    ours = run_pipeline(converter, waves, Stopwatch())["waves"]
    diffs = [
        float(np.abs(r.wave - o).max()) if r.wave.shape == o.shape else math.inf
        for r, o in zip(reference, ours, strict=True)
    ]
    return max(diffs)


def time_convert_batch(converter, waves, batches) -> float:
    """Wall seconds of Converter.convert_batch itself over the same batches (cross-check of the split)."""
    start = time.perf_counter()
    for chunk in batches:
        converter.convert_batch([waves[k] for k in chunk])
    return time.perf_counter() - start


def measure_convert(setup: Setup, batch_size: int) -> dict:
    """RTF per stage over the first N eval utterances at one batch size; run in a fresh process."""
    baseline_rss = current_rss_mb()
    converter, load_seconds, description = load_converter(setup)
    audio = converter.config.audio
    pairs = list_pairs(setup, "eval", setup.sizes.convert_utterances)
    waves, read_seconds = read_waves([p.source for p in pairs], audio)
    duration = sum(len(w) for w in waves) / audio.sample_rate
    batches = batches_like_convert_files(waves, batch_size)
    max_diff = check_matches_convert_batch(converter, [waves[k] for k in batches[0]])  # also warms up
    watch = Stopwatch()
    steps = frames = capped = 0
    for chunk in batches:
        result = run_pipeline(converter, [waves[k] for k in chunk], watch)
        steps += result["decoder_steps"]
        frames += result["frames"]
        capped += result["capped"]
    end_to_end = time_convert_batch(converter, waves, batches)
    rtf = {stage: watch.totals[stage] / duration for stage in STAGES}
    rtf["postnet+vocoder"] = rtf["postnet"] + rtf["vocoder"]
    rtf["total"] = sum(watch.totals.values()) / duration
    return {
        "batch_size": batch_size,
        "model": description,
        "utterances": [p.utt_id for p in pairs],
        "audio_seconds": duration,
        "seconds": dict(watch.totals),
        "rtf": rtf,
        "rtf_convert_batch": end_to_end / duration,
        "rtf_read": read_seconds / duration,
        "load_seconds": load_seconds,
        "decoder_steps": steps,
        "decoder_ms_per_step": 1000 * watch.totals["decoder"] / steps,
        "output_frames": frames,
        "items_stopped_by_cap": capped,
        "max_ratio": converter.config.inference.max_ratio,
        "pipeline_vs_convert_batch_max_abs_diff": max_diff,
        "torch_threads": torch.get_num_threads(),
        "rss_baseline_mb": baseline_rss,
        "peak_rss_mb": peak_rss_mb(),
    }
