"""On the GPU machine: pack_features.py's file -> pair lists and vc's feature caches under their own names.

    python gpu_carry/unpack_features.py gpu_carry/feats.xz CONFIG.yaml DIR

Writes DIR/train.tsv, DIR/dev.tsv (audio paths that do not exist: training reads only the caches) and
DIR/features/{train,dev}-HASH.pt, the names vc.training.data.cache_path gives those lists under CONFIG's
audio settings, so `vc train ... data.cache_dir=DIR/features` finds them.
"""

import lzma
import pickle
import sys
from pathlib import Path

import numpy as np
import torch

from vc.config import load_config
from vc.training.data import cache_path


def main() -> None:
    blob, config, root = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    packed = pickle.loads(lzma.decompress(Path(blob).read_bytes()))
    audio = load_config(config).audio
    (root / "features").mkdir(parents=True, exist_ok=True)

    def logmel(codes: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(codes.astype(np.float32) * packed["step"] + packed["lo"])

    for split in ("train", "dev"):
        items = sorted(packed[split].items())
        pairs = root / f"{split}.tsv"
        pairs.write_text(
            "".join(f"{u}\t/nonexistent/{u}.flac\t/nonexistent/{p}.flac\n" for u, (_, p) in items)
        )
        tensors = {u: (logmel(src), logmel(packed["targets"][p])) for u, (src, p) in items}
        torch.save(tensors, cache_path(pairs, audio, root / "features"))
        print(split, len(tensors), "pairs")


if __name__ == "__main__":
    main()
