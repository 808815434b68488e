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

from dataclasses import dataclass

import sympy

from bounds.dfl import formulas as f

__all__ = ["DerivativeSign", "drift_monotonicity"]


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


def drift_monotonicity() -> list[DerivativeSign]:
    """Derivatives of the local-drift term in tau1, tau2, zeta with the sign sympy proves on the domain."""
    eta, L, sigma2 = (sympy.Symbol(n, positive=True) for n in ("eta", "L", "sigma2"))
    tau1, tau2 = sympy.Symbol("tau1", positive=True), sympy.Symbol("tau2", positive=True)
    zeta, r, s = (
        sympy.Symbol("zeta", positive=True),
        sympy.Symbol("r", positive=True),
        sympy.Symbol("s", positive=True),
    )
    drift = f.local_drift_term(eta, L, sigma2, tau1, tau2, zeta)
    claims = {tau1: "increases with tau1 (Remark 1)", tau2: "decreases with tau2 (Remark 1)",
              zeta: "increases with zeta (Remark 2)"}  # fmt: skip
    results = []
    for variable, claim in claims.items():
        derivative = sympy.diff(drift, variable)
        substituted = sympy.simplify(derivative.subs(zeta, sympy.exp(-r)))
        substituted = sympy.simplify(substituted.subs(sympy.exp(2 * r * tau2), 1 + s))
        results.append(DerivativeSign(str(variable), derivative, substituted, _sign(substituted), claim))
    return results
