"""Progress that suits where it goes: a tqdm bar on a terminal, plain log lines elsewhere.

    from vc.progress import progress
    for path in progress(paths, desc="reading", unit="file"):
        ...
    with progress(total=n, desc="converting", unit="file") as bar:
        bar.update(1)

A bar redraws itself with carriage returns, which is right on a terminal and
wrong in a log file (recipes tee stderr into EXP/logs/stageN.log, and thousands
of redraws bury the log). So when stderr is not a terminal, the same calls log
one INFO line through `logging` every ``every_seconds`` or every
``every_percent`` of the total, whichever comes first, plus a final line.
VC_PROGRESS=bar|log|off overrides the choice.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

log = logging.getLogger(__name__)

EVERY_SECONDS = 30.0
EVERY_PERCENT = 10.0


def use_bar() -> bool:
    """True when progress should be drawn as a bar: stderr is a terminal (or VC_PROGRESS=bar)."""
    mode = os.environ.get("VC_PROGRESS", "").lower()
    if mode in ("bar", "log", "off"):
        return mode == "bar"
    return sys.stderr.isatty()


def progress(
    iterable: Iterable | None = None,
    *,
    total: float | None = None,
    desc: str = "",
    unit: str = "it",
    disable: bool = False,
    initial: int = 0,
    every_seconds: float = EVERY_SECONDS,
    every_percent: float = EVERY_PERCENT,
    **bar_options: Any,
):
    """tqdm's call shape; a tqdm bar on a terminal, else a LogProgress. Options only tqdm knows
    (dynamic_ncols, leave, ...) are passed to the bar and ignored by the log lines."""
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)
    disable = disable or os.environ.get("VC_PROGRESS", "").lower() == "off"
    if use_bar() and not disable:
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial, **bar_options)
    return LogProgress(iterable, total, desc, unit, disable, initial, every_seconds, every_percent)


class LogProgress:
    """The parts of tqdm's interface vc uses, reporting as occasional log lines."""

    def __init__(self, iterable, total, desc, unit, disable, initial, every_seconds, every_percent):
        self.iterable, self.total, self.desc, self.unit = iterable, total, desc or "progress", unit
        self.disable, self.n, self.start_n = disable, initial, initial
        self.every_seconds, self.every_percent = every_seconds, every_percent
        self.started = self.last_time = time.monotonic()
        self.last_percent = self._percent()
        self.postfix = ""
        self.closed = False

    def __iter__(self) -> Iterator:
        # No "done" line when the loop is abandoned (an error): the error is the news.
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def __len__(self) -> int:
        return int(self.total or 0)

    def __enter__(self) -> LogProgress:
        return self

    def __exit__(self, exc_type, *rest) -> None:
        if exc_type is None:
            self.close()
        self.closed = True

    def update(self, n: float = 1) -> None:
        self.n += n
        if self.disable or (self.total and self.n >= self.total):  # close() says "done"
            return
        now, percent = time.monotonic(), self._percent()
        due_time = now - self.last_time >= self.every_seconds
        due_percent = percent is not None and percent - self.last_percent >= self.every_percent
        if due_time or due_percent:
            self.last_time, self.last_percent = now, percent
            self._emit()

    def set_postfix(self, ordered_dict=None, refresh: bool = True, **values) -> None:
        values = {**(ordered_dict or {}), **values}
        self.postfix = ", ".join(f"{key}={value}" for key, value in values.items())

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc or self.desc

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if not self.disable and self.n > self.start_n:
            self._emit(done=True)

    def _percent(self) -> float | None:
        return 100.0 * self.n / self.total if self.total else None

    def _emit(self, done: bool = False) -> None:
        elapsed = time.monotonic() - self.started
        rate = (self.n - self.start_n) / elapsed if elapsed > 0 else 0.0
        count = f"{self.n:g}/{self.total:g} {self.unit}" if self.total else f"{self.n:g} {self.unit}"
        percent = self._percent()
        parts = [f"{self.desc}: {'done ' if done else ''}{count}"]
        if percent is not None:
            parts[0] += f" ({percent:.0f}%)"
        parts.append(f"{elapsed:.0f} s, {rate:.3g} {self.unit}/s")
        if not done and percent is not None and rate > 0:
            parts.append(f"about {(self.total - self.n) / rate:.0f} s left")
        if self.postfix:
            parts.append(self.postfix)
        log.info(", ".join(parts))
