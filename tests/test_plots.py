"""Figures are drawn from tables and written as PNG and PDF."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bounds import CostModel, InputError, optimize_dfl
from plots.__main__ import main
from plots.figures import bound_heatmap, drift_vs_bound, fig3_variance, save


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
    cost, value = rng.random(60), rng.random(60)
    mask = pareto_mask(cost, value)
    for i in range(60):
        dominated = any(cost[j] <= cost[i] and value[j] < value[i] for j in range(60) if j != i)
        assert mask[i] == (not dominated)
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
