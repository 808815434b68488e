"""prop1-least-squares / prop1-logistic: the stacked gradient descent of their cells against one cell at a
time (the loop the checks ran before), and the gradients against finite differences."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import paper_checks.real_problems as rp
from bounds.dfl.schedule import local_step_mask


def _small_data(samples: int = 60, features: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(samples, features))
    return np.hstack([x, np.ones((samples, 1))]), rng.integers(0, 10, samples)


@pytest.mark.parametrize("builder", [rp._least_squares, rp._logistic])
def test_gradients_match_finite_differences_one_model_and_stacked(builder) -> None:
    X, y = _small_data()
    _, _, loss, grad = builder(X, y)
    rng = np.random.default_rng(1)
    W = rng.normal(size=(X.shape[1], 10)) * 0.3
    g, h = grad(W), 1e-6
    for i, j in [(0, 0), (3, 7), (X.shape[1] - 1, 9)]:
        E = np.zeros_like(W)
        E[i, j] = h
        assert g[i, j] == pytest.approx((loss(W + E) - loss(W - E)) / (2 * h), rel=1e-5, abs=1e-8)
    stacked = np.stack([W, 2 * W, -W], axis=1)  # features x 3 x 10
    for k in range(3):
        np.testing.assert_allclose(grad(stacked)[:, k], grad(stacked[:, k]), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("problem", ["lstsq", "logreg"])
def test_grid_equals_each_cell_run_alone(monkeypatch: pytest.MonkeyPatch, problem: str) -> None:
    """The cells of a tau1 share one stacked run of gradient descent and each K reads its prefix: every
    row equals the cell's own loop over its T steps (gossip steps keep the gradient)."""
    X, y = _small_data()
    monkeypatch.setattr(rp, "_data", lambda samples: (X, y))
    rows, _ = rp._grid(problem, quick=True)
    _, f_inf, loss, grad = (rp._least_squares if problem == "lstsq" else rp._logistic)(X, y)
    cells = list(itertools.product([1, 2], [1, 2, 4, 8], [5, 50, 200], [1.0, 0.25]))
    assert len(rows) == len(cells)
    for row, (tau1, tau2, K, frac) in zip(rows, cells, strict=True):
        c = row["cell"]
        assert (c.tau1, c.tau2, c.K, row["eta/eta_max"]) == (tau1, tau2, K, frac)
        W = np.zeros((X.shape[1], 10))
        assert c.gap == pytest.approx(loss(W) - f_inf, rel=1e-12)
        mask = local_step_mask(tau1, tau2, K * (tau1 + tau2))
        total = total_local = 0.0
        g = grad(W)
        for is_local in mask:
            total += float(np.sum(g * g))
            if is_local:
                total_local += float(np.sum(g * g))
                W = W - c.eta * g
                g = grad(W)
        assert row["lhs_all"] == pytest.approx(total / len(mask), rel=1e-12)
        assert row["lhs_local"] == pytest.approx(total_local / mask.sum(), rel=1e-12)
