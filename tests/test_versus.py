"""dflkit against another simulator (sim.versus): both tools really run the workload, their steps are
counted from what they ran, the ratios follow from the runs, and bad input or a failing child is a
one-line error."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import sim.versus as versus_module
from bounds import InputError
from bounds._checks import whole_number
from sim.errors import SimulationError
from sim.versus import Workload, versus, versus_rows


@pytest.fixture(scope="module")
def tiny() -> dict:
    """``dfl-sim versus gossipy`` on a 4-node ring for 6 rounds, each tool twice, as a user runs it (about
    35 s on 2 cores)."""
    command = [sys.executable, "-m", "sim", "versus", "gossipy", "--nodes", "4", "--node-steps", "24",
               "--repeats", "2", "--threads", "1", "--json"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    out["stderr"] = done.stderr
    return out


def test_both_simulators_run_the_workload_and_the_ratios_come_from_their_runs(tiny: dict) -> None:
    point = tiny["points"]["N4"]
    assert point["workload"]["rounds"] == 6
    assert [r["steps"] for r in point["dflkit"]] == [12, 12]  # 6 rounds of a local and a gossip step
    for tool in ("gossipy", "dflkit"):
        assert len(point[tool]) == 2
        for run in point[tool]:
            # dflkit: 6 local steps of 4 nodes, from the steps it ran. gossipy (PUSH, synchronous, no drops
            # or delays): every node sends one model a round, each received model one merge + one SGD
            # step, and gossipy's start one step per node before the clock
            assert run["local_steps"] == 24
            assert run["process_local_steps"] == 24 + (4 if tool == "gossipy" else 0)
            assert 0 < run["run_s"] < run["wall_s"]
        # seeded: the repeats train alike
        assert point[tool][0]["accuracy"] == point[tool][1]["accuracy"]
    rates, exact = point["node_steps_per_s"], {}
    for tool in ("gossipy", "dflkit"):
        runs = point[tool]
        exact[tool] = {
            "end_to_end": sum(r["process_local_steps"] for r in runs) / sum(r["wall_s"] for r in runs),
            "without_start_up": sum(r["local_steps"] for r in runs) / sum(r["run_s"] for r in runs),
        }
        for kind in ("end_to_end", "without_start_up"):
            assert rates[tool][kind] == pytest.approx(exact[tool][kind], abs=0.051)
    for kind, steps, seconds in (("end_to_end", "process_local_steps", "wall_s"),
                                 ("without_start_up", "local_steps", "run_s")):  # fmt: skip
        ratio = exact["dflkit"][kind] / exact["gossipy"][kind]
        assert point["dflkit_over_gossipy"][kind] == pytest.approx(ratio, abs=6e-4)
        by_repeat = [
            (d[steps] / d[seconds]) / (g[steps] / g[seconds])
            for d, g in zip(point["dflkit"], point["gossipy"], strict=True)
        ]
        assert point["dflkit_over_gossipy_by_repeat"][kind] == pytest.approx(by_repeat, abs=6e-4)


def test_each_launch_says_a_line_on_stderr(tiny: dict) -> None:
    lines = tiny["stderr"].strip().splitlines()
    assert lines[0].startswith("versus: 1 point(s) x 2 repeat(s) x 2 tools")
    launches = [line for line in lines if line.startswith("versus: N = 4, repeat ")]
    assert len(launches) == 4  # two repeats of each tool, order alternating
    assert [line.split(": ")[2].split()[0] for line in launches] == ["gossipy", "dflkit", "dflkit", "gossipy"]


def test_the_terminal_rows_carry_the_rates_and_ratios(tiny: dict) -> None:
    rows = versus_rows(tiny)
    point = tiny["points"]["N4"]
    assert [(r["nodes"], r["tool"]) for r in rows["runs"]] == [(4, "gossipy"), (4, "dflkit")]
    for row in rows["runs"]:
        assert row["end_to_end"] == point["node_steps_per_s"][row["tool"]]["end_to_end"]
        assert row["without_start_up"] == point["node_steps_per_s"][row["tool"]]["without_start_up"]
    ratio = point["dflkit_over_gossipy"]
    assert rows["dflkit_over_gossipy"] == [
        {"nodes": 4, "end_to_end": ratio["end_to_end"], "without_start_up": ratio["without_start_up"],
         "end_to_end_by_repeat": point["dflkit_over_gossipy_by_repeat"]["end_to_end"]}
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("nosuch", [4], 24), "simulator 'nosuch'"),
        (("gossipy", [2], 24), "nodes = 2"),  # no ring of 2 nodes: refused before gossipy runs
        (("gossipy", 4, 24), "nodes = 4"),
        (("gossipy", [], 24), "nodes = []"),
        (("gossipy", [4, 4], 24), "nodes = [4, 4] repeats"),
        (("gossipy", [4.5], 24), "nodes = 4.5 is not a whole number"),
        (("gossipy", [4], 0), "node_steps = 0"),
        (("gossipy", [4], 24, 0), "repeats = 0"),
        (("gossipy", [4], 24, 1, -1), "threads = -1"),  # (0: automatic, as --threads 0 of dfl-sim run)
        (("gossipy", [4], 24, 1, False), "threads = False is a boolean"),
        (("gossipy", [1], 24), "nodes = 1 is out of range (expected an integer >= 3)"),  # (it said >= 1)
        (("gossipy", [4], 24, 1, 1, "imagenet"), "dataset = 'imagenet'"),
        (("gossipy", [4], 24, 1, 1, "cifar10"), "needs --data-dir"),
        (("gossipy", [4], 24, 1, 1, "cifar10", "/nonexistent"), "'/nonexistent/data_batch_1' does not exist"),
        (("gossipy", [4], 24, 1, 1, "mnist", "/nonexistent"), "'/nonexistent/train-images-idx3-ubyte.gz'"),
        (("gossipy", [70_000], 70_000), "nodes = 70000 exceeds the 60000 training samples"),  # after gossipy
        (("gossipy", [3, 5], 4), "node_steps = 4 is fewer than nodes = 5"),  # ran one round, unsaid
        (("gossipy", [4], 24, 1, 10**6), "threads = 1000000 is more than the"),  # a child's crash
    ],
)
def test_bad_input_is_refused_before_anything_runs(
    args: tuple, named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*_: object) -> None:
        raise AssertionError("a child process started")

    monkeypatch.setattr(versus_module, "_timed", never)
    with pytest.raises(InputError, match="expected") as info:
        versus(*args)
    assert named in str(info.value)


def test_threads_0_is_automatic_as_the_limits_message_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """--threads 0 was refused ('expected an integer >= 1') while --threads 3 on 2 cores was told '0 =
    automatic' (a probe): 0 takes this process's cores, as no --threads does."""
    started: list[int] = []

    def first_launch(command: list[str], threads: int, what: str) -> tuple[float, dict]:
        started.append(threads)
        raise KeyboardInterrupt  # (the checks passed: stop before a child starts)

    monkeypatch.setattr(versus_module, "_timed", first_launch)
    with pytest.raises(KeyboardInterrupt):
        versus("gossipy", [4], 24, 1, 0)
    assert started == [len(versus_module.allowed_cpus())]


def test_whole_number_floats_are_taken_as_ints() -> None:
    """repeats = 2.0 passed the check as a float, ran the untimed launches, then was a TypeError in range()
    (a review): the checked numbers are the ints used (versus keeps whole_number's result)."""
    for value in (2.0, np.int64(2), 2):
        got = whole_number("repeats", value, low=1)
        assert got == 2 and type(got) is int


def test_a_simulator_not_installed_or_of_another_version_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    metadata = versus_module.importlib.metadata

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    with pytest.raises(InputError, match=r"gossipy is not installed \(pip install gossipy-dfl==0\.0\.1"):
        versus("gossipy", [4], 24)
    monkeypatch.setattr(metadata, "version", lambda name: "0.0.2")
    with pytest.raises(InputError, match=r"gossipy-dfl 0\.0\.2 is installed \(expected gossipy-dfl==0\.0\.1"):
        versus("gossipy", [4], 24)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("import sys; print('partial'); sys.exit('the reason')", r"gossipy failed \(exit 1\): the reason"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", r"gossipy was killed by SIGKILL"),
        ("print('no json here')", r"gossipy printed no result \(expected a JSON object last\): no json here"),
        ("pass", r"printed no result .*\(nothing printed\)"),
        ("print('[1, 2]')", r"printed no result"),
    ],
)
def test_a_failing_child_is_one_error_with_the_end_of_its_output(code: str, message: str) -> None:
    with pytest.raises(SimulationError, match=message):
        versus_module._timed([sys.executable, "-c", code], 1, "gossipy")


def test_a_data_error_in_the_gossipy_child_is_its_message_not_a_traceback() -> None:
    work = Workload(nodes=4, rounds=1, data_dir="/nonexistent")  # past versus()'s checks, as a folder removed
    with pytest.raises(SimulationError) as info:
        versus_module._gossipy(work, versus_module.Path("unused"))
    assert str(info.value).startswith("gossipy failed (exit 2): data file '/nonexistent/")
    assert "Traceback" not in str(info.value) and "File " not in str(info.value)


def test_dflkits_run_is_the_workload_it_states() -> None:
    cifar = Workload(nodes=5, rounds=7, dataset="cifar10", data_dir="D").dflkit_config("out")
    assert (cifar.dataset, cifar.data_dir, cifar.model) == ("cifar10", "D", "cnn")
    config = Workload(nodes=5, rounds=7, threads=1).dflkit_config("out")
    assert (config.algorithm, config.tau1, config.tau2, config.steps) == ("dfl", 1, 1, 14)
    assert (config.nodes, config.topology, config.partition, config.batch_size) == (5, "ring", "iid", 32)
    assert config.log_every == config.checkpoint_every == 14  # logged at the start and the end only


def test_both_tools_train_the_cifar10_cnn_on_the_same_data(cifar_dir) -> None:
    """--dataset cifar10: both tools read the data folder and train the paper's CIFAR-10 CNN (a tiny
    data set of the real format, conftest's cifar_dir)."""
    out = versus(
        "gossipy", [3], node_steps=6, repeats=1, threads=1, dataset="cifar10", data_dir=str(cifar_dir)
    )
    point = out["points"]["N3"]
    assert point["workload"]["dataset"] == "cifar10"
    assert point["gossipy"][0]["local_steps"] == point["dflkit"][0]["local_steps"] == 6


def test_the_cli_refuses_an_unknown_simulator_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sim", "versus", "nosuch"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "dfl-sim: error: simulator 'nosuch' (expected one of: gossipy)"
    ]
