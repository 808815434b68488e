"""C-DFL optimiser: brute force over compressors and (tau1, tau2) with scalar Lemma 13 calls."""

from __future__ import annotations

import json
import math

import pytest

from bounds import InputError
from bounds.cdfl.compression import make_compressor
from bounds.cdfl.proposition2 import cdfl_bound
from bounds.cli import main
from bounds.plan.optimize_cdfl import default_candidates, optimize_cdfl

PROBLEM = dict(L=1.0, mu=0.1, sigma2_bar=1.0, G2=1.0, N=10, zeta=0.87, beta_mix=4 / 3)
NETWORK = dict(dim=1000, t_comp=0.01, latency=0.001, bandwidth=1e6)
CANDIDATES = [("identity", None), ("top_k", 100), ("rand_k", 670), ("gossip", 0.5), ("qsgd", 4)]


@pytest.mark.parametrize("bound", ["paper", "repaired"])
def test_optimum_equals_brute_force(bound: str) -> None:
    """Lemma 13 as printed, or its last step repaired (bound_repaired, tau1 = 1 included), brute-forced."""
    r = optimize_cdfl(**PROBLEM, **NETWORK, budget_seconds=60, max_tau1=5, max_tau2=5, candidates=CANDIDATES,
                      bound=bound)  # fmt: skip
    best = (math.inf, None)
    for name, parameter in CANDIDATES:
        q = make_compressor(name, parameter)
        t_comm = NETWORK["latency"] + q.bits(1000) / NETWORK["bandwidth"]
        for tau1 in range(1, 6):
            for tau2 in range(1, 6):
                K = math.floor(60 / (tau1 * 0.01 + tau2 * t_comm))
                if K < 1:
                    continue
                b = cdfl_bound(**PROBLEM, tau1=tau1, tau2=tau2, K=K, delta=q.delta(1000))
                value = b.bound if bound == "paper" else b.bound_repaired
                if b.conditions_ok and value < best[0]:
                    best = (value, (name, tau1, tau2, K))
                    eta = b.eta_0 if bound == "paper" else 4 / (PROBLEM["mu"] * b.a_repaired)  # its schedule
    name, tau1, tau2, K = best[1]
    assert (r.tau1, r.tau2, r.rounds) == (tau1, tau2, K) and name in r.message
    assert r.bound == pytest.approx(best[0], rel=1e-12)
    assert r.eta == pytest.approx(eta, rel=1e-12)
    frame = r.grid_frame()
    assert len(frame) == 5 * 25 and set(frame["compressor"]) == {c for c, _ in CANDIDATES}


def test_an_unknown_cdfl_bound_is_refused() -> None:
    from sim.plan import PlanSettings

    with pytest.raises(InputError, match="bound = 'lemma13' is unknown"):
        optimize_cdfl(**PROBLEM, **NETWORK, budget_seconds=60, bound="lemma13")
    r = optimize_cdfl(**PROBLEM, **NETWORK, budget_seconds=60, max_tau1=1, bound="repaired")
    assert r.success and r.tau1 == 1 and math.isfinite(r.bound)  # tau1 = 1: (122)'s exact worst case
    b = cdfl_bound(**PROBLEM, tau1=1, tau2=r.tau2, K=r.rounds, delta=1.0)
    assert r.bound == pytest.approx(b.bound_repaired, rel=1e-12) and "identity" in r.message
    settings = PlanSettings(budget_bits=1e6, mu=0.1, G2=1.0, bound="non-iid")
    with pytest.raises(InputError, match="bound = 'non-iid' is not a C-DFL bound"):
        settings.validate("cdfl")  # a C-DFL plan used to drop it in silence


def test_default_candidates_are_valid_for_the_dimension() -> None:
    for name, parameter in default_candidates(37):
        q = make_compressor(name, parameter)
        assert 0 < q.delta(37) <= 1


def test_budget_too_small() -> None:
    with pytest.raises(InputError, match=r"the budget fits no round"):
        optimize_cdfl(**PROBLEM, **NETWORK, budget_seconds=1e-6, candidates=CANDIDATES[:1])


def test_cli_cdfl_optimize_json(capsys) -> None:
    code = main(
        [
            "optimize",
            "--bound",
            "cdfl",
            "--L",
            "1",
            "--mu",
            "0.1",
            "--sigma2",
            "1",
            "--G2",
            "1",
            "--nodes",
            "10",
            "--gap",
            "1",
            "--zeta",
            "0.87",
            "--beta",
            "1.33",
            "--t-comp",
            "0.01",
            "--latency",
            "0.001",
            "--bandwidth",
            "1e6",
            "--dim",
            "1000",
            "--budget-seconds",
            "60",
            "--max-tau1",
            "4",
            "--max-tau2",
            "4",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert (
        code == 0 and {"tau1", "tau2", "eta", "bound", "rounds", "time", "compressor", "delta"} <= data.keys()
    )


def test_the_best_compressor_is_a_field_not_only_message_text() -> None:
    """Every runner-up carried its compressor, parameter and delta; the best cell only in its message."""
    r = optimize_cdfl(L=1, mu=0.5, sigma2_bar=1, G2=1, N=10, zeta=0.87, beta_mix=1.33, budget_seconds=100,
                      **NETWORK)  # fmt: skip
    best = r.grid_frame().sort_values("bound", kind="stable").iloc[0]
    assert (r.compressor, r.delta) == (best["compressor"], pytest.approx(best["delta"]))
    assert r.to_dict()["compressor"] == r.compressor and f"compressor : {r.compressor}" in str(r)


def test_cli_cdfl_optimize_when_identity_wins(capsys) -> None:
    """Cheap bandwidth makes identity the best compressor; its parameter None broke the CLI (KeyError)."""
    from bounds.cli import main

    argv = ["optimize", "--bound", "cdfl", "--L", "1", "--mu", "0.1", "--sigma2", "1", "--G2", "1", "--nodes",
            "10", "--topology", "ring", "--gap", "1", "--t-comp", "1", "--latency", "0.01", "--bandwidth",
            "1e9", "--dim", "100", "--budget-seconds", "1000", "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["compressor"], out["compressor_param"], out["delta"]) == ("identity", None, 1.0)


@pytest.mark.parametrize(("given", "used"), [("auto", "paper"), ("paper", "paper"), ("repaired", "repaired")])
def test_a_cdfl_plan_ranks_by_the_bound_it_is_given(monkeypatch, given: str, used: str) -> None:
    import sim.plan as plan_module
    from sim.config import RunConfig
    from sim.plan import PlanSettings

    seen = {}

    def spy(**kwargs: object) -> None:
        seen.update(kwargs)
        raise RuntimeError("stop after the call")

    monkeypatch.setattr(plan_module, "optimize_cdfl", spy)
    settings = PlanSettings(budget_bits=1e6, mu=0.1, G2=1.0, bound=given)
    settings.validate("cdfl")
    constants = {"L": 1.0, "sigma2": 1.0, "zeta": 0.87, "beta_mix": 4 / 3, "dim": 100}
    with pytest.raises(RuntimeError, match="stop after the call"):
        plan_module._cdfl_grid(RunConfig(algorithm="cdfl"), settings, constants)
    assert seen["bound"] == used


@pytest.mark.parametrize("candidates", [["identity"], [], "top_k", [("top_k", 5, 1)]])
def test_bad_candidates_are_refused(candidates) -> None:
    """['identity'] failed to unpack (a ValueError); [] was replaced by the default list in silence."""
    with pytest.raises(InputError, match="expected a non-empty list of \\(name, parameter\\) pairs"):
        optimize_cdfl(**PROBLEM, **NETWORK, budget_seconds=60, candidates=candidates)
