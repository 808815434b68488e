"""paper_checks.overlap: the device-free checks in a background process beside the device's checks.

The full use (cached results, registry order, progress from both processes, a device the background
never touches) is tested in test_paper_checks.py's theory run; here what goes wrong: the background
process killed, the main process stopped or killed.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from paper_checks.context import CheckContext
from paper_checks.overlap import overlaps, run_overlapped
from paper_checks.registry import Check, Outcome, load_checks

CHECKS = load_checks()
ROOT = Path(__file__).resolve().parents[1]


def test_overlap_only_beside_a_device_with_work_of_both_kinds() -> None:
    gpu = CheckContext(device="cuda", workers=4)
    both = [CHECKS["fig9-zeta"], CHECKS["zeta-values"]]
    assert overlaps(both, gpu)
    assert not overlaps(both, CheckContext(device="cpu", workers=4))  # the runs take every core themselves
    assert not overlaps(both, CheckContext(device="cuda", workers=1))
    assert not overlaps(both[:1], gpu) and not overlaps(both[1:], gpu) and not overlaps([], gpu)


def _killer(wait_for_workers: bool, seen: list[int] | None = None) -> Check:
    """A device check that kills the background process (SIGKILL to it alone), at once or once it has cell
    workers; its pid goes into ``seen``."""

    def kill_background(ctx: CheckContext, statement: object) -> Outcome:
        (background,) = multiprocessing.active_children()
        if seen is not None:
            seen.append(background.pid)
        if wait_for_workers:
            assert _wait_for(lambda: len(_group(background.pid)) >= 3), "no cell workers came"
        os.kill(background.pid, signal.SIGKILL)
        return Outcome("holds", "killed the background")

    return Check("kills", "ref", "claim", "method", kill_background, statement=1, on_device=True)


def test_checks_the_dead_background_did_not_finish_could_not_run(tmp_path) -> None:
    """The background is killed at once (before it has imported the checks): its checks say why they
    could not run and are not cached; the device check's result stands."""
    (tmp_path / "cache").mkdir()
    context = CheckContext(runs=tmp_path / "runs", device="cuda:99", workers=2)
    chosen = [_killer(False), CHECKS["zeta-values"], CHECKS["remarks-1-2"]]
    results = run_overlapped(chosen, context, tmp_path / "cache")
    assert [r["id"] for r in results] == ["kills", "zeta-values", "remarks-1-2"]
    assert [r["status"] for r in results] == ["holds", "could not run", "could not run"]
    assert "background process of the device-free checks stopped (exit code -9)" in results[1]["summary"]
    assert sorted(f.name for f in (tmp_path / "cache").iterdir()) == ["kills-quick.json"]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process groups from /proc")
def test_a_background_killed_amid_its_cells_leaves_no_worker(tmp_path) -> None:
    """Killed while its cell workers compute, the background leaves them orphaned (they never notice); the
    main process ends its group once it sees the pipe close."""
    (tmp_path / "cache").mkdir()
    context = CheckContext(runs=tmp_path / "runs", device="cuda:99", workers=3)
    background: list[int] = []
    killer = _killer(True, background)
    results = run_overlapped([killer, CHECKS["repair-nonquadratic"]], context, tmp_path / "cache")
    assert [r["status"] for r in results] == ["holds", "could not run"]
    assert _wait_for(lambda: not _group(background[0]), seconds=5)  # SIGKILL'ed: a moment to die


def test_one_worker_still_gives_the_background_one(tmp_path) -> None:
    """overlap asked for with --jobs 1: the background's checks that split cells get one process, not 0."""
    (tmp_path / "cache").mkdir()
    context = CheckContext(runs=tmp_path / "runs", device="cuda:99", workers=1)
    stub = Check(
        "stub", "ref", "claim", "method", lambda c, s: Outcome("holds", "s"), statement=1, on_device=True
    )
    results = run_overlapped([stub, CHECKS["prop1-non-iid"]], context, tmp_path / "cache")
    assert [r["status"] for r in results] == ["holds", "holds"], results[1]["summary"]


def test_a_device_free_check_must_be_the_registered_one(tmp_path) -> None:
    stray = Check("zeta-values", "ref", "claim", "method", lambda c, s: Outcome("holds", "s"), statement=1)
    with pytest.raises(ValueError, match=r"\['zeta-values'\] are not the registered ones"):
        run_overlapped([stray], CheckContext(device="cuda:99", workers=2), tmp_path)


CHILD = """
import os, signal, sys, threading, time, multiprocessing
from pathlib import Path
from bounds.cli_tools import sigterm_as_ctrl_c
from paper_checks.report import run_checks
sys.path.insert(0, sys.argv[3])
from test_overlap import _group, _wait_for

def stop_soon():
    while not multiprocessing.active_children():
        time.sleep(0.1)
    (background,) = multiprocessing.active_children()
    _wait_for(lambda: len(_group(background.pid)) >= 3)
    print(background.pid, len(_group(background.pid)), flush=True)
    os.kill(os.getpid(), getattr(signal, sys.argv[2]))

if __name__ == "__main__":
    threading.Thread(target=stop_soon, daemon=True).start()
    try:
        with sigterm_as_ctrl_c():
            ids = ["fig9-zeta", "repair-nonquadratic"]
            run_checks(ids, True, Path(sys.argv[1]), None, "cuda:99", workers=3)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process groups from /proc")
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_a_stopped_or_killed_dfl_check_leaves_no_background_process(tmp_path, signal_name: str) -> None:
    """SIGTERM (as `timeout` sends; Ctrl-C alike) stops the main process, which stops the background
    process group, its cell workers included; SIGKILL gives it no chance, and the background's watchdog
    ends the group itself."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", CHILD, str(tmp_path), signal_name, str(ROOT / "tests")]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == (130 if signal_name == "SIGTERM" else -9), done.stderr[-2000:]
    background, members = map(int, done.stdout.split()[:2])
    assert members >= 3, "the background had no cell workers when stopped: it was not what this tests"
    assert _wait_for(lambda: not _group(background), seconds=10)
    assert not (tmp_path / "cache" / "repair-nonquadratic-quick.json").exists()


def _group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid`` (zombies left out)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                alive.append(int(entry.name))
    return alive


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for(condition: Callable[[], bool], seconds: float = 120.0) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` have passed; whether it held."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_stopped_before_the_background_has_its_own_group_it_is_still_killed(tmp_path) -> None:
    """Ctrl-C in the first moment (here: in ``first``, at once), before the background has called setpgrp:
    it is killed itself, not waited for (it would run every device-free check), and nothing is cached."""
    (tmp_path / "cache").mkdir()
    context = CheckContext(runs=tmp_path / "runs", device="cuda:99", workers=2)

    def interrupt() -> None:
        raise KeyboardInterrupt

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_overlapped([_killer(False), CHECKS["zeta-values"]], context, tmp_path / "cache", first=interrupt)
    assert time.monotonic() - start < 5 and not multiprocessing.active_children()
    assert not list((tmp_path / "cache").iterdir())


STARTING = """
import multiprocessing.popen_spawn_posix as spawn, os, signal, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from test_overlap import CHECKS, _alive, _killer
from paper_checks.context import CheckContext
from paper_checks.overlap import run_overlapped

if __name__ == "__main__":
    real, launched = spawn.Popen._launch, []

    def launch_then_interrupt(self, process_obj):  # the child has its work; the Process object no pid yet
        real(self, process_obj)
        launched.append(self.pid)
        os.kill(os.getpid(), signal.SIGINT)

    spawn.Popen._launch = launch_then_interrupt
    tmp = Path(sys.argv[1])
    (tmp / "cache").mkdir()
    context = CheckContext(runs=tmp / "runs", device="cuda:99", workers=2)
    try:
        run_overlapped([_killer(False), CHECKS["zeta-values"]], context, tmp / "cache")
    except KeyboardInterrupt:
        background = launched[-1]  # the resource tracker came first
        time.sleep(1)
        state = "alive" if _alive(background) else "gone"
        print("interrupted", state, sorted(p.name for p in (tmp / "cache").iterdir()))
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_a_ctrl_c_while_the_background_starts_still_stops_it(tmp_path) -> None:
    """A Ctrl-C just after the child is launched, before multiprocessing knows its pid, in a fresh process
    (as dfl-check: the resource tracker starts with the background, and its start unblocks signals): it is
    raised once the process can be stopped, and the background is gone a second later, its check not run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", STARTING, str(tmp_path), str(ROOT / "tests")]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.strip() == "interrupted gone []", done.stdout + done.stderr[-2000:]
