"""Beside a GPU, the device-free checks run in another process while the device runs the simulations.

On a GPU the checks that simulate (``Check.on_device``: the figures, the CNN drift, the planner) keep
the device busy from one CPU core, and the others (exact recursions, Monte Carlo, the PEP SDPs of
``tightness``: about 40 min of one core's solver time in ``--full``) need no device at all. Run one
after the other, ``--full`` on an H100 with 16 cores took 413 s of checks plus ``tightness``
(2026-11-27). :func:`run_overlapped` runs the device-free checks, in registry order, in one spawned
process (their cells over ``workers - 1`` processes of its own) while this process runs the device
checks, so the wall time is about the longer of the two parts, not their sum.

Each check's result is the one :func:`paper_checks.cache.run_one` gives when run alone (same cache, same
fingerprint: a device-free check's leaves the device out); ``progress`` is called as each finishes, from
either process, one call at a time. The background process runs in its own process group: Ctrl-C (sent to
the terminal's group) stops this process, which then stops that group, its cell workers included; it
also stops itself when this process is gone. A background process that dies (killed, out of memory)
leaves its unfinished checks ``could not run``, saying so.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from paper_checks.cache import check_result, run_one
from paper_checks.context import CheckContext
from paper_checks.registry import Check, Outcome

__all__ = ["overlaps", "run_overlapped"]

POLL_SECONDS = 0.5
"""How often the background's results are polled (and its liveness checked)."""


def overlaps(pending: list[Check], context: CheckContext) -> bool:
    """Whether :func:`run_overlapped` pays for ``pending`` (the checks to compute, not cached): a device other
    than the CPU (on the CPU the simulations take every core themselves), at least two workers (one for
    the device, the rest for the background), and checks of both kinds."""
    kinds = {chk.on_device for chk in pending}
    return not context.device.startswith("cpu") and context.workers >= 2 and kinds == {True, False}


def run_overlapped(
    chosen: list[Check],
    context: CheckContext,
    cache_dir: Path,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """``run_one`` of every check of ``chosen``: the device checks here, the others in a background
    process (module docstring); the results in the order of ``chosen``."""
    free = [chk for chk in chosen if not chk.on_device]
    results: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()

    def finished(result: dict[str, Any]) -> None:
        with lock:
            results[result["id"]] = result
            if progress:
                progress(len(results), len(chosen), result)

    beside = dataclasses.replace(context, workers=context.workers - 1)  # one core drives the device
    background = _Background([chk.id for chk in free], beside, cache_dir)
    failures: list[BaseException] = []

    def read() -> None:
        try:
            for result in background.results():
                finished(result)
        except BaseException as exc:  # progress failed (a full disk): raised again in this thread
            failures.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    graceful = False
    try:
        for chk in chosen:
            if chk.on_device:
                finished(run_one(chk, context, cache_dir))
        reader.join()
        graceful = True
    finally:
        background.stop(graceful)
    if failures:
        raise failures[0]
    for chk in free:  # what the background never sent
        if chk.id not in results:
            finished(_lost(chk, background.exitcode))
    return [results[chk.id] for chk in chosen]


class _Background:
    """The background process: runs the checks ``ids`` one after the other and puts each result on a
    queue, then ``None``."""

    def __init__(self, ids: list[str], context: CheckContext, cache_dir: Path) -> None:
        spawn = multiprocessing.get_context("spawn")  # not fork: this process may hold a CUDA context
        self._queue = spawn.Queue()
        work = (ids, context, cache_dir, self._queue, os.getpid())
        self._process = spawn.Process(target=_serve, args=work, name="dfl-check background")
        self._process.start()

    @property
    def exitcode(self) -> int | None:
        return self._process.exitcode

    def results(self) -> Iterator[dict[str, Any]]:
        """The results as they come, until the last one or the process is gone."""
        while True:
            try:
                result = self._queue.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if not self._process.is_alive():  # died without its last word: drain what it sent
                    try:
                        result = self._queue.get(timeout=POLL_SECONDS)
                    except queue.Empty:
                        return
                else:
                    continue
            if result is None:
                return
            yield result

    def stop(self, graceful: bool) -> None:
        """Wait for the process (a few seconds if ``graceful``: it has sent its results and is exiting),
        then stop it and its workers (its process group) if it still runs."""
        self._process.join(timeout=10 if graceful else 0)
        if self._process.is_alive():
            try:
                os.killpg(self._process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            self._process.join(timeout=10)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()


def _serve(ids: list[str], context: CheckContext, cache_dir: Path, results: Any, parent: int) -> None:
    """The background process: its own process group (the parent stops it and its cell workers as one),
    a watchdog that ends the group when the parent is gone, the checks in order."""
    os.setpgrp()  # Ctrl-C at the terminal reaches the parent's group only: the parent decides
    threading.Thread(target=_watch, args=(parent,), daemon=True).start()
    from paper_checks.registry import load_checks

    checks = load_checks()
    for check_id in ids:
        results.put(run_one(checks[check_id], context, cache_dir))
    results.put(None)
    results.close()
    results.join_thread()


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
