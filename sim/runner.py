"""A full simulation run: config in, metrics CSV, checkpoints and a summary out.

Everything is written as the run goes: ``config.json`` (the full resolved config), one
``metrics.csv`` row per logged step (flushed at once), ``checkpoint.pt`` every
``checkpoint_every`` steps (written to a temporary file, then renamed), and at the end
``summary.json`` (and ``params.npz`` with ``save_params``). ``resume=True`` continues from
the last checkpoint with the same random streams, so a resumed run equals an unbroken one.
A diverging run (NaN or inf) stops with a message and keeps what it recorded.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bounds import InputError, load_matrix, make_graph, mixing_matrix
from bounds.compression import make_compressor
from bounds.mixing import check_mixing_matrix
from bounds.serialize import jsonable
from bounds.topologies import from_edge_list
from sim.algorithms import (
    BOTH,
    GOSSIP,
    LOCAL,
    ChocoGossip,
    ExactGossip,
    resolve_schedule,
    sparse_mixing,
    step_kinds,
)
from sim.data import Dataset, load_dataset
from sim.engine import BatchSampler, Stack
from sim.models import LogReg, make_model
from sim.partition import make_partition
from sim.trainer import Trainer

__all__ = ["COLUMNS", "RunConfig", "run"]

COLUMNS = (
    "step",
    "round",
    "phase",
    "lr",
    "batch_loss",
    "train_loss",
    "train_acc",
    "test_acc",
    "node_loss",
    "node_acc",
    "consensus",
    "grad_norm2",
    "bits",
    "model_time",
    "wall_time",
)
PHASES = {LOCAL: "local", GOSSIP: "gossip", BOTH: "both"}
SPARSE_GOSSIP_FROM_NODES = 200  # dense C @ X below, sparse CSR above (see dfl-sim bench)
RESUMABLE_CHANGES = ("eta", "t_comp", "t_comm", "latency", "bandwidth")  # with --allow-change
NOT_IN_FINGERPRINT = (  # fields that do not change the trajectory: free to differ on --resume
    "out", "resume", "steps", "device", "backend", "world_size", "timeout", "fault", "log_every",
    "eval_samples", "checkpoint_every", "checkpoint_seconds", "threads", "allow_change", "save_params",
)  # fmt: skip


@dataclass
class RunConfig:
    """Every knob of a run (the CLI's flags); ``validate`` checks them all up front."""

    dataset: str = "mnist"
    data_dir: str | None = None
    model: str = "cnn"
    nodes: int = 10
    topology: str = "ring"
    weights: str = "paper"
    algorithm: str = "dfl"
    tau1: int = 4
    tau2: int = 4
    eta: float = 0.05
    lr_schedule: str = "constant"
    mu: float | None = None
    a: float | None = None
    gamma: float = 1.0
    compressor: str = "identity"
    compressor_param: float | None = None
    steps: int = 400
    batch_size: int = 32
    partition: str = "shards"
    alpha: float = 0.5
    seed: int = 0
    device: str = "cpu"
    out: str = "runs/latest"
    log_every: int = 20
    eval_samples: int = 500
    t_comp: float = 1.0
    t_comm: float = 1.0
    latency: float | None = None
    bandwidth: float | None = None
    checkpoint_every: int = 100
    save_params: bool = False
    init_params: str | None = None
    resume: bool = False
    backend: str = "local"
    world_size: int = 1
    timeout: float = 60.0
    checkpoint_seconds: float = 60.0
    threads: int = 0
    allow_change: str = ""
    fault: str | None = None  # testing only: "exit:STEP" or "hang:STEP" for the last distributed rank

    def validate(self) -> None:
        """Raise InputError naming the first bad value (types first, then ranges)."""
        self._check_types()
        positive_ints = ("nodes", "steps", "log_every", "eval_samples", "checkpoint_every")
        for name in positive_ints:
            value = getattr(self, name)
            if value < 1:
                raise InputError(f"{name} = {value!r} is out of range (expected an integer >= 1)")
        if self.batch_size < 0:
            raise InputError(
                f"batch_size = {self.batch_size!r} is out of range (expected >= 0; 0 = full local data)"
            )
        if not 0 <= self.seed < 2**63:
            raise InputError(f"seed = {self.seed!r} is out of range (expected an integer 0 <= seed < 2^63)")
        if self.threads < 0:
            raise InputError(f"threads = {self.threads!r} is out of range (expected >= 0; 0 = automatic)")
        for name in ("eta", "t_comp", "t_comm", "checkpoint_seconds", "alpha"):
            value = getattr(self, name)
            if not value > 0:
                raise InputError(f"{name} = {value!r} is out of range (expected a number > 0)")
        if not 0 < self.gamma <= 1:
            raise InputError(f"gamma = {self.gamma!r} is out of range (expected 0 < gamma <= 1)")
        if self.latency is not None and self.latency < 0:
            raise InputError(f"latency = {self.latency!r} is out of range (expected seconds >= 0)")
        if self.bandwidth is not None and not self.bandwidth > 0:
            raise InputError(f"bandwidth = {self.bandwidth!r} is out of range (expected bits per second > 0)")
        unknown = [f for f in self.changes_allowed() if f not in RESUMABLE_CHANGES]
        if unknown:
            raise InputError(
                f"allow_change names {unknown[0]!r} (expected a comma-separated list of: "
                f"{', '.join(RESUMABLE_CHANGES)})"
            )
        if self.backend not in ("local", "distributed"):
            raise InputError(f"backend = {self.backend!r} is unknown (expected local or distributed)")
        if self.backend == "distributed" and not (
            isinstance(self.world_size, int) and 1 <= self.world_size <= self.nodes
        ):
            raise InputError(
                f"world_size = {self.world_size!r} is out of range (expected 1 <= world_size <= nodes)"
            )
        if self.fault is not None and not re.fullmatch(r"(exit|hang):\d+", self.fault):
            raise InputError(f"fault = {self.fault!r} is malformed (expected 'exit:STEP' or 'hang:STEP')")
        if not self.timeout > 0:
            raise InputError(f"timeout = {self.timeout!r} is out of range (expected seconds > 0)")
        if self.lr_schedule not in ("constant", "cdfl"):
            raise InputError(f"lr_schedule = {self.lr_schedule!r} is unknown (expected constant or cdfl)")
        if self.lr_schedule == "cdfl" and not (self.mu and self.mu > 0 and self.a and self.a > 0):
            raise InputError("lr_schedule 'cdfl' (eta_k = 4 / (mu (a + k))) needs mu > 0 and a > 0")
        if self.algorithm != "cdfl" and self.compressor != "identity":
            raise InputError(
                f"compressor {self.compressor!r} needs algorithm 'cdfl' (got {self.algorithm!r})"
            )
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise InputError(f"device = {self.device!r} but no CUDA device is available (expected cpu)")
        if not re.fullmatch(r"cpu|cuda(:\d+)?", self.device):
            raise InputError(f"device = {self.device!r} is unknown (expected cpu, cuda or cuda:INDEX)")
        resolve_schedule(self.algorithm, self.tau1, self.tau2)

    def _check_types(self) -> None:
        """Every field has the type its annotation names (a bool is not an integer, a number not a name)."""
        for f in fields(self):
            value, kinds = getattr(self, f.name), str(f.type).split(" | ")
            if value is None and "None" in kinds:
                continue
            base = kinds[0]
            ok = {
                "str": isinstance(value, str),
                "int": isinstance(value, int) and not isinstance(value, bool),
                "bool": isinstance(value, bool),
                "float": isinstance(value, int | float)
                and not isinstance(value, bool)
                and math.isfinite(value),
            }[base]
            if not ok:
                expected = {"str": "a string", "int": "an integer", "bool": "true or false",
                            "float": "a finite number"}[base]  # fmt: skip
                raise InputError(f"{f.name} = {value!r} has the wrong type (expected {expected})")

    def changes_allowed(self) -> list[str]:
        """The fields ``allow_change`` lets differ from the checkpoint's config on resume."""
        return [name.strip().replace("-", "_") for name in self.allow_change.split(",") if name.strip()]


def _mixing(config: RunConfig, uses_J: bool) -> np.ndarray:
    if uses_J:
        return np.full((config.nodes, config.nodes), 1.0 / config.nodes)
    name = config.topology
    if name.startswith("matrix:"):
        C = load_matrix(name.removeprefix("matrix:"))
    elif name.startswith("edges:"):
        C = mixing_matrix(from_edge_list(name.removeprefix("edges:")), config.weights)
    else:
        C = mixing_matrix(make_graph(name, config.nodes), config.weights)
    C = check_mixing_matrix(C)  # the same validation as dfl-bounds: a disconnected graph is refused
    C = C.toarray() if hasattr(C, "toarray") else np.asarray(C)
    if C.shape[0] != config.nodes:
        raise InputError(f"nodes = {config.nodes} but topology {name!r} has {C.shape[0]} nodes")
    return C


def _learning_rate(config: RunConfig) -> float | Callable[[int], float]:
    if config.lr_schedule == "cdfl":
        mu, a = float(config.mu), float(config.a)
        return lambda k: 4.0 / (mu * (a + k))
    return float(config.eta)


def _atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def _initial_point(config: RunConfig, model: torch.nn.Module, stack: Stack) -> torch.Tensor:
    if config.init_params:
        path = Path(config.init_params)
        if not path.is_file():
            raise InputError(
                f"init params file {str(path)!r} does not exist (expected an npz from --save-params)"
            )
        try:
            f = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(
                f"init params file {str(path)!r} is not an npz ({exc}; expected an npz from --save-params)"
            ) from None
        if not hasattr(f, "files"):
            raise InputError(
                f"init params file {str(path)!r} holds one array (expected an npz from --save-params)"
            )
        with f:
            try:
                arrays = [
                    torch.as_tensor(f[n]).reshape(-1, *s)[0]
                    for n, s in zip(stack.names, stack.shapes, strict=True)
                ]
            except (KeyError, RuntimeError, ValueError, TypeError) as exc:
                raise InputError(
                    f"init params file {str(path)!r} does not match model {config.model!r} ({exc})"
                ) from None
        return torch.cat([a.reshape(-1).float() for a in arrays])
    if isinstance(model, LogReg):  # linear models (logreg, lstsq) start from zero
        return torch.zeros(stack.d)
    return stack.flatten(model)


class _Evaluator:
    """Fixed evaluation samples; metrics of the average model u and of the nodes."""

    def __init__(self, stack: Stack, data: Dataset, samples: int, seed: int, device: torch.device) -> None:
        rng = np.random.default_rng(seed + 1)
        tr = rng.choice(len(data.y_train), size=min(samples, len(data.y_train)), replace=False)
        te = rng.choice(len(data.y_test), size=min(samples, len(data.y_test)), replace=False)
        self.stack = stack
        self.x_tr, self.y_tr = data.x_train[tr].to(device), data.y_train[tr].to(device)
        self.x_te, self.y_te = data.x_test[te].to(device), data.y_test[te].to(device)

    def __call__(self, X: torch.Tensor) -> dict[str, float]:
        u = X.mean(0)
        train_loss, train_acc = self.stack.evaluate(u, self.x_tr, self.y_tr)
        _, test_acc = self.stack.evaluate(u, self.x_te, self.y_te)
        nodes = range(
            0, X.shape[0], -(-X.shape[0] // 4)
        )  # at most 4 nodes, evenly spaced: evaluation stays cheap
        node = [self.stack.evaluate(X[i], self.x_tr, self.y_tr) for i in nodes]
        return {
            "train_loss": train_loss,
            "train_acc": train_acc,
            "test_acc": test_acc,
            "node_loss": float(np.mean([n[0] for n in node])),
            "node_acc": float(np.mean([n[1] for n in node])),
            "consensus": float(((X - u) ** 2).sum() / X.shape[0]),
            "grad_norm2": self.stack.full_gradient_norm2(u, self.x_tr, self.y_tr),
        }


@dataclass
class Setup:
    """Everything a run derives from its config, identical on every process of a distributed run."""

    data: Dataset
    parts: list[np.ndarray]
    stack: Stack
    tau1: int
    tau2: int
    uses_J: bool
    C: np.ndarray
    compressor: Any
    bits_per_gossip: float
    t_comm: float
    x0: torch.Tensor
    device: torch.device
    out: Path


def prepare(config: RunConfig, main: bool = True) -> Setup:
    """Validate the config and build data, partition, model, mixing matrix, compressor and costs.

    The run folder is made ready (:func:`prepare_out`) by the main process only (``main``).
    """
    config.validate()
    device = torch.device(config.device)
    data = load_dataset(config.dataset, config.data_dir)
    parts = make_partition(config.partition, alpha=config.alpha, node=data.node).split(
        data.y_train.numpy(), config.nodes, np.random.default_rng(config.seed)
    )
    torch.manual_seed(config.seed)
    model = make_model(config.model, data.input_shape, data.num_classes).to(device)
    stack = Stack(model)
    tau1, tau2, uses_J = resolve_schedule(config.algorithm, config.tau1, config.tau2)
    compressor = make_compressor(config.compressor, config.compressor_param)
    compressor.check_dimension(stack.d)
    bits = compressor.bits(stack.d)
    if config.bandwidth:
        t_comm = (config.latency or 0.0) + bits / config.bandwidth
    else:
        t_comm = config.t_comm * bits / (32.0 * stack.d)  # --t-comm is one uncompressed gossip step
    x0 = _initial_point(config, model, stack).to(device)
    C = _mixing(config, uses_J)
    out = prepare_out(config) if main else Path(config.out)  # once every input is checked
    return Setup(data, parts, stack, tau1, tau2, uses_J, C, compressor, bits, t_comm, x0, device, out)


RUN_FILES = ("checkpoint.pt", "summary.json", "params.npz", "metrics.csv", "config.json")


def prepare_out(config: RunConfig) -> Path:
    """The run folder, created and checked writable; a fresh run removes an earlier run's files.

    With ``resume`` the folder must hold a checkpoint whose config matches (see
    :func:`check_resumable`); without it, an old ``checkpoint.pt`` / ``summary.json`` /
    ``params.npz`` would sit beside the new ``config.json`` and a later ``--resume`` would pick up
    the old checkpoint, so they are removed.
    """
    out = Path(config.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"out = {config.out!r} is not a writable folder ({exc.strerror or exc})") from None
    if config.resume:
        check_resumable(config, out / "checkpoint.pt")
    else:
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
    return out


def fingerprint(config: RunConfig) -> dict[str, Any]:
    """The fields of a config that shape the trajectory (what a resumed run must share)."""
    return {k: v for k, v in asdict(config).items() if k not in NOT_IN_FINGERPRINT}


def check_resumable(config: RunConfig, checkpoint: Path) -> None:
    """Refuse ``--resume`` without a checkpoint, or with settings that differ from the checkpoint's.

    Fields named in ``allow_change`` (from RESUMABLE_CHANGES) may differ; the others must not.
    """
    if not checkpoint.is_file():
        raise InputError(
            f"resume: {str(checkpoint)!r} does not exist (expected the folder of an interrupted run; "
            "run without --resume to start a new one)"
        )
    try:
        saved = torch.load(checkpoint, weights_only=False).get("config")
    except Exception as exc:  # a truncated or foreign file: say which
        raise InputError(f"resume: {str(checkpoint)!r} is not a readable checkpoint ({exc})") from None
    if saved is None:
        return  # written before fingerprints existed: nothing to compare
    now = fingerprint(config)
    differ = [k for k in now if k in saved and saved[k] != now[k] and k not in config.changes_allowed()]
    if differ:
        pairs = ", ".join(f"{k} = {saved[k]!r} -> {now[k]!r}" for k in differ)
        allowed = [k for k in differ if k in RESUMABLE_CHANGES]
        hint = f" (or --allow-change {','.join(allowed)})" if allowed == differ else ""
        raise InputError(
            f"resume: the settings differ from the checkpoint's: {pairs} (expected the same settings{hint})"
        )


def run(
    config: RunConfig, progress: Callable[[int, int, float | None], None] | None = None
) -> dict[str, Any]:
    """Run one simulation; returns the summary (also written to ``summary.json``)."""
    if config.backend == "distributed":
        from sim.distributed import run_distributed

        return run_distributed(config)
    config.validate()
    if config.threads:
        torch.set_num_threads(config.threads)
    s = prepare(config)
    return run_loop(config, s, build_trainer(config, s), Single(), progress)


def automatic_threads() -> int:
    """Torch threads for a fresh process on a possibly shared machine (``dfl-sim run`` without --threads).

    The cores this process may use (``os.sched_getaffinity``) less the 1-minute load average, at
    least 1: on a busy machine torch's default (every core) makes each step wait for the slowest
    core. ``OMP_NUM_THREADS``, when set, wins. Called at start-up, before this process adds load.
    """
    if "OMP_NUM_THREADS" in os.environ:
        return torch.get_num_threads()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(1, min(cores, round(cores - busy)))


def build_trainer(config: RunConfig, s: Setup) -> Trainer:
    """The single-process trainer of a prepared run: X = x0 on every node, the run's gossip and sampler."""
    if config.nodes > SPARSE_GOSSIP_FROM_NODES and not s.uses_J:
        C = sparse_mixing(s.C, device=s.device)
    else:
        C = torch.as_tensor(s.C, dtype=torch.float32, device=s.device)
    gossip = ChocoGossip(C, config.gamma, s.compressor) if config.algorithm == "cdfl" else ExactGossip(C)
    gen = torch.Generator(device=s.device).manual_seed(config.seed + 2)
    return Trainer(
        s.stack,
        s.x0.repeat(config.nodes, 1),
        step_kinds(config.algorithm, s.tau1, s.tau2, config.steps),
        _learning_rate(config),
        gossip,
        BatchSampler(s.parts, config.batch_size, config.seed, s.device),
        s.data.x_train.to(s.device),
        s.data.y_train.to(s.device),
        tau=s.tau1 + s.tau2,
        gen=gen,
    )


class Single:
    """The collective operations of a one-process run (identities)."""

    is_main = True

    def full(self, rows: torch.Tensor) -> torch.Tensor:
        """The full N x d matrix from this process's rows."""
        return rows

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is true on any process."""
        return flag

    def restore_rows(self, full: torch.Tensor) -> torch.Tensor:
        """This process's rows of a full N x d matrix."""
        return full

    def extra_summary(self) -> dict[str, Any]:
        return {}


def run_loop(
    config: RunConfig,
    s: Setup,
    trainer: Trainer,
    comm: Any,
    progress: Callable[[int, int, float | None], None] | None = None,
) -> dict[str, Any]:
    """The step loop: logging, checkpoints, divergence checks (files written by the main process)."""
    gossip, gen = trainer.gossip, trainer.gen
    evaluate = _Evaluator(s.stack, s.data, config.eval_samples, config.seed, s.device)
    counters = {"bits": 0.0, "model_time": 0.0, "wall_time": 0.0}
    checkpoint, metrics = s.out / "checkpoint.pt", s.out / "metrics.csv"
    if config.resume:  # prepare_out has checked that the checkpoint exists and matches
        state = torch.load(checkpoint, weights_only=False)
        trainer.X, trainer.t, counters = (
            comm.restore_rows(state["X"].to(s.device)),
            state["t"],
            state["counters"],
        )
        trainer.sampler.restore(state["sampler"])
        gen.set_state(state["gen"])
        gossip.restore({k: v.to(s.device) for k, v in state["gossip"].items()})
        if comm.is_main:
            _rewrite_rows(metrics, _rows_up_to(metrics, trainer.t))
    elif comm.is_main:
        _rewrite_rows(metrics, [])
    if comm.is_main:
        resolved = {
            "tau1": s.tau1,
            "tau2": s.tau2,
            "d": s.stack.d,
            "bits_per_gossip": s.bits_per_gossip,
            "t_comm": s.t_comm,
            "mixing_matrix": s.C.tolist() if config.nodes <= 100 else "omitted (N > 100)",
        }
        _atomic_write(
            s.out / "config.json",
            lambda p: p.write_text(json.dumps({**asdict(config), "resolved": resolved}, indent=1)),
        )
    message, start = "", time.perf_counter() - counters["wall_time"]
    fh = metrics.open("a", newline="") if comm.is_main else None
    writer = csv.DictWriter(fh, fieldnames=COLUMNS) if fh else None

    def log(losses: torch.Tensor | None, phase: str) -> None:
        X = comm.full(trainer.X)
        batch = comm.full(losses) if losses is not None else None
        if comm.is_main:
            _log(
                writer,
                fh,
                trainer.t,
                trainer.tau,
                trainer.learning_rate(),
                X,
                evaluate,
                counters,
                batch,
                phase,
                start,
            )

    last_save = [time.perf_counter()]

    def save() -> None:
        X, hat = comm.full(trainer.X), {k: comm.full(v) for k, v in gossip.state().items()}
        if comm.is_main:
            _save_checkpoint(
                checkpoint, X, trainer.t, trainer.sampler, gen, hat, counters, fingerprint(config)
            )
        last_save[0] = time.perf_counter()

    first_loss: list[float] = []
    try:
        if trainer.t == 0:
            log(None, "init")
        while trainer.t < config.steps:
            kind, losses = trainer.step()
            counters["model_time"] += (config.t_comp if kind in (LOCAL, BOTH) else 0.0) + (
                s.t_comm if kind in (GOSSIP, BOTH) else 0.0
            )
            counters["bits"] += s.bits_per_gossip if kind in (GOSSIP, BOTH) else 0.0
            if losses is not None and not first_loss:
                first_loss.append(float(losses.mean()))
            reason = _divergence(trainer.X, losses, first_loss, trainer.t, config.eta)
            if comm.any(bool(reason)):  # every process stops together
                message = (
                    reason or f"diverged at step {trainer.t} on another process (expected a smaller eta)"
                )
            if message or trainer.t % config.log_every == 0 or trainer.t == config.steps:
                log(losses, PHASES[kind])
            if message:
                break
            due = time.perf_counter() - last_save[0] >= config.checkpoint_seconds
            if trainer.t % config.checkpoint_every == 0 or comm.any(due):
                counters["wall_time"] = time.perf_counter() - start
                save()
            if progress:
                progress(trainer.t, config.steps, float(losses.mean()) if losses is not None else None)
        counters["wall_time"] = time.perf_counter() - start
        if not message:
            save()
        X = comm.full(trainer.X)
        extra = comm.extra_summary()  # a collective: every process takes part
    finally:
        if fh:
            fh.close()
    if not comm.is_main:
        return {}
    u = X.mean(0)
    final_loss, _ = s.stack.evaluate(u, evaluate.x_tr, evaluate.y_tr)
    _, final_acc = s.stack.evaluate(u, s.data.x_test.to(s.device), s.data.y_test.to(s.device))
    summary = {
        "final_train_loss": final_loss,
        "final_test_accuracy": final_acc,
        "final_consensus": float(((X - u) ** 2).sum() / config.nodes),
        "steps": trainer.t,
        "wall_seconds": counters["wall_time"],
        "out_dir": str(s.out),
        "diverged": bool(message),
        "message": message,
        "d": s.stack.d,
        "bits_per_node": counters["bits"],
        "model_time": counters["model_time"],
        **extra,
    }
    if config.save_params:
        params = s.stack.unflatten(X.cpu())
        _atomic_write(
            s.out / "params.npz",
            lambda p: np.savez(p.open("wb"), **{k: v.numpy() for k, v in params.items()}),
        )
    _atomic_write(s.out / "summary.json", lambda p: p.write_text(json.dumps(jsonable(summary), indent=1)))
    return summary


DIVERGENCE_FACTOR = 1e3  # a mini-batch loss this many times the first one counts as divergence


def _divergence(X: torch.Tensor, losses: torch.Tensor | None, first: list[float], t: int, eta: float) -> str:
    """Why the run diverged at step t, or '' (NaN/inf parameters or loss, or a loss grown 1000-fold)."""
    if not bool(torch.isfinite(X).all()) or (losses is not None and not bool(torch.isfinite(losses).all())):
        return (
            f"diverged at step {t}: the parameters or the loss became NaN or inf (expected a smaller eta "
            f"than {eta})"
        )
    now = float(losses.mean()) if losses is not None else 0.0
    if first and now > DIVERGENCE_FACTOR * max(first[0], 1e-3):
        return (
            f"diverged at step {t}: the mini-batch loss grew from {first[0]:.4g} to {now:.4g} (more than "
            f"{DIVERGENCE_FACTOR:g} times; expected a smaller eta than {eta})"
        )
    return ""


def _rows_up_to(path: Path, t: int) -> list[dict[str, str]]:
    """The complete metrics rows of steps <= t (a row cut short by a kill is dropped)."""
    if not path.is_file():
        return []
    rows = []
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            if None in row or any(row.get(c) is None for c in COLUMNS):
                continue  # a partial line
            try:
                step = int(row["step"])
            except ValueError:
                continue
            if step <= t and (not rows or step > int(rows[-1]["step"])):
                rows.append(row)
    return rows


def _rewrite_rows(path: Path, rows: list[dict[str, str]]) -> None:
    def write(tmp: Path) -> None:
        with tmp.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)

    _atomic_write(path, write)


def _save_checkpoint(
    path: Path,
    X: torch.Tensor,
    t: int,
    sampler: BatchSampler,
    gen: torch.Generator,
    hat: dict[str, torch.Tensor],
    counters: dict,
    config: dict[str, Any],
) -> None:
    state = {
        "config": config,
        "X": X.cpu(),
        "t": t,
        "sampler": sampler.state(),
        "gen": gen.get_state(),
        "gossip": {k: v.cpu() for k, v in hat.items()},
        "counters": dict(counters),
    }
    _atomic_write(path, lambda p: torch.save(state, p))


def _log(
    writer,
    fh,
    step: int,
    tau: int,
    lr: float,
    X: torch.Tensor,
    evaluate: _Evaluator,
    counters: dict,
    losses: torch.Tensor | None,
    phase: str,
    start: float,
) -> None:
    row = {
        "step": step,
        "round": step // tau,
        "phase": phase,
        "lr": lr,
        "batch_loss": float(losses.mean()) if losses is not None else "",
        **evaluate(X),
        "bits": counters["bits"],
        "model_time": counters["model_time"],
        "wall_time": time.perf_counter() - start,
    }
    writer.writerow(row)
    fh.flush()
