"""The planner, validated (issue 14): does the bound's best (tau1, tau2, eta) win when you train?

A reduced ``dfl-sim plan``: MNIST, logistic regression (fast enough for ``--quick``; the README shows
the paper's CNN), 10 nodes on the ring, label shards, t_comp = t_comm = 1 and one modelled budget. The
bound's ranking is simulated for its best configurations and for others spread over the feasible set,
each with several seeds, and the statement (how the planner orders the configurations, as a score of
the bound: the bound itself) is judged by where its choice lands among the measured losses; once with
the step size the bound picks per configuration (``planner-validation``), once with one eta for all
(``planner-fixed-eta``: only the schedule is ranked); and the bound's step size itself, against the same
schedule at other step sizes (``planner-eta``: the two above compare the bound's etas with each other).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bounds.serialize import numbers_restored
from paper_checks.common import run_folder
from paper_checks.context import CheckContext
from paper_checks.registry import Outcome, check
from sim.config import RunConfig
from sim.plan import PlanSettings, plan


def _planner_grid(quick: bool) -> dict[str, Any]:
    return {
        "model": "logreg",
        "budget_seconds": 150 if quick else 600,
        "top": 2 if quick else 3,
        "others": 2 if quick else 4,
        "seeds": 2 if quick else 3,
        "max_tau1": 8,
        "max_tau2": 8,
        "eval_samples": 500 if quick else 2000,
        "dataset": "mnist",
    }


FIXED_ETA = 0.01  # admissible for the logistic regression's small tau1 under the non-i.i.d. condition
ETA_SCALES = (0.3, 3.0, 10.0, 30.0)
"""The multiples of the bound's eta that ``planner-eta`` trains the chosen schedule at too."""


def _by_the_bound(bound: np.ndarray) -> np.ndarray:
    """The planner's order: the smallest bound first."""
    return bound


def _the_bounds_eta(eta: np.ndarray) -> np.ndarray:
    """The planner's step size: the eta that minimises the bound in the chosen cell (under (eta))."""
    return eta


@check(
    "planner-validation",
    "Abstract, Proposition 1 as an optimiser (ours), our repair",
    "Under a modelled budget, the configuration with the smallest (repaired, heterogeneity-aware) bound "
    "trains as well as the best of the simulated configurations: worse by at most 1% of its loss, by a "
    "paired confidence bound over the seeds (sim.plan.regret_test).",
    "dfl-sim plan on MNIST (logistic regression), 10 nodes, ring, label shards, t_comp = t_comm = 1; "
    "the top of the ranking and others spread over the feasible set, several seeds each, all under the "
    "same budget; Spearman correlation of the ranking with the measured loss, regret of the choice",
    statement=_by_the_bound,
    on_device=True,
)
def planner_validation(ctx: CheckContext, score: Callable[[np.ndarray], np.ndarray]) -> Outcome:
    return _planned(ctx, score, eta=None)


@check(
    "planner-fixed-eta",
    "Abstract, Proposition 1 as an optimiser (ours), our repair, eta fixed",
    "With eta fixed (the user's), the (tau1, tau2) with the smallest bound trains as well as the best of "
    "the simulated ones: worse by at most 1% of its loss, by a paired confidence bound over the seeds.",
    "as planner-validation with eta = 0.01 for every configuration (dfl-sim plan --eta): only the "
    "trade-off between local steps, gossip steps and rounds under the budget is ranked",
    statement=_by_the_bound,
    on_device=True,
)
def planner_fixed_eta(ctx: CheckContext, score: Callable[[np.ndarray], np.ndarray]) -> Outcome:
    return _planned(ctx, score, eta=FIXED_ETA)


@check(
    "planner-eta",
    "Abstract, Proposition 1 as an optimiser (ours), our repair, its step size",
    "At the planner's choice of (tau1, tau2), the step size that minimises the bound trains as well as the "
    "same schedule at 0.3, 3, 10 and 30 times it: worse by at most 1% of the best loss, by a paired "
    "confidence bound over the seeds.",
    "as planner-validation, the bound's best cell alone, trained at its eta and at those multiples of it "
    "(dfl-sim plan --top 1 --others 0 --eta-scales 0.3 3 10 30), several seeds each",
    statement=_the_bounds_eta,
    on_device=True,
)
def planner_eta(ctx: CheckContext, eta_rule: Callable[[np.ndarray], np.ndarray]) -> Outcome:
    return _planned(ctx, _by_the_bound, eta=None, eta_rule=eta_rule)


def _planned(
    ctx: CheckContext,
    score: Callable[[np.ndarray], np.ndarray],
    eta: float | None,
    eta_rule: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Outcome:
    """Plan, simulate and judge the reduced problem with the ranking ``score``; ``eta`` fixed or not; with
    an ``eta_rule``, the best cell alone at the rule's eta against it at ETA_SCALES times that eta."""
    grid = _planner_grid(ctx.quick)
    if eta_rule is not None:
        grid = grid | {"top": 1, "others": 0, "eta_scales": ETA_SCALES, "seeds": grid["seeds"] + 2}
    name = "planner-eta-scales" if eta_rule else "planner" if eta is None else f"planner-eta={eta:g}"
    folder = run_folder(ctx, name, repr(sorted(grid.items())))
    config = RunConfig(
        dataset=grid["dataset"], model=grid["model"], nodes=10, topology="ring", partition="shards",
        batch_size=32, eval_samples=grid["eval_samples"], log_every=50, device=ctx.device, out=str(folder),
    )  # fmt: skip
    settings = PlanSettings(
        budget_seconds=grid["budget_seconds"], top=grid["top"], others=grid["others"], seeds=grid["seeds"],
        max_tau1=grid["max_tau1"], max_tau2=grid["max_tau2"], eta=eta, eta_scales=grid.get("eta_scales", ()),
    )  # fmt: skip
    out = plan(config, settings, score=score, eta_rule=eta_rule)
    keys = ("chosen", "best_measured", "bound_used", "spearman", "regret", "regret_test", "chosen_rank",
            "constants")  # fmt: skip
    evidence = {k: out[k] for k in keys}
    return Outcome(out["verdict"], _plan_text(out, eta_rule is not None), {**evidence, "table": out["table"]})


def _plan_text(out: dict[str, Any], eta_scaled: bool) -> str:
    """What a planner check found, from :func:`sim.plan.plan`'s result ``out`` (JSON: non-finite numbers as
    strings; a choice that diverged on every seed has regret "inf", and ``:.3g`` raised on it, a review)."""
    result, chosen, best = (numbers_restored(x) for x in (out, out["chosen"], out["best_measured"]))
    among = (
        f"trained at it and at {', '.join(f'{s:g}' for s in ETA_SCALES)} times it, its eta"
        if eta_scaled
        else f"among {out['simulated']} simulated configurations its measured loss"
    )
    text = (
        f"The bound ({out['bound_used']}) chooses tau1 = {chosen['tau1']}, tau2 = {chosen['tau2']}, "
        f"eta = {chosen['eta']:.3g}; {among} ranks {out['chosen_rank']} of {out['simulated']} (regret "
        f"{result['regret']:.3g}; the best: eta = {best['eta']:.3g}, loss {best['loss_mean']:.4g})"
    )
    if not eta_scaled:
        text += f"; Spearman correlation of the ranking with the measured loss {result['spearman']:.2f}"
    return text + f". {_regret_text(out['regret_test'])}"


def _regret_text(test: dict[str, Any]) -> str:
    """How the verdict was reached (:func:`sim.plan.regret_test`; ``test`` as a plan's JSON result holds it,
    non-finite numbers as strings: a diverged choice's "inf" raised TypeError here)."""
    test = numbers_restored(test)
    c = test["lower_against"] or {}
    named = f"(tau1 = {c.get('tau1')}, tau2 = {c.get('tau2')}, eta = {c.get('eta', float('nan')):.3g})"
    how = (
        f"the lowest loss on seed(s) {', '.join(map(str, test['selected_on']))}, tested on the others"
        if test["selected_on"]
        else "Bonferroni over the other configurations"
    )
    against = (
        f"paired over {test['seeds']} seeds, the choice's loss minus {1 + test['margin']:g} x another's (its "
        f"regret beyond {test['margin']:.0%} of that loss): its upper confidence bounds against the other "
        f"configurations reach {test['upper']:.3g} (all at most 0: holds), its lower bound is "
        f"{test['lower']:.3g} against {named} ({how}; above 0: violated)."
    )
    if test["paired_regret"] == 0:
        return f"The choice is the best measured; {against}"
    if not np.isfinite(test["paired_regret"]):
        return f"Its paired regret is {test['paired_regret']:.3g} (diverged?); {against}"
    return f"Its loss exceeds the best's by {test['paired_regret']:.3g} on average; {against}"
