"""Beside a GPU, the simulations of all the selected checks run first, as one stacked sweep per data set.

Each figure's check runs its own runs as one sweep (``experiments._sweep``). On a GPU a sweep step has a
fixed cost whatever the number of runs stacked in it (kernel launches, the divergence check's read-back,
bookkeeping: about 2.3 ms a step on an H100, 2026-11-27), so Figs. 7-10's 63 MNIST runs at the paper's
settings as four sweeps pay it 17,625 times (7,125 + 3,000 + 4,500 + 3,000 steps) and as one sweep 7,125
times, with larger gradient calls. :func:`presweep` runs the checks' ``planned`` runs (those not cached; a
run two checks share once) as :func:`sim.sweep.run_sweep` of each :func:`sim.sweep.sweep_groups` group,
into the checks' own run folders; the checks then read them from the cache. A sweep's runs are the runs
alone up to float rounding (tests/test_sweep.py), so the verdicts do not depend on it.

On the CPU it is not done (:func:`presweeps`): a step's cost there is its arithmetic, the same in any
grouping, and each check's verdict comes sooner when its own runs go first.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from paper_checks.context import CheckContext
from paper_checks.registry import Check
from sim.config import RunConfig
from sim.sweep import run_sweep, sweep_groups

__all__ = ["planned_by_run", "presweep", "presweeps"]


def presweeps(context: CheckContext) -> bool:
    """Whether the checks' simulations go first as joint sweeps: on a device other than the CPU."""
    return context.beside_device


def planned_by_run(
    checks: list[Check], context: CheckContext, say: Callable[[str], None] | None = None
) -> dict[str, tuple[str, RunConfig]]:
    """Each simulation the checks will run (their ``planned`` runs not cached yet), by run folder, with the
    first check that plans it (a run two checks share runs once). A check whose plan cannot be made (no
    data, a bug) is left out, said to ``say``; the check itself reports the error when it runs."""
    first: dict[str, tuple[str, RunConfig]] = {}
    for chk in checks:
        if chk.planned is None:
            continue
        try:
            configs = chk.planned(context)
        except Exception as exc:
            if say:
                say(f"{chk.id}: its runs could not be planned ({type(exc).__name__}: {exc}); left to it")
            continue
        for c in configs:
            first.setdefault(c.out, (chk.id, c))
    return first


def presweep(checks: list[Check], context: CheckContext, say: Callable[[str], None] | None = None) -> None:
    """Run the simulations of ``checks`` as one sweep per data set (module docstring). A sweep that fails
    is told to ``say`` and left to its checks, which run their own runs again and report the error."""
    tell = say or (lambda line: None)
    planned = planned_by_run(checks, context, tell)
    for group in sweep_groups([c for _, c in planned.values()]):
        owners = {planned[c.out][0] for c in group}
        checks_in = [chk.id for chk in checks if chk.id in owners]  # in the checks' order (fig10 after fig8)
        start = time.perf_counter()
        try:
            run_sweep(group)
        except Exception as exc:  # the checks will meet it again and say so in their verdicts
            tell(f"the sweep of {len(group)} runs ({', '.join(checks_in)}) failed: {type(exc).__name__}: "
                 f"{exc}")  # fmt: skip
            continue
        tell(f"{len(group)} runs of {', '.join(checks_in)} as one sweep ({group[0].dataset}): "
             f"{time.perf_counter() - start:.0f} s")  # fmt: skip
