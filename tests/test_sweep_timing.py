"""dfl-check --time-sweep: the figures' sweep against a sample of their runs one by one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import paper_checks.sweep_timing as timing
from bounds import InputError
from paper_checks.cli import main
from paper_checks.context import CheckContext
from paper_checks.estimate import Calibration, run_seconds
from paper_checks.registry import Check, Outcome
from sim.config import RunConfig


def _check(id: str, planned: list[RunConfig] | None) -> Check:
    def run(ctx: CheckContext, statement: object) -> Outcome:
        return Outcome("holds", "")

    return Check(
        id, "ref", "claim", "method", run, statement=1, planned=None if planned is None else lambda c: planned
    )


def _runs(tiny: Path, folder: Path, steps: tuple[int, ...]) -> list[RunConfig]:
    return [RunConfig(dataset=f"npz:{tiny}", model="logreg", nodes=6, steps=s, log_every=4, seed=i,
                      out=str(folder / str(i))) for i, s in enumerate(steps)]  # fmt: skip


def test_every_run_timed_alone_and_swept_runs_left_in_the_checks_folders(tiny, tmp_path) -> None:
    runs = _runs(tiny, tmp_path / "runs", (8, 12))
    ctx = CheckContext(quick=True, runs=tmp_path / "runs")
    got = timing.time_sweep([_check("sims", runs), _check("theory", None)], ctx, every=1)
    assert got["runs"] == got["sampled_runs"] == 2 and got["sequential_extrapolated"] is False
    mnist = got["per_dataset"][f"npz:{tiny}"]
    assert mnist["sequential_s"] == mnist["sampled_sequential_s"] > 0 and mnist["checks"] == ["sims"]
    ratio, rounding = got["sweep_s"] / got["sequential_s"], 0.01 / got["sequential_s"]  # of the rounded times
    assert got["sweep_over_sequential"] == pytest.approx(ratio, abs=rounding * (1 + ratio) + 1e-3)
    for c in runs:  # the sweep wrote the checks' runs (cached for them); the lone runs went elsewhere
        assert json.loads((Path(c.out) / "summary.json").read_text())["steps"] == c.steps


def test_a_run_two_checks_share_is_swept_once(tiny, tmp_path) -> None:
    runs = _runs(tiny, tmp_path / "runs", (8, 12))
    ctx = CheckContext(quick=True, runs=tmp_path / "runs")
    got = timing.time_sweep([_check("a", runs), _check("b", [runs[1]])], ctx, every=1)
    assert got["runs"] == 2 and got["per_dataset"][f"npz:{tiny}"]["checks"] == ["a"]


def test_sequential_time_extrapolated_from_the_sample_through_the_cost_model(tmp_path, monkeypatch) -> None:
    """3 runs, every 2nd alone (runs 0 and 2): sequential = measured / modelled(sample) x modelled(all)."""
    cal = Calibration(node_step=0.01, sample=1e-4, test_size=100)
    clock = [0.0]
    seconds_alone = {8: 3.0, 16: 5.0, 24: 11.0}

    def fake_run(config: RunConfig) -> dict:
        clock[0] += seconds_alone[config.steps]
        return {}

    def fake_sweep(configs: list[RunConfig]) -> list[dict]:
        clock[0] += 4.0
        return []

    monkeypatch.setattr(timing, "run", fake_run)
    monkeypatch.setattr(timing, "run_sweep", fake_sweep)
    monkeypatch.setattr(timing, "calibrate", lambda config: cal)
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])
    runs = [RunConfig(steps=s, log_every=4, out=str(tmp_path / str(s))) for s in (8, 16, 24)]
    got = timing.time_sweep([_check("sims", runs)], CheckContext(quick=True, runs=tmp_path), every=2)
    modelled = [run_seconds(c, cal) for c in runs]
    expected = (3.0 + 11.0) / (modelled[0] + modelled[2]) * sum(modelled)
    assert got["sampled_runs"] == 2 and got["sequential_extrapolated"] is True
    assert got["sequential_s"] == pytest.approx(expected, abs=0.01)
    assert got["sweep_s"] == 4.0 and got["sweep_over_sequential"] == pytest.approx(4.0 / expected, abs=1e-3)
    assert expected != pytest.approx(3.0 + 5.0 + 11.0, abs=0.5)  # the model, not the true sum, is used


@pytest.mark.parametrize(
    ("every", "why"),
    [(0, "is out of range"), (-3, "is out of range"), (True, "is a boolean"), (2.5, "is not a whole number")],
)
def test_bad_sample_every_is_refused(every, why: str, tmp_path) -> None:
    with pytest.raises(InputError, match=f"^--sample-every = {every!r} {why} \\(expected a"):
        timing.time_sweep([_check("sims", [RunConfig()])], CheckContext(quick=True, runs=tmp_path), every)


def test_nothing_to_time_is_one_line_exit_2(tmp_path, capsys) -> None:
    with pytest.raises(InputError, match="no simulations to time"):
        ctx = CheckContext(quick=True, runs=tmp_path)
        timing.time_sweep([_check("sims", []), _check("theory", None)], ctx)
    assert main(["--out", str(tmp_path), "--only", "zeta-values", "--time-sweep"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[0]] and err[0].startswith("dfl-check: error: no simulations to time")


def test_each_data_set_is_saved_as_it_ends(tmp_path, monkeypatch) -> None:
    """Two data sets: after the first, the result so far (complete False), then the whole (complete True);
    a timing stopped during the second keeps the first's numbers."""
    cal = Calibration(node_step=0.01, sample=1e-4, test_size=100)
    monkeypatch.setattr(timing, "run", lambda config: {})
    monkeypatch.setattr(timing, "run_sweep", lambda configs: [])
    monkeypatch.setattr(timing, "calibrate", lambda config: cal)
    runs = [RunConfig(dataset=d, steps=8, log_every=4, out=str(tmp_path / d)) for d in ("mnist", "cifar10")]
    saved: list[dict] = []
    ctx = CheckContext(quick=True, runs=tmp_path)
    got = timing.time_sweep([_check("sims", runs)], ctx, 1, save=saved.append)
    assert [s["complete"] for s in saved] == [False, True] and saved[-1] == got
    assert list(saved[0]["per_dataset"]) == ["mnist"] and list(got["per_dataset"]) == ["mnist", "cifar10"]
