"""Inference-only model files: what a trained run ships (`vc export`, the bundled models).

A training checkpoint carries the optimizer, scaler and RNG states
needed to resume (about three times the weights). An exported file keeps what
conversion needs: the model weights (fp16 by default: half the size, and the
converted audio is the same to a listener; the weights are cast back to
float32 on load), the resolved config, the feature statistics, the step, and
the mel -> linear network for Griffin-Lim embedded, so one file converts
exactly as `vc convert --checkpoint` did with the network beside it. It is
still a vc checkpoint: everything that loads one (Converter, vc convert) loads it.
"""

from __future__ import annotations

from pathlib import Path

import torch

from vc.artifacts.checkpoint import INFERENCE_KEYS, load_checkpoint, save_checkpoint
from vc.artifacts.companion import MEL2LINEAR, POSTFILTER, CompanionKind


def _half(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: value.half() if value.is_floating_point() else value for key, value in state.items()}


def _embed(exported, payload, checkpoint, kind: CompanionKind, half, choice) -> Path | None:
    """Put the companion network of ``kind`` into ``exported``; returns where it came from, or None.

    ``choice``: a file, False (none), or None: the companion beside the checkpoint, else a network
    already embedded in ``checkpoint`` (an exported or bundled file being exported again).
    """
    key, path = kind.embedded_key, kind.find(checkpoint, choice)
    if path is not None:
        net = kind.read_payload(path)
    elif choice is None and key in payload:
        net, path = payload[key], Path(checkpoint)
    else:
        return None
    exported[key] = {**net, "model": _half(net["model"]) if half else net["model"]}
    return path


def export_model(
    checkpoint: str | Path,
    out: str | Path,
    *,
    half: bool = True,
    mel2linear: str | Path | bool | None = None,
    info: dict | None = None,
    postfilter: str | Path | bool | None = None,
) -> dict:
    """Write the inference-only file ``out`` (atomically); returns what it holds, for a summary line.

    ``mel2linear`` as in Converter.from_checkpoint: None embeds mel2linear.pt
    from beside the checkpoint when there is one, a path embeds that file,
    False embeds none (the pseudo-inverse path). ``postfilter``: the same for
    the GAN post-filter (postfilter.pt). Exporting an exported file again keeps
    what it embeds unless a file or False replaces it.
    """
    payload = load_checkpoint(checkpoint)
    exported = {key: payload[key] for key in INFERENCE_KEYS}
    if half:
        exported["model"] = _half(exported["model"])
    net_path = _embed(exported, payload, checkpoint, MEL2LINEAR, half, mel2linear)
    postfilter_path = _embed(exported, payload, checkpoint, POSTFILTER, half, postfilter)
    exported["info"] = {"exported_from": Path(checkpoint).name, "dtype": "float16" if half else "float32"}
    exported["info"].update(info or {})
    save_checkpoint(out, exported)
    return {
        "step": int(payload["step"]),
        "parameters": sum(value.numel() for value in payload["model"].values()),
        "mel2linear": net_path,
        "postfilter": postfilter_path,
        "bytes": Path(out).stat().st_size,
    }
