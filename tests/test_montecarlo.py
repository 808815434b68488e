"""bounds.dfl.montecarlo against exact expectations and against the test functions' stated constants."""

from __future__ import annotations

import numpy as np
import pytest

from bounds import InputError, mixing_matrix
from bounds.dfl.montecarlo import cosine_bumps, log_cosh, logistic, quadratic, simulate_dfl
from bounds.dfl.quadratic import exact_quadratic_dfl
from bounds.graph.topologies import ring

FUNCTIONS = [quadratic(2), log_cosh(3), cosine_bumps(3.0, 2), logistic()]


def test_monte_carlo_matches_the_exact_quadratic_recursion() -> None:
    """On F = ||w||^2 / 2 the exact expectations of bounds.dfl.quadratic lie in the Monte Carlo interval."""
    C = mixing_matrix(ring(6))
    w1 = np.array([1.0, -2.0])
    run = simulate_dfl(quadratic(2), C, 2, 3, 4, eta=0.2, sigma2=0.5, w1=w1, runs=20000, seed=1)
    exact = exact_quadratic_dfl(C, 2, 3, 20, eta=0.2, sigma2=0.5, targets=np.zeros((6, 2)), w1=w1)
    _, low, high = run.interval(local=False)
    assert low - 1e-3 <= exact.grad_norm2_average <= high + 1e-3
    local = exact.grad_norm2[exact.local].mean()
    _, low, high = run.interval(local=True)
    assert low - 1e-3 <= local <= high + 1e-3 and high - low < 0.05 * local


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.name)
def test_stated_constants(fn) -> None:
    """F >= F_inf at random points (and = at some point), and L bounds the gradient's Lipschitz ratio."""
    rng = np.random.default_rng(0)
    w = rng.normal(scale=3.0, size=(4000, fn.d))
    assert (fn.value(w) >= fn.F_inf - 1e-9).all()
    v = w + rng.normal(scale=0.3, size=w.shape)
    ratios = np.linalg.norm(fn.grad(w) - fn.grad(v), axis=1) / np.linalg.norm(w - v, axis=1)
    assert ratios.max() <= fn.L * (1 + 1e-9)
    h = 1e-6  # the gradient is the derivative of the value
    e = np.eye(fn.d)[0] * h
    numeric = (fn.value(w[:5] + e) - fn.value(w[:5] - e)) / (2 * h)
    assert numeric == pytest.approx(fn.grad(w[:5])[:, 0], abs=1e-5)


def test_infima_are_attained() -> None:
    """The minimisers found by a fine search reach F_inf (the infimum is not an under-estimate)."""
    bumps = cosine_bumps(3.0, 1)
    grid = np.linspace(-6, 6, 200001)[:, None]
    assert bumps.value(grid).min() == pytest.approx(bumps.F_inf, abs=1e-8)
    lg = logistic()
    from scipy import optimize

    best = optimize.minimize(lg.value, np.ones(lg.d), jac=lg.grad, method="L-BFGS-B", options={"gtol": 1e-12})
    assert best.fun == pytest.approx(lg.F_inf, abs=1e-9)
    assert np.linalg.norm(lg.grad(best.x)) < 1e-5


def test_common_noise_keeps_the_nodes_identical() -> None:
    """With the same noise at every node and a common start, the nodes never drift apart."""
    C = mixing_matrix(ring(5))
    a = simulate_dfl(log_cosh(2), C, 2, 1, 5, eta=0.3, sigma2=1.0, w1=np.ones(2), runs=200, noise="common")
    single = simulate_dfl(log_cosh(2), np.eye(1), 2, 1, 5, eta=0.3, sigma2=1.0, w1=np.ones(2), runs=200,
                          noise="common")  # fmt: skip
    assert a.lhs_local == pytest.approx(single.lhs_local)  # same seed: one node is the whole run


def test_bad_noise_kind_is_refused() -> None:
    with pytest.raises(InputError, match="noise = 'shared'"):
        simulate_dfl(
            quadratic(1), np.eye(2), 1, 1, 1, eta=0.1, sigma2=1.0, w1=np.zeros(1), runs=2, noise="shared"
        )
