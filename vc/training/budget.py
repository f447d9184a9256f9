"""A training loop's budget: a step limit, a time limit, or both, whichever ends it first.

The one training loop (vc/training/loop.py) stops every network's training when spent() reaches 1;
the model kinds' linear learning-rate decay and the mel -> linear network's cosine read the same
fraction (budgeted training, Li et al. 2020).
"""

from __future__ import annotations

import math
import time


class Budget:
    """``max_steps`` (0: no step limit) and ``seconds`` (inf: no time limit) counted from ``started``."""

    def __init__(self, max_steps: int = 0, seconds: float = math.inf, started: float | None = None):
        self.max_steps = max_steps
        self.seconds = seconds
        self.started = time.monotonic() if started is None else started

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def spent(self, step: int) -> float:
        """The larger of the spent fractions of the step and the time budget (> 1 once past them)."""
        steps = step / self.max_steps if self.max_steps > 0 else 0.0
        return max(steps, self.elapsed() / self.seconds) if math.isfinite(self.seconds) else steps


def seconds_left(max_minutes: float, started: float) -> float:
    """What is left of a ``max_minutes`` limit (0: none) that started at ``started``, at least a second:
    the companion networks' limits cover their feature extraction too."""
    if max_minutes <= 0:
        return math.inf
    return max(1.0, max_minutes * 60.0 - (time.monotonic() - started))
