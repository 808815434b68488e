"""The exact worst case of the recursion (122) that Lemma 13's proof ends with, as Lemma 12 uses it.

(122): a_{k+1} <= c_k a_k - eta_k e_k + r_k with c_k = 1 - mu eta_k tau1 / 2, eta_k = 4 / (mu (a + k)),
r_k = eta_k^2 tau1^2 sigma_bar^2 / N + eta_k^3 tau1^2 Q_k (Q_k:
:func:`bounds.cdfl.formulas.lemma13_bracket` with D1, D2, D3 at round k). Lemma 12 bounds
(1/S_K) sum_{k<K} w_k e_k, w_k = (a + k)^2, using nothing but this recursion and a_k, e_k >= 0; so the
largest value of that average over all such sequences is what its conclusion can at best be. Spending
a unit of the "budget" c_k a_k + r_k at round k earns w_k / eta_k; carrying it to round k + 1 keeps c_{k+1}
of it, so a unit available at round k is worth V_k = max(w_k / eta_k, c_{k+1} V_{k+1}) (V_{K-1} = w_{K-1} /
eta_{K-1}), and the worst case is (c_0 a_0 V_0 + sum_k r_k V_k) / S_K: a backward pass, exact when every
c_k >= 0 (``tests/test_proposition2.py`` checks it against a linear programme).
"""

from __future__ import annotations

import numpy as np

from bounds._checks import InputError, real_number
from bounds.cdfl import formulas as cf

__all__ = ["worst_case_122"]


def worst_case_122(
    *,
    L: float,
    mu: float,
    sigma2_bar: float,
    G2: float,
    N: float,
    tau1: int,
    tau2: int,
    K: int,
    a: float,
    p: float,
    theta: float,
    init_dist2: float,
) -> float:
    """The largest (1/S_K) sum_{k<K} w_k (F(u_k) - F*) that (122)'s recursion allows (module docstring)."""
    L, mu = real_number("L", L, low=0, low_open=True), real_number("mu", mu, low=0, low_open=True)
    K_ = int(real_number("K", K, low=1, integer=True))
    tau1_ = int(real_number("tau1", tau1, low=1, integer=True))
    a = real_number("a", a, low=1, low_open=True)
    k = np.arange(K_, dtype=float)
    eta = 4 / (mu * (a + k))
    c = 1 - mu * eta * tau1_ / 2
    if (c < 0).any():
        raise InputError(f"a = {a:g} gives 1 - mu eta_0 tau1 / 2 = {c[0]:.3g} < 0 (expected a >= 2 tau1)")
    d = sum(D(L, mu, tau1_, G2, p, theta, tau2, k) for D in (_D1, cf.D2, cf.D3))
    Q = cf.lemma13_bracket(L, mu, sigma2_bar, N, tau1_, d)
    r = eta**2 * tau1_**2 * sigma2_bar / N + eta**3 * tau1_**2 * Q
    worth = (a + k) ** 2 / eta
    V = np.empty(K_)
    V[-1] = worth[-1]
    for m in range(K_ - 2, -1, -1):
        V[m] = max(worth[m], c[m + 1] * V[m + 1])
    return float((c[0] * init_dist2 * V[0] + (r * V).sum()) / cf.weight_sum(a, K_))


def _D1(
    L: float, mu: float, tau1: int, G2: float, p: float, theta: float, tau2: int, k: np.ndarray
) -> np.ndarray:
    """D1 in D2's and D3's argument order (it has no mu)."""
    return cf.D1(L, tau1, G2, p, theta, tau2, k)
