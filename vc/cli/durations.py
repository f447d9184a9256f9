"""`vc durations`: target frames per source step, from DTW of each pair (the recipe's default), the
transcripts' phones or an attention model, for the non-autoregressive converter."""

from __future__ import annotations

from vc.cli.common import add_command, add_overwrite

DESCRIPTION = (
    "Integer durations per encoder step that sum to each target's frames, for every pair of the lists, "
    "from one of: --dtw, dynamic time warping of each pair's mel-cepstra (no model needed; the recipe's "
    "default); --phones, both recordings aligned to their transcript's phones (pocketsphinx's aligner, "
    "the same acoustic model as the WER scorer's) and matched phone by phone; --checkpoint, the "
    "teacher-forced alignments of a trained attention model, made monotonic and hard (attention "
    "centroids). "
    "Example: vc durations --dtw --config student --features-dir EXP/features "
    "--out EXP/durations_dtw.pt data/bdl_slt/train.tsv data/bdl_slt/dev.tsv"
)


def add_parser(commands) -> None:
    sub = add_command(
        commands,
        "durations",
        "target frames per source step (DTW, the transcripts' phones or an attention model), for the converters",
        description=DESCRIPTION,
    )
    sub.add_argument(
        "lists",
        nargs="+",
        metavar="LIST",
        help="pair lists (.tsv); with --dtw the first is the training list",
    )
    sub.add_argument("--checkpoint", help="the attention model (EXP/checkpoints/averaged.pt)")
    sub.add_argument(
        "--dtw", action="store_true", help="durations from DTW of each pair instead of an attention model"
    )
    sub.add_argument(
        "--phones",
        action="store_true",
        help="durations from the transcripts' phones, aligned in both recordings (needs pocketsphinx)",
    )
    sub.add_argument(
        "--text",
        help="with --phones: transcripts (utt_id<TAB>text or ARCTIC txt.done.data); default: the corpus "
        "file beside each recording's folder (etc/txt.done.data)",
    )
    sub.add_argument(
        "--alignments", help="with --phones: the phone alignments to write (default: OUT with .phones.json)"
    )
    sub.add_argument("--workers", type=int, default=1, help="with --phones: aligning processes (default 1)")
    sub.add_argument(
        "--config", help="with --dtw or --phones: the converter's YAML config (conf/student.yaml)"
    )
    sub.add_argument(
        "--set",
        dest="set_overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --dtw or --phones: an override of that config, e.g. model.encoder_reduction_factor=1",
    )
    sub.add_argument("--features-dir", required=True, help="feature cache folder (EXP/features)")
    sub.add_argument("--out", required=True, help="durations file to write (EXP/durations.pt)")
    add_overwrite(sub, "--out file")
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.training.durations import write_durations

    report = write_durations(
        args.lists,
        args.features_dir,
        args.out,
        checkpoint=args.checkpoint,
        dtw=args.dtw,
        config=args.config,
        overrides=args.set_overrides,
        overwrite=args.overwrite,
        progress=not args.no_progress,
        phones=args.phones,
        text=args.text,
        alignments=args.alignments,
        workers=args.workers,
    )
    if args.dtw:
        how = "DTW of the pairs' mel-cepstra"
    elif args.phones:
        how = "the phones of both recordings"
    else:
        how = f"mean attention on the path {report.sharpness:.3f}"
    print(
        f"durations: {args.out} ({report.utterances} utterances; {how}, "
        f"{100 * report.zero_fraction:.1f} % of encoder steps get no frame)"
    )
