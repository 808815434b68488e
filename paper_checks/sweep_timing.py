"""``dfl-check --time-sweep``: the figures' stacked sweep against the same runs one after another.

The simulations of the selected checks (each check's ``planned`` runs: Figs. 7-10 at the chosen grid,
every configuration and every seed not cached yet) run as the checks run them: one stacked sweep per
data set (:func:`sim.sweep.run_sweep`), end to end (start-up, evaluation, logging, checkpoints), into the
checks' own run folders, so the checks that follow read them from the cache.

The baseline, the runs one after another with :func:`sim.runner.run`, is measured on a sample: every
``every``-th run of each check (at least one per check), each into a scratch folder. The whole sequential
time is extrapolated per data set through the estimate's cost model
(:func:`paper_checks.estimate.run_seconds`): the sample's measured seconds over its modelled seconds,
times the modelled seconds of all the runs. ``every = 1`` runs every one of them alone (then nothing is
extrapolated). Before either clock starts, the calibration's short runs
(:func:`paper_checks.estimate.calibrate`) warm the device up (CUDA context, cuDNN's algorithm choice)
and load the data.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bounds import InputError
from bounds._checks import whole_number
from paper_checks.context import CheckContext
from paper_checks.estimate import Calibration, calibrate, run_seconds
from paper_checks.presweep import planned_by_run
from paper_checks.registry import Check
from sim.config import RunConfig
from sim.runner import run
from sim.sweep import run_sweep, sweep_groups

__all__ = ["time_sweep"]


def time_sweep(
    checks: list[Check],
    context: CheckContext,
    every: int = 6,
    say: Callable[[str], None] | None = None,
    save: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Time the selected checks' simulations as one sweep per data set against a sample of them run alone.

    ``say`` receives a line after each timed part (long timings are not silent); ``save`` the result so far
    after each data set (``complete`` False until the last: a timing stopped midway keeps the data sets
    it finished), and the whole result at the end.

    Returns a JSON-ready dict: per data set the runs, the sampled runs, the sweep's seconds, the sample's
    measured and modelled seconds and the extrapolated sequential seconds; overall ``sweep_s``,
    ``sequential_s`` (measured when ``every`` is 1, else extrapolated: ``sequential_extrapolated``) and
    ``sweep_over_sequential`` (< 1: the sweep is faster), all over the data sets timed; ``complete``.

    Raises:
        InputError (a ``ValueError``): ``every`` is below 1, or no selected check has simulations left
            to run (all cached, or none selected).
    """
    every = whole_number("--sample-every", every, low=1)  # (every k-th run is timed alone)
    first_check = planned_by_run(checks, context, say)  # a run two checks share runs once, with the first
    if not first_check:
        raise InputError(
            "no simulations to time: the selected checks have none, or all their runs are cached "
            "(use an --out folder without them)"
        )
    per_data: dict[str, dict[str, Any]] = {}
    totals = [0.0, 0.0]  # sweep, one by one (unrounded)
    tell = say or (lambda line: None)
    groups = sweep_groups([c for _, c in first_check.values()])
    with tempfile.TemporaryDirectory() as scratch:
        for g, runs in enumerate(groups):
            dataset = runs[0].dataset
            label = dataset if dataset not in per_data else f"{dataset} ({runs[0].data_dir})"  # per folder
            by_check: dict[str, list[RunConfig]] = {}
            for c in runs:
                by_check.setdefault(first_check[c.out][0], []).append(c)
            sample = [c for configs in by_check.values() for c in configs[::every]]  # first included
            alone = [dataclasses.replace(c, out=str(Path(scratch) / str(g) / str(i)))
                     for i, c in enumerate(sample)]  # fmt: skip
            cal: Calibration = calibrate(runs[0])  # its short runs also warm the device up, load the data
            start = time.perf_counter()
            for c in alone:
                run(c)
            measured = time.perf_counter() - start
            tell(f"{label}: {len(sample)} of {len(runs)} runs one by one: {measured:.1f} s")
            start = time.perf_counter()
            run_sweep(runs)
            swept = time.perf_counter() - start
            tell(f"{label}: the {len(runs)} runs as one sweep: {swept:.1f} s")
            modelled_sample = sum(run_seconds(c, cal) for c in sample)
            modelled_all = sum(run_seconds(c, cal) for c in runs)
            sequential = measured if len(sample) == len(runs) else measured / modelled_sample * modelled_all
            totals[0] += swept
            totals[1] += sequential
            per_data[label] = {
                "checks": sorted(by_check),
                "runs": len(runs),
                "sampled_runs": len(sample),
                "sweep_s": round(swept, 2),
                "sampled_sequential_s": round(measured, 2),
                "sampled_modelled_s": round(modelled_sample, 2),
                "sequential_s": round(sequential, 2),
            }
            if save and g < len(groups) - 1:
                save(_result(context, every, per_data, totals, complete=False))
    result = _result(context, every, per_data, totals, complete=True)
    if save:
        save(result)
    return result


def _result(
    context: CheckContext,
    every: int,
    per_data: dict[str, dict[str, Any]],
    totals: list[float],
    complete: bool,
) -> dict[str, Any]:
    """The JSON of :func:`time_sweep` over the data sets timed so far."""
    sweep, sequential = totals
    return {
        "device": context.device,
        "grid": "quick" if context.quick else "full",
        "sample_every": every,
        "sequential_extrapolated": any(p["sampled_runs"] < p["runs"] for p in per_data.values()),
        "per_dataset": {label: dict(part) for label, part in per_data.items()},  # a snapshot
        "runs": sum(p["runs"] for p in per_data.values()),
        "sampled_runs": sum(p["sampled_runs"] for p in per_data.values()),
        "sweep_s": round(sweep, 2),
        "sequential_s": round(sequential, 2),
        "sweep_over_sequential": round(sweep / sequential, 3),
        "complete": complete,
    }
