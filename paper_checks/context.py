"""Where and how the checks run: one frozen CheckContext, passed to every check as its first argument.

Nothing here is global: ``dfl-check`` builds one context per run and hands it to each check, so a
run cannot leave its output folder or device behind for the next, and a test builds its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["CheckContext"]


@dataclass(frozen=True)
class CheckContext:
    """``quick``: the reduced grids and runs of ``dfl-check --quick``; ``runs``: the folder of cached
    simulations; ``device``: torch device of every simulation (part of each run's cache key);
    ``cifar_dir``: the folder holding cifar-10-batches-py, if any."""

    quick: bool = True
    runs: Path = Path("paper_checks_out") / "runs"
    device: str = "cpu"
    cifar_dir: str | None = None
