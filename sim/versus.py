"""dflkit against another decentralized-learning simulator, end to end, as each one's users run it.

The other simulator is **gossipy** (``pip install gossipy-dfl==0.0.1``, M. Polato's gossip-learning
simulator for PyTorch models; its to-do list names this paper's DFL, which it does not implement). Both
train the paper's CNN (Appendix C; gossipy runs dflkit's own :class:`~sim.models.MnistCNN` or
:class:`~sim.models.CifarCNN`) on MNIST (the copy dflkit ships) or CIFAR-10, split i.i.d. over N nodes of a
ring, with mini-batches of B = 32 and learning rate eta = 0.05, for R rounds:

* **dflkit**: ``dfl-sim run --algorithm dfl --tau1 1 --tau2 1 --steps 2R`` (Algorithm 1: each round one
  local SGD step on every node, then one gossip step X <- C X with the paper's ring weights), logging
  the first and the last step, one checkpoint at the end;
* **gossipy**: its ``GossipSimulator`` with the PUSH protocol, synchronous nodes and rounds of 100 time
  units (its examples' setting), each node a ``TorchModelHandler`` in MERGE_UPDATE mode with
  ``local_epochs = 0``: every model a node receives is averaged with its own, then the node takes one
  SGD step on a random mini-batch of B of its samples. Each node sends one model a round, so the nodes
  take N local steps a round, no evaluation while it runs.

Both tools' local SGD steps are counted from what they ran (dflkit: from the steps its summary reports,
:func:`sim.algorithms.local_step_count`; gossipy: each call of its handler's local step), and each round
moves one model per node (gossipy: to one neighbour; dflkit: a ring node's two neighbours mixed into it).
The algorithms differ in what a received model does, so the comparison is of cost per local SGD step,
``node_steps_per_s``, not of accuracy; each tool's accuracy at the end is reported to show that both
trained (dflkit: the averaged model on the test set; gossipy: the nodes' mean on 1,000 test samples drawn
at random, computed after its clock stops and taken out of its time).

Each simulator runs in a fresh Python process. ``wall_s``: from its start to its exit (start-up, imports,
the data set read, the run and the tool's own outputs; gossipy's less this module's accuracy pass).
``run_s``: the run alone, without start-up: dflkit's ``wall_seconds`` (its steps with its first and last
logged evaluations, 500 samples each), gossipy's ``start()``. Both get the same torch threads and glibc's
allocator settings of :mod:`sim.host` (gossipy runs 15% faster with them on 2 cores at N = 100: the
comparison is of the simulators, not of the allocator). Each tool is launched once, untimed, before the
clocks start (imports read from a warm page cache for both), and the timed launches alternate across all
points and repeats (AB BA AB ...), as in :func:`sim.bench.sweep_benchmark`, so that a machine whose speed
drifts slows both alike; ``dflkit_over_<simulator>_by_repeat`` gives each repeat's ratio (the spread).

gossipy imports torchvision at the top of its data module for two data sets' downloaders, but does not
require it (nor does dflkit: its wheels here do not import beside CPU torch); where it cannot be imported,
the child process registers an empty module under its name first (gossipy's other code does not touch it).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bounds import InputError
from bounds._checks import whole_number
from bounds.graph.topologies import ring
from sim.algorithms import local_step_count
from sim.config import RunConfig
from sim.errors import SimulationError
from sim.host import allowed_cpus, check_threads

__all__ = ["SIMULATORS", "Workload", "gossipy_child", "versus", "versus_rows"]

ROUND_UNITS = 100  # gossipy's time units per round (delta), as in its examples
# test samples (seeded, at random) for gossipy's nodes' mean accuracy, after the clock stops; not the first
# 1,000: a CIFAR-10 test batch may be sorted by label (this project's machines' copy is)
ACCURACY_SAMPLES = 1000


@dataclass(frozen=True)
class Workload:
    """One comparison point: N nodes of a ring, R rounds, the data set (mnist or cifar10, with the paper's CNN
    for it), mini-batches of B, learning rate eta."""

    nodes: int
    rounds: int
    dataset: str = "mnist"
    data_dir: str | None = None
    batch_size: int = 32
    eta: float = 0.05
    seed: int = 0
    threads: int = 1

    def dflkit_config(self, out: str | Path) -> RunConfig:
        """The workload as dflkit's run (module docstring): R rounds of one local and one gossip step."""
        steps = 2 * self.rounds
        return RunConfig(
            dataset=self.dataset, data_dir=self.data_dir, model="cnn",
            algorithm="dfl", tau1=1, tau2=1, nodes=self.nodes, topology="ring", partition="iid",
            batch_size=self.batch_size, eta=self.eta, seed=self.seed, steps=steps, log_every=steps,
            checkpoint_every=steps, checkpoint_seconds=1e9, threads=self.threads, out=str(out),
        )  # fmt: skip


def versus(
    simulator: str,
    nodes: Sequence[int],
    node_steps: int,
    repeats: int = 2,
    threads: int | None = None,
    dataset: str = "mnist",
    data_dir: str | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """dflkit against ``simulator`` at each N of ``nodes``, with R = node_steps // N rounds (so about
    ``node_steps`` local SGD steps a run), each tool timed ``repeats`` times (module docstring), on
    ``dataset`` (``mnist``, the shipped copy, or ``cifar10`` from ``data_dir``) with the paper's CNN for it.
    ``say``: one line per launch (the CLI writes them to stderr).

    Returns ``points``: per N, each tool's runs, their node-steps per second ``end_to_end`` and
    ``without_start_up`` from the repeats' totals, and ``dflkit_over_<simulator>``, dflkit's rate over
    the other's (with each repeat's ratio).

    Raises:
        InputError: an unknown simulator, one that is not installed in the expected version (naming what to
            install), or a bad number (before anything runs).
        SimulationError: a child process failed or printed no result (with the end of what it printed).
    """
    if simulator not in SIMULATORS:
        raise InputError(f"simulator {simulator!r} (expected one of: {', '.join(SIMULATORS)})")
    _check_installed(simulator)
    if dataset not in ("mnist", "cifar10"):
        raise InputError(f"dataset = {dataset!r} (expected mnist or cifar10: the paper's CNNs)")
    if dataset == "cifar10" or data_dir is not None:  # the shipped MNIST needs no check (nor torch)
        from sim.data import dataset_files

        dataset_files(dataset, data_dir)
    if isinstance(nodes, int | str) or not nodes:
        raise InputError(f"nodes = {nodes!r} (expected a non-empty list of node counts)")
    if len(set(nodes)) != len(nodes):
        raise InputError(f"nodes = {list(nodes)!r} repeats a node count (expected each N once)")
    nodes = [whole_number("nodes", n, low=3) for n in nodes]  # whole numbers before any comparison (a string
    node_steps = whole_number("node_steps", node_steps, low=1)  # would not compare with a count), as ints
    samples = TRAINING_SAMPLES[dataset]
    if max(nodes) > samples:  # dflkit's partition refuses it, but only after gossipy had run
        raise InputError(
            f"nodes = {max(nodes)} exceeds the {samples} training samples of {dataset} (expected nodes <= "
            "samples)"
        )
    if node_steps < max(nodes):  # a round is N node-steps: fewer would be run as one round, unsaid
        raise InputError(
            f"node_steps = {node_steps!r} is fewer than nodes = {max(nodes)} (expected at least one round of "
            "every node, node_steps >= N)"
        )
    repeats = whole_number("repeats", repeats, low=1)
    # 0 is automatic, as the threads limit's message says (it was refused, a probe)
    automatic = threads is None or (not isinstance(threads, bool) and threads == 0)
    threads = whole_number("threads", len(allowed_cpus()) if automatic else threads, low=0)  # (low=1 said
    # 'expected an integer >= 1' for -1, where 0 is taken)
    check_threads(threads)
    works = []
    for n in nodes:
        ring(n)  # a ring of n nodes exists (n >= 3)
        work = Workload(
            nodes=n, rounds=max(1, node_steps // n), dataset=dataset, data_dir=data_dir, threads=threads
        )
        work.dflkit_config("runs/versus").validate()  # the rest of dflkit's limits, before anything runs
        works.append(work)
    tools: dict[str, Callable[[Workload, Path], dict[str, Any]]] = {simulator: SIMULATORS[simulator][1]}
    tools["dflkit"] = _dflkit
    points: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        say(
            f"versus: {len(works)} point(s) x {repeats} repeat(s) x 2 tools, after one untimed launch of each"
        )
        for name, tool in tools.items():  # untimed: both start from a warm page cache
            tool(dataclasses.replace(works[0], rounds=1), Path(folder) / f"warm-{name}")
        launch = 0
        for work in works:
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in tools}
            for repeat in range(repeats):
                order = list(tools) if launch % 2 == 0 else list(tools)[::-1]
                launch += 1
                for name in order:
                    runs[name].append(tools[name](work, Path(folder) / f"{name}-{work.nodes}-{repeat}"))
                    say(f"versus: N = {work.nodes}, repeat {repeat + 1}/{repeats}: {name} "
                        f"{runs[name][-1]['wall_s']:.1f} s")  # fmt: skip
            points[f"N{work.nodes}"] = {"workload": asdict(work), **runs, **_rates(runs, simulator)}
    return {"simulator": simulator, "package": SIMULATORS[simulator][0], "threads": threads,
            "repeats": repeats, "points": points}  # fmt: skip


def versus_rows(out: dict[str, Any]) -> dict[str, Any]:
    """:func:`versus`'s result as rows for a terminal (``dfl-sim versus`` without --json): one row per N and
    tool (node-steps per second end to end and without start-up, accuracy), then dflkit's ratios per N (and
    each repeat's, end to end)."""
    simulator = out["simulator"]
    runs, ratios = [], []
    for point in out["points"].values():
        work = point["workload"]
        for tool in (simulator, "dflkit"):
            rate = point["node_steps_per_s"][tool]
            accuracy = sum(r["accuracy"] for r in point[tool]) / len(point[tool])
            runs.append({"nodes": work["nodes"], "rounds": work["rounds"], "tool": tool,
                         "end_to_end": rate["end_to_end"], "without_start_up": rate["without_start_up"],
                         "accuracy": round(accuracy, 4)})  # fmt: skip
        ratio = point[f"dflkit_over_{simulator}"]
        by_repeat = point[f"dflkit_over_{simulator}_by_repeat"]
        ratios.append({"nodes": work["nodes"], "end_to_end": ratio["end_to_end"],
                       "without_start_up": ratio["without_start_up"],
                       "end_to_end_by_repeat": by_repeat["end_to_end"]})  # fmt: skip
    head = {k: out[k] for k in ("simulator", "package", "threads", "repeats")}
    return {**head, "runs": runs, f"dflkit_over_{simulator}": ratios}


def _check_installed(simulator: str) -> None:
    """InputError unless the simulator's distribution is installed in the version this module drives (a
    module of the same name from another distribution does not count)."""
    package = SIMULATORS[simulator][0]
    distribution, version = package.split("==")
    try:
        found = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise InputError(f"{simulator} is not installed (pip install {package})") from None
    if found != version:
        raise InputError(f"{distribution} {found} is installed (expected {package}: pip install {package})")


TRAINING_SAMPLES = {"mnist": 60_000, "cifar10": 50_000}
"""The training set sizes of the data sets versus runs (a node needs one sample)."""


def _rates(runs: dict[str, list[dict[str, Any]]], simulator: str) -> dict[str, Any]:
    """Each tool's node-steps per second from its repeats' totals (``end_to_end``: every local step the
    process took over its wall time ``wall_s``; ``without_start_up``: the run's steps over the run's time
    ``run_s``), dflkit's over the other's, and each repeat's ratio."""

    def rate(rows: list[dict[str, Any]], kind: str) -> float:
        if kind == "end_to_end":
            return sum(r["process_local_steps"] for r in rows) / sum(r["wall_s"] for r in rows)
        return sum(r["local_steps"] for r in rows) / sum(r["run_s"] for r in rows)

    kinds = ("end_to_end", "without_start_up")
    rates = {tool: {k: rate(rows, k) for k in kinds} for tool, rows in runs.items()}
    pairs = list(zip(runs["dflkit"], runs[simulator], strict=True))
    return {
        "node_steps_per_s": {tool: {k: round(v, 1) for k, v in r.items()} for tool, r in rates.items()},
        f"dflkit_over_{simulator}": {k: round(rates["dflkit"][k] / rates[simulator][k], 3) for k in kinds},
        f"dflkit_over_{simulator}_by_repeat": {
            k: [round(rate([ours], k) / rate([theirs], k), 3) for ours, theirs in pairs] for k in kinds
        },
    }


def _child_env(threads: int) -> dict[str, str]:
    """The environment of both children: the same threads and (from :mod:`sim.host`) allocator settings."""
    from sim.host import retain_freed_memory

    retain_freed_memory()  # exports glibc's settings to os.environ, which the children inherit
    return {**os.environ, "OMP_NUM_THREADS": str(threads)}


def _timed(command: list[str], threads: int, what: str) -> tuple[float, dict[str, Any]]:
    """Run ``command``; its wall seconds and the JSON object on the last line of its output, or
    SimulationError with the end of what it printed."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=_child_env(threads), check=False)
    wall = time.perf_counter() - start
    tail = " | ".join((done.stderr.strip() or done.stdout.strip()).splitlines()[-5:]) or "(nothing printed)"
    tail = tail.removeprefix("dfl-sim: error: ")
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:  # a real-time signal has no name
            name = f"signal {-done.returncode}"
        raise SimulationError(f"{what} was killed by {name}: {tail}")
    if done.returncode != 0:
        raise SimulationError(f"{what} failed (exit {done.returncode}): {tail}")
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        result = None
    if not isinstance(result, dict):
        raise SimulationError(f"{what} printed no result (expected a JSON object last): {tail}")
    return wall, result


def _dflkit(work: Workload, out: Path) -> dict[str, Any]:
    """``dfl-sim run`` of the workload (module docstring) in a fresh process."""
    config = work.dflkit_config(out)
    command = [sys.executable, "-m", "sim", "run", "--json"]
    for field in dataclasses.fields(RunConfig):  # the config's values that are not dfl-sim run's defaults
        value = getattr(config, field.name)
        if value != field.default:
            command += [f"--{field.name.replace('_', '-')}", str(value)]
    wall, summary = _timed(command, work.threads, "dfl-sim run")
    local = work.nodes * local_step_count("dfl", 1, 1, summary["steps"])
    return {
        "wall_s": round(wall, 3),
        "run_s": round(summary["wall_seconds"], 3),
        "steps": summary["steps"],
        "local_steps": local,
        "process_local_steps": local,
        "accuracy": summary["final_test_accuracy"],
    }


def _gossipy(work: Workload, out: Path) -> dict[str, Any]:
    """gossipy's run of the workload (module docstring) in a fresh process (:func:`gossipy_child`; it
    writes no files, so ``out`` is not used)."""
    command = [sys.executable, "-m", "sim.versus", json.dumps(asdict(work))]
    wall, run = _timed(command, work.threads, "gossipy")
    return {"wall_s": round(wall - run.pop("accuracy_s"), 3), **run}  # this module's accuracy not in its time


SIMULATORS: dict[str, tuple[str, Callable[[Workload, Path], dict[str, Any]]]] = {
    "gossipy": ("gossipy-dfl==0.0.1", _gossipy)
}
"""The simulators dflkit is compared with: name -> (what ``pip install`` takes, the function that runs the
workload in it)."""


def gossipy_child(work: Workload) -> dict[str, Any]:
    """The workload in gossipy, in this process: its run's seconds, local SGD steps (in the run, and in the
    process: gossipy's start takes one per node) and the nodes' mean accuracy (module docstring)."""
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

    from sim.data import load_dataset
    from sim.models import make_model
    from sim.partition import make_partition

    torch.set_num_threads(work.threads)
    random.seed(work.seed)
    np.random.seed(work.seed)  # noqa: NPY002  (gossipy draws from numpy's global generator)
    torch.manual_seed(work.seed)
    data = load_dataset(work.dataset, work.data_dir)
    parts = make_partition("iid").split(data.y_train.numpy(), work.nodes, np.random.default_rng(work.seed))
    local_steps = [0]

    class PaperCNN(TorchModel):
        """The paper's CNN for the data set as gossipy's model type (every node starts from the same
        weights)."""

        def __init__(self) -> None:
            super().__init__()
            self.net = make_model("cnn", data.input_shape, data.num_classes)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.net(x)

        def init_weights(self) -> None:
            """Keep the prototype's initialisation, which every node copies."""

    class CountingHandler(TorchModelHandler):
        """gossipy's handler for torch models, counting its local SGD steps."""

        def _local_step(self, x: torch.Tensor, y: torch.Tensor) -> None:
            local_steps[0] += 1
            super()._local_step(x, y)

    class NoServerTest:
        """gossipy's data dispatcher, as the simulator reads it: no held-out set (no evaluation)."""

        def has_test(self) -> bool:
            return False

    adjacency = np.zeros((work.nodes, work.nodes))
    for i in range(work.nodes):
        adjacency[i, (i + 1) % work.nodes] = adjacency[i, (i - 1) % work.nodes] = 1
    network = StaticP2PNetwork(work.nodes, adjacency)
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
    run = time.perf_counter() - start
    start = time.perf_counter()
    sample = np.random.default_rng(work.seed).choice(
        len(data.y_test), min(ACCURACY_SAMPLES, len(data.y_test)), replace=False
    )
    x, y = data.x_test[sample], data.y_test[sample]  # a random sample: a test set may be sorted by label
    with torch.no_grad():
        accuracy = [float((n.model_handler.model(x).argmax(1) == y).float().mean()) for n in nodes.values()]
    return {
        "run_s": round(run, 3),
        "accuracy_s": round(time.perf_counter() - start, 3),
        "local_steps": local_steps[0] - before,
        "process_local_steps": local_steps[0],
        "accuracy": round(float(np.mean(accuracy)), 4),
    }


if __name__ == "__main__":  # the child process of _gossipy: one JSON line on stdout
    try:
        print(json.dumps(gossipy_child(Workload(**json.loads(sys.argv[1])))))
    except InputError as exc:  # a data file missing or malformed: its message, not a traceback
        print(exc, file=sys.stderr)
        sys.exit(2)
