"""HiFi-GAN generators through the lent GPU's size limits (.ci/gpu/hifigan.sh): 64 MiB carried, 16 MiB
a returned file, where a V1 generator is 56 MB in float32.

    python .ci/gpu/hifigan_join.py --half OUT.pt               the wheel's universal generator, float16
    python .ci/gpu/hifigan_join.py --float32 IN.pt OUT.pth     a float16 one back in float32 (jik876's format)
    python .ci/gpu/hifigan_join.py --split IN.pth A.pt B.pt    a generator in float16 halves
    python .ci/gpu/hifigan_join.py --join A.pt B.pt OUT.pth    the halves as one float32 generator

The float16 rounding moves the universal generator's output on slt's validation examples by less than
the fine-tuning does (the log says both).
"""

import sys

import torch


def main(argv: list[str]) -> None:
    mode, *paths = argv
    if mode == "--half":
        from vc.artifacts.hifigan import default_checkpoint

        state = torch.load(default_checkpoint(), map_location="cpu", weights_only=True)["generator"]
        torch.save({"generator": {k: v.half() for k, v in state.items()}}, paths[0])
    elif mode == "--float32":
        payload = torch.load(paths[0], map_location="cpu", weights_only=True)
        torch.save({"generator": {k: v.float() for k, v in payload["generator"].items()}}, paths[1])
    elif mode == "--split":
        payload = torch.load(paths[0], map_location="cpu", weights_only=True)
        state = payload["generator"]
        sizes = [state[k].numel() for k in state]
        cut = next(k for k in range(len(sizes)) if sum(sizes[: k + 1]) * 2 >= sum(sizes))  # halves by size
        keys = list(state)
        halves = (keys[: cut + 1], keys[cut + 1 :])
        for path, part in zip(paths[1:], halves, strict=True):
            state = {k: payload["generator"][k].half() for k in part}
            torch.save({"generator": state, "info": payload.get("info", {})}, path)
    elif mode == "--join":
        parts = [torch.load(p, map_location="cpu", weights_only=True) for p in paths[:2]]
        state = {k: v.float() for part in parts for k, v in part["generator"].items()}
        torch.save({"generator": state, "info": parts[0].get("info", {})}, paths[2])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
