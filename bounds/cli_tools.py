"""What the four command-line tools share: an argument parser that fails in one line, tables, and an
entry point that ends quietly when its reader closes the pipe.

``dfl-bounds``, ``dfl-sim``, ``dfl-check`` and ``dfl-plot`` report a bad argument as
``PROG: error: MESSAGE`` on one line and exit 2 (argparse's default prints the usage first).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from bounds._checks import InputError

__all__ = [
    "OneLineParser", "bar_interval", "cli_entry", "entry", "key_value_table", "nearest_existing",
    "rows_table", "stopped_by", "writable_folder",
]  # fmt: skip

# what float() reads as a negative number: -1, -.5, -1e-3, -inf, -nan (argparse's own pattern has no
# exponent and no inf/nan)
NEGATIVE_NUMBER = re.compile(r"^-(?:(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|inf|infinity|nan)$", re.IGNORECASE)
SIGPIPE_STATUS = 141  # what a shell reports for a process ended by SIGPIPE (128 + 13)
INTERRUPTED_STATUS = 130  # what a shell reports for a process ended by Ctrl-C (128 + SIGINT 2)


def cli_entry(prog: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """A CLI's ``main`` that ends in one line however it is stopped. Output cut off by its reader
    (``dfl-bounds ... | head``): status 141, as a process killed by SIGPIPE, not a BrokenPipeError traceback
    (the Python documentation's recipe: stdout pointed at /dev/null, so that the flush at exit cannot fail
    again). Ctrl-C where the command has no handler of its own (torch's start-up, a figure being drawn):
    ``PROG: interrupted`` and status 130, not a KeyboardInterrupt traceback (a probe). SIGTERM as Ctrl-C
    (:func:`sigterm_as_ctrl_c`)."""

    def decorate(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def wrapped(*args: Any, **kwargs: Any) -> int:
            try:
                with sigterm_as_ctrl_c():
                    code = main(*args, **kwargs)
                sys.stdout.flush()
                return code
            except BrokenPipeError:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return SIGPIPE_STATUS
            except KeyboardInterrupt:
                print(f"{prog}: interrupted", file=sys.stderr)
                return INTERRUPTED_STATUS

        return wrapped

    return decorate


def entry(module: str, prog: str, argv: Sequence[str] | None = None) -> int:
    """Run the ``main`` of the CLI ``module`` (each package's ``__main__.main``, the console scripts' entry
    point). The module, whose imports take up to 0.8 s (pandas, matplotlib, scipy), is imported inside the
    same one line for Ctrl-C as :func:`cli_entry` gives its ``main`` (a KeyboardInterrupt traceback during
    them before, a review). A command stopped by Ctrl-C (status 130, its one line said) then ends by SIGINT,
    as a Ctrl-C'd process should (:func:`_end_by_sigint`): a shell loop of commands stops there (it went on
    to the next one, taking status 130 as handled). One stopped by SIGTERM exits 130 (:func:`stopped_by`)."""
    global _stop_signal
    _stop_signal = None
    try:
        command = importlib.import_module(module).main
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        code = INTERRUPTED_STATUS
    else:
        code = command(argv)
    if code == INTERRUPTED_STATUS and (_stop_signal or signal.SIGINT) == signal.SIGINT:
        _end_by_sigint()
    if argv is None and code != INTERRUPTED_STATUS:  # the process is this command (a console script),
        _exit_on_late_stop(code)  # which Python now finalises
    return code


def _exit_on_late_stop(code: int) -> None:
    """From here on Ctrl-C or SIGTERM ends the process at once with the command's status ``code``: its work
    is done and said, and the signal came while Python finalised (threads joined, torch's atexit callbacks),
    which printed 'Exception ignored in atexit callback ... KeyboardInterrupt' and exited 0 (a probe).
    Only where the process is the command (:func:`entry` with ``argv`` None): a test's process keeps its
    handlers."""
    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum: int, frame: Any) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed or broken stream: nothing more to say
                pass
        os._exit(code)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """Within the block SIGTERM (what ``timeout``, ``kill`` and batch schedulers send) stops the command as
    Ctrl-C does, by ``KeyboardInterrupt``: what a command keeps on Ctrl-C it keeps (dfl-check's report, a
    figure written whole or not at all, a child process stopped), and :func:`stopped_by` notes the signal,
    so that the command exits 130 rather than by SIGINT (:func:`entry`). dfl-plot, dfl-bounds and
    ``dfl-sim versus`` ended at once without a line before, a figure's temporary file left behind. A
    handler of the command's own within the block (a run's checkpoint, :mod:`sim.interrupt`) takes over
    and restores this one; the previous handler is restored on leaving. In the main thread only (where
    Python delivers signals)."""
    inherited = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread() or inherited in (signal.SIG_IGN, None):
        yield  # (a SIGTERM the parent ignores, `trap '' TERM`, stays ignored, as Python keeps SIGINT)
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped_by(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


_stop_signal: int | None = None
"""The signal that first asked the running command to stop, where a handler said (:func:`stopped_by`)."""


def stopped_by(signum: int) -> None:
    """Note that signal ``signum`` asked the command to stop (the handlers that turn SIGTERM into a stop say
    so: :mod:`sim.interrupt`, dfl-check's). A command that returns status 130 with none noted was stopped by
    a KeyboardInterrupt, which Python raises for SIGINT only."""
    global _stop_signal
    if _stop_signal is None:
        _stop_signal = signum


def _end_by_sigint() -> NoReturn:
    """Raise KeyboardInterrupt out of the console script with its traceback silenced (the command said its
    line): Python then finalises (stdout flushed, atexit run) and ends the process by SIGINT (since 3.8)."""
    previous = sys.excepthook

    def quiet(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        if not issubclass(kind, KeyboardInterrupt):
            previous(kind, value, tb)

    sys.excepthook = quiet
    raise KeyboardInterrupt


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line and exits 2, and reads ``--L -1e-3`` or
    ``--mu -inf`` as an option with a (bad) value, for the validators to name, where argparse reads
    ``-1e-3`` and ``-inf`` as unknown options ("expected one argument")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


LOG_LINE_SECONDS = 10.0
"""Off a terminal (a log file, CI), a progress bar writes a line at most this often (``dfl-sim run``'s own
progress writes one every 10 s; tqdm's default 0.1 s wrote 118 lines in a 37 s sweep)."""


def bar_interval() -> float:
    """tqdm's ``mininterval`` for a bar on stderr: its default on a terminal, LOG_LINE_SECONDS elsewhere."""
    return 0.1 if sys.stderr.isatty() else LOG_LINE_SECONDS


def counted(n: int, noun: str) -> str:
    """'1 check', '2 checks' ('1 checks' was said, a probe)."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def text(value: Any) -> str:
    """A value as the tables print it: floats with 6 significant digits, or 12 where 6 would print one of
    -2, -1, 0, 1, 2 for what is none of them, values a spectrum's meaning turns on (zeta = 0.9999999987 of a
    10^5 ring read 'zeta : 1', a disconnected graph's; lambda_N = -0.99999998 read -1, a periodic C's;
    beta_mix 2)."""
    if not isinstance(value, float):
        return str(value)
    short = f"{value:.6g}"
    telling = float(short) in (-2.0, -1.0, 0.0, 1.0, 2.0) and float(short) != value
    return f"{value:.12g}" if telling else short


def rows_table(rows: list[dict[str, Any]]) -> list[str]:
    """Rows of dicts as an aligned table: a header of keys, then one line per row."""
    keys = list(dict.fromkeys(k for row in rows for k in row))
    cells = [[text(row.get(k, "")) for k in keys] for row in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    return ["  ".join(v.rjust(w) for v, w in zip(values, widths, strict=True)) for values in [keys, *cells]]


def key_value_table(out: dict[str, Any]) -> str:
    """A result as right-aligned ``key : value`` lines; nested dicts as ``key.sub``; row lists as tables."""
    names = [f"{k}.{sub}" for k, v in out.items() if isinstance(v, dict) for sub in v] + list(out)
    width = max(len(k) for k in names)
    lines: list[str] = []
    for key, value in out.items():
        if isinstance(value, dict):
            lines.extend(f"{f'{key}.{k}':>{width}} : {text(v)}" for k, v in value.items())
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            lines.append(f"{key:>{width}} :")
            lines.extend(" " * 2 + line for line in rows_table(value))
        else:
            lines.append(f"{key:>{width}} : {text(value)}")
    return "\n".join(lines)


def writable_folder(path: str | Path, what: str) -> Path:
    """``path``, created if need be and checked writable by a probe file; else InputError naming ``what``."""
    if not str(path).strip():  # Path("") is the current folder: an empty --out wrote there
        raise InputError(f"{what} = {str(path)!r} is empty (expected a folder path)")
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        try:  # as dfl-sim run words it: the file in the way, named
            near: Path | None = nearest_existing(folder)
        except OSError:  # a name too long, a folder that cannot be opened: exc says it
            near = None
        blocked = near is not None and near.is_file()
        why = f"a file is in the way: {str(near)!r}" if blocked else exc.strerror or str(exc)
        raise InputError(f"{what} = {str(path)!r} is not a writable folder ({why})") from None
    return folder


def nearest_existing(path: Path) -> Path:
    """``path`` or its nearest parent that exists (OSError where a name is too long or a folder cannot be
    opened)."""
    near = path
    while not near.exists() and near != near.parent:
        near = near.parent
    return near
