"""Proposition 2 (convergence of C-DFL) as numbers: Lemma 13's explicit bound, its terms and conditions.

:func:`cdfl_bound` evaluates Lemma 13 (the explicit form behind Proposition 2)
with D1, D2, D3 as named terms, the CHOCO-G constants p and gamma of Lemma 9,
and every condition the lemma needs, each reported separately. Proposition 2's
three O(.) terms are returned apart, as ``order_terms``, with all hidden
constants set to 1: an order of magnitude, not a bound.

Choices where the paper leaves a constant implicit (each can be overridden):

* ``theta``: any theta in (0, p / (1 - p)) is allowed; default p / (2 (1 - p)),
  the middle of the interval.
* ``a`` (eta_k = 4 / (mu (a + k))): default the smallest a that meets every
  condition: a >= 16 kappa (Lemma 13), a > 1 (Lemma 12), and eta_0 = 4 / (mu a)
  small enough for Lemma 13's step-size inequality. Finding: Lemma 13 states that
  inequality as a hypothesis of its own, but Proposition 2 omits it and keeps only
  "a >= 16 kappa", which does not imply it: with alpha = 1, kappa = 10 (and the settings
  of ``dfl-check``'s lemma13-conditions), a = 160 satisfies it for tau1 = 2 and fails for
  tau1 = 1 and 3..8. ``a_needed`` reports the smallest a that meets every condition.
* ``alpha`` (alpha_k of Lemma 8, a property of the trajectory: alpha_k (F(u^(k)) - F*)
  >= mean over the round of F(u_t) - F*): default 1, which holds when F(u_t) does
  not increase within a round.
* ``init_dist2`` = ||u0 - u*||^2: default (2 G / mu)^2, from E mu ||u0 - u*|| <= 2G
  (Rakhlin et al., Lemma 2), which the paper uses for its first term.
* S_K: Lemma 12 (and Proposition 2) define S_K = sum_{k=0}^{K-1} (a + k)^2 >= K^3 / 3, while
  Lemma 13 as printed writes w_avg and S_K with sum_{k=0}^{K} (and S_K >= T^2 / 3). We use
  Lemma 12's K terms (:func:`bounds.cdfl.formulas.weight_sum`), the sum the proof builds;
  the K + 1-term version differs by (a + K)^2.
* D1, D2, D3 depend on the round k; Lemma 13 leaves k free. They grow with k, so we
  evaluate them at k = K, which bounds every round.

Finding (the proof's last step, ``dfl-check``'s lemma13-from-122): Lemma 13's constants are what
Lemma 12 gives from (122) with the step eta_k = 8 / (mu tau1 (a + k)), not with the lemma's
eta_k = 4 / (mu (a + k)); with the latter (tau1 >= 2) Lemma 12 gives ``bound_repaired``, whose noise
and higher-order terms are tau1 / 2 and tau1^2 / 4 times the printed ones, and the exact worst case of
(122)'s recursion (:mod:`bounds.cdfl.recursion`) exceeds the printed bound from tau1 = 3 on. At tau1 = 1
(122)'s contraction 1 - mu eta_k / 2 is weaker than Lemma 12 needs; ``bound_repaired`` is there the
recursion's exact worst case in closed form (:func:`bounds.cdfl.formulas.lemma13_bound_stated_step_tau1_one`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bounds._checks import InputError, broadcastable, check_one_node, real_array
from bounds.cdfl import formulas as cf
from bounds.result import Result, overflow_note, scalar_or_array

__all__ = ["CDFLBound", "cdfl_bound"]


@dataclass(frozen=True)
class CDFLBound(Result):
    """Lemma 13 / Proposition 2 evaluated (fields broadcast together).

    Attributes:
        bound: Lemma 13's bound on F(w_avg^(K)) - F*.
        bound_repaired: what Lemma 12 gives from (122) at the lemma's step eta_k = 4 / (mu (a + k))
            (:func:`bounds.cdfl.formulas.lemma13_bound_stated_step`): the printed noise and higher-order
            terms are too small for tau1 >= 3 (by tau1 / 2 and tau1^2 / 4). At tau1 = 1, where Lemma 12
            does not apply, the exact worst case of (122)'s recursion in closed form
            (:func:`bounds.cdfl.formulas.lemma13_bound_stated_step_tau1_one`; its last term has a log K
            more than Lemma 12's form). It repairs the last step only, at ``a_repaired``, where (121)'s
            bracket condition (with its tau1^2, :func:`bounds.cdfl.formulas.step_condition_121_lhs`) holds,
            which (122) needs and the printed condition does not give; the earlier steps are the paper's.
        a_repaired: the shift of the repaired bound's schedule: the smallest a >= 16 kappa meeting (121)'s
            condition (about twice ``a`` for tau1 >= 2), or the ``a`` given (then inf where it misses it).
        terms: the named parts: ``initial``, ``noise``, ``higher_order`` (which
            contains D1 + D2 + D3) and ``D1``, ``D2``, ``D3`` themselves.
        p, gamma: CHOCO-G constants of Lemma 9; theta: Remark 10's constant used.
        contraction: A = (1 + theta)(1 - p)^tau2 (must be < 1).
        eta_0: the largest step size 4 / (mu a); a: the shift used;
        a_needed: the smallest a meeting a >= 16 kappa and the step-size inequality.
        conditions: each condition of Lemma 13 / Proposition 2 with whether it holds.
        conditions_ok: all of them hold.
        order_terms: Proposition 2's three O(.) terms with constants 1 (NOT a bound).
        message: what failed, if anything.
    """

    bound: Any
    bound_repaired: Any
    a_repaired: Any
    terms: dict[str, Any]
    p: Any
    gamma: Any
    theta: Any
    contraction: Any
    eta_0: Any
    a: Any
    a_needed: Any
    conditions: dict[str, Any]
    conditions_ok: Any
    order_terms: dict[str, Any]
    message: str
    inputs: dict[str, Any] = field(repr=False)

    @property
    def success(self) -> Any:
        """True where every condition of Lemma 13 holds and the bound is finite."""
        return scalar_or_array(np.logical_and(self.conditions_ok, np.isfinite(self.bound)))


def cdfl_bound(
    *,
    L: Any,
    mu: Any,
    sigma2_bar: Any,
    G2: Any,
    N: Any,
    tau1: Any,
    tau2: Any,
    K: Any,
    zeta: Any,
    delta: Any,
    beta_mix: Any,
    a: Any = None,
    theta: Any = None,
    alpha: Any = 1.0,
    init_dist2: Any = None,
) -> CDFLBound:
    """Lemma 13 (explicit form of Proposition 2) with its constants and conditions.

    Args:
        L, mu: smoothness and strong convexity (0 < mu <= L).
        sigma2_bar: mean per-node gradient variance; G2: bound G^2 on E||g||^2.
        N, tau1, tau2, K: nodes, local and gossip steps per round, rounds.
        zeta: of C (rho = 1 - zeta must be > 0); beta_mix: ||I - C||_2 in [0, 2].
        delta: compression ratio in (0, 1] (Assumption 2).
        a, theta, alpha, init_dist2: see the module docstring for defaults.

    >>> r = cdfl_bound(L=1, mu=0.1, sigma2_bar=1, G2=1, N=10, tau1=4, tau2=4, K=1000,
    ...                zeta=0.8727, delta=0.5, beta_mix=4/3)
    >>> round(r.p, 8), bool(r.conditions_ok)
    (9.881e-05, True)
    """
    v = broadcastable(
        {
            "L": real_array("L", L, low=0, low_open=True),
            "mu": real_array("mu", mu, low=0, low_open=True),
            "sigma2_bar": real_array("sigma2_bar", sigma2_bar, low=0),
            "G2": real_array("G2", G2, low=0),
            "N": real_array("N", N, low=1, integer=True),
            "tau1": real_array("tau1", tau1, low=1, integer=True),
            "tau2": real_array("tau2", tau2, low=0, integer=True),
            "K": real_array("K", K, low=1, integer=True),
            "zeta": real_array("zeta", zeta, low=0, high=1, high_open=True),
            "delta": real_array("delta", delta, low=0, low_open=True, high=1),
            "beta_mix": real_array("beta_mix", beta_mix, low=0, high=2),
            "alpha": real_array("alpha", alpha, low=0, low_open=True),
        }
    )
    if (v["mu"] > v["L"]).any():
        raise InputError(f"mu = {mu} exceeds L = {L} (expected 0 < mu <= L)")
    check_one_node(v["N"], zeta=v["zeta"], beta_mix=v["beta_mix"])
    # beta_mix = 1 - lambda_N(C) and zeta = max(|lambda_2|, |lambda_N|) >= lambda_2 >= lambda_N >= -zeta
    slack = 1e-9
    apart = (v["beta_mix"] < 1 - v["zeta"] - slack) | (v["beta_mix"] > 1 + v["zeta"] + slack)
    apart &= v["N"] >= 2  # one node: C = [[1]], zeta = beta_mix = 0 (no lambda_2), checked above
    if apart.any():
        raise InputError(
            f"beta_mix = {beta_mix} and zeta = {zeta} cannot belong to one mixing matrix (expected 1 - zeta "
            "<= beta_mix <= 1 + zeta, as beta_mix = 1 - lambda_N(C) and zeta = max(|lambda_2|, |lambda_N|))"
        )
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # extreme inputs: overflow_note
        kappa = v["L"] / v["mu"]

        def smallest_a(largest_eta: Any) -> Any:
            """The smallest a >= 16 kappa, > 1, with eta_0 = 4 / (mu a) <= ``largest_eta`` (times 1 + 1e-12 so
            that rounding cannot put eta_0 a hair outside the condition)."""
            return np.maximum(np.maximum(16 * kappa, 4 / (v["mu"] * largest_eta) * (1 + 1e-12)), 1 + 1e-9)

        # eta_0 must satisfy Lemma 13's step condition as printed
        a_needed = smallest_a(cf.lemma13_largest_eta(v["L"], v["mu"], v["tau1"], v["alpha"]))
        a_ = a_needed if a is None else real_array("a", a, low=1, low_open=True)
        rho = 1 - v["zeta"]
        p = cf.choco_p(rho, v["delta"])
        theta_ = p / (2 * (1 - p)) if theta is None else real_array("theta", theta, low=0, low_open=True)
        init = (
            (2 * np.sqrt(v["G2"]) / v["mu"]) ** 2
            if init_dist2 is None
            else real_array("init_dist2", init_dist2, low=0)
        )
        optional = {"a": np.asarray(a_), "theta": np.asarray(theta_), "init_dist2": np.asarray(init)}
        shape = np.broadcast_shapes(*(x.shape for x in broadcastable({**v, **optional}).values()))

        def full(x: Any) -> Any:
            """x on the common shape of the inputs (a grid's fields all alike), a scalar for scalar inputs."""
            return scalar_or_array(np.broadcast_to(np.asarray(x), shape).copy())

        gamma = cf.choco_gamma(rho, v["delta"], v["beta_mix"])
        A = cf.contraction(p, theta_, v["tau2"])
        t1, t2, K_ = v["tau1"], v["tau2"], v["K"]
        d = {
            "D1": cf.D1(v["L"], t1, v["G2"], p, theta_, t2, K_),
            "D2": cf.D2(v["L"], v["mu"], t1, v["G2"], p, theta_, t2, K_),
            "D3": cf.D3(v["L"], v["mu"], t1, v["G2"], p, theta_, t2, K_),
        }
        initial, noise, higher = cf.lemma13_bound(
            v["L"], v["mu"], v["sigma2_bar"], v["N"], t1, K_, a_, init, d["D1"], d["D2"], d["D3"]
        )
        # the repair needs (121)'s own bracket condition (with tau1^2), stronger than the printed one: its a
        a_121 = smallest_a(cf.largest_eta_121(v["L"], v["mu"], v["tau1"], v["alpha"]))
        a_rep = a_121 if a is None else a_
        holds_121 = cf.step_condition_121_lhs(v["L"], v["mu"], t1, 4 / (v["mu"] * a_rep), v["alpha"]) <= 0
        by_lemma12 = sum(
            cf.lemma13_bound_stated_step(
                v["L"], v["mu"], v["sigma2_bar"], v["N"], t1, K_, a_rep, init, d["D1"], d["D2"], d["D3"]
            )
        )
        at_tau1_one = sum(  # Lemma 12 does not apply to (122) at tau1 = 1: its exact worst case there
            cf.lemma13_bound_stated_step_tau1_one(
                v["L"], v["mu"], v["sigma2_bar"], v["N"], K_, a_rep, init, d["D1"], d["D2"], d["D3"]
            )
        )
        repaired = np.where(t1 >= 2, by_lemma12, at_tau1_one)
        # a given a that misses (121)'s condition (or a >= 16 kappa): no (122), no bound
        meets_121 = holds_121 & (a_rep >= 16 * kappa * (1 - 1e-12))
        repaired = np.where(meets_121, repaired, np.inf)
        order = cf.proposition2_order_terms(
            v["L"], v["mu"], v["sigma2_bar"], v["G2"], v["N"], t1, t2, K_, p, theta_
        )
        eta_0 = 4 / (v["mu"] * a_)
    with np.errstate(over="ignore", invalid="ignore"):  # L = 1e308: the step condition is inf or NaN: not met
        conditions = {
            "rho_in_(0,1]": rho > 0,
            "gamma_in_(0,1]": (gamma > 0) & (gamma <= 1),
            "theta_below_p/(1-p)": theta_ < p / (1 - p),
            "contraction_below_1": cf.contraction_gap(p, theta_, v["tau2"]) > 0,  # (A itself may round to 1)
            "a_at_least_16_kappa": a_ >= 16 * kappa * (1 - 1e-12),
            "a_above_1": a_ > 1,
            "eta_0_L_at_most_1/4": eta_0 * v["L"] <= 0.25 * (1 + 1e-12),
            "step_condition_at_eta_0": cf.lemma13_step_condition_lhs(v["L"], v["mu"], t1, eta_0, v["alpha"])
            <= 0,
        }
    conditions = {k: full(c) for k, c in conditions.items()}
    ok = full(np.logical_and.reduce([np.asarray(c) for c in conditions.values()]))  # each of the grid's shape
    failed = [k for k, c in conditions.items() if not np.all(c)]
    message = ("conditions not met: " + ", ".join(failed) + "; the bound is not guaranteed") if failed else ""
    if (v["tau2"] == 0).any():  # as dfl_bound says it: the one reason the contraction fails for any theta
        zero = int(np.broadcast_to(v["tau2"] == 0, shape).sum())  # points of the grid, not tau2's entries
        where = "tau2 = 0" if shape == () else f"{zero} point(s) have tau2 = 0"
        message = "; ".join(filter(None, [f"{where}: no gossip step, so the models never mix (contraction "
                                          "(1 + theta)(1 - p)^0 > 1)", message]))  # fmt: skip
    message = "; ".join(filter(None, [message, overflow_note(initial + noise + higher)]))
    if a is not None and not np.all(meets_121):  # the repair needs (121)'s condition at the a given
        smallest = float(np.max(np.asarray(a_121)))
        missed = "bound_repaired is inf: the a given misses (121)'s step condition, which the repair needs "
        missed += f"(expected a >= {smallest!r})"  # in full: a rounded-down value would miss it again
        message = "; ".join(filter(None, [message, missed]))
    terms = {"initial": initial, "noise": noise, "higher_order": higher, **d}
    inputs = {"L": L, "mu": mu, "sigma2_bar": sigma2_bar, "G2": G2, "N": N, "tau1": tau1, "tau2": tau2,
              "K": K, "zeta": zeta, "delta": delta, "beta_mix": beta_mix, "a": a, "theta": theta,
              "alpha": alpha, "init_dist2": init_dist2}  # fmt: skip
    return CDFLBound(
        bound=full(initial + noise + higher),
        bound_repaired=full(repaired),
        a_repaired=full(a_rep),
        terms={k: full(t) for k, t in terms.items()},
        p=full(p),
        gamma=full(gamma),
        theta=full(theta_),
        contraction=full(A),
        eta_0=full(eta_0),
        a=full(a_),
        a_needed=full(a_needed),
        conditions=conditions,
        conditions_ok=ok,
        order_terms=dict(zip(("first", "second", "third"), (full(o) for o in order), strict=True)),
        message=message,
        inputs=inputs,
    )
