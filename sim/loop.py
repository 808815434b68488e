"""The step loop of a run: logging, checkpoints, divergence, resume (written by the main process).

Everything is written as the run goes: ``config.json`` (the full resolved config), one
``metrics.csv`` row per logged step (flushed at once), ``checkpoint.pt`` every
``checkpoint_every`` steps and at least every ``checkpoint_seconds`` (to a temporary file, then
renamed), and at the end ``summary.json`` (and ``params.npz`` with ``save_params``). The loop talks
to the other processes of a run only through a :class:`Comm` (:class:`Single` for one process,
``sim.distributed.Comm`` for gloo).
"""

from __future__ import annotations

import csv
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from bounds.serialize import jsonable
from sim.algorithms import (
    BOTH,
    GOSSIP,
    LOCAL,
)
from sim.config import RunConfig, fingerprint
from sim.data import Dataset
from sim.engine import BatchSampler, Stack
from sim.setup import Setup
from sim.trainer import Trainer

__all__ = ["COLUMNS", "DIVERGENCE_FACTOR", "PHASES", "Comm", "Single", "atomic_write", "run_loop"]

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


class Comm(Protocol):
    """What the step loop needs from the processes of a run (one process: :class:`Single`)."""

    is_main: bool

    def full(self, rows: torch.Tensor) -> torch.Tensor:
        """The full N x d matrix from this process's rows (on the main process)."""
        ...

    def any(self, *flags: bool) -> tuple[bool, ...]:
        """For each flag, whether it is true on any process (one collective for all of them)."""
        ...

    def restore_rows(self, full: torch.Tensor) -> torch.Tensor:
        """This process's rows of a full N x d matrix."""
        ...

    def extra_summary(self) -> dict[str, Any]:
        """Backend-specific entries of the summary (a collective)."""
        ...


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    write(tmp)
    os.replace(tmp, path)


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


class Single:
    """The collective operations of a one-process run (identities)."""

    is_main = True

    def full(self, rows: torch.Tensor) -> torch.Tensor:
        """The full N x d matrix from this process's rows."""
        return rows

    def any(self, *flags: bool) -> tuple[bool, ...]:
        """For each flag, whether it is true on any process (here: this one)."""
        return flags

    def restore_rows(self, full: torch.Tensor) -> torch.Tensor:
        """This process's rows of a full N x d matrix."""
        return full

    def extra_summary(self) -> dict[str, Any]:
        return {}


def run_loop(
    config: RunConfig,
    s: Setup,
    trainer: Trainer,
    comm: Comm,
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
            "t_comm": s.cost.t_comm,
            "mixing_matrix": s.C.tolist() if config.nodes <= 100 else "omitted (N > 100)",
        }
        atomic_write(
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
            saved = fingerprint(config) | {"steps": config.steps}
            _save_checkpoint(checkpoint, X, trainer.t, trainer.sampler, gen, hat, counters, saved)
        last_save[0] = time.perf_counter()

    try:
        if trainer.t == 0:
            log(None, "init")
        while trainer.t < config.steps:
            kind, losses = trainer.step()
            counters["model_time"] += s.cost.step_seconds(kind in (LOCAL, BOTH), kind in (GOSSIP, BOTH))
            counters["bits"] += s.bits_per_gossip if kind in (GOSSIP, BOTH) else 0.0
            loss = float(losses.mean()) if losses is not None else None  # once per step: a device sync
            if loss is not None and "first_loss" not in counters:  # kept in the checkpoint for resume
                counters["first_loss"] = loss
            reason = _divergence(trainer.X, losses, loss, counters.get("first_loss"), trainer.t, config.eta)
            due = time.perf_counter() - last_save[0] >= config.checkpoint_seconds
            stop, due = comm.any(bool(reason), due)  # one collective a step: every process acts together
            if stop:
                message = (
                    reason or f"diverged at step {trainer.t} on another process (expected a smaller eta)"
                )
            if message or trainer.t % config.log_every == 0 or trainer.t == config.steps:
                log(losses, PHASES[kind])
            if message:
                break
            if trainer.t % config.checkpoint_every == 0 or due:
                counters["wall_time"] = time.perf_counter() - start
                save()
            if progress:
                progress(trainer.t, config.steps, loss)
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
        atomic_write(
            s.out / "params.npz",
            lambda p: np.savez(p.open("wb"), **{k: v.numpy() for k, v in params.items()}),
        )
    atomic_write(s.out / "summary.json", lambda p: p.write_text(json.dumps(jsonable(summary), indent=1)))
    return summary


DIVERGENCE_FACTOR = 1e3  # a mini-batch loss this many times the first one counts as divergence


def _divergence(
    X: torch.Tensor, losses: torch.Tensor | None, now: float | None, first: float | None, t: int, eta: float
) -> str:
    """Why the run diverged at step t, or '' (NaN/inf parameters or loss, or a mean loss ``now`` grown
    1000-fold over the ``first``)."""
    if not bool(torch.isfinite(X).all()) or (losses is not None and not bool(torch.isfinite(losses).all())):
        return (
            f"diverged at step {t}: the parameters or the loss became NaN or inf (expected a smaller eta "
            f"than {eta})"
        )
    if now is not None and first is not None and now > DIVERGENCE_FACTOR * max(first, 1e-3):
        return (
            f"diverged at step {t}: the mini-batch loss grew from {first:.4g} to {now:.4g} (more than "
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

    atomic_write(path, write)


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
    atomic_write(path, lambda p: torch.save(state, p))


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
