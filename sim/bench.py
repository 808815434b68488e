"""``dfl-sim bench``: speed of the vectorised engine, measured in one run on this machine.

Reports, for the paper's MNIST CNN (random inputs of MNIST shape; speed does not depend
on the pixels):

* node-steps per second of the vectorised engine and of the reference loop (one
  ``nn.Module`` + SGD per node), and their ratio (target >= 5 at N = 10, B = 32);
* the vectorised step time for N nodes x batch B over one model's step on one batch of
  N * B (the same arithmetic: the practical limit; target <= 1.3), that batch in the faster of the
  NCHW and channels-last layouts; the stacked step in each of :data:`sim.models.STACKED_FORMS`
  (``step_channels_last_over_nchw``, ``step_bmm_over_nchw``: whether the device's default form,
  :func:`sim.models.stacked_form_default`, is the right one);
* node-steps per second and peak resident memory at N = 100 and N = 1000 (ring), and on a
  CUDA device the peak memory allocated on it;
* the time of one gossip step X <- C X on a ring as N grows, and on a torus of the largest N (dense and
  sparse C, and shifted diagonals, :class:`sim.gossip.DiagonalMixing`; on CUDA also the shifted
  diagonals fused into one kernel by ``torch.compile``), beside the time of one copy of X (``X.clone()``): the
  floor of any step that writes a new N x d matrix (``gossip_ring_N_over_copy``,
  ``gossip_torus_N_over_copy``); and which form a run takes there (``chosen``,
  :func:`sim.gossip.choose_mixing`);
* the FLOPs of one vectorised step (torch's FLOP counter) per second, against an n x n float32
  matmul measured in the same run as the device's attainable peak (``step_fraction_of_peak``);
* ``sweep_over_sequential``: R = 8 MNIST runs of the default config end to end (start-up,
  evaluation, logging and checkpoints included) stacked as one sweep, over the same runs one after
  another, both timed twice in the order AB BA (a drifting machine slows both alike); and the sweep's
  node-steps per second.

* ``compiled_step_N10_B32`` (the full bench): the stacked step under ``torch.compile`` and, on CUDA, as a
  replayed CUDA graph, against eager (:func:`compiled_step_benchmark`; ``step_compiled_over_eager``,
  ``step_cuda_graph_over_eager``);
* ``stacked_forms``: the stacked local step at a sweep's size (on a GPU Figs. 7-10's MNIST sweep, 630 nodes,
  and Fig. 7's CIFAR-10 sweep, 150 nodes) in each stacked form and, on CUDA, cuDNN's heuristics against its
  timed algorithms and TF32 against float32 (:func:`stacked_forms_benchmark`).

The headline ratios are also top-level keys: ``step_over_big_batch``, ``step_over_reference_loop``,
``step_fraction_of_peak``, ``gossip_ring_10000_over_copy`` (the largest N; the fastest timed form, named by
``gossip_ring_10000_method``; ``gossip_ring_10000_chosen_over_copy``: the form runs take),
``gossip_torus_10000_over_copy``, ``sweep_over_sequential``.

Every tensor is created on the requested device (``cpu``, ``cuda`` or ``cuda:INDEX``;
anything else is refused with an :class:`~bounds.InputError`). On a CUDA device the timer
synchronises the device before starting the clock and after the repeats, so the figures are
the kernels' run time, not the time to launch them. Ratios are taken from timings in the same
run; nothing here is asserted.
"""

from __future__ import annotations

import copy
import math
import resource
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F

from bounds import InputError
from bounds.graph.mixing import as_dense, topology_matrix
from sim.algorithms import local_step_count
from sim.engine import Stack
from sim.gossip import DiagonalMixing, as_mixing, choose_mixing, mixing_form, sparse_mixing
from sim.models import STACKED_FORMS, MnistCNN, stacked_form_default
from sim.timing import seconds_per_call as _time
from sim.timing import synchronize as _synchronize

__all__ = [
    "compiled_step_benchmark",
    "distributed_benchmark",
    "gossip_benchmark",
    "resolve_device",
    "run_benchmarks",
    "stacked_forms_benchmark",
]

_EXPECTED_DEVICES = "cpu, cuda or cuda:INDEX"


@dataclass(frozen=True)
class _Sizes:
    """The problem sizes of one bench run (tests shrink them)."""

    nodes: int
    batch: int
    repeats: int
    scaling_nodes: tuple[int, ...]
    gossip_nodes: tuple[int, ...]
    dense_gossip_up_to: int = 1000
    matmul: int = 2048  # the reference for the device's peak: an n x n float32 matmul
    sweep_runs: int = 8  # MNIST runs of the default config, stacked and one by one
    sweep_steps: int = 40
    sweep_repeats: int = 2  # each mode timed twice, AB BA
    form_nodes: tuple[int, int] = (40, 10)  # stacked MNIST and CIFAR-10 CNNs for the convolution forms
    compiled: bool = False  # time the step under torch.compile (and a CUDA graph on CUDA): the full bench


def _sizes(quick: bool) -> _Sizes:
    if quick:
        return _Sizes(10, 32, 3, (100,), (10, 100, 1000), matmul=1024, sweep_steps=12, form_nodes=(10, 4))
    return _Sizes(10, 32, 10, (100, 1000), (10, 100, 1000, 10000), compiled=True)


FORM_NODES_CUDA = (630, 150)
"""The stacks timed for the convolution forms on a GPU: Figs. 7-10's MNIST sweep (63 runs of 10 nodes) and
Fig. 7's CIFAR-10 sweep (15 runs), every run in a local step."""


def resolve_device(device: str | torch.device) -> torch.device:
    """``device`` as a :class:`torch.device` the bench can run on.

    Raises:
        InputError (a ``ValueError``): ``device`` is not a device name, not a CPU or CUDA
            device, or a CUDA device this machine does not have; the one-line message names
            the value and what was expected.
    """
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InputError(f"device {device!r} is not a torch device (expected {_EXPECTED_DEVICES})") from None
    if dev.type == "cpu":
        return dev
    if dev.type != "cuda":
        raise InputError(f"device {device!r} is not supported by the bench (expected {_EXPECTED_DEVICES})")
    if not torch.cuda.is_available():
        raise InputError(
            f"device {device!r} is not available: this machine has no CUDA device (expected cpu)"
        )
    count = torch.cuda.device_count()
    if dev.index is not None and dev.index >= count:
        indices = "cuda:0" if count == 1 else f"cuda:0 ... cuda:{count - 1}"
        raise InputError(
            f"device {device!r} does not exist: this machine has {count} CUDA device(s) "
            f"(expected cpu, cuda or {indices})"
        )
    return dev


def _engine_step(
    stack: Stack, X: torch.Tensor, x: torch.Tensor, y: torch.Tensor, eta: float = 0.01
) -> Callable[[], torch.Tensor]:
    """One vectorised local step X - eta G(X) (a new matrix; X itself is left unchanged)."""
    w = torch.ones(y.shape, device=y.device)
    return lambda: stack.gradients(X, x, y, w)[0].mul_(eta).neg_().add_(X)


def _gradients_call(
    stack: Stack, X: torch.Tensor, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor
) -> Callable[[], tuple[torch.Tensor, torch.Tensor]]:
    """The stacked gradients of every node of X on the batches (x, y), weights w, as a call to time."""
    return lambda: stack.gradients(X, x, y, w)


def step_flops(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> int:
    """Floating-point operations of one local step of N nodes x B samples: those of one forward and
    backward pass of ``model`` on the N * B samples (the same arithmetic as the vectorised step),
    counted by torch's FLOP counter (convolutions and matmuls). Counted on the plain model: the
    counter over-counts the backward of grouped convolutions (by the number of groups)."""
    from torch.utils.flop_counter import FlopCounterMode

    xb, yb = x.reshape(-1, *x.shape[2:]), y.reshape(-1)
    counter = FlopCounterMode(display=False)
    with counter:
        F.cross_entropy(model(xb), yb).backward()
    model.zero_grad(set_to_none=True)
    return int(counter.get_total_flops())


def matmul_flops_per_s(n: int, repeats: int, dev: torch.device) -> float:
    """FLOP/s of an n x n float32 matmul on ``dev``: the reference for the device's attainable peak."""
    A, B = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    return 2 * n**3 / _time(lambda: A @ B, repeats, dev)


def stacked_forms_benchmark(
    nodes: tuple[int, int], batch: int, repeats: int, dev: torch.device
) -> dict[str, Any]:
    """One stacked local step (the gradients of every node, :meth:`sim.engine.Stack.gradients`) of the MNIST
    CNN at ``nodes[0]`` nodes and the CIFAR-10 CNN at ``nodes[1]``, ``batch`` samples each, in each of
    :data:`sim.models.STACKED_FORMS` (grouped convolutions NCHW and channels-last, im2col + batched matmul)
    and, on CUDA, NCHW with cuDNN timing its algorithms per shape (``torch.backends.cudnn.benchmark``), and
    NCHW and bmm in TF32 (what ``--tf32`` buys; runs are float32 by default,
    :func:`sim.setup.set_precision`). Per form: ms per step,
    node-steps per second, GFLOP/s (torch's FLOP counter on the plain model) and the gradients' relative
    difference from the NCHW form's. ``fastest``: the form with the least ms.

    What it found on an H100 (2026-11-27, torch 2.11), 630 MNIST and 150 CIFAR-10 nodes, in float32: bmm
    22.3 and 23.0 ms (the default on CUDA since), NCHW 49.1 and 44.7, with cudnn.benchmark 47.1 and 44.7,
    channels-last 53.3 and 62.4; in TF32 NCHW 21.5 and 23.6, bmm 21.8 and 20.1. Earlier that day, with cuDNN
    in TF32 (torch's default then): cudnn.benchmark gained nothing on the step, and the 63-run MNIST sweep
    with it did not end in the 110 s that one without it needs 80 for (it times the algorithms again for
    every new group of runs).
    """
    from sim.models import CifarCNN, MnistCNN
    from sim.setup import kept_torch_settings, seeded_torch  # sim.setup loads on use

    forms = [(form, False, False) for form in STACKED_FORMS]
    if dev.type == "cuda":
        forms += [("nchw", True, False), ("nchw", False, True), ("bmm", False, True)]
    out: dict[str, Any] = {}
    flags: tuple[Any, Any] = torch.backends.cudnn, torch.backends.cuda.matmul  # (modules as settings)
    with kept_torch_settings(), seeded_torch(0, dev):  # the same models and inputs whatever ran before
        for (name, module, shape), n in zip(
            (("mnist", MnistCNN, (1, 28, 28)), ("cifar10", CifarCNN, (3, 32, 32))), nodes, strict=True
        ):
            model = module().to(dev)
            flat = Stack(model).flatten(model)
            X = flat.repeat(n, 1) + 0.01 * torch.randn(n, len(flat), device=dev)
            x, y = torch.randn(n, batch, *shape, device=dev), torch.randint(0, 10, (n, batch), device=dev)
            w = torch.ones(y.shape, device=dev)
            flops = step_flops(model, x, y)
            rows: dict[str, Any] = {}
            reference = None
            for form, benchmark, tf32 in forms:
                flags[0].benchmark, flags[0].allow_tf32, flags[1].allow_tf32 = benchmark, tf32, tf32
                step = _gradients_call(Stack(model, form=form), X, x, y, w)
                G = step()[0]
                reference = G if reference is None else reference
                seconds = _time(step, repeats, dev)
                label = form + ("-cudnn_benchmark" if benchmark else "") + ("-tf32" if tf32 else "")
                rows[label] = {
                    "ms": round(seconds * 1e3, 3),
                    "node_steps_per_s": round(n / seconds, 1),
                    "gflop_per_s": round(flops / seconds / 1e9, 1),
                    "relative_difference": float(f"{float((G - reference).norm() / reference.norm()):.3g}"),
                }
            out[f"{name}_N{n}_B{batch}"] = rows | {"fastest": min(rows, key=lambda k: rows[k]["ms"])}
    return out


def compiled_step_benchmark(
    model: torch.nn.Module,
    X: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    repeats: int,
    dev: torch.device,
    variants: Sequence[str] = ("compiled", "cuda_graph"),
) -> dict[str, Any]:
    """The stacked local step's gradients (:meth:`sim.engine.Stack.gradients`, the device's default form) of
    ``model`` at the nodes of X on batches (x, y): eager against the same step with its forward pass and loss
    under ``torch.compile`` (inductor; autograd differentiates the compiled graph) and, on CUDA, the whole
    step captured once as a CUDA graph and replayed (no kernel launches from Python: the GPU regime of
    few nodes, where a step is hundreds of small kernels). Issue 15, item 5: "time both; keep what wins".

    Per variant: ms per step, its ratio to eager (``over_eager``), the gradients' relative difference from
    eager's, and for torch.compile the seconds of its first call (the compilation). Eager is timed before
    and after each variant, in the order AB BA (``eager_ms``: all its timings; a variant's ratio is over
    the eager timings beside it). A variant that fails (no compiler, a graph break: the compilation is
    ``fullgraph``, so a partly compiled step is an error, not a number) reports ``error`` instead, and the
    others still run. ``variants``: which of ``compiled`` and ``cuda_graph`` (CUDA only) to time.

    The CUDA graph's step copies this step's X, x, y, w into the graph's static inputs and replays it (what
    a run would do every step); its outputs are the graph's own tensors, which the next replay overwrites.
    They are set to NaN after the capture (which computes nothing), so the gradients compared are the
    replay's.

    Measured on 2 unloaded CPU cores (2026-11-27, MNIST CNN, 10 nodes x 32, this function, three runs):
    compiled 52-60 ms against eager 21-40 ms beside it, ``over_eager`` 1.68, 1.81 and 2.16 (3.6 s to compile
    cold), gradients equal to 1e-7 relative: runs stay eager on the CPU. Not yet timed on a GPU.
    """
    stack = Stack(model)
    inputs = (X, x, y, torch.ones(y.shape, device=dev))
    eager = _gradients_call(stack, *inputs)
    G_eager = eager()[0]
    eager_times: list[float] = []

    def compiled_variant() -> tuple[Callable[[], tuple[torch.Tensor, torch.Tensor]], dict[str, Any]]:
        compiled = Stack(model)  # the same step, its losses compiled (Stack.gradients differentiates them)
        compiled.stacked_losses = torch.compile(  # type: ignore[method-assign]  # (this one Stack's)
            compiled.stacked_losses, dynamic=False, fullgraph=True
        )
        step = _gradients_call(compiled, *inputs)
        start = time.perf_counter()
        step()
        _synchronize(dev)
        return step, {"compile_s": round(time.perf_counter() - start, 2)}

    def graph_variant() -> tuple[Callable[[], tuple[torch.Tensor, torch.Tensor]], dict[str, Any]]:
        with torch.cuda.device(dev):  # torch.cuda.graph's capture stream is made on the current device
            static = tuple(t.clone() for t in inputs)
            X_s, x_s, y_s, w_s = static
            side = torch.cuda.Stream(dev)
            side.wait_stream(torch.cuda.current_stream(dev))
            with torch.cuda.stream(side):  # warm-up off the capture (autograd's and cuBLAS's first calls)
                for _ in range(3):
                    stack.gradients(X_s, x_s, y_s, w_s)
            torch.cuda.current_stream(dev).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                result = stack.gradients(X_s, x_s, y_s, w_s)
            for tensor in result:
                tensor.fill_(float("nan"))

        def step() -> tuple[torch.Tensor, torch.Tensor]:
            for into, value in zip(static, inputs, strict=True):
                into.copy_(value)
            graph.replay()
            return result

        return step, {}

    builders = {"compiled": compiled_variant, "cuda_graph": graph_variant}
    chosen = [v for v in variants if v in builders and (v != "cuda_graph" or dev.type == "cuda")]
    out: dict[str, Any] = {}
    for name in chosen:
        build = builders[name]
        before = _time(eager, repeats, dev)
        try:
            step, extra = build()
            G = step()[0]
            seconds = _time(step, repeats, dev)
        except Exception as exc:  # a variant that cannot run here is reported, not fatal
            out[name] = {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"}
            eager_times.append(before)
            continue
        seconds = (seconds + _time(step, repeats, dev)) / 2  # A B B A
        after = _time(eager, repeats, dev)
        eager_times += [before, after]
        difference = float((G - G_eager).norm() / G_eager.norm())
        out[name] = {"ms": round(seconds * 1e3, 3), "over_eager": round(2 * seconds / (before + after), 3),
                     "relative_difference": float(f"{difference:.3g}"), **extra}  # fmt: skip
    return {"eager_ms": [round(t * 1e3, 3) for t in eager_times], **out}


def sweep_benchmark(
    runs: int, steps: int, device: torch.device, out: str | Path, repeats: int = 2
) -> dict[str, Any]:
    """End to end, as a user runs them: ``runs`` MNIST runs of the default config (CNN, 10-node ring,
    seeds 0, 1, ..., tau2 alternating 4 and 1, ``steps`` steps, 4 logged points, checkpoints) one after
    another with :func:`sim.runner.run`, and as one stacked sweep (:func:`sim.sweep.run_sweep`).

    Both are timed ``repeats`` times, alternating and in the order AB BA AB ... (sequential A, sweep B),
    each into fresh folders, so that a machine whose speed drifts during the benchmark (shared machines
    vary by 10-30% from minute to minute) slows both alike. ``sweep_over_sequential``: the sweeps'
    total seconds over the sequential runs' total seconds (< 1: the sweep is faster);
    ``sweep_over_sequential_by_repeat``: the ratio of each repeat (its spread is the measurement's).
    The data set is loaded before any clock starts.
    """
    from sim.data import load_mnist
    from sim.runner import RunConfig, run
    from sim.sweep import run_sweep

    load_mnist()

    def configs(folder: str) -> list[RunConfig]:
        return [
            RunConfig(seed=i, tau2=4 if i % 2 == 0 else 1, steps=steps, log_every=max(1, steps // 4),
                      device=str(device), out=str(Path(out) / folder / str(i)))
            for i in range(runs)
        ]  # fmt: skip

    def sequential(folder: str) -> None:
        for config in configs(folder):
            run(config)

    modes = {"sequential": sequential, "sweep": lambda folder: run_sweep(configs(folder))}
    seconds: dict[str, list[float]] = {name: [] for name in modes}
    for repeat in range(repeats):
        order = ("sequential", "sweep") if repeat % 2 == 0 else ("sweep", "sequential")
        for name in order:
            start = time.perf_counter()
            modes[name](f"{name}-{repeat}")
            seconds[name].append(time.perf_counter() - start)
    local = sum(  # node-steps of one sweep
        c.nodes * local_step_count(c.algorithm, c.tau1, c.tau2, c.steps) for c in configs("sweep")
    )
    sequential_s, sweep_s = sum(seconds["sequential"]), sum(seconds["sweep"])
    return {
        "runs": runs,
        "steps_per_run": steps,
        "repeats": repeats,
        "sequential_s": [round(x, 3) for x in seconds["sequential"]],
        "sweep_s": [round(x, 3) for x in seconds["sweep"]],
        "sweep_over_sequential": round(sweep_s / sequential_s, 3),
        "sweep_over_sequential_by_repeat": [
            round(b / a, 3) for a, b in zip(seconds["sequential"], seconds["sweep"], strict=True)
        ],
        "sweep_node_steps_per_s": round(local * repeats / sweep_s, 1),
        "sequential_node_steps_per_s": round(local * repeats / sequential_s, 1),
    }


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


def gossip_benchmark(
    d: int,
    nodes: Sequence[int],
    repeats: int,
    device: torch.device,
    dense_up_to: int = 1000,
    topology: str = "ring",
) -> dict[str, dict[str, float | str]]:
    """Milliseconds of one gossip step X <- C X on an N-node ``topology`` (X: N x d float32), per N.

    ``dense_ms`` (C as a dense matrix, only for N <= ``dense_up_to``), ``sparse_ms`` (C as
    sparse CSR) and ``diagonal_ms`` (:class:`sim.gossip.DiagonalMixing`: shifted diagonals; on CUDA also
    ``diagonal_compiled_ms``, the same fused into one kernel), beside ``copy_ms``: one ``X.clone()`` on
    the same device with the same timer; ``chosen``: the form a run of that C takes on this device
    (:func:`sim.gossip.choose_mixing`). Every tensor is created on ``device``.
    """
    rows: dict[str, dict[str, float | str]] = {}
    for n in nodes:
        C = topology_matrix(topology, n)
        X = torch.randn(n, d, device=device)
        row: dict[str, float | str] = {}
        if n <= dense_up_to:
            dense = torch.as_tensor(as_dense(C), dtype=torch.float32, device=device)
            row["dense_ms"] = round(1000 * _time(partial(torch.matmul, dense, X), repeats, device), 3)
            del dense
        sparse = sparse_mixing(C, device=device)
        csr = as_mixing(sparse)  # the product a run makes (sim.gossip.csr_product on the CPU)
        row["sparse_ms"] = round(1000 * _time(partial(csr.mix, X, X[:0]), repeats, device), 3)
        diagonal = DiagonalMixing.of(C)
        assert diagonal is not None  # any C (no limit on its diagonals)
        row["diagonal_ms"] = round(1000 * _time(partial(diagonal.mix, X, X[:0]), repeats, device), 3)
        if device.type == "cuda":  # the shifted adds fused into one kernel by torch.compile (Triton)
            row["diagonal_compiled_ms"] = _compiled_diagonal_ms(diagonal, X, repeats)
        row["copy_ms"] = round(1000 * _time(X.clone, repeats, device), 3)
        row["chosen"] = mixing_form(choose_mixing(C, device))
        rows[str(n)] = row
        del X, sparse, csr
    return rows


GOSSIP_FORMS = ("dense", "sparse", "diagonal", "diagonal_compiled")  # the timed forms of gossip_benchmark


def _gossip_headline(prefix: str, row: dict[str, float | str]) -> dict[str, float | str | None]:
    """One gossip row's headline keys: ``PREFIX_over_copy`` (the fastest timed form over one copy of X,
    named by ``PREFIX_method``: a bench-only fused kernel counts), ``PREFIX_chosen`` and
    ``PREFIX_chosen_over_copy`` (the form a run takes, None where it was not timed at this N),
    ``PREFIX_sparse_over_copy``."""
    copy = _ms(row["copy_ms"])
    fastest = min(GOSSIP_FORMS, key=lambda form: _ms(row.get(f"{form}_ms")))
    chosen = _ms(row.get(f"{row['chosen']}_ms"))
    return {
        f"{prefix}_over_copy": round(_ms(row[f"{fastest}_ms"]) / copy, 2),
        f"{prefix}_method": fastest,
        f"{prefix}_chosen": row["chosen"],
        f"{prefix}_chosen_over_copy": round(chosen / copy, 2) if math.isfinite(chosen) else None,
        f"{prefix}_sparse_over_copy": round(_ms(row["sparse_ms"]) / copy, 2),
    }


def _ms(value: float | str | None) -> float:
    """A timing in ms, or infinity for one not measured (absent, or the reason it could not be)."""
    return value if isinstance(value, float) else float("inf")


def _compiled_diagonal_ms(diagonal: DiagonalMixing, X: torch.Tensor, repeats: int) -> float | str:
    """Milliseconds of :meth:`DiagonalMixing.fused` (after compiling it and checking it against
    :meth:`DiagonalMixing.mix`), or why it could not be compiled."""
    try:
        fused = diagonal.fused()
        torch.testing.assert_close(fused(X), diagonal.mix(X, X[:0]), rtol=1e-5, atol=1e-6)
        return round(1000 * _time(lambda: fused(X), repeats, X.device), 3)
    except Exception as exc:  # no compiler back end here: report it, measure the rest
        return f"not compiled: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"


def run_benchmarks(
    quick: bool = False,
    device: str | torch.device = "cpu",
    say: Callable[[str], None] = lambda line: None,
    into: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Measure and return the numbers listed in the module docstring. ``say``: a line as each part starts
    (the full bench on 2 busy cores ran past 400 s without a word, a probe); ``into``: the dict the numbers
    are written to as they are measured (what a stopped bench had measured was lost with it).

    Raises:
        InputError (a ``ValueError``): ``device`` is not ``cpu``, ``cuda`` or ``cuda:INDEX``
            of this machine (checked before anything is measured).
    """
    from sim.setup import kept_torch_settings, seeded_torch

    dev = resolve_device(device)
    with kept_torch_settings(), seeded_torch(0, dev):  # the caller's threads, flags and random streams kept
        return _measure(quick, dev, say, {} if into is None else into)


def _measure(
    quick: bool, dev: torch.device, say: Callable[[str], None], out: dict[str, Any]
) -> dict[str, Any]:
    """:func:`run_benchmarks` on a resolved device, inside its kept settings and seeded streams, into
    ``out``."""
    from sim.setup import set_precision

    sizes = _sizes(quick)
    cuda = dev.type == "cuda"
    set_precision(dev, tf32=False)  # what runs use unless --tf32 (stacked_forms also times TF32)
    repeats = sizes.repeats
    out |= {"device": str(dev), "threads": torch.get_num_threads(), "repeats": repeats}
    out["precision"] = "float32 (TF32 off)" if cuda else "float32"
    if cuda:
        out["device_name"] = torch.cuda.get_device_name(dev)
    out["timer"] = (
        "perf_counter, device synchronised before and after the repeats" if cuda else "perf_counter"
    )
    model = MnistCNN().to(dev)
    stack = Stack(model)
    n, b = sizes.nodes, sizes.batch
    X = stack.flatten(model).repeat(n, 1)
    x, y = torch.randn(n, b, 1, 28, 28, device=dev), torch.randint(0, 10, (n, b), device=dev)
    say(f"the stacked step, N = {n}, B = {b}: each form, the per-node loop, one big batch, a matmul")
    forms = {  # the stacked CNN's forms, timed in the same run; the default is one of them
        form: _time(_engine_step(Stack(model, form=form), X, x, y), repeats, dev) for form in STACKED_FORMS
    }
    default_form = stacked_form_default(x)
    vectorised = forms[default_form]
    models = [copy.deepcopy(model) for _ in range(n)]
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.01) for m in models]

    def loop() -> None:
        for i, (m, opt) in enumerate(zip(models, optimizers, strict=True)):
            opt.zero_grad()
            F.cross_entropy(m(x[i]), y[i]).backward()
            opt.step()

    reference = _time(loop, repeats, dev)
    xb, yb = x.reshape(n * b, 1, 28, 28), y.reshape(-1)

    def big(channels_last: bool) -> Callable[[], None]:
        """One model's SGD step on the N * B samples, its activations in the given layout."""
        one = MnistCNN(channels_last=channels_last).to(dev)
        one.load_state_dict(model.state_dict())
        opt = torch.optim.SGD(one.parameters(), lr=0.01)

        def step() -> None:
            opt.zero_grad()
            F.cross_entropy(one(xb), yb).backward()
            opt.step()

        return step

    big_layouts = {  # the limit: one model's step on N * B samples in the faster of the two layouts
        "nchw": _time(big(False), repeats, dev),
        "channels_last": _time(big(True), repeats, dev),
    }
    single = min(big_layouts.values())
    flops = step_flops(model, x, y)
    peak = matmul_flops_per_s(sizes.matmul, repeats, dev)
    out[f"N{n}_B{b}"] = {
        "vectorised_node_steps_per_s": round(n / vectorised, 1),
        "reference_node_steps_per_s": round(n / reference, 1),
        "speedup_vs_reference": round(reference / vectorised, 2),
        "step_time_over_single_big_batch": round(vectorised / single, 3),
        "default_form": default_form,
        "step_ms_by_form": {k: round(v * 1e3, 2) for k, v in forms.items()},
        "big_batch_ms_by_layout": {k: round(v * 1e3, 2) for k, v in big_layouts.items()},
        "step_gflop": round(flops / 1e9, 4),
        "step_gflop_per_s": round(flops / vectorised / 1e9, 2),
    }
    out[f"matmul_{sizes.matmul}_gflop_per_s"] = float(f"{peak / 1e9:.4g}")  # (1 decimal: 0.0 on a busy CPU)
    out["step_over_big_batch"] = out[f"N{n}_B{b}"]["step_time_over_single_big_batch"]
    out["step_over_reference_loop"] = round(vectorised / reference, 3)
    out["step_channels_last_over_nchw"] = round(forms["channels_last"] / forms["nchw"], 3)
    out["step_bmm_over_nchw"] = round(forms["bmm"] / forms["nchw"], 3)
    out["step_fraction_of_peak"] = round(flops / vectorised / peak, 3)
    for nodes in sizes.scaling_nodes:
        say(f"the stacked step at N = {nodes}")
        X = stack.flatten(model).repeat(nodes, 1)
        xs, ys = torch.randn(nodes, b, 1, 28, 28, device=dev), torch.randint(0, 10, (nodes, b), device=dev)
        if cuda:
            torch.cuda.reset_peak_memory_stats(dev)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = _time(_engine_step(stack, X, xs, ys), 1 if nodes >= 1000 else repeats, dev)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        row: dict[str, float] = {
            "node_steps_per_s": round(nodes / t, 1),
            "peak_rss_mb": round(peak / 1024, 1),
            "peak_rss_growth_mb": round((peak - before) / 1024, 1),
        }
        if cuda:
            row["peak_cuda_allocated_mb"] = round(torch.cuda.max_memory_allocated(dev) / 2**20, 1)
        out[f"N{nodes}_B{b}"] = row
        del X, xs, ys
    say(f"gossip steps, d = {stack.d}, N = {', '.join(map(str, sizes.gossip_nodes))}")
    gossip = gossip_benchmark(stack.d, sizes.gossip_nodes, repeats, dev, sizes.dense_gossip_up_to)
    out[f"gossip_step_ms_d{stack.d}"] = gossip
    largest = max(sizes.gossip_nodes)  # the memory-bound regime: one gossip step against one copy
    torus = gossip_benchmark(stack.d, (largest,), repeats, dev, sizes.dense_gossip_up_to, "torus")
    out[f"gossip_torus_step_ms_d{stack.d}"] = torus
    for name, step_ms in (("ring", gossip[str(largest)]), ("torus", torus[str(largest)])):
        out |= _gossip_headline(f"gossip_{name}_{largest}", step_ms)
    say(f"a sweep of {sizes.sweep_runs} runs against the runs one by one")
    with tempfile.TemporaryDirectory() as folder:
        sweep = sweep_benchmark(sizes.sweep_runs, sizes.sweep_steps, dev, folder, sizes.sweep_repeats)
    out["sweep"] = sweep
    out["sweep_over_sequential"] = sweep["sweep_over_sequential"]
    form_nodes = FORM_NODES_CUDA if cuda and not quick else sizes.form_nodes
    say(f"the stacked forms at N = {', '.join(map(str, form_nodes))}")
    out["stacked_forms"] = stacked_forms_benchmark(form_nodes, b, repeats, dev)
    if sizes.compiled:
        say("the step compiled")
        X = stack.flatten(model).repeat(n, 1)
        compiled = compiled_step_benchmark(model, X, x, y, repeats, dev)
        out[f"compiled_step_N{n}_B{b}"] = compiled
        for name in ("compiled", "cuda_graph"):
            if name in compiled:
                out[f"step_{name}_over_eager"] = compiled[name].get("over_eager")
    return out
