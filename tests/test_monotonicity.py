"""Remarks 1 and 2: sympy's sign proofs, and the derivatives against finite differences of the numbers."""

from __future__ import annotations

import itertools

import pytest

from bounds import dfl_bound
from bounds.dfl import formulas as f
from bounds.dfl.monotonicity import drift_monotonicity

EXPECTED = {"tau1": "positive", "tau2": "negative", "zeta": "positive"}


def test_sympy_proves_each_sign() -> None:
    results = drift_monotonicity()
    assert {r.variable: r.sign for r in results} == EXPECTED


@pytest.mark.parametrize(
    ("tau1", "tau2", "zeta"), list(itertools.product([1.0, 3.0], [1.0, 4.0], [0.3, 0.87]))
)
def test_derivatives_match_central_differences(tau1: float, tau2: float, zeta: float) -> None:
    point = dict(eta=0.02, L=1.5, sigma2=0.7, N=10, T=1000, gap=1.0)
    base = {"tau1": tau1, "tau2": tau2, "zeta": zeta}

    def drift(**change: float) -> float:
        # dfl_bound wants integer taus; the drift formula itself is smooth in them
        args = {**base, **change}
        return f.local_drift_term(
            point["eta"], point["L"], point["sigma2"], args["tau1"], args["tau2"], args["zeta"]
        )

    for result in drift_monotonicity():
        symbols = {s.name: s for s in result.derivative.free_symbols}
        values = {
            symbols[k]: v for k, v in {**base, "eta": 0.02, "L": 1.5, "sigma2": 0.7}.items() if k in symbols
        }
        exact = float(result.derivative.subs(values))
        h = 1e-6
        x = base[result.variable]
        numeric = (drift(**{result.variable: x + h}) - drift(**{result.variable: x - h})) / (2 * h)
        assert exact == pytest.approx(numeric, rel=1e-5)
        assert (exact > 0) == (EXPECTED[result.variable] == "positive")
    assert dfl_bound(tau1=int(tau1), tau2=int(tau2), zeta=zeta, **point).local_drift_term == pytest.approx(
        drift()
    )
