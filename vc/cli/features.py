"""`vc features`: compute and cache the features of the config's train and dev lists."""

from __future__ import annotations

from vc.cli.common import add_command, add_experiment_args, experiment_config

EXAMPLE = (
    "vc features --config default --out-dir exp/mine "
    "--set data.train_list=train.tsv --set data.dev_list=dev.tsv"
)


def add_parser(commands) -> None:
    sub = add_command(commands, "features", "compute and cache the train/dev features", EXAMPLE)
    add_experiment_args(sub)
    sub.add_argument("--no-progress", action="store_true")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.training.data import feature_cache_dir, load_features, require_lists

    config = experiment_config(args)
    cache_dir = feature_cache_dir(config, args.out)
    for list_path in require_lists(config):
        load_features(list_path, config.audio, cache_dir, progress=not args.no_progress)
    print(f"features: {cache_dir}")
