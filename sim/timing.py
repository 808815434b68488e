"""One timer for every measurement (benchmarks, dfl-check's calibration): device-synchronised."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

__all__ = ["seconds_per_call", "synchronize"]


def synchronize(dev: torch.device) -> None:
    """Wait for every kernel queued on ``dev`` (a no-op on the CPU, whose ops are synchronous)."""
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def seconds_per_call(fn: Callable[[], object], repeats: int, dev: torch.device) -> float:
    """Seconds per call of ``fn`` on ``dev``.

    One warm-up call (the first calls build the autograd graphs and load the kernels), then
    ``repeats`` calls between two device synchronisations: on CUDA the clock starts when the
    queue is empty and stops when the last kernel has finished.
    """
    fn()
    synchronize(dev)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    synchronize(dev)
    return (time.perf_counter() - start) / repeats
