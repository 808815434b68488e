"""RunConfig: every knob of a simulation run, with its validation (the CLI's flags are its fields)."""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from bounds import InputError
from bounds._checks import absent_file
from bounds.cdfl.compression import COMPRESSORS, make_compressor
from bounds.dfl.schedule import MAX_STEPS
from bounds.graph.names import check_topology_argument
from sim.algorithms import (
    algorithm,
    resolve_schedule,
)
from sim.partition import PARTITIONS

__all__ = [
    "MODELS",
    "NOT_IN_FINGERPRINT",
    "PLAN_CHOOSES",
    "RESUMABLE_CHANGES",
    "SHARED_FIELDS",
    "RunConfig",
    "check_device",
    "check_field_types",
    "check_float32_step",
    "config_file_values",
    "fields_once",
    "fingerprint",
]

MODELS = ("cnn", "logreg", "lstsq")  # sim.models builds them

SHARED_FIELDS = ("dataset", "data_dir", "model", "device", "tf32", "backend", "threads")  # one value per
# sweep (sim.sweep stacks runs of one data set and model, on one device, in one process; tf32 is a flag of
# the process)

RESUMABLE_CHANGES = ("eta", "t_comp", "t_comm", "latency", "bandwidth", "log_every")  # with --allow-change
NOT_IN_FINGERPRINT = (  # fields that change neither the trajectory nor what is measured of it (eval_samples,
    # the losses' sample, does; log_every, the rows of metrics.csv, too): free to differ on --resume (but a
    # random compressor's streams are per process: sim.setup._check_streams keeps backend / world_size for it)
    "out", "resume", "steps", "backend", "world_size", "timeout",
    "checkpoint_every", "checkpoint_seconds", "threads", "allow_change", "save_params",
)  # fmt: skip

PLAN_CHOOSES = ("tau1", "tau2", "eta", "lr_schedule", "a", "gamma", "compressor", "compressor_param")
"""The fields ``dfl-sim plan`` (:mod:`sim.plan`) sets for each simulated configuration (not the user's)."""


def check_float32_step(what: str, eta: float) -> None:
    """InputError unless the step eta is a finite number above 0 in float32, the precision the models train
    in: ``what`` names it (eta = 1e-46 trained nothing, in silence)."""
    with np.errstate(over="ignore"):
        eta32 = float(np.float32(eta))
    if eta32 == 0.0 or math.isinf(eta32):
        tiny32, huge32 = np.finfo(np.float32).smallest_subnormal, np.finfo(np.float32).max
        raise InputError(
            f"{what} is {eta32:g} in float32, the precision the models train in (expected "
            f"{float(tiny32):.3g} <= eta <= {float(huge32):.3g})"
        )


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
    tf32: bool = False
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

    def validate(self) -> None:
        """Raise InputError naming the first bad value (types first, then ranges)."""
        check_field_types(self)
        if not self.out.strip():
            raise InputError(
                f"out = {self.out!r} is empty (expected a folder for the run's files; an unset $OUT, say)"
            )
        positive_ints = ("nodes", "steps", "log_every", "eval_samples", "checkpoint_every")
        for name in positive_ints:
            value = getattr(self, name)
            if value < 1:  # (nodes = 0 was told 'expected >= 1', then 1 refused: it says 2 at once)
                low = 2 if name == "nodes" else 1
                raise InputError(f"{name} = {value!r} is out of range (expected an integer >= {low})")
        if self.steps > MAX_STEPS:
            raise InputError(
                f"steps = {self.steps:,} is out of range (expected at most {MAX_STEPS:,}: a run holds its "
                "schedule, a byte a step)"
            )
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
        check_float32_step(f"eta = {self.eta!r}", self.eta)
        if not 0 < self.gamma <= 1:
            raise InputError(f"gamma = {self.gamma!r} is out of range (expected 0 < gamma <= 1)")
        if self.latency is not None and self.latency < 0:
            raise InputError(f"latency = {self.latency!r} is out of range (expected seconds >= 0)")
        if self.bandwidth is not None and not self.bandwidth > 0:
            raise InputError(f"bandwidth = {self.bandwidth!r} is out of range (expected bits per second > 0)")
        if self.latency is not None and self.bandwidth is None:
            raise InputError(
                f"latency = {self.latency!r} needs bandwidth (expected both: latency + message bits / "
                "bandwidth is then a gossip step's time; or t_comm alone)"
            )
        for name in ("mu", "a"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise InputError(f"{name} = {value!r} is out of range (expected a number > 0)")
        unknown = [f for f in self.changes_allowed() if f not in RESUMABLE_CHANGES]
        if unknown:
            raise InputError(
                f"allow_change names {unknown[0]!r} (expected a comma-separated list of: "
                f"{', '.join(RESUMABLE_CHANGES)})"
            )
        if self.backend not in ("local", "distributed"):
            raise InputError(f"backend = {self.backend!r} is unknown (expected local or distributed)")
        if self.nodes == 1:  # it ran, counting bits and gossip time for messages sent to no one (a probe)
            raise InputError(
                "nodes = 1: a lone node has no one to gossip with, so every algorithm's communication would "
                "be counted for messages never sent (expected nodes >= 2; the paper's centralised baseline "
                "is algorithm 'sync' over N nodes)"
            )
        if self.backend == "local" and self.world_size != 1:
            raise InputError(
                f"world_size = {self.world_size!r} needs backend 'distributed' (expected 1 with the local "
                "backend)"
            )
        if self.backend == "distributed" and not (
            isinstance(self.world_size, int) and 1 <= self.world_size <= self.nodes
        ):
            raise InputError(
                f"world_size = {self.world_size!r} is out of range (expected 1 <= world_size <= nodes = "
                f"{self.nodes!r}: each process owns at least one node)"
            )
        if self.backend == "distributed" and self.device != "cpu":  # its mixing block and messages are CPU
            raise InputError(  # tensors (gloo): a CUDA run failed in its first gossip step, a traceback
                f"device = {self.device!r} with backend 'distributed' (expected cpu: its processes exchange "
                "CPU tensors through gloo; on one GPU: backend 'local', or many runs at once: dfl-sim sweep)"
            )
        if self.backend == "distributed" and not self.timeout >= 1:  # 0.001 s failed every start
            raise InputError(
                f"timeout = {self.timeout!r} is out of range (expected seconds >= 1: the processes need "
                "seconds to start and meet)"
            )
        if self.lr_schedule not in ("constant", "cdfl"):
            raise InputError(f"lr_schedule = {self.lr_schedule!r} is unknown (expected constant or cdfl)")
        if self.lr_schedule == "cdfl":
            if not (self.mu and self.mu > 0 and self.a and self.a > 0):
                raise InputError("lr_schedule 'cdfl' (eta_k = 4 / (mu (a + k))) needs mu > 0 and a > 0")
            product = self.mu * self.a  # its largest step, eta_0 (mu = a = 1e-300: ZeroDivisionError mid-run)
            eta_0 = 4.0 / product if product > 0 else math.inf
            check_float32_step(
                f"lr_schedule 'cdfl' with mu = {self.mu!r}, a = {self.a!r}: eta_0 = 4 / (mu a)", eta_0
            )
        if not algorithm(self.algorithm).compressed and self.compressor != "identity":
            raise InputError(
                f"compressor {self.compressor!r} needs algorithm 'cdfl' (got {self.algorithm!r})"
            )
        check_device(self.device)
        resolve_schedule(self.algorithm, self.tau1, self.tau2)
        self._check_names()

    def _check_names(self) -> None:
        """The names of the topology, weight rule, model, data set, partition and compressor, and the
        compressor's parameter (here, before torch loads: a refused name answers at once)."""
        check_topology_argument(self.topology, self.weights)
        if self.model not in MODELS:
            raise InputError(f"model = {self.model!r} is unknown (expected one of: {', '.join(MODELS)})")
        if self.dataset not in ("mnist", "cifar10") and not self.dataset.startswith("npz:"):
            raise InputError(f"dataset = {self.dataset!r} is unknown (expected mnist, cifar10 or npz:PATH)")
        if self.dataset.startswith("npz:") and not self.dataset.removeprefix("npz:").strip():
            raise InputError(f"dataset = {self.dataset!r} names no file (expected npz:PATH)")
        if self.partition not in PARTITIONS:
            raise InputError(
                f"partition = {self.partition!r} is unknown (expected one of: {', '.join(PARTITIONS)})"
            )
        if self.compressor not in COMPRESSORS:
            raise InputError(
                f"compressor = {self.compressor!r} is unknown (expected one of: {', '.join(COMPRESSORS)})"
            )
        if self.compressor_param is not None and not algorithm(self.algorithm).compressed:
            raise InputError(
                f"compressor_param = {self.compressor_param!r} needs algorithm 'cdfl', the compressed one "
                f"(got {self.algorithm!r})"
            )
        make_compressor(self.compressor, self.compressor_parameter())  # (the dimension is checked later)

    def compressor_parameter(self) -> float | None:
        """The compressor's parameter: ``compressor_param``, except for identity, which takes none (a sweep
        over compressors shares one value in its [base])."""
        return None if self.compressor == "identity" else self.compressor_param

    def without_effect(self, given: Iterable[str]) -> list[tuple[str, str]]:
        """(field, why) for each of the ``given`` fields (set by the user, as a command-line flag) that would
        change nothing in this run: a value the run reads only with another partition, schedule, algorithm
        or topology (a field's default cannot be told from a value the user gave: the caller says which
        were given)."""
        record, given, why = algorithm(self.algorithm), set(given), []

        def unused(name: str, reason: str) -> None:
            if name in given:
                why.append((name, reason))

        if self.partition != "dirichlet":
            unused("alpha", f"only partition 'dirichlet' reads it (got partition {self.partition!r})")
        if self.lr_schedule == "cdfl":
            unused("eta", "lr_schedule 'cdfl' sets eta_k = 4 / (mu (a + k))")
        else:
            for name in ("mu", "a"):
                unused(name, f"only lr_schedule 'cdfl' reads it (got lr_schedule {self.lr_schedule!r})")
        if not record.compressed:
            unused("gamma", f"only algorithm 'cdfl' reads it, CHOCO-G's consensus step (got {record.name!r})")
        for name in ("tau1", "tau2"):
            fixed = getattr(record, name)
            if fixed is not None and getattr(self, name) != fixed:
                unused(name, f"algorithm {record.name!r} fixes {name} = {fixed}")
        if record.uses_J:
            for name in ("topology", "weights"):
                unused(name, f"algorithm {record.name!r} averages exactly (C = J), over no topology")
        elif self.topology.startswith("matrix:"):
            unused("weights", "a topology matrix:PATH gives C itself")
        if self.backend != "distributed":
            unused("timeout", "only backend 'distributed' reads it (how long its processes wait for a peer)")
        if not self.device.startswith("cuda"):
            unused("tf32", f"only a CUDA device rounds matrix products to TF32 (got device {self.device!r})")
        if self.bandwidth is not None:
            unused("t_comm", "with bandwidth, latency + message bits / bandwidth is a gossip step's time")
        if record.compressed and self.compressor == "identity":
            unused("compressor_param", "compressor 'identity' takes no parameter")
        if not self.resume:
            unused("allow_change", "only --resume reads it (the changes a resumed run may make)")
        if self.dataset.startswith("npz:"):
            unused("data_dir", f"dataset {self.dataset!r} is read from its own path")
        return why

    def changes_allowed(self) -> list[str]:
        """The fields ``allow_change`` lets differ from the checkpoint's config on resume."""
        return [name.strip().replace("-", "_") for name in self.allow_change.split(",") if name.strip()]


JSON_NOT_REPEATED = ("out", "resume", "allow_change", "threads")
"""Fields of a run's config.json that a run repeated from it does not take (its folder and resumption, and
its threads: the machine's, which ``dfl-sim run`` records when it chose them, 64 on a larger machine)."""


def _finite(value: float) -> bool:
    """Whether a number is finite as a float (an int beyond float64, 10**400, is not: math.isfinite raised
    OverflowError)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def check_field_types(instance: Any) -> None:
    """Every field of the dataclass ``instance`` has the type its annotation names (a bool is not an integer,
    a number not a name, a float finite); a numpy scalar (np.int64(4) from an array) becomes its Python
    value, which json writes. InputError names the first field that does not."""
    for f in fields(instance):
        value, kinds = getattr(instance, f.name), str(f.type).split(" | ")
        if isinstance(value, np.generic):
            value = value.item()
            object.__setattr__(instance, f.name, value)  # a frozen dataclass (PlanSettings) too
        if value is None and "None" in kinds:
            continue
        base = kinds[0]
        if base == "tuple[float, ...]":  # (PlanSettings.eta_scales)
            ok = isinstance(value, tuple) and all(_is_number(v) for v in value)
        else:
            ok = {
                "str": isinstance(value, str),
                "int": isinstance(value, int) and not isinstance(value, bool),
                "bool": isinstance(value, bool),
                "float": _is_number(value),
            }[base]
        if not ok:
            expected = {"str": "a string", "int": "an integer", "bool": "true or false",
                        "float": "a finite number",
                        "tuple[float, ...]": "a tuple of finite numbers"}[base]  # fmt: skip
            numbers = value if isinstance(value, tuple) and base != "float" else (value,)
            # (inf "had the wrong type"; topology = 5 has it)
            finite_only = base.startswith(("float", "tuple")) and all(_is_real(v) for v in numbers)
            problem = "is not finite" if finite_only else "has the wrong type"
            shown = (
                repr(value)
                if len(repr(value)) <= 80
                else f"{repr(value)[:60]}... ({len(repr(value))} characters)"
            )
            raise InputError(f"{f.name} = {shown} {problem} (expected {expected})")


def _is_real(value: Any) -> bool:
    """An int or float, not a bool (True counted as 1)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    """A finite int or float, not a bool."""
    return _is_real(value) and _finite(value)


def config_file_values(path: str | Path, resume: bool = False) -> dict[str, Any]:
    """The RunConfig fields a file gives: a TOML file of fields (``--config``), or a run's ``config.json``
    (its ``resolved`` record and JSON_NOT_REPEATED left out), so that a run can be repeated from its
    folder; one whose settings changed on a resume (``changes``) only with ``resume``, to continue it.
    InputError for a missing or unreadable file and for an unknown key."""
    file = Path(path)
    if not file.is_file():
        raise InputError(
            f"config file {str(file)!r} {absent_file(file)} (expected a TOML file or a config.json)"
        )
    is_json = file.suffix.lower() == ".json"  # (c.JSON was read as TOML, a probe)
    try:
        if is_json:
            raw = json.loads(file.read_text())
            if not isinstance(raw, dict):
                raise ValueError("not an object of fields")
            for key in ("resolved", *JSON_NOT_REPEATED):  # a repeat writes where it is told, afresh
                raw.pop(key, None)
        else:
            raw = tomllib.loads(file.read_text())
    except (ValueError, UnicodeDecodeError) as exc:  # TOMLDecodeError and JSONDecodeError are ValueErrors
        kind = "JSON" if is_json else "TOML"
        raise InputError(f"config file {str(file)!r} is not valid {kind} ({exc})") from None
    changes = raw.pop("changes", None) if is_json else None
    if changes and not resume:
        first = changes[0] if isinstance(changes, list) and isinstance(changes[0], dict) else {}
        what = f"{first.get('field', 'a setting')} changed at step {first.get('step', '?')}"
        raise InputError(
            f"config file {str(file)!r} records a run whose {what} (--allow-change): one config cannot "
            "repeat it (expected a run's config.json without changes, or --resume to continue that run; "
            "remove its 'changes' to run with the last values throughout)"
        )
    known = {f.name for f in fields(RunConfig)}

    def field(key: str) -> str:
        name = key.replace("-", "_")
        if name not in known:
            raise InputError(f"config file {str(file)!r}: unknown key {key!r} (expected RunConfig fields)")
        return name

    return fields_once(raw, field, f"config file {str(file)!r}:")


def fields_once(raw: dict[str, Any], field: Callable[[str], str], where: str) -> dict[str, Any]:
    """``raw``'s values by field name (``field`` maps a key, log-every or log_every, to its field and refuses
    an unknown one); InputError, prefixed by ``where``, for a field set under two spellings (the last one
    won in silence)."""
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in raw.items():
        name = field(key)
        if name in spelled:
            raise InputError(f"{where} {spelled[name]!r} and {key!r} set one field (expected it once)")
        spelled[name], values[name] = key, value
    return values


def fingerprint(config: RunConfig) -> dict[str, Any]:
    """The fields of a config that shape the trajectory (what a resumed run must share)."""
    return {k: v for k, v in asdict(config).items() if k not in NOT_IN_FINGERPRINT}


def check_device(device: str) -> None:
    """InputError unless ``device`` is cpu, or cuda / cuda:INDEX with a CUDA device present."""
    if device.startswith("cuda") and not _cuda_available():
        raise InputError(f"device = {device!r} but no CUDA device is available (expected cpu)")
    if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise InputError(f"device = {device!r} is unknown (expected cpu, cuda or cuda:INDEX)")


def _cuda_available() -> bool:
    """Whether torch sees a CUDA device (torch imported here, not with this module: ``dfl-sim --help`` and a
    refused flag answer without loading torch)."""
    import torch

    return torch.cuda.is_available()
