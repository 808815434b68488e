"""Performance estimation of DFL (bounds.pep): validated against PEPit's own gradient descent, closed forms,
C = J (DFL is gradient descent on F), true quadratic instances from below, the witness."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bounds import InputError
from bounds.cli import main
from bounds.pep import dfl_worst_case, gradient_descent_worst_case, quadratic_lower_bound

pytest.importorskip("PEPit", reason="the 'pep' extras (PEPit, cvxpy) are part of the test extras")
ONE = np.eye(1)


def test_pepits_gradient_descent_reproduces_its_closed_form() -> None:
    """PEPit's example: min_t ||grad f(x_t)||^2 <= 4 L / (3 n) (f(x_0) - f(x_n)) at gamma = 1 / L."""
    assert gradient_descent_worst_case(L=1.0, eta=1.0, steps=5) == pytest.approx(4 / 15, rel=1e-5)


@pytest.mark.parametrize(("eta", "steps"), [(1.0, 5), (0.5, 3), (1.5, 2)])
def test_one_node_equals_pepits_gradient_descent(eta: float, steps: int) -> None:
    """N = 1, F(u_1) - F(u_end) <= gap (PEPit's convention): the same SDP value as PEPit's own
    construction of gradient descent, and for eta <= 1/L the descent lemma's closed form
    gap / (n eta (1 - eta L / 2)) (tight: a quadratic of curvature -L along the gradient)."""
    ours = dfl_worst_case(ONE, tau1=steps, tau2=0, rounds=1, eta=eta, L=1.0, gap=1.0, initial="last")
    assert ours.success
    assert ours.worst_case == pytest.approx(
        gradient_descent_worst_case(L=1.0, eta=eta, steps=steps, metric="average"), rel=1e-4
    )
    if eta <= 1.0:
        assert ours.worst_case == pytest.approx(1 / (steps * eta * (1 - eta / 2)), rel=1e-4)


@pytest.mark.parametrize("eta", [0.25, 0.5, 1.0])
def test_one_step_by_hand(eta: float) -> None:
    """One step: ||g||^2 with F(u_1) - inf F <= gap. Any L-smooth F bounded below has
    inf F <= F(u) - ||grad F(u)||^2 / (2L), so ||g||^2 <= 2 L gap, reached by F = (L/2) x^2 with
    F(u_1) = gap; with F(u_1) - F(u_2) <= gap instead the worst is gap / (eta (1 - eta L / 2))."""
    lower = dfl_worst_case(ONE, tau1=1, tau2=0, rounds=1, eta=eta, L=1.0, gap=1.0)
    last = dfl_worst_case(ONE, tau1=1, tau2=0, rounds=1, eta=eta, L=1.0, gap=1.0, initial="last")
    assert lower.worst_case == pytest.approx(2.0, rel=1e-5)
    assert last.worst_case == pytest.approx(1 / (eta * (1 - eta / 2)), rel=1e-5)
    assert quadratic_lower_bound(tau1=1, tau2=0, rounds=1, eta=eta, L=1.0, gap=1.0) == (
        pytest.approx(2.0),
        1.0,
    )


def test_exact_averaging_is_gradient_descent_on_F() -> None:
    """C = J, varsigma^2 = 0: the nodes never leave consensus, so DFL is gradient descent on F."""
    J = np.full((3, 3), 1 / 3)
    dfl = dfl_worst_case(J, tau1=2, tau2=1, rounds=2, eta=0.5, L=1.0, gap=1.0)
    gd = dfl_worst_case(ONE, tau1=4, tau2=0, rounds=1, eta=0.5, L=1.0, gap=1.0)
    assert dfl.worst_case == pytest.approx(gd.worst_case, rel=1e-4)


def test_true_instances_lie_below_and_the_witness_recomputes_the_value() -> None:
    C = np.array([[0.5, 0.5, 0.0], [0.5, 0.25, 0.25], [0.0, 0.25, 0.75]])
    for metric in ("local", "all"):
        r = dfl_worst_case(
            C, tau1=2, tau2=1, rounds=2, eta=0.3, L=1.0, gap=1.0, heterogeneity=0.5, metric=metric
        )
        lower, _ = quadratic_lower_bound(tau1=2, tau2=1, rounds=2, eta=0.3, L=1.0, gap=1.0, metric=metric)
        assert r.success and r.worst_case >= lower * (1 - 1e-4)
        assert r.witness["lhs_recomputed"] == pytest.approx(r.worst_case, rel=1e-4)
        if metric == "local":  # the witness replayed in numpy: the same trajectory and left side
            assert r.witness["replay_max_deviation"] < 1e-4
            assert r.witness["lhs_replayed"] == pytest.approx(r.worst_case, rel=1e-4)
        assert r.witness["interpolation_min_slack"] > -1e-5  # L-smooth f_i through the witness exist
        assert len(r.witness["grad_norm2_local"]) == 4 and len(r.witness["F"]) == 6
    more = dfl_worst_case(C, tau1=2, tau2=1, rounds=2, eta=0.3, L=1.0, gap=1.0, heterogeneity=2.0)
    less = dfl_worst_case(C, tau1=2, tau2=1, rounds=2, eta=0.3, L=1.0, gap=1.0, heterogeneity=0.0)
    assert more.worst_case > less.worst_case * (1 + 1e-3)  # heterogeneity makes it worse


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"C": np.array([[0.5, 0.4], [0.5, 0.6]])}, "not symmetric"),
        ({"C": np.array([[0.6, 0.5], [0.5, 0.6]])}, "row 0 of C sums to 1.1"),
        ({"C": np.array([[1.5, -0.5], [-0.5, 1.5]])}, r"C\[0, 1\] = -0.5 is negative"),  # was accepted
        ({"C": np.array([[0.5, np.nan], [0.5, 0.5]])}, "NaN or infinite"),  # was "not doubly stochastic"
        ({"tau1": 0}, "tau1 = 0"),
        ({"tau1": 1.5}, "tau1 = 1.5 is not a whole number"),
        ({"tau1": True}, "tau1 = True is a boolean"),  # was accepted
        ({"eta": "0.5"}, "eta = '0.5' is a string"),  # was a TypeError
        ({"eta": -1.0}, "eta = -1 is out of range"),
        ({"heterogeneity": -0.1}, "heterogeneity = -0.1"),
        ({"metric": "max"}, "unknown metric 'max'"),
        ({"initial": "first"}, "unknown initial condition 'first'"),
    ],
)
def test_bad_input_names_the_value(kwargs: dict, fragment: str) -> None:
    args = {"C": np.full((2, 2), 0.5), "tau1": 1, "tau2": 1, "rounds": 1, "eta": 0.5, "L": 1.0, "gap": 1.0}
    args |= kwargs
    with pytest.raises(InputError, match=fragment):
        dfl_worst_case(args.pop("C"), **args)


def test_the_quadratic_lower_bound_checks_its_arguments() -> None:
    """eta = -1 returned (5.0, 1.0), grid = 0 a ZeroDivisionError, metric = 'x' a number."""
    from bounds.pep import quadratic_lower_bound

    args = {"tau1": 2, "tau2": 1, "rounds": 2, "eta": 0.5, "L": 1.0, "gap": 1.0}
    bad = [({"eta": -1.0}, "eta = -1 is out of range"), ({"grid": 0}, "grid = 0 is out"),
           ({"metric": "x"}, "unknown metric 'x'"), ({"rounds": 0}, "rounds = 0")]  # fmt: skip
    for change, fragment in bad:
        with pytest.raises(InputError, match=fragment):
            quadratic_lower_bound(**{**args, **change})
    assert quadratic_lower_bound(**{**args, "tau1": 2.0})[0] > 0  # whole floats are integers


def test_cli_pep_json(capsys) -> None:
    argv = ["pep", "--L", "1", "--nodes", "4", "--topology", "complete", "--tau1", "1", "--tau2", "1",
            "--rounds", "2", "--eta", "1", "--gap", "1", "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"worst_case", "solver_status", "seconds", "bound_repaired", "bound_paper"} <= out.keys()
    assert out["worst_case"] == pytest.approx(1.0, rel=1e-4)  # gradient descent at eta = 1/L: tight
    assert out["bound_repaired"] == pytest.approx(1.0) and out["ratio_repaired"] == pytest.approx(
        1.0, rel=1e-4
    )


def test_cli_pep_bad_nodes_is_one_line(capsys) -> None:
    argv = ["pep", "--L", "1", "--nodes", "3", "--topology", "complete", "--tau1", "0", "--tau2", "1",
            "--rounds", "1", "--eta", "1", "--gap", "1"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "tau1 = 0" in err and "\n" not in err


def test_the_interpolation_certificate_can_fail() -> None:
    """Points of f(x) = x^2 / 2 + sin(x) (L = 2 exactly covers |f''| = |1 - sin x| <= 2): the conditions hold
    with L = 2 and fail with L = 0.5; a gradient that contradicts the values fails too."""
    from bounds.pep import interpolation_slack

    xs = np.linspace(-3, 3, 9)
    triples = [(np.array([x]), np.array([x + np.cos(x)]), x**2 / 2 + np.sin(x)) for x in xs]
    assert interpolation_slack(triples, 2.0) >= -1e-12
    assert interpolation_slack(triples, 0.5) < -1e-3
    triples[4] = (triples[4][0], triples[4][1] + 5.0, triples[4][2])
    assert interpolation_slack(triples, 2.0) < -1e-3


def test_the_solve_hides_cvxpy_shape_probe_warnings_only() -> None:
    """cvxpy < 1.9 finds cp.sum's shape by summing an uninitialised np.empty, whose garbage may warn
    ("invalid value encountered in reduce": it did on tightness cells, at random); the solve hides that
    warning and no other (a fake problem raises them, warnings as errors)."""
    import warnings

    from bounds.pep import _solve

    class Fake:
        wrapper = None

        def __init__(self, values: list[float]) -> None:
            self.values = values

        def solve(self, **kwargs) -> float:
            np.sum(np.array(self.values))  # inf + -inf: "invalid value encountered in reduce"
            np.log(np.array([0.0]))  # "divide by zero encountered in log" when values is empty
            return 1.5

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with np.errstate(divide="ignore"):
            assert _solve(Fake([np.inf, -np.inf]), "CLARABEL") == (1.5, "optimal")
        value, status = _solve(Fake([]), "CLARABEL")
    assert value is None and "divide by zero" in status


LOOSE = {"tol_gap_abs": 0.1, "tol_gap_rel": 0.1, "tol_feas": 0.1}  # Clarabel stops early, status "optimal"
RING4 = 0.5 * np.eye(4) + 0.25 * (np.roll(np.eye(4), 1, axis=1) + np.roll(np.eye(4), -1, axis=1))
CELL = {"tau1": 1, "tau2": 1, "rounds": 2, "eta": 0.5, "L": 1.0, "gap": 1.0, "heterogeneity": 0.5}


def test_a_solve_stopped_early_is_not_trusted_though_its_status_says_optimal() -> None:
    """With tolerances 0.1 Clarabel reports "optimal" and a value off the certified one (1.2447 and 1.2519
    in two runs against 1.2500: below it, an "upper bound" that is not one); the certificate misses by far
    more than CERTIFICATE_RTOL, so it is no success."""
    from bounds.pep import CERTIFICATE_RTOL

    exact = dfl_worst_case(RING4, **CELL)
    assert exact.success and exact.certificate["error"] < CERTIFICATE_RTOL / 100, exact.certificate
    assert set(exact.certificate) == {"proof_residual", "dual_infeasibility", "primal_infeasibility",
                                      "duality_gap", "error"}  # fmt: skip
    loose = dfl_worst_case(RING4, solver_options=LOOSE, **CELL)
    assert loose.solver_status == "optimal"
    assert not loose.success and loose.certificate["error"] > 1e-2
    assert "certificate misses" in loose.message and "not trusted" in loose.message


def test_the_certificate_of_an_unreadable_problem_is_nan() -> None:
    """A PEPit whose internals moved (no residual, no Gram) gives NaN errors: not trusted, never a pass."""
    from bounds.pep import certificate

    errors = certificate(object(), 1.0)
    assert np.isnan(errors["error"]) and not errors["error"] <= 1.0


def test_solver_options_must_be_a_dict() -> None:
    with pytest.raises(InputError, match="solver_options = 'fast'"):
        dfl_worst_case(RING4, solver_options="fast", **CELL)


def test_a_solver_that_is_not_installed_is_named() -> None:
    """solver='NOSUCH' returned success=False with a NaN worst case, like a solver that failed (a probe)."""
    with pytest.raises(
        InputError, match=r"^solver = 'NOSUCH' is not an installed cvxpy solver of semidefinite"
    ):
        dfl_worst_case(RING4, solver="NOSUCH", **CELL)
    with pytest.raises(InputError, match=r"^solver = 3 is not an installed cvxpy solver"):
        gradient_descent_worst_case(L=1.0, eta=0.5, steps=1, solver=3)
    with pytest.raises(InputError, match=r"^solver = 'OSQP' is not .* \(expected one of: CLARABEL, SCS"):
        dfl_worst_case(RING4, solver="OSQP", **CELL)  # installed, but no SDPs: 'failed' with NaN (a review)
    assert dfl_worst_case(RING4, solver="clarabel", **CELL).success  # cvxpy's names in any case


def test_the_certificate_refuses_what_it_cannot_read() -> None:
    """A solved problem whose constraint kinds are not PEPit 0.5's, or that has LMIs beside the Gram matrix,
    or an infinite value: NaN (not trusted), never a pass."""
    import PEPit
    from PEPit.functions import SmoothFunction

    from bounds.pep import _solve, certificate

    problem = PEPit.PEP()
    f = problem.declare_function(SmoothFunction, L=1.0)
    x0 = problem.set_initial_point()
    g0, f0 = f.oracle(x0)
    g1, f1 = f.oracle(x0 - g0)
    problem.set_performance_metric(g1**2)
    problem.set_initial_condition(f0 - f1 <= 1.0)
    value, _ = _solve(problem, None)
    assert certificate(problem, value)["error"] < 1e-6
    assert np.isnan(certificate(problem, float("inf"))["error"])
    assert np.isnan(certificate(problem, None)["error"])
    kinds = [c.equality_or_inequality for c in problem._list_of_prepared_constraints]
    for c in problem._list_of_prepared_constraints:
        c.equality_or_inequality = c.equality_or_inequality.upper()
    assert np.isnan(certificate(problem, value)["error"])
    for c, kind in zip(problem._list_of_prepared_constraints, kinds, strict=True):
        c.equality_or_inequality = kind
    problem._list_of_prepared_psd.append(object())
    assert np.isnan(certificate(problem, value)["error"])


def test_a_nan_violation_is_not_dropped() -> None:
    """Python's max([0.0, nan]) is 0.0: the certificate's parts keep NaN instead."""
    from bounds.pep import _largest

    assert np.isnan(_largest([0.1, float("nan")]))
    assert _largest([-1.0, -2.0]) == 0.0 and _largest([3.0]) == 3.0


@pytest.mark.parametrize("rtol", [None, 0.0, 1.5, "1e-3"])
def test_certificate_rtol_must_be_in_range(rtol) -> None:
    with pytest.raises(InputError, match="certificate_rtol"):
        dfl_worst_case(RING4, certificate_rtol=rtol, **CELL)


@pytest.mark.parametrize(
    ("graph", "nodes", "tau1", "rounds"),
    [("ring", 4, 2, 2), ("ring", 3, 1, 3), ("path", 3, 2, 2), ("complete", 4, 2, 2)],
)
def test_the_gram_size_estimate_bounds_the_built_problem(
    graph: str, nodes: int, tau1: int, rounds: int
) -> None:
    """Within 1 where gossip keeps the nodes apart; the complete graph's exact averaging shares points."""
    from bounds.graph.mixing import as_dense, topology_matrix
    from bounds.pep import gram_size_estimate

    C = as_dense(topology_matrix(graph, nodes, "metropolis", 0))
    r = dfl_worst_case(C, tau1=tau1, tau2=1, rounds=rounds, eta=0.1, L=1.0, gap=1.0)
    estimate = gram_size_estimate(nodes, tau1, rounds)
    assert r.gram_size <= estimate and (graph == "complete" or estimate - r.gram_size <= 1)


def test_a_problem_too_large_to_solve_is_refused_before_it_is_built(capsys) -> None:
    """1,000 rounds on 3 nodes ran on with no output (a Gram matrix of about 6,000)."""
    argv = "pep --L 1 --gap 1 --eta 0.1 --nodes 3 --topology complete --tau1 1 --tau2 1 --rounds 1000"
    assert main(argv.split()) == 2
    assert "Gram matrix would be about 6005 x 6005" in capsys.readouterr().err
    assert main([*argv.split()[:-1], "2", "--max-gram", "5"]) == 2  # 17 > 5
    assert "more than max_gram = 5" in capsys.readouterr().err
    C = np.full((3, 3), 1 / 3)
    with pytest.raises(InputError, match="max_gram = 0 is out of range"):
        dfl_worst_case(C, tau1=1, tau2=1, rounds=1, eta=0.1, L=1.0, gap=1.0, max_gram=0)


def test_a_huge_tau2_costs_one_gossip_product() -> None:
    """--tau2 1e9 built the PEP's expressions one gossip step at a time and ran for days without a word (a
    probe): the tau2 steps are one product with C^tau2 now, so 10^9 steps cost what 200 do and give the same
    worst case (C^200 of a 3-ring is J to the last digit)."""
    from bounds import make_graph, mixing_matrix

    C = mixing_matrix(make_graph("ring", 3))
    kw = {"tau1": 1, "rounds": 1, "eta": 0.2, "L": 1.0, "gap": 1.0}
    huge = dfl_worst_case(C, tau2=10**9, **kw)  # (the loop of 10^9 steps did not return)
    assert huge.worst_case == pytest.approx(dfl_worst_case(C, tau2=200, **kw).worst_case, rel=1e-6)
