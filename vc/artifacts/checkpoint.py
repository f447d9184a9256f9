"""Self-contained checkpoints, written atomically, loaded with one-line errors.

A checkpoint holds everything needed to convert with it or to resume from it:
model, optimizer and AMP scaler states, the step, RNG states, the
resolved config, the feature statistics and the package version. Only plain
types and tensors go in, so it loads with ``weights_only=True``.
"""

from __future__ import annotations

import contextlib
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vc import __version__
from vc.errors import CheckpointError
from vc.fileio import atomic_save, load_marked

FORMAT = "vc-checkpoint"
# A companion network's training state (`vc mel2linear-train` / `postfilter-train` --resume): no model to
# convert with, so another marker (the serving catalog and the converters never take it for one).
TRAINING_STATE = "vc-training-state"
STEP_FILE = re.compile(r"step(\d+)\.pt$")
# What converting with a checkpoint needs; every checkpoint, exported or averaged ones too, holds them.
INFERENCE_KEYS = ("model", "config", "stats", "step")


def nonfinite_weights(state: dict[str, Any]) -> str:
    """Which floating-point tensors of a state dict hold a NaN or an infinity, for a message ("'name'" or
    "'name' and N more"); an empty string when all are finite."""
    names = [
        name
        for name, value in state.items()
        if torch.is_tensor(value) and value.is_floating_point() and not bool(torch.isfinite(value).all())
    ]
    if not names:
        return ""
    return f"'{names[0]}'" + (f" and {len(names) - 1} more" if len(names) > 1 else "")


def save_checkpoint(path: str | Path, payload: dict[str, Any], marker: str = FORMAT) -> None:
    """torch.save to a temp file in the same folder, fsync, then rename over the target.

    A crash at any moment leaves either the old file or the new one, never half of one.
    Weights that are not finite (a diverged run) are refused: such a file is never written.
    """
    if bad := nonfinite_weights(payload.get("model", {})):
        raise CheckpointError(f"refusing to write {path}: its weights are not finite ({bad})")
    payload = {"format": marker, "vc_version": __version__, **payload}
    atomic_save(path, payload)


def load_checkpoint(
    path: str | Path, map_location: str | torch.device = "cpu", marker: str = FORMAT
) -> dict[str, Any]:
    """A checkpoint (``marker``: FORMAT, or TRAINING_STATE for a companion network's training state)."""
    what = "checkpoint" if marker == FORMAT else "training state"
    payload = load_marked(path, marker, what, CheckpointError, map_location=map_location)
    for key in INFERENCE_KEYS if marker == FORMAT else ("model", "step"):
        if key not in payload:
            raise CheckpointError(f"{path} is an incomplete vc checkpoint: '{key}' is missing")
    if bad := nonfinite_weights(payload["model"]):
        raise CheckpointError(
            f"{path} holds non-finite weights ({bad}): it comes from a diverged run; use an earlier checkpoint"
        )
    return payload


def step_checkpoints(folder: Path) -> list[Path]:
    """stepNNNNNNN.pt files in a folder, oldest first."""
    found = [p for p in folder.glob("step*.pt") if STEP_FILE.search(p.name)]
    return sorted(found, key=lambda p: int(STEP_FILE.search(p.name).group(1)))


def prune_checkpoints(folder: Path, keep: int) -> None:
    for old in step_checkpoints(folder)[:-keep] if keep > 0 else []:
        old.unlink(missing_ok=True)


@contextlib.contextmanager
def private_rng(seed: int, device: torch.device) -> Iterator[None]:
    """Run the block on torch's RNG seeded with ``seed``, then restore the outer stream."""
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        yield


def rng_state() -> dict[str, Any]:
    np_state = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": (np_state[0], torch.from_numpy(np_state[1].copy()), *np_state[2:]),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(_tuples(state["python"]))
    kind, keys, *rest = state["numpy"]
    np.random.set_state((kind, keys.numpy(), *rest))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def restore_random(rng: random.Random, state) -> None:
    """Set a private random.Random to a state its getstate() gave, as a checkpoint gives it back."""
    rng.setstate(_tuples(state))


def _tuples(value):
    # weights_only loading may return lists where tuples were saved; random.setstate needs tuples.
    return tuple(_tuples(v) for v in value) if isinstance(value, list | tuple) else value
