"""Proposition 1 (convergence of DFL) as numbers: validated, vectorised, with a result object.

:func:`dfl_bound` evaluates eq. (upper-bound), its named terms, the limit
(inftyT), the step-size condition (eta), the general condition at the end of
Appendix A (with Lemma 2's ``beta_var``) and Lemma 1's condition, together
with the largest admissible eta of each. Any argument may be an array: all
are broadcast together, so a whole tau1 x tau2 x zeta grid is one call
(:func:`bound_grid` builds the mesh).

Degenerate inputs are not errors but infinite bounds with a message:
zeta = 1 (disconnected graph, or C = I) and tau2 = 0 (no gossip) both make
1 - zeta^tau2 = 0, so gossip never contracts the drift.

Proposition 1 as stated is refuted (README, Finding 0); every result also carries
``bound_repaired``, our repair (:func:`bounds.dfl.formulas.candidate_local_step_bound`), which bounds
the average over the local steps only and assumes the nodes' gradient noises independent.

The step-size conditions are compared as ``lhs <= 1 + CONDITION_RTOL`` (relative tolerance
1e-12): at eta = eta_max the left side is 1 up to rounding (e.g. 1.0000000000000002), and
eta_max must pass its own condition.
"""

from __future__ import annotations

import difflib
import inspect
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from bounds._checks import InputError, broadcastable, check_cells, check_one_node, real_array
from bounds.dfl import formulas as f
from bounds.result import Result, overflow_note, scalar_or_array

__all__ = ["CONDITION_RTOL", "DFLBound", "bound_grid", "dfl_bound", "eta_max"]

CONDITION_RTOL = 1e-12  # relative tolerance of every step-size condition (floating-point rounding)


@dataclass(frozen=True)
class DFLBound(Result):
    """Proposition 1 evaluated at one point or on a grid (fields broadcast together).

    Attributes:
        bound: right side of eq. (upper-bound) (refuted as stated: README Finding 0).
        bound_repaired: our repair's right side, a bound on the average of ||grad F(u_t)||^2 over
            the local steps only: 2 gap / (eta n_local) + eta L sigma^2 / N
            + 2 eta^2 L^2 sigma^2 (tau1 zeta^(2 tau2) / (1 - zeta^(2 tau2)) + (tau1 - 1) / 2),
            n_local = K tau1 + tail the local steps among the T (identical nodes, independent noises,
            under (eta)); derived for beta_var = 0 and a tail T - K tau <= tau1 (footnote 1), so inf
            where beta_var > 0 or the tail is longer.
        bound_non_iid: the repair for non-i.i.d. data (heterogeneity varsigma^2, README Finding 9):
            2 gap / (eta n_local) + eta L sigma^2 / N + drift_term_repaired, a bound on the same
            local-step average, under eta L <= 1 and rho_D <= 1/2 (``non_iid_condition_ok``);
            derived for beta_var = 0 and a tail <= tau1, so inf where beta_var > 0 or the tail is longer.
        sync_sgd_term: 2 [F(u_1) - F_inf] / (eta T) + eta L sigma^2 / N.
        local_drift_term: 2 eta^2 L^2 sigma^2 (tau1 / (1 - zeta^(2 tau2)) - 1).
        drift_term_paper: the same term, under the name of the drift comparison: the paper's
            bound on L^2 (1/(TN)) sum_t E||X_t (I - J)||_F^2 ((103) with (eta)), no heterogeneity part.
        heterogeneity_term: the heterogeneity part of drift_term_repaired,
            4 eta^2 L^2 varsigma^2 h / (1 - rho_D) (:func:`bounds.dfl.formulas.heterogeneity_term`).
        drift_term_repaired: bound on L^2 times the mean over the local steps of
            E||X_t (I - J)||_F^2 / N for non-i.i.d. data, noise and heterogeneity parts
            (:func:`bounds.dfl.formulas.drift_term_repaired`); infinite where rho_D >= 1.
        drift_recursion_factor: rho_D = (eta L)^2 a_D, the drift's feedback on itself.
        non_iid_condition_ok: eta L <= 1 and rho_D <= 1/2; non_iid_eta_max: the largest such eta.
        limit_T_inf: eq. (inftyT), the bound as T -> infinity.
        eta_condition_lhs, eta_condition_ok: left side of (eta) and whether it is <= 1
            (up to the relative tolerance CONDITION_RTOL).
        eta_max: largest eta satisfying (eta) (closed form).
        general_condition_lhs, general_condition_ok, general_eta_max: the same for
            the condition at the end of Appendix A with Lemma 2's ``beta_var``.
        lemma1_lhs, lemma1_ok: Lemma 1's eta L (1 + beta_var / N) <= 1.
        rounds: K = floor(T / tau); tail_steps: T - K tau (footnote 1 wants <= tau1).
        message: what to know about the result (empty when nothing is notable).
        inputs: the arguments, as given.
    """

    bound: Any
    bound_repaired: Any
    bound_non_iid: Any
    sync_sgd_term: Any
    local_drift_term: Any
    drift_term_paper: Any
    heterogeneity_term: Any
    drift_term_repaired: Any
    drift_recursion_factor: Any
    non_iid_condition_ok: Any
    non_iid_eta_max: Any
    limit_T_inf: Any
    eta_condition_lhs: Any
    eta_condition_ok: Any
    eta_max: Any
    general_condition_lhs: Any
    general_condition_ok: Any
    general_eta_max: Any
    lemma1_lhs: Any
    lemma1_ok: Any
    rounds: Any
    tail_steps: Any
    message: str
    inputs: dict[str, Any] = field(repr=False)

    @property
    def success(self) -> Any:
        """True where the bound is guaranteed: condition (eta), the general condition at the end of Appendix
        A and Lemma 1's hold (the last two are (eta) and implied by it where beta_var = 0), and the bound
        is finite."""
        ok = self.eta_condition_ok & np.asarray(self.general_condition_ok) & np.asarray(self.lemma1_ok)
        return scalar_or_array(np.logical_and(ok, np.isfinite(self.bound)))

    def frame(self) -> Any:
        """The (broadcast) inputs and every numeric field as a pandas DataFrame, one row per point."""
        import pandas as pd

        numeric = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("message", "inputs")}
        columns = {**{k: v for k, v in self.inputs.items()}, **numeric, "success": self.success}
        shape = np.broadcast_shapes(*(np.shape(v) for v in columns.values()))
        return pd.DataFrame({k: np.broadcast_to(np.asarray(v), shape).ravel() for k, v in columns.items()})


def _validated(**kw: Any) -> dict[str, np.ndarray]:
    """Each argument of :func:`dfl_bound` as a float array, checked against its domain (and the arrays
    against each other's shapes)."""
    args = broadcastable(
        {
            "L": real_array("L", kw["L"], low=0, low_open=True),
            "sigma2": real_array("sigma2", kw["sigma2"], low=0),
            "N": real_array("N", kw["N"], low=1, integer=True),
            "eta": real_array("eta", kw["eta"], low=0, low_open=True),
            "tau1": real_array("tau1", kw["tau1"], low=1, integer=True),
            "tau2": real_array("tau2", kw["tau2"], low=0, integer=True),
            "zeta": real_array("zeta", kw["zeta"], low=0, high=1),
            "T": real_array("T", kw["T"], low=1, integer=True),
            "gap": real_array("gap", kw["gap"], low=0),
            "beta_var": real_array("beta_var", kw["beta_var"], low=0),
            "heterogeneity": real_array("heterogeneity", kw["heterogeneity"], low=0),
        }
    )
    check_one_node(args["N"], zeta=args["zeta"])
    return args


def dfl_bound(
    *,
    L: Any,
    sigma2: Any,
    N: Any,
    eta: Any,
    tau1: Any,
    tau2: Any,
    zeta: Any,
    T: Any,
    gap: Any,
    beta_var: Any = 0.0,
    heterogeneity: Any = 0.0,
) -> DFLBound:
    """Proposition 1: E[(1/T) sum_t ||grad F(u_t)||^2] <= bound, with its terms and conditions.

    Args:
        L: smoothness constant (> 0).
        sigma2: gradient-noise variance sigma^2 (>= 0; 0 is the noise-free limit).
        N: number of nodes (integer >= 1; N = 1 needs zeta = 0: one node's C = [[1]]).
        eta: learning rate (> 0).
        tau1: local steps per round (integer >= 1).
        tau2: gossip steps per round (integer >= 0).
        zeta: max(|lambda_2(C)|, |lambda_N(C)|) in [0, 1].
        T: total number of steps, local and gossip (integer >= 1).
        gap: F(u_1) - F_inf (>= 0).
        beta_var: variance-growth parameter of Lemma 2 (>= 0); used by the
            general condition and Lemma 1, and ``bound_repaired`` and
            ``bound_non_iid`` are inf where it is > 0 (derived without it).
        heterogeneity: varsigma^2 >= 0, a bound on (1/N) sum_i ||grad f_i(w) - grad F(w)||^2 at the
            average models of the local steps (0: i.i.d. data); used by the non-i.i.d. fields.

    Returns:
        A :class:`DFLBound`; arrays where any argument is an array.

    Raises:
        bounds.InputError: an argument is outside its domain (named in the message).

    >>> r = dfl_bound(L=1, sigma2=1, N=10, eta=0.01, tau1=4, tau2=4, zeta=0.8727, T=1000, gap=1)
    >>> round(r.bound, 6), round(r.local_drift_term, 8), bool(r.eta_condition_ok)
    (0.202006, 0.00100564, True)
    """
    inputs = {"L": L, "sigma2": sigma2, "N": N, "eta": eta, "tau1": tau1, "tau2": tau2, "zeta": zeta,
              "T": T, "gap": gap, "beta_var": beta_var, "heterogeneity": heterogeneity}  # fmt: skip
    args = _validated(**inputs)
    eta_, L_, s2, N_, t1, t2, z = (args[k] for k in ("eta", "L", "sigma2", "N", "tau1", "tau2", "zeta"))
    T_, gap_, bv, v2 = args["T"], args["gap"], args["beta_var"], args["heterogeneity"]
    never_mixes = (1.0 - z**t2) == 0.0

    def mixing(value: np.ndarray, fill: float = np.inf) -> np.ndarray:
        """The formula where gossip mixes; ``fill`` where 1 - zeta^tau2 = 0 (0 * inf would be NaN)."""
        return np.where(never_mixes, fill, value)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # the conditions are b x + a x^2 <= 1 in x = eta L: coefficients once, then lhs and roots
        a = mixing(f.gossip_coefficient(t1, t2, z))
        a_general = mixing(a + f.variance_coefficient(t1, t2, z, bv))
        b_general = 1 + bv / N_
        lhs = f.quadratic_condition_lhs(eta_ * L_, a, 1)
        general = f.quadratic_condition_lhs(eta_ * L_, a_general, b_general)
        lemma1 = f.lemma1_condition_lhs(eta_, L_, N_, bv)
        out = {
            "bound": mixing(f.upper_bound(eta_, L_, s2, N_, t1, t2, z, T_, gap_)),
            "sync_sgd_term": f.sync_sgd_term(eta_, L_, s2, N_, T_, gap_),
            "local_drift_term": mixing(f.local_drift_term(eta_, L_, s2, t1, t2, z)),
            "drift_term_paper": mixing(f.local_drift_term(eta_, L_, s2, t1, t2, z)),
            "limit_T_inf": mixing(f.limit_T_inf(eta_, L_, s2, N_, t1, t2, z)),
            "eta_condition_lhs": lhs,
            "eta_condition_ok": lhs <= 1.0 + CONDITION_RTOL,
            "eta_max": _admissible(a, 1, L_),
            "general_condition_lhs": general,
            "general_condition_ok": general <= 1.0 + CONDITION_RTOL,
            "general_eta_max": _admissible(a_general, b_general, L_),
            "lemma1_lhs": lemma1,
            "lemma1_ok": lemma1 <= 1.0 + CONDITION_RTOL,
        }
    rounds = np.floor(T_ / (t1 + t2))
    tail = T_ - rounds * (t1 + t2)
    local_rounds = (rounds * t1 + tail) / t1  # K of the repair: local steps / tau1 (a tail > tau1: inf below)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        repaired = f.candidate_local_step_bound(eta_, L_, s2, N_, t1, t2, z, local_rounds, gap_)
        out["bound_repaired"] = mixing(repaired)
        rho = mixing(f.drift_recursion_factor(eta_, L_, t1, t2, z))
        feeds_back = ~(rho < 1)  # the recursion does not close: no finite bound

        def closed(value: np.ndarray) -> np.ndarray:
            return np.where(feeds_back, np.inf, mixing(value))

        out["heterogeneity_term"] = closed(f.heterogeneity_term(eta_, L_, v2, t1, t2, z))
        out["drift_term_repaired"] = closed(f.drift_term_repaired(eta_, L_, s2, v2, t1, t2, z))
        out["bound_non_iid"] = closed(
            f.non_iid_local_step_bound(eta_, L_, s2, v2, N_, t1, t2, z, local_rounds, gap_)
        )
        out["drift_recursion_factor"] = rho
        out["non_iid_condition_ok"] = (eta_ * L_ <= 1.0 + CONDITION_RTOL) & (
            rho <= 0.5 * (1 + CONDITION_RTOL)
        )
        out["non_iid_eta_max"] = mixing(f.eta_max_non_iid(L_, t1, t2, z), 0.0)
    for name in ("bound_repaired", "bound_non_iid"):  # derived for beta_var = 0 (README Findings 0, 9), and
        # for a tail of at most tau1 local steps (footnote 1): Algorithm 1's longer tail, all local steps in a
        # row, drifts further than a round does (counting tau1 of its steps disagreed with the simulator)
        out[name] = np.where((bv > 0) | (tail > t1), np.inf, out[name])
    out["rounds"] = rounds.astype(np.int64)
    out["tail_steps"] = tail.astype(np.int64)
    shape = np.broadcast_shapes(*(a.shape for a in args.values()))  # every field on it (heterogeneity alone
    # an array made the non-i.i.d. fields arrays and the others, success among them, scalars: a probe)
    out = {k: scalar_or_array(np.broadcast_to(np.asarray(v), shape).copy()) for k, v in out.items()}
    first = ("bound", "bound_repaired", "bound_non_iid")
    out = {**{k: out.pop(k) for k in first}, **out}
    message = _message(never_mixes, t2, np.asarray(out["eta_condition_ok"]), eta_,
                       np.asarray(out["eta_max"]), tail, t1)  # fmt: skip
    if (v2 > 0).any():
        message = "; ".join(filter(None, [message, _non_iid_note(out)]))
    if (bv > 0).any():
        message = "; ".join(filter(None, [message, _variance_growth_note(out, bv)]))
    if np.isposinf(np.asarray(out["eta_max"])).any():  # L = 1e-320: 1 / L overflows
        message = "; ".join(filter(None, [message, "eta_max is beyond float64's range (L is that small): "
                                          "every finite eta satisfies (eta)"]))  # fmt: skip
    # gossip mixes, yet no finite number: float64 overflowed (gap = 1e308, say)
    message = "; ".join(filter(None, [message, overflow_note(out["bound"], ~never_mixes)]))
    return DFLBound(**out, message=message, inputs=inputs)


def _variance_growth_note(out: dict[str, Any], beta_var: np.ndarray) -> str:
    """What beta_var > 0 changes: the general condition and Lemma 1's must hold too (where they fail, the
    bound is not guaranteed), and the repairs, derived for beta_var = 0, are inf there."""
    general, lemma1 = np.asarray(out["general_condition_ok"]), np.asarray(out["lemma1_ok"])
    notes = []
    if not (general.all() and lemma1.all()):
        names = [name for name, ok in (("the general condition (end of Appendix A)", general),
                                       ("Lemma 1's condition", lemma1)) if not ok.all()]  # fmt: skip
        failed = " and ".join(names) + (" fail" if len(names) == 2 else " fails")
        where = (
            f"with beta_var = {float(beta_var):g}; the largest eta for both is "
            f"{float(out['general_eta_max']):.6g}"
            if general.ndim == 0
            else f"at {int((~(general & lemma1)).sum())} of {general.size} points"
        )
        notes.append(f"{failed} ({where}): the bound is not guaranteed there")
    notes.append("bound_repaired and bound_non_iid are derived for beta_var = 0: inf where beta_var > 0")
    return "; ".join(notes)


def _non_iid_note(out: dict[str, Any]) -> str:
    """Where ``bound_non_iid`` is not guaranteed (its condition eta L <= 1 and rho_D <= 1/2 fails); '' if
    nowhere."""
    ok = np.asarray(out["non_iid_condition_ok"])
    if ok.all():
        return ""
    where = (
        f"rho_D = {float(out['drift_recursion_factor']):.4g}, the largest eta for it "
        f"{float(out['non_iid_eta_max']):.6g}"
        if ok.ndim == 0
        else f"at {int((~ok).sum())} of {ok.size} points"
    )
    return (
        f"the non-i.i.d. condition (eta L <= 1 and rho_D <= 1/2) fails ({where}): bound_non_iid is not "
        "guaranteed there"
    )


def _admissible(a: np.ndarray, b: Any, L: np.ndarray) -> np.ndarray:
    """Largest eta with b (eta L) + a (eta L)^2 <= 1: the closed-form root, nudged down by ulps
    where rounding put the condition above 1 + CONDITION_RTOL, so that eta = eta_max passes it."""
    e_max = np.asarray(f.eta_max_from_quadratic(a, b, L), dtype=np.float64)
    for _ in range(8):
        above = f.quadratic_condition_lhs(e_max * L, a, b) > 1.0 + CONDITION_RTOL
        over = (e_max > 0) & np.isfinite(e_max) & above  # inf stays: 1 / L overflowed (L = 1e-320)
        if not over.any():
            break
        e_max = np.where(over, np.nextafter(np.nextafter(e_max, 0), 0), e_max)
    return e_max


def _message(
    never_mixes: np.ndarray,
    tau2: np.ndarray,
    ok: np.ndarray,
    eta: np.ndarray,
    e_max: np.ndarray,
    tail: np.ndarray,
    tau1: np.ndarray,
) -> str:
    notes = []
    scalar = ok.ndim == 0
    if never_mixes.any():
        why = (
            "tau2 = 0: no gossip step"
            if scalar and tau2 == 0
            else "zeta = 1: the graph is disconnected (or C = I)"
            if scalar
            else f"{int(never_mixes.sum())} point(s) have zeta = 1 or tau2 = 0"
        )
        notes.append(
            f"{why}, so gossip never mixes the models: the local-drift term and the "
            "bound are infinite and no eta > 0 satisfies (eta)"
        )
    elif not ok.all():
        if scalar:
            notes.append(
                f"eta = {eta.item():.6g} violates the step-size condition (eta) (compared with a "
                f"relative tolerance of {CONDITION_RTOL:g}); the "
                f"largest admissible eta is {e_max.item():.6g}, so the bound is not "
                "guaranteed"
            )
        else:
            notes.append(
                f"{int((~ok).sum())} of {ok.size} points violate the step-size "
                "condition (eta): the bound is not guaranteed there"
            )
    late = np.broadcast_to(tail > tau1, np.broadcast(tail, tau1).shape)
    if late.any():
        notes.append(
            "T - K tau > tau1 at "
            + ("this point" if scalar else f"{int(late.sum())} point(s)")
            + ": footnote 1 of the paper assumes the tail after the last "
            "round has at most tau1 local steps (our repairs, derived under it, are inf there)"
        )
    return "; ".join(notes)


def eta_max(*, L: Any, tau1: Any, tau2: Any, zeta: Any, N: Any = None, beta_var: Any = 0.0) -> Any:
    """Largest eta satisfying the step-size condition; (eta) of Proposition 1 when beta_var = 0.

    Closed form x / L with x = 2 / (b + sqrt(b^2 + 4 a)), the positive root of
    a x^2 + b x = 1, where a = A (+ 2 beta_var tau / (1 - zeta^(2 tau2))) and
    b = 1 + beta_var / N. Zero where zeta = 1 or tau2 = 0. N is needed only where
    beta_var > 0 (it defaulted to 1 there, in silence; with N = 1 now meaning one node, zeta = 0).

    >>> round(eta_max(L=1, tau1=4, tau2=4, zeta=0.8727), 6)
    0.05024
    """
    if N is None:
        if (real_array("beta_var", beta_var, low=0) > 0).any():
            raise InputError(f"eta_max needs N where beta_var = {beta_var} > 0 (expected N, the nodes)")
        N = 2  # any N >= 2: b = 1 at beta_var = 0
    r = dfl_bound(
        L=L, sigma2=0.0, N=N, eta=1.0, tau1=tau1, tau2=tau2, zeta=zeta, T=1, gap=0.0, beta_var=beta_var
    )
    return r.general_eta_max


def bound_grid(*, tau1: Any, tau2: Any, zeta: Any, **scalars: Any) -> DFLBound:
    """Proposition 1 on the mesh tau1 x tau2 x zeta (shape len(tau1) x len(tau2) x len(zeta)).

    >>> g = bound_grid(tau1=[1, 2], tau2=[1, 2, 3], zeta=[0.5, 0.9], L=1, sigma2=1, N=10,
    ...                eta=0.01, T=600, gap=1)
    >>> g.bound.shape
    (2, 3, 2)
    """
    for name, value in scalars.items():  # an array would pair with the mesh's last axis, not make its own
        if np.ndim(value) != 0:
            raise InputError(
                f"{name} = {value!r} is not a single number (expected the mesh's axes in tau1, tau2 and zeta "
                "only; for other axes call dfl_bound with broadcastable arrays)"
            )
    axes = {}
    for name, axis in (("tau1", tau1), ("tau2", tau2), ("zeta", zeta)):
        if isinstance(axis, Iterator | set | frozenset):  # (numpy made an object array of the generator)
            raise InputError(f"{name} = {axis!r} is not a list (expected a number or a 1-d list: an axis)")
        if np.size(axis) == 0:  # (dfl_bound showed the empty mesh, shape (0, 1, 1))
            raise InputError(f"{name} = {axis!r} is empty (expected a number or a non-empty 1-d list)")
        axes[name] = np.atleast_1d(real_array(name, axis))  # named as given: the mesh's values were shown
        if axes[name].ndim > 1:  # meshgrid flattened a 2-d axis into one of its length
            raise InputError(f"{name} has shape {np.shape(axis)} (expected a number or a 1-d list: an "
                             "axis of the mesh)")  # fmt: skip
    check_cells(math.prod(a.size for a in axes.values()), "tau1 x tau2 x zeta " + " x ".join(
        str(a.size) for a in axes.values()))  # fmt: skip
    missing = [k for k in ("L", "sigma2", "N", "eta", "T", "gap") if k not in scalars]
    if missing:  # (dfl_bound's TypeError named dfl_bound)
        raise InputError(
            f"bound_grid needs {', '.join(missing)} (expected the keyword arguments of dfl_bound)"
        )
    known = set(inspect.signature(dfl_bound).parameters) - {"tau1", "tau2", "zeta"}
    unknown = sorted(set(scalars) - known)
    if unknown:  # (a TypeError naming dfl_bound: sigm2 = 1 beside sigma2, a probe)
        close = difflib.get_close_matches(unknown[0], sorted(known), n=1)
        raise InputError(
            f"bound_grid got an unknown argument {unknown[0]}"
            + (f" ({close[0]}?)" if close else "")
            + f" (expected the keyword arguments of dfl_bound: {', '.join(sorted(known))})"
        )
    t1, t2, z = np.meshgrid(axes["tau1"], axes["tau2"], axes["zeta"], indexing="ij")
    return dfl_bound(tau1=t1, tau2=t2, zeta=z, **scalars)
