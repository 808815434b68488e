"""Everything a run derives from its config: data, partition, model, mixing matrix, costs, run folder.

:func:`prepare` validates the config and builds a :class:`Setup`, identical on every process of a
distributed run; only the main process prepares the run folder (:func:`prepare_out`: writable,
an earlier run's files removed, or on ``--resume`` a matching checkpoint). :func:`build_trainer`
makes the single-process :class:`~sim.trainer.Trainer` of a prepared run.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from bounds import InputError
from bounds._checks import UNREADABLE_FILE_ERRORS, unreadable_reason
from bounds.cdfl.compression import make_compressor
from bounds.cli_tools import nearest_existing, writable_folder
from bounds.graph.mixing import ExactAverage, check_mixing_matrix, topology_matrix
from bounds.graph.spectral import has_eigenvalue_minus_one
from bounds.plan.cost import CostModel
from sim.algorithms import algorithm, keeps_steps_taken, resolve_schedule, step_kinds
from sim.config import RESUMABLE_CHANGES, RunConfig, fingerprint
from sim.data import Dataset, load_dataset
from sim.engine import BatchSampler, Stack
from sim.errors import ResumeSettingsDiffer
from sim.gossip import ChocoGossip, ExactGossip, choose_mixing
from sim.host import available_memory
from sim.models import LogReg, make_model
from sim.partition import NodeParts, make_partition
from sim.run_folder import (
    check_metrics_file,
    check_path_length,
    lock_folders,
    refuse_other_kind,
    release_folders,
    run_record,
    shown_path,
)
from sim.trainer import Trainer

__all__ = [
    "RUN_FILES",
    "Setup",
    "build_trainer",
    "check_resumable",
    "initial_point",
    "kept_torch_settings",
    "learning_rate",
    "mixing",
    "node_parts",
    "prepare",
    "prepare_out",
    "prepare_outs",
    "set_precision",
]


def mixing(config: RunConfig, uses_J: bool) -> np.ndarray | sp.csr_matrix | ExactAverage:
    """The run's mixing matrix: J for the algorithms that average exactly (as
    :class:`~bounds.graph.mixing.ExactAverage`, without its N^2 entries), else the topology's, in the form
    :func:`bounds.graph.mixing.mixing_matrix` gives it (dense up to 1,000 nodes, CSR above: a dense C of
    10,000 nodes would hold 800 MB, of 100,000 80 GB) or a ``matrix:`` file holds."""
    if uses_J:
        return ExactAverage(config.nodes)
    name = config.topology
    C = topology_matrix(name, config.nodes, config.weights, config.seed)
    C = check_mixing_matrix(C)  # the same validation as dfl-bounds: a disconnected graph is refused
    if C.shape[0] != config.nodes:
        raise InputError(f"nodes = {config.nodes} but topology {name!r} has {C.shape[0]} nodes")
    return C


def learning_rate(config: RunConfig) -> float | Callable[[int], float]:
    """eta, or the C-DFL schedule eta_k = 4 / (mu (a + k)) (Proposition 2) as a function of the round k."""
    if config.lr_schedule == "cdfl":
        assert config.mu is not None and config.a is not None  # (RunConfig checked: both > 0)
        mu, a = float(config.mu), float(config.a)
        return lambda k: 4.0 / (mu * (a + k))
    return float(config.eta)


def initial_point(config: RunConfig, model: torch.nn.Module, stack: Stack) -> torch.Tensor:
    """x_0, the same on every node: --init-params (the mean of the node models it holds), zeros for linear
    models, else the model's init."""
    if config.init_params:
        return _saved_mean(Path(config.init_params), config.model, stack)
    if isinstance(model, LogReg):  # linear models (logreg, lstsq) start from zero
        return torch.zeros(stack.d)
    return stack.flatten(model)


def _saved_mean(path: Path, model: str, stack: Stack) -> torch.Tensor:
    """The mean of the node models in a --save-params npz (u, the model a run's final metrics report) as a
    row of X; InputError for a file that is missing, no npz, of another model, empty or not finite."""
    expected = "expected an npz from --save-params"
    if path.is_dir():  # a run's folder: its params.npz is meant
        hint = f"; {str(path / 'params.npz')!r}?" if (path / "params.npz").is_file() else ""
        raise InputError(f"init params file {str(path)!r} is a folder ({expected}{hint})")
    if not path.is_file():
        raise InputError(f"init params file {str(path)!r} does not exist ({expected})")
    try:
        f = np.load(path, allow_pickle=False)
    except UNREADABLE_FILE_ERRORS as exc:
        why = unreadable_reason(path, exc)
        raise InputError(f"init params file {str(path)!r} is not an npz ({why}; {expected})") from None
    if not hasattr(f, "files"):
        raise InputError(f"init params file {str(path)!r} holds one array ({expected})")
    with f:
        missing = [n for n in stack.names if n not in f.files]
        if missing:
            raise InputError(
                f"init params file {str(path)!r} does not match model {model!r} (it lacks "
                f"{', '.join(missing)}; it holds {', '.join(f.files) or 'nothing'})"
            )
        try:
            arrays = {n: f[n] for n in stack.names}
        except UNREADABLE_FILE_ERRORS as exc:  # object arrays (allow_pickle=False), a cut archive
            raise InputError(f"init params file {str(path)!r} cannot be read ({exc}; {expected})") from None
    for name, shape in zip(stack.names, stack.shapes, strict=True):
        if tuple(shape) not in (arrays[name].shape[1:], arrays[name].shape):  # nodes x shape, or one model
            raise InputError(
                f"init params file {str(path)!r} does not match model {model!r} ({name} has shape "
                f"{tuple(arrays[name].shape)}, expected (nodes, {', '.join(map(str, shape))}): another model "
                "or data set)"
            )
    try:
        saved = [torch.as_tensor(arrays[n]).double().reshape(-1, *shape)
                 for n, shape in zip(stack.names, stack.shapes, strict=True)]  # fmt: skip
    except (RuntimeError, ValueError, TypeError) as exc:  # a dtype torch cannot take (strings, say)
        raise InputError(f"init params file {str(path)!r} does not match model {model!r} ({exc})") from None
    empty = next((n for n, a in zip(stack.names, saved, strict=True) if len(a) == 0), None)
    if empty is not None:  # the mean of no models is NaN
        raise InputError(
            f"init params file {str(path)!r} holds no node models ({empty!r} is empty; {expected})"
        )
    x0 = torch.cat([a.mean(0).reshape(-1).float() for a in saved])
    if not torch.isfinite(x0).all():  # NaN, inf or beyond float32: the run "diverged" at step 1, blaming eta
        raise InputError(
            f"init params file {str(path)!r} holds values that are not finite in float32 (expected finite "
            "parameters, as --save-params writes)"
        )
    return x0


@dataclass
class Setup:
    """Everything a run derives from its config, identical on every process of a distributed run."""

    data: Dataset
    parts: list[np.ndarray]
    stack: Stack
    tau1: int
    tau2: int
    C: np.ndarray | sp.csr_matrix | ExactAverage  # see mixing
    compressor: Any
    bits_per_gossip: float
    cost: CostModel
    x0: torch.Tensor
    device: torch.device
    out: Path
    mixing_digest: str = ""  # of C: what a resumed run must share with its checkpoint beyond settings,
    data_digest: str = ""  # with the data set's (sim.data.Dataset.digest)

    @property
    def digests(self) -> dict[str, str]:
        """The digests a checkpoint keeps and a resume compares (:func:`check_resumable`)."""
        return {"mixing_digest": self.mixing_digest, "data_digest": self.data_digest}


def prepare(config: RunConfig, main: bool = True, data: Dataset | None = None, lock: bool = False) -> Setup:
    """Validate the config and build data, partition, model, mixing matrix, compressor and costs.

    The run folder is made ready (:func:`prepare_out`) by the main process only (``main``), which with
    ``lock`` also takes the folder's lock (:mod:`sim.run_folder`; the caller gives it back, as
    :func:`sim.runner.run` does). ``data``: the config's data set, already loaded (the runs of a sweep
    share one copy).
    """
    config.validate()
    device = torch.device(config.device)
    set_precision(device, config.tf32)
    data = data if data is not None else load_dataset(config.dataset, config.data_dir)
    parts = node_parts(config, data)
    batch_bytes = 4.0 * config.nodes * config.batch_size * math.prod(data.input_shape)
    memory = available_memory()
    if batch_bytes > memory:  # drawn with replacement, a batch may exceed a node's data (many
        # small nodes, small data sets); one whose inputs alone exceed the memory (99999999999 asked torch
        # for 4 TB) is refused here, not by the allocator. Against the memory free now, not the machine's:
        # 23.4 GiB of inputs on a 23.5 GiB machine passed, and the kernel killed the run without a word
        raise InputError(
            f"batch_size = {config.batch_size}: a step's inputs alone would take {batch_bytes / 2**30:.3g} "
            f"GiB on {config.nodes} nodes, more than the {memory / 2**30:.3g} GiB this machine has free "
            "(expected a smaller batch, or 0 for the full local data)"
        )
    with seeded_torch(config.seed):  # the init from the run's seed (built on the CPU, then moved)
        model = make_model(config.model, data.input_shape, data.num_classes)
    model = model.to(device)
    stack = Stack(model)
    tau1, tau2, uses_J = resolve_schedule(config.algorithm, config.tau1, config.tau2)
    compressor = make_compressor(config.compressor, config.compressor_parameter())
    compressor.check_dimension(stack.d)
    bits = compressor.bits(stack.d)
    if config.bandwidth:
        latency = config.latency or 0.0
        cost = CostModel.from_network(
            config.t_comp, latency=latency, bandwidth=config.bandwidth, dim=stack.d, bits=bits
        )
    else:  # --t-comm is one uncompressed gossip step
        cost = CostModel(config.t_comp, config.t_comm).with_message_bits(bits, stack.d)
    with np.errstate(over="ignore"):
        modelled = config.steps * (cost.t_comp + cost.t_comm)
    if not np.isfinite(modelled):  # model_time became inf in silence
        raise InputError(
            f"the run's modelled time, steps x (t_comp + t_comm) = {config.steps} x ({cost.t_comp:g} + "
            f"{cost.t_comm:g}), overflows float64 (expected smaller step times)"
        )
    x0 = initial_point(config, model, stack).to(device)
    C = mixing(config, uses_J)
    if main and not isinstance(C, ExactAverage) and has_eigenvalue_minus_one(C):  # runs, but never agrees
        print(f"dfl-sim: note: topology {config.topology!r}: C has eigenvalue -1 (a bipartite graph with "
              "zero self-weights): gossip oscillates and the nodes never reach consensus; zeta = 1, so the "
              "paper's bounds say nothing here (lazy weights (C + I) / 2 mix)", file=sys.stderr)  # fmt: skip
    digests = digests_of(C, data)
    out = prepare_out(config, digests, lock) if main else Path(config.out)  # once every input is checked
    return Setup(data, parts, stack, tau1, tau2, C, compressor, bits, cost, x0, device, out, **digests)


def node_parts(config: RunConfig, data: Dataset) -> NodeParts:
    """The config's partition of ``data``'s training set, one index array per node (seeded by the run's
    seed): one copy for the runs of a sweep that split it alike (:attr:`sim.data.Dataset.shared`)."""
    key = ("partition", config.partition, config.alpha, config.nodes, config.seed)
    parts = data.shared.get(key)
    if parts is None:
        split = make_partition(config.partition, alpha=config.alpha, node=data.node).split(
            data.y_train.numpy(), config.nodes, np.random.default_rng(config.seed)
        )
        parts = data.shared[key] = NodeParts(split)
    return parts


def set_precision(device: torch.device | str, tf32: bool) -> None:
    """Whether cuDNN's convolutions and cuBLAS's float32 matrix products on a CUDA ``device`` may round to
    TF32 (10 mantissa bits), the process's torch flags; on the CPU nothing changes. torch's own default lets
    convolutions round (``cudnn.allow_tf32``): an H100 gave the stacked CNNs' gradients 4e-3 (MNIST) and
    2e-2 (CIFAR-10) relative from a float32 matmul form of the same step, 3e-7 on the CPU (2026-11-27), and
    the checks' rounding floors are float32's; so runs are float32 unless ``tf32`` (``--tf32``) asks."""
    if torch.device(device).type == "cuda":
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32


@contextmanager
def kept_torch_settings() -> Iterator[None]:
    """On leaving the block, torch's process-wide settings that a run or a benchmark changes are as they were
    on entering it: the intra-op threads (``RunConfig.threads``), cuDNN's autotuner and the TF32 flags
    (:func:`set_precision`). A run called from the user's own code leaves the process as it found it (torch's
    global random stream included: the models' init draws from a forked one)."""
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    threads, flags = torch.get_num_threads(), (cudnn.benchmark, cudnn.allow_tf32, matmul.allow_tf32)
    try:
        yield
    finally:
        cudnn.benchmark, cudnn.allow_tf32, matmul.allow_tf32 = flags
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


@contextmanager
def seeded_torch(seed: int, device: torch.device | str = "cpu") -> Iterator[None]:
    """Inside the block, torch's global random streams (the CPU's, and every CUDA device's where ``device``
    is one) start from ``seed``; on leaving it they are as the caller left them (``torch.manual_seed`` in a
    library function would reset the user's own stream)."""
    cuda = torch.device(device).type == "cuda"
    with torch.random.fork_rng(devices=list(range(torch.cuda.device_count())) if cuda else []):
        if cuda:
            torch.manual_seed(seed)  # (every device's stream, as fork_rng restores every one)
        else:
            torch.default_generator.manual_seed(seed)
        yield


def digests_of(C: np.ndarray | sp.spmatrix | ExactAverage, data: Dataset) -> dict[str, str]:
    """A run's :func:`mixing_digest` and its data set's :attr:`sim.data.Dataset.digest`: what its checkpoint
    and summary keep, and a resume or a reuse of the finished run compares."""
    return {"mixing_digest": mixing_digest(C), "data_digest": data.digest}


def current_digests(config: RunConfig, data: Dataset) -> dict[str, str]:
    """:func:`digests_of` a run of ``config`` now (its C built again, ``data`` its data set loaded): an
    edited edges:/matrix: file or npz data set gives others than the finished run's."""
    _, _, uses_J = resolve_schedule(config.algorithm, config.tau1, config.tau2)
    return digests_of(mixing(config, uses_J), data)


def mixing_digest(C: np.ndarray | sp.spmatrix | ExactAverage) -> str:
    """A digest of a run's mixing matrix C, kept in its checkpoint: the same settings can build another C
    (an edited edges: or matrix: file; Erdos-Renyi graphs above 10,000 nodes changed generator on
    2026-11-27), and a resumed run must not gossip through another graph silently. (x_0 is not in it: a
    resumed run continues from the checkpoint's X.)"""
    h = hashlib.sha256()
    if isinstance(C, ExactAverage):
        h.update(f"J{C.n}".encode())
    elif sp.issparse(C):
        M = sp.csr_matrix(C, dtype=np.float64)
        M.sort_indices()
        for part in (M.indptr, M.indices, M.data):
            h.update(np.ascontiguousarray(part).tobytes())
    else:
        h.update(np.ascontiguousarray(C, dtype=np.float64).tobytes())
    return h.hexdigest()[:16]


RUN_FILES = ("checkpoint.pt", "summary.json", "params.npz", "metrics.csv", "config.json")
CHECKPOINT_KEYS = frozenset({"X", "t", "sampler", "gen", "gossip", "counters"})
"""What every checkpoint holds (:func:`sim.loop._save_checkpoint`), whatever its age."""


def prepare_out(config: RunConfig, digests: dict[str, str] | None = None, lock: bool = False) -> Path:
    """The run folder, created, checked writable and, with ``lock``, locked (:mod:`sim.run_folder`); a
    fresh run removes an earlier run's files.

    With ``resume`` the folder must hold a checkpoint whose config matches (see
    :func:`check_resumable`); without it, an old ``checkpoint.pt`` / ``summary.json`` /
    ``params.npz`` would sit beside the new ``config.json`` and a later ``--resume`` would pick up
    the old checkpoint, so they are removed (only where a ``config.json`` says an earlier run wrote them:
    a folder of other files keeps them). ``digests``: the run's :func:`mixing_digest` and
    :attr:`sim.data.Dataset.digest` (a resume is refused when its checkpoint holds others).
    """
    return prepare_outs([config], [digests], lock)[0]


def prepare_outs(
    configs: Sequence[RunConfig],
    digests: Sequence[dict[str, str] | None] | None = None,
    lock: bool = False,
    checked: bool = False,
) -> list[Path]:
    """The run folders of several runs (a sweep's) made ready as :func:`prepare_out` does, but only once all
    of them can be: the resumed runs' checkpoints and metrics and every folder's place checked first
    (reading only), then every folder created, checked writable and locked, then the fresh runs' old files
    removed. A refused run leaves no other run's folder emptied, nor made (short of a folder that fails
    only its probe file). ``checked``: the caller has run :func:`check_outs` (a sweep's resumed checkpoints
    were loaded twice)."""
    if not checked:
        check_outs(configs, digests)
    outs = [writable_folder(config.out, "out") for config in configs]
    if lock:
        lock_folders(outs)
    try:
        for config, out in zip(configs, outs, strict=True):
            if not config.resume and (out / "config.json").is_file():
                for name in RUN_FILES:
                    (out / name).unlink(missing_ok=True)
    except BaseException:
        if lock:
            release_folders(outs)
        raise
    return outs


def check_outs(configs: Sequence[RunConfig], digests: Sequence[dict[str, str] | None] | None = None) -> None:
    """What :func:`prepare_outs` checks before it makes anything, reading only: every run folder's place,
    and the resumed runs' checkpoints and metrics."""
    for config, digest in zip(configs, digests or [None] * len(configs), strict=True):
        _creatable(Path(config.out))  # first: a sweep's folder given to --resume was told to run without it
        if config.resume:
            check_resumable(config, Path(config.out) / "checkpoint.pt", digest)
            check_metrics_file(Path(config.out) / "metrics.csv")


def _creatable(out: Path) -> None:
    """InputError, as :func:`bounds.cli_tools.writable_folder` words it, where ``out`` is a file, its path is
    too long (:func:`check_path_length`) or its nearest existing folder is not writable: checked for every
    run of a sweep before any folder is made (:func:`writable_folder` then creates each, and its probe file
    remains the last word)."""
    check_path_length(out, "out")
    try:
        near = nearest_existing(out)
    except OSError as exc:  # a name over 255 bytes: 'File name too long', exit 1 as if the run had failed
        raise InputError(f"out = {shown_path(out)} is not a usable folder path ({exc.strerror}; expected "
                         "names of at most 255 bytes)") from None  # fmt: skip
    if not near.is_dir() or not os.access(near, os.W_OK | os.X_OK):
        why = "a file is in the way" if near.exists() and not near.is_dir() else "permission denied"
        raise InputError(f"out = {str(out)!r} is not a writable folder ({why}: {str(near)!r})")
    refuse_other_kind(out, "run")  # the run's files went in beside a sweep's or plan's own


def _damaged_entry(checkpoint: Path) -> str | None:
    """The first entry of a checkpoint's zip archive whose bytes do not match their CRC-32, else None (also
    where the file is no zip archive: torch.load then says why). torch.load does not check them: one
    flipped byte in the saved X resumed a wrong model in silence (a probe; training loss 36 for 0.52)."""
    try:
        with zipfile.ZipFile(checkpoint) as archive:
            return archive.testzip()
    except Exception:  # a damaged index: BadZipFile, zlib.error, and NotImplementedError for an unknown
        return None  # compression method, RuntimeError for an 'encrypted' flag (tracebacks, a review)


def check_resumable(config: RunConfig, checkpoint: Path, digests: dict[str, str] | None = None) -> None:
    """Refuse ``--resume`` without a checkpoint (or with a file that is not one), or with settings that
    differ from the checkpoint's, or (``digests``: :func:`mixing_digest`, :attr:`sim.data.Dataset.digest`)
    where the same settings now build another C or read other data.

    Fields named in ``allow_change`` (from RESUMABLE_CHANGES) may differ; the others must not.
    """
    if not checkpoint.is_file():
        what = "is not a file (a folder)" if checkpoint.is_dir() else "does not exist"
        raise InputError(
            f"resume: {str(checkpoint)!r} {what} (expected the folder of an interrupted run; "
            "run without --resume to start a new one)"
        )
    damaged = _damaged_entry(checkpoint)
    if damaged is not None:
        raise InputError(
            f"resume: {str(checkpoint)!r} is damaged (the bytes of its entry {damaged!r} do not match their "
            "CRC-32; expected the checkpoint a run wrote: remove it to start again)"
        )
    try:
        state = torch.load(checkpoint, weights_only=False)
    except Exception as exc:  # a truncated or foreign file: say which (torch's first sentence)
        why = str(exc).split(". ", 1)[0].strip().rstrip(".")
        raise InputError(f"resume: {str(checkpoint)!r} is not a readable checkpoint ({why})") from None
    missing = CHECKPOINT_KEYS - set(state) if isinstance(state, dict) else CHECKPOINT_KEYS
    if missing:
        raise InputError(
            f"resume: {str(checkpoint)!r} is not a dflkit checkpoint (it lacks {', '.join(sorted(missing))}; "
            "expected the checkpoint.pt a run wrote)"
        )
    saved = state.get("config")
    if saved is None:
        return  # written before fingerprints existed: nothing to compare
    # a checkpoint from before eval_samples (log_every) was in the fingerprint: the run's config.json says it
    record = run_record(checkpoint.parent)
    saved = {**{k: record[k] for k in ("eval_samples", "log_every") if k in record}, **saved}
    now = fingerprint(config)
    differ = [k for k in now if k in saved and saved[k] != now[k] and k not in config.changes_allowed()]
    if differ:
        pairs = ", ".join(f"{k} = {saved[k]!r} -> {now[k]!r}" for k in differ)
        allowed = [k for k in differ if k in RESUMABLE_CHANGES]
        names = ",".join(allowed)
        sweep = f"; in a sweep, allow_change = {names!r} in its grid's [base]"
        hint = f" (or --allow-change {names}{sweep})" if allowed == differ else ""
        raise ResumeSettingsDiffer(
            f"resume: the settings differ from the checkpoint's in {str(checkpoint.parent)!r}: {pairs} "
            f"(expected the same settings{hint})",
            pairs,
        )
    _check_steps(config, saved, int(state["t"]))  # after the fields: every differing one named at once
    digests = digests or {}
    changed = {
        "mixing_digest": "build another mixing matrix C than the checkpoint's (an edited edges:/matrix: "
        "file, or Erdos-Renyi above 10,000 nodes, drawn by another generator since 2026-11-27",
        "data_digest": f"read other data than the checkpoint's (the data set {config.dataset!r} has changed "
        "under its name",
    }
    for key, reason in changed.items():
        before = state.get(key)  # absent in checkpoints written before 2026-11-27 (the data digest: later)
        if digests.get(key) is not None and before is not None and before != digests[key]:
            raise InputError(
                f"resume: the same settings now {reason}; expected the same, or a run without --resume)"
            )
    _check_streams(config, state.get("gen"))


def process_streams(saved: torch.Tensor | list[torch.Tensor]) -> list[torch.Tensor]:
    """A checkpoint's compressor generator states, one per process in rank order (a checkpoint written
    before they were gathered holds one state: the first process's)."""
    return list(saved) if isinstance(saved, list | tuple) else [saved]


def process_count(config: RunConfig) -> int:
    """The processes that run ``config``: world_size (distributed; under torchrun it equals WORLD_SIZE,
    :func:`sim.distributed.run_distributed` refuses another), else 1."""
    return config.world_size if config.backend == "distributed" else 1


def _check_streams(config: RunConfig, saved: torch.Tensor | list[torch.Tensor] | None) -> None:
    """A random compressor draws from one stream per process (seeded by rank): its checkpoint resumes
    only with as many processes as wrote it, each continuing its own stream. A checkpoint written before
    the streams were gathered (one state, not a list) is not checked: the first process continues its
    stream and the others restart theirs, as when it was written."""
    random = (
        algorithm(config.algorithm).compressed
        and make_compressor(config.compressor, config.compressor_parameter()).random
    )
    if not isinstance(saved, list) or not random:
        return
    wrote, now = len(saved), process_count(config)
    if wrote != now:
        how = (
            "--backend local"
            if wrote == 1
            else f"--backend distributed --world-size {wrote} (torchrun: {wrote} processes)"
        )
        raise InputError(
            f"resume: the checkpoint holds the {config.compressor} streams of {wrote} "
            f"process{'es' if wrote > 1 else ''} and this run has {now} (expected {how}: each process "
            "continues its own random stream)"
        )


def _check_steps(config: RunConfig, saved: dict[str, Any], t: int) -> None:
    """A new --steps may only extend the run: the t steps taken must keep their kind (local / gossip)."""
    if "steps" not in saved or saved["steps"] == config.steps:
        return
    if config.steps < t:
        raise InputError(
            f"resume: steps = {config.steps} but the checkpoint is at step {t} (expected steps >= {t})"
        )
    if not keeps_steps_taken(config.algorithm, config.tau1, config.tau2, saved["steps"], config.steps, t):
        raise InputError(
            f"resume: steps = {saved['steps']} -> {config.steps} changes the kind of steps already taken "
            f"(the last, partial round of T = {saved['steps']} is all local steps; expected a T that keeps "
            "them, e.g. a whole number of rounds)"
        )


def build_trainer(config: RunConfig, s: Setup) -> Trainer:
    """The single-process trainer of a prepared run: X = x0 on every node, the run's gossip and sampler."""
    C = choose_mixing(s.C, s.device)
    choco = algorithm(config.algorithm).compressed
    gossip = ChocoGossip(C, config.gamma, s.compressor) if choco else ExactGossip(C)
    gen = torch.Generator(device=s.device).manual_seed(config.seed + 2)
    return Trainer(
        s.stack,
        s.x0.repeat(config.nodes, 1),
        step_kinds(config.algorithm, s.tau1, s.tau2, config.steps),
        learning_rate(config),
        gossip,
        BatchSampler(s.parts, config.batch_size, config.seed, s.device),
        *s.data.train_on(s.device),
        tau=s.tau1 + s.tau2,
        gen=gen,
    )
