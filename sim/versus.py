"""dflkit against another decentralized-learning simulator, end to end, as each one's users run it.

The other simulator is **gossipy** (``pip install gossipy-dfl==0.0.1``, M. Polato's gossip-learning
simulator for PyTorch models; its to-do list names this paper's DFL, which it does not implement). Both
train the paper's MNIST CNN (Appendix C) on the MNIST copy dflkit ships, split i.i.d. over N nodes of a
ring, with mini-batches of B = 32 and learning rate eta = 0.05, for R rounds:

* **dflkit**: ``dfl-sim run --algorithm dfl --tau1 1 --tau2 1 --steps 2R`` (Algorithm 1: each round one
  local SGD step on every node, then one gossip step X <- C X with the paper's ring weights), logging
  the first and last step and checkpointing at the end only;
* **gossipy**: its ``GossipSimulator`` with the PUSH protocol, synchronous nodes and rounds of 100 time
  units (its examples' setting), each node a ``TorchModelHandler`` in MERGE_UPDATE mode with
  ``local_epochs = 0``: every model a node receives is averaged with its own, then the node takes one
  SGD step on a random mini-batch of B of its samples. Each node sends one model a round, so the nodes
  take about N local steps a round (counted exactly), no evaluation while it runs.

So both do N * R local SGD steps of the same model on the same data (about, for gossipy), and each round
moves one model per node (gossipy: to one neighbour; dflkit: a ring node's two neighbours mixed into it).
The algorithms differ in what a received model does, so the comparison is of cost per local SGD step,
``node_steps_per_s``, not of accuracy; each tool's own accuracy at the end is reported to show that both
trained (dflkit: the averaged model on the test set; gossipy: the nodes' mean on 1,000 test samples,
computed after its clock stops and not counted in its time).

Each simulator runs in a fresh Python process, timed from its start to its exit (``wall_s``: start-up,
imports, the data set read, training and the tool's own outputs), and its training alone (``train_s``:
dflkit's ``wall_seconds``, gossipy's ``start()``). Both get the same torch threads and glibc's allocator
settings of :mod:`sim.host` (gossipy runs 15% faster with them on 2 cores at N = 100: the comparison is of
the simulators, not of the allocator). The repeats alternate the order (AB BA ...), as in
:func:`sim.bench.sweep_benchmark`, so that a machine whose speed drifts slows both alike.

gossipy imports torchvision at the top of its data module for two data sets' downloaders, which dflkit
does not use; torchvision's wheels here do not import beside CPU torch, so where it cannot be imported
the child process registers an empty module under its name first (gossipy's other code does not touch it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bounds import InputError

__all__ = ["SIMULATORS", "Workload", "versus", "versus_rows"]

SIMULATORS = {"gossipy": ("gossipy", "gossipy-dfl==0.0.1")}
"""The simulators dflkit is compared with: name -> (its import name, what ``pip install`` takes)."""

ROUND_UNITS = 100  # gossipy's time units per round (delta), as in its examples
ACCURACY_SAMPLES = 1000  # test samples for gossipy's nodes' mean accuracy, after the clock stops


@dataclass(frozen=True)
class Workload:
    """One comparison point: N nodes of a ring, R rounds, mini-batches of B, learning rate eta."""

    nodes: int
    rounds: int
    batch_size: int = 32
    eta: float = 0.05
    seed: int = 0
    threads: int = 1


def versus(
    simulator: str, nodes: Sequence[int], node_steps: int, repeats: int = 2, threads: int | None = None
) -> dict[str, Any]:
    """dflkit against ``simulator`` at each N of ``nodes``, with R = node_steps // N rounds (so about
    ``node_steps`` local SGD steps a run), each timed ``repeats`` times (see the module docstring).

    Returns per N each tool's runs and ``dflkit_over_<simulator>``: dflkit's node-steps per second over the
    other's, end to end (``wall``) and training alone (``train``), from the repeats' totals.

    Raises:
        InputError: an unknown simulator, one that is not installed (naming what to install), a bad
            number, or a child process that failed (with the end of what it printed).
    """
    if simulator not in SIMULATORS:
        raise InputError(f"simulator {simulator!r} (expected one of: {', '.join(SIMULATORS)})")
    module, package = SIMULATORS[simulator]
    if importlib.util.find_spec(module) is None:
        raise InputError(
            f"{simulator} is not installed (pip install {package}, or pip install 'dflkit[versus]')"
        )
    if isinstance(nodes, int | str) or not nodes:
        raise InputError(f"nodes = {nodes!r} (expected a non-empty list of node counts)")
    for n in nodes:
        _at_least("nodes", n, 2)
    _at_least("node_steps", node_steps, 1)
    _at_least("repeats", repeats, 1)
    threads = len(os.sched_getaffinity(0)) if threads is None else threads
    _at_least("threads", threads, 1)
    points: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for n in nodes:
            work = Workload(nodes=n, rounds=max(1, node_steps // n), threads=threads)
            runs: dict[str, list[dict[str, Any]]] = {simulator: [], "dflkit": []}
            for repeat in range(repeats):
                order = (simulator, "dflkit") if repeat % 2 == 0 else ("dflkit", simulator)
                for tool in order:
                    out = Path(folder) / f"{tool}-{n}-{repeat}"
                    runs[tool].append(_dflkit(work, out) if tool == "dflkit" else _gossipy(work))
            points[f"N{n}"] = {"workload": asdict(work), **runs, **_ratios(runs, simulator)}
    return {"simulator": simulator, "package": package, "threads": threads, "repeats": repeats, **points}


def versus_rows(out: dict[str, Any]) -> dict[str, Any]:
    """:func:`versus`'s result as rows for a terminal (``dfl-sim versus`` without --json): one row per N and
    tool (node-steps per second end to end and training alone, accuracy), then dflkit's ratios per N."""
    simulator = out["simulator"]
    runs, ratios = [], []
    for point in (v for v in out.values() if isinstance(v, dict)):
        work = point["workload"]
        for tool in (simulator, "dflkit"):
            rate = point["node_steps_per_s"][tool]
            accuracy = sum(r["accuracy"] for r in point[tool]) / len(point[tool])
            runs.append({"nodes": work["nodes"], "rounds": work["rounds"], "tool": tool,
                         "node_steps_per_s": rate["wall"], "training_only": rate["train"],
                         "accuracy": round(accuracy, 4)})  # fmt: skip
        ratio = point[f"dflkit_over_{simulator}"]
        ratios.append({"nodes": work["nodes"], "end_to_end": ratio["wall"], "training_only": ratio["train"]})
    head = {k: out[k] for k in ("simulator", "package", "threads", "repeats")}
    return {**head, "runs": runs, f"dflkit_over_{simulator}": ratios}


def _at_least(name: str, value: Any, low: int) -> None:
    """InputError naming ``value`` unless it is an integer >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"{name} = {value!r} is out of range (expected an integer >= {low})")


def _ratios(runs: dict[str, list[dict[str, Any]]], simulator: str) -> dict[str, Any]:
    """Each tool's node-steps per second from its repeats' totals, and dflkit's over the other's."""
    rates: dict[str, dict[str, float]] = {}
    for tool, rows in runs.items():  # wall: every local step the process took; train: those in training
        rates[tool] = {
            "wall": sum(r["process_local_steps"] for r in rows) / sum(r["wall_s"] for r in rows),
            "train": sum(r["local_steps"] for r in rows) / sum(r["train_s"] for r in rows),
        }
    return {
        "node_steps_per_s": {tool: {k: round(v, 1) for k, v in r.items()} for tool, r in rates.items()},
        f"dflkit_over_{simulator}": {
            k: round(rates["dflkit"][k] / rates[simulator][k], 3) for k in rates["dflkit"]
        },
    }


def _child_env(threads: int) -> dict[str, str]:
    """The environment of both children: the same threads and (from :mod:`sim.host`) allocator settings."""
    from sim.host import retain_freed_memory

    retain_freed_memory()  # exports glibc's settings to os.environ, which the children inherit
    return {**os.environ, "OMP_NUM_THREADS": str(threads)}


def _timed(command: list[str], threads: int, what: str) -> tuple[float, str]:
    """Run ``command``; its wall seconds and standard output, or InputError with the end of its output."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=_child_env(threads), check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise InputError(f"{what} failed (exit {done.returncode}): " + " | ".join(tail))
    return wall, done.stdout


def _dflkit(work: Workload, out: Path) -> dict[str, Any]:
    """``dfl-sim run`` of the workload (module docstring) in a fresh process."""
    steps = 2 * work.rounds
    flags = {"algorithm": "dfl", "tau1": 1, "tau2": 1, "nodes": work.nodes, "topology": "ring",
             "partition": "iid", "batch-size": work.batch_size, "eta": work.eta, "seed": work.seed,
             "steps": steps, "log-every": steps, "checkpoint-every": steps, "threads": work.threads,
             "out": out}  # fmt: skip
    command = [sys.executable, "-m", "sim", "run", "--json"]
    for name, value in flags.items():
        command += [f"--{name}", str(value)]
    wall, stdout = _timed(command, work.threads, "dfl-sim run")
    summary = json.loads(stdout.strip().splitlines()[-1])
    return {
        "wall_s": round(wall, 3),
        "train_s": round(summary["wall_seconds"], 3),
        "local_steps": work.nodes * work.rounds,
        "process_local_steps": work.nodes * work.rounds,
        "accuracy": summary["final_test_accuracy"],
    }


def _gossipy(work: Workload) -> dict[str, Any]:
    """gossipy's run of the workload (module docstring) in a fresh process (:func:`gossipy_child`)."""
    command = [sys.executable, "-m", "sim.versus", json.dumps(asdict(work))]
    wall, stdout = _timed(command, work.threads, "gossipy")
    run = json.loads(stdout.strip().splitlines()[-1])
    return {"wall_s": round(wall - run.pop("accuracy_s"), 3), **run}  # this module's accuracy not in its time


def gossipy_child(work: Workload) -> dict[str, Any]:
    """The workload in gossipy, in this process: its training seconds, local SGD steps and the nodes' mean
    accuracy (module docstring)."""
    import random

    import numpy as np
    import torch

    try:  # only gossipy's downloaders use it (module docstring)
        import torchvision  # noqa: F401
    except Exception:  # a CUDA build beside CPU torch fails in many ways
        sys.modules["torchvision"] = types.ModuleType("torchvision")
    from gossipy.core import AntiEntropyProtocol, CreateModelMode, StaticP2PNetwork
    from gossipy.model import TorchModel
    from gossipy.model.handler import TorchModelHandler
    from gossipy.node import GossipNode
    from gossipy.simul import GossipSimulator

    from sim.data import load_mnist
    from sim.models import MnistCNN
    from sim.partition import make_partition

    torch.set_num_threads(work.threads)
    random.seed(work.seed)
    np.random.seed(work.seed)  # noqa: NPY002  (gossipy draws from numpy's global generator)
    torch.manual_seed(work.seed)
    data = load_mnist()
    parts = make_partition("iid").split(data.y_train.numpy(), work.nodes, np.random.default_rng(work.seed))
    local_steps = [0]

    class PaperCNN(TorchModel):
        """The paper's MNIST CNN as gossipy's model type (every node starts from the same weights)."""

        def __init__(self) -> None:
            super().__init__()
            self.net = MnistCNN()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.net(x)

        def init_weights(self) -> None:
            """Keep the prototype's initialisation, which every node copies."""

    class CountingHandler(TorchModelHandler):
        def _local_step(self, x: torch.Tensor, y: torch.Tensor) -> None:
            local_steps[0] += 1
            super()._local_step(x, y)

    class NoServerTest:
        """gossipy's data dispatcher, as the simulator reads it: no held-out set (no evaluation)."""

        def has_test(self) -> bool:
            return False

    ring = np.zeros((work.nodes, work.nodes))
    for i in range(work.nodes):
        ring[i, (i + 1) % work.nodes] = ring[i, (i - 1) % work.nodes] = 1
    network = StaticP2PNetwork(work.nodes, ring)
    prototype = CountingHandler(
        net=PaperCNN(), optimizer=torch.optim.SGD, optimizer_params={"lr": work.eta},
        criterion=torch.nn.functional.cross_entropy, local_epochs=0, batch_size=work.batch_size,
        create_model_mode=CreateModelMode.MERGE_UPDATE,
    )  # fmt: skip
    nodes = {
        i: GossipNode(idx=i, data=((data.x_train[p], data.y_train[p]), None), round_len=ROUND_UNITS,
                      model_handler=prototype.copy(), p2p_net=network, sync=True)
        for i, p in enumerate(parts)
    }  # fmt: skip
    simulator = GossipSimulator(
        nodes=nodes, data_dispatcher=NoServerTest(), delta=ROUND_UNITS, protocol=AntiEntropyProtocol.PUSH
    )
    simulator.init_nodes()  # gossipy's start: one local step per node (in the process's steps)
    before = local_steps[0]
    start = time.perf_counter()
    simulator.start(n_rounds=work.rounds)
    train = time.perf_counter() - start
    start = time.perf_counter()
    x, y = data.x_test[:ACCURACY_SAMPLES], data.y_test[:ACCURACY_SAMPLES]
    with torch.no_grad():
        accuracy = [float((n.model_handler.model(x).argmax(1) == y).float().mean()) for n in nodes.values()]
    return {
        "train_s": round(train, 3),
        "accuracy_s": round(time.perf_counter() - start, 3),
        "local_steps": local_steps[0] - before,
        "process_local_steps": local_steps[0],
        "accuracy": round(float(np.mean(accuracy)), 4),
    }


if __name__ == "__main__":  # the child process of _gossipy: one JSON line on stdout
    result = gossipy_child(Workload(**json.loads(sys.argv[1])))
    print(json.dumps(result))
