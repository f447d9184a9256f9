"""`vc cores`: how this machine's cores share training work (vc/cores.py), the recipe's side-by-side choice."""

from __future__ import annotations

import json

from vc.cli.common import add_command
from vc.fileio import atomic_write_text

EXAMPLE = "vc cores --seconds 4 --json EXP/logs/cores.json"


def positive_seconds(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= 600:
        raise argparse.ArgumentTypeError(f"expected seconds in (0, 600], got {text!r}")
    return value


def add_parser(commands) -> None:
    sub = add_command(
        commands,
        "cores",
        "measure two 1-thread trainings side by side against one 2-thread training on this machine",
        EXAMPLE,
    )
    sub.add_argument(
        "--seconds",
        type=positive_seconds,
        default=4.0,
        help="each way's seconds in all, in turns (default 4)",
    )
    sub.add_argument("--json", help="also write the steps and the gain to this JSON file")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.cores import side_by_side_gain

    found = side_by_side_gain(args.seconds)
    if args.json:
        atomic_write_text(args.json, json.dumps(found) + "\n")
    pair = " + ".join(str(steps) for steps in found["side_by_side_1_thread"])
    print(
        f"side by side: {found['gain']:.2f}x the work of one 2-thread process ({pair} training steps "
        f"against {found['alone_2_threads']}, {found['seconds']:g} s each way in {found['rounds']} turns)"
    )
