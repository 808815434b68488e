"""``dfl-sim bench``: speed of the vectorised engine, measured in one run on this machine.

Reports, for the paper's MNIST CNN (random inputs of MNIST shape; speed does not depend
on the pixels):

* node-steps per second of the vectorised engine and of the reference loop (one
  ``nn.Module`` + SGD per node), and their ratio (target >= 5 at N = 10, B = 32);
* the vectorised step time for N nodes x batch B over one model's step on one batch of
  N * B (the same arithmetic: the practical limit; target <= 1.3);
* node-steps per second and peak resident memory at N = 100 and N = 1000 (ring);
* the time of one gossip step X <- C X as N grows (dense and sparse C).

Ratios are taken from timings in the same run; nothing here is asserted.
"""

from __future__ import annotations

import copy
import resource
import time
from typing import Any

import scipy.sparse as sp
import torch
from torch.nn import functional as F

from bounds import mixing_matrix
from bounds.topologies import ring
from sim.algorithms import sparse_mixing
from sim.engine import Stack
from sim.models import MnistCNN

__all__ = ["run_benchmarks"]


def _time(fn, repeats: int) -> float:
    fn()  # warm-up (first calls build the vmap/autograd graphs)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def _engine_step(stack: Stack, X: torch.Tensor, x: torch.Tensor, y: torch.Tensor, eta: float = 0.01):
    w = torch.ones(y.shape, device=y.device)
    return lambda: stack.gradients(X, x, y, w)[0].mul_(eta).neg_().add_(X)


def distributed_benchmark(quick: bool, out: str) -> dict[str, Any]:
    """Node-steps per second with P = 1 and 2 gloo processes (MNIST CNN, 10-node ring, tau1 = tau2 = 4).

    Also the bytes that crossed between processes per gossip step, against the model's size.
    """
    from sim.runner import RunConfig, run

    steps = 40 if quick else 200
    rows: dict[str, Any] = {}
    for world in (1, 2):
        summary = run(
            RunConfig(
                steps=steps,
                log_every=steps,
                eval_samples=50,
                checkpoint_every=steps,
                backend="distributed",
                world_size=world,
                out=f"{out}/p{world}",
            )
        )
        local_steps = steps // 2  # tau1 = tau2 = 4
        rows[f"P{world}"] = {
            "node_steps_per_s": round(10 * local_steps / summary["wall_seconds"], 1),
            "bytes_on_wire_per_gossip_step": summary["bytes_on_wire_per_gossip_step"],
        }
    d = 20490
    rows["model_bytes_per_node"] = 4 * d
    rows["note"] = (
        "a 10-ring split 5/5 has 2 edges across the cut: each gossip step sends 2 rows each way "
        "(4 x 4 d bytes), not all 10 models"
    )
    return rows


def run_benchmarks(quick: bool = False, device: str = "cpu") -> dict[str, Any]:
    """Measure and return the numbers listed in the module docstring."""
    dev = torch.device(device)
    torch.manual_seed(0)
    repeats = 3 if quick else 10
    out: dict[str, Any] = {"device": device, "threads": torch.get_num_threads(), "repeats": repeats}
    model = MnistCNN().to(dev)
    stack = Stack(model)
    n, b = 10, 32
    X = stack.flatten(model).repeat(n, 1)
    x, y = torch.randn(n, b, 1, 28, 28, device=dev), torch.randint(0, 10, (n, b), device=dev)
    vectorised = _time(_engine_step(stack, X, x, y), repeats)
    models = [copy.deepcopy(model) for _ in range(n)]
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.01) for m in models]

    def loop() -> None:
        for i, (m, opt) in enumerate(zip(models, optimizers, strict=True)):
            opt.zero_grad()
            F.cross_entropy(m(x[i]), y[i]).backward()
            opt.step()

    reference = _time(loop, repeats)
    big_opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xb, yb = x.reshape(n * b, 1, 28, 28), y.reshape(-1)

    def big() -> None:
        big_opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        big_opt.step()

    single = _time(big, repeats)
    out["N10_B32"] = {
        "vectorised_node_steps_per_s": round(n / vectorised, 1),
        "reference_node_steps_per_s": round(n / reference, 1),
        "speedup_vs_reference": round(reference / vectorised, 2),
        "step_time_over_single_big_batch": round(vectorised / single, 3),
    }
    for nodes in [100] if quick else [100, 1000]:
        X = stack.flatten(model).repeat(nodes, 1)
        xs, ys = torch.randn(nodes, b, 1, 28, 28, device=dev), torch.randint(0, 10, (nodes, b), device=dev)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = _time(_engine_step(stack, X, xs, ys), 1 if nodes >= 1000 else repeats)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out[f"N{nodes}_B32"] = {
            "node_steps_per_s": round(nodes / t, 1),
            "peak_rss_mb": round(peak / 1024, 1),
            "peak_rss_growth_mb": round((peak - before) / 1024, 1),
        }
        del X, xs, ys
    gossip: dict[str, Any] = {}
    for nodes in [10, 100, 1000] if quick else [10, 100, 1000, 10000]:
        C = mixing_matrix(ring(nodes))
        X = torch.randn(nodes, stack.d)
        row: dict[str, float] = {}
        if nodes <= 1000:
            dense = torch.as_tensor(C.toarray() if sp.issparse(C) else C, dtype=torch.float32)
            row["dense_ms"] = round(1000 * _time(lambda dense=dense, X=X: dense @ X, repeats), 3)
        sparse = sparse_mixing(C)
        row["sparse_ms"] = round(1000 * _time(lambda sparse=sparse, X=X: sparse @ X, repeats), 3)
        gossip[str(nodes)] = row
    out["gossip_step_ms_d20490"] = gossip
    return out
