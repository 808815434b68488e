"""Figures: a run's curves, the paper-check figures and the optimiser's bound heatmap.

Paper checks: Fig. 3, Figs. 7-10 curves, drift against its bound. Each function returns a
matplotlib Figure; :func:`save` writes PNG + PDF.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from bounds import InputError
from bounds._checks import real_array
from sim.run_folder import atomic_write

__all__ = [
    "bound_heatmap",
    "check_curves",
    "drift_against_zeta",
    "drift_ratio_heatmaps",
    "drift_vs_bound",
    "fig3_variance",
    "pareto_front",
    "pareto_mask",
    "plan_figures",
    "run_curves",
    "save",
    "tightness_figure",
]

RUN_PANELS = (
    ("train_loss", "training loss of $u_t$"),
    ("test_acc", "test accuracy of $u_t$"),
    ("consensus", r"consensus $\|X_t(I-J)\|_F^2/N$"),
    ("grad_norm2", r"$\|\nabla F(u_t)\|^2$"),
)


FIGURE_FORMATS = (".png", ".pdf", ".svg", ".eps", ".ps", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")


def save(fig: Figure, path: str | Path) -> list[Path]:
    """Write ``path`` in the format its suffix names (one of FIGURE_FORMATS), or, without such a suffix,
    as ``path.png`` and ``path.pdf``; returns the paths written. (``x.svg`` used to give x.png and x.pdf.)
    A folder (a path ending in '/', or one that is a folder) is refused: 'figs/' gave figs.png beside it.
    Each file is written whole or not at all (:func:`sim.run_folder.atomic_write`)."""
    if not isinstance(fig, Figure):  # (an AttributeError 'savefig' for save('fig', 'x.png'))
        raise InputError(f"save: fig = {fig!r} is a {type(fig).__name__} (expected a matplotlib Figure, as "
                         "this module's figure functions return)")  # fmt: skip
    if not isinstance(path, str | os.PathLike):  # (pathlib's TypeError for None)
        raise InputError(f"save: path = {path!r} is not a file name (expected a str or a Path)")
    if str(path).endswith(("/", "\\")) or Path(path).is_dir():
        raise InputError(f"save: path = {str(path)!r} is a folder (expected a file name, such as "
                         f"{str(Path(path) / 'figure')!r}, or one ending in .png, .pdf or .svg)")  # fmt: skip
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() in FIGURE_FORMATS:
        out = [path]
    else:  # the whole name is the stem: a name such as 'eta=0.002' keeps its '.002'
        out = [path.with_name(path.name + ".png"), path.with_name(path.name + ".pdf")]
    for p in out:  # whole or not at all: a Ctrl-C or a full disk mid-write left a cut-off figure in place
        form = p.suffix[1:].lower()  # (the temporary file's own suffix is .tmp)
        atomic_write(p, partial(fig.savefig, format=form, dpi=130, bbox_inches="tight"))
    plt.close(fig)
    return out


def run_curves(runs: Mapping[str, pd.DataFrame], x: str = "step") -> Figure:
    """The four curves of one or more runs' ``metrics.csv`` tables against ``x`` (step or model_time).

    Every finite value is drawn (on the log panels an exact 0, as consensus at step 0 or after an exact
    average, at half the panel's smallest positive value, with a hollow marker, the line going through it:
    joining only the positive points drew a run that averages exactly every few steps as a flat line), with
    markers where a run
    has few points; a run whose loss became NaN or inf is labelled with the step it did. The training
    loss is on a log axis when the runs' losses span more than three decades (a diverged run would
    flatten the others to a line). The legend is below the panels, in as many columns as it takes, the
    figure taller for it; runs beyond the 10 colours take another line style (:func:`_run_style`: 40
    runs are told apart; with one style, run 0 and run 10 looked the same, and 36 runs' legend covered
    the panels).
    """
    if x not in ("step", "model_time"):
        raise InputError(f"x = {x!r} is unknown (expected step or model_time)")
    if not isinstance(runs, Mapping):  # a list of tables was an AttributeError ('items')
        raise InputError(
            f"run_curves: runs is a {type(runs).__name__} (expected a mapping of run names to metrics "
            "tables, {'name': pandas.read_csv('.../metrics.csv')})"
        )
    if not runs:
        raise InputError("run_curves: no runs (expected at least one metrics table)")
    for name, frame in runs.items():
        _require_columns(frame, (x, *(c for c, _ in RUN_PANELS)), f"run_curves, run {name!r}")
        if frame.empty:  # (an empty figure)
            raise InputError(f"run_curves, run {name!r}: the table has no rows (expected the run's logged "
                             "rows)")  # fmt: skip
    columns = min(4, math.ceil(len(runs) / 8))
    legend_rows = math.ceil(len(runs) / columns)
    height = 7 + 0.2 * legend_rows
    fig, axes = plt.subplots(2, 2, figsize=(10, height))
    xlabel = {"step": "step $t$ (local and gossip)", "model_time": "modelled wall-clock (time units)"}[x]
    loss = pd.concat([pd.to_numeric(f["train_loss"], errors="coerce") for f in runs.values()])
    loss = loss[np.isfinite(loss) & (loss > 0)]
    log_panels = {"consensus", "grad_norm2"} | (
        {"train_loss"} if len(loss) and loss.max() > 1e3 * loss.min() else set()
    )
    labels = {name: _legend_label(name, frame, x) for name, frame in runs.items()}
    for ax, (column, label) in zip(axes.ravel(), RUN_PANELS, strict=True):
        values = pd.concat([pd.to_numeric(f[column], errors="coerce") for f in runs.values()])
        positive = values[np.isfinite(values) & (values > 0)]
        floor = 0.5 * float(positive.min()) if len(positive) else 1.0  # where a log panel draws its zeros
        zeros = False
        for i, (name, frame) in enumerate(runs.items()):
            y = pd.to_numeric(frame[column], errors="coerce")
            at_zero = (y == 0) & (column in log_panels)  # an exact 0 (consensus after an exact average)
            y = y.where(~at_zero, floor)
            shown = np.isfinite(y) & ((y > 0) if column in log_panels else True)
            marker = "o" if len(frame) <= 30 else None
            style = _run_style(i)
            ax.plot(frame[x][shown], y[shown], marker=marker, ms=3, label=labels[name], **style)
            if at_zero.any():  # hollow markers at the floor, as fig3_variance has (they used to vanish)
                zeros = True
                ax.plot(frame[x][at_zero], np.full(int(at_zero.sum()), floor), marker="o", ms=4, mfc="none",
                        ls="none", color=style["color"])  # fmt: skip
        ax.set_xlabel(xlabel)
        ax.set_ylabel(label + (f"\n(hollow: 0, drawn at {floor:.2g})" if zeros else ""))
        if column in log_panels:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, (0.3 + 0.2 * legend_rows) / height, 1, 1))
    fig.legend(handles, names, loc="lower center", fontsize=8, frameon=False, ncol=columns)
    return fig


LINE_STYLES = ("-", "--", ":", "-.")


def _run_style(i: int) -> dict[str, str]:
    """The i-th line's colour and style: the 10 colours, then again with the next line style."""
    return {"color": f"C{i % 10}", "linestyle": LINE_STYLES[(i // 10) % len(LINE_STYLES)]}


def _legend_label(name: str, frame: pd.DataFrame, x: str) -> str:
    """A run's label: its name (one starting with '_', which matplotlib would leave out, shown as is
    behind './'), and where its training loss stopped being finite."""
    label = f"./{name}" if name.startswith("_") else name
    loss = pd.to_numeric(frame["train_loss"], errors="coerce")
    bad = ~np.isfinite(loss)
    if bad.any():
        label += f" (loss NaN/inf from {x} {frame[x][bad].iloc[0]:g})"
    return label


CURVE_AXES = {0: "step $t$ (local and gossip)", 3: "modelled wall-clock (time units)", 4: "local steps"}
"""The columns of :func:`check_curves`' rows that may be its horizontal axis, and their labels."""


def check_curves(curves: Mapping[str, Sequence[Sequence[Sequence[float]]]], title: str, x: int = 0) -> Figure:
    """Training loss and test accuracy per configuration (mean over seeds, band = min..max).

    ``curves[label]`` is a list (seeds) of rows [step, train_loss, test_acc, model_time, local steps];
    ``x`` picks the column of the horizontal axis (0 = step, 3 = modelled wall-clock, 4 = local steps).
    """
    if x not in CURVE_AXES:
        raise InputError(f"x = {x!r} is unknown (expected one of {sorted(CURVE_AXES)}: step, modelled "
                         "wall-clock, local steps)")  # fmt: skip
    if not curves:  # an empty figure was drawn
        raise InputError("check_curves: no curves (expected at least one configuration's seeds)")
    arrays = {}
    for label, seeds in curves.items():
        try:
            arrays[label] = np.array(seeds, dtype=float)  # seeds x points x 5
        except (ValueError, TypeError):
            arrays[label] = np.empty(0)
        if (
            arrays[label].ndim != 3
            or arrays[label].shape[0] == 0
            or arrays[label].shape[2] <= max(CURVE_AXES)
        ):
            raise InputError(
                f"check_curves: the curves of {label!r} are not seeds x points x 5 numbers of one length "
                "(expected rows [step, train_loss, test_acc, model_time, local steps])"
            )
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for label, arr in arrays.items():
        xs = arr[0, :, x]
        for ax, col in ((left, 1), (right, 2)):
            ax.plot(xs, arr[:, :, col].mean(0), label=label)
            ax.fill_between(xs, arr[:, :, col].min(0), arr[:, :, col].max(0), alpha=0.2)
    xlabel = CURVE_AXES[x]
    for ax, ylabel in ((left, "training loss of $u_t$"), (right, "test accuracy of $u_t$")):
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    left.legend(fontsize=8)
    counts = sorted({arr.shape[0] for arr in arrays.values()})
    if counts == [1]:
        how = "one seed"
    else:
        spread = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        how = f"line: the mean over {spread} seeds; band: their min..max"
    fig.suptitle(f"{title}\n({how})", fontsize=10)
    fig.tight_layout()
    return fig


def fig3_variance(variance: Sequence[float]) -> Figure:
    """Fig. 3: variance of node 3's coefficients of the initial parameters against gossip steps.

    ``variance`` holds one finite number >= 0 a step, at least one; a 0 (exact consensus) is drawn at the
    bottom of the log axis with a hollow marker, since log 0 has no place on it.
    """
    values = real_array("variance", variance, low=0)
    if values.ndim > 1:  # ([[1.0, 0.5]] was drawn as one series)
        raise InputError(f"variance has shape {values.shape} (expected a 1-d list, one value a gossip step)")
    values = values.ravel()
    zero = values == 0
    floor = values[~zero].min() / 10 if (~zero).any() else 1e-300
    fig, ax = plt.subplots(figsize=(5, 3.5))
    steps = np.arange(values.size)
    ax.semilogy(steps[~zero], values[~zero], marker="o")
    if zero.any():
        ax.semilogy(steps[zero], np.full(zero.sum(), floor), "o", mfc="none", label="0 (exact)")
        ax.legend(fontsize=8)
    ax.set_xlabel("gossip step $k$")
    ax.set_ylabel("variance of row 3 of $C^k$")
    ax.set_title("Fig. 3: 5-node ring, equal weights")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def drift_vs_bound(
    rows: Sequence[Mapping[str, float]],
    stated: str = "stated",
    corrected: str = "corrected",
    ylabel: str = "exact drift under pure noise",
) -> Figure:
    """Measured local drift against the paper's bound and our corrected one (one point per cell).

    ``stated`` / ``corrected`` name the columns of ``rows`` holding the two bounds (the noise term
    alone for the local-drift check, eq. (103) in full for the drift-103 checks).
    """
    frame = pd.DataFrame(list(rows))
    if frame.empty:
        raise InputError("drift_vs_bound: no rows (expected at least one cell)")
    _require_columns(frame, ("measured", stated, corrected), "drift_vs_bound")
    values = pd.concat([frame["measured"], frame[stated], frame[corrected]]).to_numpy(float)
    drawable = values[np.isfinite(values) & (values > 0)]
    if not drawable.size:
        raise InputError("drift_vs_bound: no positive finite value (expected one to place the log axes)")
    # the axes span the positive finite values: a 0 (drawn at the floor) set the floor to 0, and an infinite
    # bound the diagonal's end to inf, which then vanished (a probe's finding)
    floor, top = 0.5 * float(drawable.min()), 1.2 * float(drawable.max())
    measured = np.maximum(frame["measured"], floor)
    unbounded = int((~np.isfinite(frame[[stated, corrected]].to_numpy(float))).sum())
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.scatter(np.maximum(frame[stated], floor), measured, s=12,
               label=f"paper's bound (eq. (103)); 0 drawn at {floor:.2g}")  # fmt: skip
    ax.scatter(np.maximum(frame[corrected], floor), measured, s=12, marker="x",
               label="with our corrected noise term")  # fmt: skip
    undrawn = f" ({unbounded} infinite bounds not drawn)" if unbounded else ""
    ax.plot(
        [floor, top], [floor, top], color="k", lw=1, label=f"measured = bound (left of it: violated){undrawn}"
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"bound on $(1/T)\sum_t E\|X_t(I-J)\|_F^2/N$")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def bound_heatmap(grid: pd.DataFrame, value: str = "bound") -> Figure:
    """The optimiser's grid: log10 of the bound over (tau1, tau2), the optimum marked.

    One cell per (tau1, tau2) value in the grid, in order, labelled by its value (a grid of tau1 in
    {1, 2, 4, 8} is four equal cells); where the grid holds several rows per cell (a C-DFL grid's
    compressors, say), the cell shows the smallest of them, as the colour bar says. A bound of 0 is
    drawn in the colour of the smallest positive one; a cell without a finite bound is blank.
    """
    _require_columns(grid, ("tau1", "tau2", value), "bound_heatmap")
    for column in ("tau1", "tau2", value):
        if not pd.api.types.is_numeric_dtype(grid[column]):
            raise InputError(
                f"bound_heatmap: column {column!r} holds {grid[column].dtype} (expected numbers)"
            )
    bound = grid[value].to_numpy(float)
    if not np.isfinite(bound).any():
        raise InputError(
            f"bound_heatmap: no finite {value!r} in the grid (expected at least one finite cell)"
        )
    several = grid.duplicated(["tau1", "tau2"]).any()
    table = grid.pivot_table(index="tau1", columns="tau2", values=value, aggfunc="min", dropna=False)
    cells = table.to_numpy(float)
    positive = cells[np.isfinite(cells) & (cells > 0)]
    shown = np.where(cells == 0, positive.min() if positive.size else 1.0, cells)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    with np.errstate(divide="ignore", invalid="ignore"):
        image = ax.imshow(np.log10(shown), origin="lower", aspect="auto")
    ax.set_xticks(range(len(table.columns)), [f"{c:g}" for c in table.columns])
    ax.set_yticks(range(len(table.index)), [f"{c:g}" for c in table.index])
    best = grid.iloc[int(np.argmin(np.where(np.isfinite(bound), bound, np.inf)))]  # (by position: idxmin's
    # label gave a table where the grid repeats index labels, a concatenation of grids say)
    ax.plot(
        list(table.columns).index(best["tau2"]),
        list(table.index).index(best["tau1"]),
        "r*",
        ms=12,
        label=f"optimum tau1={best['tau1']:g}, tau2={best['tau2']:g}",
    )
    fig.colorbar(image, label=f"log10 {value}" + (" (smallest over the cell's rows)" if several else ""))
    ax.set_xlabel(r"$\tau_2$ (gossip steps per round)")
    ax.set_ylabel(r"$\tau_1$ (local steps per round)")
    blank = int((~np.isfinite(cells)).sum())
    if blank:  # (they were blank without a word)
        ax.set_title(f"blank: no finite {value} ({blank} of {cells.size} cells)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _require_columns(frame: pd.DataFrame, columns: tuple[str, ...], figure: str) -> None:
    """InputError naming the first of ``columns`` the table lacks (not pandas' KeyError), or that it is no
    table (a path or a dict of arrays was an AttributeError 'columns')."""
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"{figure}: the table is a {type(frame).__name__} (expected a pandas DataFrame: "
                         "pandas.read_csv of a metrics.csv, or an optimiser result's "
                         "grid_frame())")  # fmt: skip
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{figure}: the table has no column {missing[0]!r} (its columns: "
                         f"{', '.join(map(str, frame.columns))})")  # fmt: skip


def pareto_mask(cost: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Cells no other cell beats on both cost and value (lower is better for both); a cell whose cost or
    value is NaN or infinite (-inf included) is never on the front (lexsort put a NaN cost last, where any
    finite value could still join the front)."""
    try:
        cost, value = np.asarray(cost, dtype=float), np.asarray(value, dtype=float)
    except (TypeError, ValueError):  # (numpy's 'could not convert string to float')
        raise InputError(f"cost = {cost!r} and value = {value!r} are not both numbers (expected two 1-d "
                         "arrays of numbers)") from None  # fmt: skip
    if cost.shape != value.shape or cost.ndim != 1:
        raise InputError(f"cost of shape {cost.shape} and value of shape {value.shape} (expected two 1-d "
                         "arrays of one length)")  # fmt: skip
    order = np.lexsort((value, cost))
    best, best_cost, mask = np.inf, np.nan, np.zeros(len(cost), dtype=bool)
    for i in order:
        if not (np.isfinite(cost[i]) and np.isfinite(value[i])):
            continue
        if value[i] < best or (value[i] == best and cost[i] == best_cost):  # an equal cell beats no one
            mask[i], best, best_cost = True, value[i], cost[i]
    return mask


def pareto_front(grid: pd.DataFrame, cost: str = "time", value: str = "bound") -> Figure:
    """Each cell of an optimiser grid as bound against cost, with the Pareto front drawn.

    ``cost`` is a column of the grid (``time``, ``gossip_steps``, or ``bits`` for C-DFL grids, computed as
    rounds * tau2 * bits_per_message when absent). The cost axis is logarithmic where the positive costs
    span more than two decades (on a linear one a C-DFL front's cheap cells stacked at 0); cells without
    a finite bound are not drawn, and the legend counts them.
    """
    _require_columns(grid, (value,) + (("rounds", "tau2", "bits_per_message") if cost == "bits" and "bits"
                                        not in grid else (cost,)), "pareto_front")  # fmt: skip
    frame = grid[np.isfinite(grid[value])].copy()
    if frame.empty:  # (an empty figure; bound_heatmap refused)
        raise InputError(f"pareto_front: no finite {value!r} in the grid (expected at least one finite cell)")
    if cost == "bits" and "bits" not in frame:
        frame["bits"] = frame["rounds"] * frame["tau2"] * frame["bits_per_message"]
    mask = pareto_mask(frame[cost].to_numpy(float), frame[value].to_numpy(float))
    front = frame[mask].sort_values(cost)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    left_out = len(grid) - len(frame)
    unfinite = f" ({left_out} of {len(grid)} without a finite {value}: not drawn)" if left_out else ""
    cells = "all cells" + unfinite
    ax.scatter(frame[cost], frame[value], s=6, alpha=0.3, label=cells)
    ax.plot(front[cost], front[value], "r.-", label="Pareto front")
    costs = frame[cost].to_numpy(float)
    if (costs > 0).all() and costs.max() > 100 * costs.min():
        ax.set_xscale("log")
    ax.set_xlabel(
        {"time": "time used (s)", "bits": "bits sent per node", "gossip_steps": "gossip steps"}.get(
            cost, cost
        )
    )
    ax.set_ylabel(value)
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def drift_ratio_heatmaps(rows: Sequence[Mapping[str, object]], partition: str) -> Figure:
    """drift-non-iid-cnn: measured drift / heterogeneity-aware bound over (tau1, tau2), one panel per
    topology, for one partition; cells outside the non-i.i.d. condition are marked 'n/c', cells whose
    measured drift is below the float32 rounding floor (columns ``measured``, ``rounding_floor``) 'rnd'
    (their ratio counts as 0: there 0.00 read as a measured drift far below the bound)."""
    frame = pd.DataFrame([r for r in rows if r["partition"] == partition])
    numbers = [c for c in ("ratio", "measured", "rounding_floor") if c in frame]
    frame[numbers] = frame[numbers].apply(pd.to_numeric, errors="coerce")  # ('nan', 'inf' from JSON: numbers)
    topologies = list(dict.fromkeys(frame["topology"]))
    fig, axes = plt.subplots(1, len(topologies), figsize=(3.6 * len(topologies), 3.4), squeeze=False)
    top = max(1.0, float(frame["ratio"].replace(np.inf, np.nan).max()))
    for ax, topology in zip(axes[0], topologies, strict=True):
        part = frame[frame["topology"] == topology]
        # dropna=False: an all-NaN row or column was dropped from one table and not the other ('n/c' marks
        # on the wrong cells) and from the heatmap (a review's finding)
        table = part.pivot_table(index="tau1", columns="tau2", values="ratio", dropna=False)
        ok = part.pivot_table(
            index="tau1", columns="tau2", values="condition_ok", aggfunc="min", dropna=False
        )
        noise = (
            (part["measured"] <= part["rounding_floor"]).rename("noise")
            if {"measured", "rounding_floor"} <= set(part)
            else pd.Series(False, index=part.index, name="noise")
        )
        below = part.assign(noise=noise.astype(float)).pivot_table(
            index="tau1", columns="tau2", values="noise", aggfunc="max", dropna=False
        )
        rounding = np.nan_to_num(below.to_numpy(dtype=float)) > 0  # (a cell without rows: NaN, not below)
        image = ax.imshow(table.to_numpy(), origin="lower", cmap="viridis", vmin=0.0, vmax=top, aspect="auto")
        for (i, j), value in np.ndenumerate(table.to_numpy()):
            text = f"{value:.2f}" if bool(ok.to_numpy()[i, j]) else "n/c"
            text = "rnd" if text != "n/c" and rounding[i, j] else text
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="w" if value < top / 2 else "k")
        ax.set_xticks(range(len(table.columns)), [str(c) for c in table.columns])
        ax.set_yticks(range(len(table.index)), [str(c) for c in table.index])
        ax.set_xlabel(r"$\tau_2$")
        ax.set_ylabel(r"$\tau_1$")
        ax.set_title(f"{topology} ($\\zeta$ = {float(part['zeta'].iloc[0]):.2f})", fontsize=9)
    fig.colorbar(image, ax=axes[0].tolist(), label="measured drift / bound")
    fig.suptitle(f"MNIST CNN, {partition}: drift against the heterogeneity-aware term\n(n/c: outside its "
                 "condition; rnd: drift below float32 rounding, counted as 0)", fontsize=10)  # fmt: skip
    return fig


def drift_against_zeta(rows: Sequence[Mapping[str, object]]) -> Figure:
    """drift-non-iid-cnn: the measured drift (mean over local steps of ||X (I - J)||_F^2 / N) against zeta,
    one panel per partition, one line per (tau1, tau2), the bound divided by L^2 dashed; values below
    the run's float32 rounding floor (column ``rounding``) are drawn at it."""
    frame = pd.DataFrame(rows)
    partitions = list(dict.fromkeys(frame["partition"]))
    fig, axes = plt.subplots(
        1, len(partitions), figsize=(3.6 * len(partitions), 3.4), squeeze=False, sharey=True
    )
    for ax, partition in zip(axes[0], partitions, strict=True):
        part = frame[frame["partition"] == partition]
        for i, ((tau1, tau2), line) in enumerate(part.groupby(["tau1", "tau2"])):
            line = line.sort_values("zeta")
            floor = line["rounding"] if "rounding" in line else 0.0  # float32 rounding: drawn at the floor
            drift = np.maximum(line["local_drift_mean"], floor)
            marker = MARKERS[(i // 10) % len(MARKERS)]  # beyond 10 colours another marker
            label = f"$\\tau$ = ({tau1}, {tau2})"
            shown = ax.plot(line["zeta"], drift, marker=marker, color=_run_style(i)["color"], label=label)
            bound = np.maximum(line["bound"] / line["L"] ** 2, floor)
            ax.plot(line["zeta"], bound, ls="--", color=shown[0].get_color(), lw=0.8)
        ax.set_yscale("log")
        ax.set_xlabel(r"$\zeta$")
        ax.set_title(partition, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("drift (dashed: bound / $L^2$;\nbelow float32 rounding: at it)", fontsize=8)
    lines = part.groupby(["tau1", "tau2"]).ngroups
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), ncol=1 + lines // 15)
    fig.tight_layout()
    return fig


MARKERS = ("o", "s", "^", "D")


def plan_figures(table: pd.DataFrame) -> dict[str, Figure]:
    """``dfl-sim plan``: the bound's prediction against the measured final loss (seed spread as error
    bars, the bound's choice marked; eta-scaled contenders have no prediction), and the measured loss
    against the gossip steps each configuration spends of the same budget, with its Pareto front (less
    communication and lower loss)."""
    chosen = table.iloc[0]
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    for group, marker in (("top", "o"), ("other", "s")):
        part = table[table["group"] == group]
        ax.errorbar(part["bound"], part["loss_mean"], yerr=part["loss_std"], fmt=marker, ms=5, capsize=2,
                    label=f"{group} of the ranking")  # fmt: skip
    label = f"bound's choice: tau1 = {int(chosen['tau1'])}, tau2 = {int(chosen['tau2'])}"
    point = ([chosen["bound"]], [chosen["loss_mean"]])
    ax.scatter(*point, s=160, facecolors="none", edgecolors="r", label=label)
    for _, r in table[np.isfinite(table["bound"].to_numpy(dtype=float))].iterrows():  # (eta-scaled: none)
        ax.annotate(f"({int(r['tau1'])},{int(r['tau2'])})", (r["bound"], r["loss_mean"]), fontsize=7,
                    xytext=(3, 3), textcoords="offset points")  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("predicted: the bound at the configuration's eta")
    ax.set_ylabel("measured final training loss\n(mean over seeds; bars: one standard deviation)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    gossip = (table["rounds"] * table["tau2"]).to_numpy(dtype=float)
    fig2, ax2 = plt.subplots(figsize=(5.5, 4.2))
    ax2.scatter(gossip, table["loss_mean"], s=18, label="simulated configurations")
    front = pareto_mask(gossip, table["loss_mean"].to_numpy(dtype=float))
    order = np.argsort(gossip[front])
    ax2.plot(gossip[front][order], table["loss_mean"].to_numpy()[front][order], "r-", label="Pareto front")
    ax2.set_xlabel("gossip steps spent of the budget")
    ax2.set_ylabel("measured final training loss")
    ax2.legend(fontsize=7)
    ax2.grid(alpha=0.3)
    fig2.tight_layout()
    return {"plan-predicted-vs-measured": fig, "plan-loss-vs-gossip": fig2}


def tightness_figure(rows: Sequence[Mapping[str, object]]) -> Figure:
    """The ``tightness`` check: against tau2, the PEP worst case of each left side and the bounds, for the
    largest tau1 and varsigma^2 of the table, one panel per topology (log scale); Proposition 1 hollow
    where its step-size condition (eta) fails (column ``paper_condition_ok``), as the check counts it."""
    frame = pd.DataFrame(rows)
    values = ["worst_case", "bound", "worst_case_all_steps", "bound_paper"]
    frame[values] = frame[values].apply(pd.to_numeric, errors="coerce")  # a cell without a worst case: NaN
    frame = frame[frame["tau1"] == frame["tau1"].max()]
    frame = frame[frame["varsigma2"] == frame["varsigma2"].max()]  # (of those: both maxima could miss)
    nodes = frame["N"] if "N" in frame else pd.Series(0, index=frame.index)
    panels = list(dict.fromkeys(zip(frame["topology"], nodes, strict=True)))  # N = 3 and 4 joined as one line
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    for ax, (top, n) in zip(axes[0], panels, strict=True):
        part = frame[(frame["topology"] == top) & (nodes == n)].sort_values("tau2")
        ax.plot(part["tau2"], part["worst_case"], "o-", label="worst case, local steps (PEP)")
        ax.plot(part["tau2"], part["bound"], "s--", label="our non-i.i.d. repair")
        ax.plot(part["tau2"], part["worst_case_all_steps"], "o-", label="worst case, all steps (PEP)")
        claimed = (
            part["paper_condition_ok"].map(lambda ok: ok is True or ok == 1)  # (NaN: not claimed)
            if "paper_condition_ok" in part
            else pd.Series(True, index=part.index)
        )
        line = ax.plot(part["tau2"], part["bound_paper"], "^:", markevery=list(np.flatnonzero(claimed)),
                       label="Proposition 1")[0]  # fmt: skip
        if not claimed.all():  # where its condition (eta) fails it claims nothing (the check's count)
            idle = part["bound_paper"].where(~claimed)
            ax.plot(part["tau2"], idle, "^", mfc="none", color=line.get_color(),
                    label="Proposition 1, condition (eta) fails: no claim")  # fmt: skip
        size = f"N = {n}, " if "N" in frame else ""
        tau1, varsigma2 = part["tau1"].iloc[0], part["varsigma2"].iloc[0]
        ax.set_title(f"{top}, {size}tau1 = {tau1}, varsigma^2 = {varsigma2:g}", fontsize=9)
        ax.set_xlabel("tau2")
        ax.set_xticks(list(part["tau2"]))
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(r"average $\|\nabla F(u_t)\|^2$ (gap = L = 1)")
    handles = {label: h for ax in axes[0] for h, label in zip(*ax.get_legend_handles_labels(), strict=True)}
    fig.legend(handles.values(), handles.keys(), loc="lower center", fontsize=7, ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.14, 1, 1))  # (the legend below: it covered a panel's lines)
    return fig
