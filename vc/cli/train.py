"""`vc train`: train a model, one process or several under torchrun."""

from __future__ import annotations

from pathlib import Path

from vc.cli.common import add_command, add_experiment_args, experiment_config, setup_logging

EXAMPLE = (
    "vc train --config default --out-dir exp/mine --set data.train_list=train.tsv --set data.dev_list=dev.tsv"
)


def add_parser(commands) -> None:
    sub = add_command(commands, "train", "train a model (torchrun for several processes)", EXAMPLE)
    add_experiment_args(sub)
    sub.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --out-dir")
    sub.add_argument("--no-progress", action="store_true", help="no progress bar")
    sub.add_argument(
        "--recognizer-only",
        action="store_true",
        help="train only the run's phone recognizer (OUT/phone_classifier.pt, reused by a later vc train into "
        "the same folder) and stop",
    )
    sub.add_argument(
        "--stop-file",
        metavar="PATH",
        help="end training at the next step once PATH exists, as its time limit would (evaluated, saved, "
        "resumable); the recipe's side lane stops the attention model this way when the run needs its core",
    )
    sub.set_defaults(func=run)


def run(args) -> None:
    import os

    from vc.training.trainer import train, train_recognizer

    config = experiment_config(args)
    rank = int(os.environ.get("RANK", "0"))
    setup_logging(args.verbose, Path(args.out) / "train.log" if rank == 0 else None)
    if args.recognizer_only:
        print(f"phone recognizer: {train_recognizer(config, args.out, progress=not args.no_progress)}")
        return
    best = train(
        config, args.out, resume=args.resume, progress=not args.no_progress, stop_file=args.stop_file
    )
    if best is not None:
        print(f"best checkpoint: {best}")
        print(f"tensorboard: tensorboard --logdir {Path(args.out) / 'tensorboard'}")
