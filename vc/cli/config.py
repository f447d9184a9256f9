"""`vc config`: a config as `vc train` would resolve it (a starter by name or a file, then overrides),
whole as YAML or one value per key."""

from __future__ import annotations

from vc.cli.common import add_command, add_config_option, add_config_overrides

EXAMPLE = "vc config --config student train.max_minutes=5 --get train.max_minutes --get model.kind"


def add_parser(commands) -> None:
    sub = add_command(
        commands, "config", "print a config resolved as vc train resolves it, or some of its values", EXAMPLE
    )
    add_config_option(sub)
    add_config_overrides(sub)
    sub.add_argument(
        "--get",
        action="append",
        default=[],
        metavar="KEY",
        help="print only this key's value (section.key; repeatable: one line each, in order)",
    )
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.cli.common import experiment_config
    from vc.config import config_value, dump_config

    config = experiment_config(args)
    if not args.get:
        print(dump_config(config), end="")
        return
    for key in args.get:
        print(config_value(config, key))
