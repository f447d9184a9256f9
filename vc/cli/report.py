"""`vc report`: a static HTML listening report of an experiment."""

from __future__ import annotations

from pathlib import Path

from vc.cli.common import add_command, add_overwrite

EXAMPLE = "vc report EXP --scores EXP/scores.json"


def add_parser(commands) -> None:
    sub = add_command(
        commands,
        "report",
        "write a static HTML listening report: scores, players, alignments, curves",
        EXAMPLE,
    )
    sub.add_argument("exp", help="experiment folder")
    sub.add_argument("--scores", help="vc score --json file (default EXP/scores.json)")
    sub.add_argument(
        "--out-dir",
        "--out",
        dest="out",
        metavar="DIR",
        help="report folder (default EXP/report); open OUT_DIR/index.html",
    )
    add_overwrite(sub, "report in OUT_DIR (its index.html, audio/ and img/)")
    sub.add_argument(
        "--audio-format", choices=("wav", "ogg"), default="wav", help="16-bit WAV (default) or Ogg Vorbis"
    )
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.fileio import refuse_overwrite
    from vc.listening import build_report

    out = Path(args.out) if args.out else Path(args.exp) / "report"
    # A report replaces OUT/index.html and deletes OUT/audio and OUT/img (stale utterances' files).
    refuse_overwrite([out / "index.html", out / "audio", out / "img"], args.overwrite)
    index = build_report(args.exp, args.scores, out, args.audio_format, progress=not args.no_progress)
    print(f"listening report: {index}")
