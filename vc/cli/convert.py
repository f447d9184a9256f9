"""`vc convert`: audio files through a trained or bundled model.

The parser imports nothing heavy: torch and the model load only when a conversion runs.
"""

from __future__ import annotations

import sys

from vc.cli.common import add_command, add_overwrite, positive_int
from vc.vocoders import VOCODERS, built_in

EXAMPLE = (
    "vc convert in.wav out.wav    |    "
    "vc convert --checkpoint EXP/student/checkpoints/averaged.pt --out-dir converted/ a.wav folder/"
)
# vc.inference.files.DEFAULT_CONVERT_THREADS, written out so that --help imports no torch (a test checks).
DEFAULT_THREADS_SHOWN = 1


def add_parser(commands) -> None:
    sub = add_command(commands, "convert", "convert audio files with a trained or bundled model", EXAMPLE)
    which = sub.add_mutually_exclusive_group()
    which.add_argument(
        "--checkpoint", help="a checkpoint written by vc train or vc export (default: the bundled model)"
    )
    which.add_argument("--model", metavar="NAME", help="a bundled model by name (vc models lists them)")
    sub.add_argument(
        "paths", nargs="+", metavar="PATH", help="IN OUT, or inputs (files/folders) with --out-dir"
    )
    sub.add_argument("--out-dir", help="write DIR/<input name>.wav for every input")
    add_overwrite(sub, "output (OUT, a file in DIR, an alignment)")
    sub.add_argument("--device", default="auto", help="cpu, cuda, cuda:1, ... (default: cuda if available)")
    sub.add_argument(
        "--vocoder",
        choices=list(VOCODERS),
        help=f"the vocoder (default: the model's vocoder.kind, {built_in()} unless set); hifigan: a pretrained "
        "HiFi-GAN (the [neural] extra)",
    )
    sub.add_argument(
        "--vocoder-checkpoint",
        metavar="FILE",
        help="a HiFi-GAN generator checkpoint (jik876/hifi-gan's format) for --vocoder hifigan "
        "(default: the universal V1 generator of the [neural] extra)",
    )
    sub.add_argument(
        "--griffin-lim-iters", type=int, help="Griffin-Lim iterations (default: from the checkpoint)"
    )
    sub.add_argument(
        "--save-alignment", metavar="FILE", help="FILE.png or FILE.npy; with --out-dir the format png or npy"
    )
    sub.add_argument("--batch-size", type=positive_int, default=8, help="files converted at once")
    sub.add_argument(
        "--threads",
        type=positive_int,
        help=f"CPU threads for torch (default: $VC_THREADS, else {DEFAULT_THREADS_SHOWN}: on a busy 2-core "
        "machine 2 threads were slower than 1, and no faster idle: bench/README.md)",
    )
    sub.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="key=value",
        help="override an inference/vocoder setting, e.g. inference.max_ratio=2",
    )
    sub.add_argument(
        "--strict", action="store_true", help="stop at the first unusable input (default: convert the rest)"
    )
    _add_companions(sub)
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=run)


def _add_companions(sub) -> None:
    sub.add_argument(
        "--mel2linear",
        metavar="FILE",
        help="mel -> linear network for Griffin-Lim (default: mel2linear.pt beside the checkpoint, if any)",
    )
    sub.add_argument(
        "--no-mel2linear", action="store_true", help="use the filterbank pseudo-inverse, not the network"
    )
    sub.add_argument(
        "--postfilter",
        metavar="FILE",
        help="GAN post-filter for the converted mels (default: postfilter.pt beside the checkpoint, if any)",
    )
    sub.add_argument("--no-postfilter", action="store_true", help="vocode the model's mels as they are")
    sub.add_argument(
        "--timing",
        metavar="CHECKPOINT",
        help="an attention model's checkpoint: a recognition-synthesis converter speaks at its timing and "
        'pitch (its alignment re-times the content; docs/ablation.md, "The attention model\'s timing")',
    )


def run(args) -> None:
    import torch

    from vc.errors import AudioError
    from vc.inference import Converter, convert_files
    from vc.inference.files import convert_threads, plan_conversion
    from vc.vocoders import vocoder_overrides

    # Before the inputs are checked: a wrong pair of vocoder options is the first thing to say.
    overrides = [*args.overrides, *vocoder_overrides(args.vocoder, args.vocoder_checkpoint)]
    torch.set_num_threads(convert_threads(args.threads))
    if args.griffin_lim_iters is not None:
        overrides.append(f"vocoder.griffin_lim.iters={args.griffin_lim_iters}")
    # Before the model loads: a refused output costs no work and loses nothing.
    plan = plan_conversion(args.paths, args.out_dir, args.save_alignment, overwrite=args.overwrite)
    mel2linear = False if args.no_mel2linear else args.mel2linear  # None: the checkpoint's companion
    postfilter = False if args.no_postfilter else args.postfilter  # None: embedded, else the companion
    converter = Converter.from_checkpoint(
        _checkpoint(args),
        device=args.device,
        overrides=overrides,
        mel2linear=mel2linear,
        postfilter=postfilter,
        timing=args.timing,
    )
    failures = convert_files(
        converter,
        plan.inputs,
        plan.outputs,
        batch_size=args.batch_size,
        alignments=plan.alignments,
        progress=not args.no_progress,
        strict=args.strict or len(plan.inputs) == 1,  # one input: its error is the whole answer
    )
    count = len(plan.inputs)
    where = args.out_dir if args.out_dir else plan.outputs[0]
    print(f"converted {count - len(failures)} of {count} file(s): {where}")
    if failures:
        listing = "".join(f"\n  {failure.reason}" for failure in failures)
        raise AudioError(f"{len(failures)} of {count} file(s) not converted:{listing}")


def _checkpoint(args):
    """--checkpoint, else the bundled model --model names (or the default one, said once on stderr)."""
    if args.checkpoint is not None:
        return args.checkpoint
    from vc.artifacts.pretrained import get_model, model_path

    checkpoint = model_path(args.model)
    if args.model is None:  # said once, so a user knows what converted their voice
        bundled = get_model(None)
        print(
            f"vc convert: no --checkpoint given: using the bundled model '{bundled.name}' "
            f"({bundled.description}; vc models)",
            file=sys.stderr,
        )
    return checkpoint
