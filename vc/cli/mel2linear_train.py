"""`vc mel2linear-train`: the mel -> linear magnitude network Griffin-Lim starts from."""

from __future__ import annotations

from vc.cli.common import (
    add_command,
    add_companion_training_args,
    add_overwrite,
    companion_config,
    positive_int,
    section_overrides,
)

EXAMPLE = (
    "vc mel2linear-train data/bdl_slt/train.tsv --config EXP/config.yaml --out EXP/checkpoints/mel2linear.pt"
)


def add_parser(commands) -> None:
    sub = add_command(
        commands,
        "mel2linear-train",
        "train the mel -> linear magnitude network for Griffin-Lim on the target speaker's recordings",
        EXAMPLE,
    )
    sub.add_argument(
        "inputs",
        nargs="+",
        metavar="PATH",
        help="pair lists (.tsv: the target column), audio files or folders",
    )
    sub.add_argument("--out", required=True, help="network file, e.g. EXP/checkpoints/mel2linear.pt")
    add_overwrite(sub, "--out file")
    sub.add_argument(
        "--config",
        help="YAML config whose audio settings the conversion model uses (default: --checkpoint's own, else "
        "the defaults)",
    )
    sub.add_argument(
        "--checkpoint",
        help="conversion checkpoint: also train on its teacher-forced predicted mels (needs pair lists)",
    )
    sub.add_argument(
        "--max-minutes",
        dest="max_minutes",
        type=float,
        help="time limit (default: mel2linear.max_minutes, 6)",
    )
    sub.add_argument(
        "--max-steps",
        dest="max_steps",
        type=positive_int,
        help="step limit (default: mel2linear.max_steps, 1880)",
    )
    sub.add_argument("--batch-size", dest="batch_size", type=positive_int, help="crops per step (default 16)")
    sub.add_argument("--valid-files", dest="valid_files", type=int, help="files held out (default 10)")
    sub.add_argument("--seed", type=int, help="random seed (default 1)")
    sub.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any mel2linear.* setting, e.g. mel2linear.channels=256",
    )
    add_companion_training_args(sub)
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.config import load_config
    from vc.fileio import refuse_overwrite
    from vc.training.mel2linear import train_mel2linear

    refuse_overwrite([args.out], args.overwrite)
    if args.config is None and args.checkpoint is not None:  # the model's own settings, as postfilter-train
        config = companion_config(args, "mel2linear")
    else:  # the model's config.yaml, perhaps from an older version (none: the defaults)
        config = load_config(args.config, section_overrides(args, "mel2linear"), stored=True)
    info = train_mel2linear(
        args.inputs,
        config.audio,
        args.out,
        config.mel2linear,
        progress=not args.no_progress,
        checkpoint=args.checkpoint,
        device=args.device,
        amp=config.train.amp,
        resume=args.resume,
    )
    print(
        f"mel -> linear network: {args.out} ({info['steps']} steps, {info['minutes']:.1f} min, "
        f"validation {info['valid_db']:.2f} dB, at start {info['linear_db']:.2f} dB)"
    )
