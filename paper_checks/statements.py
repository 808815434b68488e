"""Claims as data: the bounds, orderings and closed forms that the checks test.

A check measures (an exact recursion, a Monte Carlo, a training run) and then judges a
*statement* given to it; the paper's statement is the default, and the tests hand every check a
deliberately wrong one to see it come out ``violated`` (tests/test_check_mutations.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bounds.dfl import formulas as f

__all__ = [
    "COROLLARY_1",
    "COROLLARY_2",
    "NON_IID_REPAIR",
    "PROPOSITION_1",
    "REPAIR",
    "Bound",
    "Cell",
    "exceeds",
    "floored_ratio",
    "judge_cells",
    "public_rows",
    "ratio",
    "scaled",
]


@dataclass(frozen=True)
class Cell:
    """The constants of one test problem, in the paper's notation (T = K (tau1 + tau2))."""

    eta: float
    L: float
    sigma2: float
    N: int
    tau1: int
    tau2: int
    zeta: float
    K: int
    gap: float
    varsigma2: float = 0.0
    """Heterogeneity of non-i.i.d. data (0: the paper's i.i.d. setting)."""

    @property
    def T(self) -> int:
        return self.K * (self.tau1 + self.tau2)


@dataclass(frozen=True)
class Bound:
    """The inequality ``E[average of ||grad F(u_t)||^2] <= rhs(cell)``.

    ``over`` says which steps the left side averages: ``"all"`` (the paper's (1/T) sum_{t=1}^T) or
    ``"local"`` (the K tau1 local steps only, our repair).
    """

    name: str
    rhs: Callable[[Cell], float]
    over: str = "all"

    def __post_init__(self) -> None:
        if self.over not in ("all", "local"):
            raise ValueError(f"over = {self.over!r} (expected 'all' or 'local')")


def _prop1(c: Cell) -> float:
    return f.upper_bound(c.eta, c.L, c.sigma2, c.N, c.tau1, c.tau2, c.zeta, c.T, c.gap)


def _sync(c: Cell) -> float:
    return f.sync_sgd_term(c.eta, c.L, c.sigma2, c.N, c.T, c.gap)


def _corollary2(c: Cell) -> float:
    return _sync(c) + 2 * c.eta**2 * c.L**2 * c.sigma2 * (c.tau1 - 1)


def _repair(c: Cell) -> float:
    return f.candidate_local_step_bound(c.eta, c.L, c.sigma2, c.N, c.tau1, c.tau2, c.zeta, c.K, c.gap)


PROPOSITION_1 = Bound("Proposition 1, eq. (upper-bound)", _prop1)
COROLLARY_1 = Bound("Corollary 1: 2 gap / (eta T) + eta L sigma^2 / N", _sync)
COROLLARY_2 = Bound("Corollary 2: Corollary 1 + 2 eta^2 L^2 sigma^2 (tau1 - 1)", _corollary2)


def _non_iid(c: Cell) -> float:
    args = (c.eta, c.L, c.sigma2, c.varsigma2, c.N, c.tau1, c.tau2, c.zeta, c.K, c.gap)
    return f.non_iid_local_step_bound(*args)


REPAIR = Bound("our repair (local-step average)", _repair, over="local")
NON_IID_REPAIR = Bound("our non-i.i.d. repair (local-step average)", _non_iid, over="local")


def scaled(bound: Bound, factor: float) -> Bound:
    """``bound`` with its right side multiplied by ``factor`` (mutants and loose true statements)."""
    return Bound(f"{factor:g} x {bound.name}", lambda c: factor * bound.rhs(c), bound.over)


def ratio(lhs: float, rhs: float) -> float:
    """lhs / rhs, inf where the bound is 0 and the left side is not, NaN where a side is NaN."""
    if math.isnan(lhs) or math.isnan(rhs):
        return math.nan
    if rhs > 0:
        return lhs / rhs
    return 0.0 if lhs <= 0 else float("inf")


def exceeds(lhs: float, rhs: float, floor: float = 0.0, rtol: float = 1e-9) -> bool:
    """lhs > rhs beyond rounding: sides at or below ``floor`` (the rounding floor of an exact
    computation) count as 0, and the excess must be more than ``rtol`` (relative)."""
    lhs, rhs = (0.0 if v <= floor else v for v in (lhs, rhs))
    return lhs > rhs * (1 + rtol)


def floored_ratio(lhs: float, rhs: float, floor: float = 0.0) -> float:
    """:func:`ratio` with sides at or below ``floor`` counted as 0 (no ratios of rounding noise)."""
    return ratio(*(0.0 if v <= floor else v for v in (lhs, rhs)))


def undefined(*values: float) -> bool:
    """Whether a side of a comparison is NaN: NaN compares false with everything, so a cell with one would
    count as neither failing nor holding, and a statement of NaNs would 'hold' everywhere."""
    return any(math.isnan(v) for v in values)


def cell_verdict(violations: int, undefined_cells: int) -> str:
    """'violated' where some cell fails, else 'inconclusive' where some cell has a NaN side, else 'holds'."""
    return "violated" if violations else "inconclusive" if undefined_cells else "holds"


def undefined_note(count: int, what: str) -> str:
    """The sentence a summary adds for ``count`` cells with a NaN side (empty for none)."""
    return f" {what} is NaN in {count} cells: no verdict there." if count else ""


def judge_cells(rows: list[dict[str, Any]], bound: Bound, rtol: float = 1e-9) -> dict[str, Any]:
    """Evaluate ``bound`` on exact cells (each row has 'cell', 'lhs_all', 'lhs_local' and optionally
    'rounding', the absolute rounding floor of its exact computation).

    Adds 'lhs', 'rhs', 'ratio' to every row (the left side the bound names) and returns the
    verdict: 'violated' if some left side exceeds its bound by more than ``rtol`` (relative) and
    the rounding floor, 'inconclusive' if a side is NaN somewhere (and nothing is violated), else 'holds'.
    """
    for r in rows:
        r["lhs"] = r["lhs_all"] if bound.over == "all" else r["lhs_local"]
        r["rhs"] = float(bound.rhs(r["cell"]))
        r["ratio"] = floored_ratio(r["lhs"], r["rhs"], r.get("rounding", 0.0))
    bad = [r for r in rows if exceeds(r["lhs"], r["rhs"], r.get("rounding", 0.0), rtol)]
    nan_rows = [r for r in rows if undefined(r["lhs"], r["rhs"])]  # no verdict there
    worst = max(rows, key=lambda r: r["ratio"] if not math.isnan(r["ratio"]) else -math.inf)
    status = cell_verdict(len(bad), len(nan_rows))
    return {"status": status, "cells": len(rows), "violations": len(bad), "undefined": len(nan_rows),
            "worst": worst}  # fmt: skip


def public_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows for the report: the cell's constants inlined, nothing that is not plain data."""
    out = []
    for r in rows:
        c = r["cell"]
        head = {"tau1": c.tau1, "tau2": c.tau2, "K": c.K, "zeta": round(c.zeta, 4), "N": c.N}
        head |= {"sigma2": c.sigma2, "eta": c.eta} | ({"varsigma2": c.varsigma2} if c.varsigma2 else {})
        out.append(head | {k: v for k, v in r.items() if k != "cell"})
    return out
