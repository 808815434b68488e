"""dfl-check: runs every registered check, reports, caches, and rejects unknown ids."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import paper_checks.drift as drift
import paper_checks.experiments as experiments
import paper_checks.heterogeneity_cnn as heterogeneity_cnn
from paper_checks.cli import main
from paper_checks.registry import STATUSES, load_checks

CHECKS = load_checks()
SIMULATING = {"drift-103-cnn", "drift-non-iid-cnn"}  # train the CNN: tested on tiny settings below
SLOW = {"repair-nonquadratic", "tightness"}  # Monte Carlo, SDPs: shrunken grids in test_check_mutations
THEORY = [
    i for i in CHECKS if (not i.startswith("fig") or i == "fig3-variance") and i not in SIMULATING | SLOW
]


def test_quick_run_reports_every_theory_check_and_caches(tmp_path, capsys) -> None:
    """The device-free checks first run beside a device check, in the background process of
    paper_checks.overlap, with a device this machine lacks ('cuda:99'): a check that touched the device
    could not run. A CPU run then finds them cached (a device-free check's cache key leaves the device out)
    and reports them with the planner's two (device checks, run then)."""
    import threading

    from paper_checks.report import run_checks

    calls = []
    record = lambda i, n, r: calls.append((i, n, r["id"], threading.current_thread()))  # noqa: E731
    chosen = [*(i for i in THEORY if not CHECKS[i].on_device), "fig9-zeta"]
    said: list[str] = []
    overlapped = run_checks(
        chosen, True, tmp_path, None, "cuda:99", progress=record, workers=2, say=said.append
    )
    (line,) = said  # the joint sweep of the simulations (paper_checks.presweep) came first, and failed
    assert line.startswith("the sweep of 12 runs (fig9-zeta) failed: InputError: device = 'cuda:99'")
    assert [r["id"] for r in overlapped] == [i for i in CHECKS if i in chosen]  # registry order
    assert [(i, n) for i, n, _, _ in calls] == [(i, len(chosen)) for i in range(1, len(chosen) + 1)]
    assert {r["id"] for r in overlapped if r["status"] == "could not run"} == {"fig9-zeta"}
    main_thread = {check_id for _, _, check_id, thread in calls if thread is threading.main_thread()}
    assert main_thread == {"fig9-zeta"}  # the others came from the background process
    assert main(["--quick", "--out", str(tmp_path), "--json", "--only", *THEORY]) == 0
    cached = {r["id"]: r["cached"] for r in json.loads((tmp_path / "report.json").read_text())["checks"]}
    assert cached == {i: not CHECKS[i].on_device for i in THEORY}  # the planner's two ran now, on the CPU
    results = json.loads(capsys.readouterr().out)
    assert all({"id", "claim", "status", "evidence"} <= r.keys() and r["status"] in STATUSES for r in results)
    status = {r["id"]: r["status"] for r in results}
    assert status["zeta-values"] == "holds" and status["lemmas-5-6-7"] == "holds"
    assert status["prop1-noise-free"] == "violated" and status["local-drift"] == "violated"
    assert status["drift-103-quadratic"] == "violated"
    assert status["corollary-1"] == "violated" and status["corollary-2"] == "violated"
    assert status["repair-correlated-noise"] == "violated"
    assert status["prop1-non-iid"] == "holds" and status["drift-non-iid"] == "holds"  # decided, not reference
    corollary2 = next(r for r in results if r["id"] == "corollary-2")["evidence"]
    assert corollary2["smallest_counterexample"]["ratio"] == pytest.approx(0.3446 / 0.3333, abs=1e-3)
    assert {"lhs", "rhs", "ratio"} <= corollary2["table"][0].keys()
    assert "could not run" not in status.values()
    report = (tmp_path / "report.md").read_text()
    assert "| prop1-noise-free | Proposition 1 | **violated** |" in report
    assert json.loads((tmp_path / "report.json").read_text())["checks"][0]["id"] == results[0]["id"]
    assert main(["--out", str(tmp_path), "--only", "zeta-values", "fig3-variance"]) == 0
    assert "holds" in capsys.readouterr().out
    document = json.loads((tmp_path / "report.json").read_text())
    cached = document["checks"]
    assert [r["id"] for r in cached] == ["zeta-values", "fig3-variance"] and all(r["cached"] for r in cached)
    assert document["complete"] and (document["done"], document["selected"], document["pending"]) == (
        2,
        2,
        [],
    )
    assert document["mode"] == "quick" and len(document["left_out"]) == len(CHECKS) - 2


def test_unknown_check_is_exit_2_naming_every_unknown_id_and_the_close_ones(tmp_path, capsys) -> None:
    """A run and --list named unknown ids in two ways (the run: only the first, then all 33 ids)."""
    for flags in ([], ["--list"]):
        assert main(["--only", "fig99", "fig7", "zeta-values", "--out", str(tmp_path), *flags]) == 2
        err = capsys.readouterr().err.strip()
        assert err == (
            "dfl-check: error: --only names unknown checks: 'fig99', 'fig7' "
            "(expected ids dfl-check --list names; close: fig7-tau2, fig7-cifar)"
        )
    assert main(["--only", "nosuch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown checks: 'nosuch' (expected ids dfl-check --list names: " in err
    assert all(f"{i}," in err or f"{i})" in err for i in ("fig7-tau2", "assumption2", "tightness")), err


def test_an_empty_only_id_is_named_quoted_and_close_to_no_check(tmp_path, capsys) -> None:
    """``--only ''`` printed 'unknown checks:  (... close: <all 34 ids>)': the empty id was invisible and a
    prefix of every id (a probe); an id given twice was named twice."""
    assert main(["--only", "", " ", "nosuch", "nosuch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown checks: '', ' ', 'nosuch' (expected ids dfl-check --list names: " in err, err
    assert "close" not in err and "tightness" in err, err


def test_experiment_checks_run_end_to_end_on_tiny_settings(tmp_path, capsys, monkeypatch) -> None:
    """The Fig. 8 machinery (runs, cache, verdict, figures) on 4 local steps per run: plumbing only."""
    monkeypatch.setattr(
        experiments,
        "_settings",
        lambda quick: {"eta": 0.05, "seeds": [0, 1], "local_steps": 4, "eval_samples": 30},
    )
    assert main(["--quick", "--out", str(tmp_path), "--only", "fig8-tau1", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert result["status"] in STATUSES and result["status"] != "could not run", result["summary"]
    assert len(result["evidence"]["pairs"]) == 3 and (tmp_path / "figures" / "fig8-tau1.png").is_file()
    assert len(list((tmp_path / "runs").iterdir())) == 8  # 4 configurations x 2 seeds


@pytest.mark.parametrize("check_id", ["fig7-tau2", "fig9-zeta", "fig10-cdfl"])
def test_every_experiment_check_is_registered(check_id: str) -> None:
    assert check_id in CHECKS and CHECKS[check_id].ref.startswith("Fig.")


def test_cnn_drift_check_runs_end_to_end_on_tiny_settings(tmp_path, capsys, monkeypatch) -> None:
    """drift-103-cnn's machinery (probes, estimates, cache, verdict, figure) on 4 local steps: plumbing."""
    tiny = {
        "seeds": [0],
        "local_steps": 4,
        "eval_samples": 8,
        "grad_every": 1,
        "hessian_samples": 16,
        "hessian_iters": 3,
        "eta": 0.05,
        "batch_size": 32,
    }
    monkeypatch.setattr(drift, "_cnn_settings", lambda quick: tiny)
    assert main(["--quick", "--out", str(tmp_path), "--only", "drift-103-cnn", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert result["status"] in STATUSES and result["status"] != "could not run", result["summary"]
    table = result["evidence"]["table"]
    assert [(r["tau1"], r["tau2"]) for r in table] == list(drift.CNN_SCHEDULES)
    assert all(r["measured"] > 0 and r["bound_103"] > 0 for r in table)
    assert result["evidence"]["L_hat"] > 0
    assert (tmp_path / "figures" / "drift-103-cnn-vs-bound.png").is_file()
    assert len(list((tmp_path / "runs").glob("drift103-*/probe.json"))) == 4


TINY_NON_IID = {
    "partitions": ["shards", "iid"], "tau1": [1, 2], "tau2": [1], "topologies": ["ring", "complete"],
    "local_steps": 4, "samples": 8, "points": 2, "hessian_samples": 32, "hessian_iters": 3, "batch_size": 32,
    "seed": 0,
}  # fmt: skip


def test_non_iid_cnn_check_runs_end_to_end_on_tiny_settings(tmp_path, capsys, monkeypatch) -> None:
    """drift-non-iid-cnn's machinery (probes, estimates, cache, verdict, heatmaps) on 4 local steps."""
    monkeypatch.setattr(heterogeneity_cnn, "_cnn_grid", lambda quick: TINY_NON_IID)
    assert main(["--quick", "--out", str(tmp_path), "--only", "drift-non-iid-cnn", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert result["status"] in STATUSES and result["status"] != "could not run", result["summary"]
    table = result["evidence"]["table"]
    assert len(table) == 8 and {r["partition"] for r in table} == {"shards", "iid"}
    assert all(r["L"] > 0 and len(r["sigma2"]) == 2 for r in table)
    # the bound is 0 only where nodes leave an exact average for one local step (C = J: zeta is 0 now, not
    # eigvalsh's 6e-17, which had made it 1e-30-ish): the drift measured there is float32 rounding
    zero = [r for r in table if r["bound"] == 0]
    assert all(r["bound"] > 0 for r in table if r not in zero)
    assert all(r["zeta"] == 0 and r["tau1"] == 1 and r["measured"] < r["rounding_floor"] for r in zero)
    ring_shards = [r for r in table if r["partition"] == "shards" and r["topology"] == "ring"]
    assert all(r["measured"] > r["rounding_floor"] for r in ring_shards)  # a real drift, not rounding
    for name in ("heatmap-shards", "heatmap-iid", "vs-zeta"):
        assert (tmp_path / "figures" / f"drift-non-iid-cnn-{name}.png").is_file()
    assert len(list((tmp_path / "runs").glob("noniid-*/probe.json"))) == 8


def _curve(end_time: float) -> list[list[float]]:
    """Rows [step, loss, acc, model_time, local steps]: loss 1 -> 0.6 linearly over 8 steps (4 local)."""
    return [[0, 1.0, 0.1, 0.0, 0], [8, 0.6, 0.9, end_time, 4]]


def test_wallclock_gains_by_hand() -> None:
    """DFL ends at modelled time 8 (gossip fraction 1), a compressed run at 6 (fraction 0.5).

    gossip 0.6 ends at 9 (slower than DFL, as the paper says it is worse)."""
    seeds = 2  # the same curve on both seeds: the margins are equal, and their sign decides
    curves = {"DFL": [_curve(8.0)] * seeds, "gossip delta=0.6": [_curve(9.0)] * seeds} | {
        k: [_curve(6.0)] * seeds for k in ("rand_k delta=0.89", "rand_k delta=0.67", "gossip delta=0.8")
    }
    one = experiments._wallclock_gains(curves, 1.0)
    assert one["horizon"] == 6.0  # the compressed runs end first
    dfl, compressed = 1 - 0.4 * 2.4 / 8, 1 - 0.4 * 2.4 / 6  # losses at 40% of the horizon, t = 2.4
    assert one["gains"]["40%"]["rand_k delta=0.89"] == [pytest.approx((dfl - compressed) / dfl)] * seeds
    assert one["verdict"] == "inconclusive"  # rand_k 0.67 is not ahead of 0.89 (equal curves)
    ten = experiments._wallclock_gains(curves, 10.0)  # a gossip step costs 10 local steps
    assert ten["horizon"] == 4 + 2 * 10
    dfl, compressed = 1 - 0.4 * 9.6 / 44, 1 - 0.4 * 9.6 / 24
    assert ten["gains"]["40%"]["gossip delta=0.8"] == [pytest.approx((dfl - compressed) / dfl)] * seeds
    curves["rand_k delta=0.67"] = [_curve(5.0)] * seeds
    assert experiments._wallclock_gains(curves, 1.0)["verdict"] == "holds"
    curves["gossip delta=0.8"] = [_curve(9.0)] * seeds  # slower than DFL: the paper's +50.7% is contradicted
    assert experiments._wallclock_gains(curves, 1.0)["verdict"] == "violated"
    one_seed = {k: v[:1] for k, v in curves.items()}
    assert experiments._wallclock_gains(one_seed, 1.0)["verdict"] == "inconclusive"


def test_paired_verdict_decides_by_a_paired_t_test_at_the_family_level() -> None:
    """The figure checks' rule. The one before it (the seed ranges do not overlap; 'violated' if any pair
    is separated the wrong way) said 'violated' 15-75% of the time on data with no difference at all
    (a probe, 2026-11-28): here an ordering of 3 pairs with 3 seeds on such data says it at most 5% of the
    time, while a real difference of a few seed spreads is decided, either way."""
    paired = experiments.paired_verdict
    assert paired([0.66, 0.65, 0.67], family=8)["verdict"] == "holds"
    assert paired([-0.66, -0.65, -0.67], family=8)["verdict"] == "violated"
    assert paired([0.2, -0.1, 0.05], family=1)["verdict"] == "inconclusive"
    assert paired([0.1, 0.1], family=3)["verdict"] == "holds"  # equal margins: the sign decides
    assert paired([0.0, 0.0], family=3)["verdict"] == "inconclusive"
    assert paired([0.5], family=1)["verdict"] == "inconclusive"  # one seed: no spread to judge by
    inf = float("inf")  # a run that diverged: on every seed it decides, on some only it does not
    assert experiments._ordering({"a": [inf] * 3, "b": [0.5, 0.6, 0.55]}, ["a", "b"])[0] == "violated"
    assert experiments._ordering({"a": [0.5, 0.6, 0.55], "b": [inf] * 3}, ["a", "b"])[0] == "holds"
    assert (
        experiments._ordering({"a": [inf, 0.5, 0.5], "b": [0.5, 0.6, 0.55]}, ["a", "b"])[0] == "inconclusive"
    )
    # two untrained CIFAR-10 runs (loss 2.31, from the same initial model on each seed) differ by nearly
    # the same 4e-4 on both seeds: t = -397, p = 0.0016, yet no difference worth a verdict (a probe)
    untrained = paired([-0.000394, -0.000396], family=1, scale=2.31)
    assert untrained["p"] < untrained["level"] and untrained["verdict"] == "inconclusive"
    assert paired([-0.0394, -0.0396], family=1, scale=2.31)["verdict"] == "violated"  # 1.7% of the loss
    gain = paired([0.012, 0.011, 0.013], family=1)  # Fig. 10's relative gains: the floor is 1 point, scale 1
    assert gain["verdict"] == "holds" and paired([0.008, 0.007, 0.009], family=1)["verdict"] == "inconclusive"
    assert "1 percentage point of relative gain against wall-clock" in experiments._rule(
        14, experiments.FIG10_FLOOR
    )
    test = paired([0.3, 0.1, 0.2], family=2)  # t = 0.2 / (0.1 / sqrt 3) = 3.46 on 2 df: p = 0.074
    assert test["t"] == pytest.approx(3.4641, rel=1e-4) and test["p"] == pytest.approx(0.0742, abs=2e-4)
    assert test["level"] == 0.025 and test["verdict"] == "inconclusive"
    rng = np.random.default_rng(0)
    checks, seeds, order = 4000, 3, ["c0", "c1", "c2", "c3"]  # an ordering of 3 pairs, its own family
    said = 0
    for _ in range(checks):  # final losses with no real difference, and a seed effect all runs share
        values = rng.normal(size=(len(order), seeds)) + rng.normal(size=seeds)
        verdict, _ = experiments._ordering(dict(zip(order, values.tolist(), strict=True)), order)
        said += verdict != "inconclusive"
    assert said / checks <= 0.05
    # a separation of 4 seed spreads on each pair is decided with 3 seeds
    strong = {"a": [0.0, 0.1, -0.1], "b": [4.0, 4.2, 3.9], "c": [8.1, 7.9, 8.0]}
    assert experiments._ordering(strong, ["a", "b", "c"], 8)[0] == "holds"
    assert experiments._ordering(strong, ["c", "b", "a"], 8)[0] == "violated"


def test_cifar_check_without_data_says_how_to_give_it(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("DFLKIT_CIFAR10_DIR", raising=False)
    assert main(["--quick", "--out", str(tmp_path), "--only", "fig7-cifar", "--json"]) == 3  # (it was 0)
    (result,) = json.loads(capsys.readouterr().out)
    assert result["status"] == "could not run" and "--cifar-dir" in result["summary"]
    assert not list((tmp_path / "cache").glob("fig7-cifar*"))  # a failure is not cached


def test_a_check_that_could_not_run_says_why_on_the_terminal(tmp_path, capsys, monkeypatch) -> None:
    """The table and the progress line give the reason (not only report.json)."""
    monkeypatch.delenv("DFLKIT_CIFAR10_DIR", raising=False)
    assert main(["--quick", "--out", str(tmp_path), "--only", "fig7-cifar"]) == 3
    captured = capsys.readouterr()
    table = captured.out.splitlines()
    row = next(i for i, line in enumerate(table) if line.startswith("fig7-cifar"))
    assert "could not run" in table[row] and "--cifar-dir" in table[row + 1]
    progress = [line for line in captured.err.splitlines() if "fig7-cifar: could not run" in line]
    assert progress and "--cifar-dir" in progress[0]


def test_cifar_check_runs_end_to_end_on_tiny_settings(tmp_path, capsys, monkeypatch, cifar_dir) -> None:
    """fig7-cifar with a tiny CIFAR-format folder, 4 local steps, one seed: plumbing only."""
    cifar = {"eta": 0.05, "local_steps": 4, "tau2s": [15, 1], "eval_samples": 20, "log_points": 2}
    cifar["same_total"] = True
    mnist = {"eta": 0.05, "seeds": [0], "local_steps": 4, "eval_samples": 20}
    monkeypatch.setattr(experiments, "_cifar", lambda quick: cifar)
    monkeypatch.setattr(experiments, "_settings", lambda quick: mnist)
    args = ["--quick", "--out", str(tmp_path / "out"), "--only", "fig7-cifar", "--json"]
    assert main([*args, "--cifar-dir", str(cifar_dir)]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert result["status"] in STATUSES and result["status"] != "could not run", result["summary"]
    assert len(result["evidence"]["same_total_steps"]) == 1  # one pair: tau2 = 15 against 1
    assert len(list((tmp_path / "out" / "runs").iterdir())) == 4  # tau2 = 15, 1 x same T (8), same local (4)


def test_device_reaches_the_simulations(tmp_path, capsys) -> None:
    """The device goes into every run's config: without CUDA, a CUDA run says so (and is not cached); the
    CLI refuses such a --device before anything runs (exit 2, one line)."""
    import torch

    from paper_checks.report import run_checks

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the refusal cannot be observed")
    (result,) = run_checks(["fig9-zeta"], True, tmp_path, None, "cuda", workers=1)
    assert result["status"] == "could not run" and "no CUDA device is available" in result["summary"]
    assert main(["--out", str(tmp_path), "--only", "fig9-zeta", "--device", "cuda", "--json"]) == 2
    assert "device = 'cuda' but no CUDA device is available" in capsys.readouterr().err


def test_a_figure_that_fails_does_not_lose_the_report(tmp_path, monkeypatch) -> None:
    """The verdicts are the results, a figure a view of them: report.md is written with a line saying why
    the figure is missing (a tightness table with a cell without a worst case once crashed the report)."""
    import paper_checks.report as report

    def broken(result, folder):
        raise TypeError("'value' must be an instance of str or bytes, not a float")

    monkeypatch.setattr(report, "_figures", broken)
    result = {"id": "tightness", "ref": "r", "claim": "c", "method": "m", "status": "holds", "summary": "s",
              "evidence": {"table": [{"a": 1.0}]}, "seconds": 1.0}  # fmt: skip
    report.write_report([result], tmp_path, quick=True)
    text = (tmp_path / "report.md").read_text()
    assert "(figure not drawn: TypeError: 'value' must be" in text and "| a |" in text


def test_figures_holds_only_the_reports_own(tmp_path) -> None:
    """A report of other checks (--only) leaves no figure of an earlier run behind, where it would pass for
    this run's; a user's other files stay; a report in progress (no figures yet) keeps none of the earlier
    run's (an interrupted run left them beside it, to pass for its own)."""
    from paper_checks.report import write_report

    variance = {"id": "fig3-variance", "ref": "Fig. 3", "claim": "c", "method": "m", "status": "holds",
                "summary": "s", "evidence": {"variance": [{"variance": 1.0}, {"variance": 0.5}]}}  # fmt: skip
    write_report([variance], tmp_path, quick=True)
    assert sorted(f.name for f in (tmp_path / "figures").iterdir()) == ["fig3.pdf", "fig3.png"]
    (tmp_path / "figures" / "notes.txt").write_text("mine")
    other = {**variance, "id": "zeta-values", "evidence": {}}
    write_report([other], tmp_path, quick=True, selected=["zeta-values", "fig3-variance"])  # in progress
    assert sorted(f.name for f in (tmp_path / "figures").iterdir()) == ["notes.txt"]
    write_report([variance], tmp_path, quick=True)
    write_report([other], tmp_path, quick=True)
    assert sorted(f.name for f in (tmp_path / "figures").iterdir()) == ["notes.txt"]


def test_the_cache_survives_a_bad_file_and_another_spelling_of_out(tmp_path, capsys, monkeypatch) -> None:
    """An empty or malformed cache file is no cache (it crashed dfl-check with a JSONDecodeError); --out q
    and --out /abs/q are one folder with one cache (the relative spelling re-ran every check)."""
    monkeypatch.chdir(tmp_path)
    assert main(["--out", "q", "--only", "zeta-values", "--json"]) == 0
    capsys.readouterr()
    assert main(["--out", str(tmp_path / "q"), "--only", "zeta-values", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "holds"
    assert json.loads((tmp_path / "q" / "report.json").read_text())["checks"][0]["cached"]
    for bad in ("", "[1, 2]", '{"fingerprint": '):
        (tmp_path / "q" / "cache" / "zeta-values-quick.json").write_text(bad)
        assert main(["--out", "q", "--only", "zeta-values", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)[0]["status"] == "holds"
        assert not json.loads((tmp_path / "q" / "report.json").read_text())["checks"][0]["cached"]


def test_the_cifar_folder_from_the_environment_is_part_of_the_cache_key(tmp_path, monkeypatch) -> None:
    from paper_checks.report import select
    from sim.data import CIFAR10_BATCHES

    for folder in ("a", "b"):  # the six batches must be there (what they hold is read by the check)
        (tmp_path / folder).mkdir()
        for name in CIFAR10_BATCHES:
            (tmp_path / folder / name).touch()
    monkeypatch.setenv("DFLKIT_CIFAR10_DIR", str(tmp_path / "a"))
    (chk,), context_a = select(["fig7-cifar"], True, tmp_path)
    monkeypatch.setenv("DFLKIT_CIFAR10_DIR", str(tmp_path / "b"))
    _, context_b = select(["fig7-cifar"], True, tmp_path)
    assert context_a.cifar_dir == str(tmp_path / "a")
    assert chk.fingerprint(context_a) != chk.fingerprint(context_b)


def test_a_partial_report_says_so_and_a_long_summary_stays_one_table_row(tmp_path, monkeypatch) -> None:
    from paper_checks.registry import CHECKS as REGISTERED

    def two_lines(context: object, statement: object) -> None:
        raise ValueError("a | b\nsecond line")

    broken = dataclasses.replace(REGISTERED["zeta-values"], run=two_lines)
    monkeypatch.setitem(REGISTERED, "zeta-values", broken)
    assert main(["--out", str(tmp_path), "--only", "zeta-values", "fig3-variance"]) == 3  # (could not run)
    report = (tmp_path / "report.md").read_text()
    assert f"**Partial report:** 2 of the {len(REGISTERED)} checks" in report and "fig7-tau2" in report
    (row,) = [line for line in report.splitlines() if line.startswith("| zeta-values |")]
    assert row.endswith("ValueError: a / b second line |")


def test_list_names_every_check(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(CHECKS)
    assert list(tmp_path.iterdir()) == []  # it made ./paper_checks_out, and refused an --out that is a file


@pytest.mark.parametrize("stopped_in", ["remarks-1-2", "zeta-values"])
def test_a_stopped_dfl_check_leaves_the_report_of_the_checks_that_finished(tmp_path, stopped_in: str) -> None:
    """SIGTERM (what `timeout` sends) during the second of two checks: exit 130 with a message, and
    report.md / report.json hold the first check's verdict, marked as in progress (before, the process died
    and left no report). In a child process: the signal is real. Stopped in the first check, the message
    pointed at a report.md that did not exist (a probe)."""
    import os
    import subprocess
    import sys

    child = f"""
import os, signal, time
import paper_checks.report as report
real = report.run_one
def run_one(chk, context, cache_dir):
    if chk.id == {stopped_in!r}:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    return real(chk, context, cache_dir)
report.run_one = run_one
from paper_checks.cli import main
raise SystemExit(main(["--only", "zeta-values", "remarks-1-2", "--out", {str(tmp_path)!r}]))
"""
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 130, done.stderr[-2000:]
    if stopped_in == "zeta-values":
        assert "interrupted; no check had finished\n" in done.stderr  # (no runs/ to name: none simulated)
        assert not (tmp_path / "report.md").exists()
        return
    assert "interrupted; the checks that finished are in" in done.stderr
    md = (tmp_path / "report.md").read_text()
    assert "**In progress:** 1 of 2 checks done" in md
    assert "| zeta-values |" in md and "| remarks-1-2 |" not in md
    document = json.loads((tmp_path / "report.json").read_text())  # (it was a bare list, as when finished)
    assert [r["id"] for r in document.pop("checks")] == ["zeta-values"]
    left_out = document.pop("left_out")  # (it said [] while in progress, and report.md no word: a probe)
    assert (
        len(left_out) == len(CHECKS) - 2 and "zeta-values" not in left_out and "remarks-1-2" not in left_out
    )
    assert document == {
        "mode": "quick",
        "complete": False,
        "done": 1,
        "selected": 2,
        "pending": ["remarks-1-2"],
    }
    assert "(not yet: remarks-1-2)" in md and "**Partial report:** 2 of the " in md


def test_proof_sums_decides_the_strict_inequality_before_92_exactly() -> None:
    """In floats the sum at (92) at zeta = 0.3, j = 29 equals its bound 1 / (1 - 0.3) to the last bit,
    and the check called the paper's true strict '<' failed there (186 such cells, a probe); in exact
    arithmetic it holds, and fails only at zeta = 0, where the sum is 1 = the bound."""
    from paper_checks.theory import PROOF_SUMS, _not_strictly_below

    assert float(sum(0.3**m for m in range(30))) == 1 / (1 - 0.3)  # the float tie
    ties: list = []
    assert not _not_strictly_below(PROOF_SUMS, "geometric_92_full", 0.3, 1, 29, ties)
    assert not _not_strictly_below(PROOF_SUMS, "geometric_92_tail", 0.87, 10, 29, ties)
    assert _not_strictly_below(PROOF_SUMS, "geometric_92_full", 0.0, 1, 0, ties)
    floats_only = PROOF_SUMS | {"geometric_92_full_bound": lambda z, t: 1 / (1 - float(z) ** t)}
    assert not _not_strictly_below(floats_only, "geometric_92_full", 0.3, 1, 29, ties)  # a tie: undecided
    assert ties == [{"sum": "geometric_92_full", "zeta": 0.3, "tau2": 1, "j": 29}]


def test_a_damaged_cache_entry_is_no_cache(tmp_path, capsys) -> None:
    """An edited or half-written cache file with the right fingerprint was believed ('banana' a verdict) or a
    traceback in the report (a probe): it now counts as no cache, and the check runs again."""
    out = tmp_path / "out"
    assert main(["--quick", "--only", "zeta-values", "--out", str(out), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)[0]
    path = out / "cache" / "zeta-values-quick.json"
    good = json.loads(path.read_text())
    for damage in ({"status": "banana"}, {"summary": None, "evidence": [1, 2]}, {"id": "other"}):
        path.write_text(json.dumps(good | damage))
        assert main(["--quick", "--only", "zeta-values", "--out", str(out), "--json"]) == 0
        again = json.loads(capsys.readouterr().out)[0]
        assert again["status"] == first["status"] and again["summary"] == first["summary"], damage
        assert json.loads(path.read_text())["status"] == first["status"]  # rewritten
    path.write_text(json.dumps({"fingerprint": good["fingerprint"]}))
    assert main(["--quick", "--only", "zeta-values", "--out", str(out)]) == 0


def test_things_in_the_way_of_the_report_are_one_line_errors_before_any_check(tmp_path, capsys) -> None:
    """A file named cache, a folder named report.json or report.md in --out were tracebacks after the first
    check had computed; a cache file that is a folder lost the check's result (a probe)."""
    for name, make in (("cache", "file"), ("report.json", "folder"), ("report.md", "folder")):
        out = tmp_path / name.replace(".", "-")
        out.mkdir()
        (out / name).mkdir() if make == "folder" else (out / name).write_text("")
        assert main(["--quick", "--only", "zeta-values", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("dfl-check: error: ") and name in err, err
    out = tmp_path / "blocked-entry"
    (out / "cache" / "zeta-values-quick.json").mkdir(parents=True)
    assert main(["--quick", "--only", "zeta-values", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "zeta-values was not cached" in captured.err and "zeta-values" in captured.out


def test_a_cut_short_probe_file_is_computed_again(tmp_path) -> None:
    """cached_json trusted any file: a probe.json cut short by a crash made its check 'could not run' on every
    later run, without naming the file (a probe)."""
    from paper_checks.common import cached_json

    path = tmp_path / "probe.json"
    assert cached_json(path, lambda: {"drift": 1.0}) == {"drift": 1.0}
    path.write_text('{"drift": 1.')
    assert cached_json(path, lambda: {"drift": 2.0}) == {"drift": 2.0}
    assert json.loads(path.read_text()) == {"drift": 2.0}


def test_a_figure_run_cut_short_is_not_cached(tmp_path) -> None:
    """A run folder whose metrics.csv stops before the last step (summary.json and config.json intact) was a
    cache hit: fig9-zeta judged a loss at step 12 of 180 (a probe). A diverged run, stopped early by its own
    summary's word, stays cached."""
    from sim.runner import RunConfig

    config = RunConfig(out=str(tmp_path), steps=180)
    key = json.dumps({"run": 1}, sort_keys=True)
    (tmp_path / "config.json").write_text(json.dumps({"run": 1, "out": str(tmp_path)}))
    header = "step,round,phase,train_loss\n"
    for rows, steps, diverged, cached in (("0,0,init,2.3\n180,30,gossip,0.6\n", 180, False, True),
                                          ("0,0,init,2.3\n12,2,local,1.1\n", 180, False, False),
                                          ("0,0,init,2.3\n12,2,lo", 180, False, False),
                                          ("0,0,init,2.3\n180,30,gos", 180, False, False),  # (a review)
                                          ("0,0,init,2.3\n120,20,gossip,0.6\n", 120, False, False),
                                          ("0,0,init,2.3\n12,2,local,inf\n", 12, True, True)):  # fmt: skip
        (tmp_path / "metrics.csv").write_text(header + rows)
        finals = {"final_train_loss": 0.6, "final_test_accuracy": 0.9, "final_consensus": 0.01}
        (tmp_path / "summary.json").write_text(json.dumps({"diverged": diverged, "steps": steps, **finals}))
        assert experiments._cached(config, key) == cached, rows
    (tmp_path / "summary.json").write_text(json.dumps({"diverged": True, "steps": 12}))  # no run's summary
    assert not experiments._cached(config, key)
    (tmp_path / "config.json").write_text(json.dumps({"run": 2, "out": str(tmp_path)}))  # other settings
    assert not experiments._cached(config, key)


def test_the_figure_checks_carry_the_papers_figure_numbers_and_take_their_old_ids(capsys) -> None:
    """dflkit numbered Section VI's figures one below the paper (a citation audit: the paper's Fig. 6 is the
    topology drawing, figure* shares the counter): fig6-tau2 checked Fig. 7. The old ids are still taken."""
    refs = {i: CHECKS[i].ref for i in ("fig7-tau2", "fig7-cifar", "fig8-tau1", "fig9-zeta", "fig10-cdfl")}
    assert [r.split(",")[0].split("(")[0] for r in refs.values()] == ["Fig. 7", "Fig. 7", "Fig. 8", "Fig. 9",
                                                                      "Fig. 10"]  # fmt: skip
    assert main(["--list", "--only", "fig6-tau2", "fig9-cdfl", "fig6-tau2"]) == 0
    out, err = capsys.readouterr()
    assert [line.split()[0] for line in out.splitlines()] == ["fig7-tau2", "fig10-cdfl"]
    assert err.splitlines() == [
        "dfl-check: note: fig6-tau2 is now fig7-tau2 (the paper's figure number)",
        "dfl-check: note: fig9-cdfl is now fig10-cdfl (the paper's figure number)",
    ]


def test_list_honours_json_and_only_and_stopping_flags_do_not_combine(capsys) -> None:
    """--list --json printed the plain list, --list --only nosuch listed everything, --estimate --time-sweep
    ran the sweep: flags dropped in silence (a probe)."""
    assert main(["--list", "--json", "--only", "zeta-values", "fig3-variance"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in listed] == ["zeta-values", "fig3-variance"] and all(c["claim"] for c in listed)
    for argv, fragment in (
        (["--list", "--only", "nosuch"], "--only names unknown checks: 'nosuch'"),
        (["--list", "--estimate"], "--list and --estimate together"),
        (["--estimate", "--time-sweep", "--only", "zeta-values"], "--estimate and --time-sweep together"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and fragment in err, err


def test_a_cifar_folder_without_the_batches_is_refused_before_any_check_runs(tmp_path, monkeypatch, capsys):
    """A mistyped --cifar-dir (or $DFLKIT_CIFAR10_DIR) ran every other check first, minutes of them, and
    then reported fig7-cifar as 'could not run'; now the command stops at once, naming the flag or the
    variable and the missing file."""
    from paper_checks.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["--out", "q", "--only", "zeta-values", "--cifar-dir", str(tmp_path / "nosuch")]) == 2
    err, missing = capsys.readouterr().err, tmp_path / "nosuch" / "data_batch_1"
    assert err == (
        f"dfl-check: error: --cifar-dir = '{tmp_path / 'nosuch'}': data file '{missing}' does not exist "
        "(expected the cifar-10-batches-py folder)\n"
    )
    monkeypatch.setenv("DFLKIT_CIFAR10_DIR", str(tmp_path))  # stale: it stops only a check that reads it
    assert main(["--out", "q", "--only", "fig7-cifar", "zeta-values"]) == 2
    assert capsys.readouterr().err.startswith(
        f"dfl-check: error: $DFLKIT_CIFAR10_DIR = '{tmp_path}': data file"
    )
    assert not (tmp_path / "q" / "report.json").exists()
    assert main(["--out", "q", "--only", "zeta-values", "--estimate"]) == 0  # (it was refused, a review)


def test_a_check_context_is_checked_as_the_flags_are() -> None:
    """CheckContext(quick='no') meant quick mode, workers = 0 failed later in the cell map with a plain
    ValueError, 2.5 was taken (a probe of the library)."""
    from pathlib import Path

    from bounds import InputError
    from paper_checks.context import CheckContext

    for fields, message in [({"quick": "no"}, r"^quick = 'no' is not a flag"),
                            ({"workers": 0}, r"^workers = 0 is out of range \(expected an integer >= 1\)"),
                            ({"workers": 2.5}, r"^workers = 2.5 is not a whole number"),
                            ({"device": None}, r"^device = None is not a device name"),
                            ({"runs": None}, r"^runs = None is not a folder path"),
                            ({"cifar_dir": 3}, r"^cifar_dir = 3 is not a folder path")]:  # fmt: skip
        with pytest.raises(InputError, match=message):
            CheckContext(**fields)
    context = CheckContext(runs="out/runs", workers=2.0)
    assert context.runs == Path("out/runs") and context.workers == 2 and isinstance(context.workers, int)
    import numpy as np  # one context, one cache key, however its values were given (a review)

    assert CheckContext(quick=np.True_, cifar_dir=Path("/d")) == CheckContext(quick=True, cifar_dir="/d")


@pytest.mark.parametrize("local", [60, 1500])
def test_fig7_compares_its_runs_where_they_are_at_one_x(local: int) -> None:
    """The final loss is the mean of the last three logged rows; those rows must be at the same local steps
    for the runs of reading B and at the same steps t for those of reading A. Logged every T // 10 steps,
    reading B's tau2 = 4 sat 4 (--quick) or 100 (--full) local steps earlier than tau2 = 15 and 1, and a
    loss of the local steps alone, no effect of tau2, was judged 'holds' for one pair and 'violated' for
    the other (an audit)."""
    from bounds.dfl.schedule import local_step_mask

    runs = experiments._fig7_configs(local, [15, 4, 1], True)
    assert runs["T tau2=4"] == runs["L tau2=4"]  # one run serves both readings
    for reading in ("T", "L"):
        last_three = set()
        for tau2 in (15, 4, 1):
            kw = runs[f"{reading} tau2={tau2}"]
            T, every = kw["steps"], kw["log_every"]
            logged = sorted({*range(0, T + 1, every), T})  # (sim.loop logs t % log_every == 0 and T)
            local_steps = np.concatenate([[0], np.cumsum(local_step_mask(4, tau2, T))])
            x = local_steps if reading == "L" else np.arange(T + 1)
            last_three.add(tuple(int(x[t]) for t in logged[-3:]))
            assert 8 <= len(logged) <= 20  # about ten rows: evaluation stays cheap
        assert len(last_three) == 1, (reading, last_three)
        if reading == "L":
            assert max(next(iter(last_three))) == local


@pytest.mark.parametrize("decay", [5.0, 10.0, 20.0])
def test_fig10_wallclock_gain_of_two_runs_on_one_curve_is_no_gain(decay: float) -> None:
    """DFL and C-DFL runs that follow one loss curve in modelled time have no gain; interpolated between
    ten logged rows each (at different times) they had 2.2% on every seed, which the paired rule called
    significant, 'holds' (an audit). Logged as the check logs them now, the verdict is inconclusive."""
    from bounds.dfl.schedule import local_step_mask

    steps, d = experiments._steps_for(60, 4, 4), 20490
    every = max(1, steps // experiments.FIG10_LOG_POINTS)
    local = np.concatenate([[0], np.cumsum(local_step_mask(4, 4, steps))])

    def curve(fraction: float, scale: float) -> list[list[float]]:  # rows: step, loss, acc, time, local
        rows = []
        for s in sorted({*range(0, steps + 1, every), steps}):
            time = local[s] + (s - local[s]) * fraction
            rows.append([s, scale * (0.2 + 2.1 * np.exp(-time / decay)), 0.0, time, int(local[s])])
        return rows

    fraction = (32 * round(0.67 * d) + 32) / (32 * d)  # rand_k 0.67's message against the model's
    scales = [1.0, 1.03, 0.97]  # three seeds
    curves = {"DFL": [curve(1.0, k) for k in scales], "rand_k": [curve(fraction, k) for k in scales]}
    for claim in (("rand_k", "DFL"), ("DFL", "rand_k")):
        out = experiments._wallclock_gains(curves, 1.0, (claim,), family=14)
        assert out["pairs"][0]["verdict"] == "inconclusive", (claim, out["gains"]["40%"])


@pytest.mark.parametrize("quick", [True, False])
def test_fig7_and_fig8_share_their_common_run(quick: bool) -> None:
    """tau = (4, 4) on the ring at one T is a run of Fig. 7 and of Fig. 8: one cached run for both (aligning
    Fig. 7's logs had made it two, 3 more seeds of 3,000 CNN steps in --full; a review)."""
    from paper_checks.context import CheckContext

    ctx = CheckContext(quick=quick)
    assert experiments._fig7_mnist_configs(ctx)["T tau2=4"] == experiments._fig8_configs(ctx)["tau1=4"]


def test_the_planner_checks_read_non_finite_numbers_from_the_plans_json() -> None:
    """A plan's result writes non-finite numbers as strings ("inf" for a choice that diverged on every
    seed, "nan" for an undefined Spearman): the text of the planner checks raised on them (2026-11-29; its
    regret test's part first, then the rest, a review)."""
    from paper_checks.planner import _plan_text

    test = {"paired_regret": "inf", "lower": "-inf", "upper": "inf", "margin": 0.01, "seeds": 2,
            "lower_against": {"tau1": 1, "tau2": 8, "eta": 0.008}, "selected_on": []}  # fmt: skip
    chosen = {"tau1": 1, "tau2": 8, "eta": 0.008}
    out = {"bound_used": "non-iid", "chosen": chosen, "best_measured": {**chosen, "loss_mean": "inf"},
           "simulated": 4, "chosen_rank": 1, "regret": "inf", "spearman": "nan",
           "regret_test": test}  # fmt: skip
    text = _plan_text(out, eta_scaled=False)
    assert (
        "(regret inf; the best: eta = 0.008, loss inf); Spearman correlation" in text
        and "measured loss nan" in text
    )
    assert "Its paired regret is inf (diverged?)" in text and "lower bound is -inf against" in text, text


def test_room_for_the_figures_and_a_stop_before_any_simulation(tmp_path, capsys, monkeypatch) -> None:
    """A file named figures in --out dropped every figure with a line in report.md only; a stop before any
    check finished named OUT/runs, which no check had made (a probe)."""
    import paper_checks.report

    out = tmp_path / "out"
    out.mkdir()
    (out / "figures").write_text("")
    assert main(["--only", "zeta-values", "--out", str(out)]) == 2
    assert "figures' is a file (expected room for the figures folder)" in capsys.readouterr().err

    def stopped(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(paper_checks.report, "run_checks", stopped)
    assert main(["--only", "zeta-values", "--out", str(tmp_path / "other")]) == 130
    err = capsys.readouterr().err
    assert "dfl-check: interrupted; no check had finished\n" in err and "runs" not in err, err
