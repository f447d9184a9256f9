"""Independent items spread over worker processes, one per core, their results in the items' order.

    from vc.parallel import process_map
    rows = process_map(score_one, jobs, workers=2, desc="scoring", unit="file")

One worker runs in this process (no pool, nothing pickled); more run in a pool that ends with the
call, an error included (the first error is raised here). Progress goes through vc.progress.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable
from typing import Any

from vc.progress import progress as show_progress  # `progress` is a parameter name here


def usable_workers(workers: int, items: int) -> int:
    """``workers`` capped by the cores and the items, at least 1."""
    return max(1, min(workers, os.cpu_count() or 1, items))


def process_map(
    function: Callable[[Any], Any],
    items: Iterable[Any],
    workers: int,
    *,
    desc: str,
    unit: str,
    progress: bool = True,
    initializer: Callable[[], None] | None = None,
    chunksize: int = 1,
) -> list:
    """[function(item) for item in items], over ``workers`` processes (each started with
    ``initializer``; with one worker it runs here, the initializer not called)."""
    items = list(items)
    workers = usable_workers(workers, len(items))
    results = []
    with show_progress(total=len(items), desc=desc, unit=unit, disable=not progress) as bar:
        if workers == 1:
            for item in items:
                results.append(function(item))
                bar.update(1)
            return results
        pool = multiprocessing.get_context().Pool(workers, initializer=initializer)
        try:
            for result in pool.imap(function, items, chunksize):
                results.append(result)
                bar.update(1)
        finally:
            pool.terminate()
            pool.join()
    return results
