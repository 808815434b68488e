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
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch

from bounds.graph.mixing import as_dense
from bounds.serialize import jsonable
from sim.algorithms import (
    BOTH,
    GOSSIP,
    LOCAL,
)
from sim.config import RunConfig, fingerprint
from sim.engine import Sampler
from sim.errors import RunInterrupted, SimulationError
from sim.evaluation import Evaluator, consensus_distance, defined_accuracy
from sim.gossip import ChocoGossip, ExactGossip
from sim.interrupt import interrupt_requested
from sim.run_folder import COLUMNS, atomic_write, run_record
from sim.setup import Setup, process_streams
from sim.trainer import Trainer

__all__ = [
    "COLUMNS", "DIVERGENCE_FACTOR", "PHASES", "Comm", "Health", "RunRecorder", "RunState", "Single",
    "finite_rows", "health", "health_of_runs", "run_loop",
]  # fmt: skip

PHASES = {LOCAL: "local", GOSSIP: "gossip", BOTH: "both"}


class Comm(Protocol):
    """What the step loop needs from the processes of a run (one process: :class:`Single`)."""

    is_main: bool
    rank: int
    world: int

    def full(self, rows: torch.Tensor) -> torch.Tensor | None:
        """The full N x d matrix from this process's rows (on the main process; None on the others)."""
        ...

    def gather(self, value: torch.Tensor) -> list[torch.Tensor] | None:
        """Every process's ``value`` (the same shape on all), in rank order, on the main process."""
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

    def run_counters(self) -> dict[str, float]:
        """Backend-specific counters of the whole run so far, kept in the checkpoint (a collective)."""
        ...

    def restore_counters(self, counters: dict[str, float]) -> None:
        """Continue the backend's counters from a checkpoint's (what :meth:`run_counters` saved)."""
        ...


class RunState(Protocol):
    """What a run's recorder reads and, on resume, restores: a :class:`~sim.trainer.Trainer`, or one
    lane of a sweep (:class:`sim.sweep.Lane`)."""

    X: torch.Tensor
    t: int

    @property
    def tau(self) -> int: ...
    @property
    def sampler(self) -> Sampler: ...
    @property
    def gen(self) -> torch.Generator | None: ...
    @property
    def gossip(self) -> ExactGossip | ChocoGossip: ...

    def learning_rate(self, t: int | None = None) -> float: ...


class Single:
    """The collective operations of a one-process run (identities)."""

    is_main = True
    rank = 0
    world = 1

    def full(self, rows: torch.Tensor) -> torch.Tensor:
        """The full N x d matrix from this process's rows."""
        return rows

    def gather(self, value: torch.Tensor) -> list[torch.Tensor]:
        """This process's ``value``, the only one."""
        return [value]

    def any(self, *flags: bool) -> tuple[bool, ...]:
        """For each flag, whether it is true on any process (here: this one)."""
        return flags

    def restore_rows(self, full: torch.Tensor) -> torch.Tensor:
        """This process's rows of a full N x d matrix."""
        return full

    def extra_summary(self) -> dict[str, Any]:
        return {}

    def run_counters(self) -> dict[str, float]:
        return {}

    def restore_counters(self, counters: dict[str, float]) -> None:
        """Nothing to continue: one process counts nothing of its own."""


class RunRecorder:
    """One run's files, counters and stopping rule, fed one step at a time (by :func:`run_loop` for a
    single run, by :func:`sim.sweep.run_sweep` for each run of a sweep: the same files either way).

    Per step: :meth:`record` (counters, divergence, whether a metrics row is due), then
    :meth:`finish_step` with the row's metrics (computed by the caller, batched across runs in a sweep,
    on the main process), which writes the row and the checkpoint when due. :meth:`finish` writes the
    summary. The collectives (``comm``) are called the same number of times on every process.
    """

    def __init__(self, config: RunConfig, s: Setup, state: RunState, comm: Comm) -> None:
        self.config, self.s, self.state, self.comm = config, s, state, comm
        self.evaluator = Evaluator(s.stack, s.data, config.eval_samples, config.seed, s.device)
        self.counters: dict[str, float] = {"bits": 0.0, "model_time": 0.0, "wall_time": 0.0}
        self.checkpoint, self.metrics = s.out / "checkpoint.pt", s.out / "metrics.csv"
        self.message = ""
        self._fh: Any = None
        self._writer: csv.DictWriter | None = None
        self._pending: tuple[str, torch.Tensor | None] | None = None
        self._due = False  # a checkpoint is due by checkpoint_seconds
        self.interrupt = False  # a Ctrl-C / SIGTERM on any process of the run, agreed at the last step
        self.last_loss: float | None = None  # the mean mini-batch loss of the last local step
        self._start = self._last_save = time.perf_counter()

    @property
    def finished(self) -> bool:
        """The run has taken all its steps or stopped (diverged)."""
        return bool(self.message) or self.state.t >= self.config.steps

    def start(self) -> bool:
        """Restore a checkpoint (``resume``), write config.json, open metrics.csv.

        Returns whether the initial metrics row is due (a fresh run); then call :meth:`finish_step`.
        """
        config, s, state, comm = self.config, self.s, self.state, self.comm
        changes: list[dict[str, Any]] = []
        if config.resume:  # prepare_out has checked that the checkpoint exists and matches
            saved = torch.load(self.checkpoint, weights_only=False)
            changes = _changes(s.out, saved.get("config") or {}, config, saved["t"])
            state.X, state.t = comm.restore_rows(saved["X"].to(s.device)), saved["t"]
            self.counters = saved["counters"]
            comm.restore_counters(self.counters)
            state.sampler.restore(saved["sampler"])
            if state.gen is not None and saved["gen"] is not None:  # this process's own stream
                streams = process_streams(saved["gen"])
                if comm.rank < len(streams):  # (check_resumable refused a random compressor's mismatch)
                    state.gen.set_state(streams[comm.rank])
            state.gossip.restore({k: v.to(s.device) for k, v in saved["gossip"].items()})
            if comm.is_main and state.t >= config.steps:
                print(f"dfl-sim: note: resume: the run in {s.out} had already taken its {config.steps} steps "
                      "(nothing to continue; --steps larger continues it): its summary is written again",
                      file=sys.stderr)  # fmt: skip
            if comm.is_main:
                rows = _rows_up_to(self.metrics, state.t)
                logged_config = saved.get("config") or {}
                every, since = _logging_interval(s.out, logged_config, changes, state.t, config.log_every)
                if rows and config.steps > state.t and int(rows[-1]["step"]) == state.t and state.t % every:
                    rows = rows[:-1]  # the old end's row, off the log_every steps: a run of the new --steps
                    # has none there (a resumed run's metrics.csv kept it, a probe)
                _rewrite_rows(self.metrics, rows)
                lost = _lost_rows(rows, state.t, every, since)
                if lost:  # rows removed from metrics.csv after they were written: say so, go on
                    after = f" from step {since}, where log_every changed," if since else ""
                    print(f"dfl-sim: warning: resume: {self.metrics} has no rows for {lost} (expected a row "
                          f"every {every} steps{after} up to the checkpoint's step {state.t}; removed or cut "
                          "since): the run continues without them", file=sys.stderr)  # fmt: skip
        elif comm.is_main:
            _rewrite_rows(self.metrics, [])
        if comm.is_main:
            resolved = {
                "tau1": s.tau1,
                "tau2": s.tau2,
                "d": s.stack.d,
                "bits_per_gossip": s.bits_per_gossip,
                "t_comm": s.cost.t_comm,
                "mixing_matrix": as_dense(s.C).tolist() if config.nodes <= 100 else "omitted (N > 100)",
                # eval_samples is capped by each set's size (1e9 asked, the test set's 10,000 used)
                "eval_samples_used": {"train": len(self.evaluator.y_tr), "test": len(self.evaluator.y_te)},
            }
            record = {**asdict(config), "resolved": resolved} | ({"changes": changes} if changes else {})
            atomic_write(s.out / "config.json", lambda p: p.write_text(json.dumps(record, indent=1)))
            self._fh = self.metrics.open("a", newline="")
            self._writer = csv.DictWriter(self._fh, fieldnames=COLUMNS)
        self._start = time.perf_counter() - self.counters["wall_time"]
        self._last_save = time.perf_counter()
        if state.t == 0:
            self._pending = ("init", None)
        return self._pending is not None

    def record(self, kind: int, losses: torch.Tensor | None, probe: Health | None = None) -> bool:
        """Account for the step just taken; returns whether a metrics row is due (then pass its metrics
        to :meth:`finish_step`; pass None otherwise).

        ``probe``: the step's :func:`health` when the caller computed it (a sweep reads every run's in
        one device sync); computed here otherwise."""
        config, state = self.config, self.state
        counters = self.counters
        counters["model_time"] += self.s.cost.step_seconds(kind in (LOCAL, BOTH), kind in (GOSSIP, BOTH))
        counters["bits"] += self.s.bits_per_gossip if kind in (GOSSIP, BOTH) else 0.0
        loss, finite = probe if probe is not None else health(state.X, losses)
        if loss is not None and "first_loss" not in counters:  # kept in the checkpoint for resume
            counters["first_loss"] = loss
        reason = _divergence(finite, loss, counters.get("first_loss"), state.t, _smaller_step(config))
        due = time.perf_counter() - self._last_save >= config.checkpoint_seconds
        # one collective a step: all processes act together, a Ctrl-C that one of them received included
        stop, self._due, self.interrupt = self.comm.any(bool(reason), due, interrupt_requested())
        if stop:
            elsewhere = f"diverged at step {state.t} on another process ({_smaller_step(config)})"
            self.message = reason or elsewhere
        self.last_loss = loss
        if self.message or state.t % config.log_every == 0 or state.t == config.steps:
            self._pending = (PHASES[kind], losses)
        return self._pending is not None

    def full_X(self) -> torch.Tensor | None:
        """The run's full N x d matrix (a collective; on the main process, None on the others)."""
        return self.comm.full(self.state.X)

    def finish_step(self, metrics: dict[str, float] | None) -> None:
        """Write the due metrics row (``metrics``: :meth:`Evaluator.metrics` of :meth:`full_X`, on the
        main process) and the checkpoint when due."""
        if self._pending is not None:
            phase, losses = self._pending
            batch = self.comm.full(losses) if losses is not None else None
            if self.comm.is_main:
                assert metrics is not None and self._writer is not None
                self._write_row(phase, batch, metrics)
            self._pending = None
        t = self.state.t
        if t == 0 or self.message or t >= self.config.steps:
            return  # the final checkpoint is written by finish()
        if t % self.config.checkpoint_every == 0 or self._due:
            self.counters["wall_time"] = time.perf_counter() - self._start
            self._save()

    def finish(self) -> dict[str, Any]:
        """The final checkpoint (unless diverged), the summary, params.npz; closes metrics.csv."""
        config, s, comm = self.config, self.s, self.comm
        try:
            self.counters["wall_time"] = time.perf_counter() - self._start
            if not self.message:
                self._save()
            X = comm.full(self.state.X)
            extra = comm.extra_summary()  # a collective: every process takes part
        finally:
            self.close()
        if X is None:  # not the main process
            return {}
        u = X.mean(0)
        final_loss, _ = s.stack.evaluate(u, self.evaluator.x_tr, self.evaluator.y_tr)
        test_loss, test_acc = s.stack.evaluate(u, s.data.x_test.to(s.device), s.data.y_test.to(s.device))
        final_acc = defined_accuracy(test_loss, test_acc)
        summary = {
            "final_train_loss": final_loss,
            "final_test_accuracy": final_acc,
            "final_consensus": consensus_distance(X),
            "steps": self.state.t,
            "wall_seconds": self.counters["wall_time"],
            "out_dir": str(s.out),
            "diverged": bool(self.message),
            "message": self.message,
            "d": s.stack.d,
            "bits_per_node": self.counters["bits"],
            "model_time": self.counters["model_time"],
            **s.digests,  # which C and data it ran on: a sweep's --resume reuses it only on the same
            **extra,
        }
        if config.save_params:
            arrays: dict[str, Any] = {k: v.numpy() for k, v in s.stack.unflatten(X.cpu()).items()}

            def write_params(path: Path) -> None:  # (a path's savez would add .npz to the temporary name)
                with path.open("wb") as fh:
                    np.savez(fh, **arrays)

            atomic_write(s.out / "params.npz", write_params)
        atomic_write(s.out / "summary.json", lambda p: p.write_text(json.dumps(jsonable(summary), indent=1)))
        return summary

    def interrupted(self) -> RunInterrupted:
        """The checkpoint of a run stopped by Ctrl-C after its step t (:mod:`sim.interrupt`; none at t = 0,
        where there is nothing to keep), and the error that says where it is."""
        t = self.state.t
        if t > 0 and not self.message:
            self.counters["wall_time"] = time.perf_counter() - self._start
            self._save()
        where = f"the checkpoint is in {self.s.out}" if t > 0 else "nothing to keep yet"
        return RunInterrupted(f"interrupted at step {t} of {self.config.steps}; {where}", kept=t > 0)

    def close(self) -> None:
        """Close metrics.csv (idempotent; after an error the rows written so far stay)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = self._writer = None

    def _write_row(self, phase: str, losses: torch.Tensor | None, metrics: dict[str, float]) -> None:
        """The row of step t = state.t: its round and learning rate are those of the step just taken (0-based
        t - 1; the first step's in the initial row). They were the next step's: a round's last row showed the
        next round, and D-SGD's rows with a decaying eta every other time a rate their step had not used."""
        state = self.state
        taken = max(state.t - 1, 0)
        row = {
            "step": state.t,
            "round": taken // state.tau,
            "phase": phase,
            "lr": state.learning_rate(taken),
            "batch_loss": float(losses.mean()) if losses is not None else "",
            **metrics,
            "bits": self.counters["bits"],
            "model_time": self.counters["model_time"],
            "wall_time": time.perf_counter() - self._start,
        }
        assert self._writer is not None and self._fh is not None
        try:
            self._writer.writerow(row)
            self._fh.flush()
        except OSError as exc:  # a full disk said only 'No space left on device', naming no file
            kept = "the rows before it and the last checkpoint are kept: free space, then --resume"
            why = f"{exc.strerror} (writing its step {state.t} row; {kept})"
            raise OSError(exc.errno, why, str(self.metrics)) from None

    def _save(self) -> None:
        state = self.state
        self.counters |= self.comm.run_counters()  # a collective, as full below: every process takes part
        X = self.comm.full(state.X)
        hat = {k: self.comm.full(v) for k, v in state.gossip.state().items()}
        gens = self.comm.gather(state.gen.get_state()) if state.gen is not None else None  # one per process
        if self.comm.is_main:
            assert X is not None  # (the main process has every full matrix)
            hat_full = {k: v for k, v in hat.items() if v is not None}
            saved = fingerprint(self.config) | {"steps": self.config.steps}
            try:
                _save_checkpoint(self.checkpoint, X, state.t, state.sampler, gens, hat_full, self.counters,
                                 saved, self.s.digests)  # fmt: skip
            except (OSError, RuntimeError) as exc:  # torch.save reports a full disk as a RuntimeError
                why = _save_failure(exc)
                kept = (
                    "the previous checkpoint is kept: the same command with --resume continues from it once "
                    "the cause is mended"
                    if self.checkpoint.is_file()
                    else "no earlier checkpoint to continue from"  # (a folder named checkpoint.pt, say)
                )
                raise SimulationError(
                    f"cannot write the checkpoint {self.checkpoint} at step {state.t} ({why}); {kept}"
                ) from None
        self._last_save = time.perf_counter()


FULL_DISK_WORDS = ("unexpected pos", "file write failed")
"""What torch.save's RuntimeError says where its writes stopped short, as on a full disk, naming no cause."""


def _save_failure(exc: OSError | RuntimeError) -> str:
    """Why a checkpoint could not be written, in a few words. torch.save reports a full disk as a
    RuntimeError that names no cause ('unexpected pos 1600 vs 1494'): a full disk is then guessed; where its
    message names the system's error ('... failed with strerror: Permission denied') that is the cause (it was
    blamed on a full disk too, a probe)."""
    if isinstance(exc, OSError):  # its strerror is the cause (a full disk's: 'No space left on device')
        return exc.strerror or str(exc)
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    named = re.search(r"strerror: (.+)$", first)
    if named:
        return named.group(1).strip()
    full = any(words in first for words in FULL_DISK_WORDS)  # any other in its own words, not blamed on
    return f"{first}; no space left on the device?" if full else first  # the disk ('Parent directory ...')


def run_loop(
    config: RunConfig,
    s: Setup,
    trainer: Trainer,
    comm: Comm,
    progress: Callable[[int, int, float | None], None] | None = None,
) -> dict[str, Any]:
    """The step loop of one run: logging, checkpoints, divergence checks (files written by the main
    process)."""
    recorder = RunRecorder(config, s, trainer, comm)
    try:
        if recorder.start():
            _finish_with_metrics(recorder)
        while not recorder.finished:
            kind, losses = trainer.step()
            if recorder.record(kind, losses):
                _finish_with_metrics(recorder)
            else:
                recorder.finish_step(None)
            if progress:
                progress(trainer.t, config.steps, recorder.last_loss)
            # one process stops as soon as asked; several at the step all of them agreed on (in record)
            asked = interrupt_requested() if recorder.comm.world == 1 else recorder.interrupt
            if asked and not recorder.finished:
                raise recorder.interrupted()
        return recorder.finish()
    finally:
        recorder.close()


def _finish_with_metrics(recorder: RunRecorder) -> None:
    X = recorder.full_X()
    recorder.finish_step(None if X is None else recorder.evaluator.metrics(X))  # (X: on the main process)


DIVERGENCE_FACTOR = 1e3  # a mini-batch loss this many times the first one counts as divergence


class Health(NamedTuple):
    """What the divergence check reads after a step: the mean mini-batch loss (None after a gossip-only
    step) and whether the parameters and the losses are all finite."""

    loss: float | None
    finite: bool


def health_of_runs(
    finite_rows: torch.Tensor,
    nodes: Sequence[int],
    losses: Sequence[torch.Tensor | None],
    owner: torch.Tensor,
    loss_owner: torch.Tensor,
) -> list[Health]:
    """Each run's :class:`Health` after a step, read back with one device sync.

    ``finite_rows``: :func:`finite_rows` of the runs' rows (run r owns the next ``nodes[r]``
    rows); ``losses[r]``: run r's mini-batch losses (``nodes[r]``,) or None; ``owner``: each row's run r
    (a device tensor), ``loss_owner`` the same for the concatenated losses of the runs that have them.
    The mean loss is summed in float64; R runs cost a few kernels, not a few per run."""
    bad = torch.zeros(len(nodes), dtype=torch.float64, device=finite_rows.device)
    bad.index_add_(0, owner, (~finite_rows).double())
    total = torch.zeros_like(bad)
    has = [loss is not None for loss in losses]
    if any(has):
        L = torch.cat([loss for loss in losses if loss is not None]).double()
        total.index_add_(0, loss_owner, L)
        bad.index_add_(0, loss_owner, (~torch.isfinite(L)).double())
    sums, bads = torch.stack([total, bad]).tolist()
    return [Health(sums[r] / n if has[r] else None, bads[r] == 0) for r, n in enumerate(nodes)]


def finite_rows(X: torch.Tensor) -> torch.Tensor:
    """``torch.isfinite(X).all(dim=1)``, exactly, from each row's largest and smallest entry (``amax`` and
    ``amin`` propagate NaN; +inf is a largest entry, -inf a smallest): two reductions that read X, where
    ``isfinite`` first writes a boolean matrix of X's size. On 2 cores (2026-11-27, ms per call): 320 x
    7,850 4.7 against 0.19; 10,000 x 7,850 286 against 21 (the check runs after every step)."""
    return torch.isfinite(X.amax(dim=1)) & torch.isfinite(X.amin(dim=1))


def health(X: torch.Tensor, losses: torch.Tensor | None) -> Health:
    """The step's :class:`Health` (one run, the rows of X), read back with one device sync."""
    owner = torch.zeros(X.shape[0], dtype=torch.long, device=X.device)  # made on the device: no copy
    return health_of_runs(finite_rows(X), [X.shape[0]], [losses], owner, owner)[0]


def _smaller_step(config: RunConfig) -> str:
    """What a diverged run should change: eta, or under the C-DFL schedule (where eta is not used) its first
    step 4 / (mu a), through mu or a."""
    if config.lr_schedule == "cdfl":
        assert config.mu is not None and config.a is not None  # (RunConfig checked: both > 0)
        first = 4 / (float(config.mu) * float(config.a))
        return f"expected a smaller first step 4 / (mu a) = {first:.4g}: a larger --mu or --a"
    return f"expected a smaller eta than {config.eta}"


def _divergence(finite: bool, now: float | None, first: float | None, t: int, remedy: str) -> str:
    """Why the run diverged at step t, or '' (NaN/inf parameters or loss, or a mean loss ``now`` grown
    1000-fold over the ``first``); ``remedy`` (:func:`_smaller_step`) ends the message."""
    if not finite:
        return f"diverged at step {t}: the parameters or the loss became NaN or inf ({remedy})"
    if now is not None and first is not None and now > DIVERGENCE_FACTOR * max(first, 1e-3):
        return (
            f"diverged at step {t}: the mini-batch loss grew from {first:.4g} to {now:.4g} (more than "
            f"{DIVERGENCE_FACTOR:g} times; {remedy})"
        )
    return ""


def _changes(folder: Path, saved: dict[str, Any], config: RunConfig, t: int) -> list[dict[str, Any]]:
    """The --allow-change history of a run resumed at step t: the changes its config.json records before
    step t (a later one was made by a resume that never reached a checkpoint: killed, or diverged), and
    each field now differing from the checkpoint's (``{field, from, to, step}``), so that config.json says
    the run did not use one value throughout."""
    try:
        earlier = [c for c in run_record(folder).get("changes", []) if c["step"] < t]
    except (TypeError, KeyError):  # a hand-edited record
        earlier = []
    now = asdict(config)
    new = [{"field": k, "from": saved[k], "to": now[k], "step": t}
           for k in config.changes_allowed() if k in saved and saved[k] != now[k]]  # fmt: skip
    return [*earlier, *new]


def _logging_interval(
    folder: Path, saved: dict[str, Any], changes: list[dict[str, Any]], t: int, default: int
) -> tuple[int, int]:
    """The ``log_every`` of the rows up to a checkpoint at step t (``saved``: its config), and the step from
    which it held (0, or the last ``--allow-change log_every`` before t). A checkpoint written before
    log_every was one of its settings has it in the run's config.json; ``default`` where neither has."""
    every = saved.get("log_every", run_record(folder).get("log_every", default))
    since = max((c["step"] for c in changes if c.get("field") == "log_every" and c["step"] < t), default=0)
    return int(every), since


def _rows_up_to(path: Path, t: int) -> list[dict[str, str]]:
    """The complete metrics rows of steps <= t (a row cut short by a kill is dropped)."""
    if not path.is_file():
        return []
    rows: list[dict[str, str]] = []
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


def _lost_rows(rows: list[dict[str, str]], t: int, log_every: int, since: int = 0, shown: int = 5) -> str:
    """The logged steps <= t missing from ``rows`` ('' if none), as ranges of consecutive logged steps: the
    rows a resume cannot write again, after the last row or in the middle of the file. The logged steps are
    0 and the multiples of ``log_every``; ``since``: the step at which ``log_every`` last changed (the
    rows before it were logged at another interval and are not checked)."""
    logged = {int(row["step"]) for row in rows}
    first = (since // log_every + 1) * log_every
    expected = ([0] if since == 0 else []) + list(range(first, t + 1, log_every))
    groups: list[list[int]] = []  # runs of consecutive logged steps that are missing
    previous_missing = False
    for step in expected:
        missing = step not in logged
        if missing and previous_missing:
            groups[-1].append(step)
        elif missing:
            groups.append([step])
        previous_missing = missing
    if not groups:
        return ""
    text = [str(g[0]) if len(g) == 1 else f"{g[0]} to {g[-1]}" for g in groups[:shown]]
    more = f" and {len(groups) - shown} more ranges" if len(groups) > shown else ""
    return ("step " if len(groups) == 1 == len(groups[0]) else "steps ") + ", ".join(text) + more


def _rewrite_rows(path: Path, rows: list[dict[str, str]]) -> None:
    def write(tmp: Path) -> None:
        with tmp.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)

    atomic_write(path, write)


def _owned(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor``, copied when it is a view into a larger storage: torch.save writes a view's whole storage,
    so a sweep's run saved its rows as the whole stacked X of all runs (8 runs: 8x the bytes)."""
    if tensor.untyped_storage().nbytes() > tensor.numel() * tensor.element_size():
        return tensor.clone()
    return tensor


def _save_checkpoint(
    path: Path,
    X: torch.Tensor,
    t: int,
    sampler: Sampler,
    gens: list[torch.Tensor] | None,
    hat: dict[str, torch.Tensor],
    counters: dict,
    config: dict[str, Any],
    digests: dict[str, str] | None = None,
) -> None:
    """``gens``: the state of every process's compressor generator, in rank order (None: no generator);
    ``digests``: the run's :attr:`sim.setup.Setup.digests` (of its mixing matrix and data set)."""
    state = {
        "config": config,
        **{key: value or None for key, value in (digests or {}).items()},
        "X": _owned(X.cpu()),
        "t": t,
        "sampler": sampler.state(),
        "gen": gens,
        "gossip": {k: _owned(v.cpu()) for k, v in hat.items()},
        "counters": dict(counters),
    }
    atomic_write(path, lambda p: torch.save(state, p))
