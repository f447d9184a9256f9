"""`vc models`: the models bundled with the package and their scores; their provenance with --verbose."""

from __future__ import annotations

from vc.cli.common import add_command

EXAMPLE = "vc models            # vc models --verbose: where each came from"


def add_parser(commands) -> None:
    sub = add_command(commands, "models", "list the models bundled with the package", EXAMPLE)
    sub.add_argument(
        "--verbose", action="store_true", help="also each model's file, training data, licence and recipe"
    )
    sub.set_defaults(func=run)


def _listed(scores: dict) -> str:
    return ", ".join(f"{key} {value}" for key, value in scores.items())


def run(args) -> None:
    from vc.artifacts.pretrained import list_models

    for model in list_models():
        print(f"{model.name}{'  (default)' if model.default else ''}")
        print(f"  {model.description.split(';')[0]}")
        if model.scores:
            print(f"  scores:   {_listed(model.scores)}")
        for voice, held_out in model.heldout_scores.items():
            print(f"  held-out {voice}: {_listed(held_out)}")
        if args.verbose:
            print(f"  about:    {model.description}")
            print(f"  file:     {model.path}")
            print(f"  trained:  {model.training_data}")
            print(f"  licence:  {model.licence}")
            print(f"  made by:  {model.recipe}")
            if model.scores:
                print(f"  scored:   {model.scored_on}")
