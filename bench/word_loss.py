"""Where a model's words are lost: exposure bias, the spectral envelope, or its timing?

    python bench/word_loss.py --checkpoint EXP/checkpoints/best.pt --out DIR [--files 100] [--db_root DIR]

For the first --files bdl -> slt eval pairs (arctic_b0440...), writes one folder of audio per
probe under DIR, each vocoded by the checkpoint's own path (its mel -> linear network and
Griffin-Lim), for `vc score` to score like any conversion:

- teacher_forced: the model's mels with the TRUE previous target frames fed back. If these keep
  the words that free-running conversion loses, exposure bias is the loss;
- target_envelope: the natural target's spectral envelope (the first --lifter cepstral
  coefficients across the mel bands) with the teacher-forced output's fine structure, and
- model_envelope: the reverse. Which of the two keeps the words says which part loses them;
- target_smoothed_N: the natural target with its envelope averaged over N frames in time (N in
  --smooth), for the word cost of a temporal blur of known width.

Also prints the teacher-forced attention's mean effective width, exp(entropy), in encoder steps
and in frames. Nothing else is written.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch
from benchlib import DEFAULT_DB_ROOT

from vc import Converter
from vc.audio import read_audio, write_audio


def cepstral_envelope(n_mels: int, lifter: int) -> torch.Tensor:
    """(n_mels, n_mels) projection onto the first ``lifter`` DCT-II coefficients across the bands."""
    k = torch.arange(n_mels)
    dct = torch.cos(math.pi / n_mels * (k[None, :] + 0.5) * k[:, None])
    dct = dct / dct.norm(dim=1, keepdim=True)  # orthonormal rows
    kept = dct[:lifter]
    return kept.T @ kept


def smooth_in_time(x: torch.Tensor, frames: int) -> torch.Tensor:
    """(T, D) centred moving average over ``frames`` frames (fewer at the edges)."""
    pooled = torch.nn.functional.avg_pool1d(x.T[None], frames, 1, frames // 2, count_include_pad=False)
    return pooled[0].T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="a training checkpoint or exported model file")
    parser.add_argument("--out", type=Path, required=True, help="folder for the probes' audio folders")
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--lifter", type=int, default=20, help="cepstral coefficients in the envelope")
    parser.add_argument("--smooth", type=int, nargs="*", default=[3, 5], help="odd widths in frames")
    parser.add_argument("--db_root", type=Path, default=DEFAULT_DB_ROOT)
    args = parser.parse_args()
    if any(w < 1 or w % 2 == 0 for w in args.smooth):
        parser.error("--smooth widths must be odd and positive (a centred average)")

    converter = Converter.from_checkpoint(
        args.checkpoint, device="cpu", overrides=["inference.source_warp=none"]
    )
    audio = converter.config.audio
    envelope = cepstral_envelope(audio.n_mels, args.lifter)
    torch.manual_seed(0)  # the prenet's dropout is on in teacher forcing too
    width, steps = 0.0, 0
    for k in range(440, 440 + args.files):
        name = f"arctic_b{k:04d}"
        waves = [
            torch.from_numpy(
                read_audio(args.db_root / f"cmu_us_{who}_arctic" / "wav" / f"{name}.flac", audio)
            )
            for who in ("bdl", "slt")
        ]
        with torch.no_grad():
            (src, src_lens), (tgt, tgt_lens) = (
                converter.features(w[None], torch.tensor([len(w)])) for w in waves
            )
            out = converter.model(
                converter.src_stats.normalize(src), src_lens, converter.tgt_stats.normalize(tgt), tgt_lens
            )
            model, target = converter.tgt_stats.denormalize(out.after)[0], tgt[0]
            model_env, target_env = model @ envelope, target @ envelope
            probes = {
                "teacher_forced": model,
                "target_envelope": target_env + model - model_env,
                "model_envelope": model_env + target - target_env,
            }
            for frames in args.smooth:
                probes[f"target_smoothed_{frames}"] = smooth_in_time(target_env, frames) + target - target_env
            alpha = out.alignments[0].clamp_min(1e-12)
            width += (-(alpha * alpha.log()).sum(dim=1)).exp().sum().item()
            steps += alpha.shape[0]
            for probe, mel in probes.items():
                generator = torch.Generator().manual_seed(0)
                wave, wave_lens = converter.vocoder(mel[None], tgt_lens, generator=generator)
                folder = args.out / probe
                folder.mkdir(parents=True, exist_ok=True)
                write_audio(folder / f"{name}.wav", wave[0, : int(wave_lens[0])].numpy(), audio.sample_rate)
    per_step = converter.config.model.encoder_reduction_factor
    print(
        f"teacher-forced attention width: {width / steps:.2f} encoder steps "
        f"= {width / steps * per_step:.1f} input frames"
    )
    print(f"wrote {', '.join(sorted(p.name for p in args.out.iterdir()))} under {args.out}")


if __name__ == "__main__":
    main()
