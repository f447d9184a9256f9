"""Non-finite losses and gradients: skip the update, stop training after several in a row.

One step whose loss or gradient is not finite (an fp16 overflow, one bad batch)
changes nothing: its update is skipped and the run goes on. Several in a row
mean the weights themselves have gone bad (a learning rate far too high), and
every later checkpoint would be poisoned: training stops with one TrainingError
naming the step, and the caller says where its last good state is. The one
training loop (vc/training/loop.py) applies it to every network.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import torch

from vc.errors import TrainingError
from vc.settings.training import TrainConfig

log = logging.getLogger(__name__)

# Non-finite steps in a row that stop training (train.max_nonfinite_steps; the companion trainings use it too).
MAX_NONFINITE_STEPS = TrainConfig.max_nonfinite_steps


def all_finite(*values: torch.Tensor | float) -> bool:
    """Whether every value (a float or a one-element tensor, a loss with its graph too) is finite."""
    return all(math.isfinite(float(v.detach()) if torch.is_tensor(v) else v) for v in values)


def gradients_finite(module: torch.nn.Module) -> bool:
    return all(bool(torch.isfinite(p.grad).all()) for p in module.parameters() if p.grad is not None)


def companion_advice(section: str, learning_rate: float) -> str:
    """What to change when a companion network's training (section mel2linear or postfilter) diverges."""
    return (
        f"the network was not saved; lower {section}.learning_rate (now {learning_rate:g}; "
        f"--set {section}.learning_rate=...)"
    )


class NonFiniteGuard:
    """Counts the updates skipped for a non-finite loss or gradient; raises after ``limit`` in a row."""

    def __init__(self, limit: int = MAX_NONFINITE_STEPS, what: str = "training"):
        self.limit = limit
        self.what = what
        self.in_a_row = 0
        self.skipped = 0

    def skip(self, step: int, finite: bool, advice: Callable[[], str] | str = "") -> bool:
        """Whether step ``step``'s update must be skipped; ``advice`` (or what it returns, asked only
        then) ends the error that stops training."""
        if finite:
            self.in_a_row = 0
            return False
        self.in_a_row += 1
        self.skipped += 1
        log.warning("%s step %d: the loss or gradient is not finite; update skipped", self.what, step)
        if self.in_a_row >= self.limit:
            advice = advice() if callable(advice) else advice
            raise TrainingError(
                f"{self.what} diverged: {self.in_a_row} steps in a row up to step {step} had a non-finite "
                f"loss or gradient{'; ' + advice if advice else ''}"
            )
        return True
