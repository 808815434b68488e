"""Exact quadratic expectations against step-by-step simulation and Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from bounds import mixing_matrix
from bounds.dfl.quadratic import exact_quadratic_dfl
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
