"""Ctrl-C (or SIGTERM) during training: the step in progress finishes, a checkpoint is written, and the run
stops with a message that says how to continue (a second Ctrl-C stops at once).

A ``KeyboardInterrupt`` raised inside a step would leave the run's state half updated (the parameters
stepped, the step counter not), so the last checkpoint, up to ``checkpoint_every`` steps back, was all a
user kept. :func:`checkpoint_on_interrupt` (the CLIs wrap a run or a sweep in it) turns the first SIGINT
into a request that the step loops read after each step (:func:`interrupt_requested`); they then save
every unfinished run's checkpoint and raise :class:`sim.errors.RunInterrupted`. The processes of a
distributed run take it too (``worker``), and agree on the step in the collective each step takes
(:meth:`sim.loop.RunRecorder.record`). Outside the context (a library call) nothing changes: SIGINT
raises ``KeyboardInterrupt`` as usual.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from bounds.cli_tools import stopped_by

__all__ = ["checkpoint_on_interrupt", "interrupt_requested"]

_requested = False


def interrupt_requested() -> bool:
    """Whether a Ctrl-C asked the running step loop to stop after its current step."""
    return _requested


@contextmanager
def checkpoint_on_interrupt(
    program: str = "dfl-sim",
    worker: bool = False,
    signals: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM),
) -> Iterator[None]:
    """Within the block, the first SIGINT or SIGTERM (what ``timeout``, ``kill`` and batch schedulers
    send) sets :func:`interrupt_requested` (and says so on stderr); a second raises ``KeyboardInterrupt``.
    Only in the main thread (where Python delivers signals); elsewhere a no-op. The previous handlers are
    restored on leaving.

    ``worker``: a process of a distributed run. Every signal only sets the request, silently: the launcher
    speaks, forwards a signal it alone received (``timeout`` signals only it), and a second Ctrl-C stops
    the launcher at once, whose workers then die with it (a terminal's Ctrl-C reaches them too, and must
    not make them stop before their checkpoint). ``signals``: those taken (a spawned worker leaves SIGTERM
    to kill it: the launcher stops the others that way when one fails)."""
    global _requested
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def request(signum: int, frame: FrameType | None) -> None:
        global _requested
        if worker:
            _requested = True
            return
        if _requested:
            raise KeyboardInterrupt
        _requested = True
        stopped_by(signum)  # (the CLI then ends by SIGINT, or exits 130 after a SIGTERM)
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        print(f"\n{program}: {name}: stopping after this step to write a checkpoint (again to stop at once)",
              file=sys.stderr, flush=True)  # fmt: skip

    previous = {sig: signal.signal(sig, request) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _requested = False
