"""Proposition 1 as sympy expressions, built by the same functions as the numbers.

Each expression is :mod:`bounds.dfl.formulas` called on sympy symbols, so the
symbolic and numeric answers cannot drift apart.

>>> print(latex("local_drift_term"))
2 L^{2} \\eta^{2} \\sigma^{2} \\left(\\frac{\\tau_{1}}{1 - \\zeta^{2 \\tau_{2}}} - 1\\right)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bounds._checks import one_of
from bounds.dfl import formulas as f

if TYPE_CHECKING:
    import sympy

    SYMBOLS: dict[str, sympy.Symbol]  # made on first use: see __getattr__

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


@functools.cache
def _symbols() -> dict[str, sympy.Symbol]:
    """The paper's symbols, made on first use: sympy (about 0.4 s to import) loads only when an expression
    is asked for, not with ``dfl-bounds`` or :mod:`bounds`."""
    import sympy

    return {
        "eta": sympy.Symbol("eta", positive=True),
        "L": sympy.Symbol("L", positive=True),
        "sigma2": sympy.Symbol("sigma^2", nonnegative=True),
        "N": sympy.Symbol("N", positive=True, integer=True),
        "tau1": sympy.Symbol("tau_1", positive=True, integer=True),
        "tau2": sympy.Symbol("tau_2", nonnegative=True, integer=True),
        "zeta": sympy.Symbol("zeta", nonnegative=True),
        "T": sympy.Symbol("T", positive=True, integer=True),
        "gap": sympy.Symbol("Delta", nonnegative=True),  # F(u_1) - F_inf
        "beta_var": sympy.Symbol("beta_var", nonnegative=True),
        "varsigma2": sympy.Symbol("varsigma^2", nonnegative=True),  # heterogeneity of non-i.i.d. data
        # the repairs' K: their local steps / tau1 (floor(T / tau) rounds, plus tail / tau1 for a tail)
        "K": sympy.Symbol("K", positive=True),
    }


def __getattr__(name: str) -> Any:
    """``SYMBOLS``: the name -> sympy.Symbol table (made on first use, see :func:`_symbols`)."""
    if name == "SYMBOLS":
        return _symbols()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _while_closed(s: dict[str, Any], term: sympy.Expr) -> sympy.Expr:
    """``term`` where the drift recursion closes (rho_D < 1), +oo elsewhere, as the numbers have it
    (:func:`bounds.dfl_bound`): the closed form alone turns negative beyond (it gave -1.99 where the numbers
    gave inf)."""
    import sympy

    rho = f.drift_recursion_factor(s["eta"], s["L"], s["tau1"], s["tau2"], s["zeta"])
    return sympy.Piecewise((term, rho < 1), (sympy.oo, True))


_BUILDERS: dict[str, Callable[[dict[str, Any]], sympy.Expr]] = {
    "upper_bound": lambda s: f.upper_bound(s["eta"], s["L"], s["sigma2"], s["N"], s["tau1"], s["tau2"],
                                           s["zeta"], s["T"], s["gap"]),
    "sync_sgd_term": lambda s: f.sync_sgd_term(s["eta"], s["L"], s["sigma2"], s["N"], s["T"], s["gap"]),
    "local_drift_term": lambda s: f.local_drift_term(s["eta"], s["L"], s["sigma2"], s["tau1"], s["tau2"],
                                                     s["zeta"]),
    "limit_T_inf": lambda s: f.limit_T_inf(s["eta"], s["L"], s["sigma2"], s["N"], s["tau1"], s["tau2"],
                                           s["zeta"]),
    "gossip_coefficient": lambda s: f.gossip_coefficient(s["tau1"], s["tau2"], s["zeta"]),
    "eta_condition_lhs": lambda s: f.eta_condition_lhs(s["eta"], s["L"], s["tau1"], s["tau2"], s["zeta"]),
    "general_eta_condition_lhs": lambda s: f.general_eta_condition_lhs(s["eta"], s["L"], s["N"], s["tau1"],
                                                                       s["tau2"], s["zeta"], s["beta_var"]),
    "lemma1_condition_lhs": lambda s: f.lemma1_condition_lhs(s["eta"], s["L"], s["N"], s["beta_var"]),
    "eta_max": lambda s: f.eta_max(s["L"], s["tau1"], s["tau2"], s["zeta"]),
    "general_eta_max": lambda s: f.general_eta_max(s["L"], s["N"], s["tau1"], s["tau2"], s["zeta"],
                                                   s["beta_var"]),
    "heterogeneity_term": lambda s: _while_closed(s, f.heterogeneity_term(s["eta"], s["L"], s["varsigma2"],
                                                                          s["tau1"], s["tau2"], s["zeta"])),
    "drift_term_repaired": lambda s: _while_closed(s, f.drift_term_repaired(
        s["eta"], s["L"], s["sigma2"], s["varsigma2"], s["tau1"], s["tau2"], s["zeta"])),
    "drift_recursion_factor": lambda s: f.drift_recursion_factor(s["eta"], s["L"], s["tau1"], s["tau2"],
                                                                 s["zeta"]),
    "eta_max_non_iid": lambda s: f.eta_max_non_iid(s["L"], s["tau1"], s["tau2"], s["zeta"]),
    # dfl_bound's fields of the same names, with K its local steps / tau1 (README Findings 0 and 6)
    "bound_repaired": lambda s: f.candidate_local_step_bound(s["eta"], s["L"], s["sigma2"], s["N"], s["tau1"],
                                                             s["tau2"], s["zeta"], s["K"], s["gap"]),
    "bound_non_iid": lambda s: _while_closed(s, f.non_iid_local_step_bound(
        s["eta"], s["L"], s["sigma2"], s["varsigma2"], s["N"], s["tau1"], s["tau2"], s["zeta"], s["K"],
        s["gap"])),
}  # fmt: skip
EXPRESSIONS = tuple(_BUILDERS)


def expression(name: str) -> sympy.Expr:
    """The sympy expression called ``name`` (one of :data:`EXPRESSIONS`)."""
    return _BUILDERS[one_of("expression", name, EXPRESSIONS)](_symbols())


def pretty(name: str) -> str:
    """Unicode pretty-print of :func:`expression`."""
    import sympy

    return sympy.pretty(expression(name), use_unicode=True)


def latex(name: str) -> str:
    """LaTeX of :func:`expression`."""
    import sympy

    return sympy.latex(expression(name))


def limit_T_to_infinity() -> sympy.Expr:
    """lim_{T -> oo} of eq. (upper-bound): must equal eq. (inftyT)."""
    import sympy

    return sympy.limit(expression("upper_bound"), _symbols()["T"], sympy.oo)


def corollary1() -> sympy.Expr:
    """eq. (upper-bound) at tau1 = 1, tau2 -> oo, for 0 < zeta < 1 (Corollary 1).

    zeta is written exp(-r) with r > 0 so that sympy knows zeta < 1.
    """
    import sympy

    s = _symbols()
    r = sympy.Symbol("r", positive=True)
    bound = expression("upper_bound").subs({s["tau1"]: 1, s["zeta"]: sympy.exp(-r)})
    return sympy.simplify(sympy.limit(bound, s["tau2"], sympy.oo))


def corollary2() -> sympy.Expr:
    """eq. (upper-bound) at zeta = 0, tau2 >= 1 (Corollary 2)."""
    import sympy

    s = _symbols()
    t2 = sympy.Symbol("tau_2", positive=True, integer=True)
    return sympy.simplify(expression("upper_bound").subs(s["tau2"], t2).subs(s["zeta"], 0))
