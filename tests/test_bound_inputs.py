"""Inputs of the bounds' Python API that were taken in silence (a probe of 2026-11-29): each is refused by
name now, or computed on the shape the docstrings promise."""

from __future__ import annotations

import numpy as np
import pytest

import bounds.graph.topologies as topologies
from bounds import CostModel, InputError, cdfl_bound, dfl_bound, make_graph, optimize_dfl, zeta

BASE = {"L": 1, "sigma2": 1, "N": 10, "eta": 0.01, "tau1": 4, "tau2": 4, "zeta": 0.8727, "T": 1000, "gap": 1}
CDFL = {"L": 1, "mu": 0.1, "sigma2_bar": 1, "G2": 1, "N": 1, "tau1": 2, "tau2": 1, "K": 100, "delta": 0.5}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: dfl_bound(**{**BASE, "N": 1}), "zeta = 0.8727 with N = 1 (expected zeta = 0: one node's"),
        (lambda: dfl_bound(**{**BASE, "N": [1, 2]}), "zeta = 0.8727 with N = 1"),
        (lambda: cdfl_bound(**CDFL, zeta=0, beta_mix=1.5), "beta_mix = 1.5 with N = 1 (expected beta_mix"),
        (lambda: cdfl_bound(**CDFL, zeta=0.87, beta_mix=0), "zeta = 0.87 with N = 1"),
        (
            lambda: optimize_dfl(
                L=1, sigma2=1, N=1, gap=1, zeta=0.87, cost=CostModel(0.01, 0.05), budget_seconds=100
            ),
            "zeta = 0.87 with N = 1",
        ),
    ],
)
def test_one_node_with_a_spectrum_of_more_is_refused(call, message: str) -> None:
    """One node's C = [[1]] has zeta = beta_mix = 0; bounds at N = 1, zeta = 0.87 (and a C-DFL bound at
    beta_mix = 1.5) were computed with success True."""
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace("[", r"\[")):
        call()


def test_one_node_at_zeta_0_is_still_a_bound() -> None:
    assert dfl_bound(**{**BASE, "N": 1, "zeta": 0}).success
    assert dfl_bound(**{**BASE, "N": [1, 2], "zeta": [0, 0.5]}).bound.shape == (2,)
    assert cdfl_bound(**CDFL, zeta=0, beta_mix=0).bound > 0


def test_every_field_takes_the_inputs_shape_when_only_heterogeneity_is_an_array() -> None:
    """The non-i.i.d. fields had shape (2,), ``bound`` and ``success`` were scalars: success was not
    per point and r.bound[1] raised."""
    r = dfl_bound(**BASE, heterogeneity=[0.0, 1.0])
    for name in ("bound", "bound_non_iid", "success", "eta_max", "rounds", "non_iid_condition_ok"):
        assert np.shape(getattr(r, name)) == (2,), name
    assert r.bound[0] == r.bound[1] == dfl_bound(**BASE).bound


@pytest.mark.parametrize("value", [[True, 2], (1, np.True_), [[2], [False]]])
def test_a_boolean_among_numbers_is_refused(value) -> None:
    """numpy makes [True, 2] an int64 array: tau1 = [True, 2] was a bound at tau1 = 1."""
    with pytest.raises(InputError, match="holds a boolean"):
        dfl_bound(**{**BASE, "tau1": value})


def test_cost_model_steps_take_booleans_only() -> None:
    """step_seconds('no', 'no') was 0.06 s: any non-empty string counted as True."""
    cost = CostModel(0.01, 0.05)
    assert cost.step_seconds(False, True) == 0.05 and cost.step_seconds(np.True_, False) == 0.01
    with pytest.raises(InputError, match="local = 'no' is not a flag"):
        cost.step_seconds("no", "no")


@pytest.mark.parametrize(
    ("name", "nodes", "options", "cap"),
    [
        ("ring", 20.0, {}, 10),
        ("ring", np.float64(20), {}, 10),
        ("erdos-renyi", 20, {"p": np.float32(0.9)}, 100),  # 171 edges; the default density's guess 57
    ],
)
def test_the_size_guard_holds_for_float_nodes_and_numpy_p(monkeypatch, name, nodes, options, cap) -> None:
    """A float N skipped make_graph's guard (make_graph('complete', 1e5) ran the machine out of memory) and
    a numpy p was taken for the default density; here with the cap lowered."""
    monkeypatch.setattr(topologies, "MAX_EDGES", cap)
    with pytest.raises(InputError, match="edges"):
        make_graph(name, nodes, **options)


def test_a_masked_mixing_matrix_is_refused() -> None:
    """The values under the mask were used: zeta 0.0 of a C whose visible entries are no mixing matrix."""
    C = np.ma.masked_array(np.full((2, 2), 0.5), mask=[[0, 1], [0, 0]])
    with pytest.raises(InputError, match="C has masked entries"):
        zeta(C)
    assert zeta(np.ma.masked_array(np.full((2, 2), 0.5))) == 0.0  # a mask of nothing is a plain matrix


def test_negative_zero_reads_as_zero(capsys) -> None:
    """dfl-bounds printed 'zeta : -0' for --zeta -0.0."""
    from bounds._checks import real_array
    from bounds.cli import main

    argv = ["dfl", "--L", "1", "--sigma2", "1", "--nodes", "1", "--eta", "0.01", "--tau1", "2", "--tau2", "1"]
    assert main([*argv, "--T", "100", "--gap", "1", "--zeta", "-0.0", "--json"]) == 0
    assert '"zeta": 0.0' in capsys.readouterr().out

    given = np.array([-0.0, 1.0])
    assert not np.signbit(real_array("zeta", given)).any() and np.signbit(given[0])  # the caller's kept


def test_eta_max_without_n_is_the_condition_of_any_number_of_nodes() -> None:
    """eta_max's N defaulted to 1, which now means one node (zeta = 0): the planner, dfl-bounds optimize and
    three checks that call it without N were refused (a probe); N counts only where beta_var > 0, where
    the default 1 was taken in silence."""
    from bounds import eta_max

    assert eta_max(L=1, tau1=4, tau2=4, zeta=0.8727) == eta_max(L=1, tau1=4, tau2=4, zeta=0.8727, N=10)
    with pytest.raises(InputError, match=r"eta_max needs N where beta_var = 0\.5 > 0"):
        eta_max(L=1, tau1=4, tau2=4, zeta=0.8727, beta_var=0.5)
    assert eta_max(L=1, tau1=4, tau2=4, zeta=0.8727, N=10, beta_var=0.5) < eta_max(
        L=1, tau1=4, tau2=4, zeta=0.8727
    )
