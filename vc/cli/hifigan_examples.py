"""`vc hifigan-examples`: the examples a HiFi-GAN generator is fine-tuned on (vc.training.hifigan_examples)."""

from __future__ import annotations

from vc.cli.common import add_command

EXAMPLE = "vc hifigan-examples data/bdl_slt/train.tsv --checkpoint EXP/checkpoints/best.pt --out EXP/hifigan_examples"


def add_parser(commands) -> None:
    sub = add_command(
        commands,
        "hifigan-examples",
        "write the target recordings and the model's teacher-forced mels for `vc hifigan-train`",
        EXAMPLE,
    )
    sub.add_argument(
        "pair_lists", nargs="+", metavar="PAIRS", help="pair lists (.tsv); one example per target"
    )
    sub.add_argument("--out", required=True, help="folder of NPZ examples (existing ones are refused)")
    sub.add_argument(
        "--checkpoint", help="conversion checkpoint whose teacher-forced mels the generator hears"
    )
    sub.add_argument(
        "--natural",
        action="store_true",
        help="no model: the generator hears each recording's own mel (it learns the voice alone)",
    )
    sub.add_argument(
        "--vocoder-checkpoint",
        dest="vocoder_checkpoint",
        help="the generator to be fine-tuned, for its signal settings (default: the bundled universal one)",
    )
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=run)


def run(args) -> None:
    from pathlib import Path

    from vc.errors import ConfigError, OutputExistsError
    from vc.training.hifigan_examples import write_examples

    if args.natural == (args.checkpoint is not None):
        raise ConfigError("give either --checkpoint (the model's mels) or --natural (the recordings' own)")
    out = Path(args.out)
    if out.is_dir() and any(out.glob("*.npz")):
        raise OutputExistsError(f"{out} already holds examples: choose another --out")
    count = write_examples(
        args.pair_lists, args.checkpoint, out, natural=args.natural,
        vocoder_checkpoint=args.vocoder_checkpoint, progress=not args.no_progress,
    )  # fmt: skip
    print(f"HiFi-GAN examples: {count} in {out}")
