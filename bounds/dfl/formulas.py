"""Proposition 1 and Lemma 1 of the paper, each formula written once.

Every function here is plain arithmetic on its arguments, so the same code
evaluates on Python floats, numpy arrays (whole grids by broadcasting) and
sympy symbols (or Fractions, exactly); only square roots go through :func:`sqrt`,
which picks ``sympy.sqrt`` or ``numpy.sqrt``, and 1 - zeta^k through
:func:`one_minus_power`, which keeps its digits for floats near zeta^k = 1.
The numeric front end with validation and result objects is
:mod:`bounds.dfl.proposition1`; the symbolic one is :mod:`bounds.dfl.symbolic`.
Notation follows the paper:

=========  ==========================================================
eta        learning rate eta
L          smoothness constant L (Assumption 1.1)
sigma2     gradient-noise variance sigma^2 (Assumption 1.5)
N          number of nodes
tau1       local SGD steps per round (computation frequency)
tau2       gossip steps per round (communication frequency)
zeta       max(|lambda_2(C)|, |lambda_N(C)|)
T          total steps (local and gossip)
gap        F(u_1) - F_inf
beta_var   variance-growth parameter of Lemma 2:
           E||g(w) - grad F(w)||^2 <= beta_var ||grad F(w)||^2 + sigma^2
varsigma2  heterogeneity varsigma^2 (non-i.i.d. data, not in the paper):
           (1/N) sum_i ||grad f_i(w) - grad F(w)||^2 <= varsigma^2
=========  ==========================================================

Division by zero (zeta = 1 or tau2 = 0: gossip never mixes) is left to the
caller: floats and numpy give inf (with numpy's warning unless np.errstate
silences it), sympy zoo, Fractions ZeroDivisionError. Nor is
any argument checked (eta_max(-1.0, ...) is negative): the checked entry
points are :mod:`bounds.dfl.proposition1`'s.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = [
    "candidate_local_step_bound",
    "drift_factor",
    "drift_factor_corrected",
    "drift_factor_repaired",
    "drift_recursion_coefficient",
    "drift_recursion_factor",
    "drift_term_repaired",
    "eta_condition_lhs",
    "eta_max",
    "eta_max_from_quadratic",
    "eta_max_non_iid",
    "general_eta_condition_lhs",
    "general_eta_max",
    "gossip_coefficient",
    "heterogeneity_factor",
    "heterogeneity_term",
    "lemma1_condition_lhs",
    "limit_T_inf",
    "local_drift_bound_103",
    "local_drift_term",
    "local_drift_term_corrected",
    "non_iid_local_step_bound",
    "one_minus_power",
    "quadratic_condition_lhs",
    "sqrt",
    "symbolic_namespace",
    "sync_sgd_term",
    "upper_bound",
    "variance_coefficient",
]


def symbolic_namespace(x: Any) -> Any:
    """sympy when ``x`` is a sympy expression, else None. sympy (about 0.4 s to import) is never imported
    here: an expression exists only if its caller imported sympy (:mod:`bounds.dfl.symbolic`)."""
    sympy = sys.modules.get("sympy")
    return sympy if sympy is not None and isinstance(x, sympy.Basic) else None


def sqrt(x: Any) -> Any:
    """Square root in the namespace of ``x`` (sympy for symbolic input, numpy otherwise)."""
    sympy = symbolic_namespace(x)
    return sympy.sqrt(x) if sympy is not None else np.sqrt(x)


def one_minus_power(zeta: Any, k: Any) -> Any:
    """1 - zeta^k, without the cancellation of the plain difference where zeta^k is near 1: -expm1(k log
    zeta) for floats and float arrays with zeta > 0 (zeta within 2e-8 of 1 lost 9 of the digits of 1 -
    zeta^tau2, and eta_max passed (eta) by 1.05e-9 where CONDITION_RTOL promises 1e-12, an audit), the
    plain form for the rest (sympy, Fractions and ints exact, zeta <= 0)."""
    if not _floats(zeta):  # sympy, Fractions, ints: exact as they are
        return 1 - zeta**k
    if np.ndim(zeta) == 0 and np.ndim(k) == 0:  # one number: the same ufuncs, without np.where's cost
        z, power = np.float64(zeta), np.float64(k)  # (a brute-force grid made 122k calls at 13-22 us)
        if z > 0:
            with np.errstate(invalid="ignore"):  # (k = inf at zeta = 1: NaN, as the array form)
                return 0.0 - np.expm1(power * np.log(z))
        return 1.0 - np.power(z, power)
    zeta, k = np.asarray(zeta, dtype=np.float64), np.asarray(k, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):  # (zeta <= 0 takes the plain form)
        gap = 0.0 - np.expm1(k * np.log(np.where(zeta > 0, zeta, 1.0)))  # (-expm1 gave -0.0 at zeta = 1)
    return np.where(zeta > 0, gap, 1.0 - zeta**k)[()]


def _floats(x: Any) -> bool:
    """Whether ``x`` is a float or an array of floats (where :func:`one_minus_power` needs expm1)."""
    return isinstance(x, float | np.floating) or (isinstance(x, np.ndarray) and x.dtype.kind == "f")


def sync_sgd_term(eta: Any, L: Any, sigma2: Any, N: Any, T: Any, gap: Any) -> Any:
    """Synchronous-SGD part of eq. (upper-bound): 2 [F(u_1) - F_inf] / (eta T) + eta L sigma^2 / N."""
    return 2 * gap / (eta * T) + eta * L * sigma2 / N


def drift_factor(tau1: Any, tau2: Any, zeta: Any) -> Any:
    """D of eq. (upper-bound)'s local-drift part 2 eta^2 L^2 sigma^2 D: tau1 / (1 - zeta^(2 tau2)) - 1.
    For numbers as (tau1 - 1 + q) / (1 - q), q = zeta^(2 tau2): the difference lost every digit at tau1 = 1
    (0.0 for 5.15e-53 at zeta = 0.3, tau2 = 50, an audit); sympy and Fractions keep the paper's form."""
    if not _floats(zeta):
        return tau1 / (1 - zeta ** (2 * tau2)) - 1
    return (tau1 - 1 + zeta ** (2 * tau2)) / one_minus_power(zeta, 2 * tau2)


def drift_factor_corrected(tau1: Any, tau2: Any, zeta: Any) -> Any:
    """D of our corrected noise term (:func:`local_drift_term_corrected`): tau1 / (1 - zeta^(2 tau2))."""
    return tau1 / one_minus_power(zeta, 2 * tau2)


def drift_factor_repaired(tau1: Any, tau2: Any, zeta: Any) -> Any:
    """D of our repair (candidate_local_step_bound): tau1 q / (1 - q) + (tau1 - 1) / 2, q = zeta^(2 tau2)."""
    q = zeta ** (2 * tau2)
    return tau1 * q / one_minus_power(zeta, 2 * tau2) + (tau1 - 1) / 2


def local_drift_term(eta: Any, L: Any, sigma2: Any, tau1: Any, tau2: Any, zeta: Any) -> Any:
    """Local-drift part of eq. (upper-bound): 2 eta^2 L^2 sigma^2 (tau1 / (1 - zeta^(2 tau2)) - 1)."""
    return 2 * (eta * L) ** 2 * sigma2 * drift_factor(tau1, tau2, zeta)


def upper_bound(
    eta: Any, L: Any, sigma2: Any, N: Any, tau1: Any, tau2: Any, zeta: Any, T: Any, gap: Any
) -> Any:
    """Right side of eq. (upper-bound) of Proposition 1: sync-SGD part + local-drift part."""
    return sync_sgd_term(eta, L, sigma2, N, T, gap) + local_drift_term(eta, L, sigma2, tau1, tau2, zeta)


def local_drift_term_corrected(eta: Any, L: Any, sigma2: Any, tau1: Any, tau2: Any, zeta: Any) -> Any:
    """Our corrected noise part of (103): 2 eta^2 L^2 sigma^2 tau1 / (1 - zeta^(2 tau2)).

    The paper's term has ``tau1 / (1 - zeta^(2 tau2)) - 1``: its proof bounds the
    current round's noise at step t = j tau + i by (i - 1) N sigma^2 with
    i <= tau1, but then sums i over the whole round, gossip steps included,
    where all tau1 of the round's noisy gradients are still present. With
    tau1 = 1 the paper's term vanishes as zeta -> 0 while the exact drift does
    not (see :func:`bounds.dfl.noise_drift.noise_drift`). Counting the gossip steps
    correctly gives at most tau1 N sigma^2 per step, hence this term.
    """
    return 2 * (eta * L) ** 2 * sigma2 * drift_factor_corrected(tau1, tau2, zeta)


def candidate_local_step_bound(
    eta: Any, L: Any, sigma2: Any, N: Any, tau1: Any, tau2: Any, zeta: Any, K: Any, gap: Any
) -> Any:
    """Our repair of Proposition 1 (a derivation sketch, not in the paper; beta_var = 0).

    Average ||grad F(u_t)||^2 over the K tau1 local steps only (gossip steps make no descent):

        2 gap / (eta K tau1) + eta L sigma^2 / N
        + 2 eta^2 L^2 sigma^2 (tau1 zeta^(2 tau2) / (1 - zeta^(2 tau2)) + (tau1 - 1) / 2),

    under the same condition (eta). Derivation: (1) Lemma 1's per-step inequality (the step
    before (50)) holds at every local step; at a gossip step u_{t+1} = u_t, so summing it over the
    local steps only telescopes F(u) to gap. (2) The drift at local step i of a round is bounded
    by the paper's A_1 bound (79), 2 eta^2 N sigma^2 (tau1 q / (1 - q) + i - 1) with q = zeta^(2 tau2),
    whose mean over i = 1..tau1 gives the last term, plus A_2 (95). (3) Summed over local steps, A_2
    is at most eta^2 A sum_s ||grad F(X_s)||_F^2 with A = :func:`gossip_coefficient` ((101) sums
    the same non-negative terms over more steps), and (eta) L + eta^2 L^2 A <= 1 makes
    (L^2 eta / 2N) eta^2 A sum_s ||grad F(X_s)||^2 cancel against Lemma 1's
    -(eta / 2)(1 - eta L) (1/N) sum_s ||grad F(X_s)||^2. (4) Divide by eta K tau1 / 2.
    Steps (2)-(3) reuse the paper's bounds, which our checks did not find faulty at local steps;
    checked numerically by ``dfl-check`` (prop1-candidate-repair) and the tests.
    """
    return (
        2 * gap / (eta * K * tau1)
        + eta * L * sigma2 / N
        + 2 * (eta * L) ** 2 * sigma2 * drift_factor_repaired(tau1, tau2, zeta)
    )


def limit_T_inf(eta: Any, L: Any, sigma2: Any, N: Any, tau1: Any, tau2: Any, zeta: Any) -> Any:
    """Eq. (inftyT): the T -> infinity limit, eta L sigma^2 / N + local-drift part."""
    return eta * L * sigma2 / N + local_drift_term(eta, L, sigma2, tau1, tau2, zeta)


def gossip_coefficient(tau1: Any, tau2: Any, zeta: Any) -> Any:
    """A in eq. (eta): tau / (1 - z) (2 tau1 z^2 / (1 + z) + 2 tau1 z / (1 - z) + tau - 1), z = zeta^tau2.

    It is the constant of the bound (101) on the A_2 part of the local drift.
    """
    tau = tau1 + tau2
    z, gap = zeta**tau2, one_minus_power(zeta, tau2)
    return tau / gap * (2 * tau1 * z**2 / (1 + z) + 2 * tau1 * z / gap + tau - 1)


def variance_coefficient(tau1: Any, tau2: Any, zeta: Any, beta_var: Any) -> Any:
    """2 beta_var tau / (1 - zeta^(2 tau2)): the A_1 gradient term of (83), in the general condition."""
    return 2 * beta_var * (tau1 + tau2) / one_minus_power(zeta, 2 * tau2)


def local_drift_bound_103(
    eta: Any,
    L: Any,
    sigma2: Any,
    N: Any,
    tau1: Any,
    tau2: Any,
    zeta: Any,
    T: Any,
    local_grad_sum: Any,
    beta_var: Any = 0,
) -> Any:
    """Right side of eq. (103) in full: the proof's bound on the local drift before (eta) drops it.

        2 eta^2 L^2 sigma^2 (tau1 / (1 - zeta^(2 tau2)) - 1)
        + L^2 eta^2 / (T N) (2 beta_var tau / (1 - zeta^(2 tau2)) + A) S,

    with A the constant of (101) (:func:`gossip_coefficient`) and
    S = sum over the local steps s of E||grad F(X_s)||_F^2 (the gradient of the global F at every
    node's model, defined in Appendix A-A: eq. (35) counting the paper's numbered equations from its
    start, which gives its own (17) for u_t; the LaTeX has no label there), a measured quantity. The
    left side it bounds is (L^2 / (T N)) sum_{t=1}^T E||X_t (I - J)||_F^2.
    """
    coefficient = variance_coefficient(tau1, tau2, zeta, beta_var) + gossip_coefficient(tau1, tau2, zeta)
    return local_drift_term(eta, L, sigma2, tau1, tau2, zeta) + (L * eta) ** 2 / (T * N) * coefficient * (
        local_grad_sum
    )


def quadratic_condition_lhs(x: Any, a: Any, b: Any) -> Any:
    """b x + a x^2 with x = eta L: the shape of every step-size condition here (<= 1)."""
    return b * x + a * x**2


def eta_condition_lhs(eta: Any, L: Any, tau1: Any, tau2: Any, zeta: Any) -> Any:
    """Left side of the step-size condition (eta) of Proposition 1: eta L + eta^2 L^2 A <= 1."""
    return quadratic_condition_lhs(eta * L, gossip_coefficient(tau1, tau2, zeta), 1)


def general_eta_condition_lhs(
    eta: Any, L: Any, N: Any, tau1: Any, tau2: Any, zeta: Any, beta_var: Any
) -> Any:
    """Left side of the general condition at the end of Appendix A (with Lemma 2's beta_var).

    eta L (1 + beta_var / N) + 2 eta^2 L^2 beta_var tau / (1 - zeta^(2 tau2)) + eta^2 L^2 A <= 1.
    With beta_var = 0 it is the condition (eta) of Proposition 1.
    """
    a = gossip_coefficient(tau1, tau2, zeta) + variance_coefficient(tau1, tau2, zeta, beta_var)
    return quadratic_condition_lhs(eta * L, a, 1 + beta_var / N)


def lemma1_condition_lhs(eta: Any, L: Any, N: Any, beta: Any) -> Any:
    """Left side of Lemma 1's condition eta L (1 + beta / N) <= 1.

    The paper's text takes beta = ||I - C||_2 (Assumption 1.6), but in the proof
    beta enters through Lemma 2, as the variance-growth parameter beta_var.
    """
    return eta * L * (1 + beta / N)


def eta_max(L: Any, tau1: Any, tau2: Any, zeta: Any) -> Any:
    """Largest eta satisfying the condition (eta) of Proposition 1 (closed form)."""
    return eta_max_from_quadratic(gossip_coefficient(tau1, tau2, zeta), 1, L)


def general_eta_max(L: Any, N: Any, tau1: Any, tau2: Any, zeta: Any, beta_var: Any) -> Any:
    """Largest eta satisfying the general condition at the end of Appendix A (closed form)."""
    a = gossip_coefficient(tau1, tau2, zeta) + variance_coefficient(tau1, tau2, zeta, beta_var)
    return eta_max_from_quadratic(a, 1 + beta_var / N, L)


def eta_max_from_quadratic(a: Any, b: Any, L: Any) -> Any:
    """Largest eta with b (eta L) + a (eta L)^2 <= 1, a >= 0, b > 0.

    The positive root of a x^2 + b x - 1 = 0 in its cancellation-free form
    x = 2 / (b + sqrt(b^2 + 4 a)), divided by L. a = inf gives 0.
    """
    return 2 / (b + sqrt(b**2 + 4 * a)) / L


# --- Non-i.i.d. data (issue 13): the heterogeneity-aware repair -------------------------------------
#
# Setting: node i holds f_i, F = (1/N) sum_i f_i, every f_i L-smooth, g_i unbiased for grad f_i(w_i) with
# E||g_i - grad f_i(w_i)||^2 <= sigma^2 (beta_var = 0), and the heterogeneity of Koloskova et al. (2020)
# / Lian et al. (2017): (1/N) sum_i ||grad f_i(w) - grad F(w)||^2 <= varsigma^2 (only needed at the
# average models u_s of the local steps). Derivation: see :func:`drift_term_repaired`.


def heterogeneity_factor(tau1: Any, tau2: Any, zeta: Any) -> Any:
    """h = (tau1^2 z / (1 - z) + (tau1 - 1)(2 tau1 - 1) / 6) / (1 - z), z = zeta^tau2.

    The heterogeneity part of the drift is 4 eta^2 L^2 varsigma^2 h (before the recursion factor):
    tau1^2 z / (1 - z) from the earlier rounds, (tau1 - 1)(2 tau1 - 1) / 6 the mean over a round's local
    steps i of (i - 1)^2, from the current one.
    """
    z, gap = zeta**tau2, one_minus_power(zeta, tau2)
    return (tau1**2 * z / gap + (tau1 - 1) * (2 * tau1 - 1) / 6) / gap


def drift_recursion_coefficient(tau1: Any, tau2: Any, zeta: Any) -> Any:
    """a_D = 4 / (1 - z) (tau1^2 z / (1 - z) + tau1 (tau1 - 1) / 2), z = zeta^tau2; rho_D = (eta L)^2 a_D."""
    z, gap = zeta**tau2, one_minus_power(zeta, tau2)
    return 4 / gap * (tau1**2 * z / gap + tau1 * (tau1 - 1) / 2)


def drift_recursion_factor(eta: Any, L: Any, tau1: Any, tau2: Any, zeta: Any) -> Any:
    """rho_D = (eta L)^2 a_D: the share of the drift that the drift itself feeds back (must be <= 1/2)."""
    return (eta * L) ** 2 * drift_recursion_coefficient(tau1, tau2, zeta)


def heterogeneity_term(eta: Any, L: Any, varsigma2: Any, tau1: Any, tau2: Any, zeta: Any) -> Any:
    """4 eta^2 L^2 varsigma^2 h / (1 - rho_D): the heterogeneity part of :func:`drift_term_repaired`."""
    rho = drift_recursion_factor(eta, L, tau1, tau2, zeta)
    return 4 * (eta * L) ** 2 * varsigma2 * heterogeneity_factor(tau1, tau2, zeta) / (1 - rho)


def drift_term_repaired(
    eta: Any, L: Any, sigma2: Any, varsigma2: Any, tau1: Any, tau2: Any, zeta: Any
) -> Any:
    """Bound on L^2 x the mean over the local steps t of E||X_t (I - J)||_F^2 / N, non-i.i.d. data.

        (2 eta^2 L^2 sigma^2 D_rep + 4 eta^2 L^2 varsigma^2 h) / (1 - rho_D),

    D_rep = :func:`drift_factor_repaired`, h = :func:`heterogeneity_factor`, rho_D =
    :func:`drift_recursion_factor`, valid when rho_D < 1 (the step-size condition asks rho_D <= 1/2,
    so that the factor is at most 2). An independent re-derivation (a review helper, 2026-11-26)
    found every step valid and no constant too small. Derivation, along the paper's A_1 / A_2 route
    (Appendix A), at local step t = j tau + i (i <= tau1), with Delta_t = E||X_t (I - J)||_F^2:

    1. (Reused) X_t (I - J) = -eta sum_{r <= j} Y_r (C^{(j-r) tau2} - J) and ||a + b||^2 <= 2||a||^2
       + 2||b||^2 split Delta_t into A_1 (the noise Y_r - Q_r) and A_2 (the gradients Q_r). A_1 is
       the paper's (64)-(79) unchanged (the noises are still martingale differences when
       E g_i = grad f_i): 2 eta^2 N sigma^2 (tau1 q / (1 - q) + i - 1), q = zeta^(2 tau2).
    2. (New) In A_2 the gradients are the nodes' own: Q_r = sum_s grad f(X_s). Since
       1^T (C^k - J) = 0, Q_r (C^k - J) = Z_r (C^k - J) with Z_r = sum_s E_s and
       E_s = grad f(X_s) - grad F(u_s) 1^T = D_s + H_s, D_s the columns grad f_i(w_i) - grad f_i(u_s)
       (||D_s||_F^2 <= L^2 ||X_s (I - J)||_F^2) and H_s the columns grad f_i(u_s) - grad F(u_s)
       (E||H_s||_F^2 <= N varsigma^2). The paper instead bounds ||Q_r|| by the global gradients
       grad F(X_s) and cancels them against Lemma 1's negative term; with f_i != F that term is
       -(1 - eta L) ||(1/N) sum_i grad f_i(w_i)||^2 and cannot absorb the per-node gradients.
    3. (Reused, Lemmas 5 and 7) ||sum_r Z_r (C^{(j-r) tau2} - J)||_F <= sum_r z^{j-r} ||Z_r||_F,
       z = zeta^tau2; Cauchy-Schwarz with weights z^{j-r} (sum <= 1 / (1 - z)) gives
       A_2 <= 2 eta^2 / (1 - z) sum_r z^{j-r} E||Z_r||^2, and E||Z_r||^2 <= m_r sum_s E||E_s||^2
       <= m_r sum_s (2 L^2 E||X_s (I - J)||^2 + 2 E||H_s||^2), m_r = tau1 (r < j) or i - 1 (r = j).
    4. (New) The H part at step i is at most 4 eta^2 N varsigma^2 / (1 - z) (tau1^2 z / (1 - z) +
       (i - 1)^2); the D part, summed over all local steps, is at most rho_D sum_s Delta_s (each
       Delta_s returns with weight tau1^2 z / (1 - z) from later rounds and at most
       tau1 (tau1 - 1) / 2 from its own). So sum_t Delta_t <= (sum A_1 + sum A_2^H) / (1 - rho_D).
    5. Averaging over the local steps (the mean of i - 1 is (tau1 - 1) / 2, of (i - 1)^2
       (tau1 - 1)(2 tau1 - 1) / 6; a shorter tail round has smaller means) and multiplying by
       L^2 / N gives the term.

    With varsigma^2 = 0 it is the i.i.d. repair's drift term divided by 1 - rho_D (the paper's
    cancellation in step 2 is then available again and gives the undivided term: ``bound_repaired``).
    """
    rho = drift_recursion_factor(eta, L, tau1, tau2, zeta)
    noise = 2 * (eta * L) ** 2 * sigma2 * drift_factor_repaired(tau1, tau2, zeta)
    hetero = 4 * (eta * L) ** 2 * varsigma2 * heterogeneity_factor(tau1, tau2, zeta)
    return (noise + hetero) / (1 - rho)


def non_iid_local_step_bound(
    eta: Any, L: Any, sigma2: Any, varsigma2: Any, N: Any, tau1: Any, tau2: Any, zeta: Any, K: Any, gap: Any
) -> Any:
    """The repaired Proposition 1 for non-i.i.d. data, a bound on the mean over the K tau1 local steps
    of E||grad F(u_t)||^2:

        2 gap / (eta K tau1) + eta L sigma^2 / N + drift_term_repaired,

    under eta L <= 1 and rho_D <= 1/2. Lemma 1 for f_i != F: with H_t = (1/N) sum_i grad f_i(w_i)
    (the mean update direction), -<grad F(u), H_t> = -||grad F(u)||^2 / 2 - ||H_t||^2 / 2
    + ||grad F(u) - H_t||^2 / 2 and ||grad F(u) - H_t||^2 <= (L^2 / N) ||X (I - J)||_F^2 (every f_i
    L-smooth, grad F(u) = (1/N) sum_i grad f_i(u)), so
    E F(u_{t+1}) <= F(u_t) - eta ||grad F(u_t)||^2 / 2 - eta (1 - eta L) ||H_t||^2 / 2
    + eta L^2 Delta_t / (2N) + eta^2 L sigma^2 / (2N) at a local step; summed over the local steps
    only (u does not move at gossip steps) and divided by eta K tau1 / 2 it gives the first two
    terms plus L^2 / N times the mean drift, bounded by :func:`drift_term_repaired`.
    """
    return (
        2 * gap / (eta * K * tau1)
        + eta * L * sigma2 / N
        + drift_term_repaired(eta, L, sigma2, varsigma2, tau1, tau2, zeta)
    )


def eta_max_non_iid(L: Any, tau1: Any, tau2: Any, zeta: Any) -> Any:
    """Largest eta with eta L <= 1 and rho_D = (eta L)^2 a_D <= 1/2: 1 / (L max(1, sqrt(2 a_D)))."""
    root = sqrt(2 * drift_recursion_coefficient(tau1, tau2, zeta))
    sympy = symbolic_namespace(root)
    return 1 / (L * (sympy.Max(1, root) if sympy is not None else np.maximum(1.0, root)))
