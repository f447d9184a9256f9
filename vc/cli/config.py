"""`vc config`: a config as `vc train` would resolve it (a starter by name or a file, then overrides),
whole as YAML, one value per key, or the values the recipe reads of it as shell lines (its training
budget); and the vocoders a list names, checked against the registry."""

from __future__ import annotations

from vc.cli.common import add_command, add_config_option, add_config_overrides

EXAMPLE = "vc config --config student train.max_minutes=5 --get train.max_minutes --get model.kind"


def add_parser(commands) -> None:
    sub = add_command(
        commands, "config", "print a config resolved as vc train resolves it, or some of its values", EXAMPLE
    )
    which = sub.add_mutually_exclusive_group(required=True)
    add_config_option(which, required=False)
    which.add_argument(
        "--vocoders",
        metavar="NAME[,NAME]|auto",
        help="print vocoders=NAMES and beside=NAMES (those but the built-in one) as shell lines: the names "
        "checked against the registry, the built-in one among them; auto: it, and each other one whose "
        "weights are installed (the recipe's --vocoders)",
    )
    add_config_overrides(sub)
    out = sub.add_mutually_exclusive_group()
    out.add_argument(
        "--get",
        action="append",
        default=[],
        metavar="KEY",
        help="print only this key's value (section.key; repeatable: one line each, in order)",
    )
    out.add_argument(
        "--budget",
        type=float,
        metavar="SCALE",
        help="print the training budget as shell lines: max_minutes (train.max_minutes), cap_seconds (it in "
        "whole seconds), scaled_minutes (it x SCALE, two decimals) and phone_recognizer (1: the run trains "
        "one first, else 0); the recipe's side lane reads them",
    )
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.cli.common import experiment_config
    from vc.config import config_value, dump_config

    if args.vocoders is not None:
        print(vocoder_lines(args.vocoders))
        return
    config = experiment_config(args)
    if args.budget is not None:
        print(budget_lines(config, args.budget))
    elif args.get:
        for key in args.get:
            print(config_value(config, key))
    else:
        print(dump_config(config), end="")


def budget_lines(config, scale: float) -> str:
    """The recipe's shell lines of a config's budget (--budget)."""
    from vc.training.phonetic import has_phone_recognizer

    minutes = config.train.max_minutes
    return "\n".join(
        [
            f"max_minutes={minutes}",
            f"cap_seconds={int(60 * minutes + 0.5)}",
            f"scaled_minutes={minutes * scale:.2f}",
            f"phone_recognizer={int(has_phone_recognizer(config))}",
        ]
    )


def vocoder_lines(text: str) -> str:
    """The recipe's shell lines of its --vocoders (--vocoders): the names as given, or for auto the
    built-in one and each other one whose weights are installed; a ConfigError for a name the registry
    lacks, or a list without the built-in one."""
    from vc.errors import ConfigError
    from vc.packages import missing
    from vc.vocoders import VOCODERS, built_in

    if text == "auto":
        names = [
            name
            for name, v in VOCODERS.items()
            if name == built_in() or (v.weights and not missing(v.weights))
        ]
    else:
        names = text.split(",")
    if built_in() not in names or any(name not in VOCODERS for name in names):
        others = [name for name in VOCODERS if name != built_in()]
        raise ConfigError(
            f"--vocoders takes {built_in()} and optionally {' and '.join(others)} ({','.join(VOCODERS)}), "
            f"got '{text}'"
        )
    beside = [name for name in names if name != built_in()]
    return f"vocoders={','.join(names)}\nbeside='{' '.join(beside)}'"
