"""The same runs on torch.distributed (gloo): N nodes split across P processes.

``dfl-sim run ... --backend distributed --world-size P`` starts P processes on this machine;
under ``torchrun`` (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) the same command runs one
process per rank, across machines::

    torchrun --nnodes M --nproc-per-node P --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
        -m sim run --backend distributed --world-size $((M * P)) [the usual flags]

Process r owns a contiguous block of nodes and runs them with the vectorised engine. A gossip
step sends each process only the rows its nodes' neighbours need, point to point between the
ranks that share an edge (no all-gather of models). In C-DFL only the compressed messages
travel (top_k / rand_k as int32 indices + float32 values; the other compressors as dense
float32 rows, since we do not bit-pack), every process keeps replicas of its neighbours'
x_hat, and the bytes that really crossed are counted and reported beside the modelled bits.
Mini-batches are drawn from the same global random stream as in one process and sliced, so
DFL and C-DFL with a deterministic compressor give the single-process trajectory (rand_k,
gossip and qsgd draw per process: the same distribution, another sample).

Faults: every collective and point-to-point call has the ``--timeout``; a process that dies
makes the launcher stop the others, and one that hangs makes them fail after the timeout,
never wait forever. The run resumes from its last checkpoint with ``--resume``. A stop (Ctrl-C, or a
SIGTERM to the launcher, which forwards it) is agreed by every rank at one step, whose checkpoint is
written before the processes end (:mod:`sim.interrupt`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime
import hashlib
import json
import logging
import os
import re
import signal
import socket
from dataclasses import asdict
from typing import Any, cast

import numpy as np
import scipy.sparse as sp
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.multiprocessing.spawn import ProcessException

from bounds import InputError
from bounds.graph.mixing import as_matrix
from sim.algorithms import algorithm, step_kinds
from sim.config import RunConfig
from sim.engine import BatchSampler
from sim.errors import RunInterrupted, SimulationError
from sim.faults import install_fault
from sim.gossip import ChocoGossip, ExactGossip, as_mixing, canonical_csr, sparse_mixing
from sim.host import check_threads, torchrun_rank_and_world
from sim.interrupt import checkpoint_on_interrupt, interrupt_requested
from sim.loop import run_loop
from sim.setup import Setup, learning_rate, prepare
from sim.trainer import Trainer

__all__ = ["HaloMixing", "process_threads", "run_distributed"]


def _blocks(nodes: int, world: int) -> list[np.ndarray]:
    return np.array_split(np.arange(nodes), world)


class Comm:
    """Collectives of one rank: gather rows to rank 0, OR of flags, slicing of full matrices."""

    def __init__(self, rank: int, world: int, blocks: list[np.ndarray], mixing: HaloMixing) -> None:
        self.rank, self.world, self.blocks, self.mixing = rank, world, blocks, mixing
        self.is_main = rank == 0

    def full(self, rows: torch.Tensor) -> torch.Tensor | None:
        """Rank 0 gets the full N x ... matrix (blocks padded to equal size for the collective)."""
        width = max(len(b) for b in self.blocks)
        padded = torch.zeros((width, *rows.shape[1:]), dtype=rows.dtype)
        padded[: len(rows)] = rows
        parts = [torch.empty_like(padded) for _ in self.blocks] if self.is_main else None
        dist.gather(padded, parts, dst=0)
        if parts is None:  # not rank 0
            return None
        return torch.cat([p[: len(b)] for p, b in zip(parts, self.blocks, strict=True)])

    def gather(self, value: torch.Tensor) -> list[torch.Tensor] | None:
        """Every rank's ``value`` (the same shape on all), in rank order, on rank 0."""
        parts = [torch.empty_like(value) for _ in range(self.world)] if self.is_main else None
        dist.gather(value, parts, dst=0)
        return parts

    def any(self, *flags: bool) -> tuple[bool, ...]:
        t = torch.tensor([1.0 if flag else 0.0 for flag in flags])
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return tuple(bool(v > 0) for v in t.tolist())

    def restore_rows(self, full: torch.Tensor) -> torch.Tensor:
        return full[torch.as_tensor(self.blocks[self.rank])].clone()

    def extra_summary(self) -> dict[str, Any]:
        counted = self.run_counters()
        sent, exchanges = counted["bytes_on_wire"], counted["gossip_exchanges"]
        return {
            "world_size": self.world,
            "bytes_on_wire": sent,
            "bytes_on_wire_per_gossip_step": sent / max(exchanges, 1),
        }

    def run_counters(self) -> dict[str, float]:
        """The bytes every process sent since the run began (a checkpoint's included: a resumed run reported
        only its own part, and a resume of a finished run rewrote its summary with 0), and the gossip
        exchanges (each process takes part in every one)."""
        sent = torch.tensor([float(self.mixing.bytes_sent)], dtype=torch.float64)
        dist.all_reduce(sent)
        return {"bytes_on_wire": float(sent.item()), "gossip_exchanges": float(self.mixing.exchanges)}

    def restore_counters(self, counters: dict[str, float]) -> None:
        """Continue from a checkpoint's totals: the main process carries the bytes sent before (the sum over
        processes is the run's), every process the exchanges (a checkpoint older than this counter: 0)."""
        self.mixing.bytes_sent = int(counters.get("bytes_on_wire", 0)) if self.is_main else 0
        self.mixing.exchanges = int(counters.get("gossip_exchanges", 0))


class RowSampler:
    """The global mini-batch stream (identical on every rank), sliced to this rank's nodes."""

    def __init__(self, sampler: BatchSampler, own: np.ndarray) -> None:
        self.sampler, self.own = sampler, torch.as_tensor(own)

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        idx, weight = self.sampler.next()
        return idx[self.own], weight[self.own]

    def state(self) -> torch.Tensor:
        return self.sampler.state()

    def restore(self, state: torch.Tensor) -> None:
        self.sampler.restore(state)


class HaloMixing:
    """The mixing operator of one rank (:class:`sim.gossip.Mixing`): ``C_block @ [Y_own; Y_halo]``.

    ``C_block`` is C's rows of this rank's nodes restricted to the columns of its own nodes and of
    its halo (the other ranks' nodes that share an edge with ours). :meth:`exchange` sends each
    neighbouring rank only the rows its nodes need, point to point, and counts the bytes sent.
    """

    def __init__(self, C: np.ndarray | sp.csr_matrix, blocks: list[np.ndarray], rank: int) -> None:
        """``C`` dense, or CSR (a large topology's, :func:`sim.setup.mixing`): then C_block is CSR too and
        no N x N array is made."""
        own = blocks[rank]
        self.own = own
        self.give: dict[int, np.ndarray] = {}  # rank -> local row numbers of ours it needs
        self.need: dict[int, np.ndarray] = {}  # rank -> global ids of its nodes we need
        rows = canonical_csr(C[own]) if sp.issparse(C) else C[own]  # our rows of C
        for q, theirs in enumerate(blocks):
            if q == rank:
                continue
            link = rows[:, theirs] != 0  # dense or CSR: its row and column counts read the same way
            edges_from = np.asarray(link.sum(axis=1)).ravel()
            if edges_from.any():
                self.give[q] = np.flatnonzero(edges_from)
                self.need[q] = theirs[np.asarray(link.sum(axis=0)).ravel() > 0]
        self.halo = np.concatenate(list(self.need.values())) if self.need else own[:0]
        self.halo_size = len(self.halo)
        block = rows[:, np.concatenate([own, self.halo])]
        self.block = as_mixing(
            sparse_mixing(block) if sp.issparse(block) else torch.as_tensor(block, dtype=torch.float32)
        )  # C_block @ Y: dense, or csr_product
        self.bytes_sent = 0
        self.exchanges = 0

    def mix(self, own: torch.Tensor, halo: torch.Tensor) -> torch.Tensor:
        Y = torch.cat([own, halo])
        return self.block.mix(Y, Y[:0])

    def exchange(self, rows: torch.Tensor, nonzeros_per_row: int | None = None) -> torch.Tensor:
        self.exchanges += 1
        d, k = rows.shape[1], nonzeros_per_row
        if k is None:
            got = self._send_receive({q: [rows[g]] for q, g in self.give.items()}, [(d, rows.dtype)])
            return torch.cat([rows[:0], *(got[q][0] for q in self.need)])
        keep = {q: (rows[g] != 0).to(torch.int8).topk(k, dim=1).indices for q, g in self.give.items()}
        out = {q: [keep[q].to(torch.int32), rows[g].gather(1, keep[q])] for q, g in self.give.items()}
        got = self._send_receive(out, [(k, torch.int32), (k, rows.dtype)])
        halo = [
            rows.new_zeros((len(n), d)).scatter_add(1, got[q][0].long(), got[q][1])
            for q, n in self.need.items()
        ]
        return torch.cat([rows[:0], *halo])

    def split(self, full: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return full[torch.as_tensor(self.own)].clone(), full[torch.as_tensor(self.halo)].clone()

    def _send_receive(
        self, outgoing: dict[int, list[torch.Tensor]], columns: list[tuple[int, torch.dtype]]
    ) -> dict[int, list[torch.Tensor]]:
        """Post every send and receive at once; ``columns``: the width and dtype of each tensor per row."""
        requests, incoming = [], {}
        for q in sorted(set(self.give) | set(self.need)):
            for t in outgoing.get(q, []):
                t = t.contiguous()
                self.bytes_sent += t.numel() * t.element_size()
                requests.append(dist.isend(t, dst=q))
            if q in self.need:
                incoming[q] = [torch.empty((len(self.need[q]), w), dtype=dt) for w, dt in columns]
                requests.extend(dist.irecv(t, src=q) for t in incoming[q])
        for r in requests:
            assert r is not None  # (None only for a rank outside the default group)
            r.wait()
        return incoming


def _die_with_parent(parent: int) -> None:
    """On Linux, have the kernel kill this worker when the process that started it dies: a ``dfl-sim`` killed
    with SIGKILL left its workers running, writing its folder beside a later ``--resume``."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the workers end when their gloo peers time out
        return
    if os.getppid() != parent:  # the parent died before the request was made
        os._exit(1)


PR_SET_PDEATHSIG = 1  # prctl(2)


def _worker(rank: int, config: RunConfig, world: int, init: str, parent: int | None = None) -> None:
    """One process of a distributed run. ``parent``: the pid of the ``dfl-sim`` that spawned it (which
    holds the run folder's lock); None under torchrun, where rank 0 takes the lock itself."""
    if parent is not None:
        _die_with_parent(parent)
    threads = process_threads(config, world)
    if threads:
        torch.set_num_threads(threads)
    # every rank stops after the same step, checkpointed; a spawned worker takes only SIGINT (its launcher
    # forwards a stop as SIGINT and kills with SIGTERM), a torchrun rank both
    taken = (signal.SIGINT,) if parent is not None else (signal.SIGINT, signal.SIGTERM)
    if parent is not None:  # before the run and after it (the handler restored on leaving), a stop the
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # launcher forwarded late must not kill a worker
    with checkpoint_on_interrupt(worker=True, signals=taken):
        _run_rank(rank, config, world, init, parent)


def process_threads(config: RunConfig, world: int) -> int | None:
    """The torch threads of each of a distributed run's ``world`` processes: ``--threads`` where given (it was
    ignored in silence: each process took cores / P), else the cores / P, so that the processes share the
    cores instead of oversubscribing them; None (torch's own choice) where OMP_NUM_THREADS is set, as
    torchrun sets it, and no --threads."""
    if config.threads:
        return config.threads
    if "OMP_NUM_THREADS" in os.environ:
        return None
    return max(1, (os.cpu_count() or 1) // world)


def _run_rank(rank: int, config: RunConfig, world: int, init: str, parent: int | None) -> None:
    """The run on one rank of the process group (:func:`_worker`)."""
    try:
        dist.init_process_group(
            "gloo",
            init_method=init,
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=config.timeout),
        )
    except dist.DistError as exc:  # under torchrun: a rank that never started, or another address or port
        raise SimulationError(
            f"rank {rank} could not form the process group of {world} at {_address(init)} within --timeout "
            f"{config.timeout:g} s: {_first_line(exc)} (expected every rank started with the same "
            "--world-size and rendezvous address; a larger --timeout where ranks start far apart)"
        ) from None
    try:
        _check_same_flags(config, world)  # before rank 0 clears (or checks) the run folder
        try:
            prepared: Setup | InputError = prepare(config, main=rank == 0, lock=parent is None)
        except InputError as exc:  # said on every rank (the others waited for this one until --timeout)
            prepared = exc
        s = _check_same_inputs(config, prepared, world)  # a collective: also the barrier that keeps every
        # rank from writing before rank 0 has cleared (or checked) the run folder
        blocks = _blocks(config.nodes, world)
        own = blocks[rank]
        mixing = HaloMixing(as_matrix(s.C), blocks, rank)
        compressed = algorithm(config.algorithm).compressed
        gossip = ChocoGossip(mixing, config.gamma, s.compressor) if compressed else ExactGossip(mixing)
        gen = torch.Generator().manual_seed(config.seed + 2 + 1000 * rank)
        sampler = RowSampler(BatchSampler(s.parts, config.batch_size, config.seed, s.device), own)
        trainer = Trainer(
            s.stack,
            s.x0.repeat(len(own), 1),
            step_kinds(config.algorithm, s.tau1, s.tau2, config.steps),
            learning_rate(config),
            gossip,
            sampler,
            s.data.x_train,
            s.data.y_train,
            tau=s.tau1 + s.tau2,
            gen=gen,
        )
        comm = Comm(rank, world, blocks, mixing)
        install_fault(trainer, rank == world - 1, config.timeout)  # tests only: $DFLKIT_TEST_FAULT
        run_loop(config, s, trainer, comm)
    except RunInterrupted:
        if parent is None:  # under torchrun the rank reports it; a spawned worker ends quietly (the launcher
            raise  # says it, sim.distributed.run_distributed)
    finally:
        dist.destroy_process_group()


HOST_FIELDS = ("out", "data_dir", "dataset", "topology", "init_params", "threads", "timeout", "allow_change")
"""The fields each rank of a torchrun may set for its own host: paths (an npz data set's, an edges: or matrix:
topology's; what they hold is compared by digest), threads, timeout, and allow_change (read by rank 0
only). The rest must be the same on every rank (:func:`_check_same_flags`)."""
HOST_FLAGS = (
    "the paths (--out, --data-dir, --init-params, a data set's or topology's file), --threads, --timeout "
    "and --allow-change"
)
""":data:`HOST_FIELDS` as a user's flags, for the mismatch's message."""


def _check_same_flags(config: RunConfig, world: int) -> None:
    """SimulationError on every rank unless all ranks were started with the same flags but
    :data:`HOST_FIELDS`: ranks started with others (torchrun on two hosts, one command edited) trained the
    nodes of each rank on its own settings, and rank 0 wrote its config.json as the run's, in silence.
    Before the run folder is touched: rank 0 without --resume cleared the checkpoint that the others were
    told to resume from (a review). A collective."""
    _check_same(world, {k: v for k, v in asdict(config).items() if k not in HOST_FIELDS})


def _check_same_inputs(config: RunConfig, s: Setup | InputError, world: int) -> Setup:
    """The rank's Setup once every rank has one and all read the same inputs: data (every value,
    :attr:`sim.data.Dataset.full_digest`), mixing matrix, initial point and, on ``--resume``, checkpoint
    (SimulationError naming the first that differs). A rank whose inputs were refused (``s``: its
    InputError; a data set missing on one host) made the others wait for it until --timeout and then fail
    with gloo's 'Connection reset by peer': InputError naming that rank and its error. A collective."""
    if isinstance(s, InputError):
        mine: dict[str, Any] = {"error": str(s)}
    else:
        mine = {"data digest": s.data.full_digest, "mixing matrix digest": s.mixing_digest,
                "initial point digest": _digest(s.x0.cpu().numpy().tobytes())}  # fmt: skip
        if config.resume:
            path = os.path.join(config.out, "checkpoint.pt")
            mine["checkpoint digest"] = _file_digest(path) or f"none: no file {path}"
    _check_same(world, mine)
    return cast(Setup, s)  # (an InputError here was gathered and raised by _check_same)


def _check_same(world: int, mine: dict[str, Any]) -> None:
    """Gather every rank's ``mine`` and compare each with rank 0's, so that all ranks stop with the same
    message: InputError where a rank says ``error``, else SimulationError naming the first rank and key
    that differ."""
    every: list[dict[str, Any]] = [{} for _ in range(world)]
    dist.all_gather_object(every, mine)
    failed = next((q for q, theirs in enumerate(every) if "error" in theirs), None)
    if failed is not None:
        raise InputError(f"rank {failed} of {world}: {every[failed]['error']}")
    first = every[0]
    for q, theirs in enumerate(every[1:], start=1):
        keys = [*first, *(k for k in theirs if k not in first)]  # (in order: every rank names the same)
        differs = next((k for k in keys if theirs.get(k) != first.get(k)), None)
        if differs is not None:
            raise SimulationError(
                f"rank {q} of {world} runs another experiment than rank 0: {differs} = "
                f"{theirs.get(differs)!r} there, {first.get(differs)!r} on rank 0 (expected every rank "
                "started with the same flags, data and, on --resume, checkpoint, in a folder the hosts "
                f"share; only {HOST_FLAGS} may differ)"
            )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _file_digest(path: str) -> str | None:
    """The digest of the file at ``path``; None where it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()[:16]
    except OSError:
        return None


SOURCE_PREFIX = re.compile(r"\[[^\]\s]*\.(?:cc|cpp|h|hpp):\d+\]\s*")
"""The C++ source place gloo puts before its messages (``[/__w/pytorch/.../unbound_buffer.cc:129] ``)."""


GLOO_SIGN_OFF = re.compile(r"\s*GLHF!.*$")
"""What gloo ends a closed connection's message with ('... before reporting an error. GLHF! 🏖️')."""


def _first_line(exc: BaseException) -> str:
    """The first line of torch's message (the rest is a C++ stack trace, useless to a user), without the
    C++ source place in front of it or gloo's sign-off after it."""
    line = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    return GLOO_SIGN_OFF.sub("", SOURCE_PREFIX.sub("", line))


def _communication_failed(exc: RuntimeError) -> bool:
    """Whether ``exc`` is torch.distributed's (a DistError) or gloo's (a timeout or a closed connection on
    a collective raises a plain RuntimeError naming gloo's source file)."""
    return isinstance(exc, dist.DistError) or "gloo" in str(exc).lower()


def _address(init: str) -> str:
    """The rendezvous address of ``init`` (tcp://HOST:PORT, or env:// read from MASTER_ADDR/PORT)."""
    if init == "env://":
        return f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"
    return init.removeprefix("tcp://")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_distributed(config: RunConfig) -> dict[str, Any]:
    """Run ``config`` on ``config.world_size`` gloo processes; returns rank 0's summary."""
    config.validate()
    check_threads(config.threads)  # (each process's: sim.distributed.process_threads)
    launched = torchrun_rank_and_world()
    if launched:  # launched by torchrun: one rank per process
        rank, world = launched
        _check_torchrun(config, world)
        try:
            _worker(rank, config, world, "env://")
        except RuntimeError as exc:  # a peer died or hung: torch's text ends with a C++ stack trace
            if not _communication_failed(exc):  # (any other error is a defect: its traceback is kept)
                raise
            raise SimulationError(
                f"distributed run failed on rank {rank} of {world}: {_first_line(exc)} ({_next_step(config)})"
            ) from None
        if rank != 0:
            return {}  # only rank 0 reports
    else:
        prepare(config, lock=True)  # every input (data, matrix, folder, resume) checked before any process
        # starts; this process holds the folder's lock while its workers write (sim.runner.run gives it back)
        _launch(config)
    path = os.path.join(config.out, "summary.json")
    if interrupt_requested() and not launched and not os.path.isfile(path):  # (a run that ended first: done)
        raise _where_stopped(config)
    with open(path) as fh:
        return json.load(fh)


def _check_torchrun(config: RunConfig, world: int) -> None:
    """InputError unless torchrun's WORLD_SIZE is the run's --world-size (a run of 4 under 2 processes ran
    on 2 while its config.json said 4) and its rendezvous address is set (torch raised a ValueError
    traceback)."""
    if config.world_size != world:
        raise InputError(
            f"world_size = {config.world_size} but torchrun started WORLD_SIZE = {world} processes (expected "
            f"--world-size {world}: nnodes x nproc-per-node)"
        )
    missing = [name for name in ("MASTER_ADDR", "MASTER_PORT") if not os.environ.get(name)]
    if missing:
        raise InputError(
            f"RANK and WORLD_SIZE are set but {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
            "not (expected a process started by torchrun, which sets the rendezvous address, or neither "
            "RANK nor WORLD_SIZE set to start the processes here)"
        )


def _launch(config: RunConfig) -> None:
    """Spawn the run's ``world_size`` workers and wait for them. A stop this process is asked for (Ctrl-C,
    or a SIGTERM that only it received) is forwarded to the workers as SIGINT, which they take as a request
    (:func:`_worker`); a second Ctrl-C kills them at once. A failed worker makes torch stop the others
    (SIGTERM) and a :class:`~sim.errors.SimulationError`; a stop that also ended workers (a SIGTERM to every
    process, as Slurm or systemd send) a :class:`~sim.errors.RunInterrupted` naming the checkpoint kept."""
    if interrupt_requested():  # asked during prepare: no process has started
        raise RunInterrupted(
            f"interrupted before the processes started; nothing to keep yet in {config.out}", kept=False
        )
    ignored = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the workers start with SIGINT ignored (they
    try:  # inherit it) until their own handler is in place: a Ctrl-C while they import cannot kill them
        context = mp.start_processes(
            _worker,
            args=(config, config.world_size, f"tcp://127.0.0.1:{_free_port()}", os.getpid()),
            nprocs=config.world_size,
            join=False,
            start_method="spawn",
        )
    finally:
        signal.signal(signal.SIGINT, ignored)
    forwarded = False
    spawn_log = logging.getLogger("torch.multiprocessing.spawn")  # its warning "Terminating process N via
    level = spawn_log.level  # signal SIGTERM" printed beside the error below, which says it once
    spawn_log.setLevel(logging.ERROR)
    try:
        while not context.join(timeout=0.5):
            if interrupt_requested() and not forwarded:
                for process in context.processes:
                    if process.is_alive() and process.pid is not None:
                        os.kill(process.pid, signal.SIGINT)  # (late, it is ignored by a worker that is done)
                forwarded = True
    except ProcessException as exc:  # its text ends with the worker's traceback: its first and last line
        if interrupt_requested():
            raise _where_stopped(config) from None
        lines = [line for line in str(exc).splitlines() if line.strip()]
        last = SOURCE_PREFIX.sub("", lines[-1].strip())
        why = lines[0] if len(lines) < 2 else f"{lines[0].strip(' -:')}: {last}"
        raise SimulationError(
            f"distributed run failed: {why} (the other processes were stopped; {_next_step(config)})"
        ) from None
    except KeyboardInterrupt:  # a second Ctrl-C: stop at once, the workers too, before the lock is given back
        for process in context.processes:
            process.kill()
        for process in context.processes:
            process.join()
        raise
    finally:
        spawn_log.setLevel(level)


def _checkpoint_step(config: RunConfig) -> int | None:
    """The step of the run's checkpoint, None where there is none (or it cannot be read)."""
    try:
        return int(torch.load(os.path.join(config.out, "checkpoint.pt"), weights_only=False)["t"])
    except (OSError, KeyError, RuntimeError, TypeError, ValueError, EOFError):
        return None


def _next_step(config: RunConfig) -> str:
    """What to do after a failed distributed run: resume from its checkpoint where one was written (the
    advice was --resume even where none was, which then failed), else run again; and a larger --timeout
    where a process waited too long for a peer."""
    t = _checkpoint_step(config)
    advice = "no checkpoint was written: rerun without --resume" if t is None else (
        f"rerun with --resume to continue from the checkpoint at step {t}"
    )  # fmt: skip
    return advice + f"; if a process waited too long, a larger --timeout than {config.timeout:g} s"


def _where_stopped(config: RunConfig) -> RunInterrupted:
    """The error of a distributed run its launcher stopped: the step of the workers' checkpoint."""
    t = _checkpoint_step(config)
    if t is None:
        return RunInterrupted(f"interrupted; nothing to keep yet in {config.out}", kept=False)
    return RunInterrupted(f"interrupted at step {t} of {config.steps}; the checkpoint is in {config.out}")
