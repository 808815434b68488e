"""DFL and its special cases side by side on one problem (``dfl-bounds compare``).

Rows (all from Proposition 1 unless said otherwise):

* ``DFL``: the given (tau1, tau2).
* ``C-SGD``: tau2 = 1 (Section III-C-2, Wang & Joshi's Cooperative SGD schedule).
* ``D-SGD``: tau1 = tau2 = 1; by Section III-C-3 communicate-then-compute has
  the same averaged iterate as compute-then-communicate, so the same bound.
* ``local SGD``: C = J (zeta = 0) with the given tau1 (Corollary 2).
* ``synchronous SGD``: Corollary 1 (tau1 = 1, tau2 -> infinity), i.e. the
  synchronous-SGD part alone; its step-size condition cannot hold in that limit
  (see README, Findings), so it is reported as not applicable.
* ``C-DFL``: Lemma 13 (explicit Proposition 2) when mu, G2, delta and beta_mix are
  given. It bounds a different quantity, F(w_avg) - F*, under strong convexity,
  with its own step-size schedule, so its number is not comparable with the rows
  above; the row says so.

Each row also gives the bound with our corrected drift term
(:func:`bounds.dfl.formulas.local_drift_term_corrected`) and our repair (``bound_repaired``, the
average over local steps; Proposition 1 and both corollaries are refuted, README Findings 0, 2); in
the C-DFL row ``bound_repaired`` is Lemma 13 with its last step redone (``CDFLBound.bound_repaired``,
README Finding 12), a bound on F(w_avg) - F* like the row's own.
Not included: the Cooperative SGD theorem of Wang & Joshi (JMLR 22(213), 2021), whose exact
statement could not be checked against the paper from this project's sources.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bounds.cdfl.proposition2 import cdfl_bound
from bounds.dfl import formulas as f
from bounds.dfl.proposition1 import dfl_bound
from bounds.serialize import jsonable

__all__ = ["compare_methods"]

_GRADIENT_NORM = "E[(1/T) sum_t ||grad F(u_t)||^2]"


def _prop1_row(
    method: str, source: str, *, tau1: int, tau2: int, zeta: float, **problem: Any
) -> dict[str, Any]:
    r = dfl_bound(tau1=tau1, tau2=tau2, zeta=zeta, **problem)
    corrected = float("inf")  # where gossip never mixes (tau2 = 0, zeta = 1), as the drift term
    if r.local_drift_term != float("inf"):
        with np.errstate(over="ignore", invalid="ignore"):  # eta = 1e308: a float's ** raised OverflowError
            drift = f.local_drift_term_corrected(
                np.float64(problem["eta"]), problem["L"], problem["sigma2"], tau1, tau2, zeta
            )
            corrected = float(r.sync_sgd_term + drift)
    return {
        "method": method, "source": source, "quantity": _GRADIENT_NORM, "tau1": tau1, "tau2": tau2,
        "zeta": zeta, "bound": r.bound, "bound_corrected_drift": corrected,
        "bound_repaired": r.bound_repaired, "eta_condition_ok": r.eta_condition_ok, "eta_max": r.eta_max,
        "note": r.message,
    }  # fmt: skip


def compare_methods(
    *,
    L: float,
    sigma2: float,
    N: int,
    eta: float,
    tau1: int,
    tau2: int,
    zeta: float,
    T: int,
    gap: float,
    cdfl: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One row per method on the same problem.

    ``cdfl`` holds Lemma 13's extra inputs (mu, G2, delta, beta_mix) to add the C-DFL row.

    >>> rows = compare_methods(L=1, sigma2=1, N=10, eta=0.01, tau1=4, tau2=4, zeta=0.87, T=1000, gap=1)
    >>> [row["method"] for row in rows]
    ['DFL', 'C-SGD', 'D-SGD', 'local SGD', 'synchronous SGD']
    """
    problem = dict(L=L, sigma2=sigma2, N=N, eta=eta, T=T, gap=gap)
    rows = [
        _prop1_row("DFL", "Proposition 1", tau1=tau1, tau2=tau2, zeta=zeta, **problem),
        _prop1_row("C-SGD", "Proposition 1, tau2 = 1", tau1=tau1, tau2=1, zeta=zeta, **problem),
        _prop1_row("D-SGD", "Proposition 1, tau1 = tau2 = 1 (Section III-C-3)", tau1=1, tau2=1, zeta=zeta,
                   **problem),
        _prop1_row("local SGD", "Corollary 2 (C = J, zeta = 0; refuted, Finding 2)", tau1=tau1,
                   tau2=max(tau2, 1), zeta=0.0, **problem),
    ]  # fmt: skip
    if tau2 == 0:  # local SGD averages once a round: its row was at tau2 = 1 without a word
        local = rows[-1]
        local["note"] = "; ".join(filter(None, ["tau2 = 1 (local SGD averages once a round; tau2 = 0 never "
                                                "would)", local.get("note")]))  # fmt: skip
    limit = "limit: no eta > 0 satisfies (eta) as tau2 -> infinity; Corollary 1 is refuted (Finding 2)"
    if float(zeta) >= 1:  # zeta^tau2 stays 1: the limit is no synchronous SGD (its finite bound was shown
        sync = float("inf")  # beside the DFL row's inf, a probe)
        limit = "zeta = 1: gossip never mixes the models, so tau2 -> infinity is not synchronous SGD"
    else:
        sync = f.sync_sgd_term(eta, L, sigma2, N, T, gap)
    rows.append({
        "method": "synchronous SGD", "source": "Corollary 1 (tau1 = 1, tau2 -> infinity)",
        "quantity": _GRADIENT_NORM, "tau1": 1, "tau2": "inf", "zeta": zeta, "bound": sync,
        "bound_corrected_drift": sync, "bound_repaired": None, "eta_condition_ok": None,
        "eta_max": None, "note": limit,
    })  # fmt: skip
    if cdfl is not None:
        rounds = max(T // (tau1 + tau2), 1)
        r = cdfl_bound(L=L, sigma2_bar=sigma2, N=N, tau1=tau1, tau2=tau2, K=rounds, zeta=zeta, **cdfl)
        rows.append({
            "method": "C-DFL", "source": "Lemma 13 (explicit Proposition 2)",
            "quantity": "F(w_avg) - F* (strongly convex; eta_k = 4 / (mu (a + k)))", "tau1": tau1,
            "tau2": tau2, "zeta": zeta, "bound": r.bound, "bound_corrected_drift": None,
            "bound_repaired": r.bound_repaired,  # Lemma 12 from (122) at the lemma's step (Finding 12)
            "eta_condition_ok": r.conditions_ok, "eta_max": r.eta_0,
            "note": "not comparable with the rows above (other quantity and assumptions); eta_max: the "
            "largest eta_0 = 4 / (mu a) its conditions admit (its schedule's first step); eta_condition_ok: "
            "Lemma 13's conditions. " + r.message,
        })  # fmt: skip
    return [{k: jsonable(v) if v is not None and not isinstance(v, str) else v for k, v in row.items()}
            for row in rows]  # fmt: skip
