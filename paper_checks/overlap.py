"""Beside a GPU, the device-free checks run in another process while the device runs the simulations.

On a GPU the checks that simulate (``Check.on_device``: the figures, the CNN drift, the planner) keep
the device busy, and the others (exact recursions, Monte Carlo, the PEP SDPs of ``tightness``: about
40 min of one core's solver time in ``--full``) need no device at all. Run one after the other, the
device checks of ``--full`` took about 310 s on an H100 with 16 cores and the others about 100 s plus
``tightness`` (2.5 min or more; 2026-11-27). :func:`run_overlapped` runs the device-free checks, in
registry order, in one spawned process (their cells over ``workers - 1`` processes of its own) while this
process runs the device checks, so the wall time is about the longer of the two parts, not their sum.

Each check's result is the one :func:`paper_checks.cache.run_one` gives when run alone (same cache, same
fingerprint: a device-free check's leaves the device out); ``progress`` is called in this process as each
check finishes, from the main thread or from a reader thread, one call at a time.

The background process runs in its own process group, and sends its results through a pipe whose only
write end it holds. Ctrl-C (sent to the terminal's group) or SIGTERM stops this process, which then stops
that group, its cell workers included (also when the background itself has died: its workers do not
notice). Killed outright, this process leaves the background's watchdog to end the group. A background that
dies (killed, out of memory) closes the pipe, even in the middle of a result, and its unfinished checks are
``could not run``, saying so.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

from paper_checks.cache import check_result, run_one
from paper_checks.context import CheckContext
from paper_checks.registry import Check, Outcome, load_checks

__all__ = ["overlaps", "run_overlapped"]

STOPPING = {signal.SIGINT, signal.SIGTERM}
"""The signals that stop ``dfl-check`` (Ctrl-C; SIGTERM as ``timeout`` sends it, turned into Ctrl-C)."""
STOP_SECONDS = 10.0
"""How long the background process may take to exit after its last result (and the reader thread to end)."""


def overlaps(pending: list[Check], context: CheckContext) -> bool:
    """Whether :func:`run_overlapped` pays for ``pending`` (the checks to compute, not cached): a device other
    than the CPU (on the CPU the simulations take every core themselves), at least two workers (the device
    checks here, the others' cells over the rest), and checks of both kinds."""
    kinds = {chk.on_device for chk in pending}
    return context.beside_device and context.workers >= 2 and kinds == {True, False}


def run_overlapped(
    chosen: list[Check],
    context: CheckContext,
    cache_dir: Path,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
    first: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """``run_one`` of every check of ``chosen``: the device checks here, the others (registered checks: the
    background looks them up by id) in a background process (module docstring); the results in the order
    of ``chosen``. ``first`` runs here before the device checks, while the background works (the
    simulations as joint sweeps: :mod:`paper_checks.presweep`). An error of ``progress`` on the reader
    thread is raised here after the device check that was running."""
    free = [chk for chk in chosen if not chk.on_device]
    registered = load_checks()
    strays = [chk.id for chk in free if registered.get(chk.id) is not chk]
    if strays:
        raise ValueError(f"checks {strays} are not the registered ones (the background process runs those)")
    results: dict[str, dict[str, Any]] = {}
    lock, stopped = threading.Lock(), threading.Event()
    failures: list[BaseException] = []

    def finished(result: dict[str, Any]) -> None:
        with lock:
            if not stopped.is_set():  # after an abort the reader's late results are dropped
                results[result["id"]] = result
                if progress:
                    progress(len(results), len(chosen), result)

    def read(background: _Background) -> None:
        try:
            for result in background.results():
                finished(result)
        except BaseException as exc:  # progress failed (a full disk): raised in the main thread
            failures.append(exc)

    background: _Background | None = None
    reader: threading.Thread | None = None
    graceful = False
    try:
        beside = dataclasses.replace(context, workers=max(1, context.workers - 1))  # the cores left
        background = _Background([chk.id for chk in free], beside, cache_dir)
        background.start()
        reader = threading.Thread(target=read, args=(background,), daemon=True)
        reader.start()
        if first is not None:
            first()
            _raise_first(failures)
        for chk in chosen:
            if chk.on_device:
                finished(run_one(chk, context, cache_dir))
                _raise_first(failures)
        reader.join()
        _raise_first(failures)
        graceful = True
    finally:
        if not graceful:
            stopped.set()
        if background is not None:
            background.stop(graceful)
        if reader is not None:
            reader.join(timeout=STOP_SECONDS)  # the pipe's write end is gone now: it ends
        if background is not None:
            background.close()
    for chk in free:  # what the background never sent
        if chk.id not in results:
            finished(_lost(chk, background.exitcode))
    return [results[chk.id] for chk in chosen]


def _raise_first(failures: list[BaseException]) -> None:
    if failures:
        raise failures[0]


class _Background:
    """The background process: runs the checks ``ids`` one after the other and sends each result through
    a pipe, then ``None``. Made, then :meth:`start`-ed: an interruption while it starts still finds it to
    :meth:`stop`."""

    def __init__(self, ids: list[str], context: CheckContext, cache_dir: Path) -> None:
        spawn = multiprocessing.get_context("spawn")  # not fork: this process may hold a CUDA context
        self._receive, self._send = spawn.Pipe(duplex=False)
        work = (ids, context, cache_dir, self._send, os.getpid())
        self._process = spawn.Process(target=_serve, args=work, name="dfl-check background")
        self._lock = threading.Lock()  # the reader's kill of the group against stop()'s reaping
        self._reaped = False

    def start(self) -> None:
        """Start it with SIGINT and SIGTERM held back, and raise one that came meanwhile once the process
        exists (for the caller's :meth:`stop`).

        Held back twice: blocked in this thread, so that the child inherits the mask (a signal sent to this
        process group before the child has left it stays pending there; it drops a SIGINT, :func:`_serve`),
        and, in the main thread, Python's handlers deferred (the kernel may deliver the signal to another
        thread, whose C handler has Python raise it here anyway). The resource tracker, which multiprocessing
        starts on the first spawn, is started before: its start unblocks both signals in the calling thread.
        """
        resource_tracker.ensure_running()
        came: list[int] = []
        handlers: dict[signal.Signals, Any] = {}
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])  # read only: a raise below leaves it as it was
        try:
            if threading.current_thread() is threading.main_thread():  # where Python's handlers run
                for sig in STOPPING:
                    handlers[sig] = signal.signal(sig, lambda signum, frame: came.append(signum))
            signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
            self._process.start()
            self._send.close()  # the child's is the only write end now: its death ends the pipe here
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
        if came:
            signal.raise_signal(came[0])  # the caller's handler (Ctrl-C: KeyboardInterrupt), now

    @property
    def exitcode(self) -> int | None:
        return self._process.exitcode

    def results(self) -> Iterator[dict[str, Any]]:
        """The results as they come, until the last one or the process is gone; then, if it died, its
        cell workers are killed at once (they do not notice, and would compute on)."""
        while True:
            try:
                result = self._receive.recv()
            except (EOFError, OSError):  # gone, maybe in the middle of a result
                with self._lock:
                    if not self._reaped:  # its pid cannot have gone to another process yet
                        self._kill_group()
                return
            if result is None:
                return
            yield result

    def stop(self, graceful: bool) -> None:
        """Wait for the process (if ``graceful``: it has sent its results and is exiting), then kill it and
        what is left of its process group (its cell workers), and reap it. Nothing to do if it never
        started. Killed before it is reaped: its pid, the group's id, is not free to be reused meanwhile."""
        if self._process.pid is None:
            return
        if graceful:
            multiprocessing.connection.wait([self._process.sentinel], STOP_SECONDS)  # waits, does not reap
        with self._lock:
            self._process.kill()  # also when it is still starting: no group of its own yet
            self._kill_group()
            self._process.join()
            self._reaped = True

    def close(self) -> None:
        """Close the pipe's ends held here (once nothing reads it)."""
        self._receive.close()
        self._send.close()

    def _kill_group(self) -> None:
        if self._process.pid is None:  # never started (killpg(0) would be this process's own group)
            return
        try:
            os.killpg(self._process.pid, signal.SIGKILL)  # SIGTERM would do the same: no cleanup to wait for
        except ProcessLookupError:  # the group is empty, or not made yet
            pass


def _serve(ids: list[str], context: CheckContext, cache_dir: Path, send: Any, parent: int) -> None:
    """The background process: its own process group (the parent stops it and its cell workers as one; a
    Ctrl-C at the terminal no longer reaches it), a watchdog that ends the group when the parent is gone,
    the checks in order."""
    os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # drops a Ctrl-C pending from before setpgrp
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
    threading.Thread(target=_watch, args=(parent,), daemon=True).start()
    checks = load_checks()
    for check_id in ids:
        send.send(run_one(checks[check_id], context, cache_dir))
    send.send(None)
    send.close()


def _watch(parent: int) -> None:
    """End this process group once the parent is gone (killed without a chance to stop it)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os.killpg(0, signal.SIGKILL)


def _lost(chk: Check, exitcode: int | None) -> dict[str, Any]:
    """The result of a check the background process did not finish (not cached: it runs next time)."""
    why = (f"the background process of the device-free checks stopped (exit code {exitcode}) before this "
           "check finished; the same command runs it again")  # fmt: skip
    return {**check_result(chk, Outcome("could not run", why), 0.0, ""), "cached": False}
