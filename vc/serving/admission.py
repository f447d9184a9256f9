"""How many requests `vc serve` works on at once, and how many wait: the bound on its memory.

A request holds memory from the moment its upload is read until its answer is made: the upload (up to
--max-upload-mb) and, while the one converting thread works on it, the decoded samples (up to
--max-seconds at the file's rate) and the conversion's tensors. Admission lets at most ``active``
requests past the door at once, keeps up to ``queue`` more waiting (each holding only its connection:
the body is not read yet), and refuses the rest with a 503, so that a burst cannot grow the server
without limit.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager


class Busy(Exception):
    """Every working slot and every queue place is taken."""


class Admission:
    def __init__(self, active: int, queue: int):
        if active < 1 or queue < 0:
            raise ValueError(
                f"need at least one active request and a queue of 0 or more, got {active}, {queue}"
            )
        self.active, self.queue = active, queue
        self._slots = threading.Semaphore(active)
        self._lock = threading.Lock()
        self._inside = 0  # working or waiting

    @contextmanager
    def admit(self):
        """Wait for a working slot; Busy at once when ``active + queue`` requests are already inside."""
        with self._lock:
            if self._inside >= self.active + self.queue:
                raise Busy()
            self._inside += 1
        try:
            with self._slots:
                yield
        finally:
            with self._lock:
                self._inside -= 1
