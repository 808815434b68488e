"""The sweep engine: R runs stacked as one (sum of N_r) x d parameter matrix and stepped together.

The runs of a sweep share a data set and a model (so their rows have the same length d) and may differ
in everything else: seed, tau1, tau2, eta, algorithm, topology, compressor, partition, batch size,
number of steps. Each step:

* every run in a local step (or a D-SGD step) draws its own mini-batches from its own sampler, and the
  gradients of all their rows come from one stacked call per batch size (:meth:`Stack.gradients`);
* the runs in an exact gossip step mix their rows with one block-diagonal product
  blockdiag(C_r) @ X, in the form :func:`sim.gossip.choose_mixing` picks for that block-diagonal matrix
  (the group means where every run averages exactly; else dense up to 16 rows on the CPU and 200 on a
  GPU, above shifted diagonals or CSR);
  CHOCO-G runs step their own :class:`~sim.gossip.ChocoGossip` with their own compressor stream;
* X <- X - eta_r G on the rows of the runs that took a local step (after the mixing for D-SGD:
  C X - eta G(X), as eq. (glo-d-sgd)).

Each run keeps its own random streams (sampler, compressor), step kinds (Algorithm 1;
:func:`bounds.dfl.schedule.local_step_mask`) and
learning rate, so a run's trajectory is the one it has alone, up to float rounding (the stacked
products sum in another order; tested). Each run writes its own folder through its own
:class:`~sim.loop.RunRecorder`, exactly as a single run; the logged metrics of all runs due at a step
are computed in one batched pass (:func:`sim.evaluation.evaluate_runs`). A run that finishes or diverges
leaves the stack's active set; the others go on.
"""

from __future__ import annotations

import itertools
import pathlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from bounds import InputError
from bounds.cli_tools import counted
from bounds.graph.mixing import ExactAverage, as_matrix
from sim.algorithms import BOTH, GOSSIP, LOCAL
from sim.config import SHARED_FIELDS, RunConfig
from sim.data import load_dataset
from sim.engine import SAMPLES_PER_CALL_CUDA, Stack, pick
from sim.errors import RunInterrupted
from sim.evaluation import evaluate_runs
from sim.gossip import AverageMixing, ExactGossip, Mixing, as_mixing, choose_mixing
from sim.host import check_threads
from sim.interrupt import interrupt_requested
from sim.loop import Health, RunRecorder, Single, finite_rows, health_of_runs
from sim.run_folder import release_folders
from sim.setup import Setup, build_trainer, check_outs, kept_torch_settings, prepare, prepare_outs
from sim.trainer import Trainer

__all__ = ["SHARED_FIELDS", "Lane", "SweepEngine", "build_engine", "run_sweep", "sweep_groups"]

SAMPLES_PER_CALL_CPU = 640  # node mini-batch samples per gradient call. Measured 2026-11-26 (MNIST CNN, 2
# cores, channels-last): 5.2 ms per node-step at 10 nodes x 32 samples, 5.0 at 20, 7.5 at 40, 9.1 at 80,
# first read as caches overflowing; it was glibc's allocator faulting the larger activations in afresh every
# call (2026-11-27: 115k-129k page faults per call at 80 nodes). With freed memory retained (sim.host, as the
# CLIs run) the time per node-step is flat: 4.3 ms at 20, 4.2-4.7 at 40, 4.3 at 80; the cut stays at 640,
# which costs the least memory and is fast either way.


class Lane:
    """One run of a sweep: its rows of the stacked X, and the rest of its state in its own Trainer
    (step kinds, learning rate, gossip rule, sampler, generator, step counter). Reads and writes like a
    :class:`~sim.trainer.Trainer` (the :class:`~sim.loop.RunState` a recorder needs)."""

    def __init__(self, engine: SweepEngine, index: int, rows: slice, trainer: Trainer) -> None:
        self.engine, self.index, self.rows, self.trainer = engine, index, rows, trainer

    @property
    def X(self) -> torch.Tensor:
        return self.engine.X[self.rows]

    @X.setter
    def X(self, value: torch.Tensor) -> None:
        self.engine.X[self.rows] = value

    @property
    def t(self) -> int:
        return self.trainer.t

    @t.setter
    def t(self, value: int) -> None:
        self.trainer.t = value

    @property
    def tau(self) -> int:
        return self.trainer.tau

    @property
    def sampler(self) -> Any:
        return self.trainer.sampler

    @property
    def gen(self) -> torch.Generator | None:
        return self.trainer.gen

    @property
    def gossip(self) -> Any:
        return self.trainer.gossip

    def learning_rate(self, t: int | None = None) -> float:
        return self.trainer.learning_rate(t)

    @property
    def nodes(self) -> int:
        """The run's number of nodes N_r (its rows of X)."""
        return self.rows.stop - self.rows.start

    @property
    def kind(self) -> int:
        """The kind (LOCAL, GOSSIP, BOTH) of the run's next step."""
        return int(self.trainer.kinds[self.trainer.t])


class SweepEngine:
    """The stacked parameter matrix X of R runs and one step of any subset of them (:meth:`step`).

    ``samples_per_call``: the most node mini-batch samples (rows x batch width) one gradient call
    takes; larger groups are cut by whole runs (the rows' gradients are independent, so the results do
    not depend on the cut). Default: SAMPLES_PER_CALL_CPU, or SAMPLES_PER_CALL_CUDA on a GPU.
    """

    def __init__(
        self,
        stack: Stack,
        trainers: Sequence[Trainer],
        mixing_matrices: Sequence[np.ndarray | sp.csr_matrix | ExactAverage],
        x_train: torch.Tensor,
        y_train: torch.Tensor,
        samples_per_call: int | None = None,
    ) -> None:
        self.stack, self.x_train, self.y_train = stack, x_train, y_train
        cuda = x_train.device.type == "cuda"  # the memory of one stacked forward/backward pass
        default = SAMPLES_PER_CALL_CUDA if cuda else SAMPLES_PER_CALL_CPU
        self.samples_per_call = default if samples_per_call is None else samples_per_call
        self.C = list(mixing_matrices)
        self.X = torch.cat([tr.X for tr in trainers])
        self.lanes: list[Lane] = []
        start = 0
        for i, tr in enumerate(trainers):
            n = tr.X.shape[0]
            self.lanes.append(Lane(self, i, slice(start, start + n), tr))
            tr.X = tr.X[:0]  # the stacked X holds the rows now
            start += n
        # every lane's part of the training set in one tensor (a group's draws map through it at once), once
        # per partition: lanes that share one (sim.setup.node_parts) share its segment
        flats: dict[int, tuple[int, torch.Tensor]] = {}
        end = 0
        for lane in self.lanes:
            flat = lane.sampler.layout[0]
            if id(flat) not in flats:
                flats[id(flat)], end = (end, flat), end + len(flat)
        self._flat = torch.cat([flat for _, flat in flats.values()])
        self._flat_start = np.array([flats[id(lane.sampler.layout[0])][0] for lane in self.lanes])
        self._memos: OrderedDict[tuple[Any, ...], Any] = OrderedDict()

    def step(self, lanes: Sequence[Lane]) -> list[tuple[int, torch.Tensor | None]]:
        """Advance each of ``lanes`` by its next step; returns each one's (kind, mini-batch losses)."""
        kinds = [lane.kind for lane in lanes]
        X = self.X
        new = X.clone()
        losses: dict[int, torch.Tensor] = {}
        updates: list[tuple[list[Lane], torch.Tensor]] = []  # (a gradient call's lanes, their rows' G)
        local = [lane for lane, k in zip(lanes, kinds, strict=True) if k in (LOCAL, BOTH)]
        for group in _by_batch_width(local, self.samples_per_call):  # one stacked call per group
            idx, weight = self._draw(group)
            G, batch_losses = self.stack.gradients(
                X[self._rows(group)], self.x_train[idx], self.y_train[idx], weight
            )
            updates.append((group, G))
            start = 0
            for lane in group:
                losses[lane.index] = batch_losses[start : start + lane.nodes]
                start += lane.nodes
        gossiping = [lane for lane, k in zip(lanes, kinds, strict=True) if k in (GOSSIP, BOTH)]
        exact = [lane for lane in gossiping if isinstance(lane.gossip, ExactGossip)]
        if exact:  # one block-diagonal product for every exact gossip step
            rows = self._rows(exact)
            new[rows] = self._block(exact).mix(X[rows], X[:0])
        for lane in gossiping:
            if lane not in exact:  # CHOCO-G: its own X_hat and compressor stream
                new[lane.rows] = lane.gossip.step(X[lane.rows], lane.gen)
        for group, G in updates:  # X <- X - eta_r G: one update per gradient call, eta_r repeated per row
            rows = self._rows(group)
            new[rows] = new[rows] - self._eta_rows(group, G.dtype)[:, None] * G
        self.X = new
        for lane in lanes:
            lane.t += 1
        return [(k, losses.get(lane.index)) for lane, k in zip(lanes, kinds, strict=True)]

    def health(self, lanes: Sequence[Lane], losses: Sequence[torch.Tensor | None]) -> list[Health]:
        """Each lane's :class:`~sim.loop.Health` after its step: one pass over X for the finite check and
        one device sync for all lanes (not a sync and a pass per run)."""
        finite = finite_rows(self.X)[self._rows(lanes)]
        nodes = [lane.nodes for lane in lanes]
        has = tuple(loss is not None for loss in losses)
        key = tuple(lane.index for lane in lanes)
        with_loss = np.flatnonzero(has)
        loss_owner = self._memo(
            ("loss owner", key, has),
            lambda: self._device(np.repeat(with_loss, np.asarray(nodes, dtype=np.int64)[with_loss])),
        )
        return health_of_runs(finite, nodes, losses, self._owner(lanes), loss_owner)

    def spread(self, lanes: Sequence[Lane]) -> tuple[torch.Tensor, torch.Tensor]:
        """Each lane's drift ||X_r (I - J)||_F^2 / N_r (the left side of eq. (103) before L^2) and second
        moment ||X_r||_F^2 / N_r, as device tensors (one pass over the lanes' rows, no device sync)."""
        X = self.X[self._rows(lanes)]
        nodes = [lane.nodes for lane in lanes]
        owner = self._owner(lanes)
        count = self._memo(
            ("count", tuple(lane.index for lane in lanes)),
            lambda: self._device(np.asarray(nodes)).to(X.dtype),
        )
        mean = X.new_zeros(len(lanes), X.shape[1]).index_add_(0, owner, X) / count[:, None]
        per_lane = lambda rows: X.new_zeros(len(lanes)).index_add_(0, owner, rows) / count  # noqa: E731
        return per_lane(((X - mean[owner]) ** 2).sum(1)), per_lane((X**2).sum(1))

    def _owner(self, lanes: Sequence[Lane]) -> torch.Tensor:
        """Each row of ``lanes`` (in order) its lane's position k in ``lanes``, on the device (memoised)."""
        nodes = [lane.nodes for lane in lanes]
        build = lambda: self._device(np.repeat(np.arange(len(nodes)), nodes))  # noqa: E731
        return self._memo(("owner", tuple(lane.index for lane in lanes)), build)

    def _memo(self, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        """``build()`` cached under ``key`` for the last 256 keys: what depends only on the set of lanes in a
        call (their rows, parts, mixing block, learning rates) is sent to the device once, not per step
        (on a GPU each host-to-device copy of a step's small tensor stalls the stream)."""
        if key not in self._memos:
            self._memos[key] = build()
            if len(self._memos) > 256:  # a step uses about 3 per gradient call: no rebuilds below ~80 calls
                self._memos.popitem(last=False)
        self._memos.move_to_end(key)
        return self._memos[key]

    def _device(self, values: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(values)).to(self.X.device)

    def _draw(self, group: Sequence[Lane]) -> tuple[torch.Tensor, torch.Tensor]:
        """The group's mini-batch indices and weights (rows x width): each lane draws its uniforms from
        its own stream, mapped to indices for the whole group at once (:func:`sim.engine.pick`); full-batch
        lanes give their fixed padded parts."""
        if group[0].sampler.batch_size == 0:  # a group shares its width: all full batch, or none
            draws = [lane.sampler.next() for lane in group]
            return torch.cat([d[0] for d in draws]), torch.cat([d[1] for d in draws])

        def layout() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            parts = [lane.sampler.layout for lane in group]
            offsets = torch.cat(
                [o + int(self._flat_start[lane.index]) for lane, (_, o, _) in zip(group, parts, strict=True)]
            )
            sizes = torch.cat([n for _, _, n in parts])
            return offsets, sizes, torch.ones(len(sizes), group[0].sampler.batch_size, device=self.X.device)

        offsets, sizes, ones = self._memo(("draw", tuple(lane.index for lane in group)), layout)
        u = torch.cat([lane.sampler.uniforms() for lane in group])  # each run's own stream
        return pick(u, self._flat, offsets, sizes), ones

    def _eta_rows(self, group: Sequence[Lane], dtype: torch.dtype) -> torch.Tensor:
        """Each row's learning rate eta_r (sent to the device again only when a run's rate changes)."""
        eta = tuple(lane.learning_rate() for lane in group)
        key = ("eta", tuple(lane.index for lane in group), eta)
        nodes = [lane.nodes for lane in group]
        return self._memo(key, lambda: self._device(np.repeat(np.asarray(eta), nodes)).to(dtype))

    def _rows(self, lanes: Sequence[Lane]) -> slice | torch.Tensor:
        """The rows of ``lanes`` in X: a slice when they are contiguous, else an index tensor."""
        if all(a.rows.stop == b.rows.start for a, b in itertools.pairwise(lanes)):
            return slice(lanes[0].rows.start, lanes[-1].rows.stop)
        index = lambda: np.concatenate([np.arange(lane.rows.start, lane.rows.stop) for lane in lanes])  # noqa: E731
        return self._memo(("rows", tuple(lane.index for lane in lanes)), lambda: self._device(index()))

    def _block(self, lanes: Sequence[Lane]) -> Mixing:
        """blockdiag(C_r) of ``lanes`` in the form :func:`sim.gossip.choose_mixing` picks for it (see the
        module docstring)."""

        def build() -> Mixing:
            matrices = [self.C[lane.index] for lane in lanes]
            averages = [C for C in matrices if isinstance(C, ExactAverage)]
            if len(averages) == len(matrices):  # runs that average exactly: no N^2 arrays
                return AverageMixing(tuple(C.n for C in averages))
            blocks = sp.block_diag([as_matrix(C) for C in matrices], format="csr")
            return as_mixing(choose_mixing(blocks, self.X.device))

        return self._memo(("block", tuple(lane.index for lane in lanes)), build)


def _by_batch_width(lanes: Sequence[Lane], samples_per_call: int) -> list[list[Lane]]:
    """Lanes grouped by the width of their mini-batch draws (batch size, or the padded local data; full
    batches apart from mini-batches of the same width), each group cut so that one gradient call sees at
    most ``samples_per_call`` samples (at least one lane)."""
    groups: dict[tuple[int, bool], list[list[Lane]]] = {}
    rows: dict[tuple[int, bool], int] = {}  # the rows of each width's last chunk
    for lane in lanes:
        width = (lane.sampler.width, lane.sampler.batch_size == 0)
        chunks = groups.setdefault(width, [[]])
        nodes = lane.nodes
        if chunks[-1] and (rows[width] + nodes) * width[0] > samples_per_call:
            chunks.append([])
            rows[width] = 0
        chunks[-1].append(lane)
        rows[width] = rows.get(width, 0) + nodes
    return [chunk for chunks in groups.values() for chunk in chunks]


def sweep_groups(configs: Sequence[RunConfig]) -> list[list[RunConfig]]:
    """``configs`` split into the runs that can share a sweep (one value of each of SHARED_FIELDS), in
    order of first appearance: what ``dfl-check`` runs as one sweep each."""
    groups: dict[tuple[Any, ...], list[RunConfig]] = {}
    for c in configs:
        groups.setdefault(tuple(getattr(c, name) for name in SHARED_FIELDS), []).append(c)
    return list(groups.values())


def check_compatible(configs: Sequence[RunConfig]) -> None:
    """The runs of one sweep are RunConfigs that share SHARED_FIELDS and the local backend; their folders
    differ."""
    if not isinstance(configs, list | tuple) or not all(isinstance(c, RunConfig) for c in configs):
        raise InputError(f"configs = {configs!r:.100} (expected a list of RunConfig)")
    if not configs:
        raise InputError("a sweep needs at least one run (got an empty list)")
    first = configs[0]
    for c in configs[1:]:
        for name in SHARED_FIELDS:
            if getattr(c, name) != getattr(first, name):
                raise InputError(
                    f"sweep: {name} = {getattr(c, name)!r} differs from the first run's "
                    f"{getattr(first, name)!r} (expected one {name} for all runs of a sweep)"
                )
    if first.backend != "local":
        raise InputError(f"sweep: backend = {first.backend!r} (expected local: a sweep runs in one process)")
    folders: dict[Any, str] = {}  # resolved (o2/s and o2/./s, or a relative and an absolute spelling, ran
    for c in configs:  # two runs into one folder, the first's files lost: a probe) -> as given
        folder = pathlib.Path(c.out).resolve() if isinstance(c.out, str) else c.out
        if folder in folders:
            given = c.out if folders[folder] == c.out else f"{folders[folder]} and {c.out}"
            raise InputError(
                f"sweep: two runs write to the same folder {given!r} (expected one folder per run)"
            )
        folders[folder] = c.out


def check_sweep(configs: Sequence[RunConfig]) -> list[Setup]:
    """Every config validated and prepared (the data set loaded once), and every run folder's place,
    checkpoint and metrics checked: reading only, nothing made (a caller makes its own folder after it, as
    ``dfl-sim sweep`` does; a refused sweep used to leave that folder with a new sweep.json)."""
    check_compatible(configs)
    for i, c in enumerate(configs):
        with _naming_run(i, configs):
            c.validate()
    check_threads(configs[0].threads)  # (one value for all: check_compatible)
    data = load_dataset(configs[0].dataset, configs[0].data_dir)
    setups = []
    for i, c in enumerate(configs):  # every input checked before any folder
        with _naming_run(i, configs):
            setups.append(prepare(c, main=False, data=data))
    check_outs(configs, [s.digests for s in setups])
    return setups


@contextmanager
def _naming_run(i: int, configs: Sequence[RunConfig]) -> Iterator[None]:
    """An InputError of configs[i] says which run it is, by its folder, where a sweep has several: 'eta = -1
    is out of range' did not say which of 100 (a probe of the library). By its folder, not its place: a
    resumed dfl-sim sweep passes the runs still to do, whose places are not the grid's (a review)."""
    try:
        yield
    except InputError as exc:
        if len(configs) == 1:
            raise
        raise InputError(f"{exc}; in the sweep's run with out = {configs[i].out!r}") from None


def build_engine(
    configs: Sequence[RunConfig], lock: bool = False, setups: list[Setup] | None = None
) -> tuple[SweepEngine, list[Setup]]:
    """Every config validated, prepared (the data set loaded once) and stacked in one engine, lane r
    holding configs[r] at its first step; with ``lock``, the run folders locked (the caller gives them
    back, as :func:`run_sweep` does). ``setups``: :func:`check_sweep`'s, where the caller has checked."""
    setups = setups or check_sweep(configs)  # (first: it names configs that are not RunConfigs)
    if configs[0].threads:
        torch.set_num_threads(configs[0].threads)
    data = setups[0].data
    outs = prepare_outs(configs, [s.digests for s in setups], lock, checked=True)  # (check_sweep checked)
    for setup, out in zip(setups, outs, strict=True):
        setup.out = out
    try:  # the folders are locked now: a failure gives them back
        trainers = [build_trainer(c, s) for c, s in zip(configs, setups, strict=True)]
        device = setups[0].device
        engine = SweepEngine(setups[0].stack, trainers, [s.C for s in setups], *data.train_on(device))
    except BaseException:
        if lock:
            release_folders(c.out for c in configs)
        raise
    return engine, setups


def run_sweep(
    configs: Sequence[RunConfig],
    progress: Callable[[int, int], None] | None = None,
    on_finish: Callable[[int, dict[str, Any]], None] | None = None,
    setups: list[Setup] | None = None,
) -> list[dict[str, Any]]:
    """Run every config as one stacked sweep; returns their summaries (each also in its own folder).
    ``setups``: :func:`check_sweep`'s (else it runs here).

    Every config is validated before anything runs. ``progress(done, total)`` counts the runs' steps, after
    every step of the stack; ``on_finish(i, summary)`` is called as run i ends, before that step's
    ``progress`` (a caller's listing is then kept as the runs go, written once a step).
    A config with ``resume`` continues from its folder's checkpoint. torch's threads and TF32 flags are the
    caller's again afterwards (:func:`sim.setup.kept_torch_settings`).
    """
    with kept_torch_settings():  # threads, TF32: as the caller had them, after the sweep
        engine, setups = build_engine(configs, lock=True, setups=setups)
        try:
            return _run_engine(configs, engine, setups, progress, on_finish)
        finally:
            release_folders(c.out for c in configs)


def _run_engine(
    configs: Sequence[RunConfig],
    engine: SweepEngine,
    setups: list[Setup],
    progress: Callable[[int, int], None] | None,
    on_finish: Callable[[int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """The step loop of a sweep: every run's metrics, checkpoints and, as soon as it ends (its last step,
    or diverged), its final files, as ``dfl-sim run`` writes them, and ``on_finish`` told."""
    recorders = [
        RunRecorder(c, s, lane, Single()) for c, s, lane in zip(configs, setups, engine.lanes, strict=True)
    ]
    summaries: dict[int, dict[str, Any]] = {}

    def settle() -> None:  # a run that has ended writes its summary now, not when the sweep ends
        for i, r in enumerate(recorders):
            if r.finished and i not in summaries:
                summaries[i] = r.finish()
                if on_finish:
                    on_finish(i, summaries[i])

    total = sum(c.steps for c in configs)
    try:
        _log_due([r for r in recorders if r.start()])
        settle()
        active = [r for r in recorders if not r.finished]
        if progress:  # the steps resumed runs had taken (the bar started at 0 of the whole, a probe)
            progress(sum(r.state.t for r in recorders), total)
        while active:
            lanes = [r.state for r in active]
            results = engine.step(lanes)  # type: ignore[arg-type]
            probes = engine.health(lanes, [losses for _, losses in results])  # type: ignore[arg-type]
            due = [r.record(kind, losses, probe)
                   for r, (kind, losses), probe in zip(active, results, probes, strict=True)]  # fmt: skip
            _log_due([r for r, d in zip(active, due, strict=True) if d])
            for r, d in zip(active, due, strict=True):
                if not d:
                    r.finish_step(None)
            settle()
            active = [r for r in active if not r.finished]
            if progress:
                progress(sum(r.state.t for r in recorders), total)
            if interrupt_requested() and active:
                raise _interrupted(recorders)
        return [summaries[i] for i in range(len(recorders))]
    finally:
        for r in recorders:
            r.close()


def _interrupted(recorders: Sequence[RunRecorder]) -> RunInterrupted:
    """A sweep stopped by Ctrl-C after a whole step: the unfinished runs' checkpoints written
    (:mod:`sim.interrupt`; the finished ones wrote their results when they ended), and the error that
    says so."""
    unfinished = [r.interrupted() for r in recorders if not r.finished]
    done, total = sum(r.state.t for r in recorders), sum(r.config.steps for r in recorders)
    return RunInterrupted(
        f"interrupted after {done} of {total} steps; {counted(len(recorders) - len(unfinished), 'run')} "
        f"finished, the checkpoints of the {len(unfinished)} others are in their folders"
    )


def _log_due(recorders: Sequence[RunRecorder]) -> None:
    """The metrics rows due at this step, every run's models evaluated in one batched pass."""
    runs = []
    for r in recorders:
        X = r.full_X()
        assert X is not None  # (a sweep is one process, the main one)
        runs.append((r.evaluator, X))
    metrics = evaluate_runs(runs)
    for r, m in zip(recorders, metrics, strict=True):
        r.finish_step(m)
