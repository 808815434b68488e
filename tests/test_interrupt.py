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

    with checkpoint_on_interrupt(), pytest.raises(RunInterrupted, match=r"1 runs finished.*1 others"):
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
    assert main([*argv, "--resume"]) == 0


def test_an_interrupted_plan_says_its_simulation_restarts(tiny, tmp_path, monkeypatch) -> None:
    """A plan's simulations run without checkpoints: a Ctrl-C in one says it restarts, and one between
    simulations stops before the next (both keep the finished ones)."""
    import sim.plan as plan_module
    from sim.plan import PlanSettings, plan

    settings = PlanSettings(budget_seconds=40, top=1, others=1, seeds=1, max_tau1=3, max_tau2=3,
                            estimate_samples=16, hessian_iters=5)  # fmt: skip
    problem = _config(tiny, tmp_path / "p", partition="shards", nodes=4, batch_size=8)
    monkeypatch.setattr(sim.loop, "interrupt_requested", lambda: True)  # Ctrl-C in the first simulation
    with pytest.raises(RunInterrupted, match="interrupted in simulation 1 of 2 \\(it restarts next time\\)"):
        plan(problem, settings)
    monkeypatch.setattr(sim.loop, "interrupt_requested", lambda: False)
    monkeypatch.setattr(plan_module, "interrupt_requested", lambda: True)  # Ctrl-C before a simulation
    with pytest.raises(RunInterrupted, match="interrupted before simulation 1 of 2; 0 are kept"):
        plan(problem, settings)
