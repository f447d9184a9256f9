"""What the subcommands share: logging, argument types, the --overwrite flag, the experiment
arguments, and the help layout (a description, an example, the defaults)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path


def setup_logging(verbose: bool, log_file: Path | None = None) -> None:
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


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written (their examples keep their lines); each option's default when it has one."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return f"{text} (default: {action.default})"


def add_command(
    commands, name: str, help: str, example: str | None = None, description: str | None = None
) -> argparse.ArgumentParser:
    """A subcommand whose --help opens with a description (its one-line help when none is given),
    then the example, then each option with its default."""
    if description is None:
        description = help[:1].upper() + help[1:] + "."
    if example and "xample" not in description:
        description += f"\n\nexample:\n  {example}"
    return commands.add_parser(name, help=help, description=description, formatter_class=HelpFormatter)


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def non_negative_int(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected 0 or a positive integer, got {text!r}")
    return int(text)


def add_overwrite(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--overwrite", action="store_true", help=f"replace an existing {what} (default: refuse)"
    )


def add_companion_training_args(parser: argparse.ArgumentParser) -> None:
    """--resume and --device of the networks trained after the model (mel2linear-train, postfilter-train)."""
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue from the training state kept beside --out (OUT_training/)",
    )
    parser.add_argument(
        "--device",
        default="auto",
        help="cpu, cuda, cuda:1, ... (default: cuda if available; AMP there as train.amp)",
    )


def add_experiment_args(sub: argparse.ArgumentParser) -> None:
    """--config, --out-dir and the config overrides of train, features and stats."""
    add_config_option(sub)
    sub.add_argument("--out-dir", "--out", dest="out", metavar="DIR", required=True, help="experiment folder")
    add_config_overrides(sub)


def add_config_option(sub, required: bool = True) -> None:
    """--config: a YAML file or a starter config by name (on a parser, or a group of one)."""
    from vc.config import starter_configs

    sub.add_argument(
        "--config",
        required=required,
        help=f"YAML config, or a starter config by name: {', '.join(starter_configs())}",
    )


def add_config_overrides(sub: argparse.ArgumentParser) -> None:
    """--set KEY=VALUE (repeatable) and positional KEY=VALUE overrides of --config."""
    sub.add_argument(
        "--set",
        dest="set_overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override, e.g. train.max_steps=500 (repeatable)",
    )
    sub.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides, as --set")


def experiment_config(args):
    """The experiment's config: --config, then the overrides (--set first, then the positional ones); its
    vocoder.kind a name of the registry (vc.vocoders.VOCODERS, which the config floor does not import)."""
    from vc.config import load_config
    from vc.vocoders import vocoder_name

    config = load_config(args.config, [*args.set_overrides, *args.overrides])
    vocoder_name(config.vocoder.kind)
    return config


def section_overrides(args, section: str) -> list[str]:
    """A companion trainer's flags (--max-minutes, ...) as overrides of its config section, then --set."""
    import dataclasses

    from vc.settings.training import Mel2LinearConfig, PostfilterConfig

    kind = {"mel2linear": Mel2LinearConfig, "postfilter": PostfilterConfig}[section]
    given = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(kind)
        if getattr(args, f.name, None) is not None
    }
    return [f"{section}.{key}={value}" for key, value in given.items()] + list(args.set)


def companion_config(args, section: str):
    """A companion trainer's config: the model's own, stored in --checkpoint (defaults for what an older
    checkpoint lacks), then its flags and --set as overrides of ``section``."""
    from vc.artifacts.checkpoint import load_checkpoint
    from vc.config import Config

    config = Config.from_dict(load_checkpoint(args.checkpoint)["config"], stored=True)
    return config.with_overrides(section_overrides(args, section))
