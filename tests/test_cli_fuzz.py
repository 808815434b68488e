"""Hypothesis-generated argument lists for each CLI: a result (exit 0) or one line on stderr (exit 2),
never a traceback. dfl-sim is fuzzed up to its validation (a valid run would train)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bounds import InputError
from bounds.cli import main as bounds_main
from plots.__main__ import main as plot_main
from sim.cli import _config, _parser

VALUES = st.sampled_from(
    ["0", "1", "-1", "2", "10", "0.5", "-0.5", "1e30", "-1e30", "nan", "inf", "-inf", "abc", "", "3.7",
     "ring", "complete", "erdos-renyi", "matrix:/nonexistent.npy", "edges:/dev/null", "true", "1e-300"]
)  # fmt: skip
BOUNDS_FLAGS = [
    "--L", "--sigma2", "--nodes", "--eta", "--tau1", "--tau2", "--T", "--gap", "--zeta", "--topology",
    "--weights", "--seed", "--beta-var", "--t-comp", "--t-comm", "--budget-seconds", "--max-tau1",
    "--max-tau2", "--mu", "--G2", "--K", "--delta", "--beta-mix", "--json",
]  # fmt: skip
SIM_FLAGS = [
    "--nodes", "--tau1", "--tau2", "--eta", "--steps", "--batch-size", "--seed", "--gamma", "--alpha",
    "--topology", "--weights", "--algorithm", "--compressor", "--compressor-param", "--partition", "--device",
    "--latency", "--bandwidth", "--t-comp", "--t-comm", "--log-every", "--threads", "--lr-schedule", "--mu",
    "--a", "--allow-change", "--checkpoint-seconds", "--model",
]  # fmt: skip


def _argv(flags: list[str]) -> st.SearchStrategy[list[str]]:
    pair = st.tuples(st.sampled_from(flags), VALUES).map(lambda p: [p[0]] if p[0] == "--json" else list(p))
    return st.lists(pair, max_size=8).map(lambda pairs: [x for p in pairs for x in p])


def _exit_code(fn, argv: list[str]) -> int:
    try:
        return fn(argv)
    except SystemExit as exc:  # argparse: --help or a bad flag
        return int(exc.code or 0)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    command=st.sampled_from(["dfl", "topology ring", "optimize", "cdfl", "compare"]), rest=_argv(BOUNDS_FLAGS)
)
def test_dfl_bounds_never_tracebacks(capsys, command: str, rest: list[str]) -> None:
    argv = command.split() + rest
    if command == "optimize":  # keep the grids small: the point is the parsing and the checks
        argv += ["--max-tau1", "8", "--max-tau2", "8"]
    code = _exit_code(bounds_main, argv)
    _, err = capsys.readouterr()
    assert code in (0, 2), (argv, err)
    if code == 2:
        assert err.count("\n") == 1 and "Traceback" not in err, (argv, err)


@settings(max_examples=150, deadline=None)
@given(rest=_argv(SIM_FLAGS))
def test_dfl_sim_run_validation_never_tracebacks(rest: list[str]) -> None:
    try:
        args = _parser().parse_args(["run", *rest])
    except SystemExit as exc:
        assert exc.code == 2
        return
    try:
        _config(args).validate()
    except InputError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rest=st.lists(VALUES, min_size=1, max_size=3))
def test_dfl_plot_never_tracebacks(capsys, tmp_path, rest: list[str]) -> None:
    code = _exit_code(plot_main, [str(tmp_path / r) if r else "" for r in rest])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("argv", [["dfl", "--T", "1e30"], ["topology", "ring", "--nodes", "-3"]])
def test_fuzz_harness_sees_errors(capsys, argv: list[str]) -> None:
    """The harness itself: known-bad argument lists come out as exit 2 with one line."""
    assert _exit_code(bounds_main, argv) == 2
