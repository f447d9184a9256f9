"""`vc hifigan-train`: fine-tune a HiFi-GAN generator on the target speaker (vc.training.hifigan)."""

from __future__ import annotations

from vc.cli.common import add_command, add_companion_training_args, add_overwrite, positive_int

EXAMPLE = (
    "vc hifigan-train EXP/hifigan_examples --out EXP/hifigan/generator.pth --max-minutes 60 --device cuda"
)


def add_parser(commands) -> None:
    sub = add_command(
        commands,
        "hifigan-train",
        "fine-tune a HiFi-GAN generator on the target's recordings and the model's mels (a GPU's work; then --vocoder-checkpoint)",
        EXAMPLE,
    )
    sub.add_argument("examples", help="folder of NPZ examples (vc hifigan-examples)")
    sub.add_argument("--out", required=True, help="generator file (jik876's format), config.json beside it")
    add_overwrite(sub, "--out file")
    sub.add_argument("--start", help="generator to start from (default: the bundled universal one)")
    sub.add_argument("--max-minutes", dest="max_minutes", type=float, default=0.0, help="time limit")
    sub.add_argument("--max-steps", dest="max_steps", type=positive_int, default=0, help="step limit")
    sub.add_argument(
        "--batch-size", dest="batch_size", type=positive_int, help="segments per step (default 16)"
    )
    sub.add_argument("--learning-rate", dest="learning_rate", type=float, help="AdamW's rate (default 1e-4)")
    sub.add_argument("--eval-every", dest="eval_every", type=positive_int, help="steps between validations")
    sub.add_argument("--amp", action="store_true", help="mixed precision on CUDA")
    add_companion_training_args(sub)
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=run)


def run(args) -> None:
    import dataclasses

    from vc.fileio import refuse_overwrite
    from vc.training.hifigan import HifiganTrainOptions, train_hifigan

    refuse_overwrite([args.out], args.overwrite)
    given = {key: getattr(args, key) for key in ("batch_size", "learning_rate", "eval_every")}
    options = dataclasses.replace(
        HifiganTrainOptions(max_minutes=args.max_minutes, max_steps=args.max_steps),
        **{key: value for key, value in given.items() if value is not None},
    )
    device = None if args.device == "auto" else args.device
    info = train_hifigan(
        args.examples, args.out, options, start=args.start, device=device, amp=args.amp,
        resume=args.resume, progress=not args.no_progress,
    )  # fmt: skip
    print(
        f"HiFi-GAN generator: {args.out} ({info['steps']} steps, {info['minutes']:.1f} min, validation "
        f"log-mel L1 {info['valid_mel_l1_before']:.4f} -> {info['valid_mel_l1']:.4f})"
    )
