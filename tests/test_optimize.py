"""The budget optimiser against brute force: every cell, every eta, scipy's scalar minimiser."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from bounds import CostModel, InputError, dfl_bound, eta_max, optimize_dfl

PROBLEM = dict(L=2.0, sigma2=0.8, N=10, gap=5.0, zeta=0.87)


def brute_force(
    cost: CostModel, budget: float, t1_max: int, t2_max: int, bound: str = "paper"
) -> tuple[float, int, int, float]:
    """Loop over (tau1, tau2); for each, the best eta in (0, eta_max] by bounded scalar minimisation.

    The bound comes from ``dfl_bound``: its ``bound`` (paper) or ``bound_repaired`` field.
    """
    field = "bound" if bound == "paper" else "bound_repaired"
    best = (math.inf, 0, 0, 0.0)
    for tau1 in range(1, t1_max + 1):
        for tau2 in range(1, t2_max + 1):
            K = math.floor(budget / (tau1 * cost.t_comp + tau2 * cost.t_comm))
            if K < 1:
                continue
            T = K * (tau1 + tau2)
            top = eta_max(L=PROBLEM["L"], tau1=tau1, tau2=tau2, zeta=PROBLEM["zeta"])

            def value(log_eta: float, tau1: int = tau1, tau2: int = tau2, T: int = T) -> float:
                return getattr(dfl_bound(eta=math.exp(log_eta), tau1=tau1, tau2=tau2, T=T, **PROBLEM), field)

            res = minimize_scalar(
                value, bounds=(math.log(top) - 30, math.log(top)), method="bounded", options={"xatol": 1e-10}
            )
            candidates = [(res.fun, math.exp(res.x)), (value(math.log(top)), top)]
            v, eta = min(candidates)
            if v < best[0]:
                best = (v, tau1, tau2, eta)
    return best


@pytest.mark.parametrize("bound", ["repaired", "non-iid"])
@pytest.mark.parametrize(("name", "value"), [("gap", 1e-80), ("sigma2", 1e300), ("L", 1e-200)])
def test_the_best_eta_of_extreme_problems_is_found(bound: str, name: str, value: float) -> None:
    """The search for eta looked no lower than e^-80 eta_max and returned that edge: gap = 1e-80 gave a
    bound 4,000 times the optimum; L = 1e-200 gave no finite bound at all. With no drift to speak of the
    optimum is eta = sqrt(a / b), a = 2 gap / n_local, b = L sigma^2 / N, the bound 2 sqrt(a b)."""
    problem = {"L": 1.0, "sigma2": 1.0, "N": 10, "gap": 1.0, "zeta": 0.9, name: value}
    extra = {"heterogeneity": 0.5} if bound == "non-iid" else {}
    r = optimize_dfl(**problem, cost=CostModel(1.0, 0.5), budget_seconds=1000, max_tau1=10, max_tau2=10,
                     bound=bound, **extra)  # fmt: skip
    a = 2 * problem["gap"] / (r.rounds * r.tau1)
    b = problem["L"] * problem["sigma2"] / problem["N"]
    assert r.eta == pytest.approx(math.sqrt(a / b), rel=1e-6) and r.eta < r.eta_max * math.exp(-80)
    assert r.bound == pytest.approx(2 * math.sqrt(a * b), rel=1e-6)
    check = dfl_bound(eta=r.eta, tau1=r.tau1, tau2=r.tau2, T=r.steps, **problem, **extra)
    field = check.bound_non_iid if bound == "non-iid" else check.bound_repaired
    assert field == pytest.approx(r.bound, rel=1e-9)


@pytest.mark.parametrize("centre", [-3.0, -78.5, -79.5, -79.9, -80.0, -80.5, -150.0, -700.0])
def test_the_golden_search_finds_a_minimum_at_any_depth(centre: float) -> None:
    """A minimum in the last unit of the first e^-80 window made the search move down a window and return
    that window's upper edge (-80 for -79.5)."""
    from bounds.plan.optimize import _best_eta, _golden_eta

    found = _golden_eta(lambda e: (np.log(e) - centre) ** 2, np.array([1.0, 2.0]))
    assert np.log(found) == pytest.approx([centre, centre], abs=1e-6)
    # b + 2 c eta_max overflows: the bracket is taken in logs (it gave eta = 0)
    assert _best_eta(np.array([1.0]), np.array([1e300]), np.array([1e300]), np.array([1e10]))[0] == (
        pytest.approx(1e-150, rel=1e-9)
    )


@pytest.mark.parametrize("bound", ["paper", "repaired"])
@pytest.mark.parametrize(
    ("t_comp", "t_comm", "budget"), [(1.0, 0.5, 2000.0), (0.2, 3.0, 500.0), (1.0, 1.0, 40.0)]
)
def test_optimum_equals_brute_force(t_comp: float, t_comm: float, budget: float, bound: str) -> None:
    cost = CostModel(t_comp, t_comm)
    r = optimize_dfl(**PROBLEM, cost=cost, budget_seconds=budget, max_tau1=12, max_tau2=12, bound=bound)
    value, tau1, tau2, eta = brute_force(cost, budget, 12, 12, bound)
    assert (r.tau1, r.tau2) == (tau1, tau2)
    assert r.bound == pytest.approx(value, rel=1e-7)
    assert r.eta == pytest.approx(eta, rel=1e-4)
    check = dfl_bound(eta=r.eta, tau1=r.tau1, tau2=r.tau2, T=r.steps, **PROBLEM)
    field = check.bound if bound == "paper" else check.bound_repaired
    assert field == pytest.approx(r.bound, rel=1e-12) and check.eta_condition_ok
    assert r.time <= budget and r.rounds == math.floor(budget / (tau1 * t_comp + tau2 * t_comm))


def test_grid_frame_and_runners_up() -> None:
    r = optimize_dfl(**PROBLEM, cost=CostModel(1.0, 0.5), budget_seconds=1000, max_tau1=8, max_tau2=6)
    frame = r.grid_frame()
    assert len(frame) == 48 and {"tau1", "tau2", "eta", "bound", "rounds", "time"} <= set(frame.columns)
    assert frame["bound"].min() == pytest.approx(r.bound)
    bounds_in_order = [r.bound] + [c["bound"] for c in r.runners_up]
    assert bounds_in_order == sorted(bounds_in_order) and len(r.runners_up) == 5
    assert r.to_dict()["tau1"] == r.tau1


def test_step_caps_instead_of_seconds() -> None:
    r = optimize_dfl(
        **PROBLEM,
        cost=CostModel(1.0, 1.0),
        max_local_steps=100,
        max_gossip_steps=60,
        max_tau1=10,
        max_tau2=10,
    )
    assert r.rounds * r.tau1 <= 100 and r.rounds * r.tau2 <= 60
    frame = r.grid_frame()
    assert (frame["local_steps"] <= 100).all() and (frame["gossip_steps"] <= 60).all()


def test_network_cost_model() -> None:
    cost = CostModel.from_network(0.01, latency=0.002, bandwidth=1e8, dim=1_000_000)
    assert cost.t_comm == pytest.approx(0.002 + 32e6 / 1e8)
    # a huge valid t_comm scaled by a factor of 1 overflowed (1e303 * 32 d, then / 32 d)
    assert CostModel(1.0, 1e303).with_message_bits(32 * 7850, 7850).t_comm == 1e303
    with pytest.raises(InputError, match="latency \\+ bits / bandwidth = 0 \\+ 320 / 1e-310 overflows"):
        CostModel.from_network(1.0, latency=0, bandwidth=1e-310, dim=10)


def test_repaired_is_the_default_and_the_refuted_bounds_say_so() -> None:
    kw = dict(**PROBLEM, cost=CostModel(1.0, 0.5), budget_seconds=1000, max_tau1=8, max_tau2=8)
    default, repaired = optimize_dfl(**kw), optimize_dfl(**kw, bound="repaired")
    assert (default.tau1, default.tau2, default.bound) == (repaired.tau1, repaired.tau2, repaired.bound)
    assert "refuted" not in default.message
    paper, alias = optimize_dfl(**kw, bound="paper"), optimize_dfl(**kw, bound="proposition1")
    assert paper.bound == alias.bound and "refuted" in paper.message
    assert "refuted" in optimize_dfl(**kw, bound="corrected").message


def test_corrected_bound_is_selectable_and_never_smaller() -> None:
    a = optimize_dfl(
        **PROBLEM, cost=CostModel(1.0, 0.5), budget_seconds=1000, max_tau1=8, max_tau2=8, bound="paper"
    )
    b = optimize_dfl(
        **PROBLEM, cost=CostModel(1.0, 0.5), budget_seconds=1000, max_tau1=8, max_tau2=8, bound="corrected"
    )
    assert b.bound >= a.bound


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"budget_seconds": 1.0},
            r"the budget fits no round: the cheapest round \(tau1 = 1, tau2 = 1\) takes 1.5 s",
        ),
        ({}, r"no budget given"),
        ({"budget_seconds": 100, "bound": "cooperative"}, r"unknown bound 'cooperative'"),
        ({"budget_seconds": -5}, r"budget_seconds = -5 is out of range"),
        ({"budget_seconds": 100, "max_tau1": 0}, r"max_tau1 = 0 is out of range"),
    ],
)
def test_bad_input(kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        optimize_dfl(**PROBLEM, cost=CostModel(1.0, 0.5), **kwargs)
    with pytest.raises(InputError, match=r"t_comm = 0 is out of range"):
        CostModel(1.0, 0.0)


def test_disconnected_graph_has_no_finite_bound() -> None:
    """Not an input error (scipy style): success False, the message says why, no best cell, the grid kept."""
    r = optimize_dfl(**{**PROBLEM, "zeta": 1.0}, cost=CostModel(1.0, 0.5), budget_seconds=100)
    assert not r.success and "zeta = 1" in r.message
    assert np.isnan(r.bound) and r.tau1 == 0 and r.runners_up == []
    assert np.isinf(r.grid["bound"]).all()
    assert r.to_dict()["success"] is False and "grid" not in r.to_dict()
    assert "success : False" in str(r) and "zeta = 1" in str(r)


@pytest.mark.parametrize("extreme", [{"sigma2": 1e308}, {"gap": 1e308}])
def test_an_overflowing_bound_is_called_an_overflow_not_a_zero_step(extreme: dict) -> None:
    """sigma2 = 1e308 used to say 'eta_max is 0 in every cell' (eta_max > 0 there; the bound overflows),
    and its grid held NaN bounds."""
    r = optimize_dfl(**{**PROBLEM, **extreme}, cost=CostModel(1.0, 0.5), budget_seconds=100)
    assert not r.success and "overflows float64 in every cell" in r.message, r.message
    assert (r.grid["eta_max"] > 0).all() and np.isposinf(r.grid["bound"]).all()


def test_cli_reports_no_finite_bound_as_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    from bounds.cli import main

    argv = ["optimize", "--L", "1", "--sigma2", "1", "--nodes", "10", "--gap", "1", "--zeta", "1"]
    assert main([*argv, "--t-comp", "1", "--t-comm", "0.5", "--budget-seconds", "100"]) == 2
    assert "zeta = 1" in capsys.readouterr().err


def test_results_share_one_format() -> None:
    """DFLBound, CDFLBound and OptimizeResult: ordered fields, success and message last in __str__."""
    from bounds import cdfl_bound, dfl_bound

    a = dfl_bound(L=1, sigma2=1, N=10, eta=0.01, tau1=2, tau2=2, zeta=0.8, T=100, gap=1)
    kw = dict(L=1, mu=0.5, sigma2_bar=1, G2=1, N=10, tau1=2, tau2=2, K=50, zeta=0.8, delta=0.5, beta_mix=1)
    b = cdfl_bound(**kw)
    c = optimize_dfl(**PROBLEM, cost=CostModel(1.0, 0.5), budget_seconds=100)
    for r in (a, b, c):
        lines = str(r).splitlines()
        assert lines[-2].split(":")[0].strip() == "success" and lines[-1].split(":")[0].strip() == "message"
        assert list(r.to_dict())[-2:] == ["success", "message"] and r.to_dict()["success"] == r.success
    assert list(a.to_dict())[:2] == ["bound", "bound_repaired"]
    assert "terms.initial" in str(b) and b.to_dict()["terms"]["initial"] == b.terms["initial"]


def test_large_grid_shape() -> None:
    r = optimize_dfl(**PROBLEM, cost=CostModel(1.0, 0.5), budget_seconds=1e6, max_tau1=500, max_tau2=500)
    assert r.grid["bound"].shape == (500, 500) and np.isfinite(r.bound)


def test_a_budget_beyond_exact_step_counts_is_refused_not_wrapped_round() -> None:
    """A budget of 1e19 s used to give steps = -2^63 and success True (an int64 cast wrapped round)."""
    problem = dict(L=1, sigma2=1, N=10, gap=1, zeta=0.87, cost=CostModel(1.0, 0.5), max_tau1=5, max_tau2=5)
    with pytest.raises(InputError, match=r"the budget allows 1\.71e\+19 steps \(expected at most 2\^53"):
        optimize_dfl(**problem, budget_seconds=1e19)
    large = optimize_dfl(**problem, budget_seconds=1e15)
    assert large.success and large.steps == large.rounds * (large.tau1 + large.tau2) > 1e14


def test_cli_non_iid_bound_takes_the_heterogeneity_and_other_bounds_refuse_it(capsys) -> None:
    """--bound non-iid could not be given varsigma^2 from the CLI (it was always 0)."""
    from bounds.cli import main

    argv = ["optimize", "--L", "1", "--sigma2", "1", "--nodes", "10", "--gap", "1", "--zeta", "0.87",
            "--t-comp", "1", "--t-comm", "0.5", "--budget-seconds", "1000", "--json"]  # fmt: skip
    values = []
    for v in ("0", "4"):
        assert main([*argv, "--bound", "non-iid", "--heterogeneity", v]) == 0
        values.append(json.loads(capsys.readouterr().out)["bound"])
    problem = dict(L=1, sigma2=1, N=10, gap=1, zeta=0.87, cost=CostModel(1.0, 0.5), budget_seconds=1000)
    direct = optimize_dfl(**problem, max_tau1=50, max_tau2=50, bound="non-iid", heterogeneity=4.0)
    assert values[1] == pytest.approx(direct.bound, rel=1e-12) and values[1] > values[0]
    assert main([*argv, "--heterogeneity", "4"]) == 2
    assert "--heterogeneity 4 needs --bound non-iid" in capsys.readouterr().err
    assert main([*argv, "--heterogeneity", "nan"]) == 2  # its range first (it was told: --bound non-iid)
    assert "heterogeneity is NaN" in capsys.readouterr().err


def test_optimize_dfl_refuses_what_it_would_silently_misuse() -> None:
    """A heterogeneity the bound has no term for, and a C of another size, used to be accepted (the
    answer then that of varsigma^2 = 0, or of another graph); a fixed eta above every eta_max blamed zeta."""
    from bounds import make_graph, mixing_matrix

    problem = dict(L=1, sigma2=1, N=10, gap=1, cost=CostModel(1.0, 0.5), budget_seconds=1e4, max_tau1=10,
                   max_tau2=10)  # fmt: skip
    with pytest.raises(InputError, match="heterogeneity = 5 needs bound 'non-iid'"):
        optimize_dfl(**problem, zeta=0.87, heterogeneity=5)
    with pytest.raises(InputError, match="C is 5 x 5 but N = 10"):
        optimize_dfl(**problem, C=mixing_matrix(make_graph("ring", 5)))
    r = optimize_dfl(**problem, zeta=0.87, eta=0.5)
    assert not r.success and "eta = 0.5 is above eta_max of every cell, the largest 0.10" in r.message
    assert "zeta = 1" in optimize_dfl(**problem, zeta=1.0).message


def test_bound_grid_refuses_an_array_beside_its_mesh() -> None:
    """L = [1, 2] used to pair with the mesh's last axis (zeta): g.bound[0, 0, 1] was the bound at L = 2."""
    from bounds import bound_grid

    with pytest.raises(InputError, match=r"L = \[1, 2\] is not a single number"):
        bound_grid(
            tau1=[1, 2], tau2=[1, 2, 3], zeta=[0.5, 0.8], L=[1, 2], sigma2=1, N=10, eta=0.01, T=6000, gap=1
        )
    with pytest.raises(InputError, match=r"tau1 has shape \(2, 2\) \(expected a number or a 1-d list"):
        bound_grid(  # meshgrid flattened it into an axis of four
            tau1=[[1, 2], [3, 4]], tau2=[1, 2], zeta=0.5, L=1, sigma2=1, N=10, eta=0.01, T=6000, gap=1
        )


def test_optimisers_and_cost_models_take_single_numbers_only() -> None:
    """gap = [1.] broadcast into the grid, L = 1e300 raised OverflowError, runners_up = 2.5 a TypeError,
    cost = None an AttributeError, max_local_steps = 2.5 was floored, CostModel(1, [1]) stored a list."""
    base = dict(L=1, sigma2=1, N=10, gap=1, zeta=0.87, cost=CostModel(1.0, 0.5), budget_seconds=1e4)
    steps = {"budget_seconds": None, "max_local_steps": 2.5}
    for change, message in [({"gap": [1.0]}, r"gap = \[1.0\] is not a single number"),
                            ({"runners_up": 2.5}, "runners_up = 2.5 is not a whole number"),
                            ({"cost": None}, "cost = None is not a CostModel"),
                            (steps, "max_local_steps = 2.5 is not a whole")]:  # fmt: skip
        with pytest.raises(InputError, match=message):
            optimize_dfl(**{**base, **change})
    assert not optimize_dfl(**{**base, "L": 1e300}).success  # inf, not OverflowError
    with pytest.raises(InputError, match=r"t_comm = \[1\] is not a single number"):
        CostModel(1.0, [1])
    assert CostModel(np.float32(1.0), 2).t_comm == 2.0 and isinstance(CostModel(1, 2).t_comp, float)


def test_a_round_is_priced_for_whole_numbers_of_steps_only() -> None:
    """round_seconds(-4, 4) was -2.0 s, (4.5, 4) priced half a step, and arrays that do not broadcast were
    numpy's error (a probe of the library). Two numbers give a float, arrays an array."""
    cost = CostModel(1.0, 0.5)
    for args, message in [((-4, 4), r"^tau1 = -4 is out of range \(expected an integer >= 0\)"),
                          ((4.5, 4), r"^tau1 = 4.5 is not a whole number"),
                          ((4, "2"), r"^tau2 = '2' is a string"),
                          ((np.array([1, 2]), np.array([1, 2, 3])), r"^tau2 has shape \(3,\), which does not "
                           r"broadcast with tau1 \(2,\)")]:  # fmt: skip
        with pytest.raises(InputError, match=message):
            cost.round_seconds(*args)
    assert cost.round_seconds(4, 4) == 6.0 and isinstance(cost.round_seconds(4, 4), float)
    assert cost.round_seconds(np.array([1, 2]), 0).tolist() == [1.0, 2.0]


def test_a_bad_mixing_matrix_is_named_before_its_size() -> None:
    """A (2, 3) array was called '2 x 2', a string 'None x None'."""
    with pytest.raises(InputError, match=r"C has shape \(2, 3\)"):
        optimize_dfl(L=1, sigma2=1, N=10, gap=1, C=np.ones((2, 3)), cost=CostModel(1, 1), budget_seconds=9)
    with pytest.raises(InputError, match="C is 2 x 2 but N = 10"):
        optimize_dfl(L=1.0, sigma2=1.0, N=10, gap=1.0, C=np.full((2, 2), 0.5), cost=CostModel(1, 1),
                     budget_seconds=9)  # fmt: skip


def test_arguments_of_the_wrong_kind_are_one_line_errors() -> None:
    """An array for one integer, or a list for the bound's name, was a TypeError from int() or a dict lookup
    (an API probe); flags and Erdos-Renyi's p likewise."""
    from bounds import (
        check_mixing_matrix,
        from_edge_list,
        local_step_mask,
        make_compressor,
        make_graph,
        mixing_matrix,
        optimize_cdfl,
        zeta,
    )
    from bounds.dfl.symbolic import expression

    base = {
        "L": 1,
        "sigma2": 1,
        "N": 4,
        "gap": 1,
        "zeta": 0.8,
        "cost": CostModel(1, 1),
        "budget_seconds": 100,
    }
    cdfl = {"L": 1, "mu": 0.1, "sigma2_bar": 1, "G2": 1, "N": 10, "zeta": 0.87, "beta_mix": 4 / 3, "dim": 3,
            "t_comp": 1, "latency": 0.1, "bandwidth": 1e6, "budget_seconds": 1000, "max_tau1": 3,
            "max_tau2": 3}  # fmt: skip
    cases = [
        (lambda: local_step_mask(2, 1, np.array([3, 4])), r"T = array\(\[3, 4\]\) is not a single number"),
        (
            lambda: optimize_dfl(**base, max_tau1=np.array([3, 4])),
            r"max_tau1 = array\(\[3, 4\]\) is not a single",
        ),
        (lambda: optimize_dfl(**base, bound=[]), r"unknown bound \[\]"),
        (
            lambda: optimize_cdfl(**cdfl | {"dim": np.array([3, 4])}),
            r"dim = array\(\[3, 4\]\) is not a single",
        ),
        (lambda: optimize_cdfl(**cdfl, bound={}), r"unknown bound \{\}"),
        (lambda: make_graph("erdos-renyi", 8, p=True), "p = True is a boolean"),
        (lambda: make_graph("erdos-renyi", 8, p="0.5"), "p = '0.5' is a string"),
        (lambda: mixing_matrix(make_graph("ring", 5), sparse="no"), "sparse = 'no' is not a flag"),
        (lambda: zeta(np.eye(3), allow_disconnected="no"), "allow_disconnected = 'no' is not a flag"),
        (
            lambda: check_mixing_matrix(np.eye(4), require_connected="no"),
            "require_connected = 'no' is not a flag",
        ),
        # a probe's finds (2026-11-28): raw TypeErrors and numpy's ambiguous truth value, not InputErrors
        (lambda: optimize_cdfl(**cdfl, runners_up=-1), "runners_up = -1 is out of range"),
        (lambda: optimize_cdfl(**cdfl, runners_up="2"), "runners_up = '2' is a string"),
        (lambda: optimize_cdfl(**cdfl, candidates=True), "candidates = True"),
        (
            lambda: CostModel.from_network(1, latency=[0.1], bandwidth=1e6, dim=10),
            "latency = \\[0.1\\] is not a single",
        ),
        (
            lambda: CostModel.from_network(1, latency=0.1, bandwidth=1e6, dim=10, bits=[1, 2]),
            "bits = \\[1, 2\\]",
        ),
        (lambda: make_compressor(["top_k"], 3), "unknown compressor \\['top_k'\\]"),
        (lambda: from_edge_list(np.array(1)), "edges = array\\(1\\)"),
        (lambda: optimize_dfl(**base, bound=np.array([])), "unknown bound array"),
        (lambda: make_graph(np.array(["ring"]), 5), "unknown topology array"),
        (lambda: mixing_matrix(make_graph("ring", 5), np.array([])), "unknown weight rule array"),
        (lambda: expression(["x"]), "unknown expression \\['x'\\]"),
    ]
    for call, message in cases:
        with pytest.raises(InputError, match=message):
            call()


def test_a_best_cell_on_the_grids_far_edge_is_noted() -> None:
    """tau2 = 10 at max_tau2 = 10 was 23, with a smaller bound, at max_tau2 = 100, and nothing said so (a
    probe); tau1 = 1, the grid's near edge, is no note (no smaller tau1 exists)."""
    from bounds.plan.optimize import grid_edge_notes

    kw = dict(L=2, sigma2=3, N=10, gap=2, zeta=0.872678, cost=CostModel(1.0, 0.5), budget_seconds=5000,
              bound="non-iid", heterogeneity=5)  # fmt: skip
    small, large = optimize_dfl(**kw, max_tau1=10, max_tau2=10), optimize_dfl(**kw, max_tau1=10, max_tau2=100)
    assert (small.tau1, small.tau2) == (1, 10) and large.tau2 > 10 and large.bound < small.bound
    assert "the best tau2 = 10 is the grid's largest (--max-tau2 10)" in small.message
    assert "grid's largest" not in large.message and "tau1" not in small.message
    assert grid_edge_notes(5, 3, 5, 9) == [
        "the best tau1 = 5 is the grid's largest (--max-tau1 5): a larger grid may hold a better one"
    ]
    assert grid_edge_notes(1, 1, 1, 1) == []  # a grid of one value has no edge to move


def test_the_golden_search_runs_on_the_cells_that_fit_the_budget_only(monkeypatch) -> None:
    """The non-i.i.d. bound's eta search ran on every cell of the grid, those outside the budget through
    all ten windows: 24 s for max_tau2 = 10,000 with 6 cells that fit (a probe). The answer is the same."""
    import bounds.plan.optimize as optimize

    sizes: list[int] = []
    real = optimize._golden_eta
    monkeypatch.setattr(
        optimize, "_golden_eta", lambda value_at, top: sizes.append(top.size) or real(value_at, top)
    )
    kw = {"L": 1, "sigma2": 1, "N": 4, "gap": 1, "zeta": 0.5, "cost": CostModel(1.0, 1.0),
          "budget_seconds": 4, "max_tau1": 2, "bound": "non-iid", "heterogeneity": 0.1}  # fmt: skip
    small, large = optimize_dfl(**kw, max_tau2=5), optimize_dfl(**kw, max_tau2=2000)
    assert sizes == [5, 5]  # the (tau1, tau2) whose round fits 4 s: tau1 + tau2 <= 4; the grids: 10 and 4,000
    assert (small.tau1, small.tau2, small.eta, small.bound) == (
        large.tau1,
        large.tau2,
        large.eta,
        large.bound,
    )
