"""``dfl-sim plan`` (issue 14): rank by the bound, simulate, compare; and the optimiser it calls."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import sim.plan as plan_module
from bounds import CostModel, InputError, optimize_dfl
from bounds.dfl import formulas as f
from sim.cli import main
from sim.config import RunConfig
from sim.plan import PlanSettings, plan, verdict


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
    again = plan(_config(tiny, tmp_path), SETTINGS)
    assert again["table"] == first["table"] and again["spearman"] == first["spearman"]
    with pytest.raises(InputError, match="other settings"):
        plan(_config(tiny, tmp_path), PlanSettings(**{**SETTINGS.__dict__, "seeds": 3}))


def test_fixed_eta_ranks_only_the_schedule(tiny, tmp_path) -> None:
    settings = PlanSettings(**{**SETTINGS.__dict__, "eta": 0.01, "others": 1, "seeds": 1, "L": 1.0})
    out = plan(_config(tiny, tmp_path), settings)
    assert all(r["eta"] == 0.01 for r in out["table"])
    assert out["constants"]["L"] == 1.0 and out["constants"]["L_source"] == "given"


def test_verdict_can_hold_fail_and_be_undecided() -> None:
    def table(chosen: tuple[float, float], best: tuple[float, float]) -> pd.DataFrame:
        rows = [
            dict(zip(("loss_min", "loss_max"), chosen, strict=True)),
            dict(zip(("loss_min", "loss_max"), best, strict=True)),
        ]
        frame = pd.DataFrame(rows)
        frame["loss_mean"] = (frame["loss_min"] + frame["loss_max"]) / 2
        frame["loss_std"] = (frame["loss_max"] - frame["loss_min"]) / np.sqrt(2)
        return frame

    assert verdict(table((1.0, 1.2), (1.05, 1.15))) == "holds"  # the choice is the best
    assert verdict(table((1.15, 1.25), (1.0, 1.2))) == "holds"  # within the seed spread
    assert verdict(table((2.0, 2.1), (1.0, 1.1))) == "violated"  # every seed worse
    assert verdict(table((1.3, 1.9), (1.0, 1.4))) == "inconclusive"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--budget-seconds", "-1"], "budget_seconds = -1"),
        (["--budget-seconds", "10", "--top", "0"], "top = 0"),
        (["--budget-seconds", "10", "--bound", "best"], "bound = 'best'"),
        (["--budget-seconds", "10", "--L", "0"], "L = 0"),
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
    sims = pd.read_csv(tmp_path / "plan" / "simulations.csv")
    assert set(sims["compressor"]) == set(table["compressor"])
    with pytest.raises(InputError, match="needs mu, G2"):
        plan(_config(tiny, tmp_path / "x", algorithm="cdfl"), PlanSettings(budget_bits=1e5))
    with pytest.raises(InputError, match="budget is missing"):
        plan(_config(tiny, tmp_path / "y"), PlanSettings())
