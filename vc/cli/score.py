"""`vc score`: the score table of a converted folder beside the floor and ceilings."""

from __future__ import annotations

import argparse
from pathlib import Path

from vc.cli.common import add_command, add_overwrite, positive_int
from vc.vocoders import VOCODERS, built_in

EXAMPLE = "vc score --converted EXP/converted/eval --reference slt/wav --source bdl/wav --json scores.json"


def name_and_folder(text: str) -> tuple[str, str]:
    name, sep, folder = text.partition("=")
    if not sep or not name.strip() or not folder:
        raise argparse.ArgumentTypeError(f"expected NAME=DIR, got {text!r}")
    return name, folder


def add_parser(commands) -> None:
    sub = add_command(
        commands,
        "score",
        "intelligibility (Whisper; pocketsphinx when asked for), speaker similarity, predicted MOS, MCD, F0 and DDUR beside floor and ceilings",
        EXAMPLE,
    )
    sub.add_argument("--converted", required=True, help="folder of converted files (defines the list)")
    sub.add_argument("--reference", required=True, help="folder of target-speaker references, same names")
    sub.add_argument("--source", help="folder of source files: adds the no-conversion row")
    sub.add_argument(
        "--config", help="YAML config: audio/vocoder settings of the ceiling, data.train_list for centroids"
    )
    sub.add_argument(
        "--checkpoint", help="conversion checkpoint: its vocoder path makes the ceiling (as vc convert)"
    )
    sub.add_argument("--text", help="transcripts: utt_id<TAB>text, or an ARCTIC txt.done.data")
    sub.add_argument("--train-list", help="pair list whose source/target files give the speaker centroids")
    sub.add_argument("--no-ceiling", action="store_true", help="skip the ceiling rows")
    sub.add_argument(
        "--vocoders",
        type=vocoder_list,
        default=[built_in()],
        metavar="NAME[,NAME]",
        help=f"a ceiling row through each vocoder: {', '.join(VOCODERS)}",
    )
    sub.add_argument(
        "--families",
        type=family_list,
        metavar="NAME[,NAME]",
        help="score every row with these metric families only (distances, whisper, pocketsphinx, "
        "similarity, naturalness; default all but pocketsphinx), e.g. whisper for Whisper's WER/CER "
        "alone, or all five for pocketsphinx's WER/CER beside Whisper's",
    )
    sub.add_argument(
        "--source-families",
        type=family_list,
        metavar="NAME[,NAME]",
        help="score the --source row with these metric families only (distances, whisper, pocketsphinx, "
        "similarity, naturalness; default: those of --families), e.g. whisper for its WER alone",
    )
    sub.add_argument(
        "--pseudo-inverse-ceiling",
        action="store_true",
        help="with a mel -> linear network: Griffin-Lim's ceiling through the network-free pseudo-inverse "
        "too, so the network's gain shows",
    )
    sub.add_argument("--ceiling-dir", help="keep the ceiling's resynthesised files in this folder")
    sub.add_argument("--no-natural", action="store_true", help="skip the natural target row")
    sub.add_argument("--name", default="model", help="the converted folder's row name (default model)")
    sub.add_argument(
        "--system",
        dest="systems",
        type=name_and_folder,
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="one more row, NAME, scored from DIR's files like --converted (repeatable), "
        'e.g. "GMM peer=EXP/converted/gmm"',
    )
    sub.add_argument(
        "--cache",
        metavar="DIR",
        help="keep every file's scores in DIR (the speaker centroids' training files too) and read them "
        "back while the file and everything its scores depend on are unchanged (another run, another "
        "row of the same recordings)",
    )
    sub.add_argument("--out", help="also write the table to this file")
    sub.add_argument("--json", help="write every score (per utterance too) to this JSON file")
    add_overwrite(sub, "--out or --json file")
    sub.add_argument("--workers", type=positive_int, default=2, help="scoring processes (default 2)")
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=run)


def cache_note(result: dict, cache: str) -> str:
    """One line: which rows the score cache held, whole or in part."""
    total = result["rows"]
    held = [
        row if count == total[row]["utterances"] else f"{row} ({count} of {total[row]['utterances']} files)"
        for row, count in result["from_cache"].items()
        if count
    ]
    return f"read from the score cache {cache}: {', '.join(held) if held else 'nothing'}"


def vocoder_list(text: str) -> list[str]:
    """ "griffin-lim,hifigan" -> the names, each one of vc.vocoders.VOCODERS."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in VOCODERS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"expected names among {', '.join(VOCODERS)}, got {text!r}")
    return names


def family_list(text: str) -> tuple[str, ...]:
    """ "whisper,similarity" -> the names (scoring's System checks them against the metric
    registry, which the parser does not import)."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"expected metric family names, got {text!r}")
    return names


def run(args) -> None:
    import json

    from vc.evaluation.metrics import require_analysis_libraries
    from vc.evaluation.registry import columns
    from vc.evaluation.scoring import format_table
    from vc.evaluation.systems import json_ready, score_against_references
    from vc.fileio import atomic_write_text, refuse_overwrite

    refuse_overwrite([path for path in (args.out, args.json) if path], args.overwrite)
    if args.families is None or "distances" in args.families:
        require_analysis_libraries()  # MCD and F0: a missing pyworld fails now, not after the ceiling's work
    result = score_against_references(
        args.converted,
        args.reference,
        source=args.source,
        config_path=args.config,
        checkpoint=args.checkpoint,
        text=args.text,
        train_list=args.train_list,
        ceiling=not args.no_ceiling,
        vocoders=args.vocoders,
        pseudo_inverse=args.pseudo_inverse_ceiling,
        families=args.families,
        source_families=args.source_families,
        ceiling_dir=args.ceiling_dir,
        natural=not args.no_natural,
        name=args.name,
        extra_systems=args.systems,
        cache_dir=args.cache,
        workers=args.workers,
        progress=not args.no_progress,
    )
    table = format_table(result["rows"])
    notes = [f"not computed: {line}" for line in result["missing"]]
    if args.cache:
        notes.append(cache_note(result, args.cache))
    print("\n".join([table, *notes]))
    if args.out:
        atomic_write_text(Path(args.out), "\n".join([table, *notes]) + "\n")
    if args.json:
        result["columns"] = [[c.title, c.key, c.fmt, c.lower_is_better] for c in columns()]
        atomic_write_text(Path(args.json), json.dumps(json_ready(result), indent=1) + "\n")
