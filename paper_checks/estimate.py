"""``dfl-check``'s time estimate, before anything runs.

Two parts:

* the simulations the checks will run (each check's ``planned`` runs, those not cached yet), timed by
  a short calibration on this machine and device: one stacked local step of 10 nodes x 32 samples of
  the run's model (256 nodes on a GPU, :data:`CALIBRATION_NODES_CUDA`; seconds per node-step), one
  forward pass of 500 samples (seconds per evaluated sample), and the fixed cost of a step (sampling,
  gossip, the divergence check's read-back, bookkeeping: two short real runs of the first planned
  config, their difference per step less its node-steps; on a GPU at N = 10 this fixed cost is most of a
  step). A run costs its local node-steps, its logged rows (the average model on the training and test
  samples, up to 4 nodes and one gradient: about 9 forward passes of ``eval_samples``) and its final
  evaluation (the training sample and the whole test set); the fixed cost is paid once per step of the
  sweep that runs a check's runs together (:func:`sweep_seconds`; beside a GPU, of the sweep per data set
  that runs all the checks' runs first, :mod:`paper_checks.presweep`), once per step of each run alone
  (:func:`run_seconds`);
* every other check: the seconds it took the last time it ran in this mode in this output folder
  (its cache file; 0 when its cached verdict is still valid), or "never timed here".

Where the device-free checks run beside the device's (:mod:`paper_checks.overlap`) the wall time is the
longer of the two parts. The device-free part is as last timed, with all ``--jobs`` processes for its cells;
beside the device it has one fewer, so at a small ``--jobs`` it is an underestimate (at ``--jobs 2``, one
process instead of two: ``tightness`` about twice its time).

The start-up of each run is left out. The estimate was compared with measured runs (README: on 2 CPU
cores ``fig9-zeta --quick`` estimated 98 s, took 84 s; ``fig8-tau1 --full`` took 881 s, estimated 583 s
with 3 calibration calls and 14-16 minutes with CALIBRATION_REPEATS; on an H100 the runs took about
twice the estimate before the fixed cost of a step was counted, and less than half of it after, when it
still timed 10 nodes there: :data:`CALIBRATION_NODES_CUDA`); the tests check its arithmetic.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from bounds.cli_tools import counted
from paper_checks.cache import cache_path, pending, read_cache
from paper_checks.context import CheckContext
from paper_checks.overlap import overlaps
from paper_checks.presweep import presweeps
from paper_checks.registry import Check
from sim.algorithms import local_step_count
from sim.config import RunConfig
from sim.data import load_dataset
from sim.engine import SAMPLES_PER_CALL_CUDA, Stack
from sim.evaluation import node_sample
from sim.models import make_model
from sim.runner import run
from sim.setup import seeded_torch
from sim.sweep import sweep_groups
from sim.timing import seconds_per_call

__all__ = [
    "Calibration", "Estimate", "calibrate", "calibration_nodes", "estimate", "run_seconds",
    "step_overhead", "sweep_seconds",
]  # fmt: skip

CALIBRATION_NODES, CALIBRATION_BATCH, CALIBRATION_SAMPLES = 10, 32, 500
CALIBRATION_NODES_CUDA = SAMPLES_PER_CALL_CUDA // CALIBRATION_BATCH
"""On a GPU the stacked step is timed at the size of a sweep's gradient call (256 nodes x 32), not at 10
nodes: a GPU is launch-bound there, and the sweeps the checks run stack 150-630 nodes. On an H100
(2026-11-27) the estimate timed 10 nodes, said 5 min for ``--full``'s 84 simulations, and they took 136 s
(MNIST: 0.2 ms per local node-step at 10 nodes, 0.035 ms at 630). The launch-bound part of a small run's
step is in its fixed cost (:func:`step_overhead`, two real runs). On the CPU the time per node-step does not
fall with the size, and 256 CIFAR-10 nodes would take about 5 s a call there (50 s for the
calibration's repeats)."""


def calibration_nodes(device: torch.device) -> int:
    """Nodes of the timed stacked call: CALIBRATION_NODES_CUDA on a GPU, CALIBRATION_NODES elsewhere."""
    return CALIBRATION_NODES_CUDA if device.type == "cuda" else CALIBRATION_NODES


@dataclass(frozen=True)
class Calibration:
    """Measured on this machine: seconds per local node-step (:func:`calibration_nodes` x 32 samples stacked)
    and per evaluated sample (a forward pass of 500), for one data set / model / device; the test set's
    size."""

    node_step: float
    sample: float
    test_size: int
    step: float = 0.0  # the fixed seconds of a step, whatever its node-steps


STEP_CALIBRATION = (5, 45)  # the two short runs whose difference times a step (after a 2-step warm-up)
STEP_CALIBRATION_SAMPLES = 100  # their evaluation sample: the same in both, so it cancels; small, so its
# jitter (divided by the 40 steps between them) stays small


def step_overhead(config: RunConfig, node_step: float) -> float:
    """Seconds of a step beyond its node-steps: two short runs of ``config`` (STEP_CALIBRATION steps,
    logging only at their ends, no checkpoints; a 2-step run first warms the device up), their
    difference per step, less the node-steps of the extra steps at ``node_step`` (never below 0)."""
    seconds = []
    with tempfile.TemporaryDirectory() as scratch:
        for steps in (2, *STEP_CALIBRATION):
            short = dataclasses.replace(config, steps=steps, log_every=steps, checkpoint_every=10**9,
                                        eval_samples=min(config.eval_samples, STEP_CALIBRATION_SAMPLES),
                                        resume=False, out=f"{scratch}/{steps}")  # fmt: skip
            start = time.perf_counter()
            run(short)
            seconds.append(time.perf_counter() - start)
    a, b = STEP_CALIBRATION
    local = local_step_count(config.algorithm, config.tau1, config.tau2, b) - local_step_count(
        config.algorithm, config.tau1, config.tau2, a
    )
    return max(0.0, (seconds[2] - seconds[1] - config.nodes * local * node_step) / (b - a))


CALIBRATION_REPEATS = 10  # timed calls of the stacked step (MNIST about 0.5 s, CIFAR-10 about 2 s). With 3,
# on 2 cores (2026-11-27), estimates of the same MNIST runs said 2.9-4.4 ms per local node-step and the runs
# took about 4.5 (fig8-tau1 --full estimated at 583 s, took 881 s): a short burst is not what a machine
# sustains.


def calibrate(config: RunConfig, repeats: int = CALIBRATION_REPEATS) -> Calibration:
    """Time the config's model on random inputs of its data set's shape (after one warm-up call), and
    the fixed cost of the config's steps (:func:`step_overhead`)."""
    data = load_dataset(config.dataset, config.data_dir)
    device = torch.device(config.device)
    n, b = calibration_nodes(device), CALIBRATION_BATCH
    with seeded_torch(0, device):  # the same model and inputs each time; the caller's random streams kept
        model = make_model(config.model, data.input_shape, data.num_classes).to(device)
        x = torch.randn(n, b, *data.input_shape, device=device)
        y = torch.randint(0, data.num_classes, (n, b), device=device)
        xs = torch.randn(CALIBRATION_SAMPLES, *data.input_shape, device=device)
    stack = Stack(model)
    X = stack.flatten(model).repeat(n, 1)
    w = torch.ones(n, b, device=device)

    step = seconds_per_call(lambda: stack.gradients(X, x, y, w), repeats, device)
    with torch.no_grad():
        forward = seconds_per_call(lambda: model(xs), repeats, device)
    return Calibration(
        step / n, forward / CALIBRATION_SAMPLES, len(data.y_test), step_overhead(config, step / n)
    )


def sweep_seconds(configs: list[RunConfig], cal: Calibration) -> float:
    """The modelled seconds of ``configs`` run as one stacked sweep (as the checks run a figure's runs):
    every run's node-steps and evaluations, but a step's fixed cost once per step of the sweep (its
    longest run), not once per run."""
    if not configs:
        return 0.0
    alone = dataclasses.replace(cal, step=0.0)
    return sum(run_seconds(c, alone) for c in configs) + max(c.steps for c in configs) * cal.step


def run_seconds(config: RunConfig, cal: Calibration) -> float:
    """The modelled seconds of one run alone: local node-steps, its steps' fixed cost, logged rows, final
    evaluation."""
    local = local_step_count(config.algorithm, config.tau1, config.tau2, config.steps)
    rows = config.steps // config.log_every + 1
    per_row = (2 + len(node_sample(config.nodes)) + 3) * config.eval_samples  # + a gradient ~ 3 passes
    final = config.eval_samples + cal.test_size
    compute = config.nodes * local * cal.node_step + config.steps * cal.step
    return compute + (rows * per_row + final) * cal.sample


@dataclass
class Estimate:
    """Seconds per check (None: never timed here), the planned runs and the calibrations used."""

    per_check: dict[str, float | None] = field(default_factory=dict)
    simulating: list[str] = field(default_factory=list)  # the checks timed by their planned runs
    runs: int = 0
    simulation_seconds: float = 0.0
    calibrations: dict[str, Calibration] = field(default_factory=dict)
    on_device: set[str] = field(default_factory=set)  # the checks that simulate on the device
    overlap: bool = False  # the device-free checks run beside the device ones (paper_checks.overlap)
    needs_cifar: list[str] = field(default_factory=list)  # checks that will say 'could not run' (0 s)

    @property
    def seconds(self) -> float:
        """The checks' seconds, added up (what the progress bar counts)."""
        return sum(s for s in self.per_check.values() if s is not None)

    @property
    def wall(self) -> float:
        """The seconds until the last check is done: the longer of the two parts when they overlap."""
        if not self.overlap:
            return self.seconds
        device = sum(s or 0.0 for k, s in self.per_check.items() if k in self.on_device)
        return max(device, self.seconds - device)

    @property
    def untimed(self) -> list[str]:
        return [k for k, s in self.per_check.items() if s is None]

    def as_dict(self) -> dict[str, Any]:
        """The estimate as ``dfl-check --estimate --json`` prints it: wall and summed seconds, each check's
        seconds (None: never timed here), the planned simulations and each data set's calibration."""
        return {
            "wall_seconds": self.wall,
            "seconds": self.seconds,
            "overlap": self.overlap,
            "per_check": dict(self.per_check),
            "untimed": self.untimed,
            "needs_cifar": list(self.needs_cifar),
            "simulations": self.runs,
            "simulation_seconds": self.simulation_seconds,
            "calibrations": {k: dataclasses.asdict(c) for k, c in self.calibrations.items()},
            "line": self.line(),
        }

    def line(self) -> str:
        """One line for the user before the checks start."""
        parts = [f"about {_duration(self.wall)}"]
        if self.overlap:
            parts[0] += " (the device-free checks in another process, beside the device's)"
        if self.runs:
            steps = ", ".join(f"{k}: {c.node_step * 1e3:.1f} ms per local node-step + {c.step * 1e3:.1f} ms "
                              "per step" for k, c in self.calibrations.items())  # fmt: skip
            parts.append(f"{self.runs} simulations {_duration(self.simulation_seconds)} ({steps})")
        others = {k: s for k, s in self.per_check.items()
                  if s is not None and k not in self.simulating and k not in self.needs_cifar}  # fmt: skip
        if others:
            took = _duration(sum(others.values()))
            parts.append(f"{counted(len(others), 'check')} without simulations {took} (as last timed here, 0 "
                         "when cached)")  # fmt: skip
        if self.untimed:
            parts.append(f"{len(self.untimed)} never timed here ({', '.join(self.untimed)}): not counted")
        if self.needs_cifar:  # (counted as 0 s and simulating, without a word: a probe)
            parts.append(f"{', '.join(self.needs_cifar)}: CIFAR-10 not given (--cifar-dir DIR), will not run")
        return "; ".join(parts)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate(checks: list[Check], context: CheckContext, cache_dir: Path) -> Estimate:
    """The time each of ``checks`` will take in ``context`` (see the module docstring)."""
    out = Estimate(on_device={chk.id for chk in checks if chk.on_device})
    to_run = pending(checks, context, cache_dir)
    out.overlap = overlaps(to_run, context)
    computed = {chk.id for chk in to_run}
    runs: dict[str, RunConfig] = {}  # by run folder: a run two checks plan runs once, with the first
    for chk in checks:
        if chk.id not in computed:
            out.per_check[chk.id] = 0.0  # its verdict is cached
            continue
        if chk.reads_cifar and not context.cifar_dir:
            out.per_check[chk.id] = 0.0  # it says 'could not run' at once
            out.needs_cifar.append(chk.id)
            continue
        last = read_cache(cache_path(cache_dir, chk.id, context.quick))
        if chk.planned is not None:  # a check of simulations: its runs not cached yet (reading the others is
            try:  # free)
                planned = [c for c in chk.planned(context) if c.out not in runs]
                seconds = sum(sweep_seconds(g, _calibration(out, g[0])) for g in sweep_groups(planned))
            except Exception:  # the check itself will say why it cannot run (no data, no GPU)
                out.per_check[chk.id] = None
                continue
            runs |= {c.out: c for c in planned}
            out.runs += len(planned)
            out.simulating.append(chk.id)
            out.simulation_seconds += seconds
            out.per_check[chk.id] = seconds
        else:
            out.per_check[chk.id] = float(last["seconds"]) if last and "seconds" in last else None
    if presweeps(context) and out.simulation_seconds > 0:  # beside a GPU: one sweep per data set for all
        joint = sum(sweep_seconds(g, _calibration(out, g[0])) for g in sweep_groups(list(runs.values())))
        for check_id in out.simulating:  # each check's share of it, for the progress bar
            out.per_check[check_id] = (out.per_check[check_id] or 0.0) * joint / out.simulation_seconds
        out.simulation_seconds = joint
    return out


def _calibration(out: Estimate, config: RunConfig) -> Calibration:
    """The calibration of the config's data set, model and device (measured once per estimate)."""
    key = f"{config.dataset}/{config.model} on {config.device}"
    if key not in out.calibrations:
        config.validate()
        out.calibrations[key] = calibrate(config)
    return out.calibrations[key]
