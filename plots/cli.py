"""``dfl-plot RUN_DIR [RUN_DIR ...] [--x step|model_time] [--out FILE]``: draw runs' curves (PNG + PDF).

Each run's legend label is its folder (with as many parent folders as it takes to tell runs apart)
and up to MAX_SETTINGS settings of its ``config.json`` that differ between the runs. A folder without a
usable ``metrics.csv`` (missing, unreadable, without the needed columns, or with no rows; a sweep's or
plan's folder, named as such), a folder given twice and an unwritable output are one-line errors (exit
2); a dfl-check probe's folder among runs is left out with a note, and a run that has not ended (no
``summary.json``) is labelled as unfinished. ``--out`` naming a folder puts ``curves.png`` and
``curves.pdf`` in it; without ``--out`` they go into the run's folder, or, for several runs in one folder
(a sweep's), that folder.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from bounds import InputError
from bounds.cli_tools import OneLineParser, cli_entry
from plots.figures import RUN_PANELS, run_curves, save
from sim.run_folder import FOLDER_MARKERS, json_object, json_object_or_none, run_ended

IGNORED_SETTINGS = (
    "out",
    "resume",
    "resolved",
    "threads",
    "checkpoint_every",
    "checkpoint_seconds",
    "timeout",
    "allow_change",
    "changes",
)


def read_metrics(folder: Path, x: str, note: Callable[[str], None] = lambda line: None) -> pd.DataFrame:
    """A run's metrics.csv with the columns the figure needs, numbers in them, and at least one row.

    dfl-sim writes a row and its newline at once, so a last line without a newline is a row cut off (a run
    still writing, or stopped mid-row): it is left out, and ``note`` is told (its cut number would
    otherwise be drawn: ``3.5e-09`` cut to ``3.5e-0``). A cell that is not a number is an InputError
    naming its row and column."""
    _check_run_folder(folder)
    path = folder / "metrics.csv"
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise InputError(f"{path} {what} (expected a dfl-sim run folder)")
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path} is not a readable CSV ({exc}; expected a dfl-sim metrics.csv)") from None
    if text and not text.endswith("\n") and "\n" in text:
        text = text[: text.rindex("\n") + 1]
        note(f"{path}: its last line is cut off (a run still writing, or stopped mid-row): left out")
    try:
        frame = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:  # (one line: pandas' ends in a newline)
        why = " ".join(str(exc).split())
        raise InputError(f"{path} is not a readable CSV ({why}; expected a dfl-sim metrics.csv)") from None
    needed = (x, *(c for c, _ in RUN_PANELS))
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise InputError(f"{path} lacks the columns {', '.join(missing)} (expected a dfl-sim metrics.csv)")
    if frame.empty:
        raise InputError(f"{path} has no rows yet (expected at least one logged step)")
    for column in needed:
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.isna() & frame[column].notna()
        if bad.any():
            row = int(bad.to_numpy().argmax())
            raise InputError(
                f"{path}: {column} = {frame[column].iloc[row]!r} in row {row + 1} is not a number "
                "(expected a dfl-sim metrics.csv)"
            )
        frame[column] = values
    _check_steps_increase(frame, path)
    return frame


def _check_steps_increase(frame: pd.DataFrame, path: Path) -> None:
    """InputError where a row's step is not above the one before (dfl-sim writes them in order: a row
    appended or copied by hand was drawn as a line back to its step, a probe)."""
    steps = pd.to_numeric(frame["step"], errors="coerce").to_numpy() if "step" in frame else None
    if steps is None or len(steps) < 2:
        return
    back = steps[1:] <= steps[:-1]
    if back.any():
        row = int(back.argmax()) + 2
        raise InputError(
            f"{path}: step = {steps[row - 1]:g} in row {row} follows step {steps[row - 2]:g} (expected steps "
            "that increase, as dfl-sim writes them; a row added or repeated by hand?)"
        )


RUN_GLOBS = {"sweep": "*/", "plan": "runs/*/"}
"""Where the run folders of a sweep's and a plan's folder lie, for the command a refusal suggests."""


def _job_kind(folder: Path) -> str | None:
    """'sweep' or 'plan' where ``folder`` is such a job's folder (:data:`sim.run_folder.FOLDER_MARKERS`)."""
    return next((k for k in RUN_GLOBS if any((folder / m).is_file() for m in FOLDER_MARKERS[k])), None)


def _check_run_folder(folder: Path) -> None:
    """InputError for what is not a run folder, saying what it is: missing, a file (one of a sweep's or a
    plan's folder: dfl-plot runs/grid/* took in sweep.json), a sweep's or a plan's folder (whose runs lie
    below it)."""
    if not folder.exists():
        raise InputError(f"run folder {str(folder)!r} does not exist (expected a dfl-sim run folder)")
    if not folder.is_dir():
        kind = _job_kind(folder.parent)
        if kind:
            raise InputError(
                f"{str(folder)!r} is a file of a dfl-sim {kind} folder (expected run folders: dfl-plot "
                f"{folder.parent}/{RUN_GLOBS[kind]})"
            )
        raise InputError(
            f"{str(folder)!r} is a file (expected a dfl-sim run folder, such as {str(folder.parent)!r})"
        )
    if (folder / "metrics.csv").exists():
        return
    kind = _job_kind(folder)
    if kind:
        raise InputError(
            f"{str(folder)!r} is a dfl-sim {kind} folder (expected its run folders: dfl-plot "
            f"{folder}/{RUN_GLOBS[kind]})"
        )
    if (folder / "report.json").is_file() and (folder / "cache").is_dir():  # (the generic refusal: a probe)
        raise InputError(
            f"{str(folder)!r} is a dfl-check report folder (its figures are in {str(folder / 'figures')!r}; "
            f"expected run folders: dfl-plot {folder}/runs/NAME/)"
        )
    if _is_probe(folder):
        raise InputError(
            f"{str(folder)!r} is a dfl-check probe's folder (probe.json, no metrics.csv; expected a run's)"
        )


def _is_probe(folder: Path) -> bool:
    """A dfl-check probe's folder (probe.json, no metrics.csv): a check's measurement, not a run."""
    return (folder / "probe.json").is_file() and not (folder / "metrics.csv").exists()


def _without_probes(folders: list[Path], note: Callable[[str], None]) -> list[Path]:
    """``folders`` less the dfl-check probe folders among them, each named to ``note``: ``dfl-plot
    OUT/runs/*/`` of a dfl-check --out folder takes them in beside its runs (it stopped at the first). Only
    probes: the first is refused as such (:func:`_check_run_folder`)."""
    probes = [f for f in folders if _is_probe(f)]
    if not probes or len(probes) == len(folders):
        return folders
    for folder in probes:
        note(f"{folder} is a dfl-check probe's folder (probe.json, no curves): left out")
    return [f for f in folders if f not in probes]


def _ending_note(folder: Path, frame: pd.DataFrame) -> str:
    """' [unfinished: step S of T]' for a run that has not ended (a curve that ends early must not pass for a
    finished one): its config.json and no summary.json, or a summary of fewer steps than config.json's that
    did not diverge (a finished run resumed with a larger --steps keeps its old summary until it ends);
    ' [diverged at step S]' for a run its summary says diverged (the 1000-fold loss rule stops a run whose
    loss is still finite); ' [summary.json unreadable]' (or config.json) where one is there but holds no JSON
    object (a cut-off summary.json drew a diverged run as finished, a probe); else ''."""
    read = {name: json_object_or_none(folder / name) for name in ("config.json", "summary.json")}
    unreadable = [name for name, value in read.items() if value is None]
    if unreadable:
        return f" [{' and '.join(unreadable)} unreadable]"
    config, summary = read["config.json"] or {}, read["summary.json"] or {}
    steps, done = config.get("steps"), summary.get("steps")
    last = frame["step"].max() if "step" in frame else float("nan")
    if summary.get("diverged"):  # stopped by the loss rule with finite losses: no NaN for the curve to show
        return f" [diverged at step {done}]" if isinstance(done, int) else " [diverged]"
    if not config or run_ended(config, summary if (folder / "summary.json").exists() else None):
        return ""
    of = f" of {steps}" if isinstance(steps, int) else ""
    return f" [unfinished: step {last:g}{of}]" if last == last else " [unfinished]"


def labels(folders: list[Path]) -> list[str]:
    """Folder names made unique with parent folders, plus the config settings that differ (numbers to 4
    significant digits, at most MAX_SETTINGS of them, then how many more)."""
    resolved = [f.resolve() for f in folders]
    twice = next((f for f, r in zip(folders, resolved, strict=True) if resolved.count(r) > 1), None)
    if twice is not None:
        raise InputError(f"run folder {str(twice)!r} is given twice (expected each run once)")
    depth = 1
    names = [r.name for r in resolved]
    while len(set(names)) < len(names) and depth < 8:
        depth += 1
        names = ["/".join(r.parts[-depth:]) for r in resolved]
    configs = [json_object(f / "config.json") or None for f in folders]
    known = [c for c in configs if c is not None]
    keys = sorted({k for c in known for k in c} - set(IGNORED_SETTINGS))
    differ = [k for k in keys if len({json.dumps(c.get(k), sort_keys=True) for c in known}) > 1]
    if len(folders) < 2 or not differ:
        return names
    shown, more = differ[:MAX_SETTINGS], len(differ) - MAX_SETTINGS
    tail = f", +{more} more" if more > 0 else ""
    return [
        f"{name} ({', '.join(f'{k}={_short(c.get(k))}' for k in shown)}{tail})" if c is not None
        else f"{name} (no config.json)"
        for name, c in zip(names, configs, strict=True)
    ]  # fmt: skip


MAX_SETTINGS = 6


def _short(value: object) -> str:
    """A setting as a legend shows it: floats to 4 significant digits."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _default_target(folders: list[Path]) -> Path:
    """Where the figure goes without --out: a run's own folder (curves), for several runs the folder that
    holds them all where they share one (a sweep's: curves), else the first run's folder as ``comparison``
    (a comparison of unrelated runs replaced the first run's own figure, a probe's finding; not cwd or /)."""
    parents = {f.resolve().parent for f in folders}
    if len(folders) == 1:
        return folders[0] / "curves"
    return folders[0].parent / "curves" if len(parents) == 1 else folders[0] / "comparison"


@cli_entry("dfl-plot")
def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="dfl-plot", description="Draw the curves of dfl-sim runs.")
    parser.add_argument("runs", nargs="+", help="run folders (each with metrics.csv)")
    parser.add_argument("--x", choices=("step", "model_time"), default="step", help="horizontal axis")
    out = (
        "output file; its suffix picks the format (png, pdf, svg, ...), without one NAME.png and NAME.pdf; "
        "a folder: FOLDER/curves.png and .pdf"
    )
    parser.add_argument("--out", help=out + " (default RUN_DIR/curves.png and .pdf)")
    args = parser.parse_args(argv)
    folders = [Path(f) for f in args.runs]
    try:
        if args.out is not None and not args.out.strip():  # (an unset $OUT drew into the first run's folder)
            raise InputError(
                f"--out = {args.out!r} is empty (expected a file or folder; leave it out for the first run's "
                "folder)"
            )
        note = lambda line: print(f"dfl-plot: {line}", file=sys.stderr)  # noqa: E731
        folders = _without_probes(folders, note)
        curves = [read_metrics(f, args.x, note) for f in folders]
        names = [
            name + _ending_note(folder, frame)
            for name, folder, frame in zip(labels(folders), folders, curves, strict=True)
        ]
        frames = dict(zip(names, curves, strict=True))
        target = Path(args.out) if args.out is not None else _default_target(folders)
        if target.is_dir() or (args.out or "").endswith("/"):  # a folder: the figure goes into it
            target = target / "curves"
        try:
            paths = save(run_curves(frames, args.x), target)
        except OSError as exc:
            blocking = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
            why = f"{blocking} is a file, not a folder" if blocking else exc.strerror or exc
            raise InputError(f"cannot write {target} ({why}; expected a writable path)") from None
    except InputError as exc:
        print(f"dfl-plot: error: {exc}", file=sys.stderr)
        return 2
    print("wrote " + " and ".join(str(p) for p in paths))
    return 0
