"""C-DFL theory (Section V, Appendix B) written once, as plain arithmetic.

Like :mod:`bounds.dfl.formulas`, every function works on numbers, numpy arrays and
sympy symbols. Notation: rho = 1 - zeta (spectral gap), delta the compression
ratio (Assumption 2), beta_mix = ||I - C||_2, mu the strong-convexity
constant, G2 = G^2 the bound on E||g||^2, sigma2_bar the mean of the
per-node variances sigma_i^2, theta the free constant of Remark 10,
a the shift of eta_k = 4 / (mu (a + k)), K the number of rounds.

Where the paper leaves a constant implicit, :mod:`bounds.cdfl.proposition2` makes
the choice and documents it; these functions take every constant explicitly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import digamma, polygamma

from bounds.dfl.formulas import symbolic_namespace

__all__ = [
    "D1",
    "D2",
    "D3",
    "choco_gamma",
    "choco_p",
    "contraction",
    "contraction_gap",
    "geometric_rounds",
    "largest_eta_121",
    "lemma10_consensus_bound",
    "lemma11_phi_bound",
    "lemma13_bound",
    "lemma13_bound_stated_step",
    "lemma13_bound_stated_step_tau1_one",
    "lemma13_bracket",
    "lemma13_largest_eta",
    "lemma13_step_condition_lhs",
    "proposition2_order_terms",
    "step_condition_121_lhs",
    "weight_sum",
]


def choco_p(rho: Any, delta: Any) -> Any:
    """Lemma 9 (CHOCO-G): per-step contraction p = rho^2 delta / 82."""
    return rho**2 * delta / 82


def choco_gamma(rho: Any, delta: Any, beta_mix: Any) -> Any:
    """Lemma 9 / Proposition 2: consensus step size of CHOCO-G.

    gamma = rho^2 delta / (16 rho + rho^2 + 4 beta^2 + 2 rho beta^2 - 8 rho delta).
    """
    return rho**2 * delta / (16 * rho + rho**2 + 4 * beta_mix**2 + 2 * rho * beta_mix**2 - 8 * rho * delta)


def contraction(p: Any, theta: Any, tau2: Any) -> Any:
    """A = (1 + theta)(1 - p)^tau2: per-round growth factor of Lemma 10's recursion (< 1 iff theta small)."""
    return (1 + theta) * (1 - p) ** tau2


def geometric_rounds(A: Any, k: Any) -> Any:
    """(A^k - 1) / (A - 1) = sum_{i=0}^{k-1} A^i, the factor [A^k - 1] / (A - 1) of Lemmas 10, 11, 13."""
    return (A**k - 1) / (A - 1)


def _log_contraction(p: Any, theta: Any, tau2: Any) -> Any:
    """log A = log(1 + theta) + tau2 log(1 - p), without rounding A (p = 6e-21 made A exactly 1.0)."""
    return np.log1p(theta) + tau2 * np.log1p(-p)


def contraction_gap(p: Any, theta: Any, tau2: Any) -> Any:
    """1 - A, exact where A rounds to 1 (a ring of 36,000 nodes: 1 - zeta = 1e-8, p = 6e-21); sympy: 1 - A."""
    if any(symbolic_namespace(x) for x in (p, theta, tau2)):
        return 1 - contraction(p, theta, tau2)
    return -np.expm1(_log_contraction(p, theta, tau2))


def _rounds(p: Any, theta: Any, tau2: Any, k: Any) -> Any:
    """:func:`geometric_rounds` of A = :func:`contraction` (p, theta, tau2), from log A (expm1): where A
    rounds to 1 the quotient was 0 / 0 and Lemma 13's bound NaN; it is k there."""
    if any(symbolic_namespace(x) for x in (p, theta, tau2, k)):
        return geometric_rounds(contraction(p, theta, tau2), k)
    log_a = _log_contraction(p, theta, tau2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.expm1(k * log_a) / np.expm1(log_a)
    return np.where(log_a == 0, k, ratio)[()]


def lemma10_consensus_bound(
    eta_k: Any, tau1: Any, N: Any, G2: Any, p: Any, theta: Any, tau2: Any, k: Any
) -> Any:
    """Lemma 10: ||X^(k) - Xbar^(k)||_F^2 bound.

    2 (1 + 1/theta) eta_k^2 tau1^2 N G^2 (1-p)^tau2 (A^k - 1)/(A - 1).
    """
    return 2 * (1 + 1 / theta) * eta_k**2 * tau1**2 * N * G2 * (1 - p) ** tau2 * _rounds(p, theta, tau2, k)


def lemma11_phi_bound(eta_k: Any, j: Any, N: Any, G2: Any, p: Any, theta: Any, tau2: Any, k: Any) -> Any:
    """Lemma 11 (eqs. (119), (120)): Phi_{k,j} bound; j = tau1 gives Phi_k.

    4 (1 + 1/theta) eta_k^2 j^3 N G^2 (1-p)^tau2 (A^k - 1)/(A - 1) + eta_k^2 N G^2 (j-1)(2j-1) j / 3.
    """
    return (
        4 * (1 + 1 / theta) * eta_k**2 * j**3 * N * G2 * (1 - p) ** tau2 * _rounds(p, theta, tau2, k)
        + eta_k**2 * N * G2 * (j - 1) * (2 * j - 1) * j / 3
    )


def weight_sum(a: Any, K: Any) -> Any:
    """Lemma 12: S_K = sum_{k=0}^{K-1} (a + k)^2 = K/6 (2K^2 + 6aK - 3K + 6a^2 - 6a + 1).

    Lemma 13 as printed sums k = 0..K instead (one more term, (a + K)^2); Lemma 12 and Proposition 2
    sum k = 0..K-1, which is what the proof's telescoping gives and what we use.
    """
    return K / 6 * (2 * K**2 + 6 * a * K - 3 * K + 6 * a**2 - 6 * a + 1)


def D1(L: Any, tau1: Any, G2: Any, p: Any, theta: Any, tau2: Any, k: Any) -> Any:
    """Lemma 13's D1 = 2(1+1/theta) L tau1^2 G^2 (1-p)^tau2 (A^k-1)/(A-1) + L tau1^2 G^2 / 3."""
    return (
        2 * (1 + 1 / theta) * L * tau1**2 * G2 * (1 - p) ** tau2 * _rounds(p, theta, tau2, k)
        + L * tau1**2 * G2 / 3
    )


def D2(L: Any, mu: Any, tau1: Any, G2: Any, p: Any, theta: Any, tau2: Any, k: Any) -> Any:
    """Lemma 13's D2 = 8(1+1/theta)(L+mu) tau1 G^2 (1-p)^tau2 (A^k-1)/(A-1) + 4/3 (L+mu) tau1 G^2."""
    return 8 * (1 + 1 / theta) * (L + mu) * tau1 * G2 * (1 - p) ** tau2 * _rounds(p, theta, tau2, k) + (
        4 * (L + mu) * tau1 * G2 / 3
    )


def D3(L: Any, mu: Any, tau1: Any, G2: Any, p: Any, theta: Any, tau2: Any, k: Any) -> Any:
    """Lemma 13's D3 = (1+1/theta)(L+mu) tau1^4 G^2 (1-p)^tau2 (A^k-1) / (6(A-1)) + (L+mu) tau1^4 G^2 / 36."""
    return (1 + 1 / theta) * (L + mu) * tau1**4 * G2 * (1 - p) ** tau2 * _rounds(p, theta, tau2, k) / 6 + (
        (L + mu) * tau1**4 * G2 / 36
    )


def lemma13_bracket(L: Any, mu: Any, sigma2_bar: Any, N: Any, tau1: Any, *d: Any) -> Any:
    """Q = (L + mu) sigma_bar^2 tau1 / (3N) + D1 + D2 + D3 (``d``: the D's, or their sum), the bracket of
    Lemma 13's higher-order term: (122)'s eta_k^3 coefficient over tau1^2."""
    Q = (L + mu) * sigma2_bar * tau1 / (3 * N)
    for term in d:
        Q = Q + term
    return Q


def lemma13_bound(
    L: Any,
    mu: Any,
    sigma2_bar: Any,
    N: Any,
    tau1: Any,
    K: Any,
    a: Any,
    init_dist2: Any,
    d1: Any,
    d2: Any,
    d3: Any,
) -> tuple[Any, Any, Any]:
    """Lemma 13's three terms: initial, noise and higher-order (sum them for the bound on F(w_avg) - F*).

    mu tau1 a^3 ||u0 - u*||^2 / (8 S_K),  4 K (K + 2a) tau1 sigma_bar^2 / (mu S_K N),
    64 K / (mu^2 S_K) ((L + mu) sigma_bar^2 tau1 / (3N) + D1 + D2 + D3).
    """
    S = weight_sum(a, K)
    initial = mu * tau1 * a**3 * init_dist2 / (8 * S)
    noise = 4 * K * (K + 2 * a) / (mu * S) * tau1 * sigma2_bar / N
    higher = 64 * K / (mu**2 * S) * lemma13_bracket(L, mu, sigma2_bar, N, tau1, d1, d2, d3)
    return initial, noise, higher


def lemma13_bound_stated_step(
    L: Any,
    mu: Any,
    sigma2_bar: Any,
    N: Any,
    tau1: Any,
    K: Any,
    a: Any,
    init_dist2: Any,
    d1: Any,
    d2: Any,
    d3: Any,
) -> tuple[Any, Any, Any]:
    """Our repair of Lemma 13's last step: what Lemma 12 gives from (122) at the lemma's own step
    eta_k = 4 / (mu (a + k)), for tau1 >= 2 (the terms of :func:`lemma13_bound`, in the same order).

    (122) is a_{k+1} <= (1 - mu eta_k tau1 / 2) a_k - eta_k e_k + eta_k^2 tau1^2 sigma_bar^2 / N
    + eta_k^3 tau1^2 Q, with e_k = F(u_k) - F* (under the lemma's hypothesis on the bracket) and
    Q = (L + mu) sigma_bar^2 tau1 / (3N) + D1 + D2 + D3. For tau1 >= 2 its contraction is at least
    Lemma 12's 1 - mu eta_k, so Lemma 12 applies with A = 1, B = tau1^2 sigma_bar^2 / N, C = tau1^2 Q:

    mu a^3 ||u0 - u*||^2 / (4 S_K),  2 K (K + 2a) tau1^2 sigma_bar^2 / (mu S_K N),
    16 K tau1^2 Q / (mu^2 S_K),

    i.e. the printed terms times 2 / tau1, tau1 / 2 and tau1^2 / 4: the printed noise and higher-order terms
    are too small for tau1 >= 3. The printed constants are what Lemma 12 gives for the step
    eta_k = 8 / (mu tau1 (a + k)) (Lemma 12's step eta_k tau1 / 2). For tau1 = 1 the contraction
    1 - mu eta_k / 2 is weaker than Lemma 12's and these terms bound nothing
    (:func:`lemma13_bound_stated_step_tau1_one` bounds that case).
    :func:`bounds.cdfl.recursion.worst_case_122` computes the recursion's exact worst case.
    """
    S = weight_sum(a, K)
    Q = lemma13_bracket(L, mu, sigma2_bar, N, tau1, d1, d2, d3)
    initial = mu * a**3 * init_dist2 / (4 * S)
    noise = 2 * K * (K + 2 * a) * tau1**2 * sigma2_bar / (mu * S * N)
    higher = 16 * K * tau1**2 * Q / (mu**2 * S)
    return initial, noise, higher


def lemma13_bound_stated_step_tau1_one(
    L: Any,
    mu: Any,
    sigma2_bar: Any,
    N: Any,
    K: Any,
    a: Any,
    init_dist2: Any,
    d1: Any,
    d2: Any,
    d3: Any,
) -> tuple[Any, Any, Any]:
    """Our repair of Lemma 13's last step at tau1 = 1, where Lemma 12 does not apply: the exact worst case of
    (122)'s recursion (the terms of :func:`lemma13_bound`, in the same order), in closed form.

    At tau1 = 1, (122) is a_{k+1} <= c_k a_k - eta_k e_k + eta_k^2 B + eta_k^3 Q with c_k = 1 - mu eta_k / 2
    = 1 - 2 / x_k, x_k = a + k, B = sigma_bar^2 / N and Q (:func:`lemma13_bracket`, D1, D2, D3 at round K,
    which bound every round's). Lemma 12 needs c_k <= 1 - mu eta_k = 1 - 4 / x_k. Without it, a unit of the
    right side available at round m is worth at most V_m = max_{j >= m} (w_j / eta_j) prod_{m < i <= j} c_i
    of sum_k w_k e_k (:mod:`bounds.cdfl.recursion`), and that product telescopes:
    prod_{m < i <= j} (x_i - 2) / x_i = x_m (x_m - 1) / (x_j (x_j - 1)), so
    V_m = (mu / 4) x_m (x_m - 1) max_{j >= m} x_j^2 / (x_j - 1) = (mu / 4) x_m (x_m - 1) g,
    g = X^2 / (X - 1), X = a + K - 1 (x^2 / (x - 1) grows for x >= 2, and a >= 16 kappa > 2): the worst
    sequence spends nothing before the last round. Then (c_0 a_0 V_0 + sum_m (eta_m^2 B + eta_m^3 Q) V_m)
    / S_K is, with H1 = sum_{k<K} 1 / x_k = psi(a + K) - psi(a) and H2 = sum_{k<K} 1 / x_k^2
    = psi'(a) - psi'(a + K):

    mu (a - 1)(a - 2) g ||u0 - u*||^2 / (4 S_K),  4 (K - H1) g sigma_bar^2 / (mu S_K N),
    16 (H1 - H2) g Q / (mu^2 S_K),

    exact for (122) with Q fixed (a linear programme over every sequence a_k, e_k >= 0 gives the same,
    tested). Against Lemma 12's terms at tau1 = 2 the first is O(1 / K^2) instead of O(1 / K^3) and the last
    has a log K: the slower contraction lets the worst case hold its budget back to the end.
    """
    S = weight_sum(a, K)
    Q = lemma13_bracket(L, mu, sigma2_bar, N, 1, d1, d2, d3)
    X = a + K - 1
    g = X**2 / (X - 1)
    H1, H2 = _harmonic_sums(a, K)
    initial = mu * (a - 1) * (a - 2) * g * init_dist2 / (4 * S)
    noise = 4 * (K - H1) * g * sigma2_bar / (mu * S * N)
    higher = 16 * (H1 - H2) * g * Q / (mu**2 * S)
    return initial, noise, higher


LARGE_SHIFT = 1e4
"""From this a on, :func:`_harmonic_sums` takes the asymptotic series (relative error about 1 / (30 a^4)):
the digamma differences lose digits to cancellation (1e-12 relative at a = 1e6, all of them near 1e15)."""


def _harmonic_sums(a: Any, K: Any) -> tuple[Any, Any]:
    """H1 = sum_{k<K} 1 / (a + k) = psi(a + K) - psi(a) and H2 = sum_{k<K} 1 / (a + k)^2 = psi'(a) -
    psi'(a + K); sympy's polygamma for symbols. For a >= LARGE_SHIFT, from psi(x) = ln x - 1/(2x) -
    1/(12x^2) + O(x^-4) and psi'(x) = 1/x + 1/(2x^2) + 1/(6x^3) + O(x^-5), each difference written without
    cancellation (1/a - 1/(a + K) = K / (a (a + K)), ...)."""
    sympy = symbolic_namespace(a) or symbolic_namespace(K)
    if sympy is not None:
        return (
            sympy.polygamma(0, a + K) - sympy.polygamma(0, a),
            sympy.polygamma(1, a) - sympy.polygamma(1, a + K),
        )
    a, K = np.asarray(a, dtype=float), np.asarray(K, dtype=float)
    b = a + K
    d1 = K / (a * b)  # 1/a - 1/b
    d2 = K * (a + b) / (a * b) ** 2  # 1/a^2 - 1/b^2
    d3 = K * (a * a + a * b + b * b) / (a * b) ** 3  # 1/a^3 - 1/b^3
    with np.errstate(divide="ignore", invalid="ignore"):
        series = (np.log1p(K / a) + d1 / 2 + d2 / 12, d1 + d2 / 2 + d3 / 6)
        exact = (digamma(b) - digamma(a), polygamma(1, a) - polygamma(1, b))
    large = a >= LARGE_SHIFT
    first, second = (np.where(large, s, e)[()] for s, e in zip(series, exact, strict=True))
    return first, second


def lemma13_step_condition_lhs(L: Any, mu: Any, tau1: Any, eta: Any, alpha: Any) -> Any:
    """Lemma 13's condition, divided by eta_k > 0 and moved to one side (must be <= 0).

    4 L eta alpha - 2 tau1 + 8/3 (L + mu) eta^2 L alpha tau1^3 + 1 <= 0, as printed
    (note: (121) has 4 eta^2 L tau1^2 alpha where Lemma 13 prints 4 L eta^2 alpha).
    """
    return 4 * L * eta * alpha - 2 * tau1 + 8 * (L + mu) * eta**2 * L * alpha * tau1**3 / 3 + 1


def lemma13_largest_eta(L: Any, mu: Any, tau1: Any, alpha: Any) -> Any:
    """Largest eta with :func:`lemma13_step_condition_lhs` <= 0 (positive root of the quadratic in eta).

    4 L alpha eta + 8/3 (L + mu) L alpha tau1^3 eta^2 <= 2 tau1 - 1, i.e. b eta + c eta^2 <= 1
    with b = 4 L alpha / (2 tau1 - 1), c = 8 (L + mu) L alpha tau1^3 / (3 (2 tau1 - 1)).
    """
    b = 4 * L * alpha / (2 * tau1 - 1)
    c = 8 * (L + mu) * L * alpha * tau1**3 / (3 * (2 * tau1 - 1))
    return _root(b, c)


def _root(b: Any, c: Any) -> Any:
    """The positive eta with b eta + c eta^2 = 1."""
    from bounds.dfl.formulas import sqrt

    return 2 / (b + sqrt(b**2 + 4 * c))


def step_condition_121_lhs(L: Any, mu: Any, tau1: Any, eta: Any, alpha: Any) -> Any:
    """The bracket of (121) (Lemma 8's) <= -eta_k, divided by eta_k > 0 and moved to one side (must be <= 0):

    4 L eta alpha tau1^2 - 2 tau1 + 8/3 (L + mu) eta^2 L alpha tau1^3 + 1 <= 0.

    (122)'s term -eta_k (F(u_k) - F*) needs it; Lemma 13 prints it without the tau1^2 (see
    :func:`lemma13_step_condition_lhs`), a weaker condition for tau1 >= 2.
    """
    return 4 * L * eta * alpha * tau1**2 - 2 * tau1 + 8 * (L + mu) * eta**2 * L * alpha * tau1**3 / 3 + 1


def largest_eta_121(L: Any, mu: Any, tau1: Any, alpha: Any) -> Any:
    """Largest eta with :func:`step_condition_121_lhs` <= 0 (the positive root of its quadratic in eta)."""
    b = 4 * L * alpha * tau1**2 / (2 * tau1 - 1)
    c = 8 * (L + mu) * L * alpha * tau1**3 / (3 * (2 * tau1 - 1))
    return _root(b, c)


def proposition2_order_terms(
    L: Any, mu: Any, sigma2_bar: Any, G2: Any, N: Any, tau1: Any, tau2: Any, K: Any, p: Any, theta: Any
) -> tuple[Any, Any, Any]:
    """The three O(.) terms of Proposition 2 with every hidden constant set to 1 (order of magnitude only).

    tau1 sigma_bar^2 / (mu K N),  kappa tau1^4 G^2 (1-p)^tau2 / (mu K^2 [1 - (1+theta)(1-p)^tau2]),
    kappa^3 G^2 tau1 / (K^3 mu), kappa = L / mu.
    """
    kappa = L / mu
    first = tau1 * sigma2_bar / (mu * K * N)
    gap = contraction_gap(p, theta, tau2)
    if symbolic_namespace(gap) is None:  # <= 0 (tau2 = 0, say): no contraction, no finite order (was < 0)
        gap = np.where(gap > 0, gap, 0.0)
    second = kappa * tau1**4 * G2 * (1 - p) ** tau2 / (mu * K**2 * gap)
    third = kappa**3 * G2 * tau1 / (K**3 * mu)
    return first, second, third
