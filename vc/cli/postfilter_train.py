"""`vc postfilter-train`: the GAN post-filter that sharpens a conversion model's mels."""

from __future__ import annotations

from vc.cli.common import (
    add_command,
    add_companion_training_args,
    add_overwrite,
    companion_config,
    positive_int,
)

EXAMPLE = (
    "vc postfilter-train data/bdl_slt/train.tsv --checkpoint EXP/checkpoints/averaged.pt "
    "--out EXP/checkpoints/postfilter.pt"
)


def add_parser(commands) -> None:
    sub = add_command(
        commands,
        "postfilter-train",
        "train the GAN post-filter that sharpens a conversion model's mels (on its training pairs)",
        EXAMPLE,
    )
    sub.add_argument("lists", nargs="+", metavar="LIST", help="pair lists (.tsv) the model was trained on")
    sub.add_argument(
        "--checkpoint", required=True, help="the conversion checkpoint (EXP/checkpoints/best.pt)"
    )
    sub.add_argument("--out", required=True, help="post-filter file, e.g. EXP/checkpoints/postfilter.pt")
    add_overwrite(sub, "--out file")
    sub.add_argument(
        "--max-minutes",
        dest="max_minutes",
        type=float,
        help="time limit (default: postfilter.max_minutes, 6)",
    )
    sub.add_argument(
        "--max-steps",
        dest="max_steps",
        type=positive_int,
        help="step limit (default: postfilter.max_steps, 484)",
    )
    sub.add_argument("--valid-files", dest="valid_files", type=int, help="pairs held out (default 10)")
    sub.add_argument("--seed", type=int, help="random seed (default 0)")
    sub.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any postfilter.* setting, e.g. postfilter.channels=128",
    )
    add_companion_training_args(sub)
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.fileio import refuse_overwrite
    from vc.training.postfilter import train_postfilter

    refuse_overwrite([args.out], args.overwrite)
    config = companion_config(args, "postfilter")  # the model's own postfilter section, then the flags
    options = config.postfilter
    info = train_postfilter(
        args.lists, args.checkpoint, args.out, options, not args.no_progress, args.device, config.train.amp,
        args.resume,
    )  # fmt: skip
    print(
        f"post-filter: {args.out} ({info['steps']} steps, {info['minutes']:.1f} min; validation temporal "
        f"detail {info['detail_before']:.3f} -> {info['detail']:.3f}, natural {info['detail_natural']:.3f})"
    )
