"""Monte Carlo of Algorithm 1 (DFL) on smooth test functions with known L and F_inf.

Every node holds the same function F (Assumption 1.4 with identical local data) and draws
g_i(w) = grad F(w) + xi_i, with Gaussian xi_i of mean 0 and E||xi_i||^2 = sigma^2 (Assumption
1.5 with equality). ``noise="independent"`` draws xi_i independently across nodes (what the proof
of Lemma 2 uses, though Assumption 1 does not list it); ``noise="common"`` gives every node the
same xi (perfectly correlated noise). R runs are stepped together as one R x N x d array.

Unlike :mod:`bounds.dfl.quadratic`, the functions here are not quadratic, so grad F(u_t) differs from
the average of the nodes' gradients and the local drift enters the left side of Proposition 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy import optimize

from bounds._checks import InputError
from bounds.dfl.schedule import local_step_mask

__all__ = [
    "MonteCarloRun",
    "TestFunction",
    "cosine_bumps",
    "log_cosh",
    "logistic",
    "quadratic",
    "simulate_dfl",
]


@dataclass(frozen=True)
class TestFunction:
    """F: R^d -> R with its gradient (both act on the last axis), smoothness L and infimum F_inf; picklable
    (module-level functions and partials), so a check can hand it to worker processes."""

    name: str
    d: int
    L: float
    F_inf: float
    value: Callable[[np.ndarray], np.ndarray]
    grad: Callable[[np.ndarray], np.ndarray]


def _half_square(w: np.ndarray) -> np.ndarray:
    return 0.5 * np.sum(w * w, -1)


def _identity(w: np.ndarray) -> np.ndarray:
    return w


def quadratic(d: int = 2) -> TestFunction:
    """F(w) = ||w||^2 / 2: L = 1, F_inf = 0."""
    return TestFunction("quadratic", d, 1.0, 0.0, _half_square, _identity)


def _log_cosh(w: np.ndarray) -> np.ndarray:
    a = np.abs(w)
    return np.sum(a + np.log1p(np.exp(-2 * a)) - np.log(2.0), -1)  # overflow-free log cosh


def log_cosh(d: int = 2) -> TestFunction:
    """F(w) = sum_k log cosh(w_k): convex, not quadratic, F'' = 1 - tanh^2 in (0, 1], so L = 1; F_inf = 0."""
    return TestFunction("log-cosh", d, 1.0, 0.0, _log_cosh, np.tanh)


def _bumps(w: np.ndarray, a: float) -> np.ndarray:
    return np.sum(0.5 * w * w + a * np.cos(w), -1)


def _bumps_grad(w: np.ndarray, a: float) -> np.ndarray:
    return w - a * np.sin(w)


def cosine_bumps(a: float = 3.0, d: int = 2) -> TestFunction:
    """F(w) = sum_k (w_k^2 / 2 + a cos w_k): non-convex for a > 1; F'' = 1 - a cos w, so L = 1 + a.

    F_inf = d min_x (x^2/2 + a cos x), found by a bounded scalar minimisation (|x| <= a + 1 holds at
    every minimiser, since x = a sin x there).
    """
    one = optimize.minimize_scalar(partial(_bumps, a=a), bounds=(0.0, a + 1.0), method="bounded")
    grid = np.linspace(0.0, a + 1.0, 20001)
    best = min(float(one.fun), float(np.min(0.5 * grid**2 + a * np.cos(grid))))
    value, grad = partial(_bumps, a=a), partial(_bumps_grad, a=a)
    return TestFunction(f"cosine-bumps(a={a:g})", d, 1.0 + a, d * best, value, grad)


def _margins(w: np.ndarray, yx: np.ndarray) -> np.ndarray:
    """y_i x_i^T w for every row of w (any leading shape): one matrix product over all rows."""
    return (w.reshape(-1, w.shape[-1]) @ yx.T).reshape(*w.shape[:-1], len(yx))


def _logistic(w: np.ndarray, yx: np.ndarray) -> np.ndarray:
    return np.mean(np.logaddexp(0.0, -_margins(w, yx)), -1)


def _logistic_grad(w: np.ndarray, yx: np.ndarray) -> np.ndarray:
    s = _sigmoid_of_minus(_margins(w, yx))  # sigmoid(-y x^T w)
    return -(s.reshape(-1, len(yx)) @ yx).reshape(w.shape) / len(yx)


def _sigmoid_of_minus(m: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(m)) in place of m (the formula of ``scipy.special.expit(-m)``, the same floats; exp's
    overflow to inf gives 0): 2.4x faster than expit on the Monte Carlo's (4000, 60) margins, where the
    logistic cells spend most of their time (2 cores, 2026-11-27)."""
    with np.errstate(over="ignore"):
        np.exp(m, out=m)
    m += 1.0
    return np.reciprocal(m, out=m)


def logistic(samples: int = 60, features: int = 4, seed: int = 0) -> TestFunction:
    """Binary logistic regression (with a bias) on a small synthetic data set with noisy labels.

    F(w) = (1/n) sum_i log(1 + exp(-y_i x_i^T w)); L = lambda_max(X^T X) / (4n) (the Hessian is
    X^T diag(p(1-p)) X / n with p(1-p) <= 1/4); labels are flipped with probability 0.2 so the data
    are not separable and F_inf is attained, found by Newton-type minimisation.
    """
    rng = np.random.default_rng(seed)
    x = np.hstack([rng.normal(size=(samples, features)), np.ones((samples, 1))])
    truth = rng.normal(size=features + 1)
    y = np.where(rng.random(samples) < 1 / (1 + np.exp(-x @ truth)), 1.0, -1.0)
    y = np.where(rng.random(samples) < 0.2, -y, y)
    value, grad = partial(_logistic, yx=y[:, None] * x), partial(_logistic_grad, yx=y[:, None] * x)
    best = optimize.minimize(value, np.zeros(features + 1), jac=grad, method="BFGS", options={"gtol": 1e-12})
    L = float(np.linalg.eigvalsh(x.T @ x)[-1]) / (4 * samples)
    return TestFunction("logistic", features + 1, L, float(best.fun), value, grad)


@dataclass(frozen=True)
class MonteCarloRun:
    """Per-run averages of ||grad F(u_t)||^2 (over all T steps, and over the K tau1 local steps)."""

    lhs_all: np.ndarray
    lhs_local: np.ndarray

    def interval(self, local: bool = True, z: float = 1.96) -> tuple[float, float, float]:
        """(mean, low, high) of the left side: the 95% normal interval of the mean over runs."""
        values = self.lhs_local if local else self.lhs_all
        mean = float(values.mean())
        half = z * float(values.std(ddof=1)) / np.sqrt(len(values)) if len(values) > 1 else 0.0
        return mean, mean - half, mean + half


def simulate_dfl(
    fn: TestFunction,
    C: np.ndarray,
    tau1: int,
    tau2: int,
    K: int,
    *,
    eta: float,
    sigma2: float,
    w1: np.ndarray,
    runs: int,
    seed: int = 0,
    noise: str = "independent",
) -> MonteCarloRun:
    """Algorithm 1 for K rounds (T = K (tau1 + tau2) steps), ``runs`` independent runs at once.

    Every node starts at ``w1``. At a local step X <- X - eta (grad F(X) + xi); at a gossip step
    X <- C X. The left side ||grad F(u_t)||^2 with u_t = mean of the nodes' models is recorded before
    each step t = 1..T, as in Proposition 1.
    """
    if noise not in ("independent", "common"):
        raise InputError(f"noise = {noise!r} (expected 'independent' or 'common')")
    n = C.shape[0]
    rng = np.random.default_rng(seed)
    X = np.broadcast_to(np.asarray(w1, dtype=np.float64), (runs, n, fn.d)).copy()
    mask = local_step_mask(tau1, tau2, K * (tau1 + tau2))
    total, total_local = np.zeros(runs), np.zeros(runs)
    scale = np.sqrt(sigma2 / fn.d)
    for is_local in mask:
        g = fn.grad(X.mean(axis=1))
        g2 = np.sum(g * g, axis=-1)
        total += g2
        if is_local:
            total_local += g2
            xi = (
                rng.normal(scale=scale, size=(runs, 1 if noise == "common" else n, fn.d))
                if sigma2 > 0
                else 0.0
            )
            X = X - eta * (fn.grad(X) + xi)
        else:
            X = np.matmul(C, X)
    return MonteCarloRun(total / len(mask), total_local / mask.sum())
