"""Keep library noise off the user's terminal: warnings and unraisable errors go to the debug log.

torch, soundfile, librosa and numpy warn about things the user cannot act on
(a pickle protocol, a deprecated default), and new releases add new warnings.
Printed raw, those lines bury vc's one-line error. Inside ``library_noise_to_debug_log()``
every displayed warning, every "Exception ignored ..." report (an error
raised where nobody can catch it, e.g. in a cffi callback) and every error that
ends a library's thread (TensorBoard's writer on a full disk: vc reports it as
one line at the writer's next call) becomes a DEBUG log record: visible with
``vc -v``, never printed otherwise.

The warning filters themselves are left alone, so ``python -W error`` or
PYTHONWARNINGS=error still turns a warning into an exception; the CLI reports
that as one line too.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import warnings
from collections.abc import Iterator

log = logging.getLogger("py.warnings")


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    log.debug("%s:%s: %s: %s", filename, lineno, category.__name__, message)


def _unraisable(report) -> None:
    where = report.err_msg or "Exception ignored in"
    log.debug("%s %r: %s: %s", where, report.object, type(report.exc_value).__name__, report.exc_value)


def _thread_error(report) -> None:
    name = report.thread.name if report.thread is not None else "?"
    log.debug("thread %s ended: %s: %s", name, report.exc_type.__name__, report.exc_value)


@contextlib.contextmanager
def library_noise_to_debug_log() -> Iterator[None]:
    saved = warnings.showwarning, sys.unraisablehook, threading.excepthook
    warnings.showwarning, sys.unraisablehook, threading.excepthook = _show_warning, _unraisable, _thread_error
    try:
        yield
    finally:
        warnings.showwarning, sys.unraisablehook, threading.excepthook = saved


def warning_as_error_line(exc: Warning) -> str:
    """One line for a warning that -W error / PYTHONWARNINGS=error turned into an exception."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first} (a warning, made an error by -W error or PYTHONWARNINGS)"
