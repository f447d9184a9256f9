"""The HiFi-GAN generator through the lent GPU's carry limit (64 MiB, where a V1 generator is 56 MB in
float32): in float16 here, back in float32 there (.ci/gpu/recognition_synthesis.sh).

    python .ci/gpu/hifigan_join.py --half OUT.pt               the wheel's universal generator, float16
    python .ci/gpu/hifigan_join.py --float32 IN.pt OUT.pth     a float16 one back in float32 (jik876's format)
"""

import sys

import torch


def main(argv: list[str]) -> None:
    mode, *paths = argv
    if mode == "--half":
        from vc.vocoders.hifigan.weights import default_checkpoint

        state = torch.load(default_checkpoint(), map_location="cpu", weights_only=True)["generator"]
        torch.save({"generator": {k: v.half() for k, v in state.items()}}, paths[0])
    elif mode == "--float32":
        payload = torch.load(paths[0], map_location="cpu", weights_only=True)
        torch.save({"generator": {k: v.float() for k, v in payload["generator"].items()}}, paths[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
