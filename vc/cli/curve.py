"""`vc curve`: a run's alignment curve from its TensorBoard logs."""

from __future__ import annotations

from vc.cli.common import add_command

EXAMPLE = "vc curve EXP"


def add_parser(commands) -> None:
    sub = add_command(
        commands, "curve", "print a run's alignment curve (step, minutes, focus, diagonal)", EXAMPLE
    )
    sub.add_argument("exp", help="experiment folder (holds tensorboard/)")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.evaluation.curve import alignment_curve, format_curve

    print(format_curve(alignment_curve(args.exp)))
