"""Where and how the checks run: one frozen CheckContext, set for the length of a dfl-check run.

:func:`using` installs a context and restores the previous one afterwards (also on errors), so a
run cannot leave its output folder or device behind for the next; :func:`current` reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CheckContext", "current", "using"]


@dataclass(frozen=True)
class CheckContext:
    """``runs``: the folder of cached simulations; ``device``: torch device of every simulation (part
    of each run's cache key); ``cifar_dir``: the folder holding cifar-10-batches-py, if any."""

    runs: Path = Path("paper_checks_out") / "runs"
    device: str = "cpu"
    cifar_dir: str | None = None


_STACK: list[CheckContext] = [CheckContext()]


def current() -> CheckContext:
    """The context of the checks running now (the defaults outside a dfl-check run)."""
    return _STACK[-1]


@contextmanager
def using(context: CheckContext) -> Iterator[CheckContext]:
    """Run the enclosed checks in ``context``; the previous context is back afterwards."""
    _STACK.append(context)
    try:
        yield context
    finally:
        _STACK.pop()
