"""Where the Griffin-Lim ceiling loses its MCD: the mel -> linear network's magnitude, or the phase?

    python bench/vocoder_ceiling.py --mel2linear EXP/checkpoints/mel2linear.pt [--files 10] [--db_root DIR]

For the first --files slt eval utterances (arctic_b0440...), each natural recording is rebuilt
in several ways and scored against itself with stage 6's MCD (WORLD + SPTK, vc.evaluation.metrics):

- true magnitude + Griffin-Lim (32 iterations): what phase retrieval alone costs;
- network magnitude + the TRUE phase: what the network's magnitude alone costs;
- network magnitude + Griffin-Lim at 32 / 100 / 300 iterations: the ceiling `vc score` reports
  (32), and whether more iterations close the gap;
- true or network magnitude + phase-gradient heap integration (bench/pghi.py), alone and as
  Griffin-Lim's start: whether a phase derived from the magnitude beats a random start.

Prints one line per way with the mean MCD; nothing is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from benchlib import DEFAULT_DB_ROOT
from pghi import pghi_phase

from vc.artifacts.mel2linear import mel2linear_from_payload, read_mel2linear_payload
from vc.audio import LogMel, read_audio
from vc.audio.griffin_lim import griffin_lim
from vc.config import AudioConfig
from vc.evaluation.metrics import analyse, score_analyses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mel2linear", required=True, help="a stage-4 network (EXP/checkpoints/mel2linear.pt)"
    )
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--db_root", type=Path, default=DEFAULT_DB_ROOT)
    args = parser.parse_args()

    payload = read_mel2linear_payload(args.mel2linear)
    audio = AudioConfig(**payload["audio"])
    net = mel2linear_from_payload(payload, args.mel2linear, audio)
    extractor = LogMel(audio)
    window = torch.hann_window(audio.win_length)
    stft = dict(n_fft=audio.n_fft, hop_length=audio.hop_length, win_length=audio.win_length, window=window)
    mcd: dict[str, list[float]] = {}
    wav = args.db_root / "cmu_us_slt_arctic" / "wav"
    for k in range(440, 440 + args.files):
        wave = torch.from_numpy(read_audio(wav / f"arctic_b0{k}.flac", audio))
        reference = analyse(wave.numpy(), audio.sample_rate)
        spectrum = torch.stft(wave, return_complex=True, **stft)  # (bins, T)
        logmel, _ = extractor(wave[None])
        with torch.no_grad():
            predicted = 10.0 ** net(logmel, torch.tensor([logmel.shape[1]]))[0].T.float()
        frames = min(spectrum.shape[1], predicted.shape[1])
        spectrum, predicted = spectrum[:, :frames], predicted[:, :frames]
        true_phase = spectrum / spectrum.abs().clamp(min=1e-8)
        ways = {
            "true magnitude + Griffin-Lim 32": griffin_lim(spectrum.abs()[None], n_iter=32, **stft)[0],
            "network magnitude + true phase": torch.istft(predicted * true_phase, **stft),
        }
        for iterations in (32, 100, 300):
            ways[f"network magnitude + Griffin-Lim {iterations}"] = griffin_lim(
                predicted[None], n_iter=iterations, **stft
            )[0]
        magnitudes = {"true": spectrum.abs(), "network": predicted}
        derived = {
            name: torch.from_numpy(
                pghi_phase(magnitude.numpy(), audio.hop_length, audio.n_fft, audio.win_length)
            ).float()
            for name, magnitude in magnitudes.items()
        }
        for name, magnitude in magnitudes.items():
            ways[f"{name} magnitude + PGHI"] = torch.istft(torch.polar(magnitude, derived[name]), **stft)
        for iterations in (8, 32):
            ways[f"network magnitude + PGHI + Griffin-Lim {iterations}"] = griffin_lim(
                predicted[None], n_iter=iterations, init=derived["network"], **stft
            )[0]
        for name, rebuilt in ways.items():
            scores = score_analyses(analyse(rebuilt.numpy().astype(np.float64), audio.sample_rate), reference)
            mcd.setdefault(name, []).append(scores["mcd"])
    print(
        f"MCD [dB] against the natural recording, slt arctic_b0440.. ({args.files} files), {args.mel2linear}"
    )
    for name, values in mcd.items():
        print(f"  {name:40s} {np.mean(values):.2f}")


if __name__ == "__main__":
    main()
