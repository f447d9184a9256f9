"""A third of the many-voice training data, small enough to travel to a GPU machine (64 MiB with the repo).

    python .ci/gpu/pack_features.py EXP/features/train-HASH.pt EXP/features/dev-HASH.pt gpu_carry/feats.xz

Reads the feature caches of `run.sh --tts_voices yes --tag any2one_tts` and keeps every bdl pair and,
of each of the seven TTS voices, the prompts whose index modulo 3 is the voice's index modulo 3 (3107
training pairs: 932 bdl + 2175 TTS; dev: bdl's 100 + 10 per voice). Log-mels are quantised to 8 bits
over their global range (a step of 0.042 log10 units, 0.85 dB) and slt's targets are stored once per
prompt; lzma packs it to 37.5 MB. unpack_features.py writes vc's feature caches from it.
"""

import lzma
import pickle
import sys

import numpy as np
import torch


def prompt(utt: str) -> str:
    """arctic_a0001 for bdl's arctic_a0001 and for espeak-gb-m7_arctic_a0001."""
    return utt if utt.startswith("arctic_") else utt.split("_", 1)[1]


def voice(utt: str) -> str:
    return "bdl" if utt.startswith("arctic_") else utt.split("_", 1)[0]


def main() -> None:
    train_cache, dev_cache, out_path = sys.argv[1:4]
    train = torch.load(train_cache, weights_only=True)
    dev = torch.load(dev_cache, weights_only=True)
    voices = sorted({voice(u) for u in train} - {"bdl"})
    index = {p: i for i, p in enumerate(sorted({prompt(u) for u in train}))}
    keep = {
        "train": [
            u
            for u in sorted(train)
            if voice(u) == "bdl" or index[prompt(u)] % 3 == voices.index(voice(u)) % 3
        ],
        "dev": [],
    }
    per_voice: dict[str, int] = {}
    for u in sorted(dev):
        per_voice[voice(u)] = per_voice.get(voice(u), 0) + 1
        if voice(u) == "bdl" or per_voice[voice(u)] <= 10:
            keep["dev"].append(u)
    tensors = [t for cache in (train, dev) for pair in cache.values() for t in pair]
    lo, hi = float(min(t.min() for t in tensors)), float(max(t.max() for t in tensors))
    step = (hi - lo) / 255
    packed = {"lo": lo, "step": step, "train": {}, "dev": {}, "targets": {}}
    for split, cache in (("train", train), ("dev", dev)):
        for u in keep[split]:
            src, tgt = cache[u]
            packed[split][u] = (np.round((src.numpy() - lo) / step).astype(np.uint8), prompt(u))
            packed["targets"][prompt(u)] = np.round((tgt.numpy() - lo) / step).astype(np.uint8)
    blob = lzma.compress(pickle.dumps(packed, protocol=4), preset=6)
    with open(out_path, "wb") as out:
        out.write(blob)
    print(f"voices {voices}; train {len(keep['train'])}, dev {len(keep['dev'])} pairs; {len(blob)} bytes")


if __name__ == "__main__":
    main()
