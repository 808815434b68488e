"""Closed forms of the finite sums used in the paper's proofs, as the paper states them.

Each function returns the closed form (and, where the proof bounds it, the
bound); the tests compare them with brute-force sums. Like
:mod:`bounds.dfl.formulas`, they are plain arithmetic and work on numbers, numpy
arrays and sympy symbols.

Finding (Lemma 13, Appendix B): the paper prints
``sum_{j=0}^{tau1-1} j^5 = (tau1-1)^2 tau1^2 (2 tau^2 - 2 tau1 - 1) / 12`` with
tau = tau1 + tau2. That is wrong whenever tau2 > 0; the correct closed form,
:func:`sum_j5`, has tau1 in place of tau. The bound ``<= tau1^6 / 6`` that the
proof uses holds for the correct form.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "a2_round_sum",
    "a2_round_sum_bound",
    "geometric_79",
    "geometric_79_bound",
    "geometric_92_full",
    "geometric_92_full_bound",
    "geometric_92_tail",
    "geometric_92_tail_bound",
    "sum_j5",
    "sum_j5_as_printed",
    "sum_j5_bound",
]


def geometric_79(zeta: Any, tau2: Any, j: Any) -> Any:
    """Before (79): sum_{r=0}^{j-1} zeta^(2 tau2 (j-r)).

    Closed form q (1 - q^j) / (1 - q) with q = zeta^(2 tau2).
    """
    q = zeta ** (2 * tau2)
    return q * (1 - q**j) / (1 - q)


def geometric_79_bound(zeta: Any, tau2: Any) -> Any:
    """The bound used in (79): zeta^(2 tau2) / (1 - zeta^(2 tau2))."""
    q = zeta ** (2 * tau2)
    return q / (1 - q)


def geometric_92_full(zeta: Any, tau2: Any, j: Any) -> Any:
    """Before (92): sum_{l=0}^{j} zeta^(tau2 l) = (1 - zeta^(tau2 (j+1))) / (1 - zeta^tau2).

    The proof uses it to bound sum_{l=0, l != n}^{j} zeta^(tau2 (j - l)).
    """
    q = zeta**tau2
    return (1 - q ** (j + 1)) / (1 - q)


def geometric_92_full_bound(zeta: Any, tau2: Any) -> Any:
    """The bound used in (92): 1 / (1 - zeta^tau2)."""
    return 1 / (1 - zeta**tau2)


def geometric_92_tail(zeta: Any, tau2: Any, j: Any) -> Any:
    """Before (92): sum_{l=0}^{j-1} zeta^(tau2 (j-l)) = zeta^tau2 (1 - zeta^(tau2 j)) / (1 - zeta^tau2)."""
    q = zeta**tau2
    return q * (1 - q**j) / (1 - q)


def geometric_92_tail_bound(zeta: Any, tau2: Any) -> Any:
    """The bound used in (92): zeta^tau2 / (1 - zeta^tau2)."""
    q = zeta**tau2
    return q / (1 - q)


def a2_round_sum(zeta: Any, tau2: Any, m: Any) -> Any:
    """Before (101): sum_{j=1}^{m} (zeta^(2 tau2 j) + zeta^(tau2 j) / (1 - zeta^tau2)), closed form."""
    q = zeta**tau2
    return q**2 * (1 - q ** (2 * m)) / (1 - q**2) + q * (1 - q**m) / (1 - q) ** 2


def a2_round_sum_bound(zeta: Any, tau2: Any) -> Any:
    """The bound used before (101): zeta^(2 tau2) / (1 - zeta^(2 tau2)) + zeta^tau2 / (1 - zeta^tau2)^2."""
    q = zeta**tau2
    return q**2 / (1 - q**2) + q / (1 - q) ** 2


def sum_j5(tau1: Any) -> Any:
    """sum_{j=0}^{tau1-1} j^5 = (tau1-1)^2 tau1^2 (2 tau1^2 - 2 tau1 - 1) / 12 (correct form)."""
    return (tau1 - 1) ** 2 * tau1**2 * (2 * tau1**2 - 2 * tau1 - 1) / 12


def sum_j5_as_printed(tau1: Any, tau2: Any) -> Any:
    """Lemma 13's closed form exactly as printed, with tau = tau1 + tau2 (wrong for tau2 > 0)."""
    tau = tau1 + tau2
    return (tau1 - 1) ** 2 * tau1**2 * (2 * tau**2 - 2 * tau1 - 1) / 12


def sum_j5_bound(tau1: Any) -> Any:
    """The bound used in Lemma 13: tau1^6 / 6."""
    return tau1**6 / 6
