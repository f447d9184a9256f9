"""`vc gmm-peer`: the classical peer, a joint-density GMM trained and run on the same pairs."""

from __future__ import annotations

from pathlib import Path

from vc.cli.common import add_command, add_overwrite, positive_int

DESCRIPTION = (
    "Train the joint-density GMM voice conversion of Toda et al. (2007) as sprocket runs it\n"
    "(MLPG, global-variance post-filter, WORLD) on the first training pairs, and convert the\n"
    "eval list's sources to OUT_DIR/<utt id>.wav. Score them beside the model with\n"
    "vc score --system NAME=OUT_DIR.\n\n"
    "example:\n"
    "  vc gmm-peer --train-list data/bdl_slt/train.tsv --eval-list data/bdl_slt/eval.tsv \\\n"
    "      --out-dir EXP/converted/gmm"
)


def add_parser(commands) -> None:
    sub = add_command(
        commands,
        "gmm-peer",
        "the classical peer: train a joint-density GMM (MLPG, GV post-filter, WORLD) and convert",
        description=DESCRIPTION,
    )
    sub.add_argument("--train-list", required=True, help="pair list (id, source, target) to train on")
    sub.add_argument("--eval-list", required=True, help="pair list whose sources are converted")
    sub.add_argument("--out-dir", required=True, help="folder for the converted <utt id>.wav files")
    sub.add_argument(
        "--pairs",
        type=positive_int,
        default=120,
        help="training pairs, from the top of the list (default 120)",
    )
    sub.add_argument("--mixtures", type=positive_int, default=16, help="GMM mixtures (default 16)")
    sub.add_argument(
        "--gv-weight",
        type=float,
        default=1.0,
        help="global-variance post-filter weight in [0, 1]: 1 gives the target's variance, 0 turns it off "
        "(default 1.0)",
    )
    sub.add_argument("--sample-rate", type=positive_int, default=16000, help="analysis rate (default 16000)")
    sub.add_argument(
        "--workers", type=positive_int, default=2, help="processes analysing and converting (default 2)"
    )
    add_overwrite(sub, "file in OUT_DIR")
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.evaluation.gmm_peer import run_gmm_peer
    from vc.fileio import refuse_overwrite
    from vc.pairs import read_pair_list

    names = [Path(args.out_dir) / f"{pair.utt_id}.wav" for pair in read_pair_list(args.eval_list)]
    refuse_overwrite(names, args.overwrite)
    summary = run_gmm_peer(
        args.train_list,
        args.eval_list,
        args.out_dir,
        pairs=args.pairs,
        mixtures=args.mixtures,
        sample_rate=args.sample_rate,
        gv_weight=args.gv_weight,
        workers=args.workers,
        progress=not args.no_progress,
    )
    print(
        f"GMM peer: {summary['files']} conversions in {args.out_dir} ({summary['pairs']} training pairs, "
        f"{args.mixtures} mixtures; {summary['train_minutes']:.1f} min training, {summary['minutes']:.1f} min in all)"
    )
