"""Read a training run's TensorBoard events back: the alignment curve as a table."""

from __future__ import annotations

from pathlib import Path

from vc.errors import DataError


def alignment_curve(exp_dir: str | Path) -> list[dict[str, float]]:
    """One row per evaluation: step, minutes since training started, focus rate, diagonal.

    Minutes count from the event file's first record, written when training starts.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    folder = Path(exp_dir) / "tensorboard"
    if not folder.is_dir():
        raise DataError(f"no TensorBoard folder in {exp_dir}")
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0}).Reload()
    if "valid/align/focus_rate" not in events.Tags()["scalars"]:
        raise DataError(f"{folder} has no evaluation yet")
    start = events.FirstEventTimestamp()
    diagonal = {e.step: e.value for e in events.Scalars("valid/align/diagonal")}
    return [
        {
            "step": e.step,
            "minutes": (e.wall_time - start) / 60,
            "focus_rate": e.value,
            "diagonal": diagonal[e.step],
        }
        for e in events.Scalars("valid/align/focus_rate")
    ]


def format_curve(rows: list[dict[str, float]]) -> str:
    lines = ["| step | minutes | focus rate | diagonal |", "|---:|---:|---:|---:|"]
    lines += [
        f"| {r['step']} | {r['minutes']:.1f} | {r['focus_rate']:.3f} | {r['diagonal']:.3f} |" for r in rows
    ]
    return "\n".join(lines)
