"""Figures are drawn from tables and written as PNG and PDF."""

from __future__ import annotations

import itertools
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from bounds import CostModel, InputError, optimize_dfl
from bounds.serialize import jsonable
from plots.cli import main
from plots.figures import bound_heatmap, check_curves, drift_vs_bound, fig3_variance, pareto_mask, save


def test_dfl_plot_draws_a_run(tmp_path, capsys) -> None:
    run = tmp_path / "run"
    run.mkdir()
    steps = np.arange(0, 50, 10)
    pd.DataFrame(
        {
            "step": steps,
            "model_time": steps * 1.0,
            "train_loss": 2.3 / (1 + steps),
            "test_acc": steps / 60,
            "consensus": 1e-3 + steps * 1e-4,
            "grad_norm2": 1 / (1 + steps),
        }
    ).to_csv(run / "metrics.csv", index=False)
    assert main([str(run)]) == 0
    assert (run / "curves.png").stat().st_size > 10_000 and (run / "curves.pdf").is_file()
    assert main([str(run), "--out", str(tmp_path / "mine.svg")]) == 0  # used to write mine.png and mine.pdf
    assert [p.name for p in tmp_path.glob("mine*")] == ["mine.svg"]
    assert main([str(run), "--out", str(tmp_path / "eta=0.002")]) == 0  # no format suffix: the whole name
    assert sorted(p.name for p in tmp_path.glob("eta*")) == ["eta=0.002.pdf", "eta=0.002.png"]
    assert main([str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_figures_from_results(tmp_path) -> None:
    r = optimize_dfl(
        L=1,
        sigma2=1,
        N=10,
        gap=1,
        zeta=0.87,
        cost=CostModel(1, 0.5),
        budget_seconds=500,
        max_tau1=6,
        max_tau2=6,
    )
    rows = [{"stated": 0.1 * i, "corrected": 0.2 * i + 0.1, "measured": 0.05 * i + 0.01} for i in range(5)]
    for fig, name in (
        (bound_heatmap(r.grid_frame()), "heat"),
        (drift_vs_bound(rows), "drift"),
        (fig3_variance([0.16, 0.03, 0.007, 0.002]), "fig3"),
    ):
        png, pdf = save(fig, tmp_path / name)
        assert png.stat().st_size > 5_000 and pdf.is_file()


def test_pareto_front_by_brute_force(tmp_path) -> None:
    from bounds.plan.optimize_cdfl import optimize_cdfl
    from plots.figures import pareto_front, pareto_mask

    rng = np.random.default_rng(0)
    # continuous draws, and small integers full of ties (two equal cells beat neither: both were not kept)
    for cost, value in (
        (rng.random(60), rng.random(60)),
        (rng.integers(0, 4, 60) * 1.0, rng.integers(0, 4, 60) * 1.0),
    ):
        mask = pareto_mask(cost, value)
        for i in range(60):
            dominated = any(
                cost[j] <= cost[i] and value[j] <= value[i] and (cost[j], value[j]) != (cost[i], value[i])
                for j in range(60)
            )
            assert mask[i] == (not dominated), i
    r = optimize_cdfl(
        L=1,
        mu=0.1,
        sigma2_bar=1,
        G2=1,
        N=10,
        zeta=0.87,
        beta_mix=4 / 3,
        dim=1000,
        t_comp=0.01,
        latency=0.001,
        bandwidth=1e6,
        budget_seconds=60,
        max_tau1=4,
        max_tau2=4,
        candidates=[("identity", None), ("top_k", 100), ("gossip", 0.5)],
    )
    png, _ = save(pareto_front(r.grid_frame(), cost="bits"), tmp_path / "pareto")
    assert png.stat().st_size > 5_000


def test_tightness_figure_draws_cells_without_a_worst_case(tmp_path) -> None:
    """A cell whose solve was not certified has no worst case: NaN, or "nan" once the evidence went through
    JSON; the figure draws the other cells (it raised matplotlib's TypeError on the string)."""
    from plots.figures import tightness_figure

    rows = [{"topology": top, "tau1": 2, "tau2": t2, "varsigma2": 0.5, "worst_case": w, "bound": 2.0,
             "worst_case_all_steps": 0.9, "bound_paper": 1.5}
            for top in ("ring", "path") for t2, w in ((1, "nan"), (2, 1.0), (4, float("nan")))]  # fmt: skip
    png, pdf = save(tightness_figure(rows), tmp_path / "tightness")
    assert png.stat().st_size > 5_000 and pdf.is_file()


def test_pareto_front_and_figures_name_bad_tables() -> None:
    """A NaN cost joined the front; unknown columns and an unknown x were pandas KeyErrors; a grid without
    a finite bound a matplotlib ValueError."""
    from bounds import InputError
    from plots.figures import bound_heatmap, pareto_front, pareto_mask, run_curves

    assert pareto_mask(np.array([1.0, 2.0, np.nan]), np.array([3.0, np.nan, 1.0])).tolist() == [
        True,
        False,
        False,
    ]
    assert pareto_mask(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 2.5])).tolist() == [True, True, False]
    grid = pd.DataFrame({"tau1": [1, 2], "tau2": [1, 1], "bound": [np.inf, np.inf]})
    with pytest.raises(InputError, match="no finite 'bound'"):
        bound_heatmap(grid)
    with pytest.raises(InputError, match="the table has no column 'gossip'"):
        pareto_front(grid.assign(bound=[1.0, 2.0]), cost="gossip")
    with pytest.raises(InputError, match="x = 'bogus' is unknown"):
        run_curves({}, x="bogus")
    with pytest.raises(InputError, match="runs is a list \\(expected a mapping of run names"):
        run_curves([grid])


def test_fig3_draws_exact_consensus_and_refuses_bad_variances(tmp_path) -> None:
    """A 0 (exact consensus) is drawn at the axis' bottom with its own marker, not dropped by the log axis;
    an empty, NaN or negative variance is refused by name."""
    fig = fig3_variance([0.16, 0.03, 0.0, 0.002])
    drawn = {line.get_label(): line.get_xydata() for line in fig.axes[0].get_lines()}
    assert drawn["0 (exact)"].tolist() == [[2.0, 0.0002]]
    assert sum(len(xy) for xy in drawn.values()) == 4
    for bad, message in (([], "is empty"), ([0.1, float("nan")], "NaN"), ([-1.0], "out of range")):
        with pytest.raises(InputError, match=message):
            fig3_variance(bad)


def _metrics(steps: np.ndarray, **columns: object) -> pd.DataFrame:
    base = {"step": steps, "model_time": steps * 1.0, "train_loss": 2.3 / (1 + steps), "test_acc": steps / 60,
            "consensus": 1e-3 + steps * 1e-4, "grad_norm2": 1 / (1 + steps)}  # fmt: skip
    return pd.DataFrame({**base, **columns})


def test_run_curves_draw_every_finite_value_and_name_a_diverged_run() -> None:
    """Every finite (on log panels positive) value is drawn: the old relative cut at 1e-10 of the largest
    value emptied the consensus panel of a run beside a diverged one; a one-row run has a marker; a
    diverged run's label says from which step its loss is NaN/inf; a loss spanning more than three decades
    is on a log axis; a name starting with '_' keeps its label."""
    from plots.figures import run_curves

    steps = np.arange(0, 5)
    diverged = _metrics(
        steps, train_loss=[2.0, 3e5, 7e19, np.inf, np.nan], consensus=[1e-13, 3.6e7, 7e19, np.inf, 1.0]
    )
    runs = {"ok": _metrics(steps), "_under": _metrics(steps), "div": diverged, "one": _metrics(np.arange(1))}
    fig = run_curves(runs)
    loss, _, consensus, _ = fig.axes
    drawn = {line.get_label(): line for line in consensus.get_lines()}
    assert drawn["div (loss NaN/inf from step 3)"].get_xydata()[:, 1].tolist() == [1e-13, 3.6e7, 7e19, 1.0]
    assert len(drawn["ok"].get_xydata()) == 5 and "./_under" in drawn
    assert drawn["one"].get_marker() == "o" and len(drawn["one"].get_xydata()) == 1
    assert loss.get_yscale() == "log" and run_curves({"ok": _metrics(steps)}).axes[0].get_yscale() == "linear"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(drawn)
    # an exact 0 on a log panel (consensus at step 0, after an exact average) vanished: a hollow marker at
    # half the panel's smallest positive value now (a probe's finding), and the line goes through it (a
    # second probe: joining the positive points alone drew a run averaging exactly every 3 steps as flat)
    synced = _metrics(steps, consensus=[0.0, 0.152, 0.0, 0.0706, 0.0])
    consensus = run_curves({"sync": synced}).axes[2]
    line, zeros = consensus.get_lines()
    assert line.get_xydata()[:, 1].tolist() == [0.0353, 0.152, 0.0353, 0.0706, 0.0353]
    assert zeros.get_xdata().tolist() == [0, 2, 4]
    assert zeros.get_ydata().tolist() == [0.0353] * 3 and zeros.get_markerfacecolor() == "none"
    assert "hollow: 0, drawn at 0.035" in consensus.get_ylabel()


def test_dfl_plot_says_what_a_folder_is_and_labels_each_run(tmp_path, capsys) -> None:
    from plots.cli import labels

    runs = []
    for i, eta in enumerate((0.001234567, 0.002)):
        run = tmp_path / f"r{i}"
        run.mkdir()
        _metrics(np.arange(0, 50, 10)).to_csv(run / "metrics.csv", index=False)
        settings = {"eta": eta, **{f"k{j}": i for j in range(8)}}
        (run / "config.json").write_text(__import__("json").dumps(settings))
        runs.append(run)
    bare = tmp_path / "bare"
    bare.mkdir()
    _metrics(np.arange(3)).to_csv(bare / "metrics.csv", index=False)
    names = labels([*runs, bare])
    assert names[0] == "r0 (eta=0.001235, k0=0, k1=0, k2=0, k3=0, k4=0, +3 more)"
    assert names[2] == "bare (no config.json)"
    sweep, plan = tmp_path / "sweep", tmp_path / "plan"
    report, probe = tmp_path / "checks", tmp_path / "checks" / "runs" / "drift103"  # a dfl-check --out folder
    for folder, marker in (
        (sweep, "sweep.json"),
        (plan, "plan.json"),
        (report, "report.json"),
        (probe, "probe.json"),
    ):
        folder.mkdir(parents=True)
        (folder / marker).write_text("{}")
    (report / "cache").mkdir()
    cases = (
        ([str(runs[0]), str(runs[0]) + "/"], "is given twice"),
        ([str(sweep)], f"is a dfl-sim sweep folder (expected its run folders: dfl-plot {sweep}/*/)"),
        ([str(plan)], f"dfl-plot {plan}/runs/*/"),
        # the generic "metrics.csv does not exist": no pointer to the figures or the runs (a probe)
        ([str(report)], f"is a dfl-check report folder (its figures are in {str(report / 'figures')!r}"),
        ([str(probe)], "is a dfl-check probe's folder (probe.json, no metrics.csv"),
        ([str(runs[0] / "metrics.csv")], "is a file (expected a dfl-sim run folder"),
        ([str(tmp_path / "nope")], "run folder"),
        # dfl-plot runs/grid/* took in sweep.json, and its hint named the sweep's folder, refused as such
        (
            [str(runs[0]), str(sweep / "sweep.json")],
            f"is a file of a dfl-sim sweep folder (expected run folders: dfl-plot {sweep}/*/)",
        ),
    )
    for argv, fragment in cases:
        assert main(argv) == 2
        assert fragment in capsys.readouterr().err
    (tmp_path / "figs").mkdir()
    assert main([str(runs[0]), "--out", str(tmp_path / "figs")]) == 0  # a folder: the figure goes into it
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["curves.pdf", "curves.png"]
    assert main([str(r) for r in runs]) == 0  # several runs: into the folder that holds them, not r0's
    assert (tmp_path / "curves.png").is_file() and not (runs[0] / "curves.png").exists()
    apart = tmp_path / "elsewhere" / "r2"  # runs in two folders: the first run's, not their common root
    apart.mkdir(parents=True)
    _metrics(np.arange(0, 50, 10)).to_csv(apart / "metrics.csv", index=False)
    (runs[0] / "curves.png").unlink(missing_ok=True)
    # unrelated runs: beside the first run's own figure, not over it (a probe's finding)
    assert main([str(runs[0]), str(apart)]) == 0 and (runs[0] / "comparison.png").is_file()
    assert not (runs[0] / "curves.png").exists()


def test_bound_heatmap_places_cells_by_value_and_takes_the_smallest_of_a_cell() -> None:
    """tau in {1, 2, 4, 8}: four equal cells with their values as ticks (imshow spread them over 0.5-8.5,
    the star in the wrong cell); two rows per cell (a C-DFL grid's compressors): their minimum (was the
    mean, so the star's cell was not the darkest)."""
    taus = (1, 2, 4, 8)
    grid = pd.DataFrame(
        [{"tau1": a, "tau2": b, "bound": float(a * b + c)} for a in taus for b in taus for c in (0, 100)]
    )
    fig = bound_heatmap(grid)
    ax = fig.axes[0]
    cells = ax.get_images()[0].get_array()
    assert np.allclose(cells, np.log10(np.outer(taus, taus)))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "8"]
    (star,) = ax.get_lines()
    assert star.get_xydata().tolist() == [[0.0, 0.0]] and star.get_label() == "optimum tau1=1, tau2=1"
    assert "smallest over the cell's rows" in fig.axes[1].get_ylabel()
    with pytest.raises(InputError, match=r"column 'tau1' holds .* \(expected numbers\)"):
        bound_heatmap(grid.assign(tau1=grid["tau1"].astype(str)))


def test_dfl_plot_leaves_out_a_row_cut_off_and_refuses_a_cell_that_is_no_number(tmp_path, capsys) -> None:
    """A run killed mid-row leaves a last line without its newline: its cut number (3.5e-09 cut to 3.5e-0)
    used to be drawn; it is left out with a note. A cell that is no number used to become NaN in silence."""
    from plots.cli import read_metrics

    run = tmp_path / "run"
    run.mkdir()
    text = _metrics(np.arange(0, 50, 10)).to_csv(index=False)
    (run / "metrics.csv").write_text(text + "50,50.0,0.1,0.9,3.5e-0")
    notes: list[str] = []
    frame = read_metrics(run, "step", notes.append)
    assert frame["step"].tolist() == [0, 10, 20, 30, 40] and len(notes) == 1 and "cut off" in notes[0]
    assert main([str(run)]) == 0 and "its last line is cut off" in capsys.readouterr().err
    (run / "metrics.csv").write_text(text)
    assert read_metrics(run, "step", notes.append)["step"].tolist() == [0, 10, 20, 30, 40] and len(notes) == 1
    lines = text.splitlines()
    cells = lines[2].split(",")
    column = lines[0].split(",").index("train_loss")
    cells[column] = "abc"
    (run / "metrics.csv").write_text("\n".join([*lines[:2], ",".join(cells), *lines[3:]]) + "\n")
    assert main([str(run)]) == 2
    assert "train_loss = 'abc' in row 2 is not a number" in capsys.readouterr().err
    (run / "metrics.csv").write_text(text + lines[2] + "\n")  # a row repeated at the end: drawn back
    assert main([str(run)]) == 2
    assert "step = 10 in row 6 follows step 40 (expected steps that increase" in capsys.readouterr().err
    (tmp_path / "afile").write_text("")
    (run / "metrics.csv").write_text(text)
    assert main([str(run), "--out", str(tmp_path / "afile" / "x.png")]) == 2
    assert "afile is a file, not a folder" in capsys.readouterr().err


def test_figures_refuse_what_they_drew_wrong(tmp_path) -> None:
    """Found by a Python-API probe: a grid with repeated index labels (two grids concatenated) failed inside
    pandas; save('figs/') wrote figs.png beside the folder; check_curves({}) drew an empty figure; a value
    of -inf joined the Pareto front, which the docstring says no infinite value does."""
    grid = pd.DataFrame({"tau1": [1, 1, 2, 2], "tau2": [1, 2, 1, 2], "bound": [3.0, 2.0, 1.0, 4.0]})
    fig = bound_heatmap(pd.concat([grid, grid]))
    assert fig.axes[0].get_lines()[0].get_label() == "optimum tau1=2, tau2=1"
    with pytest.raises(InputError, match="is a folder"):
        save(fig, f"{tmp_path}/figs/")
    with pytest.raises(InputError, match="is a folder"):
        save(fig, tmp_path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match="no curves"):
        check_curves({}, "title")
    mask = pareto_mask(np.array([1.0, 2.0, 3.0]), np.array([5.0, -np.inf, 1.0]))
    assert mask.tolist() == [True, False, True]


def test_dfl_plot_leaves_out_probe_folders_among_runs_and_marks_an_unfinished_run(tmp_path, capsys) -> None:
    """``dfl-plot OUT/runs/*/`` of a dfl-check folder stopped at its first probe folder; and a run with no
    summary.json (stopped, or still going) was drawn as if it had ended where its curve ends."""
    import json

    done, stopped, probe = (tmp_path / n for n in ("done", "stopped", "probe"))
    for run in (done, stopped):
        run.mkdir()
        _metrics(np.arange(0, 50, 10)).to_csv(run / "metrics.csv", index=False)
        (run / "config.json").write_text(json.dumps({"steps": 100, "eta": 0.1 if run is done else 0.2}))
    (done / "summary.json").write_text("{}")
    probe.mkdir()
    (probe / "probe.json").write_text("{}")
    assert main([str(done), str(probe), str(stopped), "--out", str(tmp_path / "c.svg")]) == 0
    err = capsys.readouterr().err
    assert f"{probe} is a dfl-check probe's folder (probe.json, no curves): left out" in err
    svg = (tmp_path / "c.svg").read_text()
    assert "stopped (eta=0.2) [unfinished: step 40 of 100]" in svg and "done (eta=0.1)" in svg
    assert "done (eta=0.1) [unfinished" not in svg
    assert main([str(probe)]) == 2  # only probes: refused as before
    assert "is a dfl-check probe's folder" in capsys.readouterr().err
    # a finished run resumed with a larger --steps keeps its old summary until it ends (a review's finding)
    (stopped / "summary.json").write_text(json.dumps({"steps": 40}))
    (done / "summary.json").write_text(json.dumps({"steps": 40, "diverged": True}))  # ended early: diverged
    assert main([str(done), str(stopped), "--out", str(tmp_path / "d.svg")]) == 0
    svg = (tmp_path / "d.svg").read_text()
    assert "stopped (eta=0.2) [unfinished: step 40 of 100]" in svg and "done (eta=0.1) [unfinished" not in svg
    assert "done (eta=0.1) [diverged at step 40]" in svg  # (a finite loss: the curve shows no NaN)
    # a cut-off summary.json drew the diverged run as finished, with no word (a probe)
    (done / "summary.json").write_text('{"steps": 40, "diver')
    (stopped / "config.json").write_bytes(b"\xff{")
    assert main([str(done), str(stopped), "--out", str(tmp_path / "e.svg")]) == 0
    svg = (tmp_path / "e.svg").read_text()
    assert "done [summary.json unreadable]" in svg and "stopped [config.json unreadable]" in svg


def test_dfl_plot_says_in_one_line_what_is_wrong_with_metrics_csv(tmp_path, capsys) -> None:
    """A row with a field too many gave pandas' message over two lines; a metrics.csv that is a folder was
    said not to exist (a probe)."""
    import json

    run = tmp_path / "r"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"steps": 100}))
    text = _metrics(np.arange(0, 50, 10)).to_csv(index=False)
    (run / "metrics.csv").write_text(text + text.splitlines()[1] + ",7\n")
    assert main([str(run), "--out", str(tmp_path / "c.svg")]) == 2
    err = capsys.readouterr().err.strip()
    assert "metrics.csv is not a readable CSV (Error tokenizing data. C error: Expected" in err
    assert len(err.splitlines()) == 1, err
    (run / "metrics.csv").unlink()
    (run / "metrics.csv").mkdir()
    assert main([str(run), "--out", str(tmp_path / "c.svg")]) == 2
    assert "metrics.csv is a folder, not a file (expected a dfl-sim run folder)" in capsys.readouterr().err
    assert main([str(run), "--out", ""]) == 2  # an unset $OUT: the default was drawn in silence
    assert "--out = '' is empty (expected a file or folder" in capsys.readouterr().err


def test_figures_a_probe_found_drawing_wrong_pictures() -> None:
    """run_curves: run 0 and run 10 were one colour and style; tightness_figure joined N = 3 and N = 4 into
    one sawtooth line; bound_heatmap dropped an all-NaN row; drift_ratio_heatmaps then put 'n/c' on the
    wrong cells (its two tables lost a column apart)."""

    from plots.figures import (
        bound_heatmap,
        drift_ratio_heatmaps,
        drift_vs_bound,
        run_curves,
        tightness_figure,
    )

    runs = {f"r{i}": _metrics(np.arange(0, 50, 10)) for i in range(12)}
    fig = run_curves(runs)
    lines = fig.axes[0].get_lines()
    styles = [(line.get_color(), line.get_linestyle()) for line in lines]
    assert len(set(styles)) == 12 and styles[0][0] == styles[10][0]  # the same colour, another style
    rows = [
        {"topology": top, "N": n, "tau1": 2, "tau2": t2, "varsigma2": 1.0, "worst_case": n * t2,
         "bound": 2.0 * n * t2, "worst_case_all_steps": 1.5, "bound_paper": 3.0}
        for n, top, t2 in itertools.product([3, 4], ["ring", "path"], [1, 2, 4])
    ]  # fmt: skip
    fig = tightness_figure(rows)
    assert len(fig.axes) == 4 and "N = 3" in fig.axes[0].get_title()
    first = fig.axes[0].get_lines()[0]
    assert list(first.get_xdata()) == [1, 2, 4] and list(first.get_ydata()) == [3, 6, 12]
    grid = pd.DataFrame(
        [
            {"tau1": t1, "tau2": t2, "bound": np.nan if t1 == 2 else t1 + t2}
            for t1 in (1, 2, 4)
            for t2 in (1, 2)
        ]
    )
    fig = bound_heatmap(grid)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["1", "2", "4"]
    ratios = [
        {"partition": "iid", "topology": "ring", "zeta": 0.9, "tau1": t1, "tau2": t2,
         "ratio": np.nan if t2 == 2 else 0.1 * t1 + 0.01 * t2, "condition_ok": not (t1 == 4 and t2 == 8)}
        for t1, t2 in itertools.product([1, 2, 4], [1, 2, 8])
    ]  # fmt: skip
    fig = drift_ratio_heatmaps(ratios, "iid")
    marks = {
        (round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in fig.axes[0].texts
    }
    assert marks[(2, 2)] == "n/c" and marks[(0, 2)] == "0.41"  # (tau2 = 8, tau1 = 4) and (tau2 = 1, tau1 = 4)
    # drift_vs_bound: a 0 set the floor to 0, and an infinite bound made the diagonal vanish
    fig = drift_vs_bound([{"measured": 0.0, "stated": 0.0, "corrected": 1e-3},
                          {"measured": 1e-4, "stated": np.inf, "corrected": 2e-4},
                          {"measured": 2e-3, "stated": 1e-3, "corrected": 3e-3}])  # fmt: skip
    [diagonal] = fig.axes[0].get_lines()
    assert list(diagonal.get_xdata()) == [5e-05, pytest.approx(3.6e-3)]
    assert "(1 infinite bounds not drawn)" in diagonal.get_label()


def test_a_figure_cut_off_mid_write_leaves_no_file(tmp_path, monkeypatch) -> None:
    """save wrote the figure in place: a Ctrl-C (or a full disk) mid-write left a cut-off PNG that looked
    drawn. Each file is now written whole or not at all; the format follows the name, not the .tmp twin."""
    from matplotlib.figure import Figure

    real = Figure.savefig
    fig = fig3_variance([0.16, 0.03, 0.007, 0.002])
    (tmp_path / "old.png").write_bytes(b"the earlier figure")

    def cut_off(self: Figure, fname: object, **kwargs: object) -> None:
        with open(fname, "wb") as fh:  # type: ignore[call-overload]
            fh.write(b"\x89PNG half")
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", cut_off)
    with pytest.raises(KeyboardInterrupt):
        save(fig, tmp_path / "fig3")
    with pytest.raises(KeyboardInterrupt):
        save(fig, tmp_path / "old.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.png"]
    assert (tmp_path / "old.png").read_bytes() == b"the earlier figure"
    monkeypatch.setattr(Figure, "savefig", real)
    for name in ("a.svg", "b.JPG", "c.pdf"):
        (path,) = save(fig3_variance([0.16, 0.03]), tmp_path / name)
        assert path.read_bytes()[:4] in (b"<?xm", b"\xff\xd8\xff\xe0", b"%PDF"), name


def test_plausible_mistakes_with_the_figure_functions_are_named() -> None:
    """A path where a table belongs, an optimiser's raw grid, save(fig, None), save('fig', 'x.png') and
    strings to pareto_mask were AttributeErrors, TypeErrors and numpy's ValueError; an empty run, a grid
    without a finite bound and a 2-d variance were drawn as empty or wrong figures (a library probe)."""
    from plots.figures import pareto_front, run_curves

    r = optimize_dfl(L=1, sigma2=1, N=10, gap=1, zeta=0.87, cost=CostModel(1, 0.5), budget_seconds=500,
                     max_tau1=4, max_tau2=4)  # fmt: skip
    columns = ["step", "model_time", "train_loss", "test_acc", "consensus", "grad_norm2"]
    cases = [
        (lambda: run_curves({"a": "runs/a/metrics.csv"}), r"^run_curves, run 'a': the table is a str"),
        (lambda: bound_heatmap(r.grid), r"^bound_heatmap: the table is a dict \(expected a pandas DataFrame"),
        (lambda: save(fig3_variance([1.0]), None), r"^save: path = None is not a file name"),
        (lambda: save("fig", "x.png"), r"^save: fig = 'fig' is a str \(expected a matplotlib Figure"),
        (lambda: pareto_mask(np.array(["a"]), np.array([1.0])), r"are not both numbers"),
        (lambda: run_curves({"a": pd.DataFrame(columns=columns)}), r"^run_curves, run 'a': .* has no rows"),
        (lambda: pareto_front(r.grid_frame().assign(bound=np.inf)), r"^pareto_front: no finite 'bound'"),
        (lambda: fig3_variance([[1.0, 0.5]]), r"^variance has shape \(1, 2\) \(expected a 1-d list"),
    ]
    for call, message in cases:
        with pytest.raises(InputError, match=message):
            call()


def test_figures_say_what_they_leave_out_and_what_they_draw() -> None:
    """A probe looked at every figure: blank heatmap cells and undrawn Pareto cells went unsaid, a C-DFL
    front's cheap cells stacked at 0 on a linear bits axis, Proposition 1 was drawn alike where its
    condition fails (where it claims nothing), a drift below float32 rounding showed as ratio 0.00, and the
    seed curves did not say what line and band are."""
    from plots.figures import drift_ratio_heatmaps, pareto_front, tightness_figure

    plt.close("all")  # (the tests before leave theirs open)
    cells = itertools.product([1, 2, 3], [1, 2, 3])
    grid = pd.DataFrame(
        {"tau1": t1, "tau2": t2, "time": 10.0 ** (t1 + t2), "bound": np.inf if t2 == 3 else 1.0 / (t1 * t2)}
        for t1, t2 in cells
    )
    assert bound_heatmap(grid).axes[0].get_title() == "blank: no finite bound (3 of 9 cells)"
    ax = pareto_front(grid).axes[0]
    assert ax.get_xscale() == "log"  # costs 1e2 .. 1e5
    assert "3 of 9 without a finite bound: not drawn" in ax.get_legend().get_texts()[0].get_text()
    assert pareto_front(grid.assign(time=grid["tau1"] + 1.0)).axes[0].get_xscale() == "linear"
    rows = [{"topology": "ring", "tau1": 2, "tau2": t2, "varsigma2": 0.5, "worst_case": 1.0, "bound": 2.0,
             "worst_case_all_steps": 0.9, "bound_paper": 1.5, "paper_condition_ok": t2 != 2}
            for t2 in (1, 2, 4)]  # fmt: skip
    fig = tightness_figure(rows)
    hollow = [line for line in fig.axes[0].get_lines() if line.get_markerfacecolor() == "none"]
    assert [line.get_ydata()[1] for line in hollow] == [1.5] and np.isnan(hollow[0].get_ydata()[[0, 2]]).all()
    assert "condition (eta) fails" in " ".join(t.get_text() for t in fig.legends[0].get_texts())
    ratios = [{"partition": "iid", "topology": "ring", "zeta": 0.9, "tau1": t1, "tau2": 1, "ratio": 0.0,
               "condition_ok": True, "measured": 1e-11 if t1 == 1 else 1e-3, "rounding_floor": 1e-9}
              for t1 in (1, 2)]  # fmt: skip
    marks = [t.get_text() for t in drift_ratio_heatmaps(ratios, "iid").axes[0].texts]
    assert marks == ["rnd", "0.00"]
    ratios[1] |= {"ratio": float("nan"), "rounding_floor": float("inf")}  # as a report's JSON holds them:
    read_back = json.loads(json.dumps(jsonable(ratios)))  # 'nan', 'inf' (a TypeError, then no figure)
    assert [t.get_text() for t in drift_ratio_heatmaps(read_back, "iid").axes[0].texts] == ["rnd", "rnd"]
    seeds = [[[0, 1.0, 0.1, 0, 0], [1, 0.5, 0.2, 1, 1]]] * 3
    title = check_curves({"a": seeds}, "Fig. 8")._suptitle
    assert title is not None and "mean over 3 seeds; band: their min..max" in title.get_text()
    title = check_curves({"a": seeds[:1]}, "Fig. 8")._suptitle
    assert title is not None and "(one seed)" in title.get_text()
    plt.close("all")  # (drawn, not saved: save closes its figure)
