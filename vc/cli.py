"""The `vc` command: each subcommand parses, loads config, calls one library function."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from vc import __version__
from vc.errors import VcError
from vc.quiet import library_noise_to_debug_log, warning_as_error_line


def _setup_logging(verbose: bool, log_file: Path | None = None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file))
    for handler in handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers = handlers
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for chatty in ("tensorboard", "matplotlib"):
        logging.getLogger(chatty).setLevel(logging.WARNING)


def cmd_train(args) -> None:
    import os

    from vc.config import load_config
    from vc.training.trainer import train

    config = load_config(args.config, [*args.set_overrides, *args.overrides])
    rank = int(os.environ.get("RANK", "0"))
    _setup_logging(args.verbose, Path(args.out) / "train.log" if rank == 0 else None)
    best = train(config, args.out, resume=args.resume, progress=not args.no_progress)
    if best is not None:
        print(f"best checkpoint: {best}")
        print(f"tensorboard: tensorboard --logdir {Path(args.out) / 'tensorboard'}")


def cmd_features(args) -> None:
    from vc.config import load_config
    from vc.training.data import feature_cache_dir, load_features, require_lists

    config = load_config(args.config, [*args.set_overrides, *args.overrides])
    cache_dir = feature_cache_dir(config, args.out)
    for list_path in require_lists(config):
        load_features(list_path, config.audio, cache_dir, progress=not args.no_progress)
    print(f"features: {cache_dir}")


def cmd_stats(args) -> None:
    from vc.config import load_config
    from vc.training.data import speaker_stats

    config = load_config(args.config, [*args.set_overrides, *args.overrides])
    speaker_stats(config, args.out, progress=not args.no_progress)
    print(f"statistics of the training list: {Path(args.out) / 'stats.json'}")


def cmd_durations(args) -> None:
    from vc.errors import ConfigError
    from vc.fileio import refuse_overwrite

    if (args.checkpoint is None) == (not args.dtw):
        raise ConfigError("vc durations needs --checkpoint (an attention model) or --dtw, not both")
    if args.dtw and args.config is None:
        raise ConfigError(
            "vc durations --dtw needs --config (the student's audio settings and frame stacking)"
        )
    if args.set_overrides and not args.dtw:
        raise ConfigError("vc durations: --set goes with --dtw (an attention model's config is its own)")
    refuse_overwrite([args.out], args.overwrite)
    if args.dtw:
        from vc.config import load_config
        from vc.training.durations import extract_dtw_durations

        report = extract_dtw_durations(
            load_config(args.config, args.set_overrides),
            args.lists,
            args.features_dir,
            args.out,
            progress=not args.no_progress,
        )
        how = "DTW of the pairs' mel-cepstra"
    else:
        from vc.training.durations import extract_durations

        report = extract_durations(
            args.checkpoint, args.lists, args.features_dir, args.out, progress=not args.no_progress
        )
        how = f"mean attention on the path {report.sharpness:.3f}"
    print(
        f"durations: {args.out} ({report.utterances} utterances; {how}, "
        f"{100 * report.zero_fraction:.1f} % of encoder steps get no frame)"
    )


# Torch threads for vc convert unless --threads or VC_THREADS says otherwise: one. On a busy 2-core
# machine two threads ran a small LSTM loop 5.6x slower (issue 34); `vc convert` of a 3 s input took
# 4.18 s with one and 4.36 s with two beside two busy processes, and 2.82 s with either idle
# (bench/run.py --sections cold_start, AMD EPYC, 2026-11-25).
DEFAULT_CONVERT_THREADS = 1


def convert_threads(given: int | None) -> int:
    """--threads, else a positive VC_THREADS, else DEFAULT_CONVERT_THREADS."""
    import os

    from vc.errors import ConfigError

    if given is not None:
        return given
    value = os.environ.get("VC_THREADS", "")
    if not value:
        return DEFAULT_CONVERT_THREADS
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"VC_THREADS must be a positive whole number, got {value!r}")
    return int(value)


def cmd_convert(args) -> None:
    import torch

    from vc.errors import AudioError
    from vc.inference import Converter, check_outputs, collect_inputs, convert_files

    torch.set_num_threads(convert_threads(args.threads))
    overrides = list(args.overrides)
    if args.griffin_lim_iters is not None:
        overrides.append(f"vocoder.griffin_lim_iters={args.griffin_lim_iters}")
    if args.out_dir is None:
        if len(args.paths) != 2:
            raise AudioError("give IN OUT, or several inputs (files or folders) with --out-dir DIR")
        if Path(args.paths[0]).is_dir():
            raise AudioError(f"{args.paths[0]} is a folder; use --out-dir DIR to convert a folder")
        inputs, outputs = collect_inputs(args.paths[:1]), [Path(args.paths[1])]
        alignments = [Path(args.save_alignment)] if args.save_alignment else None
    else:
        inputs = collect_inputs(args.paths)
        outputs = [Path(args.out_dir) / f"{path.stem}.wav" for path in inputs]
        if len({o.name for o in outputs}) != len(outputs):
            raise AudioError("two inputs share a file name; their outputs in --out-dir would collide")
        suffix = args.save_alignment
        if suffix and suffix not in ("png", "npy"):
            raise AudioError("with --out-dir, --save-alignment takes a format: png or npy")
        alignments = [o.with_name(f"{o.stem}_alignment.{suffix}") for o in outputs] if suffix else None
    if alignments and alignments[0].suffix not in (".png", ".npy"):
        raise AudioError(f"--save-alignment must end in .png or .npy, got {alignments[0]}")
    check_outputs(inputs, outputs + (alignments or []))  # before the model loads: no work, no loss
    _refuse_existing_outputs(args, inputs, outputs, alignments)
    mel2linear = False if args.no_mel2linear else args.mel2linear  # None: the checkpoint's companion
    checkpoint = args.checkpoint
    if checkpoint is None:
        from vc.artifacts.pretrained import get_model, model_path

        checkpoint = model_path(args.model)
        if args.model is None:  # said once, so a user knows what converted their voice
            bundled = get_model(None)
            print(
                f"vc convert: no --checkpoint given: using the bundled model '{bundled.name}' "
                f"({bundled.description}; vc models)",
                file=sys.stderr,
            )
    postfilter = False if args.no_postfilter else args.postfilter  # None: embedded, else the companion
    converter = Converter.from_checkpoint(
        checkpoint, device=args.device, overrides=overrides, mel2linear=mel2linear, postfilter=postfilter
    )
    failures = convert_files(
        converter,
        inputs,
        outputs,
        batch_size=args.batch_size,
        alignments=alignments,
        progress=not args.no_progress,
        strict=args.strict or len(inputs) == 1,  # one input: its error is the whole answer
    )
    where = args.out_dir if args.out_dir else outputs[0]
    print(f"converted {len(inputs) - len(failures)} of {len(inputs)} file(s): {where}")
    if failures:
        listing = "".join(f"\n  {failure.reason}" for failure in failures)
        raise AudioError(f"{len(failures)} of {len(inputs)} file(s) not converted:{listing}")


def _refuse_existing_outputs(args, inputs: list[Path], outputs: list[Path], alignments) -> None:
    """Existing outputs only with --overwrite; IN OUT with OUT an existing recording may mean two inputs."""
    from vc.audio import AUDIO_FORMATS
    from vc.errors import AudioError
    from vc.fileio import refuse_overwrite

    out = outputs[0]
    if args.out_dir is None and out.is_dir():
        raise AudioError(f"{out} is a folder; use --out-dir {out} to convert into it")
    if args.out_dir is None and not args.overwrite and out.exists() and out.suffix.lower() in AUDIO_FORMATS:
        raise AudioError(
            f"{out} already exists: to convert both files give --out-dir DIR; "
            f"to replace it with the conversion of {inputs[0]} add --overwrite"
        )
    refuse_overwrite(outputs + (alignments or []), args.overwrite)


def cmd_score(args) -> None:
    import json

    from vc.evaluation.metrics import require_analysis_libraries
    from vc.evaluation.scoring import TABLE_COLUMNS, format_table
    from vc.evaluation.systems import json_ready, score_against_references
    from vc.fileio import atomic_write_text, refuse_overwrite

    refuse_overwrite([path for path in (args.out, args.json) if path], args.overwrite)
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
        ceiling_dir=args.ceiling_dir,
        natural=not args.no_natural,
        name=args.name,
        extra_systems=args.systems,
        centroid_cache=args.centroid_cache,
        workers=args.workers,
        progress=not args.no_progress,
    )
    table = format_table(result["rows"])
    notes = [f"not computed: {line}" for line in result["missing"]]
    print("\n".join([table, *notes]))
    if args.out:
        atomic_write_text(Path(args.out), "\n".join([table, *notes]) + "\n")
    if args.json:
        result["columns"] = [list(column) for column in TABLE_COLUMNS]
        atomic_write_text(Path(args.json), json.dumps(json_ready(result), indent=1) + "\n")


def cmd_compare(args) -> None:
    from vc.evaluation.compare import compare, format_comparison, per_utterance

    a = per_utterance(args.a, args.row)
    b = per_utterance(args.b, args.row_b or args.row)
    print("\n".join(format_comparison(*compare(a, b, args.resamples))))


def cmd_gmm_peer(args) -> None:
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
        progress=not args.no_progress,
    )
    print(
        f"GMM peer: {summary['files']} conversions in {args.out_dir} ({summary['pairs']} training pairs, "
        f"{args.mixtures} mixtures; {summary['train_minutes']:.1f} min training, {summary['minutes']:.1f} min in all)"
    )


def _section_overrides(args, section: str) -> list[str]:
    """A companion trainer's flags (--max-minutes, ...) as overrides of its config section, then --set."""
    import dataclasses

    from vc import config as config_module

    kind = {"mel2linear": config_module.Mel2LinearConfig, "postfilter": config_module.PostfilterConfig}[
        section
    ]
    given = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(kind)
        if getattr(args, f.name, None) is not None
    }
    return [f"{section}.{key}={value}" for key, value in given.items()] + list(args.set)


def cmd_mel2linear_train(args) -> None:
    from vc.config import load_config
    from vc.fileio import refuse_overwrite
    from vc.training.mel2linear import train_mel2linear

    refuse_overwrite([args.out], args.overwrite)
    config = load_config(args.config, _section_overrides(args, "mel2linear"))
    info = train_mel2linear(
        args.inputs,
        config.audio,
        args.out,
        config.mel2linear,
        progress=not args.no_progress,
        checkpoint=args.checkpoint,
    )
    print(
        f"mel -> linear network: {args.out} ({info['steps']} steps, {info['minutes']:.1f} min, "
        f"validation {info['valid_db']:.2f} dB, at start {info['linear_db']:.2f} dB)"
    )


def cmd_postfilter_train(args) -> None:
    from vc.artifacts.checkpoint import load_checkpoint
    from vc.config import Config
    from vc.fileio import refuse_overwrite
    from vc.training.postfilter import train_postfilter

    refuse_overwrite([args.out], args.overwrite)
    # The model's own config (its postfilter section, defaults for older checkpoints), then the flags.
    config = Config.from_dict(load_checkpoint(args.checkpoint)["config"])
    options = config.with_overrides(_section_overrides(args, "postfilter")).postfilter
    info = train_postfilter(args.lists, args.checkpoint, args.out, options, progress=not args.no_progress)
    print(
        f"post-filter: {args.out} ({info['steps']} steps, {info['minutes']:.1f} min; validation temporal "
        f"detail {info['detail_before']:.3f} -> {info['detail']:.3f}, natural {info['detail_natural']:.3f})"
    )


def cmd_export(args) -> None:
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


def cmd_average(args) -> None:
    from vc.artifacts.averaging import average_checkpoints, checkpoints_to_average

    paths = checkpoints_to_average(args.inputs, args.last)
    summary = average_checkpoints(paths, args.out, overwrite=args.overwrite)
    steps = ", ".join(str(step) for step in summary["steps"])
    print(
        f"averaged model: {args.out} ({summary['count']} checkpoints, steps {steps}; {summary['bytes'] / 1e6:.1f} MB)"
    )


def cmd_models(args) -> None:
    from vc.artifacts.pretrained import list_models

    def listed(scores: dict) -> str:
        return ", ".join(f"{key} {value}" for key, value in scores.items())

    for model in list_models():
        print(f"{model.name}{'  (default)' if model.default else ''}")
        print(f"  {model.description}")
        print(f"  file:     {model.path}")
        print(f"  trained:  {model.training_data}")
        print(f"  licence:  {model.licence}")
        print(f"  made by:  {model.recipe}")
        if model.scores:
            print(f"  scores:   {listed(model.scores)} ({model.scored_on})")
        for voice, held_out in model.heldout_scores.items():
            print(f"  held-out {voice}: {listed(held_out)}")


def cmd_curve(args) -> None:
    from vc.evaluation.curve import alignment_curve, format_curve

    print(format_curve(alignment_curve(args.exp)))


def cmd_report(args) -> None:
    from vc.fileio import refuse_overwrite
    from vc.listening import build_report

    out = Path(args.out) if args.out else Path(args.exp) / "report"
    # A report replaces OUT/index.html and deletes OUT/audio and OUT/img (stale utterances' files).
    refuse_overwrite([out / "index.html", out / "audio", out / "img"], args.overwrite)
    index = build_report(args.exp, args.scores, out, args.audio_format, progress=not args.no_progress)
    print(f"listening report: {index}")


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _name_and_folder(text: str) -> tuple[str, str]:
    name, sep, folder = text.partition("=")
    if not sep or not name.strip() or not folder:
        raise argparse.ArgumentTypeError(f"expected NAME=DIR, got {text!r}")
    return name, folder


def _add_overwrite(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--overwrite", action="store_true", help=f"replace an existing {what} (default: refuse)"
    )


def _add_experiment_args(sub: argparse.ArgumentParser) -> None:
    """--config, --out-dir and the config overrides of train, features and stats."""
    from vc.config import starter_configs

    sub.add_argument(
        "--config",
        required=True,
        help=f"YAML config, or a starter config by name: {', '.join(starter_configs())}",
    )
    sub.add_argument("--out-dir", "--out", dest="out", metavar="DIR", required=True, help="experiment folder")
    sub.add_argument(
        "--set",
        dest="set_overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override, e.g. train.max_steps=500 (repeatable)",
    )
    sub.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides, as --set")


# One example per subcommand, shown under its --help.
EXAMPLES = {
    "train": "vc train --config default --out-dir exp/mine --set data.train_list=train.tsv --set data.dev_list=dev.tsv",
    "features": "vc features --config default --out-dir exp/mine --set data.train_list=train.tsv --set data.dev_list=dev.tsv",
    "stats": "vc stats --config default --out-dir exp/mine --set data.train_list=train.tsv --set data.dev_list=dev.tsv",
    "convert": "vc convert in.wav out.wav    |    vc convert --checkpoint EXP/student/checkpoints/averaged.pt --out-dir converted/ a.wav folder/",
    "score": "vc score --converted EXP/converted/eval --reference slt/wav --source bdl/wav --json scores.json",
    "mel2linear-train": "vc mel2linear-train data/bdl_slt/train.tsv --config EXP/config.yaml --out EXP/checkpoints/mel2linear.pt",
    "postfilter-train": "vc postfilter-train data/bdl_slt/train.tsv --checkpoint EXP/checkpoints/averaged.pt --out EXP/checkpoints/postfilter.pt",
    "export": "vc export EXP/checkpoints/averaged.pt my_model.pt",
    "average": "vc average EXP/checkpoints --last 3 --out EXP/checkpoints/averaged.pt",
    "models": "vc models",
    "curve": "vc curve EXP",
    "report": "vc report EXP --scores EXP/scores.json",
}


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written (their examples keep their lines); each option's default when it has one."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return f"{text} (default: {action.default})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vc", description="Attention-based parallel voice conversion.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--version", action="version", version=f"vc {__version__}")
    commands = parser.add_subparsers(dest="command")  # none: the help

    train = commands.add_parser("train", help="train a model (torchrun for several processes)")
    _add_experiment_args(train)
    train.add_argument(
        "--resume", action="store_true", help="continue from the newest checkpoint in --out-dir"
    )
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.set_defaults(func=cmd_train)

    for name, func, text in (
        ("features", cmd_features, "compute and cache the train/dev features"),
        ("stats", cmd_stats, "write per-speaker feature statistics to OUT_DIR/stats.json"),
    ):
        sub = commands.add_parser(name, help=text)
        _add_experiment_args(sub)
        sub.add_argument("--no-progress", action="store_true")
        sub.set_defaults(func=func)

    convert = commands.add_parser("convert", help="convert audio files with a trained or bundled model")
    which = convert.add_mutually_exclusive_group()
    which.add_argument(
        "--checkpoint", help="a checkpoint written by vc train or vc export (default: the bundled model)"
    )
    which.add_argument("--model", metavar="NAME", help="a bundled model by name (vc models lists them)")
    convert.add_argument(
        "paths", nargs="+", metavar="PATH", help="IN OUT, or inputs (files/folders) with --out-dir"
    )
    convert.add_argument("--out-dir", help="write DIR/<input name>.wav for every input")
    _add_overwrite(convert, "output (OUT, a file in DIR, an alignment)")
    convert.add_argument(
        "--device", default="auto", help="cpu, cuda, cuda:1, ... (default: cuda if available)"
    )
    convert.add_argument(
        "--griffin-lim-iters", type=int, help="Griffin-Lim iterations (default: from the checkpoint)"
    )
    convert.add_argument(
        "--save-alignment", metavar="FILE", help="FILE.png or FILE.npy; with --out-dir the format png or npy"
    )
    convert.add_argument("--batch-size", type=_positive_int, default=8, help="files converted at once")
    convert.add_argument(
        "--threads",
        type=_positive_int,
        help=f"CPU threads for torch (default: $VC_THREADS, else {DEFAULT_CONVERT_THREADS}: on a busy 2-core "
        "machine 2 threads were slower than 1, and no faster idle: bench/README.md)",
    )
    convert.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="key=value",
        help="override an inference/vocoder setting, e.g. inference.max_ratio=2",
    )
    convert.add_argument(
        "--strict", action="store_true", help="stop at the first unusable input (default: convert the rest)"
    )
    convert.add_argument(
        "--mel2linear",
        "--vocoder-net",  # the old name, kept for one release
        metavar="FILE",
        help="mel -> linear network for Griffin-Lim (default: mel2linear.pt beside the checkpoint, if any)",
    )
    convert.add_argument(
        "--no-mel2linear",
        "--no-vocoder-net",
        action="store_true",
        help="use the filterbank pseudo-inverse, not the network",
    )
    convert.add_argument(
        "--postfilter",
        metavar="FILE",
        help="GAN post-filter for the converted mels (default: postfilter.pt beside the checkpoint, if any)",
    )
    convert.add_argument("--no-postfilter", action="store_true", help="vocode the model's mels as they are")
    convert.add_argument("--no-progress", action="store_true")
    convert.set_defaults(func=cmd_convert)

    score = commands.add_parser(
        "score",
        help="intelligibility, speaker similarity, predicted MOS, MCD and F0 beside floor and ceilings",
    )
    score.add_argument("--converted", required=True, help="folder of converted files (defines the list)")
    score.add_argument("--reference", required=True, help="folder of target-speaker references, same names")
    score.add_argument("--source", help="folder of source files: adds the no-conversion row")
    score.add_argument(
        "--config", help="YAML config: audio/vocoder settings of the ceiling, data.train_list for centroids"
    )
    score.add_argument(
        "--checkpoint", help="conversion checkpoint: its vocoder path makes the ceiling (as vc convert)"
    )
    score.add_argument("--text", help="transcripts: utt_id<TAB>text, or an ARCTIC txt.done.data")
    score.add_argument("--train-list", help="pair list whose source/target files give the speaker centroids")
    score.add_argument("--no-ceiling", action="store_true", help="skip the Griffin-Lim ceiling row")
    score.add_argument("--ceiling-dir", help="keep the ceiling's resynthesised files in this folder")
    score.add_argument("--no-natural", action="store_true", help="skip the natural target row")
    score.add_argument("--name", default="model", help="the converted folder's row name (default model)")
    score.add_argument(
        "--system",
        dest="systems",
        type=_name_and_folder,
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="one more row, NAME, scored from DIR's files like --converted (repeatable), "
        'e.g. "GMM peer=EXP/converted/gmm"',
    )
    score.add_argument(
        "--centroid-cache",
        metavar="FILE",
        help="keep the speaker centroids in FILE and reuse them while their training files are the same",
    )
    score.add_argument("--out", help="also write the table to this file")
    score.add_argument("--json", help="write every score (per utterance too) to this JSON file")
    _add_overwrite(score, "--out or --json file")
    score.add_argument("--workers", type=_positive_int, default=2, help="scoring processes (default 2)")
    score.add_argument("--no-progress", action="store_true")
    score.set_defaults(func=cmd_score)

    _add_mel2linear_train(commands)
    durations = commands.add_parser(
        "durations",
        help="target frames per source step from an attention model, for the non-autoregressive converter",
        description="Teacher-forced alignments of a trained attention model on every pair of the lists, "
        "made monotonic and hard (attention centroids): integer durations per encoder step that sum to each target's frames. "
        "With --dtw instead, dynamic time warping of each pair's mel-cepstra gives them (no model needed). "
        "Example: vc durations --checkpoint EXP/checkpoints/averaged.pt --features-dir EXP/features "
        "--out EXP/durations.pt data/bdl_slt/train.tsv data/bdl_slt/dev.tsv",
    )
    durations.add_argument(
        "lists",
        nargs="+",
        metavar="LIST",
        help="pair lists (.tsv); with --dtw the first is the training list",
    )
    durations.add_argument("--checkpoint", help="the attention model (EXP/checkpoints/averaged.pt)")
    durations.add_argument(
        "--dtw", action="store_true", help="durations from DTW of each pair instead of an attention model"
    )
    durations.add_argument("--config", help="with --dtw: the student's YAML config (conf/student.yaml)")
    durations.add_argument(
        "--set",
        dest="set_overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --dtw: an override of that config, e.g. model.encoder_reduction_factor=1 (repeatable)",
    )
    durations.add_argument("--features-dir", required=True, help="feature cache folder (EXP/features)")
    durations.add_argument("--out", required=True, help="durations file to write (EXP/durations.pt)")
    _add_overwrite(durations, "--out file")
    durations.add_argument("--no-progress", action="store_true")
    durations.set_defaults(func=cmd_durations)
    _add_postfilter_train(commands)
    _add_gmm_peer(commands)
    compare = commands.add_parser(
        "compare",
        help="B - A per metric between two vc score --json files, with a paired bootstrap interval",
        description="Is a difference between two scorings of the same eval utterances larger than the "
        "eval set's own noise? Per metric: B - A and its 95 %% paired bootstrap interval over utterances. "
        "Example: vc compare exp/a/scores.json exp/b/scores.json",
    )
    compare.add_argument("a", help="scores.json of the reference run (A)")
    compare.add_argument("b", help="scores.json of the run to compare (B)")
    compare.add_argument("--row", help="row of A (and of B unless --row-b); default: the model's row")
    compare.add_argument("--row-b", help="row of B, when it differs from A's")
    compare.add_argument(
        "--resamples", type=_positive_int, default=2000, help="bootstrap draws (default 2000)"
    )
    compare.set_defaults(func=cmd_compare)
    export = commands.add_parser(
        "export",
        help="write an inference-only model file (fp16 weights, config, statistics, mel2linear network, post-filter)",
    )
    export.add_argument("checkpoint", help="a checkpoint written by vc train (e.g. EXP/checkpoints/best.pt)")
    export.add_argument("out", help="the model file to write")
    _add_overwrite(export, "OUT")
    export.add_argument("--float32", action="store_true", help="keep float32 weights (default fp16)")
    export.add_argument(
        "--mel2linear",
        "--vocoder-net",  # the old name, kept for one release
        metavar="FILE",
        help="network to embed (default: mel2linear.pt beside the checkpoint)",
    )
    export.add_argument(
        "--no-mel2linear", "--no-vocoder-net", action="store_true", help="embed no network (pseudo-inverse)"
    )
    export.add_argument(
        "--postfilter", metavar="FILE", help="post-filter to embed (default: postfilter.pt beside it)"
    )
    export.add_argument("--no-postfilter", action="store_true", help="embed no post-filter")
    export.set_defaults(func=cmd_export)
    average = commands.add_parser(
        "average", help="average the weights of a run's last checkpoints into one model file"
    )
    average.add_argument(
        "inputs", nargs="+", metavar="PATH", help="checkpoints, or a checkpoints folder (its step*.pt files)"
    )
    average.add_argument(
        "--out", required=True, help="the model file to write (e.g. EXP/checkpoints/averaged.pt)"
    )
    average.add_argument("--last", type=_positive_int, help="only the newest N of them (default: all given)")
    _add_overwrite(average, "--out file")
    average.set_defaults(func=cmd_average)
    models = commands.add_parser("models", help="list the models bundled with the package")
    models.set_defaults(func=cmd_models)
    curve = commands.add_parser(
        "curve", help="print a run's alignment curve (step, minutes, focus, diagonal)"
    )
    curve.add_argument("exp", help="experiment folder (holds tensorboard/)")
    curve.set_defaults(func=cmd_curve)
    report = commands.add_parser(
        "report", help="write a static HTML listening report: scores, players, alignments, curves"
    )
    report.add_argument("exp", help="experiment folder")
    report.add_argument("--scores", help="vc score --json file (default EXP/scores.json)")
    report.add_argument(
        "--out-dir",
        "--out",
        dest="out",
        metavar="DIR",
        help="report folder (default EXP/report); open OUT_DIR/index.html",
    )
    _add_overwrite(report, "report in OUT_DIR (its index.html, audio/ and img/)")
    report.add_argument(
        "--audio-format", choices=("wav", "ogg"), default="wav", help="16-bit WAV (default) or Ogg Vorbis"
    )
    report.add_argument("--no-progress", action="store_true")
    report.set_defaults(func=cmd_report)
    for name, sub in commands.choices.items():  # one description, an example and the defaults in every --help
        help_line = next((a.help for a in commands._choices_actions if a.dest == name), "")
        example = EXAMPLES.get(name)
        if not sub.description:
            sub.description = help_line[:1].upper() + help_line[1:] + "."
        if example and "xample" not in sub.description:
            sub.description += f"\n\nexample:\n  {example}"
        sub.formatter_class = _HelpFormatter
    return parser


def _add_mel2linear_train(commands) -> None:
    sub = commands.add_parser(
        "mel2linear-train",
        aliases=["vocoder-train"],  # the old name, kept for one release
        help="train the mel -> linear magnitude network for Griffin-Lim on the target speaker's recordings",
    )
    sub.add_argument(
        "inputs",
        nargs="+",
        metavar="PATH",
        help="pair lists (.tsv: the target column), audio files or folders",
    )
    sub.add_argument("--out", required=True, help="network file, e.g. EXP/checkpoints/mel2linear.pt")
    _add_overwrite(sub, "--out file")
    sub.add_argument("--config", help="YAML config whose audio settings the conversion model uses")
    sub.add_argument(
        "--checkpoint",
        help="conversion checkpoint: also train on its teacher-forced predicted mels (needs pair lists)",
    )
    sub.add_argument("--max-minutes", dest="max_minutes", type=float, help="time limit (default 8)")
    sub.add_argument("--max-steps", dest="max_steps", type=_positive_int, help="step limit")
    sub.add_argument(
        "--batch-size", dest="batch_size", type=_positive_int, help="crops per step (default 16)"
    )
    sub.add_argument("--valid-files", dest="valid_files", type=int, help="files held out (default 10)")
    sub.add_argument("--seed", type=int, help="random seed (default 1)")
    sub.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any mel2linear.* setting, e.g. mel2linear.channels=256",
    )
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=cmd_mel2linear_train)


def _add_postfilter_train(commands) -> None:
    sub = commands.add_parser(
        "postfilter-train",
        help="train the GAN post-filter that sharpens a conversion model's mels (on its training pairs)",
    )
    sub.add_argument("lists", nargs="+", metavar="LIST", help="pair lists (.tsv) the model was trained on")
    sub.add_argument(
        "--checkpoint", required=True, help="the conversion checkpoint (EXP/checkpoints/best.pt)"
    )
    sub.add_argument("--out", required=True, help="post-filter file, e.g. EXP/checkpoints/postfilter.pt")
    _add_overwrite(sub, "--out file")
    sub.add_argument("--max-minutes", dest="max_minutes", type=float, help="time limit (default 6)")
    sub.add_argument("--max-steps", dest="max_steps", type=_positive_int, help="step limit")
    sub.add_argument("--valid-files", dest="valid_files", type=int, help="pairs held out (default 10)")
    sub.add_argument("--seed", type=int, help="random seed (default 0)")
    sub.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any postfilter.* setting, e.g. postfilter.channels=128",
    )
    sub.add_argument(
        "--no-adversarial",
        dest="adversarial",
        action="store_false",
        default=None,
        help="L1 to the natural frames alone, no GAN: about 0.3 dB lower MCD, 2-6 WER points more",
    )
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=cmd_postfilter_train)


def _add_gmm_peer(commands) -> None:
    sub = commands.add_parser(
        "gmm-peer",
        help="the classical peer: train a joint-density GMM (MLPG, GV post-filter, WORLD) and convert",
        description=(
            "Train the joint-density GMM voice conversion of Toda et al. (2007) as sprocket runs it\n"
            "(MLPG, global-variance post-filter, WORLD) on the first training pairs, and convert the\n"
            "eval list's sources to OUT_DIR/<utt id>.wav. Score them beside the model with\n"
            "vc score --system NAME=OUT_DIR.\n\n"
            "example:\n"
            "  vc gmm-peer --train-list data/bdl_slt/train.tsv --eval-list data/bdl_slt/eval.tsv \\\n"
            "      --out-dir EXP/converted/gmm"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub.add_argument("--train-list", required=True, help="pair list (id, source, target) to train on")
    sub.add_argument("--eval-list", required=True, help="pair list whose sources are converted")
    sub.add_argument("--out-dir", required=True, help="folder for the converted <utt id>.wav files")
    sub.add_argument(
        "--pairs",
        type=_positive_int,
        default=120,
        help="training pairs, from the top of the list (default 120)",
    )
    sub.add_argument("--mixtures", type=_positive_int, default=16, help="GMM mixtures (default 16)")
    sub.add_argument(
        "--gv-weight",
        type=float,
        default=1.0,
        help="global-variance post-filter weight in [0, 1]: 1 gives the target's variance, 0 turns it off "
        "(default 1.0)",
    )
    sub.add_argument("--sample-rate", type=_positive_int, default=16000, help="analysis rate (default 16000)")
    _add_overwrite(sub, "file in OUT_DIR")
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=cmd_gmm_peer)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # plain `vc`: what there is to do
        parser.print_help()
        return 0
    if not logging.getLogger().handlers:
        _setup_logging(args.verbose)
    try:
        with library_noise_to_debug_log():
            args.func(args)
    except Warning as exc:  # only under -W error: still one line
        print(f"vc {args.command}: error: {warning_as_error_line(exc)}", file=sys.stderr)
        return 1
    except VcError as exc:
        print(f"vc {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # disk full, permissions, ...: still one line, never a traceback
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"vc {args.command}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"vc {args.command}: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
