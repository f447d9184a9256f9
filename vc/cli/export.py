"""`vc export`: an inference-only model file from a training checkpoint."""

from __future__ import annotations

from vc.cli.common import add_command, add_overwrite

EXAMPLE = "vc export EXP/checkpoints/averaged.pt my_model.pt"


def add_parser(commands) -> None:
    sub = add_command(
        commands,
        "export",
        "write an inference-only model file (fp16 weights, config, statistics, mel2linear network, post-filter)",
        EXAMPLE,
    )
    sub.add_argument("checkpoint", help="a checkpoint written by vc train (e.g. EXP/checkpoints/best.pt)")
    sub.add_argument("out", help="the model file to write")
    add_overwrite(sub, "OUT")
    sub.add_argument("--float32", action="store_true", help="keep float32 weights (default fp16)")
    sub.add_argument(
        "--mel2linear", metavar="FILE", help="network to embed (default: mel2linear.pt beside the checkpoint)"
    )
    sub.add_argument("--no-mel2linear", action="store_true", help="embed no network (pseudo-inverse)")
    sub.add_argument(
        "--postfilter", metavar="FILE", help="post-filter to embed (default: postfilter.pt beside it)"
    )
    sub.add_argument("--no-postfilter", action="store_true", help="embed no post-filter")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.artifacts.export import export_model
    from vc.fileio import refuse_overwrite

    refuse_overwrite([args.out], args.overwrite)
    mel2linear = False if args.no_mel2linear else args.mel2linear
    postfilter = False if args.no_postfilter else args.postfilter
    summary = export_model(
        args.checkpoint, args.out, half=not args.float32, mel2linear=mel2linear, postfilter=postfilter
    )
    net = (
        f", mel2linear network {summary['mel2linear']}"
        if summary["mel2linear"]
        else ", no mel2linear network"
    )
    net += f", post-filter {summary['postfilter']}" if summary["postfilter"] else ", no post-filter"
    print(
        f"model file: {args.out} ({summary['bytes'] / 1e6:.1f} MB, step {summary['step']}, "
        f"{summary['parameters'] / 1e6:.2f} M parameters{net})"
    )
