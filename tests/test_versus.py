"""dflkit against another simulator (sim.versus): both tools really run, their steps are counted exactly,
the ratios follow from the runs, and bad input or a failing child is a one-line error."""

from __future__ import annotations

import subprocess
import sys

import pytest

import sim.versus as versus_module
from bounds import InputError
from sim.versus import versus, versus_rows


@pytest.fixture(scope="module")
def tiny() -> dict:
    """Both tools on a 4-node ring for 6 rounds, twice each (about 25 s on 2 cores)."""
    return versus("gossipy", [4], node_steps=24, repeats=2, threads=1)


def test_both_simulators_run_the_workload_and_the_ratios_come_from_their_runs(tiny: dict) -> None:
    point = tiny["N4"]
    assert point["workload"]["rounds"] == 6
    for tool in ("gossipy", "dflkit"):
        assert len(point[tool]) == 2
        for run in point[tool]:
            # PUSH, synchronous, no drops or delays: every node sends one model a round, and each received
            # model is one merge + one SGD step; gossipy's start adds one step per node before the clock
            assert run["local_steps"] == 24
            assert run["process_local_steps"] == 24 + (4 if tool == "gossipy" else 0)
            assert 0 < run["train_s"] < run["wall_s"]
            assert 0.0 <= run["accuracy"] <= 1.0
    rates = point["node_steps_per_s"]
    for tool in ("gossipy", "dflkit"):
        runs = point[tool]
        wall = sum(r["process_local_steps"] for r in runs) / sum(r["wall_s"] for r in runs)
        train = sum(r["local_steps"] for r in runs) / sum(r["train_s"] for r in runs)
        assert rates[tool]["wall"] == pytest.approx(wall, abs=0.06)
        assert rates[tool]["train"] == pytest.approx(train, abs=0.06)
    ratio = point["dflkit_over_gossipy"]
    assert ratio["wall"] == pytest.approx(rates["dflkit"]["wall"] / rates["gossipy"]["wall"], rel=1e-2)
    assert ratio["train"] == pytest.approx(rates["dflkit"]["train"] / rates["gossipy"]["train"], rel=1e-2)


def test_the_terminal_rows_carry_the_rates_and_ratios(tiny: dict) -> None:
    rows = versus_rows(tiny)
    point = tiny["N4"]
    assert [(r["nodes"], r["tool"]) for r in rows["runs"]] == [(4, "gossipy"), (4, "dflkit")]
    for row in rows["runs"]:
        assert row["node_steps_per_s"] == point["node_steps_per_s"][row["tool"]]["wall"]
        assert row["training_only"] == point["node_steps_per_s"][row["tool"]]["train"]
    ratio = point["dflkit_over_gossipy"]
    assert rows["dflkit_over_gossipy"] == [
        {"nodes": 4, "end_to_end": ratio["wall"], "training_only": ratio["train"]}
    ]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("nosuch", [4], 24), "'nosuch'"),
        (("gossipy", [1], 24), "nodes = 1"),
        (("gossipy", 4, 24), "nodes = 4"),
        (("gossipy", [], 24), "nodes = []"),
        (("gossipy", [4], 0), "node_steps = 0"),
        (("gossipy", [4.0], 24), "nodes = 4.0"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(args: tuple, named: str) -> None:
    with pytest.raises(InputError, match="expected") as info:
        versus(*args)
    assert named in str(info.value)


def test_a_simulator_not_installed_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versus_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(InputError, match=r"gossipy is not installed \(pip install gossipy-dfl==0\.0\.1"):
        versus("gossipy", [4], 24)


def test_a_failing_child_is_an_error_with_the_end_of_its_output() -> None:
    command = [sys.executable, "-c", "import sys; print('partial'); sys.exit('the reason')"]
    with pytest.raises(InputError, match=r"gossipy failed \(exit 1\): the reason"):
        versus_module._timed(command, 1, "gossipy")


def test_the_cli_refuses_an_unknown_simulator_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sim", "versus", "nosuch"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "dfl-sim: error: simulator 'nosuch' (expected one of: gossipy)"
    ]
