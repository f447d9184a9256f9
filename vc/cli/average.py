"""`vc average`: the weights of a run's last checkpoints averaged into one model file."""

from __future__ import annotations

from vc.cli.common import add_command, add_overwrite, positive_int

EXAMPLE = "vc average EXP/checkpoints --last 3 --out EXP/checkpoints/averaged.pt"


def add_parser(commands) -> None:
    sub = add_command(
        commands, "average", "average the weights of a run's last checkpoints into one model file", EXAMPLE
    )
    sub.add_argument(
        "inputs", nargs="+", metavar="PATH", help="checkpoints, or a checkpoints folder (its step*.pt files)"
    )
    sub.add_argument(
        "--out", required=True, help="the model file to write (e.g. EXP/checkpoints/averaged.pt)"
    )
    sub.add_argument("--last", type=positive_int, help="only the newest N of them (default: all given)")
    add_overwrite(sub, "--out file")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.artifacts.averaging import average_checkpoints, checkpoints_to_average

    paths = checkpoints_to_average(args.inputs, args.last)
    summary = average_checkpoints(paths, args.out, overwrite=args.overwrite)
    steps = ", ".join(str(step) for step in summary["steps"])
    print(
        f"averaged model: {args.out} ({summary['count']} checkpoints, steps {steps}; {summary['bytes'] / 1e6:.1f} MB)"
    )
