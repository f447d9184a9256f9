"""Checkpoint averaging: the mean weights of a run's last snapshots, as one model (`vc average`).

A 30-minute run's best.pt depends on the training seed more than on most
settings. Over five runs (two seeds x two reduction factors, and the 90-minute
`long` run) best.pt scored 58.0-66.7 % WER and the mean of the last three
snapshots 60.4-62.9 %: about the same mean, a third of the spread
(docs/ablation.md, "Averaging and the decode options in the recipe"). The
snapshots are 100 steps apart, close enough in weight space that their mean
is a model of its own; the recipe's stage 3 ends with it.

The output is an inference file like `vc export`'s (weights, config,
statistics, step; float32, no optimizer state): `vc convert` and Converter
load it, and the companion networks beside it (mel2linear.pt, postfilter.pt)
serve it when it is written into the same folder.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from vc.artifacts.checkpoint import INFERENCE_KEYS, load_checkpoint, save_checkpoint, step_checkpoints
from vc.config import Config
from vc.errors import CheckpointError
from vc.fileio import refuse_overwrite


def checkpoints_to_average(inputs: list[str | Path], last: int | None = None) -> list[Path]:
    """The files ``inputs`` name; a folder stands for its stepNNNNNNN.pt snapshots, oldest first.

    ``last``: keep only the newest ``last`` of them. At least two are needed.
    """
    paths: list[Path] = []
    for item in map(Path, inputs):
        if item.is_dir():
            found = step_checkpoints(item)
            if not found:
                raise CheckpointError(f"{item} holds no stepNNNNNNN.pt snapshots to average")
            paths.extend(found)
        else:
            paths.append(item)
    if last is not None:
        paths = paths[-last:]
    if len(paths) < 2:
        raise CheckpointError(f"averaging needs at least 2 checkpoints, got {len(paths)}")
    return paths


def average_checkpoints(paths: list[str | Path], out: str | Path, overwrite: bool = True) -> dict:
    """Write the mean of ``paths``' weights to ``out`` (atomically); returns a summary for one line.

    The checkpoints must come from one run: the same network (model config, less the keys that only
    steer training, ModelConfig.TRAINING_ONLY: a run resumed with another stopping rule is one model)
    and feature statistics. Config, statistics and step are the newest (highest step) one's.
    An existing ``out`` is replaced only with ``overwrite``; an input never is.
    """
    paths = [Path(p) for p in paths]
    if Path(out).resolve() in {p.resolve() for p in paths}:
        raise CheckpointError(f"{out} is one of the checkpoints to average; write the average elsewhere")
    refuse_overwrite([out], overwrite)
    payloads = [load_checkpoint(p) for p in paths]
    newest = max(range(len(paths)), key=lambda k: payloads[k]["step"])
    reference, where = payloads[newest], paths[newest]
    network = _network_settings(reference)
    for path, payload in zip(paths, payloads, strict=True):
        if _network_settings(payload) != network:
            raise CheckpointError(f"{path} and {where} are different models (model config differs)")
        if payload["stats"] != reference["stats"]:
            raise CheckpointError(f"{path} and {where} come from different runs (feature statistics differ)")
        if payload["model"].keys() != reference["model"].keys():
            raise CheckpointError(f"{path} and {where} hold different weights")
    averaged = {}
    for key, value in reference["model"].items():
        if value.is_floating_point():
            # Summed in float64: the mean of float16 (exported) weights keeps float32 precision.
            total = sum(payload["model"][key].double() for payload in payloads)
            averaged[key] = (total / len(payloads)).float()
        else:  # counters such as BatchNorm's num_batches_tracked: the newest one's
            averaged[key] = value
    steps = [int(payload["step"]) for payload in payloads]
    kept = {key: reference[key] for key in INFERENCE_KEYS}
    info = {"averaged_from": [p.name for p in paths], "averaged_steps": steps}
    save_checkpoint(out, {**kept, "model": averaged, "info": info})
    return {"count": len(paths), "steps": steps, "bytes": Path(out).stat().st_size}


def _network_settings(payload: dict) -> dict:
    """A checkpoint's model settings that make its network (as read today: older keys upgraded)."""
    model = Config.from_dict(payload["config"], stored=True).model
    return type(model).network_settings(dataclasses.asdict(model))
