"""When the attention model converts: a budget that ends at a free-running dev check, not a minute count.

The attention model's alignment images look done long before it converts. On the Xeon's curve
(docs/ablation.md, "When does the attention model convert?") the free-running diagonal was 1.000 at
step 200 while its conversions were noise (WER 98 %); the focus rate crossed 0.75 between steps 300
and 400, and the eval MCD fell 1.53, 0.38, 0.13 dB over the next hundreds of steps. A fixed minute
count hands a slower CPU a model that has not got there (EPYC family 25: 219 steps in 8 minutes, WER
99 %). So training may end at the first evaluation whose free-running dev conversions
(vc/training/selection.py) both attend (focus rate >= model.converts_focus) and have stopped improving
fast (their distance fell less than model.converts_gain_db since the previous evaluation);
train.max_minutes and train.max_steps stay its cap. A resumed run measures once more before it can end.
"""

from __future__ import annotations

import math

from vc.training.selection import FreeRunning


class ConvertsRule:
    """Remembers the previous evaluation's distance; ``fallen``: how far the last update's distance fell
    from it (inf at the first); ``converts_at``: the step the rule passed, or None. ``first_step``: the
    rule passes no earlier (model.self_steps: self-reconstruction first, then the pairs it must learn)."""

    def __init__(self, focus: float, gain_db: float, first_step: int = 0):
        self.focus, self.gain_db, self.first_step = focus, gain_db, first_step
        self.previous = math.inf
        self.fallen = math.inf
        self.converts_at: int | None = None

    def update(self, step: int, check: FreeRunning) -> bool:
        """Whether the model converts by this evaluation (its step is then ``converts_at``)."""
        self.fallen = self.previous - check.distance
        self.previous = check.distance
        if (
            self.converts_at is None
            and step > self.first_step
            and check.focus >= self.focus
            and self.fallen < self.gain_db
        ):
            self.converts_at = step
        return self.converts_at is not None
