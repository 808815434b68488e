"""Hypothesis-generated argument lists for each CLI: a result (exit 0) or one line on stderr (exit 2),
never a traceback. dfl-sim is fuzzed up to its validation (a valid run would train)."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bounds import InputError
from bounds.cli import main as bounds_main
from plots.cli import main as plot_main
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


@pytest.mark.parametrize("value", ["-1e-3", "-1E5", "-inf", "-Infinity", "-nan", "-.5", "-2"])
def test_a_negative_number_is_a_value_that_the_validators_name(capsys, value: str) -> None:
    """``--L -1e-3`` reaches the check of L (argparse alone reads -1e-3 and -inf as unknown options and
    says "expected one argument", naming neither the value nor what was expected)."""
    argv = ["dfl", "--L", value, "--sigma2", "1", "--nodes", "4", "--eta", "0.1", "--tau1", "2",
            "--tau2", "2", "--T", "8", "--gap", "1", "--zeta", "0.5"]  # fmt: skip
    assert _exit_code(bounds_main, argv) == 2
    _, err = capsys.readouterr()
    assert err.startswith("dfl-bounds: error: L ") and "expected one argument" not in err, err
    args = _parser().parse_args(["run", "--eta", value])
    with pytest.raises(InputError, match=r"^eta "):
        _config(args).validate()


@pytest.mark.parametrize(
    "argv",
    [
        ["cdfl", "--L", "1e308", "--sigma2", "1", "--nodes", "10", "--tau1", "2", "--tau2", "2", "--K", "100",
         "--topology", "ring", "--G2", "1", "--delta", "0.5", "--mu", "1"],
        ["optimize", "--L", "1", "--sigma2", "1", "--nodes", "10", "--gap", "1", "--zeta", "0.5", "--t-comp",
         "1e308", "--t-comm", "1", "--budget-seconds", "1e-300"],
        ["optimize", "--L", "1", "--sigma2", "1", "--nodes", "10", "--gap", "1", "--zeta", "0.5", "--t-comp",
         "1", "--t-comm", "1e-300", "--budget-seconds", "1e308"],
        ["optimize", "--L", "1", "--sigma2", "1", "--nodes", "10", "--gap", "1", "--zeta", "0.5", "--t-comp",
         "1e-320", "--t-comm", "5e-324", "--budget-seconds", "200"],
        ["optimize", "--L", "1", "--sigma2", "1", "--nodes", "10", "--gap", "1", "--zeta", "0.5", "--t-comp",
         "1e308", "--t-comm", "1e-308", "--budget-seconds", "1e308", "--max-tau1", "8", "--max-tau2", "8"],
        ["compare", "--L", "1", "--sigma2", "1", "--nodes", "10", "--eta", "1e308", "--tau1", "2", "--tau2",
         "2", "--T", "20", "--gap", "1", "--zeta", "1e-308"],
    ],
)  # fmt: skip
def test_extreme_values_print_no_numpy_warning(capsys, argv: list[str]) -> None:
    """numpy's 'overflow encountered in multiply' reached users from Lemma 13's step condition (L = 1e308),
    a round's cost (t_comp = 1e308) and a budget's step count (1e308 s); compare's corrected drift raised
    OverflowError (eta = 1e308). The verdict is in the result or the error, not in a warning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = _exit_code(bounds_main, argv)
    assert code in (0, 2) and [str(w.message) for w in caught] == []
