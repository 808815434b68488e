"""Cells computed in worker processes (dfl-check --jobs) and probed runs stacked in one sweep give the
results of the plain in-process computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from paper_checks import heterogeneity, repair
from paper_checks.cli import main
from paper_checks.context import CheckContext
from paper_checks.parallel import cell_map
from paper_checks.statements import REPAIR
from sim.config import RunConfig
from sim.estimates import probe_heterogeneity, probe_heterogeneity_runs
from sim.setup import build_trainer, prepare


def test_cell_map_keeps_order_and_rejects_no_workers() -> None:
    tasks = [(2, k) for k in range(7)]
    assert cell_map(pow, tasks, workers=3) == [2**k for k in range(7)] == cell_map(pow, tasks)
    assert cell_map(pow, [], workers=4) == []
    with pytest.raises(ValueError, match="workers = 0"):
        cell_map(pow, tasks, workers=0)


def test_repair_and_non_iid_cells_are_the_same_in_worker_processes(monkeypatch) -> None:
    """repair-nonquadratic's Monte Carlo cells and the exact non-i.i.d. cells, in 2 spawned processes:
    the very same rows (each cell seeds its own generator), hence the same verdicts."""
    grid = repair._grid(True) | {
        "tau1": [1, 5],
        "tau2": [1],
        "K": [2],
        "topologies": ["ring"],
        "sigma2": [1.0],
    }
    monkeypatch.setattr(repair, "_grid", lambda quick: grid)
    alone = repair.repair_nonquadratic(CheckContext(workers=1), REPAIR)
    spread = repair.repair_nonquadratic(CheckContext(workers=2), REPAIR)
    assert alone.evidence == spread.evidence and alone.status == spread.status
    assert len(alone.evidence["table"]) == 3 * 2 * 2  # functions x tau1 x eta fractions

    small = heterogeneity._grid(True) | {
        "topologies": ["ring", "path"],
        "tau1": [2],
        "tau2": [1, 3],
        "K": [4],
    }
    small |= {"scales": [1.0], "random": 3}
    monkeypatch.setattr(heterogeneity, "_grid", lambda quick: small)
    monkeypatch.setattr(heterogeneity, "_CACHE", {})
    one = heterogeneity.non_iid_cells(True, workers=1)
    monkeypatch.setattr(heterogeneity, "_CACHE", {})
    two = heterogeneity.non_iid_cells(True, workers=2)
    assert len(one) == 2 * 2 * 2 * 2 * 2 + 3
    assert [{k: v for k, v in r.items() if k != "cell"} for r in one] == [
        {k: v for k, v in r.items() if k != "cell"} for r in two
    ]
    assert [r["cell"] for r in one] == [r["cell"] for r in two]


def _drift_alone(config: RunConfig) -> np.ndarray:
    """Brute force: the run's trainer stepped alone, ||X_t - u_t||_F^2 / N before every step t."""
    s = prepare(config)
    trainer = build_trainer(config, s)
    drift = []
    for _ in range(config.steps):
        X = trainer.X
        drift.append(float(((X - X.mean(0)) ** 2).sum()) / X.shape[0])
        trainer.step()
    return np.array(drift)


def test_probed_runs_in_one_sweep_match_each_run_alone(tiny, tmp_path) -> None:
    """Three probed runs of different sizes, partitions, schedules and lengths stacked in one sweep: each
    run's drift at every step equals its trainer run alone (float rounding), and its measured constants
    equal those of probe_heterogeneity on the run alone."""
    configs = [
        RunConfig(dataset=f"npz:{tiny}", model="logreg", nodes=n, steps=steps, tau1=t1, tau2=t2, eta=0.1,
                  batch_size=4, partition=part, seed=seed, out=str(tmp_path / f"run{i}"), eval_samples=20)
        for i, (n, steps, t1, t2, part, seed) in enumerate(
            [(3, 9, 2, 1, "shards", 0), (6, 14, 1, 3, "iid", 1), (4, 5, 3, 2, "dirichlet", 2)]
        )
    ]  # fmt: skip
    ended: list[tuple[int, int]] = []
    stacked = probe_heterogeneity_runs(
        configs, samples=16, points=2, done=lambda r, p: ended.append((r, len(p.drift)))
    )
    assert ended == [(2, 5), (0, 9), (1, 14)]  # each run handed over as it ends, shortest first
    for config, probe in zip(configs, stacked, strict=True):
        alone = probe_heterogeneity(RunConfig(**{**config.__dict__, "out": config.out + "-alone"}), 16, 2)
        assert len(probe.drift) == config.steps and probe.drift[0] == 0.0 and probe.drift.max() > 0
        np.testing.assert_allclose(probe.drift, _drift_alone(config), rtol=1e-4, atol=1e-9)
        np.testing.assert_allclose(probe.drift, alone.drift, rtol=1e-4, atol=1e-9)
        assert probe.points == alone.points and all(probe.local[p] for p in probe.points)
        for name in ("sigma2", "sigma2_se", "varsigma2", "varsigma2_noise"):
            np.testing.assert_allclose(getattr(probe, name), getattr(alone, name), rtol=1e-4, atol=1e-9)
        assert probe.second_moment == pytest.approx(alone.second_moment, rel=1e-5)
        torch.testing.assert_close(probe.states[-1], alone.states[-1], rtol=1e-4, atol=1e-6)


def test_dfl_check_rejects_zero_and_absurd_jobs(capsys) -> None:
    """--jobs 1000000 spawned a process per cell (200 processes, 5 GB on 2 cores; a probe)."""
    from paper_checks.parallel import available_cores

    for jobs in (0, 4 * available_cores() + 1, 1_000_000):
        assert main(["--only", "zeta-values", "--jobs", str(jobs)]) == 2
        err = capsys.readouterr().err
        assert f"--jobs = {jobs} (expected a whole number from 1 to {4 * available_cores()}" in err, err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--device", "foo"], "device = 'foo' is unknown (expected cpu, cuda or cuda:INDEX)"),
        (["--time-sweep", "--sample-every", "0"], "--sample-every = 0 (expected a whole number >= 1)"),
        (["--sample-every", "3"], "--sample-every = 3 without --time-sweep (expected both)"),  # was ignored
        (["--out", ""], "--out = '' is empty (expected a folder path)"),  # wrote into the current folder
    ],
)
def test_dfl_check_refuses_a_bad_device_or_sample_before_estimating(flags, message, capsys, tmp_path) -> None:
    """A bad --device used to give 'estimated about 0 s' and a 'could not run' per simulation, exit 0."""
    assert main(["--only", "fig9-zeta", "--estimate", "--out", str(tmp_path), *flags]) == 2
    assert not (tmp_path / "cache").exists()
    assert message in capsys.readouterr().err


def test_tightness_solves_its_cells_in_worker_processes(monkeypatch) -> None:
    """The PEP cells of `tightness` solved in 2 processes: the same worst cases (the solver is
    deterministic), the same verdict, as in this process."""
    pytest.importorskip("PEPit")
    from paper_checks import tightness
    from paper_checks.statements import NON_IID_REPAIR

    pep = {"N": [2], "topologies": ["complete", "path"], "tau1": [1, 2], "tau2": [1], "K": [1],
           "varsigma2": [0.5], "L": 1.0, "gap": 1.0}  # fmt: skip
    monkeypatch.setattr(tightness, "_grid", lambda quick: pep)
    outcomes = []
    for workers in (1, 2):
        monkeypatch.setattr(tightness, "_MEMO", {})
        outcomes.append(tightness.tightness(CheckContext(workers=workers), NON_IID_REPAIR))
    drop = lambda table: [{k: v for k, v in r.items() if k != "seconds"} for r in table]  # noqa: E731
    assert drop(outcomes[0].evidence["table"]) == drop(outcomes[1].evidence["table"])
    assert outcomes[0].status == outcomes[1].status and len(outcomes[0].evidence["table"]) == 4


def test_a_stopped_probe_sweep_keeps_the_runs_already_ended(tmp_path, monkeypatch) -> None:
    """drift-non-iid-cnn saves each probed run as its run ends: a sweep that fails after the first run
    ended leaves that run's probe.json, and the next call simulates only the others."""
    from paper_checks import heterogeneity_cnn as h
    from sim.estimates import HeterogeneityProbe

    probe = HeterogeneityProbe(np.zeros(3), np.array([True, False, True]), [0, 2], *[np.ones(1)] * 4,
                               [torch.zeros(2), torch.zeros(2)], 1.0)  # fmt: skip
    calls: list[int] = []

    def failing(configs, samples, points, done):
        calls.append(len(configs))
        done(0, probe)
        raise RuntimeError("the device stopped")

    monkeypatch.setattr(h, "probe_heterogeneity_runs", failing)
    grid = h._cnn_grid(True)
    cells = [(h._config(grid, "iid", "ring", t1, 1, 0.01, "cpu"), "iid", False) for t1 in (1, 4)]
    ctx = CheckContext(runs=tmp_path)
    with pytest.raises(RuntimeError, match="stopped"):
        h._probes(ctx, grid, cells)
    with pytest.raises(RuntimeError, match="stopped"):
        h._probes(ctx, grid, cells)
    assert calls == [2, 1]  # the first run was kept; only the second is simulated again
