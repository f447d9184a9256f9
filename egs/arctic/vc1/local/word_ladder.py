#!/usr/bin/env python3
"""Where the converter loses words: one folder of audio per probe, on every pair of an eval list.

    python local/word_ladder.py --eval-list data/bdl_slt/eval.tsv --train-list data/bdl_slt/train.tsv \\
        --gmm-dir EXP/converted/gmm --out DIR
    vc score --converted DIR/predicted_pf --reference <slt wav folder> --system "oracle=DIR/oracle_pf" ...

For each pair, DIR/<probe>/<utt id>.wav, from a non-autoregressive converter (default: the bundled
model) by the path of Converter.convert_batch (LogMel, normalize_source, the model, the target's
statistics, the post-filter reading the source at the output's timing, the mel -> linear network and
Griffin-Lim with the converter's seed). Probes ending in _pf run the post-filter, the others stop
before it:

- predicted[_pf]: plain conversion, the duration predictor's timing;
- oracle[_pf]: the pair's own DTW durations against the real target recording, computed as the recipe
  computes them for training pairs (vc.training.durations.durations_from_dtw on each speaker's
  normalised log-mels), fed to model.forward: the timing is right and the output has the target's
  frames;
- source_timing[_pf]: one output frame per source frame (encoder_reduction_factor frames per encoder
  step, the last step the remainder);
- student_envelope / target_envelope: under oracle timing, the post-filtered student's spectral
  envelope (the first --lifter cepstral coefficients across the mel bands) with the natural target's
  fine structure (the rest), and the reverse (bench/word_loss.py of commit 4ee2de7, for the student);
- gmm_griffin_lim (with --gmm-dir, the GMM peer's converted files): the peer's audio through our
  vocoder, its log-mel -> the model's mel -> linear network -> Griffin-Lim;
- world_source_excitation: source_timing_pf's envelope resynthesised by WORLD with the source's
  excitation as the GMM peer (vc.evaluation.gmm_peer) keeps it: the source's F0 with its log-F0 mean
  and deviation moved to the target's (statistics over the first --stats-pairs training pairs), the
  source's aperiodicity. The envelope is the mel -> linear network's power, interpolated to WORLD's
  5 ms frames (the output has the source's frames, so time lines up), averaged over --smooth-bins
  frequency bins (the harmonics the network draws), liftered to its first --world-lifter quefrency
  bins and moved onto CheapTrick's scale by a per-bin offset measured on the same training pairs'
  natural targets;
- target_world: the natural target's log-mel through the same envelope path and WORLD with the target's
  own F0 and aperiodicity: the ceiling of that path, as the Griffin-Lim ceiling is of ours;
- world_analysis_synthesis: the natural target through WORLD alone (its own CheapTrick envelope, F0 and
  aperiodicity): WORLD's ceiling;
- gmm_world_our_envelope (with --gmm-dir): the GMM peer's log-mel (untrimmed, so its frames are the
  source's) through the same envelope path and WORLD with the source's mapped F0 and aperiodicity,
  the peer's own excitation: what the envelope path costs the peer.

An existing file is kept, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from scipy.ndimage import uniform_filter1d

from vc import Converter
from vc.artifacts.checkpoint import private_rng
from vc.artifacts.pretrained import model_path
from vc.audio import read_audio, write_audio
from vc.evaluation.gmm_peer import log_f0_stats
from vc.evaluation.metrics import FRAME_PERIOD_MS, analysis_libraries, world_frames
from vc.pairs import Pair, read_pair_list
from vc.training.durations import durations_from_dtw

STUDENT_PROBES = [
    f"{timing}{pf}" for timing in ("predicted", "oracle", "source_timing") for pf in ("", "_pf")
]
PROBES = [
    *STUDENT_PROBES,
    "student_envelope",
    "target_envelope",
    "world_source_excitation",
    "target_world",
    "world_analysis_synthesis",
]


def cepstral_envelope(n_mels: int, lifter: int) -> torch.Tensor:
    """(n_mels, n_mels) projection onto the first ``lifter`` DCT-II coefficients across the bands."""
    k = torch.arange(n_mels)
    dct = torch.cos(math.pi / n_mels * (k[None, :] + 0.5) * k[:, None])
    dct = dct / dct.norm(dim=1, keepdim=True)  # orthonormal rows
    kept = dct[:lifter]
    return kept.T @ kept


@torch.no_grad()
def log_mel(converter: Converter, wave: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """A prepared wave -> its (1, T, n_mels) log-mel and (1,) length, as convert_batch takes them."""
    return converter.features(torch.from_numpy(wave)[None], torch.tensor([len(wave)]))


def oracle_durations(converter: Converter, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(1, T_src, n_mels), (1, T_tgt, n_mels) log-mels -> (1, N) DTW durations summing to T_tgt."""
    found = durations_from_dtw(
        converter.src_stats.normalize(source[0].numpy()),
        converter.tgt_stats.normalize(target[0].numpy()),
        converter.config.model.encoder_reduction_factor,
        converter.config.audio,
    )
    return torch.from_numpy(found)[None]


def source_durations(frames: int, factor: int) -> torch.Tensor:
    """(1, ceil(frames / factor)) durations: one output frame per source frame."""
    durations = torch.full((1, -(-frames // factor)), factor, dtype=torch.long)
    durations[0, -1] = frames - factor * (durations.shape[1] - 1)
    return durations


@torch.no_grad()
def convert(converter: Converter, mel, lens, durations=None) -> dict[str, torch.Tensor]:
    """convert_batch's path up to the vocoder, at the predicted timing or the given ``durations``
    -> {"": (T, n_mels) log-mel without the post-filter, "_pf": with it}."""
    src = converter.normalize_source(mel, lens)
    with private_rng(converter.seed, converter.device):
        if durations is None:
            out = converter.model.inference(src, lens, converter.config.inference)
        else:
            out = converter.model(src, lens, durations)
    plain = converter.tgt_stats.denormalize(out.after)
    source = converter.aligned_source(src, lens, out.alignments, out.enc_lens, out.lens)
    return {"": plain[0], "_pf": converter.postfilter(plain, out.lens, source)[0]}


def vocode(converter: Converter, mel: torch.Tensor) -> np.ndarray:
    """(T, n_mels) log-mel -> wave, by the converter's vocoder and seed (as convert_batch)."""
    generator = torch.Generator().manual_seed(converter.seed)
    wave, lens = converter.vocoder(mel[None], torch.tensor([len(mel)]), generator=generator)
    return wave[0, : int(lens[0])].numpy()


def swapped_envelopes(student: torch.Tensor, target: torch.Tensor, lifter: int) -> dict[str, torch.Tensor]:
    """Two (T, n_mels) log-mels of the same frames -> each one's envelope with the other's fine structure."""
    envelope = cepstral_envelope(student.shape[1], lifter)
    student_env, target_env = student @ envelope, target @ envelope
    return {
        "student_envelope": student_env + target - target_env,
        "target_envelope": target_env + student - student_env,
    }


@torch.no_grad()
def log_envelope(converter: Converter, mel: torch.Tensor, times: np.ndarray, args) -> np.ndarray:
    """(T, n_mels) log-mel at the model's hop -> (len(times), n_fft // 2 + 1) log10 power envelope at
    WORLD's frame times: the mel -> linear network's power, interpolated in time, averaged over
    --smooth-bins bins (the harmonics' width), then liftered to --world-lifter quefrency bins."""
    audio = converter.config.audio
    log_magnitude = converter.vocoder.mel2linear(mel[None].float(), torch.tensor([len(mel)]))[0].numpy()
    position = np.clip(times * audio.sample_rate / audio.hop_length, 0, len(mel) - 1)
    lower = np.floor(position).astype(np.int64)
    upper = np.minimum(lower + 1, len(mel) - 1)
    weight = (position - lower)[:, None]
    power = 10.0 ** (2.0 * (log_magnitude[lower] * (1 - weight) + log_magnitude[upper] * weight))
    cepstrum = np.fft.irfft(np.log10(uniform_filter1d(power, args.smooth_bins, axis=1)), axis=1)
    cepstrum[:, args.world_lifter : cepstrum.shape[1] - args.world_lifter + 1] = 0.0
    return np.fft.rfft(cepstrum, axis=1).real


def mapped_f0(f0: np.ndarray, stats: dict[str, list[float]]) -> np.ndarray:
    """The source's F0 with its log mean and deviation moved to the target's (as the GMM peer does)."""
    (src_mean, src_std), (tgt_mean, tgt_std) = stats["source"], stats["target"]
    log_f0 = np.log(np.maximum(f0, 1e-3))
    return np.where(f0 > 0, np.exp((log_f0 - src_mean) / src_std * tgt_std + tgt_mean), 0.0)


def world_resynthesis(
    converter: Converter, mel: torch.Tensor | None, excitation: np.ndarray, stats, args, map_f0: bool = True
) -> np.ndarray:
    """(T, n_mels) log-mel with the frames of the wave ``excitation`` -> wave by WORLD with that wave's
    F0 (mapped to the target's range when ``map_f0``) and aperiodicity; ``mel`` None: the wave's own
    CheapTrick envelope (WORLD analysis-synthesis)."""
    pyworld, _ = analysis_libraries()
    rate = converter.config.audio.sample_rate
    x = excitation.astype(np.float64)
    frames = world_frames(x, rate)
    aperiodicity = pyworld.d4c(x, frames.f0, frames.times, rate, fft_size=frames.fft_size)
    if mel is None:
        envelope = frames.envelope
    else:
        envelope = 10.0 ** (
            log_envelope(converter, mel, frames.times, args) + np.asarray(stats["calibration"])
        )
    f0 = mapped_f0(frames.f0, stats) if map_f0 else frames.f0
    return pyworld.synthesize(f0, envelope, aperiodicity, rate, FRAME_PERIOD_MS).astype(np.float32)


def world_probes(converter: Converter, pair: Pair, converted, target, args, stats) -> dict[str, np.ndarray]:
    """The WORLD probes of one pair: ``converted`` (source-timed log-mel, source wave) with the source's
    excitation; the natural ``target`` (log-mel, wave) with its own, and its WORLD analysis-synthesis; the
    GMM peer's log-mel with the source's (both untrimmed: the peer's output has the source's samples)."""
    waves = {
        "world_source_excitation": world_resynthesis(converter, *converted, stats, args),
        "target_world": world_resynthesis(converter, *target, stats, args, map_f0=False),
        "world_analysis_synthesis": world_resynthesis(converter, None, target[1], stats, args, map_f0=False),
    }
    if args.gmm_dir:
        whole = replace(converter.config.audio, trim_top_db=0.0)
        peer = log_mel(converter, read_audio(args.gmm_dir / f"{pair.utt_id}.wav", whole))[0][0]
        waves["gmm_world_our_envelope"] = world_resynthesis(
            converter, peer, read_audio(pair.source, whole), stats, args
        )
    return waves


def calibration(converter: Converter, waves: list[np.ndarray], args) -> list[float]:
    """Per frequency bin, the mean log10 ratio of CheapTrick's envelope to log_envelope's over the voiced
    frames of natural target speech: maps our envelope onto WORLD's scale (level and the bias of the
    smoothing at low frequencies)."""
    ratios = []
    for wave in waves:
        frames = world_frames(wave.astype(np.float64), converter.config.audio.sample_rate)
        ours = log_envelope(converter, log_mel(converter, wave)[0][0], frames.times, args)
        ratios.append((np.log10(frames.envelope) - ours)[frames.f0 > 0])
    return np.concatenate(ratios).mean(axis=0).tolist()


def training_statistics(converter: Converter, pairs: list[Pair], args) -> dict[str, list[float]]:
    """Log-F0 mean and deviation of source and target over ``pairs`` (the GMM peer's, untrimmed audio)
    and the envelope calibration on their targets; cached in OUT/world_stats.json."""
    cache = args.out / "world_stats.json"
    if cache.is_file():
        return json.loads(cache.read_text())
    audio = replace(converter.config.audio, trim_top_db=0.0)
    waves = {side: [read_audio(getattr(p, side), audio) for p in pairs] for side in ("source", "target")}
    rate = audio.sample_rate
    stats = {
        side: list(log_f0_stats([world_frames(w.astype(np.float64), rate).f0 for w in found]))
        for side, found in waves.items()
    }
    stats["calibration"] = calibration(converter, waves["target"], args)
    cache.write_text(json.dumps(stats))
    return stats


def pair_probes(converter: Converter, pair: Pair, args, stats) -> dict[str, np.ndarray]:
    """Every probe's wave for one pair."""
    audio, factor = converter.config.audio, converter.config.model.encoder_reduction_factor
    source_wave, target_wave = read_audio(pair.source, audio), read_audio(pair.target, audio)
    (source, lens), (target, _) = log_mel(converter, source_wave), log_mel(converter, target_wave)
    timings = {
        "predicted": None,
        "oracle": oracle_durations(converter, source, target),
        "source_timing": source_durations(int(lens[0]), factor),
    }
    mels = {
        f"{name}{pf}": mel
        for name, d in timings.items()
        for pf, mel in convert(converter, source, lens, d).items()
    }
    mels.update(swapped_envelopes(mels["oracle_pf"], target[0], args.lifter))
    waves = {name: vocode(converter, mel) for name, mel in mels.items()}
    converted = (mels["source_timing_pf"], source_wave)
    waves.update(world_probes(converter, pair, converted, (target[0], target_wave), args, stats))
    if args.gmm_dir:
        peer = read_audio(args.gmm_dir / f"{pair.utt_id}.wav", audio)
        waves["gmm_griffin_lim"] = vocode(converter, log_mel(converter, peer)[0][0])
    return waves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-list", type=Path, required=True, help="pair list (id, source, target)")
    parser.add_argument(
        "--train-list", type=Path, required=True, help="pairs for the WORLD probe's statistics"
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for the probes' audio folders")
    parser.add_argument("--model", default=str(model_path()), help="converter (default: the bundled one)")
    parser.add_argument("--gmm-dir", type=Path, help="the GMM peer's converted files (vc gmm-peer --out-dir)")
    parser.add_argument(
        "--stats-pairs", type=int, default=120, help="training pairs for log-F0 (the peer's) and calibration"
    )
    parser.add_argument("--lifter", type=int, default=20, help="cepstral coefficients in the mel envelope")
    parser.add_argument("--world-lifter", type=int, default=40, help="quefrency bins of the WORLD envelope")
    parser.add_argument("--smooth-bins", type=int, default=9, help="power smoothing across bins (WORLD)")
    args = parser.parse_args()

    converter = Converter.from_checkpoint(args.model, device="cpu")
    if converter.config.model.kind != "nonautoregressive" or converter.postfilter is None:
        parser.error(f"{args.model}: needs a non-autoregressive converter with its post-filter")
    args.out.mkdir(parents=True, exist_ok=True)
    rate = converter.config.audio.sample_rate
    stats = training_statistics(converter, read_pair_list(args.train_list)[: args.stats_pairs], args)
    probes = PROBES + (["gmm_griffin_lim", "gmm_world_our_envelope"] if args.gmm_dir else [])
    started = time.monotonic()
    for number, pair in enumerate(read_pair_list(args.eval_list), start=1):
        paths = {probe: args.out / probe / f"{pair.utt_id}.wav" for probe in probes}
        if all(path.is_file() for path in paths.values()):
            continue
        for probe, wave in pair_probes(converter, pair, args, stats).items():
            if not paths[probe].is_file():
                paths[probe].parent.mkdir(exist_ok=True)
                write_audio(paths[probe], wave, rate)
        print(f"{number} {pair.utt_id} {(time.monotonic() - started) / 60:.1f} min", flush=True)
    print(f"wrote {', '.join(probes)} under {args.out}")


if __name__ == "__main__":
    main()
