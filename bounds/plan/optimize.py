"""The best (tau1, tau2, eta) under a compute / communication budget, by a DFL bound.

Cost model: a local step costs ``t_comp`` seconds and a gossip step ``t_comm``
seconds (or ``latency + bits / bandwidth`` for a float32 model of dimension
``dim``). A round costs tau1 t_comp + tau2 t_comm; the budget (seconds, and/or
caps on local and gossip steps) fits K whole rounds, so T = K (tau1 + tau2).

For each (tau1, tau2) every bound here is, as a function of eta,

    f(eta) = 2 gap / (eta S) + eta L sigma^2 / N + 2 eta^2 L^2 sigma^2 D, with

    ``bound="repaired"`` (default): S = K tau1 (local steps only),
        D = tau1 q / (1 - q) + (tau1 - 1) / 2, q = zeta^(2 tau2): our repair of Proposition 1
        (formulas.candidate_local_step_bound; identical nodes, independent noises);
    ``bound="paper"`` (alias "proposition1"): S = T = K (tau1 + tau2),
        D = tau1 / (1 - q) - 1: Proposition 1 as stated, which is refuted (README Finding 0);
    ``bound="corrected"``: S = T, D = tau1 / (1 - q) (formulas.local_drift_term_corrected): it
        still counts gossip steps in T, so the same counterexample refutes it.

``bound="non-iid"`` (non-i.i.d. data, heterogeneity varsigma^2) is not of that form: its drift term
is formulas.drift_term_repaired, (2 eta^2 L^2 sigma^2 D_rep + 4 eta^2 L^2 varsigma^2 h) / (1 - rho_D),
rho_D growing with eta, and S = K tau1; eta is at most formulas.eta_max_non_iid (rho_D <= 1/2).

With S = T, cheap gossip steps lower 2 gap / (eta T) without any descent, and the optimiser
piles them up; the repair counts only the local steps.

f is convex on eta > 0, so the best admissible eta is the root of f' clipped to
(0, eta_max], eta_max the largest eta satisfying (eta). The root is found by
bisection on log(eta), vectorised over the whole grid, then the best cell wins;
the non-i.i.d. bound, unimodal in eta, by golden sections on log(eta). A fixed
eta (``eta=``) is taken in the cells whose eta_max admits it.
The answer is only as good as the bound: the choice of bound is a parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import numpy as np

from bounds._checks import MAX_EXACT_INTEGER, InputError, check_one_node, one_of, real_number, whole_number
from bounds.dfl import formulas as f
from bounds.dfl import proposition1
from bounds.plan.cost import CostModel
from bounds.result import Result

__all__ = [
    "ALIASES",
    "BOUNDS",
    "CostModel",
    "OptimizeResult",
    "budget_grid",
    "grid_edge_notes",
    "optimize_dfl",
    "pick",
]

BOUNDS = ("repaired", "non-iid", "paper", "corrected")
ALIASES = {"proposition1": "paper"}
REFUTED = {
    "paper": "bound 'paper' is Proposition 1 as stated, which is refuted (README Finding 0: gossip steps "
    "count in T without descent); use the default 'repaired'",
    "corrected": "bound 'corrected' still counts gossip steps in T and is refuted by Proposition 1's "
    "counterexample; use the default 'repaired'",
}
_BISECTION_STEPS = 80  # (halvings of log eta's window; golden sections take twice as many)
MAX_GRID_CELLS = 4_000_000  # (tau1, tau2) cells: ~100 bytes each across the grid's arrays


@dataclass(frozen=True)
class OptimizeResult(Result):
    """The optimum, the runners-up and the whole grid (like scipy's OptimizeResult).

    Attributes:
        tau1, tau2, eta, bound, rounds, steps, time: the best cell (time in seconds).
        eta_max: the step-size limit (eta) at the best cell. For C-DFL (:func:`optimize_cdfl`) the step is
            a schedule, eta_k = 4 / (mu (a + k)), taken at the smallest a its conditions admit: ``eta`` is
            its eta_0, which is then also the largest eta_0 admitted, ``eta_max``.
        runners_up: the next best cells, best first (list of dicts).
        grid: every cell as a pandas DataFrame (``grid_frame()``), or the raw arrays.
        success: whether any cell has a finite bound; message: why not, or notes. When none has,
            the best cell's fields are NaN (tau1, tau2, rounds, steps: 0) and ``message`` says why.
        compressor, parameter, delta: the best cell's compressor, its parameter and its delta
            (:func:`bounds.plan.optimize_cdfl.optimize_cdfl`; None for DFL).
    """

    not_in_dict: ClassVar[tuple[str, ...]] = ("grid",)
    when_set: ClassVar[tuple[str, ...]] = ("compressor", "parameter", "delta")

    tau1: int
    tau2: int
    eta: float
    bound: float
    rounds: int
    steps: int
    time: float
    eta_max: float
    runners_up: list[dict[str, Any]]
    success: bool
    message: str
    grid: dict[str, np.ndarray] = field(repr=False)
    compressor: str | None = None
    parameter: float | None = None
    delta: float | None = None

    def grid_frame(self) -> Any:
        """The whole grid as a DataFrame, one row per (tau1, tau2)."""
        import pandas as pd

        return pd.DataFrame({k: v.ravel() for k, v in self.grid.items()})

    @classmethod
    def nothing_finite(cls, message: str, grid: dict[str, np.ndarray]) -> OptimizeResult:
        """The result when no cell of ``grid`` has a finite bound: ``success`` False, ``message`` why."""
        nan = float("nan")
        return cls(
            tau1=0, tau2=0, eta=nan, bound=nan, rounds=0, steps=0, time=nan, eta_max=nan, runners_up=[],
            success=False, message=message, grid=grid,
        )  # fmt: skip


def _golden_eta(value_at: Callable[[np.ndarray], np.ndarray], eta_max: np.ndarray) -> np.ndarray:
    """argmin over 0 < eta <= eta_max of a unimodal ``value_at``, vectorised: golden sections in log eta over
    e^-80 of eta_max, moved down by e^-80 at a time for the cells whose minimum is at the window's low end
    (extreme inputs: gap = 1e-80 put it near e^-95 eta_max, and the window's edge was returned)."""
    top = np.log(eta_max)
    ratio = (np.sqrt(5.0) - 1) / 2
    best = top.copy()
    todo = np.ones(np.shape(top), dtype=bool)
    for window in range(10):  # down to e^-800 eta_max: below float64's smallest numbers
        high_end = np.where(todo, top - 80.0 * window, top)
        low, high = high_end - 80.0, high_end
        for _ in range(_BISECTION_STEPS * 2):
            left, right = high - ratio * (high - low), low + ratio * (high - low)
            keep_left = value_at(np.exp(left)) <= value_at(np.exp(right))
            high, low = np.where(keep_left, right, high), np.where(keep_left, low, left)
        found = 0.5 * (low + high)
        # the window's answer where it is better (a minimum just inside the last window stays)
        better = todo & ((window == 0) | (value_at(np.exp(found)) < value_at(np.exp(best))))
        best = np.where(better, found, best)
        todo = todo & (found < high_end - 80.0 + 1e-6)  # at the low edge: the minimum may lie below
        if not todo.any():
            break
    return np.exp(best)


def _best_eta(a: np.ndarray, b: np.ndarray, c: np.ndarray, eta_max: np.ndarray) -> np.ndarray:
    """argmin over 0 < eta <= eta_max of a / eta + b eta + c eta^2 (a > 0, b, c >= 0), vectorised."""
    best = eta_max.copy()
    with np.errstate(over="ignore"):  # an infinite slope is a positive one
        slope_at_max = -a / eta_max**2 + b + 2 * c * eta_max
    inside = (slope_at_max > 0) & (eta_max > 0)
    if inside.any():
        aa, bb, cc, top = a[inside], b[inside], c[inside], eta_max[inside]
        # the root has a / eta^2 = b + 2 c eta <= b + 2 c eta_max: it lies above sqrt(a / (b + 2 c eta_max))
        # (a fixed e^-80 of eta_max cut it off for gap = 1e-80, and returned that edge as the optimum)
        # (in logs: b + 2 c eta_max itself may overflow)
        low = 0.5 * (np.log(aa) - np.logaddexp(np.log(bb), np.log(2 * cc) + np.log(top)))
        high = np.log(top)
        for _ in range(_BISECTION_STEPS):
            mid = 0.5 * (low + high)
            eta = np.exp(mid)
            up = -aa / eta**2 + bb + 2 * cc * eta > 0
            high = np.where(up, mid, high)
            low = np.where(up, low, mid)
        best[inside] = np.exp(0.5 * (low + high))
    return best


def optimize_dfl(
    *,
    L: float,
    sigma2: float,
    N: int,
    gap: float,
    zeta: float | None = None,
    cost: CostModel,
    C: Any = None,
    budget_seconds: float | None = None,
    max_local_steps: int | None = None,
    max_gossip_steps: int | None = None,
    max_tau1: int = 50,
    max_tau2: int = 50,
    bound: str = "repaired",
    runners_up: int = 5,
    heterogeneity: float = 0.0,
    eta: float | None = None,
) -> OptimizeResult:
    """Minimise a DFL bound over tau1 in 1..max_tau1, tau2 in 1..max_tau2 and eta <= eta_max of (eta).

    Args:
        L, sigma2, N, gap, zeta: the problem (as in :func:`bounds.dfl_bound`); gap > 0.
        C: a mixing matrix (dense or scipy sparse) instead of ``zeta``; its zeta is computed
            (:func:`bounds.zeta`).
        cost: seconds per local and per gossip step.
        budget_seconds, max_local_steps, max_gossip_steps: the budget; at least one.
        max_tau1, max_tau2: the grid.
        bound: ``"repaired"`` (default, our repair), ``"non-iid"`` (our repair for non-i.i.d. data,
            :func:`bounds.dfl.formulas.non_iid_local_step_bound`, with ``heterogeneity`` and its own
            step-size condition), ``"paper"`` (Proposition 1 as stated, refuted; alias
            ``"proposition1"``) or ``"corrected"`` (the paper's with our drift term; refuted).
        runners_up: how many next-best cells to report.
        heterogeneity: varsigma^2 of non-i.i.d. data (bound ``"non-iid"`` only).
        eta: a fixed step size: then only (tau1, tau2) are ranked, and cells whose eta_max is below
            ``eta`` are infeasible.

    Raises:
        InputError: bad input, or a budget that fits no round at all. A budget whose rounds all have
        an infinite bound (zeta = 1) is not an error: the result has ``success`` False.

    >>> r = optimize_dfl(L=1, sigma2=1, N=10, gap=1, zeta=0.87, cost=CostModel(1.0, 0.5),
    ...                  budget_seconds=10_000, max_tau1=20, max_tau2=20, bound="paper")
    >>> (r.tau1, r.tau2, r.rounds)  # Proposition 1 rewards cheap gossip steps: they count in T
    (1, 20, 909)
    """
    # numpy scalars: L = 1e300 squares to inf (a Python float's ** raises OverflowError); float64 is a float
    L = cast(float, np.float64(real_number("L", L, low=0, low_open=True)))
    sigma2 = cast(float, np.float64(real_number("sigma2", sigma2, low=0)))
    N = int(real_number("N", N, low=1, integer=True))
    gap = cast(float, np.float64(real_number("gap", gap, low=0, low_open=True)))
    if not isinstance(cost, CostModel):
        raise InputError(f"cost = {cost!r} is not a CostModel (expected CostModel(t_comp, t_comm))")
    runners_up = int(real_number("runners_up", runners_up, low=0, integer=True))
    if (zeta is None) == (C is None):
        raise InputError("give zeta or a mixing matrix C (expected exactly one of them)")
    if C is not None:
        from bounds.graph.spectral import zeta as zeta_of

        zeta = zeta_of(C)  # checks C first (a (2, 3) array was called 2 x 2, a string None x None)
        if np.shape(C)[0] != N:
            size = np.shape(C)[0]
            raise InputError(f"C is {size} x {size} but N = {N} (expected a mixing matrix of the N nodes)")
    z = real_number("zeta", zeta, low=0, high=1)
    check_one_node(N, zeta=z)
    v2 = real_number("heterogeneity", heterogeneity, low=0)
    fixed = None if eta is None else real_number("eta", eta, low=0, low_open=True)
    bound = one_of("bound", ALIASES.get(bound, bound) if isinstance(bound, str) else bound, BOUNDS)
    if v2 > 0 and bound != "non-iid":
        raise InputError(
            f"heterogeneity = {v2:g} needs bound 'non-iid' (the bound {bound!r} has no heterogeneity term)"
        )
    tau1, tau2, rounds, feasible = budget_grid(
        cost, budget_seconds, max_local_steps, max_gossip_steps, max_tau1, max_tau2
    )
    steps = rounds * (tau1 + tau2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        counted = rounds * tau1 if bound in ("repaired", "non-iid") else steps  # repairs: local steps only
        a = np.where(feasible, 2 * gap / np.where(feasible, counted, 1.0), np.inf)
        b = np.full(tau1.shape, L * sigma2 / N)
        if bound == "non-iid":
            eta_max = np.asarray(f.eta_max_non_iid(L, tau1, tau2, z))

            def value_at(e: np.ndarray, cells: Any = ...) -> np.ndarray:  # (cells: an index of the grid)
                drift = f.drift_term_repaired(e, L, sigma2, v2, tau1[cells], tau2[cells], z)
                return a[cells] / e + b[cells] * e + drift
        else:
            eta_max = np.asarray(proposition1.eta_max(L=L, tau1=tau1, tau2=tau2, zeta=z))
            factor = {"repaired": f.drift_factor_repaired, "paper": f.drift_factor,
                      "corrected": f.drift_factor_corrected}  # fmt: skip
            c = 2 * L**2 * sigma2 * factor[bound](tau1, tau2, z)

            def value_at(e: np.ndarray, cells: Any = ...) -> np.ndarray:
                return a[cells] / e + b[cells] * e + c[cells] * e**2

        usable, top = feasible & (eta_max > 0), np.maximum(eta_max, 1e-300)
        if fixed is not None:
            etas = np.where(usable & (fixed <= eta_max * (1 + 1e-12)), fixed, np.nan)
        elif bound == "non-iid":  # a / eta + b eta + a convex drift term: unimodal in eta
            etas = np.full(tau1.shape, np.nan)  # on the cells that fit the budget only (all of a grid of
            # 200,000 (tau1, tau2), 6 of them feasible, took minutes: a probe)
            etas[usable] = _golden_eta(lambda e: value_at(e, usable), top[usable])
        else:
            etas = np.where(usable, _best_eta(a, b, c, top), np.nan)
        value = np.where(np.isfinite(etas), value_at(np.where(np.isfinite(etas), etas, 1.0)), np.inf)
        value = np.where(np.isnan(value), np.inf, value)  # sigma2 = 1e308: eta underflows to 0, inf * 0
    grid = {
        "tau1": tau1.astype(int),
        "tau2": tau2.astype(int),
        "rounds": np.where(feasible, rounds, 0).astype(int),
        "steps": np.where(feasible, steps, 0).astype(int),
        "time": budget_time(feasible, rounds, cost.round_seconds(tau1, tau2)),
        "local_steps": np.where(feasible, rounds * tau1, 0).astype(int),
        "gossip_steps": np.where(feasible, rounds * tau2, 0).astype(int),
        "eta_max": eta_max,
        "eta": etas,
        "bound": value,
    }
    if not np.isfinite(value).any():
        if z >= 1:
            why = "zeta = 1: the graph never mixes"
        elif np.isfinite(etas).any():  # a step was chosen, and still no finite number
            why = "it overflows float64 in every cell: inputs too large or too small for a finite value"
        elif fixed is not None and (eta_max[feasible] > 0).any():
            largest = float(np.max(eta_max[feasible]))
            why = f"eta = {fixed:g} is above eta_max of every cell, the largest {largest:.4g}"
        else:
            why = "eta_max is 0 in every cell"
        return OptimizeResult.nothing_finite(f"no (tau1, tau2) gives a finite bound ({why})", grid)
    at, cells = pick(grid, value, runners_up)
    notes = [REFUTED[bound]] if bound in REFUTED else []
    if at["eta"] >= at["eta_max"]:
        notes.append("the best eta is at eta_max: the step-size condition binds")
    notes += grid_edge_notes(at["tau1"], at["tau2"], int(tau1.max()), int(tau2.max()))
    message = "; ".join(notes)
    return OptimizeResult(
        tau1=at["tau1"], tau2=at["tau2"], eta=at["eta"], bound=at["bound"], rounds=at["rounds"],
        steps=at["steps"], time=at["time"], eta_max=at["eta_max"], runners_up=cells, success=True,
        message=message, grid=grid,
    )  # fmt: skip


def grid_edge_notes(tau1: int, tau2: int, max_tau1: int, max_tau2: int) -> list[str]:
    """Notes where the best (tau1, tau2) lies on the grid's far edge, so that a larger grid may hold a better
    one (a probe: tau2 = 10 at --max-tau2 10 was 23 at 100, with a smaller bound; none said so)."""
    return [
        f"the best {name} = {value} is the grid's largest (--max-{name.replace('_', '-')} {top}): a larger "
        "grid may hold a better one"
        for name, value, top in (("tau1", tau1, max_tau1), ("tau2", tau2, max_tau2))
        if value == top and top > 1
    ]


def budget_grid(
    cost: CostModel,
    budget_seconds: float | None,
    max_local_steps: int | None,
    max_gossip_steps: int | None,
    max_tau1: int,
    max_tau2: int,
    require_a_round: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The (tau1, tau2) mesh, the whole rounds K that fit the budget, and where K >= 1 (an InputError where
    nowhere, unless not ``require_a_round``: a caller trying several costs decides after the last)."""
    if budget_seconds is None and max_local_steps is None and max_gossip_steps is None:
        raise InputError("no budget given (expected budget_seconds and/or max_local_steps/max_gossip_steps)")
    t1_max = whole_number("max_tau1", max_tau1, low=1)
    t2_max = whole_number("max_tau2", max_tau2, low=1)
    if t1_max * t2_max > MAX_GRID_CELLS:
        raise InputError(
            f"max_tau1 x max_tau2 = {t1_max} x {t2_max} = {t1_max * t2_max:,} cells is too many (expected at "
            f"most {MAX_GRID_CELLS:,}: the grid is held in memory; lower max_tau1 / max_tau2, the flags "
            "--max-tau1 / --max-tau2)"
        )
    tau1, tau2 = np.meshgrid(np.arange(1, t1_max + 1.0), np.arange(1, t2_max + 1.0), indexing="ij")
    rounds = np.full(tau1.shape, np.inf)
    if budget_seconds is not None:
        seconds = real_number("budget_seconds", budget_seconds, low=0, low_open=True)
        with np.errstate(over="ignore"):  # rounds of 1e-320 s: inf rounds, refused below
            rounds = np.minimum(rounds, np.floor(seconds / cost.round_seconds(tau1, tau2)))
    if max_local_steps is not None:
        rounds = np.minimum(
            rounds, np.floor(real_number("max_local_steps", max_local_steps, low=1, integer=True) / tau1)
        )
    if max_gossip_steps is not None:
        rounds = np.minimum(
            rounds, np.floor(real_number("max_gossip_steps", max_gossip_steps, low=1, integer=True) / tau2)
        )
    feasible = rounds >= 1
    with np.errstate(over="ignore", invalid="ignore"):  # 1e308 s at 1e-300 s a step: inf steps, refused below
        most = float(np.max(np.where(feasible, rounds * (tau1 + tau2), 0)))
    if most > MAX_EXACT_INTEGER:  # T = K (tau1 + tau2): int64 casts of larger budgets wrapped round to < 0
        raise InputError(
            f"the budget allows {most:.3g} steps (expected at most 2^53 = {MAX_EXACT_INTEGER:.3g}, which "
            "float64 counts exactly; lower the budget)"
        )
    if require_a_round and not feasible.any():
        cheapest = cost.t_comp + cost.t_comm
        raise InputError(
            f"the budget fits no round: the cheapest round (tau1 = 1, tau2 = 1) takes {cheapest:g} s, "
            "1 local and 1 gossip step (expected a budget of at least one round)"
        )
    return tau1, tau2, rounds, feasible


def budget_time(feasible: np.ndarray, rounds: np.ndarray, round_seconds: np.ndarray) -> np.ndarray:
    """Seconds of the K rounds of each feasible cell, 0 elsewhere (where 0 rounds x an infinite round,
    t_comp = 1e308, would be NaN)."""
    with np.errstate(invalid="ignore"):
        return np.where(feasible, rounds * round_seconds, 0.0)


def pick(grid: dict[str, np.ndarray], value: np.ndarray, runners_up: int) -> tuple[dict, list[dict]]:
    """The best cell of ``grid`` by ``value`` and the next ``runners_up`` (finite ones), as plain dicts.

    ``value`` must have a finite entry (the optimisers return ``OptimizeResult.nothing_finite`` otherwise).
    """
    order = np.argsort(value, axis=None, kind="stable")
    best, *rest = (np.unravel_index(i, value.shape) for i in order[: runners_up + 1])
    cells = [{k: _plain(v[i]) for k, v in grid.items()} for i in rest if np.isfinite(value[i])]
    return {k: _plain(v[best]) for k, v in grid.items()}, cells


def _plain(x: Any) -> Any:
    return np.asarray(x).item()
