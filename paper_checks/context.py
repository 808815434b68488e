"""Where and how the checks run: one frozen CheckContext, passed to every check as its first argument.

Nothing here is global: ``dfl-check`` builds one context per run and hands it to each check, so a
run cannot leave its output folder or device behind for the next, and a test builds its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CheckContext"]


@dataclass(frozen=True)
class CheckContext:
    """``quick``: the reduced grids and runs of ``dfl-check --quick``; ``runs``: the folder of cached
    simulations; ``device``: torch device of every simulation (part of each run's cache key);
    ``cifar_dir``: the folder holding cifar-10-batches-py, if any; ``workers``: processes for the cells
    of the checks that split their work (:func:`paper_checks.parallel.cell_map`; results do not depend
    on it, so it is not part of the cache key)."""

    quick: bool = True
    runs: Path = Path("paper_checks_out") / "runs"
    device: str = "cpu"
    cifar_dir: str | None = None
    workers: int = field(default=1, repr=False, compare=False)

    @property
    def beside_device(self) -> bool:
        """Whether the simulations run on a device other than the CPU (a GPU): then the device-free checks
        overlap the device's (:mod:`paper_checks.overlap`) and the simulations go first
        (:mod:`paper_checks.presweep`)."""
        return not self.device.startswith("cpu")
