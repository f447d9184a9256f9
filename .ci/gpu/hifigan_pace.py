"""HiFi-GAN conversion on CUDA against the CPU at equal precision, and its pace (docs/ablation_archive.md, "On a GPU,
2026-12-04 (NVIDIA H200): the main job's model and HiFi-GAN on CUDA"): the bundled model converts the eight
gpu_carry/eval.tsv sources one by one through HiFi-GAN on the GPU (float32) and on the CPU (4 threads) in
float32 and in the vocoder's `auto` precision (bfloat16 on a CPU with AMX); the second round's RTF, and the
waveform SNR of each CPU conversion against the GPU's.

    python .ci/gpu/hifigan_join.py --float32 gpu_carry/universal16.pt /tmp/h/generator.pth
    python .ci/gpu/hifigan_pace.py /tmp/h/generator.pth
"""

import sys
import time

import numpy as np
import torch

from vc.inference.converter import Converter

CARRY = "gpu_carry"
RUNS = (("cuda", "float32"), ("cpu", "float32"), ("cpu", "auto"))


def main(generator: str) -> None:
    with open(f"{CARRY}/eval.tsv") as handle:
        files = [f"{CARRY}/" + line.split("\t")[1] for line in handle.read().splitlines()]
    torch.set_num_threads(4)
    waves = {}
    for device, precision in RUNS:
        converter = Converter.from_pretrained(
            device=device,
            vocoder="hifigan",
            vocoder_checkpoint=generator,
            overrides=[f"vocoder.hifigan.precision={precision}"],
        )
        for _ in range(2):  # the second round's time: the first pays for the set-up
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            results = [converter.convert_file(f) for f in files]
            if device == "cuda":
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - start
        seconds = sum(len(r.wave) for r in results) / results[0].sample_rate
        waves[(device, precision)] = [r.wave for r in results]
        memory = (
            f", peak GPU memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB"
            if device == "cuda"
            else ""
        )
        print(
            f"{device} {precision}: {len(files)} files one by one {elapsed:.2f} s for {seconds:.1f} s: "
            f"RTF {elapsed / seconds:.3f}{memory}"
        )
    for key in RUNS[1:]:
        snrs = []
        for gpu, cpu in zip(waves[RUNS[0]], waves[key], strict=True):
            n = min(len(gpu), len(cpu))
            noise = max(float(np.sum((gpu[:n] - cpu[:n]) ** 2)), 1e-20)
            snrs.append(10 * np.log10(np.sum(cpu[:n] ** 2) / noise))
        print("cuda float32 against", *key, "SNR dB:", " ".join(f"{s:.1f}" for s in snrs))


if __name__ == "__main__":
    main(sys.argv[1])
