"""Exact quadratic expectations against step-by-step simulation and Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from bounds import InputError, mixing_matrix
from bounds.dfl.quadratic import exact_quadratic_dfl, exact_quadratic_dfl_runs
from bounds.dfl.schedule import local_step_mask
from bounds.graph.topologies import quasi_ring


def simulate(C, tau1, tau2, T, eta, L, sigma2, B, w1, runs, seed):
    rng = np.random.default_rng(seed)
    n, d = B.shape
    grad = np.zeros(T)
    drift = np.zeros(T)
    node_grad = np.zeros(T)
    for _ in range(runs):
        X = np.tile(w1, (n, 1))
        for t, is_local in enumerate(local_step_mask(tau1, tau2, T)):
            u = X.mean(0)
            grad[t] += L**2 * np.sum((u - B.mean(0)) ** 2)
            drift[t] += np.sum((X - u) ** 2) / n
            node_grad[t] += L**2 * np.sum((X - B.mean(0)) ** 2)  # grad F at every node's model
            if is_local:
                noise = rng.normal(scale=np.sqrt(sigma2 / d), size=X.shape)
                X = X - eta * (L * (X - B) + noise)
            else:
                X = C @ X
    return grad / runs, drift / runs, node_grad / runs


def test_noise_free_matches_step_by_step() -> None:
    C = mixing_matrix(quasi_ring(10), "metropolis")
    B = np.random.default_rng(0).normal(size=(10, 3))
    exact = exact_quadratic_dfl(C, 3, 2, 30, eta=0.2, L=1.5, targets=B, w1=np.ones(3))
    grad, drift, node_grad = simulate(C, 3, 2, 30, 0.2, 1.5, 0.0, B, np.ones(3), runs=1, seed=0)
    assert np.allclose(exact.grad_norm2, grad, rtol=1e-12) and np.allclose(
        exact.drift, drift, rtol=1e-12, atol=1e-15
    )
    assert np.allclose(exact.node_grad_norm2, node_grad, rtol=1e-12)
    assert exact.local_grad_sum == pytest.approx(node_grad[local_step_mask(3, 2, 30)].sum(), rel=1e-12)


def test_noisy_matches_monte_carlo() -> None:
    C = mixing_matrix(quasi_ring(10), "metropolis")
    B = np.random.default_rng(1).normal(size=(10, 4))
    exact = exact_quadratic_dfl(C, 2, 3, 20, eta=0.1, L=1.0, sigma2=2.0, targets=B, w1=np.zeros(4))
    grad, drift, node_grad = simulate(C, 2, 3, 20, 0.1, 1.0, 2.0, B, np.zeros(4), runs=4000, seed=2)
    assert grad.mean() == pytest.approx(exact.grad_norm2.mean(), rel=0.02)
    assert drift.mean() == pytest.approx(exact.drift.mean(), rel=0.02)
    assert node_grad.mean() == pytest.approx(exact.node_grad_norm2.mean(), rel=0.02)


def test_stacked_runs_equal_each_problem_alone() -> None:
    """Problems of different T, eta, L, sigma^2, targets and starts stepped together: each equals its run
    alone (the shorter ones read the prefix of the shared schedule)."""
    C = mixing_matrix(quasi_ring(8), "metropolis")
    rng = np.random.default_rng(3)
    T, eta, L, sigma2 = [40, 9, 1], [0.1, 0.3, 0.05], [1.0, 0.5, 2.0], [0.0, 1.0, 2.5]
    targets = [None, rng.normal(size=(8, 1)), rng.normal(size=(8, 1))]
    w1 = [np.array([3.0]), None, np.array([-1.0])]
    runs = exact_quadratic_dfl_runs(C, 2, 3, T, eta=eta, L=L, sigma2=sigma2, targets=targets, w1=w1)
    for k, run in enumerate(runs):
        alone = exact_quadratic_dfl(C, 2, 3, T[k], eta=eta[k], L=L[k], sigma2=sigma2[k], targets=targets[k],
                                    w1=w1[k])  # fmt: skip
        np.testing.assert_array_equal(run.local, alone.local)
        for name in ("grad_norm2", "drift", "node_grad_norm2"):
            np.testing.assert_allclose(getattr(run, name), getattr(alone, name), rtol=1e-12, atol=1e-15)
    with pytest.raises(InputError, match="targets have d"):
        exact_quadratic_dfl_runs(C, 1, 1, [3, 3], eta=[0.1] * 2, L=[1.0] * 2, sigma2=[0.0] * 2,
                                 targets=[np.zeros((8, 1)), np.zeros((8, 2))], w1=[None, None])  # fmt: skip
    with pytest.raises(InputError, match="expected the same number"):
        exact_quadratic_dfl_runs(
            C, 1, 1, [3], eta=[0.1] * 2, L=[1.0], sigma2=[0.0], targets=[None], w1=[None]
        )
