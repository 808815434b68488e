"""Ctrl-C (SIGINT) during a run or a sweep: the step finishes, checkpoints are written, the CLI says how to
continue and exits 130, and the resumed runs equal unbroken ones (:mod:`sim.interrupt`)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import torch
from conftest import assert_same_records

import sim.loop
from sim.cli import main
from sim.config import RunConfig
from sim.errors import RunInterrupted
from sim.interrupt import checkpoint_on_interrupt, interrupt_requested
from sim.runner import run
from sim.sweep import run_sweep


@pytest.fixture(autouse=True)
def _pythons_sigint_handler():
    """Python's own SIGINT handler (KeyboardInterrupt) during each test: a shell's background job starts
    Python with SIGINT ignored, and Python then installs none, so the test of a SIGINT outside the context
    failed when the suite ran in the background."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _config(tiny: Path, out: Path, **kw) -> RunConfig:
    base = dict(dataset=f"npz:{tiny}", model="logreg", nodes=6, steps=30, log_every=5, eval_samples=40,
                checkpoint_every=100, out=str(out))  # fmt: skip
    return RunConfig(**{**base, **kw})


def _sigint_at(step: int):
    """A progress callback that sends this process SIGINT when the run reaches ``step``."""

    def progress(t: int, *_: object) -> None:
        if t == step:
            signal.raise_signal(signal.SIGINT)

    return progress


def test_an_interrupted_run_checkpoints_its_last_step_and_resumes_to_the_unbroken_run(tiny, tmp_path) -> None:
    choco = {"algorithm": "cdfl", "compressor": "rand_k", "compressor_param": 3}  # a random stream to resume
    run(_config(tiny, tmp_path / "unbroken", **choco))
    broken = _config(tiny, tmp_path / "broken", **choco)
    with checkpoint_on_interrupt(), pytest.raises(RunInterrupted, match="interrupted at step 13 of 30"):
        run(broken, _sigint_at(13))
    assert not interrupt_requested()  # the request ends with the context
    assert (
        torch.load(tmp_path / "broken/checkpoint.pt", weights_only=False)["t"] == 13
    )  # not the last every-100
    assert not (tmp_path / "broken/summary.json").exists()
    run(
        _config(
            tiny, tmp_path / "broken", algorithm="cdfl", compressor="rand_k", compressor_param=3, resume=True
        )
    )
    assert_same_records(tmp_path / "broken", tmp_path / "unbroken", rtol=0)


def test_a_second_sigint_stops_at_once_and_outside_the_context_sigint_is_a_keyboard_interrupt(tiny, tmp_path):
    def twice(t: int, *_: object) -> None:
        if t == 3:
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)

    with checkpoint_on_interrupt(), pytest.raises(KeyboardInterrupt):
        run(_config(tiny, tmp_path / "a"), twice)
    with pytest.raises(KeyboardInterrupt):
        run(_config(tiny, tmp_path / "b"), _sigint_at(3))


def test_an_interrupted_sweep_keeps_its_finished_runs_and_resumes_the_others(tiny, tmp_path) -> None:
    steps = [8, 30]  # the first run has finished when the sweep is interrupted

    def configs(folder: str, resume: bool = False) -> list[RunConfig]:
        return [_config(tiny, tmp_path / folder / str(i), steps=s, seed=i, resume=resume)
                for i, s in enumerate(steps)]  # fmt: skip

    run_sweep(configs("unbroken"))

    def progress(done: int, total: int) -> None:
        if done == 8 + 12:  # the first run's 8 steps and the second's 12: the first finished at step 8
            signal.raise_signal(signal.SIGINT)

    with checkpoint_on_interrupt(), pytest.raises(RunInterrupted, match=r"1 run finished.*1 others"):
        run_sweep(configs("broken"), progress)
    assert (tmp_path / "broken/0/summary.json").is_file()
    assert torch.load(tmp_path / "broken/1/checkpoint.pt", weights_only=False)["t"] == 12
    run_sweep(configs("broken", resume=True)[1:])
    for i in range(len(steps)):
        assert_same_records(tmp_path / f"broken/{i}", tmp_path / f"unbroken/{i}", rtol=0)


def test_cli_says_how_to_continue_and_exits_130(tiny, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(sim.loop, "interrupt_requested", lambda: True)  # as if Ctrl-C came during step 1
    argv = ["run", "--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6", "--steps", "30",
            "--out", str(tmp_path / "r")]  # fmt: skip
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "interrupted at step 1 of 30" in err and "--resume continues it" in err
    monkeypatch.undo()
    checkpoint = (tmp_path / "r" / "checkpoint.pt").read_bytes()
    assert main(argv) == 2  # the same command without --resume deleted the checkpoint in silence (a probe)
    err = capsys.readouterr().err
    said = "holds an interrupted run (a checkpoint.pt, no summary.json of its steps)"
    assert f"out = '{tmp_path / 'r'}' {said}" in err
    assert "--resume continues it (expected --resume, another --out, or its checkpoint.pt removed" in err
    assert (tmp_path / "r" / "checkpoint.pt").read_bytes() == checkpoint
    assert main([*argv, "--resume"]) == 0
    assert main(argv) == 0  # finished: a fresh run replaces it, as before


def test_a_fresh_run_leaves_a_resumed_then_interrupted_run_and_a_live_one_alone(
    tiny, tmp_path, capsys, monkeypatch
) -> None:
    """A finished run resumed to more steps and stopped keeps its old summary.json (of fewer steps): it was
    not taken for interrupted, and a fresh run deleted the newer checkpoint; a run writing its folder now
    was called interrupted, where it is in use (a review)."""
    import subprocess
    import sys

    argv = ["run", "--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6", "--steps", "10",
            "--out", str(tmp_path / "r")]  # fmt: skip
    assert main(argv) == 0
    monkeypatch.setattr(sim.loop, "interrupt_requested", lambda: True)
    assert main([*argv[:-4], "--steps", "30", "--out", str(tmp_path / "r"), "--resume"]) == 130
    monkeypatch.undo()
    capsys.readouterr()
    assert main(argv) == 2
    assert (
        "holds an interrupted run (a checkpoint.pt, no summary.json of its steps)" in capsys.readouterr().err
    )
    holder = subprocess.Popen(  # the run's own process, as far as the lock tells (flock: another process)
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); fcntl.flock(f, "
         "fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)", str(tmp_path / "r" / ".dfl-sim.lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert main(argv) == 2
        assert "is in use by another run" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()


def test_an_interrupted_plan_continues_its_simulation_to_the_unbroken_one(
    tiny, tmp_path, monkeypatch, capsys
) -> None:
    """A Ctrl-C in a plan's simulation keeps its checkpoint, and the next call continues from it: the
    simulations and their metrics equal an unbroken plan's. A Ctrl-C between simulations stops before the
    next (both keep the finished ones)."""
    import pandas as pd

    import sim.plan as plan_module
    from sim.plan import PlanSettings, plan

    settings = PlanSettings(budget_seconds=40, top=1, others=1, seeds=1, max_tau1=3, max_tau2=3,
                            estimate_samples=16, hessian_iters=5)  # fmt: skip

    def problem(name: str) -> RunConfig:
        return _config(tiny, tmp_path / name, partition="shards", nodes=4, batch_size=8)

    unbroken = plan(problem("unbroken"), settings)
    calls = iter(range(10**6))
    monkeypatch.setattr(sim.loop, "interrupt_requested", lambda: next(calls) >= 12)  # 2 asks a step: at 7
    with pytest.raises(RunInterrupted, match=r"interrupted in simulation 1 of 2 \(interrupted at step 7 of"):
        plan(problem("broken"), settings)
    (folder,) = (tmp_path / "broken" / "runs").iterdir()
    assert (folder / "checkpoint.pt").is_file() and not (folder / "summary.json").exists()
    before = (folder / "metrics.csv").read_text()  # its wall_time column would differ after a restart
    monkeypatch.setattr(sim.loop, "interrupt_requested", lambda: False)
    resumed = plan(problem("broken"), settings)
    assert (folder / "metrics.csv").read_text().startswith(before)  # continued, not trained again
    assert resumed["chosen"] == unbroken["chosen"]
    a, b = (pd.read_csv(tmp_path / name / "simulations.csv") for name in ("unbroken", "broken"))
    pd.testing.assert_frame_equal(a, b, rtol=1e-6)
    assert_same_records(tmp_path / "unbroken" / "runs" / folder.name, folder)
    capsys.readouterr()
    finished = (folder / "metrics.csv").read_text()
    (tmp_path / "broken" / "simulations.csv").unlink()  # as if stopped after a simulation, before its row
    again = plan(problem("broken"), settings)  # every simulation finished: read back, not run again
    assert again["chosen"] == unbroken["chosen"] and (folder / "metrics.csv").read_text() == finished
    assert "--steps larger" not in capsys.readouterr().err  # (the note of a finished run resumed)
    monkeypatch.setattr(plan_module, "interrupt_requested", lambda: True)  # Ctrl-C before a simulation
    with pytest.raises(RunInterrupted, match="interrupted before simulation 1 of 2; 0 are kept"):
        plan(problem("between"), settings)


def test_a_plan_starts_a_simulation_again_whose_checkpoint_cannot_be_continued(
    tiny, tmp_path, monkeypatch, capsys
) -> None:
    """An interrupted simulation resumed under another --log-every (not part of a plan's problem) cannot
    continue its checkpoint: the plan says so and trains it from step 0, to the unbroken result."""
    import pandas as pd

    from sim.plan import PlanSettings, plan

    settings = PlanSettings(budget_seconds=40, top=1, others=1, seeds=1, max_tau1=3, max_tau2=3,
                            estimate_samples=16, hessian_iters=5)  # fmt: skip
    unbroken = _config(tiny, tmp_path / "unbroken", partition="shards", nodes=4, batch_size=8, log_every=1000)
    plan(unbroken, settings)
    broken = _config(tiny, tmp_path / "broken", partition="shards", nodes=4, batch_size=8)
    calls = iter(range(10**6))
    monkeypatch.setattr(sim.loop, "interrupt_requested", lambda: next(calls) >= 12)
    with pytest.raises(RunInterrupted):
        plan(broken, settings)
    monkeypatch.setattr(sim.loop, "interrupt_requested", lambda: False)
    plan(RunConfig(**{**broken.__dict__, "log_every": 1000}), settings)
    err = capsys.readouterr().err
    assert "checkpoint was taken with other settings (log_every = " in err, err
    assert "the simulation starts again from step 0" in err and "--allow-change" not in err  # not plan's flag
    a, b = (pd.read_csv(tmp_path / name / "simulations.csv") for name in ("unbroken", "broken"))
    pd.testing.assert_frame_equal(a, b, rtol=1e-6)


def test_an_interrupted_cli_sweep_lists_its_finished_runs(tiny, tmp_path, monkeypatch, capsys) -> None:
    """sweep.json held only the grid values of a run that finished before the Ctrl-C (its summary came at
    the sweep's end, or with --resume): it is now written as each run ends."""
    import json

    import sim.sweep

    grid = tmp_path / "grid.toml"
    grid.write_text(f'[base]\ndataset = "npz:{tiny}"\nmodel = "logreg"\nnodes = 6\n[grid]\nsteps = [4, 40]\n')
    calls = iter(range(10**6))
    monkeypatch.setattr(sim.sweep, "interrupt_requested", lambda: next(calls) >= 5)  # after step 6
    assert main(["sweep", str(grid), "--out", str(tmp_path / "s")]) == 130
    listing = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert (
        listing[0]["grid"] == {"steps": 4} and listing[0]["steps"] == 4 and "final_train_loss" in listing[0]
    )
    assert listing[1] == {"grid": {"steps": 40}}
    monkeypatch.undo()
    assert main(["sweep", str(grid), "--out", str(tmp_path / "s")]) == 2  # it retrained from step 0
    assert (tmp_path / "s" / "steps=40" / "checkpoint.pt").is_file()
    capsys.readouterr()
    assert main(["sweep", str(grid), "--out", str(tmp_path / "s"), "--resume"]) == 0
    out, err = capsys.readouterr()  # the run that had finished: reused, and said so (its line says "done")
    assert "dfl-sim: note: resume: 1 run of 2 had finished and is reused, its result from then" in err
    assert out.count("(done)") == 2


def test_a_ctrl_c_command_ends_by_sigint_so_that_a_shell_loop_stops(tiny, tmp_path, monkeypatch, capsys):
    """A command stopped by Ctrl-C exited 130 after its checkpoint, which a shell takes as 'handled': a loop
    of runs went on to the next run (a review). It now says its line and ends by SIGINT (a shell's 130 too),
    and a loop stops; stopped by SIGTERM it still exits 130. In process, the console script's main raises
    KeyboardInterrupt (its traceback silenced), main of the command module still returns 130."""
    import os
    import subprocess
    import sys
    import time
    import types

    import bounds.cli_tools as cli_tools

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = (f"{sys.executable} -m sim run --dataset npz:{tiny} --model logreg --nodes 6 --steps 1000000 "
           f"--log-every 10 --threads 1 --out {tmp_path}/r$i")  # fmt: skip
    loop = subprocess.Popen(
        ["bash", "-c", f'for i in 1 2; do {run}; echo "after $i: $?"; done'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "PYTHONPATH": root},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # (not ignored, as in a terminal)
    )  # fmt: skip
    metrics, deadline = tmp_path / "r1" / "metrics.csv", time.time() + 120
    while time.time() < deadline and (not metrics.is_file() or len(metrics.read_text().splitlines()) < 3):
        time.sleep(0.05)
    os.killpg(loop.pid, signal.SIGINT)  # a terminal's Ctrl-C: the foreground group
    out, err = loop.communicate(timeout=120)
    assert "dfl-sim: interrupted at step" in err, err[-2000:]
    assert out == "" and not (tmp_path / "r2").exists()  # the loop stopped: no 'after 1', no second run
    assert loop.returncode == -signal.SIGINT

    module = types.ModuleType("stopped_command")
    module.main = lambda argv: 130  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "stopped_command", module)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # (restored after the test)
    with pytest.raises(KeyboardInterrupt):
        cli_tools.entry("stopped_command", "prog")
    capsys.readouterr()
    sys.excepthook(KeyboardInterrupt, KeyboardInterrupt(), None)  # silenced: the command said its line
    sys.excepthook(ValueError, ValueError("other"), None)  # any other exception: as before
    err = capsys.readouterr().err
    assert "ValueError: other" in err and "KeyboardInterrupt" not in err
    module.main = lambda argv: cli_tools.stopped_by(signal.SIGTERM) or 130  # type: ignore[attr-defined]
    assert cli_tools.entry("stopped_command", "prog") == 130


def test_a_stop_with_nothing_kept_is_not_told_to_resume(tiny, tmp_path, capsys, monkeypatch) -> None:
    """'interrupted; nothing to keep yet in DIR: the same command with --resume continues it' (a distributed
    run stopped before its first checkpoint, a review): a --resume there is refused; the advice is now to run
    the same command again. One stopped after a checkpoint is still told to resume."""
    import sim.distributed

    monkeypatch.setattr(sim.distributed, "interrupt_requested", lambda: True)  # before the workers start
    argv = ["run", "--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6", "--steps", "30",
            "--backend", "distributed", "--world-size", "2", "--out", str(tmp_path / "d")]  # fmt: skip
    assert main(argv) == 130
    assert capsys.readouterr().err.strip().endswith("nothing to keep yet in " + str(tmp_path / "d")
                                                    + ": the same command starts it again")  # fmt: skip
    assert sim.distributed._where_stopped(RunConfig(out=str(tmp_path / "d"))).kept is False


PLOT_STOPPED_MID_WRITE = """
import os, signal, sys, time
from matplotlib.figure import Figure

def savefig(self, fname, **kwargs):
    with open(fname, "wb") as fh:
        fh.write(b"\\x89PNG half")
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)

Figure.savefig = savefig
from plots.__main__ import main
sys.exit(main([sys.argv[1]]))
"""


def test_sigterm_stops_dfl_plot_and_every_cli_main_as_ctrl_c_does(tmp_path, capsys) -> None:
    """dfl-plot, dfl-bounds and dfl-sim versus had no SIGTERM handler (what timeout, kill and batch
    schedulers send): they ended at once without a line, dfl-plot mid-figure with its temporary file left
    behind. Every CLI's main now takes SIGTERM as Ctrl-C: one line, status 130, what Ctrl-C keeps kept."""
    import os
    import subprocess
    import sys

    import pandas as pd

    from bounds.cli_tools import cli_entry

    run_folder = tmp_path / "run"
    run_folder.mkdir()
    metrics = {"step": [0, 10], "model_time": [0.0, 1.0], "train_loss": [2.3, 1.0], "test_acc": [0.1, 0.5],
               "consensus": [0.0, 1e-3], "grad_norm2": [1.0, 0.5]}  # fmt: skip
    pd.DataFrame(metrics).to_csv(run_folder / "metrics.csv", index=False)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    argv = [sys.executable, "-c", PLOT_STOPPED_MID_WRITE, str(run_folder)]
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 130 and done.stderr.strip() == "dfl-plot: interrupted", done.stderr[-2000:]
    assert sorted(p.name for p in run_folder.iterdir()) == ["metrics.csv"]  # no cut-off figure, no .tmp

    @cli_entry("prog")
    def stopped(argv: list[str]) -> int:
        signal.raise_signal(signal.SIGTERM)
        return 0

    previous = signal.getsignal(signal.SIGTERM)
    assert stopped([]) == 130 and capsys.readouterr().err == "prog: interrupted\n"
    assert signal.getsignal(signal.SIGTERM) is previous  # restored on leaving
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # ignored by the parent (`trap '' TERM`): it stays so
    try:  # (it stopped the command, a review)
        assert stopped([]) == 0 and capsys.readouterr().err == ""
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_stop_while_python_finalises_ends_with_the_commands_status(tmp_path) -> None:
    """Ctrl-C just after a command had finished (its results written and printed) came while Python
    finalised: 'Exception ignored in atexit callback ... KeyboardInterrupt' from torch, status 0 (a probe).
    Now the signal ends the process at once with the command's status. Here the signal comes right after
    the console script's entry returns, as it would during the interpreter's shutdown."""
    import os
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[1])
    for sig in (signal.SIGINT, signal.SIGTERM):
        child = (
            "import os, signal, sys, time\n"
            "from bounds.cli_tools import entry\n"
            "sys.argv = ['dfl-bounds', 'topology', 'ring', '--nodes', '5', '--json']\n"
            "code = entry('bounds.cli', 'dfl-bounds')\n"
            f"os.kill(os.getpid(), {int(sig)})\n"
            "time.sleep(5)\n"
            "print('not stopped')\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", child], capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": root},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        assert done.returncode == 0, (sig, done.stderr[-2000:])
        assert '"zeta"' in done.stdout and "not stopped" not in done.stdout
        assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr
