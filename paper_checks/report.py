"""Run the registered checks (with a cache) and write report.md and report.json."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bounds import InputError
from bounds.serialize import jsonable
from paper_checks.cache import pending, run_one
from paper_checks.context import CheckContext
from paper_checks.overlap import overlaps, run_overlapped
from paper_checks.presweep import presweep, presweeps
from paper_checks.registry import CHECKS, Check, load_checks, named_checks

__all__ = ["report_document", "run_checks", "select", "write_report"]


def select(
    ids: list[str] | None,
    quick: bool,
    out: Path,
    cifar_dir: str | None = None,
    device: str = "cpu",
    workers: int = 1,
) -> tuple[list[Check], CheckContext]:
    """The selected checks (all by default, in registry order) and the context they run in (``workers``:
    processes for the checks that split their cells, :class:`~paper_checks.context.CheckContext`).

    Raises InputError naming the unknown ids (:func:`~paper_checks.registry.named_checks`).
    """
    chosen = named_checks(ids)
    from sim.setup import set_precision  # torch: once the arguments are read

    set_precision(device, tf32=False)  # the checks' models outside runs (Hessians, probes) in float32 too
    cifar = cifar_dir or os.environ.get("DFLKIT_CIFAR10_DIR")  # in the context, so in the cache key
    if cifar and (cifar_dir or any(chk.reads_cifar for chk in chosen)):  # a mistyped folder ran every other
        _check_cifar_folder(cifar, "--cifar-dir" if cifar_dir else "$DFLKIT_CIFAR10_DIR")  # check first,
        # minutes, then fig7-cifar 'could not run'; a stale variable stops only the checks that read it
    context = CheckContext(  # absolute paths: --out q and --out /abs/q share one cache
        quick=quick,
        runs=(out / "runs").resolve(),
        device=device,
        cifar_dir=str(Path(cifar).resolve()) if cifar else None,
        workers=workers,
    )
    return chosen, context


def _check_cifar_folder(folder: str, given_by: str) -> None:
    """InputError unless ``folder`` holds CIFAR-10's six python batches (in cifar-10-batches-py, or itself);
    what they hold is checked when a check reads them (:func:`sim.data.load_cifar10`)."""
    from sim.data import DataError, cifar10_files

    try:
        cifar10_files(Path(folder))
    except DataError as exc:
        raise InputError(f"{given_by} = {folder!r}: {exc}") from None


def run_checks(
    ids: list[str] | None,
    quick: bool,
    out: Path,
    cifar_dir: str | None = None,
    device: str = "cpu",
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
    workers: int = 1,
    overlap: bool | None = None,
    say: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Run the selected checks (all by default); their results in registry order.

    ``cifar_dir`` is for the CIFAR-10 checks; ``device`` (cpu, cuda, cuda:1) for every simulation;
    ``progress(i, total, result)`` is called after each check (when they overlap, on a reader thread for the
    device-free ones, one call at a time); ``workers``: processes for the cells of
    the checks that split them (the results do not depend on it). ``overlap``: the device-free checks in
    a background process while the device checks run (:mod:`paper_checks.overlap`; by default where
    :func:`~paper_checks.overlap.overlaps` says it pays); otherwise one after the other, in order. Beside a
    GPU the simulations of the checks go first, as one sweep per data set (:mod:`paper_checks.presweep`),
    each sweep's outcome a line to ``say``.
    """
    chosen, context = select(ids, quick, out, cifar_dir, device, workers)
    cache_dir = out / "cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    to_run = pending(chosen, context, cache_dir)
    simulate_first = (lambda: presweep(to_run, context, say)) if presweeps(context) else None
    if overlap is None:
        overlap = overlaps(to_run, context)
    if overlap:
        return run_overlapped(chosen, context, cache_dir, progress, simulate_first)
    if simulate_first:
        simulate_first()
    results = []
    for i, chk in enumerate(chosen, 1):
        results.append(run_one(chk, context, cache_dir))
        if progress:
            progress(i, len(chosen), results[-1])
    return results


DRIFT_FIGURES = {  # check id -> (column of the paper's bound, of the corrected bound, y label)
    "local-drift": ("stated", "corrected", r"exact drift under pure noise ($\eta = \sigma^2 = 1$)"),
    "drift-103-quadratic": ("bound_103", "bound_103_corrected", "exact drift (noisy quadratic)"),
    "drift-103-cnn": ("bound_103", "bound_103_corrected", "measured drift (MNIST CNN, mean over seeds)"),
}


def _figures(result: dict[str, Any], folder: Path) -> list[Path]:
    """The figures of one check (PNG + PDF under ``folder``); returns the PNG paths."""
    from plots.figures import check_curves, drift_vs_bound, fig3_variance, save

    evidence, made = result["evidence"], []
    if result["id"] == "fig3-variance":
        made.append(save(fig3_variance([r["variance"] for r in evidence["variance"]]), folder / "fig3")[0])
    if result["id"] in DRIFT_FIGURES and "table" in evidence:
        stated, corrected, ylabel = DRIFT_FIGURES[result["id"]]
        figure = drift_vs_bound(evidence["table"], stated, corrected, ylabel)
        made.append(save(figure, folder / f"{result['id']}-vs-bound")[0])
    if result["id"] == "tightness" and evidence.get("table"):
        from plots.figures import tightness_figure

        made.append(save(tightness_figure(evidence["table"]), folder / "tightness")[0])
    if result["id"] == "drift-non-iid-cnn" and evidence.get("table"):
        made += _non_iid_figures(evidence["table"], folder)
    curves = evidence.get("curves")
    if curves:
        groups = curves if all(isinstance(v, dict) for v in curves.values()) else {"": curves}
        for group, series in groups.items():
            if not series:  # a group with no curves (check_curves refuses to draw an empty figure)
                continue
            name = f"{result['id']}{'-' + group if group else ''}"
            title = f"{result['ref']}: {group.replace('_', ' ')}" if group else result["ref"]
            x = 4 if group.endswith("same_local_steps") else 0
            made.append(save(check_curves(series, title, x=x), folder / name)[0])
            if result["id"] == "fig10-cdfl":
                made.append(
                    save(
                        check_curves(series, f"{result['ref']} (wall-clock)", x=3),
                        folder / f"{name}-wallclock",
                    )[0]
                )
    return made


def _non_iid_figures(table: list[dict[str, Any]], folder: Path) -> list[Path]:
    """drift-non-iid-cnn: one heatmap per partition (measured / bound over tau1 x tau2, a panel per
    topology) and the measured drift against zeta."""
    from plots.figures import drift_against_zeta, drift_ratio_heatmaps, save

    made = []
    for partition in dict.fromkeys(r["partition"] for r in table):
        name = f"drift-non-iid-cnn-heatmap-{partition.replace(' ', '-').replace('.', '_')}"
        made.append(save(drift_ratio_heatmaps(table, partition), folder / name)[0])
    made.append(save(drift_against_zeta(table), folder / "drift-non-iid-cnn-vs-zeta")[0])
    return made


def report_document(results: list[dict[str, Any]], quick: bool, selected: list[str]) -> dict[str, Any]:
    """report.json's content: ``mode`` ('quick' / 'full'), ``complete`` (False in the report rewritten while
    the checks run, so in that of a run that stopped), ``done`` and ``selected`` (the numbers of checks
    finished and chosen), ``pending`` (the chosen checks not finished), ``left_out`` (the registered checks
    not chosen, ``--only``) and ``checks`` (each finished check's record: id, ref, claim, method, status,
    summary, evidence, seconds, fingerprint, cached). It was the bare list of records, the same in a stopped
    run's report as in a finished one's: a script could not tell them apart (report.md said so at its top)."""
    finished = {r["id"] for r in results}
    return jsonable(
        {
            "mode": "quick" if quick else "full",
            "complete": finished >= set(selected),
            "done": len(results),
            "selected": len(selected),
            "pending": [i for i in selected if i not in finished],
            "left_out": [i for i in CHECKS if i not in selected and i not in finished],
            "checks": results,
        }
    )


def write_report(
    results: list[dict[str, Any]], out: Path, quick: bool, selected: Sequence[str] | None = None
) -> None:
    """report.json (:func:`report_document`) and report.md (a table of verdicts, then each check's
    evidence), each written atomically, and the figures. ``selected``: the ids of the checks chosen (default:
    those of ``results``). Where some of them have no result yet, the report is one in progress, rewritten
    after each check, which says so at its top with the checks pending (a stopped run's report said none
    was left out, a probe), and draws no figure; a report of some of the checks (``--only``) says so at its
    top. ``figures/`` keeps only this report's figures, none while it is in progress (an earlier run's
    figures of checks not in it, or of a figure not drawn now, would pass for this run's; an interrupted run
    left them all beside its report in progress)."""
    from sim.run_folder import atomic_write

    load_checks()
    document = report_document(results, quick, list(selected or [r["id"] for r in results]))
    text = json.dumps(document, indent=1, allow_nan=False)
    atomic_write(out / "report.json", lambda tmp: tmp.write_text(text))
    figures, left_out, waiting = document["complete"], document["left_out"], document["pending"]
    lines = [
        f"# dflkit paper checks ({'quick' if quick else 'full'})",
        "",
        "Each claim of the paper, how it was tested, and the verdict. `violated` is a finding about "
        "the statement judged: the paper's, or, where the reference says 'ours' or 'our repair', one of "
        "this toolkit's (a repair, the planner); `reference` documents a value or a case outside the "
        "claim's assumptions.",
        "",
        "Columns of the bound tables: `lhs_all` is E[(1/T) sum_t ||grad F(u_t)||^2] over all T steps "
        "(Proposition 1's left side), `lhs_local` the same average over the K tau1 local steps only "
        "(our repair's left side); `lhs` is the one the judged statement bounds, `rhs` its right side, "
        "`ratio` = lhs / rhs (above 1: violated). `eta/eta_max` is eta as a fraction of the largest eta "
        "allowed by (eta). Monte Carlo tables give `lhs_95`, the 95% interval of the left side, and "
        "`runs`.",
        "",
    ]
    if waiting:
        lines += [
            f"**In progress:** {document['done']} of {document['selected']} checks done (not yet: "
            f"{', '.join(waiting)}); this report is rewritten after each check, with figures when all have "
            "run. If it still says so, the run stopped: the same command continues from the cache.",
            "",
        ]
    if left_out:
        lines += [
            f"**Partial report:** {document['selected']} of the {len(CHECKS)} checks (`--only`); not in it: "
            f"{', '.join(left_out)}. `dfl-check` without `--only` reports them all (cached verdicts are "
            "reused).",
            "",
        ]
    lines += ["| id | paper | status | summary |", "|---|---|---|---|"]
    drawn: set[str] = set()
    for r in results:
        summary = " ".join(r["summary"].replace("|", "/").split())  # one table row: no newline, no pipe
        lines.append(f"| {r['id']} | {r['ref']} | **{r['status']}** | {summary} |")
    for r in results:
        lines += [
            "",
            f"## {r['id']}: {r['ref']}",
            "",
            f"**Claim.** {r['claim']}",
            "",
            f"**Method.** {r['method']}",
            "",
            f"**Status: {r['status']}.** {r['summary']}",
            "",
        ]
        try:
            pngs = _figures(r, out / "figures") if figures else []
        except Exception as exc:  # a figure is a view of the evidence: its failure must not lose the report
            lines += [f"(figure not drawn: {type(exc).__name__}: {exc})", ""]
            pngs = []
        for png in pngs:
            lines += [f"![{png.stem}](figures/{png.name})", ""]
            drawn.add(png.stem)
        evidence = {k: v for k, v in r["evidence"].items() if k not in ("table", "traceback", "curves")}
        if evidence:
            lines += ["```json", json.dumps(evidence, indent=1)[:4000], "```"]
        table = r["evidence"].get("table")
        if table:
            head = list(table[0])
            lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            lines += ["| " + " | ".join(_cell(row[h]) for h in head) + " |" for row in table[:60]]
            if len(table) > 60:
                lines.append(f"\n({len(table) - 60} more rows in report.json)")
    atomic_write(out / "report.md", lambda tmp: tmp.write_text("\n".join(lines) + "\n"))
    _remove_stale_figures(out / "figures", drawn)  # in progress: none (an earlier run's would stay beside it)


def _remove_stale_figures(folder: Path, drawn: set[str]) -> None:
    """Delete the PNG / PDF files of ``folder`` whose name is not one of ``drawn`` (this report's)."""
    for path in folder.glob("*") if folder.is_dir() else []:
        if path.suffix in (".png", ".pdf") and path.stem not in drawn:
            path.unlink(missing_ok=True)


def _cell(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
