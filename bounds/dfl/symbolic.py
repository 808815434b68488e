"""Proposition 1 as sympy expressions, built by the same functions as the numbers.

Each expression is :mod:`bounds.dfl.formulas` called on sympy symbols, so the
symbolic and numeric answers cannot drift apart.

>>> print(latex("local_drift_term"))
2 L^{2} \\eta^{2} \\sigma^{2} \\left(\\frac{\\tau_{1}}{1 - \\zeta^{2 \\tau_{2}}} - 1\\right)
"""

from __future__ import annotations

from collections.abc import Callable

import sympy

from bounds._checks import InputError
from bounds.dfl import formulas as f

__all__ = [
    "EXPRESSIONS",
    "SYMBOLS",
    "corollary1",
    "corollary2",
    "expression",
    "latex",
    "limit_T_to_infinity",
    "pretty",
]

eta = sympy.Symbol("eta", positive=True)
L = sympy.Symbol("L", positive=True)
sigma2 = sympy.Symbol("sigma^2", nonnegative=True)
N = sympy.Symbol("N", positive=True, integer=True)
tau1 = sympy.Symbol("tau_1", positive=True, integer=True)
tau2 = sympy.Symbol("tau_2", nonnegative=True, integer=True)
zeta = sympy.Symbol("zeta", nonnegative=True)
T = sympy.Symbol("T", positive=True, integer=True)
gap = sympy.Symbol("Delta", nonnegative=True)  # F(u_1) - F_inf
beta_var = sympy.Symbol("beta_var", nonnegative=True)
varsigma2 = sympy.Symbol("varsigma^2", nonnegative=True)  # heterogeneity of non-i.i.d. data

SYMBOLS: dict[str, sympy.Symbol] = {
    "eta": eta,
    "L": L,
    "sigma2": sigma2,
    "N": N,
    "tau1": tau1,
    "tau2": tau2,
    "zeta": zeta,
    "T": T,
    "gap": gap,
    "beta_var": beta_var,
    "varsigma2": varsigma2,
}

_BUILDERS: dict[str, Callable[[], sympy.Expr]] = {
    "upper_bound": lambda: f.upper_bound(eta, L, sigma2, N, tau1, tau2, zeta, T, gap),
    "sync_sgd_term": lambda: f.sync_sgd_term(eta, L, sigma2, N, T, gap),
    "local_drift_term": lambda: f.local_drift_term(eta, L, sigma2, tau1, tau2, zeta),
    "limit_T_inf": lambda: f.limit_T_inf(eta, L, sigma2, N, tau1, tau2, zeta),
    "gossip_coefficient": lambda: f.gossip_coefficient(tau1, tau2, zeta),
    "eta_condition_lhs": lambda: f.eta_condition_lhs(eta, L, tau1, tau2, zeta),
    "general_eta_condition_lhs": lambda: f.general_eta_condition_lhs(eta, L, N, tau1, tau2, zeta, beta_var),
    "lemma1_condition_lhs": lambda: f.lemma1_condition_lhs(eta, L, N, beta_var),
    "eta_max": lambda: f.eta_max(L, tau1, tau2, zeta),
    "general_eta_max": lambda: f.general_eta_max(L, N, tau1, tau2, zeta, beta_var),
    "heterogeneity_term": lambda: f.heterogeneity_term(eta, L, varsigma2, tau1, tau2, zeta),
    "drift_term_repaired": lambda: f.drift_term_repaired(eta, L, sigma2, varsigma2, tau1, tau2, zeta),
    "drift_recursion_factor": lambda: f.drift_recursion_factor(eta, L, tau1, tau2, zeta),
    "eta_max_non_iid": lambda: f.eta_max_non_iid(L, tau1, tau2, zeta),
}
EXPRESSIONS = tuple(_BUILDERS)


def expression(name: str) -> sympy.Expr:
    """The sympy expression called ``name`` (one of :data:`EXPRESSIONS`)."""
    try:
        return _BUILDERS[name]()
    except KeyError:
        raise InputError(f"unknown expression {name!r} (expected one of: {', '.join(EXPRESSIONS)})") from None


def pretty(name: str) -> str:
    """Unicode pretty-print of :func:`expression`."""
    return sympy.pretty(expression(name), use_unicode=True)


def latex(name: str) -> str:
    """LaTeX of :func:`expression`."""
    return sympy.latex(expression(name))


def limit_T_to_infinity() -> sympy.Expr:
    """lim_{T -> oo} of eq. (upper-bound): must equal eq. (inftyT)."""
    return sympy.limit(expression("upper_bound"), T, sympy.oo)


def corollary1() -> sympy.Expr:
    """eq. (upper-bound) at tau1 = 1, tau2 -> oo, for 0 < zeta < 1 (Corollary 1).

    zeta is written exp(-r) with r > 0 so that sympy knows zeta < 1.
    """
    r = sympy.Symbol("r", positive=True)
    bound = expression("upper_bound").subs({tau1: 1, zeta: sympy.exp(-r)})
    return sympy.simplify(sympy.limit(bound, tau2, sympy.oo))


def corollary2() -> sympy.Expr:
    """eq. (upper-bound) at zeta = 0, tau2 >= 1 (Corollary 2)."""
    t2 = sympy.Symbol("tau_2", positive=True, integer=True)
    return sympy.simplify(expression("upper_bound").subs(tau2, t2).subs(zeta, 0))
