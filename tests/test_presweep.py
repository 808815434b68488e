"""paper_checks.presweep: beside a GPU the checks' simulations go first, one sweep per data set."""

from __future__ import annotations

import numpy as np

import paper_checks.experiments as experiments
from paper_checks.context import CheckContext
from paper_checks.presweep import planned_by_run, presweep, presweeps
from paper_checks.registry import load_checks

CHECKS = load_checks()
TINY = {"eta": 0.05, "seeds": [0], "local_steps": 4, "eval_samples": 30}


def test_only_beside_a_device() -> None:
    assert presweeps(CheckContext(device="cuda")) and presweeps(CheckContext(device="cuda:1"))
    assert not presweeps(CheckContext(device="cpu"))


def test_the_checks_read_the_joint_sweeps_runs_and_give_the_same_verdicts(tmp_path, monkeypatch) -> None:
    """Fig. 7's and Fig. 8's runs as one sweep (DFL at tau1 = tau2 = 4 on the ring, which both plan, once;
    Fig. 10's DFL run logs 40 rows, a run of its own since 2026-11-29), then the checks simulate nothing (run
    and run_sweep raise if called) and judge as they do from their own sweeps, up to float rounding."""
    monkeypatch.setattr(experiments, "_settings", lambda quick: TINY)
    figures = [CHECKS["fig7-tau2"], CHECKS["fig8-tau1"]]
    alone = CheckContext(runs=tmp_path / "alone")
    expected = {chk.id: chk(alone) for chk in figures}
    joint = CheckContext(runs=tmp_path / "joint")
    planned = planned_by_run(figures, joint)
    own = sum(len(chk.planned(joint)) for chk in figures)
    assert len(planned) == own - 1
    lines: list[str] = []
    presweep(figures, joint, lines.append)
    (line,) = lines
    assert line.startswith(f"{len(planned)} runs of fig7-tau2, fig8-tau1 as one sweep")
    assert not planned_by_run(figures, joint)  # every run is in the cache now

    def no_simulation(*args: object, **kwargs: object) -> None:
        raise AssertionError("a check simulated after the joint sweep")

    monkeypatch.setattr(experiments, "run_sweep", no_simulation)
    monkeypatch.setattr(experiments, "run", no_simulation)
    for chk in figures:
        got = chk(joint)
        assert got.status == expected[chk.id].status
        _assert_close(got.evidence["curves"], expected[chk.id].evidence["curves"])


def test_a_sweep_that_fails_is_told_and_left_to_the_checks(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(experiments, "_settings", lambda quick: TINY)
    context = CheckContext(runs=tmp_path / "runs", device="cuda:99")
    lines: list[str] = []
    presweep([CHECKS["fig9-zeta"], CHECKS["zeta-values"]], context, lines.append)  # zeta-values plans nothing
    (line,) = lines
    assert line.startswith("the sweep of 4 runs (fig9-zeta) failed: InputError: device = 'cuda:99'")
    assert len(planned_by_run([CHECKS["fig9-zeta"]], context)) == 4  # nothing cached: the check runs them


def _assert_close(got: object, expected: object) -> None:
    """Nested dicts of curves equal in keys, their numbers to float rounding."""
    if isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys()
        for key in expected:
            _assert_close(got[key], expected[key])
    else:
        assert np.allclose(
            np.asarray(got, dtype=float), np.asarray(expected, dtype=float), rtol=1e-5, atol=1e-7
        )
