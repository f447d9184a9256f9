"""`vc stats`: per-speaker feature statistics of the training list."""

from __future__ import annotations

from pathlib import Path

from vc.cli.common import add_command, add_experiment_args, experiment_config

EXAMPLE = (
    "vc stats --config default --out-dir exp/mine --set data.train_list=train.tsv --set data.dev_list=dev.tsv"
)


def add_parser(commands) -> None:
    sub = add_command(
        commands, "stats", "write per-speaker feature statistics to OUT_DIR/stats.json", EXAMPLE
    )
    add_experiment_args(sub)
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.training.data import speaker_stats

    speaker_stats(experiment_config(args), args.out, progress=not args.no_progress)
    print(f"statistics of the training list: {Path(args.out) / 'stats.json'}")
