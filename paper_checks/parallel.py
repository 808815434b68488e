"""Independent cells of a check computed in worker processes (``dfl-check --jobs``).

A Monte Carlo or exact-recursion cell is a pure function of its arguments (each seeds its own
generator), so computing cells in other processes changes nothing in the results: :func:`cell_map`
returns exactly what ``[fn(*task) for task in tasks]`` returns, in the same order (tested). Workers are
spawned (not forked: the parent may hold torch's thread pools), so ``fn`` must be a module-level
function and the tasks picklable.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from sim.host import allowed_cpus

__all__ = ["available_cores", "cell_map"]

R = TypeVar("R")
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""The workers' environment: ``workers`` processes of one BLAS/OpenMP thread each (the default, a thread per
core in every process, would run workers x cores threads on the cores)."""


def available_cores() -> int:
    """The cores this process may run on (``os.sched_getaffinity``), the default of ``--jobs``."""
    return len(allowed_cpus())


def cell_map(fn: Callable[..., R], tasks: Sequence[tuple[Any, ...]], workers: int = 1) -> list[R]:
    """``fn(*task)`` for every task, in order: in this process when ``workers`` is 1, else over up to
    ``workers`` spawned processes (a process costs a few seconds of imports: worth it for checks whose
    cells take minutes, not for a handful of cells)."""
    if workers < 1:
        raise ValueError(f"workers = {workers} (expected at least 1)")
    workers = min(workers, len(tasks))
    if workers <= 1:
        return [fn(*task) for task in tasks]
    chunk = max(1, len(tasks) // (8 * workers))  # a few chunks per worker: the cells' costs differ widely
    context = multiprocessing.get_context("spawn")
    saved = {name: os.environ.get(name) for name in ONE_THREAD}
    # inherited by the workers, created below: one thread each, no oversubscription
    os.environ.update(ONE_THREAD)
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return list(pool.map(fn, *zip(*tasks, strict=True), chunksize=chunk))
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
