"""``dfl-sim plan`` (issue 14): rank by the bound, simulate, compare; and the optimiser it calls."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

import sim.plan as plan_module
from bounds import CostModel, InputError, optimize_dfl
from bounds.dfl import formulas as f
from sim.cli import main
from sim.config import RunConfig
from sim.plan import PlanSettings, _summary_table, plan, verdict


def _config(tiny, tmp_path, **kw) -> RunConfig:
    base = dict(dataset=f"npz:{tiny}", model="logreg", nodes=4, partition="shards", batch_size=8,
                eval_samples=40, log_every=5, out=str(tmp_path / "plan"))  # fmt: skip
    return RunConfig(**{**base, **kw})


SETTINGS = PlanSettings(
    budget_seconds=40, top=2, others=2, seeds=2, max_tau1=4, max_tau2=4, estimate_samples=16, hessian_iters=5
)


def test_plan_ranks_simulates_and_compares(tiny, tmp_path) -> None:
    out = plan(_config(tiny, tmp_path), SETTINGS)
    table = pd.DataFrame(out["table"])
    assert len(table) == 4 and set(table["group"]) == {"top", "other"}
    assert (table["seeds"] == 2).all() and table["bound"].is_monotonic_increasing  # ranked by the bound
    first = table.iloc[0]
    assert out["chosen"] == {"tau1": int(first["tau1"]), "tau2": int(first["tau2"]), "eta": first["eta"]}
    assert out["regret"] == pytest.approx(first["loss_mean"] - table["loss_mean"].min())
    assert out["chosen_rank"] == int(first["measured_rank"]) and -1 <= out["spearman"] <= 1
    assert out["bound_used"] == "non-iid" and out["constants"]["heterogeneity"] > 0  # label shards
    assert out["verdict"] in ("holds", "violated", "inconclusive")
    sims = pd.read_csv(tmp_path / "plan" / "simulations.csv")  # (out's table is JSON: NaN became "nan")
    assert out["verdict"] == verdict(_summary_table(sims), sims)
    assert out["regret_test"]["seeds"] == 2 and out["ranked"] >= len(table)
    assert "trains at the eta the bound chose for it" in out["notes"]  # what the check compares (a probe)
    assert ("--seeds 4 or more" in out["notes"]) == (out["verdict"] == "inconclusive")
    folder = tmp_path / "plan"
    for name in ("ranking.csv", "simulations.csv", "table.csv", "plan_result.json", "plan.json",
                 "plan-predicted-vs-measured.png", "plan-loss-vs-gossip.png"):  # fmt: skip
        assert (folder / name).is_file(), name
    sims = pd.read_csv(folder / "simulations.csv")
    assert len(sims) == 8 and (sims["model_time"] <= 40 + 1e-9).all()  # every run within the same budget
    budget_used = sims["rounds"] * (sims["tau1"] + sims["tau2"])
    assert (budget_used == sims["steps"]).all()
    assert json.loads((folder / "plan_result.json").read_text())["chosen"] == out["chosen"]


def test_plan_resumes_without_rerunning_and_refuses_other_settings(tiny, tmp_path, monkeypatch) -> None:
    config = _config(tiny, tmp_path)
    first = plan(config, SETTINGS)

    def no_training(*args, **kwargs):
        raise AssertionError("a finished simulation was run again")

    monkeypatch.setattr(plan_module, "run", no_training)
    again = plan(_config(tiny, tmp_path, threads=1, log_every=7), SETTINGS)  # neither shapes the problem
    assert again["table"] == first["table"] and again["spearman"] == first["spearman"]
    assert "simulations reused" not in first["notes"]  # a rerun says what it did not train again (a probe)
    assert "8 of 8 simulations reused from this folder's simulations.csv" in again["notes"]
    with pytest.raises(InputError, match="another problem: nodes = 4 there, 6 now"):
        plan(_config(tiny, tmp_path, nodes=6), SETTINGS)
    with pytest.raises(InputError, match="another problem: hessian_iters = 5 there, 6 now"):
        plan(config, PlanSettings(**{**SETTINGS.__dict__, "hessian_iters": 6}))
    with pytest.raises(InputError, match=r"another problem: L = estimated there, 2\.0 now"):  # said L = None
        plan(config, PlanSettings(**{**SETTINGS.__dict__, "L": 2.0}))
    # the same names, other contents: the old constants and simulations were given for them (a probe)
    state = json.loads((tmp_path / "plan" / "plan.json").read_text())
    data = dict(np.load(tiny))
    np.savez(tiny, **{**data, "x_train": 10 * data["x_train"]})
    with pytest.raises(InputError, match="another problem: its data set is not the one it was made with"):
        plan(config, SETTINGS)
    np.savez(tiny, **data)
    ring = plan_module.problem_key(config, SETTINGS) | {"inputs": plan_module._input_digests(config)}
    assert state["problem"] == ring  # plan.json keeps what the refusal compares
    del state["problem"]["inputs"]  # a plan.json from before the inputs were kept: taken as these
    (tmp_path / "plan" / "plan.json").write_text(json.dumps(state))
    assert plan(config, SETTINGS)["table"] == first["table"]
    assert "inputs" in json.loads((tmp_path / "plan" / "plan.json").read_text())["problem"]
    monkeypatch.undo()
    edges = tmp_path / "e.txt"
    edges.write_text("0 1\n1 2\n2 3\n3 0\n")
    config_edges = _config(tiny, tmp_path, topology=f"edges:{edges}", out=str(tmp_path / "plan-edges"))
    plan(config_edges, PlanSettings(**{**SETTINGS.__dict__, "top": 1, "others": 1, "seeds": 1}))
    edges.write_text("0 1\n1 2\n2 3\n3 0\n0 2\n1 3\n")  # (a regular graph: the paper weights)
    with pytest.raises(InputError, match="another problem: its mixing matrix C is not the one it was made"):
        plan(config_edges, SETTINGS)


def test_another_budget_in_the_same_folder_reuses_the_constants_and_the_same_simulations(
    tiny, tmp_path, monkeypatch
) -> None:
    """A refused budget leaves a folder that the next budget can use; a simulation is reused only where its
    configuration, steps included, is the same."""
    config = _config(tiny, tmp_path)
    with pytest.raises(InputError, match="fits no round"):
        plan(config, PlanSettings(**{**SETTINGS.__dict__, "budget_seconds": 1.5}))
    first = plan(config, SETTINGS)

    def no_estimate(*args, **kwargs):
        raise AssertionError("the constants were estimated again")

    monkeypatch.setattr(plan_module, "estimate_constants", no_estimate)
    more_seeds = plan(config, PlanSettings(**{**SETTINGS.__dict__, "seeds": 3}))
    assert more_seeds["constants"] == first["constants"]
    sims = pd.read_csv(tmp_path / "plan" / "simulations.csv")
    assert len(sims) == 12 and sorted(sims["seed"].value_counts()) == [4, 4, 4]  # 2 x 4 reused, 4 new
    longer = plan(config, PlanSettings(**{**SETTINGS.__dict__, "budget_seconds": 60}))
    assert all(r["steps"] > 0 for r in longer["table"])
    sims = pd.read_csv(tmp_path / "plan" / "simulations.csv")
    table = pd.DataFrame(longer["table"])
    for _, row in table.iterrows():  # each of the new table's rows measured at its own steps
        match = sims[
            (sims["tau1"] == row["tau1"]) & (sims["tau2"] == row["tau2"]) & (sims["steps"] == row["steps"])
        ]
        assert len(match) >= 2 and np.isclose(match["loss"].mean(), row["loss_mean"])


def test_a_plan_folder_from_before_problem_keys_resumes_and_names_a_difference(
    tiny, tmp_path, monkeypatch
) -> None:
    """plan.json used to hold every setting (``settings``: config and plan) and a digest of them."""
    config = _config(tiny, tmp_path)
    plan(config, SETTINGS)
    state = tmp_path / "plan" / "plan.json"
    saved = json.loads(state.read_text())
    every = {"config": dataclasses.asdict(config), "plan": dataclasses.asdict(SETTINGS)}
    old = {"digest": "0123456789abcdef", "constants": saved["constants"], "settings": every}
    state.write_text(json.dumps(old))
    monkeypatch.setattr(plan_module, "estimate_constants", lambda *a: pytest.fail("estimated again"))
    plan(config, SETTINGS)
    state.write_text(json.dumps(old))
    with pytest.raises(InputError, match="batch_size = 8 there, 16 now"):
        plan(_config(tiny, tmp_path, batch_size=16), SETTINGS)


def test_a_plan_refuses_what_it_cannot_model_before_writing_anything(tiny, tmp_path, capsys) -> None:
    with pytest.raises(InputError, match="no latency or bandwidth"):
        plan(_config(tiny, tmp_path, latency=0.1, bandwidth=1e6), SETTINGS)
    with pytest.raises(InputError, match="lr_schedule = 'cdfl' cannot be planned"):
        plan(_config(tiny, tmp_path, lr_schedule="cdfl", mu=1.0, a=10.0), SETTINGS)
    with pytest.raises(InputError, match="the budget allows 1e\\+30 steps"):
        plan(_config(tiny, tmp_path), PlanSettings(**{**SETTINGS.__dict__, "budget_seconds": 1e30}))
    assert not (tmp_path / "plan").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="is not a writable folder"):
        plan(_config(tiny, tmp_path, out=str(tmp_path / "file")), SETTINGS)
    with pytest.raises(SystemExit):  # the plan chooses tau1 itself: the flag is not offered
        main(["plan", "--tau1", "3", "--budget-seconds", "10"])
    assert "unrecognized arguments: --tau1 3" in capsys.readouterr().err


def test_fixed_eta_ranks_only_the_schedule(tiny, tmp_path) -> None:
    settings = PlanSettings(**{**SETTINGS.__dict__, "eta": 0.01, "others": 1, "seeds": 1, "L": 1.0})
    out = plan(_config(tiny, tmp_path), settings)
    assert all(r["eta"] == 0.01 for r in out["table"])
    assert out["constants"]["L"] == 1.0 and out["constants"]["L_source"] == "given"


def test_eta_scales_train_each_configuration_at_other_step_sizes_as_contenders(tiny, tmp_path) -> None:
    """The bound's etas were compared only with each other (its choice 1.39 against 0.47 for a hand-tuned
    eta on MNIST, a probe): each simulated configuration now also trains at eta x each scale, and the regret
    test, measured rank and best measured configuration count those contenders; Spearman does not."""
    settings = dataclasses.replace(SETTINGS, top=1, others=2, eta_scales=(1.0, 30.0, 0.1))
    out = plan(_config(tiny, tmp_path), settings)
    table = pd.DataFrame(out["table"])
    assert len(table) == 9 and list(table["eta_scale"][:3]) == [1.0, 0.1, 30.0]  # the choice first
    base = table[table["eta_scale"] == 1]
    assert list(base["group"]) == ["top", "other", "other"] and base["bound"].is_monotonic_increasing
    scaled = table[table["eta_scale"] != 1]
    assert (scaled["group"] == "eta-scaled").all() and scaled["bound"].isna().all()  # null in the JSON
    for _, row in scaled.iterrows():
        own = base[(base["tau1"] == row["tau1"]) & (base["tau2"] == row["tau2"])].iloc[0]
        assert row["eta"] == pytest.approx(own["eta"] * row["eta_scale"], rel=1e-12)
        assert row["bound_rank"] == own["bound_rank"]
    from scipy.stats import spearmanr

    assert out["spearman"] == pytest.approx(spearmanr(base["bound_rank"], base["loss_mean"]).statistic)
    best = table.loc[table["loss_mean"].idxmin()]
    assert out["best_measured"]["eta"] == best["eta"] and out["simulated"] == 9
    assert out["chosen_rank"] == int(table.iloc[0]["measured_rank"])
    assert out["regret"] == pytest.approx(table.iloc[0]["loss_mean"] - best["loss_mean"])
    assert ("the best measured configuration" in out["notes"]) == (best["eta_scale"] != 1)
    assert "trains at the eta the bound chose for it" not in out["notes"]  # the contenders say it
    sims = pd.read_csv(tmp_path / "plan" / "simulations.csv")
    assert len(sims) == 18 and sims["eta"].nunique() == 9
    again = plan(_config(tiny, tmp_path), dataclasses.replace(settings, eta_scales=(30.0,)))  # reused
    assert len(pd.read_csv(tmp_path / "plan" / "simulations.csv")) == 18 and again["simulated"] == 6


def test_a_contender_that_trains_better_turns_the_verdict(tiny, tmp_path) -> None:
    """The bound's eta against itself at 0.01x: a far smaller step trains worse on every seed, so the
    choice is not beaten; handed 0.01x the bound's eta as the rule, 100x it (the bound's) beats it."""
    settings = dataclasses.replace(SETTINGS, top=1, others=0, seeds=3, eta_scales=(0.01,))
    held = plan(_config(tiny, tmp_path), settings)
    assert held["verdict"] == "holds", held["regret_test"]
    assert held["spearman"] == "nan" and "needs 3 or more ranked configurations (here 1" in held["notes"]
    upside = dataclasses.replace(settings, eta_scales=(100.0,))
    out = plan(_config(tiny, tmp_path, out=str(tmp_path / "p2")), upside, eta_rule=lambda eta: 0.01 * eta)
    assert out["verdict"] == "violated" and out["best_measured"]["eta_scale"] == 100.0, out["regret_test"]
    with pytest.raises(InputError, match=r"eta_rule gave eta = .*nan.* \(expected 1 numbers > 0\)"):
        plan(_config(tiny, tmp_path, out=str(tmp_path / "p3")), upside, eta_rule=lambda eta: eta * np.nan)


def _simulations(losses: dict[float, list[float]], diverged: tuple[float, ...] = ()) -> pd.DataFrame:
    """simulations.csv's rows for one cell at several etas (eta: its losses by seed; the first eta is the
    choice), ``diverged`` the etas whose runs diverged."""
    rows = [
        {
            "compressor": "identity",
            "parameter": np.nan,
            "tau1": 1,
            "tau2": 3,
            "eta": eta,
            "seed": seed,
            "bound": 3.0 if i == 0 else np.nan,
            "bound_rank": 1,
            "group": "top" if i == 0 else "eta-scaled",
            "steps": 20,
            "rounds": 5,
            "loss": loss,
            "test_accuracy": 0.9,
            "grad_norm2": 0.1,
            "diverged": eta in diverged,
            "eta_scale": eta / next(iter(losses)),
        }
        for i, (eta, seeds) in enumerate(losses.items())
        for seed, loss in enumerate(seeds)
    ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("recorded", [0.0, np.nan])
def test_a_diverged_contender_is_never_the_best_measured(recorded: float) -> None:
    """A contender at 1e6 x eta stopped at step 5 with the loss of its model then, 0.0: it was the best
    measured (rank 1, the floor 0, a choice within 1% of another contender 'violated'); with NaN the table
    raised IntCastingNaNError (a review)."""
    base = [1.00, 1.02, 0.98, 1.01]
    sims = _simulations({0.1: base, 0.12: [b - 0.003 for b in base], 1e5: [recorded] * 4}, diverged=(1e5,))
    table = _summary_table(sims)
    assert list(table["measured_rank"]) == [2, 1, 3] and table["loss_mean"].iloc[2] == np.inf
    test = plan_module.regret_test(table, sims)
    assert test["verdict"] == "holds" and test["best_loss"] == pytest.approx(1.0025 - 0.003), test
    notes = plan_module._notes(table, SETTINGS, "non-iid", {"heterogeneity": 1.0}, test)
    assert "1 configuration diverged on some seed, their loss counted as +inf: (1, 3, eta = 1e+05)" in notes
    assert any(
        n.startswith("the best measured configuration is tau1 = 1, tau2 = 3 at eta = 0.12 (1.2 x")
        for n in notes
    )


def test_eta_scales_leaving_float32_are_refused_before_any_simulation(tiny, tmp_path) -> None:
    """1e308 x eta stopped the plan after its first simulation, naming eta, not the scales (a review)."""
    for scale, shown in ((1e308, "is inf in float32"), (1e-50, "is 0 in float32")):
        settings = dataclasses.replace(SETTINGS, top=1, others=1, eta_scales=(scale,))
        out = tmp_path / f"p{scale:g}"
        with pytest.raises(InputError, match=f"x the eta of tau1 = .*: eta_scales\\) {shown}"):
            plan(_config(tiny, tmp_path, out=str(out)), settings)
        assert not (out / "runs").exists()


def _regret_of(*losses: list[float] | dict[int, float], others: int = 2) -> dict[str, Any]:
    """regret_test() for configurations with these per-seed losses (the first the bound's choice; seed s
    paired; a dict: only the seeds it names ran), among ``others`` worse configurations."""
    from sim.plan import CONFIGURATION, _summary_table

    rows = []
    for rank, seeds in enumerate([*losses, *([[10.0] * len(losses[0])] * others)]):
        for seed, loss in seeds.items() if isinstance(seeds, dict) else enumerate(seeds):
            rows.append({"compressor": np.nan, "parameter": np.nan, "tau1": 1 + rank, "tau2": 1, "eta": 0.1,
                         "bound": rank, "bound_rank": rank + 1, "group": "top", "rounds": 1, "steps": 2,
                         "loss": loss, "test_accuracy": 0.5, "grad_norm2": 1.0, "seed": seed,
                         "diverged": not np.isfinite(loss)})  # fmt: skip
    sims = pd.DataFrame(rows)
    assert set(CONFIGURATION) < set(sims.columns)
    return plan_module.regret_test(_summary_table(sims), sims)


def _verdict_of(chosen: list[float], best: list[float], others: int = 2) -> str:
    """The regret test's verdict for a choice and the best with these per-seed losses (seed s paired), among
    ``others`` worse configurations."""
    return str(_regret_of(chosen, best, others=others)["verdict"])


def test_verdict_judges_the_paired_regret_and_can_hold_fail_and_be_undecided() -> None:
    """By the paired seeds, against every other configuration: the rule before (a regret within one pooled
    seed standard deviation) held a choice 0.10 worse on every one of 50 seeds and called a choice 40% worse
    inconclusive (an audit); the next held a choice that was the measured best by chance (a review)."""
    rng = np.random.default_rng(0)
    seeds = rng.normal(1.0, 0.3, 50)  # a large seed effect, shared by the configurations
    assert _verdict_of(list(seeds + 0.10 + rng.normal(0, 0.01, 50)), list(seeds)) == "violated"
    assert _verdict_of(list(seeds[:5] + 0.10), list(seeds[:5])) == "violated"  # deterministic: d alone
    assert _verdict_of([1.4, 1.42], [1.0, 1.01]) == "violated"  # 40% worse
    assert _verdict_of(list(seeds + 0.001 + rng.normal(0, 0.001, 50)), list(seeds)) == "holds"  # 0.1%
    assert _verdict_of(list(seeds - 0.05 + rng.normal(0, 0.01, 50)), list(seeds)) == "holds"  # the best
    assert _verdict_of([1.3, 0.95], [1.0, 1.1]) == "inconclusive"  # d = 0.3, -0.15: undecided
    assert _verdict_of([0.99, 1.02], [1.0, 1.02]) == "inconclusive"  # the measured best, by 2 close seeds
    assert _verdict_of([1.03, 1.13], [1.0, 1.1]) == "violated"  # 3% and 2.7% worse
    assert _verdict_of([float("inf")] * 2, [1.0, 1.1]) == "violated"  # diverged on every seed
    assert _verdict_of([float("inf"), 1.2], [1.0, 1.1]) == "inconclusive"
    assert _verdict_of([float("nan"), 1.1, 1.05], [1.0, 1.1, 1.05]) == "inconclusive"  # NaN: diverged there
    assert _verdict_of([1.2], [1.0]) == "inconclusive"  # one seed: no spread to judge by
    assert _verdict_of([1.005], [1.0]) == "inconclusive"
    # every configuration diverged on some seed: the floor '1% of the best's mean loss' was inf, and a choice
    # 5x worse on three seeds held (a review)
    inf = float("inf")
    assert _regret_of([inf, 5, 5, 5], [1, inf, 1, 1], [1, 1, inf, 1], others=0)["verdict"] == "inconclusive"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--budget-seconds", "-1"], "budget_seconds = -1"),
        (["--budget-seconds", "10", "--top", "0"], "top = 0"),
        (["--budget-seconds", "10", "--bound", "best"], "bound = 'best'"),
        (["--budget-seconds", "10", "--L", "0"], "L = 0"),
        (["--budget-seconds", "10", "--eta-scales", "3", "0"], "eta_scales holds 0.0, out of range"),
        # it named lr_schedule, which plan has no flag for
        (
            ["--budget-seconds", "10", "--mu", "0.1"],
            "mu = 0.1 has no effect on a dfl plan: it is a C-DFL plan's",
        ),
    ],
)
def test_cli_rejects_bad_plans(flags, message, tiny, tmp_path, capsys) -> None:
    argv = [
        "plan",
        "--dataset",
        f"npz:{tiny}",
        "--model",
        "logreg",
        "--nodes",
        "4",
        "--out",
        str(tmp_path / "p"),
    ]
    assert main([*argv, *flags]) == 2
    assert message in capsys.readouterr().err


def test_cli_plan_says_which_config_file_fields_it_sets_itself(tiny, tmp_path, capsys, monkeypatch) -> None:
    """A --config file's tau1 = 8 and steps were dropped without a word (the plan sets them itself)."""
    config = tmp_path / "c.toml"
    config.write_text(f'dataset = "npz:{tiny}"\nmodel = "logreg"\nnodes = 4\ntau1 = 8\nsteps = 50\n')
    argv = [
        "plan",
        "--config",
        str(config),
        "--budget-seconds",
        "10",
        "--top",
        "0",
        "--out",
        str(tmp_path / "p"),
    ]
    import sim.cli

    reads = []
    read = sim.cli.config_file_values
    monkeypatch.setattr(sim.cli, "config_file_values", lambda *a, **k: reads.append(a) or read(*a, **k))
    assert main(argv) == 2  # (top = 0: refused after the note, before any work)
    err = capsys.readouterr().err
    assert "note: plan: the fields tau1, steps in " in err and "are the plan's to set" in err
    assert len(reads) == 1  # read once: the note and the run must see the same file (it was read twice)


def test_cli_plan_json(tiny, tmp_path, capsys) -> None:
    argv = ["plan", "--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "4", "--batch-size", "8",
            "--budget-seconds", "20", "--top", "1", "--others", "1", "--seeds", "1", "--max-tau1", "3",
            "--max-tau2", "3", "--out", str(tmp_path / "p"), "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"chosen", "spearman", "regret", "chosen_rank", "table"} <= out.keys()
    assert {"tau1", "tau2", "eta", "bound", "loss_mean", "loss_std"} <= out["table"][0].keys()


def test_non_iid_optimiser_finds_the_best_eta_of_each_cell() -> None:
    """The golden-section search against a brute-force grid of 20,000 step sizes, cell by cell."""
    problem = dict(L=5.0, sigma2=2.0, N=10, gap=2.0, zeta=0.87, cost=CostModel(1.0, 0.5), budget_seconds=300,
                   max_tau1=4, max_tau2=4, bound="non-iid", heterogeneity=3.0)  # fmt: skip
    grid = optimize_dfl(**problem).grid_frame()
    for _, cell in grid.iterrows():
        etas = np.linspace(1e-6, cell["eta_max"], 20_000)
        K = cell["rounds"]
        values = f.non_iid_local_step_bound(etas, 5.0, 2.0, 3.0, 10, cell["tau1"], cell["tau2"], 0.87, K, 2.0)
        assert cell["bound"] <= values.min() * (1 + 1e-9)
        assert cell["eta"] <= cell["eta_max"] * (1 + 1e-12)
    fixed = optimize_dfl(**problem, eta=0.01).grid_frame()
    assert set(fixed["eta"].dropna()) == {0.01}
    assert np.isinf(fixed.loc[fixed["eta_max"] < 0.01, "bound"]).all()


def test_cdfl_plan_ranks_compressors_under_a_bits_budget(tiny, tmp_path) -> None:
    settings = PlanSettings(
        budget_bits=2e5, mu=0.05, G2=20.0, top=2, others=1, seeds=1, max_tau1=4, max_tau2=4, hessian_iters=5
    )
    out = plan(_config(tiny, tmp_path, algorithm="cdfl"), settings)
    table = pd.DataFrame(out["table"])
    assert out["bound_used"] == "cdfl (Lemma 13)" and {"compressor", "parameter"} <= out["chosen"].keys()
    assert len(table) == 3 and table["bound"].is_monotonic_increasing
    best = table.loc[table["loss_mean"].idxmin()]  # (best_measured lacked the compressor, a review)
    assert {k: out["best_measured"][k] for k in ("compressor", "parameter", "tau1")} == {
        "compressor": best["compressor"],
        "parameter": best["parameter"],
        "tau1": best["tau1"],
    }
    sims = pd.read_csv(tmp_path / "plan" / "simulations.csv")
    assert set(sims["compressor"]) == set(table["compressor"])
    with pytest.raises(InputError, match="needs mu, G2"):
        plan(_config(tiny, tmp_path / "x", algorithm="cdfl"), PlanSettings(budget_bits=1e5))
    with pytest.raises(InputError, match="budget is missing"):
        plan(_config(tiny, tmp_path / "y"), PlanSettings())
    with pytest.raises(InputError, match=r"settings = None is not a PlanSettings"):
        plan(_config(tiny, tmp_path / "z"), None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("algorithm", "settings", "fragment"),
    [  # each was taken: a DFL plan recorded budget_bits = 1 beside runs sending 1e6 bits
        ("dfl", {"budget_seconds": 20, "budget_bits": 1.0}, "budget_bits = 1.0 has no effect on a dfl plan"),
        ("dfl", {"budget_seconds": 20, "G2": 5.0}, "G2 = 5.0 has no effect on a dfl plan: it is a C-DFL"),
        ("cdfl", {"budget_bits": 1e5, "mu": 0.1, "G2": 1.0, "budget_seconds": 20}, "budget_seconds = 20"),
        ("dfl", {"budget_seconds": 20, "top": 1, "others": 0}, "train one configuration"),
        # wrong types: 1.5 and "3" failed inside numpy, True trained as 1 seed
        ("dfl", {"budget_seconds": 20, "top": 1.5}, "top = 1.5 has the wrong type (expected an integer)"),
        ("dfl", {"budget_seconds": 20, "seeds": True}, "seeds = True has the wrong type"),
        ("dfl", {"budget_seconds": "20"}, "budget_seconds = '20' has the wrong type (expected a finite"),
        ("cdfl", {"budget_bits": 1e5, "mu": 0.1, "G2": float("inf")}, "G2 = inf is not finite (expected a"),
        ("dfl", {"budget_seconds": 20, "eta_scales": (3.0, -1.0)}, "eta_scales holds -1.0, out of range"),
        ("dfl", {"budget_seconds": 20, "eta_scales": (3.0, 3)}, "eta_scales = (3.0, 3) repeats a value"),
        # they shared one simulation, counted as two seeds of one row (a review)
        (
            "dfl",
            {"budget_seconds": 20, "eta_scales": (3.0, 3.0000000000001)},
            "repeats a value, or 1, to within",
        ),
        ("dfl", {"budget_seconds": 20, "eta_scales": (1.0000000000001,)}, "repeats a value, or 1, to within"),
        ("dfl", {"budget_seconds": 20, "eta_scales": [3.0]}, "eta_scales = [3.0] has the wrong type"),
        ("dfl", {"budget_seconds": 20, "eta_scales": (3.0, True)}, "expected a tuple of finite numbers"),
        ("dfl", {"budget_seconds": 20, "eta_scales": (float("nan"),)}, "eta_scales = (nan,) is not finite"),
        ("dfl", {"budget_seconds": 20, "top": 1, "others": 0, "eta_scales": (1.0,)}, "one configuration"),
        ("cdfl", {"budget_bits": 1e5, "mu": 0.1, "G2": 1.0, "eta_scales": (3.0,)}, "cannot scale a C-DFL"),
    ],
)
def test_plan_settings_without_effect_or_comparison_are_refused(algorithm, settings, fragment) -> None:
    """A single trained configuration gave verdict 'holds' with Spearman NaN; flags of the other
    algorithm's plan were recorded and ignored."""
    with pytest.raises(InputError, match=re.escape(fragment)):
        PlanSettings(**settings).validate(algorithm)


def test_a_cut_simulations_row_runs_again_and_a_runs_folder_is_refused(tiny, tmp_path, capsys) -> None:
    """Found by a robustness probe: a simulations.csv row cut short kept its key columns, so it counted as
    done and its seed's missing loss left the mean to the other seed; a plan went into a run's folder, whose
    interrupted run then could not resume."""
    from sim.plan import _read_simulations

    path = tmp_path / "simulations.csv"
    header = "compressor,parameter,tau1,tau2,eta,seed,bound,bound_rank,group,steps,rounds,loss,test_accuracy,"
    header += "grad_norm2,diverged,model_time"
    path.write_text(
        f"{header}\n"
        "identity,,1,1,0.1,0,1.0,1,top,10,5,0.5,0.9,0.01,False,20\n"
        "identity,,1,1,0.1,1,1.0,1,top,10,5,,,,True,20\n"  # diverged: no loss, but complete
        "identity,,1,2,0.1,0,1.0,2,top,15,5,0.4\n"  # cut short
        "identity,,1,2,0.1,1,1.0,2,top,15,5,abc,0.9,0.01,False,20\n"  # a word: a pandas traceback
        "identity,,1,2,x,2,1.0,2,top,15,5,0.4,0.9,0.01,False,20\n"
    )
    records = _read_simulations(path)
    assert [(r["tau2"], r["seed"]) for r in records] == [(1, 0), (1, 1)]
    assert "3 incomplete or unreadable rows (lines 4, 5, 6): their simulations run" in capsys.readouterr().err
    run_folder = tmp_path / "a-run"
    run_folder.mkdir()
    (run_folder / "checkpoint.pt").write_bytes(b"")
    with pytest.raises(InputError, match="is a dfl-sim run folder"):
        plan(_config(tiny, tmp_path, out=str(run_folder)), SETTINGS)


def test_a_simulation_is_the_same_only_at_the_same_eta() -> None:
    """np.isclose's absolute tolerance 1e-8 took any two etas below it for one: a plan at --eta 9e-9 reported
    the runs of 1e-9 (a probe's finding). A float's round trip through simulations.csv still matches."""
    from sim.plan import MATCHED_EXACTLY, _same_configuration

    record = {**{k: 1 for k in MATCHED_EXACTLY}, "seed": 0, "eta": 1e-9, "parameter": None}
    row = pd.Series({**record, "eta": 9e-9})
    assert not _same_configuration(record, row, 0)
    assert _same_configuration(record, pd.Series({**record, "eta": float(repr(1e-9))}), 0)
    assert _same_configuration({**record, "eta": 0.1 + 0.2}, pd.Series({**record, "eta": 0.3}), 0)
    assert not _same_configuration({**record, "eta": 0.3}, pd.Series({**record, "eta": 0.3 * (1 + 1e-9)}), 0)


def test_simulations_of_close_etas_get_folders_of_their_own(tmp_path) -> None:
    """eta to 4 digits put 0.10001 in 0.1's folder, training over a run simulations.csv still listed; a plan
    folder from before keeps its 4-digit folder where that holds the very same eta (a review's finding)."""
    from sim.plan import _simulation_folder

    name = "identity-tau1=2-tau2=1"
    folders = {_simulation_folder(tmp_path, name, eta, 40, 0) for eta in (0.1, 0.10001, 0.1 + 1e-15)}
    assert len(folders) == 3 and tmp_path / f"{name}-eta=0.1-steps=40-seed=0" in folders
    eta = 0.02074308192659849
    legacy = tmp_path / f"{name}-eta=0.02074-steps=40-seed=0"
    legacy.mkdir()
    (legacy / "config.json").write_text(json.dumps({"eta": eta}))
    assert _simulation_folder(tmp_path, name, eta, 40, 0) == legacy  # its checkpoint continues there
    assert _simulation_folder(tmp_path, name, 0.020741, 40, 0).name == f"{name}-eta=0.020741-steps=40-seed=0"


def test_auto_plans_with_the_heterogeneity_only_where_the_estimate_resolves_it() -> None:
    """i.i.d. data planned with the non-i.i.d. bound at varsigma^2 = 0.56 against the 9.65 of sampling
    noise its estimate had subtracted: the noise's sign chose the bound (a probe)."""
    from sim.plan import heterogeneity_resolved

    def constants(v2: float, noise: float) -> dict:
        return {"heterogeneity": v2, "estimated": {"heterogeneity_sampling_noise": noise}}

    estimated = PlanSettings(budget_seconds=10)
    assert not heterogeneity_resolved(constants(0.562, 9.65), estimated)
    assert heterogeneity_resolved(constants(34.5, 3.0), estimated)
    assert not heterogeneity_resolved(constants(0.0, 0.0), estimated)
    given = PlanSettings(budget_seconds=10, heterogeneity=0.5)  # the user's value is taken as given
    assert heterogeneity_resolved(constants(0.5, 9.65), given)


def test_the_regret_test_errs_at_its_level_at_the_margin() -> None:
    """A choice 1% worse than the other configuration (exactly the margin), seeds with a shared effect and
    their own noise: 'holds' at most about REGRET_LEVEL of the time (the rule before held it 37% of the
    time, with 2 seeds, when the choice came out best by chance; a review), and, equal choices, 'violated'
    as rarely (300 draws: 15 and 3, 2026-11-29)."""
    from sim.plan import REGRET_LEVEL

    rng = np.random.default_rng(3)
    holds = violated = 0
    reps = 300
    for _ in range(reps):
        seed_effect = rng.normal(1.0, 0.1, 5)
        other = seed_effect + rng.normal(0, 0.02, 5)
        worse = _verdict_of(list(1.01 * seed_effect + rng.normal(0, 0.02, 5)), list(other), others=0)
        same = _verdict_of(list(seed_effect + rng.normal(0, 0.02, 5)), list(other), others=0)
        holds += worse == "holds"
        violated += same == "violated"
    assert holds / reps <= REGRET_LEVEL + 0.03 and violated / reps <= REGRET_LEVEL + 0.03, (holds, violated)


def test_the_violation_is_tested_against_a_contender_picked_on_other_seeds() -> None:
    """With 4 seeds and 28 other configurations the contender with the lowest loss on seed 0 is tested
    alone on seeds 1-3 (at level 0.025): a choice 0.2-0.4 worse than it on every seed is violated
    (Bonferroni over the 28 alone, the rule before it, needs a t quantile of 8.4 and called it
    inconclusive); the contender best on the tested seeds but not on seed 0 is not the one tested."""
    chosen = [1.0, 1.1, 0.9, 1.05]
    better = [c - d for c, d in zip(chosen, (0.30, 0.20, 0.40, 0.25), strict=True)]
    late = [2.0, 0.1, 0.1, 0.1]  # the best on seeds 1-3, not on seed 0
    test = _regret_of(chosen, better, late, others=26)
    assert test["verdict"] == "violated" and test["selected_on"] == [0], test
    assert test["lower_against"]["tau1"] == 2 and test["lower"] == pytest.approx(0.0123, abs=1e-4), test


def test_bonferroni_keeps_half_the_level_where_splitting_is_weak() -> None:
    """Splitting alone (a first version) missed, with 3 seeds and 2 contenders, a choice 0.17-0.24 worse than
    one on every seed (its 2 testing seeds: t = 6.3), and contenders that lack the picking seed left it
    with none to test and '-inf' against a contender never tested (a review): Bonferroni's half decides."""
    test = _regret_of([1.0, 1.1, 0.9], [0.8, 0.85, 0.72], [1.5, 1.6, 1.4], others=0)
    assert test["verdict"] == "violated" and test["selected_on"] == [], test
    assert test["lower"] == pytest.approx(0.0754, abs=1e-3) and test["lower_against"]["tau1"] == 2, test
    test = _regret_of([1.0, 1.1, 0.9, 1.05], {1: 0.8, 2: 0.6, 3: 0.75}, {1: 10.0, 2: 10.0, 3: 10.0}, others=0)
    assert test["verdict"] == "violated" and test["selected_on"] == [] and test["seeds"] == 3, test


def test_the_margin_is_each_seeds_own_not_the_noise_of_a_mean() -> None:
    """Seeds whose losses spread widely (0.3) around pairs that agree closely, the choice worse by exactly
    1% of the mean loss: the floor '1% of the best's mean loss' moved with the seeds' mean more than the
    pairs' noise allows, and 'violated' came in 83 of these 300 draws (a review); with 1% of the other's
    loss seed by seed, at most about REGRET_LEVEL (7 of them, 2026-11-29)."""
    from sim.plan import REGRET_LEVEL

    rng = np.random.default_rng(8)
    violated = 0
    for _ in range(300):
        shared = rng.normal(1.0, 0.3, 4)
        rows = [list(shared + 0.01 + rng.normal(0, 0.0005, 4))]  # 1% of the mean loss, 1.0, worse
        rows += [list(shared + rng.normal(0, 0.0005, 4)) for _ in range(3)]
        violated += _regret_of(*rows, others=0)["verdict"] == "violated"
    assert violated / 300 <= REGRET_LEVEL + 0.03, violated


def test_the_picked_contender_errs_at_the_level_and_finds_what_bonferroni_misses() -> None:
    """Six configurations as good as the choice but for the margin (1% better), 4 seeds with a shared
    effect: 'violated' at most about REGRET_LEVEL of the time (these 300 draws: 16); and 29 configurations,
    one better by four times a run's own noise: 'violated' in 60 of these 100 draws, where Bonferroni over
    them alone (the rule before) said it in 24 (2026-11-29)."""
    from sim.plan import REGRET_LEVEL

    rng = np.random.default_rng(5)
    violated = 0
    for _ in range(300):
        shared = rng.normal(1.0, 0.1, 4)
        rows = [list(shared + rng.normal(0, 0.02, 4))]
        rows += [list(shared / 1.01 + rng.normal(0, 0.02, 4)) for _ in range(6)]
        violated += _regret_of(*rows, others=0)["verdict"] == "violated"
    assert violated / 300 <= REGRET_LEVEL + 0.03, violated
    found = 0
    for _ in range(100):
        shared = rng.normal(1.0, 0.1, 4)
        rows = [list(shared + rng.normal(0, 0.02, 4)), list(shared - 0.08 + rng.normal(0, 0.02, 4))]
        rows += [list(shared + 0.02 + rng.normal(0, 0.02, 4)) for _ in range(28)]
        found += _regret_of(*rows, others=0)["verdict"] == "violated"
    assert found >= 50, found


def test_a_flat_loss_is_named_as_an_estimate_and_leaves_no_plan_behind(tmp_path) -> None:
    """One class in the data: the plan said 'L = 0 is out of range' of a value the user had not given, and
    with --L the gap's refusal came after plan.json held gap = 0, so that --gap was then refused there as
    another problem (a probe)."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(300, 8)), np.zeros(300, dtype=int)
    np.savez(tmp_path / "one.npz", x_train=x[:240], y_train=y[:240], x_test=x[240:], y_test=y[240:])
    config = _config(tmp_path / "one.npz", tmp_path, partition="iid")
    with pytest.raises(
        InputError, match=r"^the estimated L = 0 \(the Hessian's largest eigenvalue at the init"
    ):
        plan(config, SETTINGS)
    with pytest.raises(
        InputError, match=r"^the estimated gap = 0 \(the loss at the initial model\).*--gap given"
    ):
        plan(config, PlanSettings(**{**SETTINGS.__dict__, "L": 1.0}))
    assert not (tmp_path / "plan" / "plan.json").exists()
