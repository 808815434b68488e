"""``dfl-sim plan``: rank (tau1, tau2, eta) by a bound under a budget, then train to see if the ranking holds.

1. Constants of the bound on the user's problem, at the initial model: L by Hessian power iteration
   (a local, lower estimate of the smoothness constant), sigma^2 (the nodes' mean mini-batch noise
   v_i / B), varsigma^2 (the heterogeneity of the partition, the unbiased estimate of
   (1/N) sum_i ||grad f_i - grad F||^2) and gap = F(u_1) (cross-entropy is >= 0, so F(u_1) - F_inf <=
   F(u_1)); each can be given instead.
2. The ranking: :func:`bounds.plan.optimize.optimize_dfl` on the budget's grid of (tau1, tau2), eta
   chosen per cell by the bound (or fixed with ``eta``); the bound is our repair, with the
   heterogeneity term when varsigma^2 > 0 (``non-iid``).
3. The validation: the ``top`` best cells and ``others`` cells spread over the rest of the feasible
   ranking (one drawn from each of ``others`` equal blocks, seeded) are trained under exactly the
   budget (K whole rounds that fit it), with ``seeds`` seeds each, and with ``eta_scales`` each of them
   also at those multiples of its eta (contenders with no bound: the bound chose every other eta, so
   without them the plan compares the bound's step sizes only with each other); then the Spearman rank
   correlation between bound and measured final training loss (the ranked configurations), and the
   regret of the bound's choice (its loss minus the best measured loss, contenders included), its rank
   among the simulated configurations and the paired regret test (:func:`regret_test`).

Every simulation writes its own run folder under ``out/runs``; ``out/simulations.csv`` holds one row per
finished simulation, rewritten atomically after each, so an interrupted plan resumes where it stopped (a
simulation stopped by Ctrl-C continues from the checkpoint it wrote, and ends equal to an unbroken one). A
plan folder belongs to one problem (:func:`problem_key`: the data, model, topology, partition, costs and
how the constants are estimated); the budget and the ranking's settings may change from one call to the
next in it: the constants are estimated once, and a simulation is reused wherever its configuration,
steps included, and seed are the same.
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bounds import InputError, spectral_summary
from bounds.cdfl.formulas import choco_gamma
from bounds.cli_tools import counted, writable_folder
from bounds.graph.mixing import as_matrix
from bounds.plan.cost import CostModel
from bounds.plan.optimize import REFUTED, budget_grid, grid_edge_notes, optimize_dfl
from bounds.plan.optimize_cdfl import CDFL_BOUNDS, optimize_cdfl
from bounds.serialize import jsonable
from sim.config import PLAN_CHOOSES, RunConfig, check_field_types, check_float32_step, fingerprint
from sim.errors import ResumeSettingsDiffer, RunInterrupted
from sim.estimates import gradient_moments, hessian_norm, node_samples, noise_and_heterogeneity
from sim.grid import finished_summary
from sim.interrupt import interrupt_requested
from sim.run_folder import (
    FOLDER_ROOM,
    atomic_write,
    check_path_length,
    lock_folders,
    refuse_other_kind,
    release_folders,
    run_record,
)
from sim.runner import run
from sim.setup import prepare

__all__ = [
    "ESTIMATION_FIELDS", "PlanSettings", "estimate_constants", "heterogeneity_resolved", "plan",
    "problem_key", "regret_test", "verdict",
]  # fmt: skip

ESTIMATION_FIELDS = ("L", "sigma2", "heterogeneity", "gap", "estimate_samples", "hessian_iters")
"""The PlanSettings fields the constants depend on (the others only rank and choose)."""


@dataclass(frozen=True)
class PlanSettings:
    """The budget and the validation of a plan (the problem is a :class:`RunConfig`)."""

    budget_seconds: float | None = None
    top: int = 3
    others: int = 3
    seeds: int = 2
    bound: str = "auto"
    eta: float | None = None
    max_tau1: int = 10
    max_tau2: int = 15
    L: float | None = None
    sigma2: float | None = None
    heterogeneity: float | None = None
    gap: float | None = None
    estimate_samples: int = 64
    hessian_iters: int = 20
    budget_bits: float | None = None
    mu: float | None = None
    G2: float | None = None
    eta_scales: tuple[float, ...] = ()

    @property
    def contender_scales(self) -> tuple[float, ...]:
        """``eta_scales`` less 1 (the configuration itself, trained anyway), in increasing order."""
        return tuple(sorted(float(s) for s in self.eta_scales if s != 1))

    @property
    def cdfl_bound(self) -> str:
        """The bound a C-DFL plan ranks by (one of CDFL_BOUNDS): ``auto`` is Lemma 13 as printed."""
        return "repaired" if self.bound == "repaired" else "paper"

    def validate(self, algorithm: str = "dfl") -> None:
        """Ranges, and the budget of the algorithm: modelled seconds for DFL; for C-DFL bits per node
        (``budget_bits``) and Lemma 13's mu and G^2, which a non-convex model cannot estimate."""
        check_field_types(self)  # top = 1.5 or "3" failed later in numpy, True counted as 1
        if algorithm == "cdfl":
            missing = [n for n in ("budget_bits", "mu", "G2") if getattr(self, n) is None]
            if missing:
                raise InputError(
                    f"a C-DFL plan needs {', '.join(missing)} (Lemma 13's bound and a bits budget)"
                )
        elif self.budget_seconds is None:
            raise InputError("the budget is missing (expected budget_seconds, the modelled seconds of a run)")
        unused = ("budget_seconds",) if algorithm == "cdfl" else ("budget_bits", "mu", "G2")
        given = [n for n in unused if getattr(self, n) is not None]
        if given:  # a DFL plan recorded budget_bits = 1 beside runs sending 1e6 bits
            other = "the DFL plan's" if algorithm == "cdfl" else "a C-DFL plan's (--algorithm cdfl)"
            raise InputError(
                f"{given[0]} = {getattr(self, given[0])!r} has no effect on a {algorithm} plan: it is "
                f"{other} (expected it left out)"
            )
        for name in ("budget_seconds", "budget_bits", "mu", "G2"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise InputError(f"{name} = {value!r} is out of range (expected a number > 0)")
        for name in ("top", "seeds", "max_tau1", "max_tau2", "hessian_iters"):
            if getattr(self, name) < 1:
                raise InputError(
                    f"{name} = {getattr(self, name)!r} is out of range (expected an integer >= 1)"
                )
        if self.others < 0:
            raise InputError(f"others = {self.others!r} is out of range (expected an integer >= 0)")
        scales = self.contender_scales
        if (self.top + self.others) * (1 + len(scales)) < 2:  # one configuration: Spearman NaN, said to hold
            raise InputError(
                f"top = {self.top} and others = {self.others} train one configuration (expected top + others "
                ">= 2, or eta_scales: the plan compares the bound's choice with other configurations)"
            )
        for value in self.eta_scales:
            if not value > 0:
                raise InputError(f"eta_scales holds {value!r}, out of range (expected numbers > 0)")
        values = sorted({1.0, *self.eta_scales})  # (1: the configuration itself)
        if len(set(self.eta_scales)) < len(self.eta_scales) or any(
            math.isclose(a, b, rel_tol=ETA_RTOL) for a, b in itertools.pairwise(values)
        ):  # (3 and 3.0000000000001 shared one simulation, counted as two seeds of one row, a review)
            raise InputError(
                f"eta_scales = {self.eta_scales!r} repeats a value, or 1, to within {ETA_RTOL:g} (expected "
                "each scale once: a simulation is the same one at etas that close)"
            )
        if algorithm == "cdfl" and scales:  # eta_0 of Lemma 13's schedule is tied to mu and its a
            raise InputError(
                f"eta_scales = {self.eta_scales!r} cannot scale a C-DFL plan's schedule (expected them left "
                "out: Lemma 13's eta_k = 4 / (mu (a + k)))"
            )
        if self.estimate_samples < 2:
            raise InputError(f"estimate_samples = {self.estimate_samples!r} is out of range (expected >= 2)")
        if algorithm != "cdfl" and self.bound not in ("auto", "repaired", "non-iid", "paper", "proposition1",
                                                      "corrected"):  # fmt: skip
            raise InputError(
                f"bound = {self.bound!r} is not known (expected auto, repaired, non-iid, paper or corrected)"
            )
        if algorithm == "cdfl" and self.bound not in ("auto", *CDFL_BOUNDS):
            raise InputError(
                f"bound = {self.bound!r} is not a C-DFL bound (expected auto or paper: Lemma 13 as printed, "
                "or repaired: its last step redone at its own step size)"
            )
        for name in ("eta", "L", "gap"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise InputError(f"{name} = {value!r} is out of range (expected a number > 0)")
        for name in ("sigma2", "heterogeneity"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise InputError(f"{name} = {value!r} is out of range (expected a number >= 0)")


def estimate_constants(config: RunConfig, settings: PlanSettings) -> dict[str, Any]:
    """L, sigma^2, varsigma^2 and gap at the initial model (the ones ``settings`` gives are kept)."""
    probe = dataclasses.replace(config, out=str(Path(config.out) / "estimates"), steps=1)
    s = prepare(probe)
    n = config.nodes
    rng = np.random.default_rng(config.seed + 11)
    own = node_samples(s.parts, settings.estimate_samples, rng)
    x_all, y_all = s.data.train_on(s.device)
    X = s.x0.repeat(n, 1)
    sigma2, sigma2_se, varsigma2, noise = noise_and_heterogeneity(
        s.stack, X, x_all, y_all, own, config.batch_size
    )
    pick = rng.choice(len(s.data.y_train), size=min(512, len(s.data.y_train)), replace=False)
    spectrum = spectral_summary(as_matrix(s.C))
    x, y = x_all[pick], y_all[pick]
    out: dict[str, Any] = {
        "L": settings.L
        if settings.L is not None
        else hessian_norm(s.stack, s.x0, x, y, settings.hessian_iters)[0],
        "sigma2": settings.sigma2 if settings.sigma2 is not None else sigma2,
        "heterogeneity": settings.heterogeneity
        if settings.heterogeneity is not None
        else max(varsigma2, 0.0),
        "gap": settings.gap if settings.gap is not None else float(s.stack.evaluate(s.x0, x, y)[0]),
        "zeta": spectrum.zeta,
        "beta_mix": spectrum.beta_mix,
        "dim": s.stack.d,
        "estimated": {
            "sigma2_se": sigma2_se,
            "heterogeneity_raw": varsigma2,
            "heterogeneity_sampling_noise": noise,
            "initial_gradient_norm2": gradient_moments(s.stack, s.x0, x, y).norm2,
        },
    }
    out["L_source"] = (
        "given" if settings.L is not None else "Hessian power iteration at u_1 (a lower estimate)"
    )
    for name, what in (("L", "the Hessian's largest eigenvalue"), ("gap", "the loss")):
        value = float(out[name])
        if getattr(settings, name) is None and not (math.isfinite(value) and value > 0):
            raise InputError(  # (it was 'L = 0 is out of range', for a value the user had not given, a probe)
                f"the estimated {name} = {value:g} ({what} at the initial model) is not > 0: the loss is "
                f"flat there (one class in the data?) (expected data the model can learn from, or --{name} "
                "given)"
            )
    return out


def _ranking(
    config: RunConfig,
    settings: PlanSettings,
    constants: dict[str, Any],
    score: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[pd.DataFrame, str]:
    if config.algorithm == "cdfl":
        grid = _cdfl_grid(config, settings, constants)
        bound = {"paper": "cdfl (Lemma 13)", "repaired": "cdfl (Lemma 13, its last step repaired)"}[
            settings.cdfl_bound
        ]
    else:
        grid, bound = _dfl_grid(config, settings, constants)
    feasible = grid[np.isfinite(grid["bound"]) & (grid["rounds"] >= 1)]
    if feasible.empty:
        raise InputError(f"no configuration to plan: no cell of the {bound} ranking has a finite bound")
    order = feasible.assign(score=score(feasible["bound"].to_numpy()) if score else feasible["bound"])
    return order.sort_values("score", kind="stable").drop(columns="score").reset_index(drop=True), bound


def _dfl_grid(
    config: RunConfig, settings: PlanSettings, constants: dict[str, Any]
) -> tuple[pd.DataFrame, str]:
    bound = settings.bound
    if bound == "auto":
        bound = "non-iid" if heterogeneity_resolved(constants, settings) else "repaired"
    result = optimize_dfl(
        L=constants["L"], sigma2=constants["sigma2"], N=config.nodes, gap=constants["gap"],
        zeta=constants["zeta"], cost=CostModel(config.t_comp, config.t_comm),
        budget_seconds=settings.budget_seconds,
        max_tau1=settings.max_tau1, max_tau2=settings.max_tau2, bound=bound,
        heterogeneity=constants["heterogeneity"] if bound == "non-iid" else 0.0, eta=settings.eta,
    )  # fmt: skip
    if not result.success:
        raise InputError(f"no configuration to plan: {result.message}")
    grid = result.grid_frame().assign(compressor=config.compressor, parameter=config.compressor_param)
    return grid, bound


def heterogeneity_resolved(constants: dict[str, Any], settings: PlanSettings) -> bool:
    """Whether varsigma^2 is there to plan with: given (> 0), or estimated above the sampling noise the
    estimate had subtracted (below it the sign of the noise chose the bound: i.i.d. data planned with the
    non-i.i.d. bound at varsigma^2 = 0.56 against a noise of 9.65, a probe)."""
    if settings.heterogeneity is not None:
        return constants["heterogeneity"] > 0
    noise = constants.get("estimated", {}).get("heterogeneity_sampling_noise", 0.0)
    return bool(constants["heterogeneity"] > max(noise, 0.0))


def _cdfl_grid(config: RunConfig, settings: PlanSettings, constants: dict[str, Any]) -> pd.DataFrame:
    """Lemma 13 over (compressor, parameter, tau1, tau2) with K the rounds whose messages fit the bits
    budget (a gossip step costs its message bits; local steps are free), eta_k = 4 / (mu (a + k))."""
    assert settings.mu is not None and settings.G2 is not None  # (PlanSettings checked: a C-DFL plan has)
    result = optimize_cdfl(
        L=constants["L"], mu=settings.mu, sigma2_bar=constants["sigma2"], G2=settings.G2, N=config.nodes,
        zeta=constants["zeta"], beta_mix=constants["beta_mix"], dim=constants["dim"], t_comp=1e-12,
        latency=0.0, bandwidth=1.0, budget_seconds=settings.budget_bits, max_tau1=settings.max_tau1,
        max_tau2=settings.max_tau2, bound=settings.cdfl_bound,
    )  # fmt: skip
    if not result.success:
        raise InputError(f"no configuration to plan: {result.message}")
    grid = result.grid_frame()
    rho = 1 - constants["zeta"]
    gamma = np.minimum(1.0, choco_gamma(rho, grid["delta"].to_numpy(), constants["beta_mix"]))
    return grid.assign(eta=grid["eta_0"], steps=grid["rounds"] * (grid["tau1"] + grid["tau2"]), gamma=gamma)


def _choose(ranking: pd.DataFrame, settings: PlanSettings, seed: int) -> pd.DataFrame:
    """The top ``top`` rows and one row from each of ``others`` equal blocks of the rest (seeded)."""
    top = ranking.iloc[: settings.top].assign(group="top")
    rest = ranking.iloc[settings.top :]
    rng = np.random.default_rng(seed)
    blocks = np.array_split(np.arange(len(rest)), settings.others) if settings.others else []
    picks = [int(rng.choice(block)) for block in blocks if len(block)]
    return pd.concat([top, rest.iloc[picks].assign(group="other")]).reset_index(names="bound_rank")


def _with_eta_scales(chosen: pd.DataFrame, scales: tuple[float, ...]) -> pd.DataFrame:
    """``chosen`` (eta_scale 1) and, after each row, the same configuration at eta x each of ``scales``
    (group ``eta-scaled``, no bound: the bound ranks the eta it chose, these are what training compares it
    with: without them the plan compared the bound's etas with each other, while on the README's CNN plan
    at t_comm / t_comp = 10 its choice trains to 2.14 and another configuration at 30x its eta to 0.68)."""
    rows: list[dict[str, Any]] = []
    for row in chosen.to_dict("records"):
        rows.append({**row, "eta_scale": 1.0})
        rows += [
            {**row, "eta": row["eta"] * scale, "bound": np.nan, "group": "eta-scaled", "eta_scale": scale}
            for scale in scales
        ]
    return pd.DataFrame(rows)


def _parameter(value: Any) -> float | None:
    """A compressor parameter from a table cell (None, NaN or a number)."""
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else float(value)


MATCHED_EXACTLY = (
    "tau1",
    "tau2",
    "compressor",
    "steps",
)  # steps: another budget gives the same cell other rounds
SIMULATION_KEYS = (*MATCHED_EXACTLY, "parameter", "seed", "eta")
"""The columns of simulations.csv that say which simulation a row is (:func:`_same_configuration`)."""
RECORDED = ("diverged", "model_time")
"""The columns of simulations.csv every finished simulation fills (a row missing one is simulated again)."""
MEASURED = ("loss", "test_accuracy", "grad_norm2")
"""The columns a finished simulation fills unless it diverged."""
NUMERIC = ("tau1", "tau2", "steps", "parameter", "seed", "eta", "model_time", *MEASURED)
"""The columns of simulations.csv that hold numbers (a row with a word in one is simulated again)."""


def _read_saved_plan(path: Path) -> dict[str, Any] | None:
    """A folder's plan.json (None: no plan yet); InputError for a file that is not one."""
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{str(path)!r} cannot be read ({type(exc).__name__}; expected the plan.json a plan "
                         "wrote: move it away, or give another --out, to plan afresh)") from None  # fmt: skip
    if not isinstance(saved, dict) or "constants" not in saved:
        raise InputError(f"{str(path)!r} is not a plan's state (expected the plan.json a plan wrote: move it "
                         "away, or give another --out, to plan afresh)")  # fmt: skip
    return saved


def _read_simulations(path: Path) -> list[dict[str, Any]]:
    """The simulations a folder's simulations.csv records (none without the file); InputError for a file
    that cannot be read or lacks the columns that name a simulation."""
    if not path.is_file():
        return []
    try:
        done = pd.read_csv(path)
    except (OSError, ValueError) as exc:  # pandas' EmptyDataError and ParserError are ValueErrors
        raise InputError(
            f"{str(path)!r} cannot be read ({type(exc).__name__}: {exc}; expected the simulations.csv a plan "
            "wrote: move it away to simulate afresh)"
        ) from None
    missing = [k for k in SIMULATION_KEYS if k not in done.columns]
    if missing:
        raise InputError(
            f"{str(path)!r} lacks the columns {', '.join(missing)} (expected the simulations.csv a plan "
            "wrote: move it away to simulate afresh)"
        )
    # a row cut short (a hand edit, a copy that stopped) was averaged as a whole seed (its loss NaN, skipped);
    # a word where a number belongs failed inside pandas' mean (a probe): both are simulated again
    unreadable = pd.Series(False, index=done.index)
    for column in [c for c in NUMERIC if c in done]:
        numbers = pd.to_numeric(done[column], errors="coerce")
        unreadable |= numbers.isna() & done[column].notna()
        done[column] = numbers
    filled = done.reindex(columns=[*RECORDED, *MEASURED]).notna()
    diverged = done["diverged"].map(lambda v: str(v) == "True") if "diverged" in done else False
    cut = ~filled[list(RECORDED)].all(axis=1) | ~(filled[list(MEASURED)].all(axis=1) | diverged) | unreadable
    if cut.any():
        lines = ", ".join(str(i + 2) for i in np.flatnonzero(cut.to_numpy()))
        print(f"dfl-sim: warning: plan: {path} has {int(cut.sum())} incomplete or unreadable rows (lines "
              f"{lines}): their simulations run again", file=sys.stderr)  # fmt: skip
    return done[~cut].to_dict("records")


ETA_RTOL = 1e-12
"""Two etas are the same simulation's within this relative tolerance (a float's round trip through the CSV;
np.isclose's absolute 1e-8 took every eta below it for any other: --eta 9e-9 reused the runs of 1e-9)."""


def _same_configuration(record: dict[str, Any], row: pd.Series, seed: int) -> bool:
    same = all(record[k] == row[k] for k in MATCHED_EXACTLY) and record["seed"] == seed
    return (
        same
        and math.isclose(record["eta"], row["eta"], rel_tol=ETA_RTOL)
        and (_parameter(record["parameter"]) == _parameter(row["parameter"]))
    )


def _simulation(
    config: RunConfig, row: pd.Series, seed: int, folder: Path, mu: float | None
) -> dict[str, Any]:
    """One configuration under the budget: K whole rounds; about ten logged rows (evaluation is costly)."""
    tau1, tau2 = int(row["tau1"]), int(row["tau2"])
    compressor, parameter = row["compressor"], _parameter(row["parameter"])
    name = f"{compressor}{'' if parameter is None else f'={parameter:g}'}-tau1={tau1}-tau2={tau2}"
    sim = dataclasses.replace(
        config, tau1=tau1, tau2=tau2, eta=float(row["eta"]), steps=int(row["steps"]), seed=seed,
        out=str(_simulation_folder(folder, name, float(row["eta"]), int(row["steps"]), seed)),
        compressor=compressor,
        compressor_param=parameter, checkpoint_every=10**9, resume=False,
        log_every=max(config.log_every, int(row["steps"]) // 10),
    )  # fmt: skip
    if config.algorithm == "cdfl":  # Lemma 13's schedule and CHOCO-G's gamma of Lemma 9
        assert mu is not None  # (PlanSettings checked: a C-DFL plan has mu)
        eta0 = float(row["eta"])
        sim = dataclasses.replace(
            sim, lr_schedule="cdfl", mu=mu, a=4 / (mu * eta0), gamma=float(row["gamma"])
        )
    summary = _continue_or_start(sim)
    with (Path(sim.out) / "metrics.csv").open() as fh:
        last = list(csv.DictReader(fh))[-1]
    return {
        "compressor": compressor, "parameter": parameter, "tau1": tau1, "tau2": tau2,
        "eta": float(row["eta"]), "seed": seed, "bound": float(row["bound"]),
        "bound_rank": int(row["bound_rank"]) + 1, "group": row["group"], "steps": int(row["steps"]),
        "rounds": int(row["rounds"]), "loss": summary["final_train_loss"],
        "test_accuracy": summary["final_test_accuracy"], "grad_norm2": float(last["grad_norm2"]),
        "diverged": summary["diverged"], "model_time": summary["model_time"],
    }  # fmt: skip


def _simulation_folder(runs: Path, name: str, eta: float, steps: int, seed: int) -> Path:
    """A simulation's folder under ``runs``, eta in full (shortest round trip): to 4 digits, eta 0.10001 took
    the folder of 0.1 and trained over its run, whose row simulations.csv kept (a review's finding). A plan
    folder from before (2026-11-28) keeps its 4-digit folder where that one holds this very eta: its
    checkpoint or result is continued there, not trained again in a new folder."""
    folder = runs / f"{name}-eta={eta!r}-steps={steps}-seed={seed}"
    legacy = runs / f"{name}-eta={eta:.4g}-steps={steps}-seed={seed}"
    if not folder.exists() and legacy.exists() and run_record(legacy).get("eta") == eta:
        return legacy
    return folder


def _continue_or_start(sim: RunConfig) -> dict[str, Any]:
    """Run one simulation of the plan, continuing from the checkpoint an interrupted call left in its folder
    (Ctrl-C writes one after the step it stopped at; the result equals an unbroken run's). A checkpoint
    that cannot be continued (another ``--log-every``, an edited file) is named, and the simulation
    starts again from step 0. A simulation that finished as ``sim`` says is read back, not run again."""
    done = finished_summary(sim)
    if done is not None:
        return done
    if (Path(sim.out) / "checkpoint.pt").is_file():
        try:
            return run(dataclasses.replace(sim, resume=True))
        except ResumeSettingsDiffer as exc:  # (its --allow-change advice is not the plan's to take)
            why = f"{sim.out}'s checkpoint was taken with other settings ({exc.pairs})"
            print(f"dfl-sim: warning: plan: {why}; the simulation starts again from step 0", file=sys.stderr)
        except InputError as exc:
            if not str(exc).startswith("resume:"):
                raise
            print(f"dfl-sim: warning: plan: {exc}; the simulation starts again from step 0", file=sys.stderr)
    return run(sim)


def _atomic_csv(frame: pd.DataFrame, path: Path) -> None:
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))


CONFIGURATION = ["compressor", "parameter", "tau1", "tau2", "eta"]
"""The columns of a simulation that name its configuration (its seed apart)."""


def _summary_table(sims: pd.DataFrame) -> pd.DataFrame:
    """One row a configuration, in the ranking's order (the choice first; each configuration's eta-scaled
    contenders after it), with its seeds' losses summarised and its measured rank among all rows."""
    if "eta_scale" not in sims:  # (a table of the bound's etas alone)
        sims = sims.assign(eta_scale=1.0)
    sims = sims.assign(loss=_final_losses(sims))  # a diverged run's recorded 0.0 was the best measured
    table = sims.groupby(CONFIGURATION, as_index=False, dropna=False).agg(
        bound=("bound", "first"), bound_rank=("bound_rank", "first"), group=("group", "first"),
        eta_scale=("eta_scale", "first"),
        rounds=("rounds", "first"), steps=("steps", "first"), loss_mean=("loss", "mean"),
        loss_std=("loss", "std"), loss_min=("loss", "min"), loss_max=("loss", "max"),
        test_accuracy_mean=("test_accuracy", "mean"), test_accuracy_std=("test_accuracy", "std"),
        grad_norm2_mean=("grad_norm2", "mean"), seeds=("seed", "count"),
    )  # fmt: skip
    scaled = table["eta_scale"] != 1
    table = table.assign(_scaled=scaled).sort_values(["bound_rank", "_scaled", "eta_scale"], kind="stable")
    table = table.drop(columns="_scaled").reset_index(drop=True)  # the ranking's order: choice first
    table["measured_rank"] = table["loss_mean"].rank(method="min").astype(int)
    return table.fillna({"loss_std": 0.0, "test_accuracy_std": 0.0})


REGRET_MARGIN = 0.01
"""A regret below 1% of the other configuration's loss, seed by seed, is no regret, however consistent over
the seeds (1%, as the figure checks' :data:`paper_checks.experiments.MIN_EFFECT`; theirs scales a floor on
the mean margin by the pair's mean loss)."""
REGRET_LEVEL = 0.05
"""The chance of a wrong verdict of each kind: ``holds`` for a choice worse than the margin against some
configuration, ``violated`` for one within it against every configuration (at the margin exactly, with two
configurations, the two together reach twice this)."""


def verdict(table: pd.DataFrame, sims: pd.DataFrame) -> str:
    """:func:`regret_test`'s verdict."""
    return str(regret_test(table, sims)["verdict"])


def regret_test(table: pd.DataFrame, sims: pd.DataFrame) -> dict[str, Any]:
    """Whether the bound's choice (``table``'s first row, :func:`_summary_table`) trains as well as every
    other simulated configuration, from their paired seeds in ``sims`` (one row a simulation: seed s of all
    of them shares the initial model, partition and sampling; a diverged simulation's loss counts as +inf):
    e_j,s = the choice's final loss minus (1 + REGRET_MARGIN) x configuration j's on seed s, on the seeds both
    ran (:func:`_excess`: the regret beyond 1% of j's loss).

    ``holds``: for every j a one-sided Student-t upper confidence bound on the mean of e_j (level
    REGRET_LEVEL each: an intersection-union test needs no correction) is at most 0; ``violated``: the lower
    bound of :func:`_violation_bound` is above 0; else ``inconclusive``, and always with fewer than 2 paired
    seeds. Deterministic runs (e_j equal on every seed tested) decide by e_j alone. (The rule before it, a
    regret within one pooled seed standard deviation, held a choice 0.10 worse on every one of 50 paired
    seeds and called a choice 40% worse inconclusive, an audit; the next held a choice that was the measured
    best without confidence, 37% of the time for one 1% worse among two configurations with 2 seeds, a
    review; the next put 1% of the best's mean loss in place of j's loss seed by seed, and that floor's own
    noise across seeds made 'violated' 83 times in 300 at the floor where the seeds' losses spread widely
    and the pairs agree closely, a review.) Returns the verdict, the mean regret against the best measured
    (``paired_regret``, beside its mean loss), the lower bound that decides ``violated``, the
    configuration it is against (``lower_against``: tau1, tau2, eta) and the seeds that picked it
    (``selected_on``, empty for Bonferroni), the largest upper bound over j, the margin REGRET_MARGIN and the
    fewest paired seeds."""
    best = table["loss_mean"].idxmin()
    losses = {i: _seed_losses(sims, row) for i, row in table.iterrows()}
    chosen, others = losses[table.index[0]], list(table.index[1:])
    against_best = (chosen - losses[best]).dropna()
    excess = {j: _excess(chosen, losses[j]) for j in others}
    uppers = [_mean_bounds(e, 1)[1] for e in excess.values()]
    lower, against, selected_on = _violation_bound(
        sorted(chosen.index), {j: losses[j] for j in others}, excess
    )
    out: dict[str, Any] = {
        "paired_regret": float(against_best.mean()) if len(against_best) else float("nan"),
        "best_loss": float(table.loc[best, "loss_mean"]),
        "lower": lower,
        "lower_against": {k: table.loc[against, k] for k in ("tau1", "tau2", "eta")} if others else None,
        "selected_on": selected_on,
        "upper": max(uppers, default=-np.inf),
        "margin": REGRET_MARGIN,
        "seeds": min(len(d) for d in [against_best, *excess.values()]),
    }
    holds = bool(others) and all(upper <= 0 for upper in uppers)
    verdict_ = "violated" if lower > 0 else "holds" if holds else "inconclusive"
    return out | {"verdict": verdict_}


def _excess(chosen: pd.Series, other: pd.Series) -> pd.Series:
    """The choice's loss minus (1 + REGRET_MARGIN) x the other's, by seed, on the seeds both ran (both
    diverged: NaN, left out; the choice alone: +inf; the other alone: -inf)."""
    return (chosen - (1 + REGRET_MARGIN) * other).dropna()


SELECTION_SHARE = 3
"""With n >= 3 seeds and 2 or more other configurations, the first max(1, n // SELECTION_SHARE) seeds pick
the contender that :func:`_violation_bound` tests on the rest."""


def _violation_bound(
    seeds: list[Any], others: dict[Any, pd.Series], excess: dict[Any, pd.Series]
) -> tuple[float, Any, list[Any]]:
    """The lower confidence bound on a mean of :func:`_excess` that decides ``violated`` (level REGRET_LEVEL
    in all), the configuration it is against and the seeds that picked it (empty for Bonferroni's), from
    the choice's ``seeds`` in order, the other configurations' losses by seed and the choice's excess over
    each.

    Bonferroni over the other configurations (level REGRET_LEVEL / (configurations - 1), the largest bound)
    is weak among many: with 29 contenders its t quantile is about 185 with 2 seeds and 8.5 with 4, and a
    choice 0.76 worse than a contender was inconclusive. So, with n >= 3 seeds and 2 or more other
    configurations, half the level goes to sample splitting: the contender with the lowest mean loss on the
    first max(1, n // SELECTION_SHARE) seeds (among the configurations that ran all of those seeds and at
    least 2 of the testing seeds: which ran, not their losses) is tested alone on the other seeds (the seeds
    are independent draws, so the one picked is independent of the seeds that test it: one comparison), and
    half to Bonferroni; either bound above 0 is a violation. (Splitting alone missed what Bonferroni found
    with 3 seeds, few contenders, or a noisy contender lucky on the picking seed: 2 contenders, 3 seeds, one
    0.12 better: violated 63% against Bonferroni's 91%, a review; the two halves together: 74%.)"""
    if not others:
        return -np.inf, None, []
    k = max(1, len(seeds) // SELECTION_SHARE)
    picking, testing = seeds[:k], seeds[k:]
    can_pick = [
        j
        for j, loss in others.items()
        if loss.reindex(picking).notna().all() and loss.reindex(testing).notna().sum() >= 2
    ]  # (which seeds ran, not their losses: the pick stays independent of the testing seeds)
    halves = 2 if len(seeds) >= 3 and len(others) >= 2 and can_pick else 1
    bounds = {j: _mean_bounds(e, halves * len(others))[0] for j, e in excess.items()}
    against = max(bounds, key=lambda j: bounds[j])
    if halves == 2:
        picked = min(can_pick, key=lambda j: float(others[j].reindex(picking).mean()))  # (a tie: table order)
        tested = _mean_bounds(excess[picked].reindex(testing).dropna(), 2)[0]
        if tested > bounds[against]:
            return tested, picked, picking
    return bounds[against], against, []


def _mean_bounds(d: pd.Series, comparisons: int) -> tuple[float, float]:
    """(lower bound at REGRET_LEVEL / ``comparisons``, upper bound at REGRET_LEVEL) on the mean of the
    paired differences ``d``, one-sided Student t; (-inf, inf) where they say nothing (fewer than 2 seeds, or
    infinite differences of both signs or beside finite ones); both the value where d is the same on every
    seed (+inf: the choice diverged on every seed where the other did not)."""
    values = d.to_numpy(dtype=float)
    if len(values) < 2:
        return -np.inf, np.inf
    if np.all(values == values[0]):
        return float(values[0]), float(values[0])
    if not np.isfinite(values).all():
        return -np.inf, np.inf
    from scipy import stats

    mean, se = float(values.mean()), float(values.std(ddof=1)) / math.sqrt(len(values))
    t_low = float(stats.t.ppf(1 - REGRET_LEVEL / max(1, comparisons), len(values) - 1))
    t_high = float(stats.t.ppf(1 - REGRET_LEVEL, len(values) - 1))
    return mean - t_low * se, mean + t_high * se


def _seed_losses(sims: pd.DataFrame, configuration: pd.Series) -> pd.Series:
    """The final losses of ``configuration``'s simulations by seed (a compressor of NaN matches NaN), +inf
    where a simulation diverged (its row has no loss, or one its divergence left: a diverged seed was dropped,
    and the test ran on the others, a review)."""
    same = np.ones(len(sims), dtype=bool)
    for key in CONFIGURATION:
        column, value = sims[key], configuration[key]
        same &= (column.isna().to_numpy() & bool(pd.isna(value))) | (column == value).to_numpy()
    rows = sims[same]
    return _final_losses(rows).groupby(rows["seed"]).mean()


def _final_losses(sims: pd.DataFrame) -> pd.Series:
    """The simulations' final losses, +inf where one diverged (its row has no loss, or the loss of the model
    it stopped at: 0.0 for a run stopped at step 5 ranked it the best measured, and a NaN stopped the
    table, a review)."""
    loss = pd.to_numeric(sims["loss"], errors="coerce")
    if "diverged" in sims:
        loss = loss.where(~sims["diverged"].astype(str).str.lower().isin(["true", "1"]), np.inf)
    return loss.fillna(np.inf)


def plan(
    config: RunConfig,
    settings: PlanSettings,
    progress: Callable[[int, int, str], None] | None = None,
    score: Callable[[np.ndarray], np.ndarray] | None = None,
    eta_rule: Callable[[np.ndarray], np.ndarray] | None = None,
) -> dict[str, Any]:
    """Rank by the bound, simulate the chosen configurations, and compare; see the module docstring.

    ``score``: what the ranking sorts by, ascending, as a function of the bound column (default: the
    bound itself); a test can hand a wrong one (e.g. minus the bound) to see the comparison fail.
    ``eta_rule``: the eta each chosen configuration trains at, as a function of the ranking's eta column
    (default: that eta; ``eta_scales`` multiply the rule's eta), for the same purpose.
    The folder is locked while the plan runs (a second plan or run into it is refused).
    """
    for name, value, kind in (("config", config, RunConfig), ("settings", settings, PlanSettings)):
        if not isinstance(value, kind):  # plan(config, None) failed on None.validate
            raise InputError(
                f"{name} = {value!r:.80} is not a {kind.__name__} (expected a sim.{kind.__name__})"
            )
    config.validate()
    settings.validate(config.algorithm)
    if config.algorithm not in ("dfl", "cdfl"):
        raise InputError(f"algorithm {config.algorithm!r} cannot be planned (expected dfl or cdfl)")
    if config.algorithm == "dfl" and config.lr_schedule != "constant":  # the bounds rank a constant eta
        raise InputError(
            f"lr_schedule = {config.lr_schedule!r} cannot be planned for dfl (expected constant)"
        )
    if config.latency is not None or config.bandwidth is not None:
        raise InputError("a plan models a gossip step as t_comm seconds (expected no latency or bandwidth)")
    if config.algorithm == "dfl":  # a budget that fits no round, or too many, refused before any estimate
        budget_grid(CostModel(config.t_comp, config.t_comm), settings.budget_seconds, None, None,
                    settings.max_tau1, settings.max_tau2)  # fmt: skip
    check_path_length(config.out, "out", FOLDER_ROOM)  # its runs' files: 'File name too long', status 1
    refuse_other_kind(Path(config.out), "plan")  # a run's folder: its interrupted run could not resume
    out = writable_folder(config.out, "out")
    lock_folders([out])  # one plan at a time in a folder (sim.run_folder)
    try:
        return _plan_in(out, config, settings, progress, score, eta_rule)
    finally:
        release_folders([out])


def _plan_in(
    out: Path,
    config: RunConfig,
    settings: PlanSettings,
    progress: Callable[[int, int, str], None] | None,
    score: Callable[[np.ndarray], np.ndarray] | None,
    eta_rule: Callable[[np.ndarray], np.ndarray] | None,
) -> dict[str, Any]:
    """:func:`plan` in its locked folder ``out``."""
    from scipy.stats import spearmanr

    problem = problem_key(config, settings) | {"inputs": _input_digests(config)}
    state = out / "plan.json"
    saved = _read_saved_plan(state)
    if saved is not None:  # (a plan.json from before 2026-11-29 has no inputs: taken as these, and kept)
        _check_same_problem(out, {"inputs": problem["inputs"]} | _saved_problem(saved), problem)
        constants = saved["constants"]
    else:
        constants = estimate_constants(config, settings)
    if saved is None or saved.get("problem") != problem:  # (new, or written before it kept its inputs)
        saved = {"problem": problem, "constants": constants}
        atomic_write(state, lambda tmp: tmp.write_text(json.dumps(jsonable(saved))))
    ranking, bound = _ranking(config, settings, constants, score)
    _atomic_csv(ranking, out / "ranking.csv")
    chosen = _choose(ranking, settings, config.seed)
    if eta_rule is not None:
        etas = np.asarray(eta_rule(chosen["eta"].to_numpy(dtype=float)), dtype=float)
        if etas.shape != (len(chosen),) or not np.all(np.isfinite(etas) & (etas > 0)):
            raise InputError(f"eta_rule gave eta = {etas!r} (expected {len(chosen)} numbers > 0)")
        chosen = chosen.assign(eta=etas)
    chosen = _with_eta_scales(chosen, settings.contender_scales)
    for row in chosen.itertuples():  # before any simulation: 1e308 x eta stopped the plan after the first
        scaled = f" ({row.eta_scale:g} x the eta of tau1 = {row.tau1}, tau2 = {row.tau2}: eta_scales)"
        check_float32_step(f"eta = {row.eta:.3g}{scaled if row.eta_scale != 1 else ''}", row.eta)
    path = out / "simulations.csv"
    records = _read_simulations(path)
    jobs = [
        (row, seed)
        for _, row in chosen.iterrows()
        for seed in range(config.seed, config.seed + settings.seeds)
    ]
    current = []  # the measurements of this ranking's choices (the folder may hold others' too)
    reused = 0  # (a rerun said nothing of what it had not trained again, a probe)
    for i, (row, seed) in enumerate(jobs, 1):
        found = [r for r in records if _same_configuration(r, row, seed)]
        reused += bool(found)
        if not found:
            if interrupt_requested():  # Ctrl-C during the estimate or between simulations
                raise RunInterrupted(f"interrupted before simulation {i} of {len(jobs)}; {i - 1} are kept")
            try:
                found = [_simulation(config, row, seed, out / "runs", settings.mu)]
            except RunInterrupted as exc:  # its checkpoint is kept: the next call continues from it
                raise RunInterrupted(
                    f"interrupted in simulation {i} of {len(jobs)} ({exc}); {i - 1} are kept"
                ) from None
            records += found
            _atomic_csv(pd.DataFrame(records), path)
        in_ranking = {"bound": row["bound"], "bound_rank": int(row["bound_rank"]) + 1, "group": row["group"]}
        current.append({**found[0], **in_ranking, "eta_scale": row["eta_scale"]})
        if progress:
            label = f"tau1={int(row['tau1'])} tau2={int(row['tau2'])} eta={row['eta']:.3g} seed={seed}"
            progress(i, len(jobs), label)
    sims = pd.DataFrame(current)
    table = _summary_table(sims)
    test = regret_test(table, sims)
    _atomic_csv(table, out / "table.csv")
    ranked = table[table["eta_scale"] == 1]  # (the bound ranks its own etas, not the contenders')
    rho = float(spearmanr(ranked["bound_rank"], ranked["loss_mean"]).statistic) if len(ranked) > 2 else np.nan
    first, best = table.iloc[0], table.loc[table["loss_mean"].idxmin()]  # (idxmin: the first of a tie)
    best_measured = _configuration(best, config.algorithm) | {
        "eta_scale": float(best["eta_scale"]),
        "loss_mean": float(best["loss_mean"]),
    }  # (a C-DFL plan's lacked its compressor, a review)
    result = {
        "chosen": _configuration(first, config.algorithm),
        "bound_used": bound,
        "spearman": rho,
        "regret": float(first["loss_mean"] - best["loss_mean"]),
        "chosen_rank": int(first["measured_rank"]),
        "best_measured": best_measured,
        "simulated": len(table),
        "ranked": len(ranking),
        "verdict": test["verdict"],
        "notes": "; ".join(
            _notes(table, settings, bound, constants, test)
            + [f"{reused} of {len(jobs)} simulations reused from this folder's simulations.csv"]
            * (reused > 0)
        ),
        "regret_test": {k: v for k, v in test.items() if k != "verdict"},
        "constants": constants,
        "budget_seconds": settings.budget_seconds,
        "budget_bits": settings.budget_bits,
        "t_comp": config.t_comp,
        "t_comm": config.t_comm,
        "table": table.astype(object).where(table.notna(), None).to_dict("records"),  # NaN: null, not "nan"
        "out_dir": str(out),
    }
    result = jsonable(result)
    atomic_write(out / "plan_result.json", lambda tmp: tmp.write_text(json.dumps(result, indent=1)))
    _figures(table, out)
    return result


def _configuration(row: pd.Series, algorithm: str) -> dict[str, Any]:
    """A table row's configuration as a plan reports it: tau1, tau2, eta, and for C-DFL the compressor."""
    configuration: dict[str, Any] = {
        "tau1": int(row["tau1"]),
        "tau2": int(row["tau2"]),
        "eta": float(row["eta"]),
    }
    if algorithm == "cdfl":
        configuration |= {"compressor": row["compressor"], "parameter": _parameter(row["parameter"])}
    return configuration


def _notes(
    table: pd.DataFrame, settings: PlanSettings, bound: str, constants: dict[str, Any], test: dict[str, Any]
) -> list[str]:
    """What a reader of the plan's result (``table``: :func:`_summary_table`) should know (a probe found
    the optimiser's notes dropped): a refuted bound, a choice on the grid's edge, what the training check
    compares, a contender at another step size that trained better, configurations that diverged, and
    where too few seeds left the verdict open."""
    chosen, best = table.iloc[0], table.loc[table["loss_mean"].idxmin()]
    notes = [REFUTED[bound]] if bound in REFUTED else []
    if test["verdict"] == "inconclusive" and settings.seeds < 4:
        notes.append(
            f"with {settings.seeds} seed(s) the paired regret test decides only differences that the seeds "
            "agree on closely (Student's t with 1 or 2 degrees of freedom, or none): --seeds 4 or more "
            "resolve more (the README's CNN plan at t_comm / t_comp = 1: inconclusive with 2 and 3 seeds, "
            "violated with 4)"
        )
    if settings.bound == "auto" and bound == "repaired" and constants["heterogeneity"] > 0:
        notes.append(
            f"the estimated heterogeneity varsigma^2 = {constants['heterogeneity']:.3g} is within its "
            "sampling noise, so the i.i.d. repair ranks (--bound non-iid, or --heterogeneity, to use it)"
        )
    notes += grid_edge_notes(int(chosen["tau1"]), int(chosen["tau2"]), settings.max_tau1, settings.max_tau2)
    if best["eta_scale"] != 1:
        notes.append(
            f"the best measured configuration is tau1 = {int(best['tau1'])}, tau2 = {int(best['tau2'])} at "
            f"eta = {best['eta']:.3g} ({best['eta_scale']:g} x the eta it was ranked with): loss "
            f"{best['loss_mean']:.4g} against the choice's {chosen['loss_mean']:.4g}"
        )
    ranked = int((table["eta_scale"] == 1).sum())
    if ranked < 3:  # (spearman was "nan" without a word, a probe)
        notes.append(
            "the Spearman correlation between the ranking and training needs 3 or more ranked "
            f"configurations (here {ranked}: --top and --others): it is nan"
        )
    diverged = table[~np.isfinite(table["loss_max"].to_numpy(dtype=float))]
    if len(diverged):
        shown = ", ".join(
            f"({int(r.tau1)}, {int(r.tau2)}, eta = {r.eta:.3g})" for r in diverged[:3].itertuples()
        )
        notes.append(
            f"{counted(len(diverged), 'configuration')} diverged on some seed, their loss counted as +inf: "
            f"{shown}{', ...' if len(diverged) > 3 else ''}"
        )
    if settings.eta is None and not settings.contender_scales and "cdfl" not in bound:
        notes.append(
            "each simulated configuration trains at the eta the bound chose for it: the verdict compares the "
            "bound's choices with each other, not with other step sizes (--eta-scales 0.3 3 10 30 trains "
            "each at those multiples of its eta too; a fixed --eta ranks the schedule alone)"
        )
    return notes


def problem_key(config: RunConfig, settings: PlanSettings) -> dict[str, Any]:
    """What a plan folder's constants and simulations depend on, as JSON values: the run's fingerprint (the
    fields that shape a trajectory, :func:`sim.config.fingerprint`) less what the plan chooses per
    simulation (PLAN_CHOOSES; ``eval_samples``, the sample the losses are measured on, is in the
    fingerprint; ``log_every`` is not: each simulation logs about ten rows whatever it is), and how the
    constants are estimated (ESTIMATION_FIELDS). The budget, the grid and the validation's settings are not
    in it: they may change between calls in one folder."""
    return _problem_of(dataclasses.asdict(config), dataclasses.asdict(settings))


def _problem_of(config: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """:func:`problem_key` from a config's and a plan's settings as dicts (a field a dict lacks: None)."""
    run_fields = {k: config.get(k) for k in fingerprint(RunConfig()) if k not in (*PLAN_CHOOSES, "log_every")}
    estimation = {k: settings.get(k) for k in ESTIMATION_FIELDS}
    key = {"config": run_fields, "estimation": estimation}
    return json.loads(json.dumps(jsonable(key), sort_keys=True))


def _saved_problem(saved: dict[str, Any]) -> dict[str, Any]:
    """The problem of a saved plan.json; one written before problem keys (it held every setting, under
    ``settings``) gives the same fields from those."""
    if "problem" in saved:
        return saved["problem"]
    old = saved.get("settings", {})
    return _problem_of(old.get("config", {}), old.get("plan", {}))


def _input_digests(config: RunConfig) -> dict[str, str]:
    """The digests of the data set and the mixing matrix the plan's simulations read
    (:func:`sim.setup.current_digests`): an npz: or edges: file edited under the same name, or the same name
    read from another working folder, was planned with the old constants and simulations, in silence (a
    probe)."""
    from sim.data import load_dataset
    from sim.setup import current_digests

    return current_digests(config, load_dataset(config.dataset, config.data_dir))


INPUTS = {"data_digest": "its data set", "mixing_digest": "its mixing matrix C"}
"""What a plan's input digests stand for, for the message that refuses a changed one."""


def _check_same_problem(out: Path, saved: dict[str, Any], problem: dict[str, Any]) -> None:
    """InputError naming the first field whose value differs from the one the folder's plan was made with."""
    for section, values in problem.items():
        before = saved.get(section, {})
        for name, value in values.items():
            if section == "inputs" and before.get(name) != value:
                raise InputError(
                    f"{out} holds a plan of another problem: {INPUTS[name]} is not the one it was made with "
                    f"({name} {str(before.get(name))[:12]} there, {value[:12]} now: a file edited, or read "
                    "from another folder under the same name; expected the same inputs to resume it, or "
                    "another --out)"
                )
            if before.get(name) != value:
                shown = [
                    "estimated" if v is None and section == "estimation" else repr(v)
                    for v in (before.get(name), value)
                ]  # (L = None there meant: estimated at the initial model)
                raise InputError(
                    f"{out} holds a plan of another problem: {name} = {shown[0]} there, {shown[1]} now "
                    f"(expected the same {name} to resume it, or another --out)"
                )


def _figures(table: pd.DataFrame, out: Path) -> None:
    """Predicted against measured (the bound's choice marked), and measured loss against gossip steps."""
    from plots.figures import plan_figures, save

    for name, figure in plan_figures(table).items():
        save(figure, out / name)
