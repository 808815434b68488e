"""``dfl-check [--list] [--quick | --full] [--only ID ...] [--json] [--out DIR] [--cifar-dir DIR] [--device D]
[--jobs N]
[--estimate] [--time-sweep [--sample-every K]]``.

The paper's claims, checked. Before the checks start, one line on stderr estimates how long they will
take (:mod:`paper_checks.estimate`); a progress bar follows them, weighted by that estimate (or
counting checks while some were never timed in that folder).

Exit code 0 when the checks ran, whatever they found; 3 when some check could not run (its reason in the
table); 2 for bad arguments; 1 when the report could not be written; 130 when stopped (Ctrl-C, or SIGTERM
as `timeout` sends): the report of the checks that finished stays (it is rewritten after each check).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from bounds import InputError
from bounds.cli_tools import OneLineParser, bar_interval, cli_entry, writable_folder
from paper_checks.parallel import available_cores
from sim.config import check_device
from sim.host import retain_freed_memory

__all__ = ["main"]


COULD_NOT_RUN = 3
"""The exit status where some check could not run (a verdict of any kind exits 0: a violated claim is a
finding; a check without its data exited 0 too, and a script could not tell 'all ran' from 'none did', a
probe)."""


def _current_ids(ids: list[str] | None) -> list[str] | None:
    """``ids`` with the ids of before 2026-11-28 (:data:`~paper_checks.registry.RENAMED`) replaced by
    today's, each said once on stderr."""
    from paper_checks.registry import RENAMED

    if ids is None:
        return None
    for old in dict.fromkeys(i for i in ids if i in RENAMED):
        print(f"dfl-check: note: {old} is now {RENAMED[old]} (the paper's figure number)", file=sys.stderr)
    return [RENAMED.get(i, i) for i in ids]


@cli_entry("dfl-check")
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dfl-check`` / ``python -m paper_checks``."""
    parser = OneLineParser(
        prog="dfl-check",
        description="Check the DFL paper's claims against computation.",
        epilog="exit status: 0 when the checks ran, whatever their verdicts; 3 when some check could not "
        "run; 2 for bad arguments; 1 when the report could not be written; 130 when stopped",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="reduced grids (default)")
    mode.add_argument("--full", action="store_true", help="the full grids")
    parser.add_argument(
        "--only",
        nargs="+",
        action="extend",
        metavar="ID",
        help="run only these checks (--list names them; given twice, both lists)",
    )
    parser.add_argument("--list", action="store_true", help="list the checks' ids and stop")
    parser.add_argument(
        "--json", action="store_true", help="print the checks as JSON (with --estimate: the estimate)"
    )
    parser.add_argument("--out", default="paper_checks_out", help="report folder (default paper_checks_out)")
    parser.add_argument(
        "--cifar-dir",
        metavar="DIR",
        help="folder holding cifar-10-batches-py, for fig7-cifar (default: $DFLKIT_CIFAR10_DIR)",
    )
    parser.add_argument("--device", default="cpu", help="torch device of the simulations (default cpu)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=available_cores(),
        metavar="N",
        help="processes for the checks that split their cells (Monte Carlo, exact recursions; the results "
        "do not depend on it; default: every core this process may use, here %(default)s)",
    )
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="print the time estimate and stop (no check runs; the calibration times a few short runs)",
    )
    parser.add_argument(
        "--time-sweep",
        action="store_true",
        help="time the checks' simulations as one sweep against a sample of them run alone, print JSON "
        "and stop (the swept runs stay cached for the checks)",
    )
    parser.add_argument(
        "--sample-every", type=int, metavar="K", help="--time-sweep: time every K-th run alone (default 6)"
    )
    args = parser.parse_args(argv)
    args.only = _current_ids(args.only)
    quick = not args.full
    cores = available_cores()
    if not 1 <= args.jobs <= 4 * cores:  # 1,000,000 spawned a process per cell (200, 5 GB on 2 cores)
        print(f"dfl-check: error: --jobs = {args.jobs} (expected a whole number from 1 to {4 * cores}, four "
              f"times the {cores} cores this process may use)", file=sys.stderr)  # fmt: skip
        return 2
    try:
        retain_freed_memory()
        check_device(args.device)
        if args.sample_every is not None and not args.time_sweep:
            raise InputError(f"--sample-every = {args.sample_every} without --time-sweep (expected both)")
        if args.sample_every is None:
            args.sample_every = 6
        if args.sample_every < 1:
            raise InputError(f"--sample-every = {args.sample_every} (expected a whole number >= 1)")
        stops = [flag for flag, on in (("--list", args.list), ("--estimate", args.estimate),
                                       ("--time-sweep", args.time_sweep)) if on]  # fmt: skip
        if len(stops) > 1:  # each prints its own answer and stops: the others were dropped in silence
            raise InputError(
                f"{' and '.join(stops)} together (expected one of them: each stops after its answer)"
            )
        if not args.list:  # listing writes nothing
            out = writable_folder(args.out, "--out")
            _check_room(out)
    except InputError as exc:
        print(f"dfl-check: error: {exc}", file=sys.stderr)
        return 2

    if args.list:
        from paper_checks.registry import named_checks

        try:
            listed = named_checks(args.only)  # (--list --only nosuch listed everything, in silence)
        except InputError as exc:
            print(f"dfl-check: error: {exc}", file=sys.stderr)
            return 2
        if args.json:  # (--list --json printed the plain list)
            print(json.dumps([{"id": chk.id, "ref": chk.ref, "claim": chk.claim} for chk in listed]))
            return 0
        width = max(len(chk.id) for chk in listed)
        for chk in listed:
            print(f"{chk.id:<{width}}  {chk.ref}")
        return 0
    # the checks and torch, once the flags are read (seconds):
    from bounds.cli_tools import counted
    from paper_checks.estimate import estimate
    from paper_checks.report import run_checks, select, write_report  # --help and a bad flag answer at once
    from paper_checks.sweep_timing import time_sweep
    from sim.run_folder import atomic_write

    try:
        chosen, context = select(args.only, quick, out, args.cifar_dir, args.device, args.jobs)
    except InputError as exc:
        print(f"dfl-check: error: {exc}", file=sys.stderr)
        return 2
    if args.time_sweep:

        def keep(timing: dict) -> None:  # after each data set: a timing stopped midway keeps what it measured
            atomic_write(out / "sweep_timing.json", lambda tmp: tmp.write_text(json.dumps(timing, indent=1)))

        try:
            timing = time_sweep(  # (SIGTERM stops it as Ctrl-C: bounds.cli_tools.sigterm_as_ctrl_c)
                chosen,
                context,
                args.sample_every,
                lambda line: print(f"dfl-check: {line}", file=sys.stderr),
                keep,
            )
        except InputError as exc:
            print(f"dfl-check: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"dfl-check: interrupted; the data sets timed so far are in {out / 'sweep_timing.json'}",
                  file=sys.stderr)  # fmt: skip
            return 130
        print(json.dumps(timing))
        return 0
    guess = estimate(chosen, context, out / "cache")
    line = f"dfl-check: {counted(len(chosen), 'check')}, estimated {guess.line()}"
    print(line, file=sys.stderr, flush=True)
    if args.estimate:
        if args.json:
            print(json.dumps({"checks": [c.id for c in chosen], **guess.as_dict()}))
        return 0
    if guess.untimed:  # weights unknown for some checks: the bar counts checks
        shape, total = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} checks [{elapsed}]", len(chosen)
    else:  # weighted by the estimate: a long simulation moves it further than an exact check
        shape = "{desc}: {percentage:3.0f}%|{bar}| estimated {n_fmt}/{total_fmt} s [{elapsed}]"
        total = round(guess.seconds)
    # nothing left to wait for (every check cached or instant): no bar, which would end at 0/0 s
    quiet = args.json or total == 0
    bar = tqdm(total=total, desc="dfl-check", file=sys.stderr, disable=quiet, bar_format=shape,
               mininterval=bar_interval())  # fmt: skip

    finished: list[dict] = []

    def done(i: int, count: int, r: dict) -> None:  # a line per check: long runs are not silent
        finished.append(r)  # and the report so far, rewritten (without figures): a stopped run keeps it;
        if i < count:  # after the last check the whole report follows at once (its figures drawn once)
            write_report(finished, out, quick, [c.id for c in chosen])
        cached = " (cached)" if r.get("cached") else f" ({r['seconds']:.0f} s)"
        why = f": {_first_line(r['summary'])}" if r["status"] == "could not run" else ""
        bar.write(f"dfl-check: [{i}/{count}] {r['id']}: {r['status']}{cached}{why}", file=sys.stderr)
        bar.update(1 if guess.untimed else round(guess.per_check.get(r["id"]) or 0))

    with bar:
        try:
            results = run_checks(
                args.only,
                quick,
                out,
                args.cifar_dir,
                args.device,
                progress=done,
                workers=args.jobs,
                say=lambda line: bar.write(f"dfl-check: {line}", file=sys.stderr),
            )
        except KeyboardInterrupt:
            kept = (  # (before any check finished there is no report.md to point at: a probe)
                f"the checks that finished are in {out / 'report.md'} and cached in {out / 'cache'}"
                if finished
                else f"no check had finished; the simulations that did are kept in {out / 'runs'}"
                if (out / "runs").is_dir()
                else None  # (no runs/: none had simulated, and it named a folder that is not there: a probe)
            )
            said = f"{kept} (the same command continues from them)" if kept else "no check had finished"
            bar.write(f"dfl-check: interrupted; {said}", file=sys.stderr)
            return 130
        except OSError as exc:  # the report in --out could not be written (checked at the start: it changed)
            bar.write(f"dfl-check: error: {exc} (the checks that finished are cached in {out / 'cache'})",
                      file=sys.stderr)  # fmt: skip
            return 1
    try:
        write_report(results, out, quick, [c.id for c in chosen])
    except OSError as exc:
        print(f"dfl-check: error: {exc} (the results are cached in {out / 'cache'})", file=sys.stderr)
        return 1
    if args.json:
        print(
            json.dumps(
                [{k: r[k] for k in ("id", "ref", "claim", "status", "summary", "evidence")} for r in results]
            )
        )
    else:
        width = max(len(r["id"]) for r in results)
        for r in results:
            print(f"{r['id']:<{width}}  {r['status']:<13} {r['ref']}")
            if r["status"] == "could not run":  # why, on the next line (the traceback is in report.json)
                print(f"{'':<{width}}  {_first_line(r['summary'])}")
        print(f"report: {out / 'report.md'} and {out / 'report.json'}")
    return COULD_NOT_RUN if any(r["status"] == "could not run" for r in results) else 0


def _check_room(out: Path) -> None:
    """InputError, before any check runs, where something is in the way of what dfl-check writes in ``out``:
    its cache folder, report.json, report.md (they were tracebacks after the first check had computed), its
    figures folder (a file there dropped every figure with a line in report.md only, a probe)."""
    writable_folder(out / "cache", "--out's cache folder")
    if (out / "figures").exists() and not (out / "figures").is_dir():
        raise InputError(
            f"--out = {str(out)!r}: {str(out / 'figures')!r} is a file (expected room for the figures folder)"
        )
    for name in ("report.json", "report.md"):
        if (out / name).is_dir():
            raise InputError(
                f"--out = {str(out)!r}: {str(out / name)!r} is a folder (expected room for the report)"
            )


def _first_line(text: str, limit: int = 200) -> str:
    """The first line of a check's summary, cut to ``limit`` characters (a crash's reason)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."
