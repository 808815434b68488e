"""``dfl-sim sweep GRID.toml``: a grid of runs from a TOML file, one run folder per point.

The file has two tables::

    [base]            # RunConfig fields shared by every run (the CLI's flags, '-' or '_')
    dataset = "mnist"
    steps = 200

    [grid]            # field -> list of values; the sweep is their product
    seed = [0, 1, 2]
    tau2 = [1, 4, 15]
    method = [{algorithm = "dfl"}, {algorithm = "cdfl", compressor = "top_k", compressor_param = 100}]

A [grid] key that is no RunConfig field, with a list of tables, is a *bundle*: each table sets its fields
together, one value of the product (DFL beside C-DFL with a compressor: the product of an algorithm axis
and a compressor axis holds DFL with top_k, which is refused). Each point runs in
``DIR/<field>=<value>_...`` (the grid's fields in the file's order, a bundle's in its table's). With
``resume`` a point whose folder holds a finished run of the same config is not run again, one with a
checkpoint continues from it, one with neither starts afresh; a finished run of other settings without a
checkpoint is refused (:func:`refuse_overwrite`): ``--resume`` never trains a finished run again from step 0.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import tomllib
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from bounds import InputError
from bounds._checks import absent_file
from sim.algorithms import algorithm, keeps_steps_taken
from sim.config import SHARED_FIELDS, RunConfig, fields_once, fingerprint
from sim.run_folder import finished_run, json_object, run_record

__all__ = [
    "GridPoint", "changed_inputs", "finished_summary", "grid_points", "load_grid", "refuse_idle_fields",
    "refuse_one_matrix_twice", "refuse_overwrite",
]  # fmt: skip

_FIELDS = {f.name for f in fields(RunConfig)}
SAVING_ONLY = ("checkpoint_every", "checkpoint_seconds", "save_params")
"""Fields that change what a run saves, not how it trains: a grid listing them trained one run twice."""
_NOT_IN_GRID = ("out", "resume", *SHARED_FIELDS, *SAVING_ONLY)


def _why_not_in_grid(name: str) -> str:
    """Why a [grid] entry or a bundle's table may not set ``name`` (in :data:`_NOT_IN_GRID`), what to do."""
    if name in ("out", "resume"):
        return "the sweep sets it (expected --out DIR, --resume on the command line)"
    if name in SAVING_ONLY:
        return "it changes what a run saves, not how it trains: one run trained twice (expected it in [base])"
    return f"one sweep has one {', '.join(SHARED_FIELDS)} (expected it in [base])"


def load_grid(path: str | Path) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """(base, grid) from a TOML file, every key checked against RunConfig's fields."""
    path = Path(path)
    if not path.is_file():
        raise InputError(
            f"grid file {str(path)!r} {absent_file(path)} (expected a TOML file with [base] and [grid])"
        )
    try:
        raw = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"grid file {str(path)!r} is not valid TOML ({exc})") from None
    for table in ("base", "grid"):
        if not isinstance(raw.get(table, {}), dict):
            raise InputError(
                f"grid file {str(path)!r}: {table} = {raw[table]!r} (expected a [{table}] table of RunConfig "
                "fields)"
            )
    extra = [k for k in raw if k not in ("base", "grid")]
    if extra:
        what = "unknown table" if isinstance(raw[extra[0]], dict) else "a key outside the tables:"
        raise InputError(
            f"grid file {str(path)!r}: {what} {extra[0]!r} (expected [base] and [grid] tables: RunConfig "
            "fields under [base], lists of values under [grid])"
        )
    base = fields_once(raw.get("base", {}), lambda key: _field(path, key), f"grid file {str(path)!r}: [base]")
    fixed = [k for k in ("out", "resume") if k in base]
    if fixed:
        raise InputError(
            f"grid file {str(path)!r}: {fixed[0]!r} in [base] is set by the sweep (expected the command's "
            f"--{fixed[0]}: each run's folder is under --out)"
        )
    grid: dict[str, list[Any]] = {}
    for key, values in raw.get("grid", {}).items():
        if isinstance(values, list) and values and any(isinstance(v, dict) for v in values):
            grid[_bundle_name(path, key, grid)] = _bundle(path, key, values, base, grid)
            continue
        if isinstance(values, dict):  # (it was 'unknown key', or a field's 'expected a non-empty list')
            raise InputError(
                f"grid file {str(path)!r}: [grid] {key} = {values!r} is one table (expected a list: of "
                f"values, or of tables for a bundle, {key} = [{{...}}, {{...}}])"
            )
        if values == [] and key.replace("-", "_") not in _FIELDS:  # (a bundle's, emptied: 'unknown key')
            raise InputError(
                f"grid file {str(path)!r}: [grid] {key} = [] is empty, and {key!r} is no RunConfig field "
                "(expected a non-empty list: of tables for a bundle, or of values of a RunConfig field)"
            )
        name = _field(path, key)
        if name in _NOT_IN_GRID:
            raise InputError(
                f"grid file {str(path)!r}: {key!r} cannot vary in a sweep: {_why_not_in_grid(name)}"
            )
        if not isinstance(values, list) or not values:
            raise InputError(
                f"grid file {str(path)!r}: [grid] {key} = {values!r} (expected a non-empty list of values)"
            )
        if name in base:
            raise InputError(f"grid file {str(path)!r}: {key!r} is in [base] and in [grid] (expected one)")
        _not_in_a_bundle(path, name, grid)
        if name in grid:
            raise InputError(f"grid file {str(path)!r}: [grid] has {key!r} twice, spelled two ways (expected "
                             "it once)")  # fmt: skip
        if len(values) > MAX_POINTS:  # (a list of 30,000 seeds spent minutes in the check below, a probe)
            raise InputError(
                f"grid file {str(path)!r}: [grid] {key} lists {len(values):,} values (expected at most "
                f"{MAX_POINTS:,} points in a sweep: split it into several sweeps)"
            )
        twice = _first_repeat(values)
        if twice:  # eta = [1, 1.0] ran one run twice, in folders eta=1 and eta=1.0
            a, b = twice
            both = f"{a!r}" if repr(a) == repr(b) else f"{a!r} and {b!r}"
            raise InputError(
                f"grid file {str(path)!r}: [grid] {key} lists one value twice ({both}; expected distinct "
                "values: each is one run)"
            )
        grid[name] = values
    if not grid:  # an empty file ran one default run (a 400-step CNN) in a folder named 'run'
        raise InputError(
            f"grid file {str(path)!r} has no [grid] entries (expected field = [value, ...] lines under "
            "[grid]: the sweep is their product; one run is `dfl-sim run --config FILE`)"
        )
    return base, grid


def _bundle_name(path: Path, key: str, grid: dict[str, list[Any]]) -> str:
    """A bundle's key: no RunConfig field (it would read as one), and not twice."""
    if key.replace("-", "_") in _FIELDS:
        raise InputError(
            f"grid file {str(path)!r}: [grid] {key} holds tables, but {key!r} is a RunConfig field (expected "
            "a list of its values, or tables under a name of your own: method = [{algorithm = 'dfl'}, ...])"
        )
    if key in grid:
        raise InputError(f"grid file {str(path)!r}: [grid] has {key!r} twice (expected it once)")
    return key


def _bundle(
    path: Path, key: str, tables: list[Any], base: dict[str, Any], grid: dict[str, list[Any]]
) -> list[dict[str, Any]]:
    """A bundle's tables, each of RunConfig fields (none in [base], in another [grid] entry, or fixed per
    sweep), distinct and non-empty."""
    where = f"grid file {str(path)!r}: [grid] {key}"
    if not all(isinstance(t, dict) and t for t in tables):
        bad = next(t for t in tables if not isinstance(t, dict) or not t)
        what = "an empty table" if bad == {} else f"{bad!r} beside tables"
        raise InputError(f"{where} holds {what} (expected a list of non-empty tables of fields)")
    bundle: list[dict[str, Any]] = []
    for table in tables:
        fields_ = fields_once(table, lambda k: _field(path, k), where)
        for name in fields_:
            if name in _NOT_IN_GRID:
                raise InputError(f"{where}: {name!r} cannot vary in a sweep: {_why_not_in_grid(name)}")
            if name in base:
                raise InputError(f"{where}: {name!r} is in [base] and in the bundle (expected one)")
            if name in grid:
                raise InputError(f"{where}: {name!r} is also a [grid] entry of its own (expected one)")
            _not_in_a_bundle(path, name, grid)
        if any(_same_table(fields_, other) for other in bundle):
            raise InputError(
                f"{where} lists one table twice ({table!r}; expected distinct tables: each is one run)"
            )
        bundle.append(fields_)
    return bundle


def _not_in_a_bundle(path: Path, name: str, grid: dict[str, list[Any]]) -> None:
    """InputError where a bundle already in ``grid`` sets the field ``name``: two entries would set it."""
    for key, values in grid.items():
        if any(isinstance(v, dict) and name in v for v in values):
            raise InputError(
                f"grid file {str(path)!r}: {name!r} is set by the bundle {key!r} and by another [grid] entry "
                "(expected one)"
            )


def _same_table(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two bundle tables that give one run: the same fields, each of the same value (:func:`_same_value`)."""
    return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)


def _same_value(a: Any, b: Any) -> bool:
    """Whether two grid values give one run: equal and of one kind (1 and 1.0 are; 1 and True are not)."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _first_repeat(values: list[Any]) -> tuple[Any, Any] | None:
    """The first pair of ``values`` that give one run (:func:`_same_value`), or None: the hashable values
    through a dict (every pair compared took minutes for 30,000 values), the others (tables, lists) pair by
    pair."""
    seen: dict[tuple[bool, Any], Any] = {}
    others: list[Any] = []
    for value in values:
        key = (isinstance(value, bool), value)
        try:
            if key in seen:
                return seen[key], value
        except TypeError:  # unhashable
            others.append(value)
            continue
        seen[key] = value
    pairs = ((a, b) for i, a in enumerate(others) for b in others[i + 1 :] if _same_value(a, b))
    return next(pairs, None)


def _field(path: Path, key: str) -> str:
    name = key.replace("-", "_")
    if name not in _FIELDS:
        raise InputError(f"grid file {str(path)!r}: unknown key {key!r} (expected RunConfig fields)")
    return name


class GridPoint:
    """One run of a grid: the grid's values it uses (a bundle's fields among them, flat), the bundles' tables
    it takes (bundle key -> table) and its config (``out`` = its own folder)."""

    def __init__(
        self, values: dict[str, Any], config: RunConfig, tables: dict[str, dict[str, Any]] | None = None
    ) -> None:
        self.values, self.config, self.tables = values, config, tables or {}


MAX_POINTS = 10_000
"""The most runs one sweep takes: a 5,000-point grid of 20-step logistic regressions held 14.9 GB and took
over 13 minutes (2 cores, 2026-11-29; before runs of one seed shared their evaluation samples and index
arrays: with every seed its own a run still holds 4.8 MB of MNIST's), a 10^7-point one ran out of memory
building its points."""


def grid_points(base: dict[str, Any], grid: dict[str, list[Any]], out: str | Path) -> list[GridPoint]:
    """The product of the grid's lists over ``base``, each in its own folder under ``out`` (at most
    :data:`MAX_POINTS`, counted before any is built)."""
    count = math.prod(len(values) for values in grid.values())
    if count > MAX_POINTS:
        sizes = " x ".join(f"{len(values)} {key}" for key, values in grid.items())
        raise InputError(
            f"sweep: the grid has {count:,} points ({sizes}; expected at most {MAX_POINTS:,}: split it into "
            "several sweeps)"
        )
    points: list[GridPoint] = []
    folders: dict[Path, GridPoint] = {}
    for combo in itertools.product(*grid.values()):
        values: dict[str, Any] = {}
        tables: dict[str, dict[str, Any]] = {}
        for key, value in zip(grid, combo, strict=True):
            if isinstance(value, dict):  # a bundle's table: its fields, flat among the values
                tables[key] = value
                values.update(value)
            else:
                values[key] = value
        folder = Path(out) / (_folder_name(values) or "run")
        try:
            config = RunConfig(**{**base, **values, "out": str(folder)})
        except TypeError as exc:  # a key RunConfig does not take: load_grid checks, a caller may not
            raise InputError(f"sweep: {exc} (expected RunConfig fields)") from None
        if folder in folders:  # ('a b' and 'a-b' give one name): refused before any folder is made
            first = folders[folder]
            first.config.validate()  # a value of the wrong type ("0" beside 0) is the error, not the clash
            config.validate()
            raise InputError(
                f"sweep: the points {first.values} and {values} would write to one folder {str(folder)!r} "
                "(expected values that differ in letters, digits or '.=+-_')"
            )
        folders[folder] = point = GridPoint(values, config, tables)
        points.append(point)
    return points


def refuse_idle_fields(points: list[GridPoint], path: str | Path) -> None:
    """InputError for a [grid] field whose values change nothing: ``alpha`` without partition 'dirichlet',
    ``gamma`` without algorithm 'cdfl', ``tau2`` of 'sync' (:meth:`RunConfig.without_effect`). A field may
    be idle at some points (``gamma = [0.5]`` beside ``algorithm = ['dfl', 'cdfl']``); it is refused where
    no point reads it, or, listing several values, where among the points that share every other grid value
    no two read it. A bundle's table is refused where none of its points reads one of its fields
    (``{algorithm = 'dfl', gamma = 0.5}``). Then two points that are one run once the fields they do not
    read are set aside (:func:`_run_settings`) are refused: ``alpha = [0.1, 10.0]`` beside ``partition =
    ['shards', 'dirichlet']`` (shards trained twice; a bundle says it once), sync's tau1 = 1 beside tau1 =
    2, ``{algorithm = 'dfl'}`` beside ``{algorithm = 'dfl', compressor = 'identity'}``."""
    taking: dict[str, tuple[str, dict[str, Any], list[GridPoint]]] = {}  # each table and its points
    for point in points:
        for key, table in point.tables.items():
            entry = taking.setdefault(repr((key, sorted(table.items(), key=repr))), (key, table, []))
            entry[2].append(point)
    for key, table, group in taking.values():  # as a plain axis: refused where none of its points reads it
        for name in table:
            why = [dict(p.config.without_effect([name])).get(name) for p in group]
            if all(why):
                raise InputError(
                    f"grid file {str(path)!r}: [grid] {key}: the table {table!r} sets {name} = "
                    f"{table[name]!r}, which changes nothing at any of its points: {why[0]} (expected fields "
                    "its runs read)"
                )
    bundled = {n for p in points for t in p.tables.values() for n in t}
    for name in [n for n in (points[0].values if points else ()) if n not in bundled]:
        idle = [dict(p.config.without_effect([name])).get(name) for p in points]
        if not any(idle):
            continue
        groups: dict[str, int] = {}
        for point, reason in zip(points, idle, strict=True):
            others = repr(sorted((k, repr(v)) for k, v in point.values.items() if k != name))
            groups[others] = groups.get(others, 0) + (reason is None)
        values = {repr(p.values[name]) for p in points}
        if all(idle) or (len(values) > 1 and max(groups.values()) < 2):  # (one value read somewhere: kept)
            shown = ", ".join(dict.fromkeys(repr(p.values[name]) for p in points))
            raise InputError(
                f"grid file {str(path)!r}: [grid] {name} = [{shown}] changes nothing: "
                f"{next(w for w in idle if w)} (expected a field these runs read)"
            )
    seen: dict[str, GridPoint] = {}
    for point in points:
        settings = json.dumps(_run_settings(point.config), sort_keys=True, default=repr)
        if settings in seen:
            first = seen[settings]
            differ = [
                k for k, v in asdict(point.config).items() if k != "out" and getattr(first.config, k) != v
            ]
            ignored = dict(first.config.without_effect(differ)) | dict(point.config.without_effect(differ))
            unread = "; ".join(f"{k}: {w}" for k, w in ignored.items())
            raise InputError(
                f"grid file {str(path)!r}: the points {first.values} and {point.values} are one run "
                f"({unread or 'the same settings'}; expected each run once: fields that only go together "
                "take a bundle, m = [{...}, {...}])"
            )
        seen[settings] = point


def refuse_one_matrix_twice(points: list[GridPoint], digests: list[dict[str, str]], path: str | Path) -> None:
    """InputError for two points that differ only in how their graph is written (``topology``, ``weights``)
    and build one mixing matrix C (``digests``: each point's :attr:`sim.setup.Setup.digests`): an edges file
    named two ways (``edges:e.txt``, ``edges:./e.txt``), or 'paper' beside 'metropolis' weights on a ring,
    where they give one C, trained one run twice (a probe)."""
    seen: dict[str, GridPoint] = {}
    for point, digest in zip(points, digests, strict=True):
        settings = _run_settings(point.config) | {
            "topology": None,
            "weights": None,
            "C": digest["mixing_digest"],
        }
        key = json.dumps(settings, sort_keys=True, default=repr)
        if key in seen:
            raise InputError(
                f"grid file {str(path)!r}: the points {seen[key].values} and {point.values} are one run: "
                f"their topologies give one mixing matrix C (digest {digest['mixing_digest']}; expected each "
                "run once)"
            )
        seen[key] = point


def _run_settings(config: RunConfig) -> dict[str, Any]:
    """The settings that make ``config``'s run what it is: every field but ``out``, a field the run does not
    read (:meth:`RunConfig.without_effect`) as None, and tau1 / tau2 as the algorithm fixes them (sync's
    tau1 = 1 and tau1 = 2 are one run)."""
    settings = {k: v for k, v in asdict(config).items() if k != "out"}
    settings |= dict.fromkeys((name for name, _ in config.without_effect(settings)), None)
    record = algorithm(config.algorithm)
    fixed = {name: getattr(record, name) for name in ("tau1", "tau2")}
    return settings | {name: value for name, value in fixed.items() if value is not None}


FOLDER_NAME_LIMIT = 200
"""The longest run folder name a grid point gets (file systems take 255 bytes): longer ones are cut and end
with a hash of the whole name, so two points still get two folders."""


def _folder_name(values: dict[str, Any]) -> str:
    """``field=value`` joined by ``_``, every run of characters but letters, digits and ``.=+-`` replaced by
    ``-`` (``+`` stays: eta = 1e+30 and 1e-30 got one folder), cut to FOLDER_NAME_LIMIT characters."""
    whole = "_".join(f"{k}={v}" for k, v in values.items())
    name = re.sub(r"[^A-Za-z0-9.=+\-_]+", "-", whole)
    if len(name) <= FOLDER_NAME_LIMIT:
        return name
    digest = hashlib.sha1(whole.encode()).hexdigest()[:12]
    return f"{name[: FOLDER_NAME_LIMIT - 13]}-{digest}"


def finished_summary(config: RunConfig) -> dict[str, Any] | None:
    """The summary of a finished run of exactly ``config`` in its folder (same fingerprint and steps; a run
    that diverged at step t is the same run with other steps where its first t steps keep their kinds,
    :func:`_same_until`: it diverges at t again), else None. Whether its inputs are still the same (an
    edited edges: file or npz data set was reported with the old results, a probe) is
    :func:`changed_inputs`'s, which needs them loaded."""
    folder = Path(config.out)
    done = finished_run(folder, config.steps)
    if done is None:
        return None
    old = run_record(folder)
    differ = _differences(old, config)
    if (
        done["diverged"]
        and isinstance(old.get("steps"), int)
        and _same_until(config, old["steps"], done["steps"])
    ):
        differ.pop("steps", None)  # (raising a sweep's steps refused it: no checkpoint to continue)
    if differ or _params_missing(config, done):
        return None
    return {**done, "out_dir": str(folder)}  # a sweep copied or moved: where the run is now, not was


def _params_missing(config: RunConfig, summary: dict[str, Any]) -> bool:
    """Whether ``config`` asks for params.npz (``save_params``, no setting of the run's training) and the
    finished run lacks it: then its final checkpoint is resumed, which writes it (a sweep given save_params
    after it ran reused its runs without one, a review). A diverged run's parameters are not finite: none."""
    diverged = summary.get("diverged") is True
    return config.save_params and not diverged and not (Path(config.out) / "params.npz").is_file()


def _same_until(config: RunConfig, steps_before: int, t: int) -> bool:
    """Whether a run of ``config`` with another number of steps, ``steps_before``, took its first ``t`` steps
    as ``config`` takes them: then a run that diverged at step t is the same run (the last, partial round
    is all local steps: T = 10 and 30 of tau = (1, 20) differ from step 2 on, a review)."""
    return t <= config.steps and keeps_steps_taken(
        config.algorithm, config.tau1, config.tau2, steps_before, config.steps, t
    )


def changed_inputs(summary: dict[str, Any], digests: dict[str, str] | None) -> list[str]:
    """The digests (mixing_digest, data_digest) a finished run's summary records that ``digests``
    (:func:`sim.setup.current_digests`: its run's now) differ from; none where either does not say
    (summaries before 2026-11-29 have none)."""
    return [k for k, v in (digests or {}).items() if summary.get(k, v) != v]


def refuse_overwrite(config: RunConfig, digests: dict[str, str] | None = None) -> None:
    """With ``--resume``, for a point that is neither finished as ``config`` says (:func:`finished_summary`)
    nor checkpointed: InputError where its folder holds a finished run (a summary.json) all the same, which
    would be trained again from step 0 and its results replaced (its checkpoint removed to save disk, then
    the grid edited). The message names the settings that differ."""
    folder = Path(config.out)
    if not (folder / "summary.json").exists():
        return
    old = run_record(folder)
    differ = ", ".join(f"{k} = {old[k]!r} -> {v!r}" for k, v in _differences(old, config).items() if k in old)
    summary = json_object(folder / "summary.json")
    inputs = changed_inputs(summary, digests)
    what = {"mixing_digest": "its mixing matrix C (an edited edges:/matrix: file?)",
            "data_digest": "its data set (an edited npz: file?)"}  # fmt: skip
    why = (
        f"its settings differ: {differ}"
        if differ
        else f"{' and '.join(what[k] for k in inputs)} changed since it ran"
        if inputs
        else "save_params asks for its params.npz, which only its checkpoint could give"
        if _params_missing(config, summary)
        else f"its config.json, summary.json or metrics.csv is unreadable or stops before step {config.steps}"
    )
    raise InputError(
        f"resume: {str(folder)!r} holds a finished run without a checkpoint, which the sweep would train "
        f"again from step 0 ({why}; expected the grid it ran with, another --out, or that folder removed to "
        "train it again)"
    )


def _differences(old: dict[str, Any], config: RunConfig) -> dict[str, Any]:
    """The fields that shape a run (its fingerprint, and its steps) whose value in ``config`` differs from the
    run record ``old`` (a config.json), with their values in ``config`` (a field ``old`` lacks differs)."""
    now = fingerprint(config) | {"steps": config.steps}
    return {k: v for k, v in now.items() if old.get(k) != v}
