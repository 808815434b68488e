"""Remarks 1 and 2 proved with sympy: the sign of each derivative of the local-drift term.

The local-drift term 2 eta^2 L^2 sigma^2 (tau1 / (1 - zeta^(2 tau2)) - 1) of
Proposition 1, on the domain eta, L, sigma^2 > 0, tau1 >= 1, tau2 >= 1 and
0 < zeta < 1, with tau1 and tau2 treated as real variables:

* d/d tau1 > 0 (Remark 1: the bound increases with tau1);
* d/d tau2 < 0 (Remark 1: it decreases with tau2);
* d/d zeta > 0 (Remark 2: it increases with zeta).

sympy cannot use 0 < zeta < 1 directly, so the proofs change variables:
zeta = exp(-r) with r > 0 (exactly the interval (0, 1)), and, where a factor
exp(2 r tau2) - 1 remains, exp(2 r tau2) = 1 + s with s > 0 (exactly r tau2 > 0).
After the substitution the sign must follow from sympy's assumptions alone; a
``None`` sign means sympy could not prove it (the tests then fail).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from bounds.dfl import formulas as f

__all__ = ["DerivativeSign", "derivative_signs", "drift_monotonicity", "heterogeneity_monotonicity"]


@dataclass(frozen=True)
class DerivativeSign:
    """The derivative of the drift term in one variable and the sign sympy proved (or None)."""

    variable: str
    derivative: sympy.Expr
    substituted: sympy.Expr
    sign: str | None
    claim: str


def _sign(expr: sympy.Expr) -> str | None:
    if expr.is_positive:
        return "positive"
    if expr.is_negative:
        return "negative"
    return None


_TAU1, _TAU2 = sympy.Symbol("tau1", positive=True), sympy.Symbol("tau2", positive=True)
_ZETA, _R, _S = (sympy.Symbol(n, positive=True) for n in ("zeta", "r", "s"))
_P = sympy.Symbol("p", nonnegative=True)


def derivative_signs(
    expr: sympy.Expr, claims: dict[sympy.Symbol, str], substitute: Callable[[sympy.Expr], sympy.Expr]
) -> list[DerivativeSign]:
    """The derivative of ``expr`` in each variable of ``claims``, and its sign after ``substitute``."""
    results = []
    for variable, claim in claims.items():
        derivative = sympy.diff(expr, variable)
        substituted = substitute(derivative)
        results.append(DerivativeSign(str(variable), derivative, substituted, _sign(substituted), claim))
    return results


def drift_monotonicity() -> list[DerivativeSign]:
    """Derivatives of the local-drift term in tau1, tau2, zeta with the sign sympy proves on the domain."""
    eta, L, sigma2 = (sympy.Symbol(n, positive=True) for n in ("eta", "L", "sigma2"))
    drift = f.local_drift_term(eta, L, sigma2, _TAU1, _TAU2, _ZETA)
    claims = {_TAU1: "increases with tau1 (Remark 1)", _TAU2: "decreases with tau2 (Remark 1)",
              _ZETA: "increases with zeta (Remark 2)"}  # fmt: skip

    def substitute(derivative: sympy.Expr) -> sympy.Expr:
        substituted = sympy.simplify(derivative.subs(_ZETA, sympy.exp(-_R)))
        return sympy.simplify(substituted.subs(sympy.exp(2 * _R * _TAU2), 1 + _S))

    return derivative_signs(drift, claims, substitute)


def heterogeneity_monotonicity() -> dict[str, list[DerivativeSign]]:
    """Remarks 1 and 2 for the heterogeneity term of non-i.i.d. data (issue 13).

    heterogeneity_term = 4 eta^2 L^2 varsigma^2 h / (1 - (eta L)^2 a_D) increases with h and with
    a_D wherever (eta L)^2 a_D < 1, so it moves with tau1, tau2, zeta as h and a_D both do. Proved
    here for h = :func:`bounds.dfl.formulas.heterogeneity_factor` and a_D =
    :func:`bounds.dfl.formulas.drift_recursion_coefficient`, with zeta = exp(-r), zeta^tau2 =
    1 / (1 + s) (s > 0 is exactly r tau2 > 0) and tau1 = 1 + p (p >= 0).
    """
    claims = {_TAU1: "increases with tau1 (Remark 1)", _TAU2: "decreases with tau2 (Remark 1)",
              _ZETA: "increases with zeta (Remark 2)"}  # fmt: skip

    def substitute(derivative: sympy.Expr) -> sympy.Expr:
        substituted = derivative.subs(_ZETA, sympy.exp(-_R))
        substituted = substituted.subs(sympy.exp(-_R * _TAU2), 1 / (1 + _S)).subs(_TAU1, 1 + _P)
        return sympy.factor(sympy.simplify(substituted))

    return {
        "heterogeneity_factor": derivative_signs(
            f.heterogeneity_factor(_TAU1, _TAU2, _ZETA), claims, substitute
        ),
        "drift_recursion_coefficient": derivative_signs(
            f.drift_recursion_coefficient(_TAU1, _TAU2, _ZETA), claims, substitute
        ),
    }
