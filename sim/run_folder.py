"""What a run folder holds and who may write it: the metrics columns, the folder lock, the checks a
``--resume`` makes of the files an earlier run left there (before anything in the folder changes), and
:func:`atomic_write`, by which every result file is written (torch-free: dfl-plot and dfl-check use it).

The lock is ``flock`` on ``OUT/.dfl-sim.lock`` (its text: the holder's process id), held from the moment
the folder is prepared until the run, sweep or plan ends: a second run into a folder that a run is writing
is refused with the first one's process id. The kernel drops the lock when its process dies, however it
dies, so a killed run never leaves its folder locked.
"""

from __future__ import annotations

import csv
import errno
import fcntl
import json
import os
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from bounds import InputError
from bounds.serialize import numbers_restored

__all__ = [
    "COLUMNS",
    "FOLDER_MARKERS",
    "LOCK_NAME",
    "atomic_write",
    "check_metrics_file",
    "check_path_length",
    "finished_run",
    "json_object",
    "json_object_or_none",
    "lock_folders",
    "refuse_interrupted",
    "refuse_other_kind",
    "release_folders",
    "run_ended",
    "run_record",
    "shown_path",
]

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
"""The columns of a run's metrics.csv, in order."""

FOLDER_MARKERS = {"run": ("config.json", "checkpoint.pt"), "sweep": ("sweep.json",), "plan": ("plan.json",)}
"""The files that make a folder a run's, a sweep's or a plan's (a sweep writes sweep.json as it starts)."""


def refuse_other_kind(out: Path, kind: str) -> None:
    """InputError where ``out`` is the folder of another kind of job than ``kind`` (run, sweep or plan): its
    files would go in beside the other's, and an interrupted run there could not be resumed."""
    for other, markers in FOLDER_MARKERS.items():
        if other != kind and any((out / m).is_file() for m in markers):
            raise InputError(
                f"out = {shown_path(out)} is a dfl-sim {other} folder (expected a folder of the {kind}'s "
                f"own, such as {shown_path(out / kind)})"
            )
    if out.name == "runs" and any((out.parent / m).is_file() for m in FOLDER_MARKERS["plan"]):
        raise InputError(  # (a plan written there broke dfl-plot PLAN/runs/*/, a probe)
            f"out = {shown_path(out)} is the folder of a dfl-sim plan's runs (expected a folder of the "
            f"{kind}'s own, such as {shown_path(out.parent.parent / kind)})"
        )


LOCK_NAME = ".dfl-sim.lock"
_held: dict[Path, tuple[IO[str], int]] = {}  # folder (resolved) -> this process's open lock file, holders


def refuse_interrupted(folders: Iterable[Path], how: str) -> None:
    """InputError where a fresh run (no ``--resume``) would start in a folder that holds an interrupted run
    (a config.json and a checkpoint.pt, and no summary.json of its steps, :func:`run_ended`): starting
    deletes its checkpoint (:func:`sim.setup.prepare_outs`), and forgetting ``--resume`` after Ctrl-C lost
    5,713 steps without a word (a probe). A folder another process is writing now is refused as in use
    (:func:`lock_folders`), not as interrupted. ``how``: how to continue it, for the message. The command
    lines call it; the library's callers (the planner, the paper checks) resume or restart by their own
    rules."""
    for out in folders:
        try:
            if not all((out / m).is_file() for m in FOLDER_MARKERS["run"]):
                continue
            summary = json_object(out / "summary.json") if (out / "summary.json").exists() else None
        except OSError:  # a name too long, say: the run's own checks of its folder name it
            continue
        if run_ended(run_record(out), summary):
            continue
        lock_folders([out])  # (a live run's folder: "in use by another run (process N)")
        release_folders([out])
        raise InputError(
            f"out = {shown_path(out)} holds an interrupted run (a checkpoint.pt, no summary.json of its "
            f"steps), which a new run there would delete: {how} (expected --resume, another --out, or its "
            "checkpoint.pt removed to start again)"
        )


def lock_folders(folders: Iterable[Path]) -> None:
    """Take the lock of every folder (they exist), or none: InputError naming the first folder another
    process holds, and its process id. A folder this process holds already is counted once more (each
    take is matched by a :func:`release_folders`). Where the file system cannot lock (some network
    mounts), a warning says so and the run goes on unguarded."""
    taken: list[Path] = []
    try:
        for folder in folders:
            key = folder.resolve()
            if key in _held:
                fh, holders = _held[key]
                _held[key] = (fh, holders + 1)
                taken.append(key)
                continue
            fh = (key / LOCK_NAME).open("a+")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except (BlockingIOError, PermissionError):  # EAGAIN / EACCES: another process holds it
                fh.seek(0)
                owner = fh.read().strip() or "unknown"
                fh.close()
                raise InputError(
                    f"out = {str(folder)!r} is in use by another run (process {owner}; expected a folder no "
                    "run is writing: wait for that run to end, or give another --out)"
                ) from None
            except OSError as exc:  # ENOLCK, EOPNOTSUPP: this file system has no locks
                warnings.warn(
                    f"cannot lock {folder} ({exc.strerror}): runs into it are not kept apart", stacklevel=2
                )
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            _held[key] = (fh, 1)
            taken.append(key)
    except BaseException:
        release_folders(taken)
        raise


def release_folders(folders: Iterable[Path | str]) -> None:
    """Give back one take of each of ``folders`` (those this process does not hold are skipped); the lock
    itself goes with the last."""
    for folder in folders:
        key = Path(folder).resolve()
        if key not in _held:
            continue
        fh, holders = _held.pop(key)
        if holders > 1:
            _held[key] = (fh, holders - 1)
        else:
            fh.close()


def run_record(folder: Path) -> dict[str, Any]:
    """The config.json a run wrote in ``folder`` as a dict; {} where there is none or it cannot be read
    (its readers fall back to what they know without it)."""
    return json_object(folder / "config.json")


def json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; {} where the file is missing, unreadable or holds no object."""
    return json_object_or_none(path) or {}


def json_object_or_none(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; {} where there is no file, None where one is there but holds no JSON
    object (cut off, not UTF-8, a folder, another JSON value)."""
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def run_ended(config: dict[str, Any], summary: dict[str, Any] | None) -> bool:
    """Whether a run folder's run ended, from its config.json and its summary.json (None: there is none): its
    summary says it diverged, or holds config.json's steps (a finished run resumed with a larger --steps
    keeps its old summary until it ends)."""
    if summary is None:
        return False
    steps, done = config.get("steps"), summary.get("steps")
    return bool(summary.get("diverged")) or not (
        isinstance(steps, int) and isinstance(done, int) and done < steps
    )


PATH_MAX = 4096
"""The longest path Linux takes in a system call, in bytes (with its closing NUL: 4095 usable)."""
FILE_NAME_ROOM = 64
"""Bytes a run folder's path leaves for the names of the files in it (checkpoint.pt and its temporary)."""


def shown_path(path: Path | str) -> str:
    """``path`` quoted, its middle cut where it is long (a message of 4,000 bytes of path reads as none)."""
    text = str(path)
    return repr(text) if len(text) <= 100 else f"{text[:60]!r}...{text[-30:]!r}"


FOLDER_ROOM = FILE_NAME_ROOM + len("runs/") + 255
"""Bytes a plan's folder leaves for its runs' folders (runs/NAME, a name of up to 255 bytes) and their files:
an --out 12 bytes under the plain limit failed after the estimates, 'File name too long' (a review)."""


def check_path_length(folder: Path | str, name: str, room: int = FILE_NAME_ROOM) -> None:
    """InputError where ``folder``'s full path leaves less than ``room`` bytes within the system's PATH_MAX
    for what a run, sweep or plan writes in it (its lock file failed and the folders were made, a probe; a
    sweep's own --out said 'File name too long' with status 1, a review). ``name``: the flag or field it came
    from; ``room``: a plan's :data:`FOLDER_ROOM`, whose runs lie in folders of their own."""
    longest = PATH_MAX - room
    size = len(os.fsencode(os.path.abspath(folder)))
    if size > longest:
        raise InputError(
            f"{name} = {shown_path(folder)} is not a usable folder path (its full path is {size:,} bytes; "
            f"expected at most {longest:,}, room for the files within the system's limit)"
        )


SUMMARY_KEYS = frozenset({"final_train_loss", "final_test_accuracy", "final_consensus", "steps", "diverged"})
"""What every run's summary.json holds (:meth:`sim.loop.RunRecorder.finish`)."""
SUMMARY_TEXT = ("out_dir", "message", "mixing_digest", "data_digest")
"""The fields of a summary that hold text, not numbers."""


def finished_run(folder: Path, steps: int) -> dict[str, Any] | None:
    """The summary.json of the whole run of ``steps`` steps in ``folder``, else None: a summary object that
    says ``steps`` (or that the run diverged), and a metrics.csv whose last row is that step (or the step it
    diverged at). A summary alone was taken for the run where its metrics.csv was cut short: a loss at step
    12 of 180 judged (a probe). Who reuses a run also checks that its settings are the ones wanted
    (:func:`sim.grid.finished_summary`, ``paper_checks.experiments``)."""
    summary = numbers_restored(json_object(folder / "summary.json"), SUMMARY_TEXT)
    diverged = summary.get("diverged") is True
    if not SUMMARY_KEYS <= set(summary) or not (diverged or summary.get("steps") == steps):
        return None  # (a hand-made {"steps": 20} was a finished run, then a KeyError)
    try:
        text = (folder / "metrics.csv").read_text()
        logged = int(text.rstrip("\n").rsplit("\n", 1)[-1].split(",", 1)[0])
    except (OSError, ValueError):  # missing, not a run's file
        return None
    if not text.endswith("\n"):  # cut inside its last row ('20,2,loc' was taken whole, a review)
        return None
    return summary if logged == summary.get("steps") else None


def check_metrics_file(path: Path) -> None:
    """A metrics.csv a resumed run will continue: absent, or a readable CSV whose header is COLUMNS.
    InputError otherwise (a resume would drop the rows it cannot read: a file of another version, with
    other columns, lost every row before the checkpoint's step)."""
    if not path.exists():
        return
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), None)
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InputError(
            f"resume: {str(path)!r} cannot be read ({why}; expected the run's metrics.csv)"
        ) from None
    if header is None:  # empty: the run was killed before its first row
        return
    if tuple(header) != COLUMNS:
        missing = [c for c in COLUMNS if c not in header]
        extra = [c for c in header if c not in COLUMNS]
        parts = [
            f"lacks {', '.join(missing)}" if missing else "",
            f"has {', '.join(extra)} besides" if extra else "",
        ]
        what = "; ".join(filter(None, parts)) or "has them in another order"
        raise InputError(
            f"resume: {str(path)!r} {what} (expected the columns {', '.join(COLUMNS)}: a metrics.csv of "
            "another version of dflkit; move it away to resume, its rows are then not continued)"
        )


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` a temporary file, flush it to the disk (fsync), then rename it to ``path`` and flush the
    folder: a reader sees the old file or the new one whole, after a killed process and after a power loss
    too. A failed write (a full disk) removes the temporary file and leaves ``path`` as it was."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        write(tmp)
        _fsync(tmp)
        os.replace(tmp, path)
    except OSError as exc:  # named by the file meant, not by its temporary twin (a folder in the way, say)
        tmp.unlink(missing_ok=True)
        if exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync(path.parent)  # the rename itself (best effort: not every system can open a folder)


def _fsync(path: Path) -> None:
    """Flush ``path`` (a file or a folder) to the disk, where the file system can: one that refuses fsync
    (EINVAL on some network and FUSE file systems, or on a folder) leaves it to the page cache, as before."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        if path.is_dir():
            return
        raise
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF) and not path.is_dir():
            raise
    finally:
        os.close(fd)
