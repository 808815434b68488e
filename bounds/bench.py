"""Timings of the spectral solvers, bound grids and the optimiser (``dfl-bounds bench``).

Measured in one run on this machine; the numbers are wall-clock seconds, best of
``repeats``. Nothing here is asserted: speed is reported, not tested.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from bounds.dfl.proposition1 import bound_grid, dfl_bound
from bounds.graph.mixing import mixing_matrix
from bounds.graph.spectral import spectral_summary, zeta
from bounds.graph.topologies import make_graph
from bounds.plan.cost import CostModel
from bounds.plan.optimize import optimize_dfl

__all__ = ["run_benchmarks"]


def _best(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run_benchmarks(quick: bool = False) -> dict[str, Any]:
    """Time zeta and the spectral summary on large sparse graphs, and Proposition 1 on a grid."""
    repeats = 1 if quick else 3
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    out: dict[str, Any] = {"repeats": repeats, "zeta_seconds": {}, "spectral_summary_seconds": {}}
    for name in ("ring", "torus", "erdos-renyi"):
        for n in sizes:
            C = mixing_matrix(make_graph(name, n), "metropolis")
            out["zeta_seconds"][f"{name}-{n}"] = round(_best(partial(zeta, C), repeats), 4)
            if n <= 10_000:
                out["spectral_summary_seconds"][f"{name}-{n}"] = round(
                    _best(partial(spectral_summary, C), 1), 4
                )
    side = 100
    scalars = dict(L=1.0, sigma2=1.0, N=10, eta=0.01, T=10_000, gap=1.0)
    grid = _best(
        lambda: bound_grid(
            tau1=np.arange(1, side + 1),
            tau2=np.arange(1, side + 1),
            zeta=np.linspace(0, 0.99, side),
            **scalars,
        ),
        repeats,
    )
    loop_points = 2_000
    loop = _best(lambda: [dfl_bound(tau1=4, tau2=4, zeta=0.5, **scalars) for _ in range(loop_points)], 1)
    out["grid_points"] = side**3
    out["grid_seconds"] = round(grid, 4)
    out["grid_points_per_second"] = round(side**3 / grid)
    out["scalar_calls_per_second"] = round(loop_points / loop)
    out["grid_speedup_per_point"] = round((side**3 / grid) / (loop_points / loop), 1)
    cost = CostModel(1.0, 0.5)
    out["optimize_500x500_seconds"] = round(
        _best(lambda: optimize_dfl(L=1.0, sigma2=1.0, N=10, gap=1.0, zeta=0.87, cost=cost,
                                   budget_seconds=1e5, max_tau1=500, max_tau2=500), repeats),
        4,
    )  # fmt: skip
    return out
