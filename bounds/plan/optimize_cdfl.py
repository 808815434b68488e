"""The best (tau1, tau2, compressor, parameter) for C-DFL under a budget, by Lemma 13's bound.

Compression changes the cost of a gossip step (``latency + bits / bandwidth``, bits from
:meth:`bounds.cdfl.compression.Compressor.bits`) and the bound (through delta, hence p and the
contraction of CHOCO-G). For every candidate compressor the (tau1, tau2) grid is evaluated
in one vectorised call of :func:`bounds.cdfl.proposition2.cdfl_bound`; cells whose conditions
fail are discarded. The step size is not free here: Lemma 13 fixes eta_k = 4 / (mu (a + k)),
and we report eta_0 with the smallest valid a. The answer is only as good as Lemma 13's
bound, which is loose by orders of magnitude (see README): compare candidates, do not read
the number as a prediction.
"""

from __future__ import annotations

import math

import numpy as np

from bounds._checks import InputError, one_of, whole_number
from bounds.cdfl.compression import Compressor, make_compressor
from bounds.cdfl.proposition2 import cdfl_bound
from bounds.plan.cost import CostModel
from bounds.plan.optimize import OptimizeResult, budget_grid, budget_time, pick

__all__ = ["CDFL_BOUNDS", "default_candidates", "optimize_cdfl"]


def default_candidates(dim: int) -> list[tuple[str, float | None]]:
    """identity; top_k and rand_k at k/d in {1, 5, 10, 25, 50, 67, 89} %; gossip p in {0.1, 0.2, 0.4, 0.6,
    0.8}; qsgd s = 2^e - 1 for e = 1, ..., 16: levels of e bits (a sign too: at most 17 of identity's 32
    bits a coordinate), each the largest s, and so the largest delta = 1 / (1 + min(d / s^2, sqrt(d) / s)),
    of its message size (s = 2, 4, 64 paid for a bit they left unused).

    The optimiser's choice is the best of these, not over all parameters."""
    fractions = (0.01, 0.05, 0.1, 0.25, 0.5, 0.67, 0.89)
    ks = sorted({max(1, math.ceil(f * dim)) for f in fractions})
    return [
        ("identity", None),
        *[("top_k", k) for k in ks],
        *[("rand_k", k) for k in ks],
        *[("gossip", p) for p in (0.1, 0.2, 0.4, 0.6, 0.8)],
        *[("qsgd", 2**e - 1) for e in range(1, 17)],
    ]


CDFL_BOUNDS = ("paper", "repaired")
"""The bounds :func:`optimize_cdfl` can minimise: Lemma 13 as printed, or our repair of its last step."""


def optimize_cdfl(
    *,
    L: float,
    mu: float,
    sigma2_bar: float,
    G2: float,
    N: int,
    zeta: float,
    beta_mix: float,
    dim: int,
    t_comp: float,
    latency: float,
    bandwidth: float,
    budget_seconds: float | None = None,
    max_local_steps: int | None = None,
    max_gossip_steps: int | None = None,
    max_tau1: int = 20,
    max_tau2: int = 20,
    candidates: list[tuple[str, float | None]] | None = None,
    runners_up: int = 5,
    bound: str = "paper",
    init_dist2: float | None = None,
) -> OptimizeResult:
    """Minimise Lemma 13's bound over (tau1, tau2) and the compressor (and its parameter).

    ``candidates`` are (name, parameter) pairs for :func:`bounds.cdfl.compression.make_compressor`;
    the default is :func:`default_candidates`. ``bound``: ``paper`` (Lemma 13 as printed) or
    ``repaired`` (what Lemma 12 gives from (122) at the lemma's step: ``CDFLBound.bound_repaired``,
    README Finding 12; at tau1 = 1 the exact worst case of (122)). ``init_dist2``: ||u0 - u*||^2, where
    Lemma 13's initial term starts (default (2 G / mu)^2, as :func:`bounds.cdfl.proposition2.cdfl_bound`);
    Lemma 13 bounds F(w) - F*, so Proposition 1's gap F(u_1) - F_inf plays no part. The result's grid has one
    row per (compressor, tau1, tau2) cell, with its delta and message bits.
    """
    one_of("bound", bound, CDFL_BOUNDS)
    runners_up = whole_number("runners_up", runners_up, low=0)
    d = whole_number("dim", dim, low=1)
    if candidates is not None and (
        not isinstance(candidates, list | tuple)  # (True was iterated: a TypeError)
        or not candidates
        or not all(isinstance(c, tuple | list) and len(c) == 2 for c in candidates)
    ):  # ['identity'] failed to unpack; [] became the default list in silence
        raise InputError(
            f"candidates = {candidates!r} (expected a non-empty list of (name, parameter) pairs, or None for "
            "the defaults)"
        )
    pieces: list[dict[str, np.ndarray]] = []
    cheapest: tuple[float, str, float | None] = (np.inf, "", None)  # the cheapest round (1, 1) of all
    for name, parameter in candidates or default_candidates(d):
        q: Compressor = make_compressor(name, parameter)
        bits = q.bits(d)
        cost = CostModel.from_network(t_comp, latency=latency, bandwidth=bandwidth, dim=d, bits=bits)
        tau1, tau2, rounds, feasible = budget_grid(
            cost, budget_seconds, max_local_steps, max_gossip_steps, max_tau1, max_tau2, require_a_round=False
        )
        cheapest = min(cheapest, (cost.round_seconds(1, 1), name, parameter), key=lambda c: c[0])
        r = cdfl_bound(
            L=L,
            mu=mu,
            sigma2_bar=sigma2_bar,
            G2=G2,
            N=N,
            tau1=tau1,
            tau2=tau2,
            K=np.maximum(rounds, 1),
            zeta=zeta,
            delta=q.delta(d),
            beta_mix=beta_mix,
            init_dist2=init_dist2,
        )
        ok = feasible & np.asarray(r.conditions_ok, dtype=bool)
        shape = tau1.shape
        pieces.append(
            {
                "compressor": np.full(shape, name, dtype=object),
                "parameter": np.full(shape, None if parameter is None else float(parameter), dtype=object),
                "delta": np.full(shape, q.delta(d)),
                "bits_per_message": np.full(shape, bits),
                "tau1": tau1.astype(int),
                "tau2": tau2.astype(int),
                "rounds": np.where(feasible, rounds, 0).astype(int),
                "time": budget_time(feasible, rounds, cost.round_seconds(tau1, tau2)),
                # the schedule the bound is for: eta_0 = 4 / (mu a), a = a_repaired for the repaired bound
                "eta_0": np.broadcast_to(
                    np.asarray(r.eta_0 if bound == "paper" else 4 / (mu * r.a_repaired)), shape
                ).copy(),
                "conditions_ok": ok,
                "bound": np.where(ok, r.bound if bound == "paper" else r.bound_repaired, np.inf),
            }
        )
    grid = {k: np.concatenate([p[k].ravel() for p in pieces]) for k in pieces[0]}
    if not (grid["rounds"] >= 1).any():  # (identity alone used to refuse the budget for all compressors)
        seconds, name, parameter = cheapest
        raise InputError(
            f"the budget fits no round with any compressor tried: the cheapest round (tau1 = 1, tau2 = 1, "
            f"{name}{'' if parameter is None else f' {parameter:g}'}) takes {seconds:g} s (expected a budget "
            "of at least one round)"
        )
    if not np.isfinite(grid["bound"]).any():
        why = "meets Lemma 13's conditions within the budget"
        if bound == "repaired":  # the printed conditions may hold where (121)'s does not (bound_repaired inf)
            why = "has a finite repaired bound within the budget"
        return OptimizeResult.nothing_finite(f"no (compressor, tau1, tau2) {why}", grid)
    at, cells = pick(grid, grid["bound"], runners_up)
    steps = at["rounds"] * (at["tau1"] + at["tau2"])
    parameter = at["parameter"]
    message = (
        f"compressor {at['compressor']}"
        + ("" if parameter is None else f" with parameter {parameter:g}")
        + f" (delta = {at['delta']:.4g}, {at['bits_per_message']:g} bits per message)"
    )
    result = OptimizeResult(
        tau1=at["tau1"],
        tau2=at["tau2"],
        eta=at["eta_0"],
        bound=at["bound"],
        rounds=at["rounds"],
        steps=steps,
        time=at["time"],
        eta_max=at["eta_0"],
        runners_up=cells,
        success=True,
        message=message,
        grid=grid,
        compressor=str(at["compressor"]),
        parameter=None if parameter is None else float(parameter),
        delta=float(at["delta"]),
    )
    return result
