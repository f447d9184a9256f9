"""`vc compare`: B - A per metric between two scorings, with a paired bootstrap interval."""

from __future__ import annotations

from vc.cli.common import add_command, positive_int

DESCRIPTION = (
    "Is a difference between two scorings of the same eval utterances larger than the "
    "eval set's own noise? Per metric: B - A and its 95 % paired bootstrap interval over utterances. "
    "Example: vc compare exp/a/scores.json exp/b/scores.json"
)


def add_parser(commands) -> None:
    sub = add_command(
        commands,
        "compare",
        "B - A per metric between two vc score --json files, with a paired bootstrap interval",
        description=DESCRIPTION,
    )
    sub.add_argument("a", help="scores.json of the reference run (A)")
    sub.add_argument("b", help="scores.json of the run to compare (B)")
    sub.add_argument("--row", help="row of A (and of B unless --row-b); default: the model's row")
    sub.add_argument("--row-b", help="row of B, when it differs from A's")
    sub.add_argument("--resamples", type=positive_int, default=2000, help="bootstrap draws (default 2000)")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.evaluation.compare import compare, format_comparison, per_utterance

    a = per_utterance(args.a, args.row)
    b = per_utterance(args.b, args.row_b or args.row)
    print("\n".join(format_comparison(*compare(a, b, args.resamples))))
