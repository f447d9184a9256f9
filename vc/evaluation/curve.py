"""Read a training run's TensorBoard events back: the alignment curve as a table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vc.errors import DataError


@dataclass
class Scalar:
    step: int
    minutes: float  # wall time since training started
    value: float


def read_scalars(exp_dir: str | Path) -> dict[str, list[Scalar]]:
    """Every scalar series of a run's TensorBoard events, by tag, in step order.

    Minutes count from the event file's first record, written when training starts.
    A resumed run's events may repeat steps; the latest record of a step wins.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    folder = Path(exp_dir) / "tensorboard"
    if not folder.is_dir():
        raise DataError(f"no TensorBoard folder in {exp_dir}")
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "images": 1, "audio": 1}).Reload()
    try:
        start = events.FirstEventTimestamp()
    except ValueError:  # no event at all
        return {}
    series = {}
    for tag in events.Tags()["scalars"]:
        by_step = {e.step: Scalar(e.step, (e.wall_time - start) / 60, e.value) for e in events.Scalars(tag)}
        series[tag] = [by_step[step] for step in sorted(by_step)]
    return series


def alignment_curve(exp_dir: str | Path) -> list[dict[str, float]]:
    """One row per evaluation: step, minutes since training started, focus rate, diagonal."""
    series = read_scalars(exp_dir)
    if "valid/align/focus_rate" not in series:
        raise DataError(f"{Path(exp_dir) / 'tensorboard'} has no evaluation yet")
    diagonal = {e.step: e.value for e in series.get("valid/align/diagonal", [])}
    return [
        {
            "step": e.step,
            "minutes": e.minutes,
            "focus_rate": e.value,
            "diagonal": diagonal.get(e.step, float("nan")),
        }
        for e in series["valid/align/focus_rate"]
    ]


def format_curve(rows: list[dict[str, float]]) -> str:
    lines = ["| step | minutes | focus rate | diagonal |", "|---:|---:|---:|---:|"]
    lines += [
        f"| {r['step']} | {r['minutes']:.1f} | {r['focus_rate']:.3f} | {r['diagonal']:.3f} |" for r in rows
    ]
    return "\n".join(lines)
