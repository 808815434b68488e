"""C-DFL optimiser: brute force over compressors and (tau1, tau2) with scalar Lemma 13 calls."""

from __future__ import annotations

import json
import math

import pytest

from bounds import InputError
from bounds.cdfl.compression import QSGD, make_compressor
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

    with pytest.raises(InputError, match="unknown bound 'lemma13'"):
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
            "10", "--topology", "ring", "--t-comp", "1", "--latency", "0.01", "--bandwidth",
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


def test_cdfl_optimize_starts_from_init_dist2_and_refuses_a_gap(capsys) -> None:
    """--bound cdfl required --gap and ignored it (Lemma 13 starts from ||u0 - u*||^2): --gap is now refused
    there, --init-dist2 reaches the bound, and the other bounds still need --gap and refuse --init-dist2."""
    from bounds.cli import main

    base = ["optimize", "--L", "1", "--mu", "0.1", "--sigma2", "1", "--G2", "1", "--nodes", "10",
            "--topology", "ring", "--t-comp", "1", "--latency", "0.01", "--bandwidth", "1e9", "--dim", "100",
            "--budget-seconds", "1000", "--max-tau1", "6", "--max-tau2", "6", "--json"]  # fmt: skip
    assert main([*base, "--bound", "cdfl", "--gap", "1"]) == 2
    assert "--gap 1.0 has no effect: Lemma 13 bounds F(w) - F* from ||u0 - u*||^2" in capsys.readouterr().err
    bounds = []
    for dist2 in (None, 400.0, 4e4):  # None: the default (2 G / mu)^2 = 400
        assert main([*base, "--bound", "cdfl"] + ([] if dist2 is None else ["--init-dist2", str(dist2)])) == 0
        bounds.append(json.loads(capsys.readouterr().out)["bound"])
    assert bounds[0] == bounds[1] < bounds[2]
    problem = dict(L=1, mu=0.1, sigma2_bar=1, G2=1, N=10, zeta=0.87, beta_mix=1.33, budget_seconds=100)
    far = optimize_cdfl(**problem, init_dist2=4e4, **NETWORK)
    assert far.bound > optimize_cdfl(**problem, **NETWORK).bound
    dfl = ["optimize", "--L", "1", "--sigma2", "1", "--nodes", "10", "--topology", "ring", "--t-comp", "1",
           "--t-comm", "1", "--budget-seconds", "100", "--max-tau1", "6", "--max-tau2", "6"]  # fmt: skip
    assert main(dfl) == 2 and "--bound repaired needs --gap" in capsys.readouterr().err
    assert main([*dfl, "--gap", "1", "--init-dist2", "4"]) == 2
    assert "--init-dist2 4.0 has no effect: only --bound cdfl reads it" in capsys.readouterr().err


def test_the_qsgd_grid_is_the_best_s_of_every_message_size() -> None:
    """qsgd s = 2^e - 1 (e = 1..16) is the largest s of its bits; a brute force over every s <= 511 finds no
    better qsgd cell (the old grid, s = 1, 2, 4, 8, 16, 64, missed s = 127: a bound 1.37x lower here)."""
    problem = dict(L=1, mu=0.1, sigma2_bar=1, G2=1, N=10, zeta=0.87, beta_mix=1.33, dim=1000, t_comp=0.01,
                   latency=0.0, bandwidth=1e5, budget_seconds=1e4, max_tau1=6, max_tau2=6)  # fmt: skip
    grid = [s for name, s in default_candidates(1000) if name == "qsgd"]
    assert grid == [2**e - 1 for e in range(1, 17)]
    assert all(QSGD(s).bits(1000) < QSGD(s + 1).bits(1000) for s in grid)  # s + 1 costs a bit more
    best = optimize_cdfl(**problem, candidates=[("qsgd", s) for s in grid])
    brute = min(optimize_cdfl(**problem, candidates=[("qsgd", s)]).bound for s in range(1, 512))
    assert best.bound == pytest.approx(brute, rel=1e-12) and best.parameter == 127
    old = optimize_cdfl(**problem, candidates=[("qsgd", s) for s in (1, 2, 4, 8, 16, 64)])
    assert old.bound > 1.3 * best.bound


def test_a_budget_that_only_compressed_rounds_fit_is_not_refused() -> None:
    """The first candidate, identity, refused the budget for all: 1e5 floats over 1e3 bit/s take 3,200 s a
    round, while rand_k with k = 1,000 fits in 100 s. Nothing fits: the error names the cheapest round."""
    problem = dict(L=1, mu=0.1, sigma2_bar=1, G2=1, N=10, zeta=0.87, beta_mix=1.33, dim=100_000, t_comp=0.01,
                   latency=0.0, bandwidth=1e3)  # fmt: skip
    r = optimize_cdfl(**problem, budget_seconds=100)
    assert r.success and r.compressor != "identity" and r.time <= 100
    with pytest.raises(
        InputError, match=r"fits no round with any compressor tried: .* rand_k 1000\) takes 3"
    ):
        optimize_cdfl(**problem, budget_seconds=1)
