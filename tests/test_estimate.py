"""dfl-check's time estimate: the cost model by hand, cached and untimed checks, the CLI line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from paper_checks.cli import main
from paper_checks.context import CheckContext
from paper_checks.estimate import Calibration, estimate, run_seconds
from paper_checks.registry import Check, Outcome
from sim.config import RunConfig


def test_run_seconds_by_hand() -> None:
    """tau1 = tau2 = 4, T = 20: local steps 1-4, 9-12 and the tail 17-20 (12); 10 nodes; logged rows at
    steps 0, 5, 10, 15, 20; per row u on train and test, 4 nodes, and a gradient (~3 passes)."""
    config = RunConfig(steps=20, log_every=5, eval_samples=100)
    cal = Calibration(node_step=0.01, sample=1e-4, test_size=10_000)
    expected = 10 * 12 * 0.01 + (5 * (2 + 4 + 3) * 100 + 100 + 10_000) * 1e-4
    assert run_seconds(config, cal) == pytest.approx(expected)
    dsgd = RunConfig(steps=20, log_every=5, eval_samples=100, algorithm="dsgd")  # every step is local
    assert run_seconds(dsgd, cal) == pytest.approx(expected + 10 * 8 * 0.01)
    with_steps = Calibration(node_step=0.01, sample=1e-4, test_size=10_000, step=0.002)  # + 20 fixed costs
    assert run_seconds(config, with_steps) == pytest.approx(expected + 20 * 0.002)


def test_a_sweep_pays_the_fixed_cost_of_a_step_once_per_step() -> None:
    from paper_checks.estimate import sweep_seconds

    cal = Calibration(node_step=0.01, sample=1e-4, test_size=10_000, step=0.002)
    alone = Calibration(node_step=0.01, sample=1e-4, test_size=10_000)
    runs = [RunConfig(steps=s, log_every=5, eval_samples=100) for s in (20, 40, 10)]
    assert sweep_seconds(runs, cal) == pytest.approx(sum(run_seconds(c, alone) for c in runs) + 40 * 0.002)
    assert sum(run_seconds(c, cal) for c in runs) == pytest.approx(sweep_seconds(runs, cal) + 30 * 0.002)
    assert sweep_seconds([], cal) == 0.0


def test_step_overhead_from_two_short_runs(monkeypatch) -> None:
    """Runs of 2 (warm-up), 5 and 45 steps taking 1, 2 and 4 s: 2 s for 40 steps, less the node-steps the
    longer run adds (tau1 = tau2 = 4; a run's schedule ends in local steps: 25 local steps in 45, 5 in 5,
    so 20; 10 nodes at 5 ms): 2.5 ms per step; a faster clock than the node-steps allow gives 0."""
    import paper_checks.estimate as est
    from sim.algorithms import local_step_count

    clock, seconds = [0.0], {2: 1.0, 5: 2.0, 45: 4.0}
    monkeypatch.setattr(est.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(est, "run", lambda c: clock.__setitem__(0, clock[0] + seconds[c.steps]))
    assert (local_step_count("dfl", 4, 4, 45), local_step_count("dfl", 4, 4, 5)) == (25, 5)
    assert est.step_overhead(RunConfig(), node_step=0.005) == pytest.approx((2.0 - 10 * 20 * 0.005) / 40)
    assert est.step_overhead(RunConfig(), node_step=0.1) == 0.0


def _check(id: str, planned: list[RunConfig] | None = None) -> Check:
    def run(ctx: CheckContext, statement: object) -> Outcome:
        return Outcome("holds", "")

    return Check(
        id, "ref", "claim", "method", run, statement=1, planned=None if planned is None else lambda c: planned
    )


def test_estimate_counts_planned_runs_timed_and_untimed_checks(tiny, tmp_path, monkeypatch) -> None:
    import paper_checks.estimate as est

    cal = Calibration(node_step=0.02, sample=1e-5, test_size=60)
    monkeypatch.setattr(est, "calibrate", lambda config: cal)
    ctx = CheckContext(quick=True, runs=tmp_path / "runs")
    cache = tmp_path / "cache"
    cache.mkdir()
    runs = [RunConfig(dataset=f"npz:{tiny}", model="logreg", nodes=6, steps=12, seed=s) for s in (0, 1)]
    timed, cached, fresh = _check("timed"), _check("cached"), _check("fresh")
    (cache / "timed-quick.json").write_text(json.dumps({"seconds": 42.0, "fingerprint": "old"}))
    whole = {
        "id": "cached",
        "ref": "ref",
        "claim": "claim",
        "method": "method",
        "status": "holds",
        "summary": "",
        "evidence": {},
    }  # fmt: skip  (a cached result the check would use: whole)
    (cache / "cached-quick.json").write_text(
        json.dumps({**whole, "seconds": 9.0, "fingerprint": cached.fingerprint(ctx)})
    )
    sims = _check("sims", runs)
    got = estimate([sims, timed, cached, fresh, _check("nothing-left", [])], ctx, cache)
    assert got.per_check == {"sims": pytest.approx(sum(run_seconds(c, cal) for c in runs)), "timed": 42.0,
                             "cached": 0.0, "fresh": None, "nothing-left": 0.0}  # fmt: skip
    assert got.runs == 2 and got.untimed == ["fresh"]
    assert got.seconds == pytest.approx(got.per_check["sims"] + 42.0)
    line = got.line()
    assert (
        "2 simulations" in line
        and "never timed here (fresh)" in line
        and "20.0 ms per local node-step" in line
        and "; 2 checks without simulations 42 s (as last timed here" in line  # (was "2 other checks")
    )


def test_a_check_that_cannot_be_estimated_is_untimed(tmp_path) -> None:
    """A run on a device this machine lacks: no estimate (the check itself will say why)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    ctx = CheckContext(quick=True, runs=tmp_path / "runs")
    got = estimate([_check("gpu", [RunConfig(device="cuda", steps=4)])], ctx, tmp_path)
    assert got.per_check == {"gpu": None}


def test_cli_estimate_prints_one_line_and_runs_nothing(tmp_path: Path, capsys) -> None:
    assert main(["--quick", "--estimate", "--only", "fig8-tau1", "zeta-values", "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("dfl-check: 2 checks, estimated about ")
    assert "12 simulations" in err and "never timed here (zeta-values)" in err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "report.md").exists()


def test_cli_estimate_json_prints_the_estimate(tmp_path: Path, capsys) -> None:
    """--estimate --json printed nothing on stdout; --only given twice ran the second list only."""
    argv = ["--quick", "--estimate", "--json", "--only", "fig8-tau1", "--only", "zeta-values"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert sorted(got["checks"]) == ["fig8-tau1", "zeta-values"] and got["untimed"] == ["zeta-values"]
    assert got["simulations"] == 12 and got["wall_seconds"] == pytest.approx(got["per_check"]["fig8-tau1"])
    assert got["line"] in err and list(got["calibrations"]) == ["mnist/cnn on cpu"]


def test_progress_bar_counts_checks_when_some_were_never_timed(tmp_path: Path, capsys) -> None:
    """A bar weighted by an estimate that counts nothing would sit at 0/0 s: it counts checks instead."""
    assert main(["--quick", "--only", "zeta-values", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "1/1 checks" in err and "estimated 0/0 s" not in err
    assert main(["--quick", "--only", "zeta-values", "--out", str(tmp_path)]) == 0  # now timed (cached: 0 s)
    err = capsys.readouterr().err
    assert "checks [" not in err and "0/0 s" not in err and "[1/1] zeta-values: holds (cached)" in err


def test_the_calibration_times_a_sweeps_call_on_a_gpu_and_ten_nodes_elsewhere() -> None:
    from paper_checks.estimate import CALIBRATION_NODES, CALIBRATION_NODES_CUDA, calibration_nodes
    from sim.engine import SAMPLES_PER_CALL_CUDA

    assert calibration_nodes(torch.device("cpu")) == CALIBRATION_NODES == 10
    assert calibration_nodes(torch.device("cuda")) == CALIBRATION_NODES_CUDA == SAMPLES_PER_CALL_CUDA // 32
    assert calibration_nodes(torch.device("cuda:1")) == CALIBRATION_NODES_CUDA


def test_calibrate_divides_the_timed_call_by_the_nodes_it_stacked(tiny, monkeypatch) -> None:
    from paper_checks import estimate as est

    shapes = []

    def timed(call, repeats, device):
        out = call()
        if isinstance(out, tuple):  # the stacked gradients (N x d) of calibration_nodes nodes
            shapes.append(out[0].shape[0])
        return 1.0

    monkeypatch.setattr(est, "seconds_per_call", timed)
    monkeypatch.setattr(est, "calibration_nodes", lambda device: 4)
    monkeypatch.setattr(est, "step_overhead", lambda config, node_step: 0.0)
    torch.manual_seed(7)  # the caller's random stream: calibrate reseeded it with 0
    stream = torch.get_rng_state()
    cal = est.calibrate(RunConfig(dataset=f"npz:{tiny}", model="logreg"))
    assert shapes == [4] and cal.node_step == 0.25 and torch.equal(torch.get_rng_state(), stream)


def test_beside_a_gpu_the_estimate_is_the_longer_part(tmp_path) -> None:
    """With the device-free checks in another process (paper_checks.overlap) the wall time is the longer
    of the two parts, not their sum; on the CPU, or with one worker, the sum."""
    import dataclasses

    cache = tmp_path / "cache"
    cache.mkdir()
    ctx = CheckContext(quick=True, runs=tmp_path / "runs", device="cuda:7", workers=2)
    sims, theory, pep = _check("sims"), _check("theory"), _check("pep")
    sims = dataclasses.replace(sims, on_device=True)
    for chk, seconds in ((sims, 100.0), (theory, 30.0), (pep, 50.0)):
        (cache / f"{chk.id}-quick.json").write_text(json.dumps({"seconds": seconds, "fingerprint": "old"}))
    got = estimate([sims, theory, pep], ctx, cache)
    assert got.overlap and got.seconds == 180.0 and got.wall == 100.0
    assert got.line().startswith("about 100 s (the device-free checks in another process")
    for other in (dataclasses.replace(ctx, device="cpu"), dataclasses.replace(ctx, workers=1)):
        got = estimate([sims, theory, pep], other, cache)
        assert not got.overlap and got.wall == got.seconds == 180.0
    (cache / "pep-quick.json").write_text(json.dumps({"seconds": 500.0, "fingerprint": "old"}))
    assert estimate([sims, theory, pep], ctx, cache).wall == 530.0


def test_beside_a_gpu_the_simulations_are_estimated_as_one_sweep_per_data_set(
    tiny, tmp_path, monkeypatch
) -> None:
    """paper_checks.presweep runs every check's runs first, one sweep per data set: a step's fixed cost is
    paid for the longest run of all, not per check; each check keeps its share (the progress bar's weight)."""
    import dataclasses

    import paper_checks.estimate as est
    from paper_checks.estimate import sweep_seconds

    cal = Calibration(node_step=0.02, sample=1e-5, test_size=60, step=0.5)
    monkeypatch.setattr(est, "calibrate", lambda config: cal)
    cpu = CheckContext(quick=True, runs=tmp_path / "runs")
    gpu = dataclasses.replace(cpu, device="cuda:7")
    base = {"dataset": f"npz:{tiny}", "model": "logreg", "nodes": 6}
    first = [RunConfig(**base, steps=40, seed=s, out=str(tmp_path / f"a{s}")) for s in (0, 1)]
    second = [RunConfig(**base, steps=30, seed=s, out=str(tmp_path / f"b{s}")) for s in (0, 1)]
    shared = RunConfig(**base, steps=10, seed=9, out=str(tmp_path / "shared"))  # planned by both: runs once
    checks = [dataclasses.replace(_check(i, [*runs, shared]), on_device=True)
              for i, runs in (("a", first), ("b", second))]  # fmt: skip
    alone, joint = estimate(checks, cpu, tmp_path), estimate(checks, gpu, tmp_path)
    own = sweep_seconds([*first, shared], cal) + sweep_seconds(second, cal)  # b finds shared cached
    assert alone.simulation_seconds == pytest.approx(own) and alone.runs == 5
    together = sweep_seconds([*first, shared, *second], cal)
    assert joint.simulation_seconds == pytest.approx(together) and joint.runs == 5
    assert together == pytest.approx(own - 30 * 0.5)  # b's sweep's steps are saved
    assert sum(joint.per_check.values()) == pytest.approx(together)
    assert joint.per_check["a"] / joint.per_check["b"] == pytest.approx(
        alone.per_check["a"] / alone.per_check["b"]
    )


def test_a_cifar_check_without_cifar_is_said_not_to_run(tmp_path, capsys, monkeypatch) -> None:
    """fig7-cifar without CIFAR-10 was estimated as a simulating check of 0 s, without a word, and the line
    said '1 checks' (a probe): it is named as one that will not run."""
    from paper_checks.cli import main

    monkeypatch.delenv("DFLKIT_CIFAR10_DIR", raising=False)
    assert main(["--estimate", "--only", "fig7-cifar", "--out", str(tmp_path), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err.strip() == ("dfl-check: 1 check, estimated about 0 s; fig7-cifar: CIFAR-10 not given "
                           "(--cifar-dir DIR), will not run")  # fmt: skip
    assert json.loads(out)["needs_cifar"] == ["fig7-cifar"]
