"""Where and how the checks run: one frozen CheckContext, passed to every check as its first argument.

Nothing here is global: ``dfl-check`` builds one context per run and hands it to each check, so a
run cannot leave its output folder or device behind for the next, and a test builds its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from bounds import InputError
from bounds._checks import flag, whole_number

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

    def __post_init__(self) -> None:
        """Each field checked as dfl-check's flags are (quick = 'no' meant quick mode, workers = 0 a
        ValueError from the cell map later, a probe of the library); ``runs`` and ``cifar_dir`` as given."""
        object.__setattr__(self, "quick", flag("quick", self.quick))  # (numpy's True_ as True: one cache key)
        object.__setattr__(self, "workers", whole_number("workers", self.workers, low=1))
        if not isinstance(self.device, str) or not self.device.strip():
            raise InputError(f"device = {self.device!r} is not a device name (expected 'cpu', 'cuda' or "
                             "'cuda:N')")  # fmt: skip
        if not isinstance(self.runs, str | os.PathLike):
            raise InputError(f"runs = {self.runs!r} is not a folder path (expected a str or a Path)")
        object.__setattr__(self, "runs", Path(self.runs))
        if self.cifar_dir is not None and not isinstance(self.cifar_dir, str | os.PathLike):
            raise InputError(f"cifar_dir = {self.cifar_dir!r} is not a folder path (expected a str, a "
                             "Path or None)")  # fmt: skip
        if self.cifar_dir is not None:  # (a Path and its str were two contexts, two cache keys)
            object.__setattr__(self, "cifar_dir", os.fspath(self.cifar_dir))

    @property
    def beside_device(self) -> bool:
        """Whether the simulations run on a device other than the CPU (a GPU): then the device-free checks
        overlap the device's (:mod:`paper_checks.overlap`) and the simulations go first
        (:mod:`paper_checks.presweep`)."""
        return not self.device.startswith("cpu")
