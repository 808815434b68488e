"""Non-i.i.d. data (issue 13): the exact recursion, the heterogeneity-aware terms, their checks."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from bounds import InputError, dfl_bound, mixing_matrix, spectral_summary
from bounds.cli import main as bounds_main
from bounds.dfl import formulas as f
from bounds.dfl import symbolic
from bounds.dfl.monotonicity import derivative_signs, heterogeneity_monotonicity
from bounds.dfl.quadratic import exact_quadratic_dfl, exact_quadratic_non_iid, exact_quadratic_non_iid_runs
from bounds.graph.topologies import ring

N, D = 6, 2


def _problem(seed: int, n: int = N, d: int = D, scale: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(n, d, d))
    A = np.einsum("nij,nkj->nik", Q, Q) / 2 + 0.1 * np.eye(d)
    return A, scale * rng.normal(size=(n, d))


def test_recursion_equals_the_iid_recursion_when_curvatures_are_equal() -> None:
    """A_i = L I: the Nd x Nd recursion must reproduce exact_quadratic_dfl (an independent code path)."""
    C = mixing_matrix(ring(N))
    B = np.random.default_rng(1).normal(size=(N, D))
    ours = exact_quadratic_non_iid(
        C, 3, 2, 23, eta=0.1, curvatures=np.stack([1.5 * np.eye(D)] * N), minimisers=B, sigma2=0.7,
        w1=np.zeros(D),
    )  # fmt: skip
    theirs = exact_quadratic_dfl(C, 3, 2, 23, eta=0.1, L=1.5, sigma2=0.7, targets=B, w1=np.zeros(D))
    np.testing.assert_allclose(ours.drift, theirs.drift, atol=1e-14)
    np.testing.assert_allclose(ours.grad_norm2, theirs.grad_norm2, atol=1e-13)
    np.testing.assert_allclose(ours.node_grad_norm2, theirs.node_grad_norm2, atol=1e-12)


def test_recursion_matches_a_monte_carlo_simulation() -> None:
    """The exact expectations against 20,000 simulated runs (5 standard errors)."""
    C, (A, a) = mixing_matrix(ring(N)), _problem(0)
    eta, sigma2, T, reps = 0.1, 0.5, 13, 20_000
    exact = exact_quadratic_non_iid(C, 2, 3, T, eta=eta, curvatures=A, minimisers=a, sigma2=sigma2)
    rng = np.random.default_rng(5)
    A_bar, b_bar = A.mean(0), np.einsum("nij,nj->i", A, a) / N
    X = np.tile(np.linalg.solve(A_bar, b_bar), (reps, N, 1))
    for t, is_local in enumerate(exact.local):
        u = X.mean(1)
        drift = ((X - u[:, None]) ** 2).sum((1, 2)) / N
        spread = np.einsum("nij,rj->rni", A - A_bar, u) - (np.einsum("nij,nj->ni", A, a) - b_bar)
        het = (spread**2).sum((1, 2))
        for sample, value in ((drift, exact.drift[t]), (het / N, exact.heterogeneity[t])):
            assert abs(sample.mean() - value) <= 5 * sample.std() / np.sqrt(reps) + 1e-12
        if is_local:
            noise = rng.normal(size=X.shape) * np.sqrt(sigma2 / D)
            X = X - eta * (np.einsum("nij,rnj->rni", A, X - a) + noise)
        else:
            X = np.einsum("ij,rjk->rik", C, X)


def test_stacked_recursion_equals_each_problem_alone() -> None:
    """Problems of different T, eta, sigma^2, start, curvatures and minimisers stepped together (T = 9 ends
    in local steps where T = 23 gossips; one of a single step): each equals its recursion alone."""
    C = mixing_matrix(ring(N))
    problems = [_problem(seed) for seed in (0, 1, 2)]
    T, eta, sigma2, w1 = [23, 9, 1], [0.1, 0.05, 0.2], [0.0, 0.7, 2.0], [None, np.ones(D), np.zeros(D)]
    runs = exact_quadratic_non_iid_runs(
        C, 3, 2, T, eta=eta, curvatures=[A for A, _ in problems], minimisers=[a for _, a in problems],
        sigma2=sigma2, w1=w1,
    )  # fmt: skip
    for k, ((A, a), run) in enumerate(zip(problems, runs, strict=True)):
        alone = exact_quadratic_non_iid(
            C, 3, 2, T[k], eta=eta[k], curvatures=A, minimisers=a, sigma2=sigma2[k], w1=w1[k]
        )
        assert len(run.drift) == T[k] and run.L == alone.L
        np.testing.assert_array_equal(run.local, alone.local)
        for name in ("grad_norm2", "drift", "node_grad_norm2", "heterogeneity", "second_moment"):
            np.testing.assert_allclose(getattr(run, name), getattr(alone, name), rtol=1e-12, atol=1e-15)
    A, a = problems[0]
    wide = {"curvatures": [A, np.stack([np.eye(3)] * N)], "minimisers": [a, np.zeros((N, 3))]}
    with pytest.raises(InputError, match="dimensions d differ"):
        exact_quadratic_non_iid_runs(
            C, 1, 1, [4, 4], eta=[0.1, 0.1], sigma2=[0.0, 0.0], w1=[None, None], **wide
        )
    two = {"curvatures": [A, A], "minimisers": [a, a], "w1": [None, None]}
    with pytest.raises(InputError, match="2 T, 1 eta"):
        exact_quadratic_non_iid_runs(C, 1, 1, [4, 4], eta=[0.1], sigma2=[0.0, 0.0], **two)


def test_recursion_rejects_bad_problems() -> None:
    C, (A, a) = mixing_matrix(ring(N)), _problem(0)
    with pytest.raises(InputError, match="curvatures have shape"):
        exact_quadratic_non_iid(C, 1, 1, 4, eta=0.1, curvatures=A[:3], minimisers=a)
    with pytest.raises(InputError, match="minimisers have shape"):
        exact_quadratic_non_iid(C, 1, 1, 4, eta=0.1, curvatures=A, minimisers=a[:, :1])
    with pytest.raises(InputError, match="positive semi-definite"):
        exact_quadratic_non_iid(C, 1, 1, 4, eta=0.1, curvatures=-A, minimisers=a)


def _random_case(draw: st.DrawFn) -> dict:
    n, d = draw(st.integers(3, 7)), draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    graph = nx.gnp_random_graph(n, draw(st.floats(0.2, 0.9)), seed=seed)
    graph.add_edges_from(zip(range(n - 1), range(1, n), strict=True))  # a path keeps it connected
    C = mixing_matrix(graph, "metropolis")
    A, a = _problem(seed, n, d, draw(st.floats(0.05, 8.0)))
    tau1, tau2, K = draw(st.integers(1, 5)), draw(st.integers(1, 6)), draw(st.integers(1, 25))
    zeta = spectral_summary(C).zeta
    L = float(np.linalg.eigvalsh(A).max())
    eta = draw(st.floats(0.05, 1.0)) * float(f.eta_max_non_iid(L, tau1, tau2, zeta))
    sigma2 = draw(st.sampled_from([0.0, 0.3, 2.0]))
    w1 = rng.normal(size=d)
    run = exact_quadratic_non_iid(C, tau1, tau2, K * (tau1 + tau2), eta=eta, curvatures=A, minimisers=a,
                                  sigma2=sigma2, w1=w1)  # fmt: skip
    return {"run": run, "eta": eta, "L": L, "sigma2": sigma2, "tau1": tau1, "tau2": tau2, "zeta": zeta,
            "n": n, "K": K, "A": A, "a": a, "w1": w1}  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_the_heterogeneity_aware_drift_term_holds_on_random_instances(data: st.DataObject) -> None:
    """Random doubly stochastic C (Metropolis on random graphs), random A_i, a_i, schedules, eta."""
    c = _random_case(data.draw)
    run = c["run"]
    term = f.drift_term_repaired(
        c["eta"], c["L"], c["sigma2"], run.varsigma2, c["tau1"], c["tau2"], c["zeta"]
    )
    floor = 1e-12 * c["L"] ** 2 * run.second_moment.max()
    assert c["L"] ** 2 * run.local_drift_mean <= term * (1 + 1e-9) + floor


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_the_non_iid_repair_of_proposition_1_holds_on_random_instances(data: st.DataObject) -> None:
    c = _random_case(data.draw)
    run, n = c["run"], c["n"]
    A, a = c["A"], c["a"]

    def F(w: np.ndarray) -> float:
        return float(np.mean([0.5 * (w - a[i]) @ A[i] @ (w - a[i]) for i in range(n)]))

    w_star = np.linalg.solve(A.mean(0), np.einsum("nij,nj->i", A, a) / n)
    gap = F(c["w1"]) - F(w_star)
    bound = f.non_iid_local_step_bound(c["eta"], c["L"], c["sigma2"], run.varsigma2, n, c["tau1"], c["tau2"],
                                       c["zeta"], c["K"], gap)  # fmt: skip
    floor = 1e-12 * c["L"] ** 2 * run.second_moment.max()
    assert float(run.grad_norm2[run.local].mean()) <= bound * (1 + 1e-9) + floor


def test_the_paper_drift_term_fails_on_heterogeneous_data() -> None:
    """Noise-free, heterogeneous: the paper's drift term is 0, the exact drift is not; ours covers it."""
    C, (A, a) = mixing_matrix(ring(N)), _problem(3)
    zeta, L = spectral_summary(C).zeta, float(np.linalg.eigvalsh(A).max())
    eta = float(f.eta_max_non_iid(L, 2, 1, zeta))
    run = exact_quadratic_non_iid(C, 2, 1, 30, eta=eta, curvatures=A, minimisers=a, sigma2=0.0)
    measured = L**2 * run.local_drift_mean
    assert f.local_drift_term(eta, L, 0.0, 2, 1, zeta) == 0.0 < measured
    assert measured <= f.drift_term_repaired(eta, L, 0.0, run.varsigma2, 2, 1, zeta)


def test_formulas_numpy_and_sympy_agree_and_reduce_to_the_iid_case() -> None:
    values = {"eta": 0.013, "L": 1.7, "sigma2": 0.9, "varsigma2": 2.3, "tau1": 3, "tau2": 2, "zeta": 0.81}
    for name in ("heterogeneity_term", "drift_term_repaired", "drift_recursion_factor", "eta_max_non_iid"):
        expr = symbolic.expression(name)
        subs = {symbolic.SYMBOLS[k]: v for k, v in values.items()}
        numeric = getattr(f, name)(*(values[k] for k in _args(name)))
        assert float(expr.subs(subs)) == pytest.approx(float(numeric), rel=1e-12)
    eta, L, s2, t1, t2, z = 0.01, 1.0, 1.0, 4, 4, 0.87
    assert f.heterogeneity_term(eta, L, 0.0, t1, t2, z) == 0.0
    rho = f.drift_recursion_factor(eta, L, t1, t2, z)
    iid = 2 * eta**2 * L**2 * s2 * f.drift_factor_repaired(t1, t2, z)
    assert f.drift_term_repaired(eta, L, s2, 0.0, t1, t2, z) == pytest.approx(iid / (1 - rho))
    # tau1 = 1 on C = J: no drift at a local step, every factor 0
    assert f.heterogeneity_factor(1, 1, 0.0) == 0.0 and f.drift_recursion_coefficient(1, 1, 0.0) == 0.0


def _args(name: str) -> tuple[str, ...]:
    return {
        "heterogeneity_term": ("eta", "L", "varsigma2", "tau1", "tau2", "zeta"),
        "drift_term_repaired": ("eta", "L", "sigma2", "varsigma2", "tau1", "tau2", "zeta"),
        "drift_recursion_factor": ("eta", "L", "tau1", "tau2", "zeta"),
        "eta_max_non_iid": ("L", "tau1", "tau2", "zeta"),
    }[name]


def test_eta_max_non_iid_meets_its_condition_with_equality() -> None:
    for t1, t2, z in [(4, 4, 0.87), (1, 1, 0.0), (8, 1, 0.98), (2, 6, 0.5)]:
        eta = float(f.eta_max_non_iid(2.0, t1, t2, z))
        r = dfl_bound(L=2.0, sigma2=1, N=10, eta=eta, tau1=t1, tau2=t2, zeta=z, T=100, gap=1, heterogeneity=1)
        assert r.non_iid_condition_ok
        assert max(eta * 2.0, 2 * r.drift_recursion_factor) == pytest.approx(1.0, rel=1e-9)
        assert not dfl_bound(L=2.0, sigma2=1, N=10, eta=eta * 1.01, tau1=t1, tau2=t2, zeta=z, T=100, gap=1,
                             heterogeneity=1).non_iid_condition_ok  # fmt: skip


def test_dfl_bound_fields_and_cli() -> None:
    r = dfl_bound(
        L=1, sigma2=1, N=10, eta=0.01, tau1=4, tau2=4, zeta=0.8727, T=1000, gap=1, heterogeneity=0.5
    )
    assert r.drift_term_paper == r.local_drift_term
    assert r.drift_term_repaired > r.heterogeneity_term > 0
    assert r.bound_non_iid == pytest.approx(
        2 / (0.01 * 500) + 0.01 / 10 + r.drift_term_repaired, rel=1e-12
    )  # 125 rounds x 4 local steps
    far = dfl_bound(L=1, sigma2=1, N=10, eta=0.5, tau1=8, tau2=1, zeta=0.95, T=90, gap=1, heterogeneity=1)
    assert far.drift_recursion_factor > 1 and far.bound_non_iid == np.inf and not far.non_iid_condition_ok
    with pytest.raises(InputError, match="heterogeneity = -1"):
        dfl_bound(L=1, sigma2=1, N=10, eta=0.01, tau1=4, tau2=4, zeta=0.8, T=100, gap=1, heterogeneity=-1)


def test_cli_reports_the_three_drift_terms(capsys: pytest.CaptureFixture[str]) -> None:
    args = "dfl --L 1 --sigma2 1 --nodes 10 --eta 0.01 --tau1 4 --tau2 4 --topology ring --T 1000 --gap 1"
    args = [*args.split(), "--heterogeneity", "0.5", "--json"]
    assert bounds_main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert {
        "heterogeneity_term",
        "drift_term_paper",
        "drift_term_repaired",
        "bound",
        "bound_repaired",
    } <= out.keys()
    assert bounds_main([*args[:-3], "--heterogeneity=-2"]) == 2
    assert "heterogeneity = -2" in capsys.readouterr().err


def test_remarks_1_and_2_hold_for_the_heterogeneity_term() -> None:
    """sympy proves h and a_D increase with tau1 and zeta and decrease with tau2."""
    expected = {"tau1": "positive", "tau2": "negative", "zeta": "positive"}
    for signs in heterogeneity_monotonicity().values():
        assert {s.variable: s.sign for s in signs} == expected
        assert all(isinstance(s.derivative, sympy.Expr) for s in signs)


def test_the_monotonicity_prover_can_fail() -> None:
    """The same machinery on a term that decreases in tau1 reports 'negative', not 'positive'."""
    tau1 = sympy.Symbol("tau1", positive=True)
    [sign] = derivative_signs(1 / tau1, {tau1: "claim"}, lambda e: e)
    assert sign.sign == "negative"


def test_symbolic_non_iid_terms_are_infinite_where_the_drift_recursion_does_not_close() -> None:
    """Beyond rho_D >= 1 the closed form turns negative (-1.99 here) where dfl_bound says inf."""
    from bounds import dfl_bound
    from bounds.dfl import symbolic

    S = symbolic.SYMBOLS
    for eta, closed in ((0.3, False), (0.01, True)):
        point = {"L": 0.5, "eta": eta, "tau1": 3, "tau2": 1, "zeta": 0.95, "varsigma2": 2, "sigma2": 1}
        numeric = dfl_bound(**{k: v for k, v in point.items() if k != "varsigma2"}, heterogeneity=2, N=10,
                            T=100, gap=1)  # fmt: skip
        for name in ("drift_term_repaired", "heterogeneity_term"):
            value = float(symbolic.expression(name).subs({S[k]: v for k, v in point.items()}))
            assert (
                value == pytest.approx(getattr(numeric, name), rel=1e-12) and (value < float("inf")) == closed
            )


def test_symbolic_repaired_bounds_are_dfl_bounds_fields() -> None:
    """bound_repaired and bound_non_iid as sympy expressions (an audit found only their drift parts there),
    at K = dfl_bound's local steps / tau1, with and without a tail, closed and not closed."""
    from bounds import dfl_bound
    from bounds.dfl import symbolic

    S = symbolic.SYMBOLS
    # tau = 5: no tail; a tail of 4 > tau1 = 3; tails of 2 and 3 <= tau1, closed (finite) and not (inf)
    for T, eta in ((120, 0.01), (124, 0.02), (122, 0.02), (123, 0.3)):
        point = {"L": 0.5, "eta": eta, "tau1": 3, "tau2": 2, "zeta": 0.9, "sigma2": 1.3, "N": 10, "gap": 2.0}
        numeric = dfl_bound(**point, T=T, heterogeneity=0.7)
        K = (numeric.rounds * 3 + numeric.tail_steps) / 3
        subs = {S[k]: v for k, v in {**point, "varsigma2": 0.7, "K": K}.items()}
        for name in ("bound_repaired", "bound_non_iid"):
            value = float(symbolic.expression(name).subs(subs))
            expected = getattr(numeric, name)
            if T == 124:  # a tail longer than tau1: inf in the numbers (footnote 1); the expression has none
                assert expected == float("inf") and value < float("inf")
                continue
            assert value == pytest.approx(expected, rel=1e-12)
            assert (value < float("inf")) == (T != 123 or name == "bound_repaired")  # each case as intended
