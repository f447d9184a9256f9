"""The `vc` command: one module per subcommand, its parser beside its handler, each a thin call into
the library. Building the parser imports no torch; a handler imports what it runs."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from vc import __version__
from vc.cli import (
    average,
    compare,
    config,
    convert,
    cores,
    curve,
    durations,
    export,
    features,
    gmm_peer,
    mel2linear_train,
    models,
    postfilter_train,
    report,
    score,
    serve,
    stats,
    train,
)
from vc.cli.common import setup_logging
from vc.errors import VcError
from vc.quiet import library_noise_to_debug_log, warning_as_error_line

# In the order `vc --help` lists them.
COMMANDS = (
    train,
    features,
    stats,
    convert,
    score,
    mel2linear_train,
    durations,
    postfilter_train,
    gmm_peer,
    compare,
    export,
    average,
    models,
    config,
    curve,
    cores,
    report,
    serve,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vc", description="Attention-based parallel voice conversion.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--version", action="version", version=f"vc {__version__}")
    commands = parser.add_subparsers(dest="command")  # none: the help
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # plain `vc`: what there is to do
        parser.print_help()
        return 0
    if not logging.getLogger().handlers:
        setup_logging(args.verbose)
    try:
        with library_noise_to_debug_log():
            args.func(args)
    except Warning as exc:  # only under -W error: still one line
        print(f"vc {args.command}: error: {warning_as_error_line(exc)}", file=sys.stderr)
        return 1
    except VcError as exc:
        print(f"vc {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `vc config | head`: the reader has what it wanted, and closed the pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141  # as a process killed by SIGPIPE
    except OSError as exc:  # disk full, permissions, ...: still one line, never a traceback
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"vc {args.command}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"vc {args.command}: interrupted", file=sys.stderr)
        return 130
    return 0
