"""What a new user feeds the tools: one-line errors (exit 2, no traceback, no half-made run folder),
no silent wrong results, and a safe --resume (issue 11)."""

from __future__ import annotations

import csv
import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sim.cli import main as sim_main
from sim.runner import RunConfig, run


def _base(tiny: Path, out: Path) -> list[str]:
    return ["run", "--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6", "--steps", "8",
            "--log-every", "4", "--eval-samples", "30", "--batch-size", "8", "--partition", "iid",
            "--out", str(out), "--checkpoint-every", "4", "--eta", "0.1"]  # fmt: skip


def _one_line_error(capsys, argv: list[str]) -> str:
    code = sim_main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("dfl-sim: error: ") and "Traceback" not in err, err
    return err


def _npz(tmp_path: Path, name: str, **over: np.ndarray) -> Path:
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.normal(size=(60, 4)), "y_train": rng.integers(0, 3, 60),
              "x_test": rng.normal(size=(20, 4)), "y_test": rng.integers(0, 3, 20)} | over  # fmt: skip
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


BAD_DATA = {
    "negative labels": ({"y_train": -np.ones(60, dtype=int)}, "label -1 < 0"),
    "x_test of another width": ({"x_test": np.zeros((20, 5))}, "x_test has sample shape (5,)"),
    "string arrays": ({"x_train": np.array([["a"] * 4] * 60)}, "expected a non-empty numeric array"),
    "no features": ({"x_train": np.zeros((60, 0)), "x_test": np.zeros((20, 0))}, "with at least one feature"),
    "NaN features": ({"x_train": np.full((60, 4), np.nan)}, "240 NaN or inf values"),
    "float labels": ({"y_train": np.full(60, 1.5)}, "non-integer values"),
    "inputs beyond float32": ({"x_train": np.full((60, 4), 1e300)}, "magnitude 1e+300 (expected inputs"),
    "a label of 10^9": ({"y_test": np.r_[np.zeros(19, int), 10**9]}, "y_test has a label 1e+09"),
    "a float label of 1e20": ({"y_train": np.r_[np.zeros(59), 1e20]}, "y_train has a label 1e+20"),
    "NaN node ids": ({"node": np.r_[np.zeros(59), np.nan]}, "node has dtype float64 with values"),
    "negative node ids": (
        {"node": np.r_[np.zeros(59, int), -3]},
        "node has an id -3 < 0 (expected node ids 0 ..",
    ),
    "node ids beyond the samples": (
        {"node": np.r_[np.zeros(59, int), 60]},
        "an id 60, more than its 60 training",
    ),
    # 1-based test labels: the model grew a class and scored test accuracy 0 (a probe)
    "test labels unseen in training": (
        {"y_test": np.full(20, 5)},
        "y_test has 1 label(s) above y_train's largest, 2 (5;",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_DATA))
def test_bad_npz_data_is_refused_before_the_run_folder(capsys, tmp_path, case: str) -> None:
    over, fragment = BAD_DATA[case]
    data = _npz(tmp_path, "bad.npz", **over)
    out = tmp_path / "run"
    argv = _base(data, out)
    err = _one_line_error(capsys, argv)
    assert fragment in err and not out.exists()


def test_bad_flags_and_config_values(capsys, tiny, tmp_path) -> None:
    out = tmp_path / "run"
    text = tmp_path / "params.txt"
    text.write_text("not an npz")
    disconnected = tmp_path / "disc.txt"
    disconnected.write_text("0 1\n1 2\n3 4\n4 5\n")
    afile = tmp_path / "afile"
    afile.write_text("")
    npy = tmp_path / "one.npy"
    np.save(npy, np.zeros((3, 4)))
    cases = [
        (["--seed", "-1"], "seed = -1 is out of range"),
        (["--device", "nonsense"], "device = 'nonsense' is unknown"),
        (["--latency", "-1", "--bandwidth", "5"], "latency = -1.0 is out of range"),
        (["--latency", "0.1", "--bandwidth", "-5"], "bandwidth = -5.0 is out of range"),
        (["--init-params", str(text)], "is not an npz"),
        (
            ["--init-params", str(tmp_path)],
            "is a folder (expected an npz from --save-params",
        ),  # said "does not exist"
        (
            ["--eta", "1e-46"],
            "eta = 1e-46 is 0 in float32, the precision the models train in",
        ),  # trained nothing
        (["--eta", "1e39"], "eta = 1e+39 is inf in float32"),
        # mu = a = 1e-300: a ZeroDivisionError after the run's folder was made (a probe)
        (
            ["--lr-schedule", "cdfl", "--mu", "1e-300", "--a", "1e-300"],
            "eta_0 = 4 / (mu a) is inf in float32",
        ),
        (["--lr-schedule", "cdfl", "--mu", "1e300", "--a", "1e300"], "eta_0 = 4 / (mu a) is 0 in float32"),
        # refused by the schedule only after the run's folder and lock were made, shown as 1e+30 (a probe)
        (["--tau1", str(10**30)], f"tau1 = {10**30} is out of range (expected at most 2^53"),
        (["--tau2", str(2**53 + 1)], f"tau2 = {2**53 + 1} is out of range"),
        (
            ["--dataset", "npz:"],
            "dataset = 'npz:' names no file (expected npz:PATH)",
        ),  # said "'.' is a folder"
        (["--topology", "edges:"], "topology = 'edges:' names no file (expected edges:PATH)"),
        (["--topology", f"edges:{disconnected}", "--weights", "metropolis"], "disconnected"),
        (["--allow-change", "model"], "allow_change names 'model'"),
        (["--threads", "-2"], "threads = -2 is out of range"),
        (["--threads", "100000"], "threads = 100000 is more than the"),
        (["--resume"], "does not exist (expected the folder of an interrupted run"),
        (["--latency", "0.1"], "latency = 0.1 needs bandwidth"),
        (["--model", "foo"], "model = 'foo' is unknown (expected one of: cnn, logreg, lstsq)"),
        (["--partition", "random"], "partition = 'random' is unknown"),
        (["--algorithm", "cdfl", "--compressor", "zip"], "compressor = 'zip' is unknown"),
        (["--mu", "-1"], "mu = -1.0 is out of range"),
        (["--a", "0"], "a = 0.0 is out of range"),
        (["--world-size", "3"], "world_size = 3 needs backend 'distributed'"),
        (["--batch-size", "99999999999"], "batch_size = 99999999999: a step's inputs alone would take"),
        (["--dataset", f"npz:{npy}"], "holds one array of shape (3, 4) (expected an .npz archive"),
        (["--dataset", f"npz:{tmp_path}"], "is a folder (expected an .npz"),
        # a probe's finds: t_comm = inf blamed on a value never given, and a model_time of inf in silence
        (["--latency", "0", "--bandwidth", "1e-310"], "latency + bits / bandwidth = 0 + "),
        (["--t-comp", "1e308"], "the run's modelled time, steps x (t_comp + t_comm) = "),
        (["--nodes", "1"], "nodes = 1: a lone node has no one to gossip with"),
    ]
    for extra, fragment in cases:
        err = _one_line_error(capsys, _base(tiny, out) + extra)
        assert fragment in err, (extra, err)
        assert not out.exists(), extra
    for bad_out in ("/proc/dflkit-test", str(afile / "sub")):
        err = _one_line_error(capsys, _base(tiny, Path(bad_out)))
        assert "is not a writable folder" in err
    for toml, fragment in [
        ("topology = 5", "topology = 5 has the wrong type (expected a string)"),
        ("device = 0", "device = 0 has the wrong type"),
        ("steps = true", "steps = True has the wrong type (expected an integer)"),
    ]:
        cfg = tmp_path / "c.toml"
        cfg.write_text(toml + "\n")
        err = _one_line_error(capsys, ["run", "--config", str(cfg), "--out", str(out)])
        assert fragment in err


def test_api_refuses_booleans_and_none() -> None:
    from bounds import InputError

    # an int beyond float64 for a float field: math.isfinite raised OverflowError (a probe)
    for kw in ({"tau1": True}, {"topology": None}, {"tau1": float("inf")}):
        with pytest.raises(InputError, match="has the wrong type"):
            RunConfig(**kw).validate()
    for kw, shown in (  # a number, not finite: it 'had the wrong type', and 10**400 was 401 digits long
        ({"eta": float("nan")}, "eta = nan"),
        (
            {"eta": 10**400},
            "eta = 100000000000000000000000000000000000000000000000000000000000... (401 characters)",
        ),
        ({"gamma": -(10**400)}, "gamma = -10000"),
    ):
        with pytest.raises(
            InputError, match=re.escape(shown) + ".* is not finite \\(expected a finite number\\)"
        ):
            RunConfig(**kw).validate()


def test_flags_without_a_command_are_run_flags(capsys) -> None:
    """`dfl-sim --steps 5` said "argument command: invalid choice: '5'" although --help says that no command
    is `dfl-sim run` (a probe's finding); --help alone is still the command list."""
    assert sim_main(["--steps", "0"]) == 2
    assert "steps = 0 is out of range" in capsys.readouterr().err
    for ask in ("--help", "-h", "--he"):  # (--he: argparse's abbreviation, which gave run's help)
        with pytest.raises(SystemExit):
            sim_main([ask])
        assert "flags alone are `dfl-sim run`'s" in " ".join(capsys.readouterr().out.split())


def test_fault_flag_is_hidden_and_every_flag_has_help(capsys) -> None:
    with pytest.raises(SystemExit):
        sim_main(["run", "--help"])
    text = capsys.readouterr().out
    assert "--fault" not in text and "default None" not in text  # fault injection is an env hook
    assert "--resume" in text and "continue from the checkpoint" in text


def test_growing_loss_is_divergence_and_json_survives_nan(capsys, tiny, tmp_path) -> None:
    """logreg with eta = 1e9: the loss explodes (finite at first); the summary says so, JSON stays valid."""
    out = tmp_path / "run"
    code = sim_main([*_base(tiny, out)[:-2], "--eta", "1e9", "--steps", "40", "--json"])
    printed = capsys.readouterr()
    summary = json.loads(printed.out)
    assert code == 3 and summary["diverged"] is True and "grew from" in summary["message"]
    assert printed.err.startswith("dfl-sim: the run diverged at step") and str(out) in printed.err
    json.loads((out / "summary.json").read_text())  # strict JSON: no bare NaN
    code = sim_main([*_base(tiny, out)[:-2], "--eta", "1e30", "--steps", "40", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert summary["diverged"] is True
    parsed = json.loads((out / "summary.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert isinstance(parsed["final_train_loss"], float | str)


def test_resume_refuses_other_settings_and_a_fresh_run_clears_old_files(capsys, tiny, tmp_path) -> None:
    out = tmp_path / "run"
    assert sim_main([*_base(tiny, out), "--save-params"]) == 0
    capsys.readouterr()
    err = _one_line_error(capsys, [*_base(tiny, out)[:-2], "--eta", "0.2", "--resume", "--steps", "12"])
    assert "eta = 0.1 -> 0.2" in err and "--allow-change eta" in err
    assert f"the settings differ from the checkpoint's in {str(out)!r}" in err  # which run (in a sweep)
    err = _one_line_error(capsys, [*_base(tiny, out), "--model", "lstsq", "--resume"])
    assert "model = 'logreg' -> 'lstsq'" in err
    args = [*_base(tiny, out)[:-2], "--eta", "0.2", "--resume", "--steps", "12", "--allow-change", "eta"]
    assert sim_main(args) == 0
    capsys.readouterr()
    assert (out / "params.npz").exists()
    assert sim_main(_base(tiny, out)) == 0  # a fresh run: the old params.npz must not survive
    assert not (out / "params.npz").exists()


def test_resume_says_which_rows_are_lost_when_metrics_csv_lost_some(capsys, tiny, tmp_path) -> None:
    """Rows removed from metrics.csv after the checkpoint was written cannot be written again: a resume used
    to continue in silence with a gap (steps 4 and 8 missing here); it says which rows are missing."""
    from sim.loop import _lost_rows

    out = tmp_path / "run"
    base = [*_base(tiny, out), "--checkpoint-every", "8"]  # steps 8, a row every 4 steps
    assert sim_main(base) == 0
    assert _steps(out / "metrics.csv") == [0, 4, 8]
    lines = _rows(out / "metrics.csv")
    (out / "metrics.csv").write_text("\n".join(lines[:2]) + "\n")  # the header and step 0
    capsys.readouterr()
    assert sim_main([*base, "--steps", "12", "--resume"]) == 0
    err = capsys.readouterr().err
    assert "has no rows for steps 4 to 8 (expected a row every 4 steps up to the checkpoint's step 8" in err
    assert _steps(out / "metrics.csv") == [0, 12]
    assert sim_main([*base, "--steps", "12", "--resume"]) == 0  # finished: the file still lacks them
    err = capsys.readouterr().err
    assert "has no rows for steps 4 to 8 (expected a row every 4 steps up to the checkpoint's step 12" in err
    assert "had already taken its 12 steps (nothing to continue; --steps larger continues it)" in err
    rows = [{"step": "0"}, {"step": "4"}]
    assert [_lost_rows(rows, t, 4) for t in (8, 7, 12)] == ["step 8", "", "steps 8 to 12"]
    assert _lost_rows([], 3, 4) == "step 0" and _lost_rows([{"step": "0"}, {"step": "8"}], 9, 4) == "step 4"
    # a gap in the middle of the file, too (it used to be resumed over in silence), and a long list cut short
    rows = [{"step": str(s)} for s in (0, 12, 16, 28, 36)]
    assert _lost_rows(rows, 40, 4) == "steps 4 to 8, 20 to 24, 32, 40"
    assert _lost_rows(rows, 40, 4, shown=2) == "steps 4 to 8, 20 to 24 and 2 more ranges"
    assert _lost_rows([{"step": "0"}], 12, 2, since=8) == "steps 10 to 12"  # log_every changed at step 8


def _rows(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _steps(path: Path) -> list[int]:
    with path.open(newline="") as fh:
        return [int(r["step"]) for r in csv.DictReader(fh)]


@pytest.mark.parametrize("seed", [0, 1])
def test_sigkill_at_random_points_then_resume_equals_an_unbroken_run(tiny, tmp_path, seed: int) -> None:
    """A run killed with SIGKILL several times and resumed each time ends equal to an unbroken run."""
    common = ["--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6", "--steps", "3000",
              "--log-every", "50", "--eval-samples", "30", "--batch-size", "8", "--partition", "iid",
              "--checkpoint-every", "100", "--eta", "0.05", "--save-params", "--threads", "1"]  # fmt: skip
    clean = tmp_path / "clean"
    assert run(_config(common, clean)) is not None
    broken = tmp_path / "broken"
    rng = np.random.default_rng(seed)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    cmd = [sys.executable, "-m", "sim", "run", *common, "--out", str(broken)]
    for _ in range(3):  # kill three times, each after some progress, at a random moment
        proc = subprocess.Popen(
            cmd + (["--resume"] if (broken / "checkpoint.pt").exists() else []),
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        start = len(_steps(broken / "metrics.csv")) if (broken / "checkpoint.pt").exists() else 0
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if (broken / "metrics.csv").exists() and len(_rows(broken / "metrics.csv")) > start + 2:
                break
            time.sleep(0.05)
        time.sleep(float(rng.uniform(0.0, 0.5)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    last = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert last.returncode == 0, last.stderr
    a, b = np.load(clean / "params.npz"), np.load(broken / "params.npz")
    assert all(np.array_equal(a[k], b[k]) for k in a.files)
    steps = _steps(broken / "metrics.csv")
    assert steps == _steps(clean / "metrics.csv") == list(range(0, 3001, 50))  # no gaps, no duplicates


def _config(argv: list[str], out: Path) -> RunConfig:
    from sim.cli import _config as parse
    from sim.cli import _parser

    return parse(_parser().parse_args(["run", *argv, "--out", str(out)]))


def test_first_checkpoint_by_time(tiny, tmp_path, monkeypatch) -> None:
    """checkpoint_seconds writes a checkpoint before checkpoint_every steps are reached."""
    out = tmp_path / "run"
    cfg = RunConfig(dataset=f"npz:{tiny}", model="logreg", nodes=6, steps=40, log_every=40, eval_samples=30,
                    batch_size=8, partition="iid", out=str(out), checkpoint_every=10**6,
                    checkpoint_seconds=1e-9, eta=0.1)  # fmt: skip
    seen: list[float] = []
    real = os.replace

    def spy(src: object, dst: object) -> None:
        if str(dst).endswith("checkpoint.pt"):
            seen.append(time.perf_counter())
        real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    run(cfg)
    assert len(seen) >= 40  # every step (and the final save)


def test_dfl_plot_refuses_unusable_folders_and_keeps_every_curve(capsys, tiny, tmp_path) -> None:
    from plots.cli import labels
    from plots.cli import main as plot_main

    empty, headers, wrong = tmp_path / "empty", tmp_path / "headers", tmp_path / "wrong"
    for folder in (empty, headers, wrong):
        folder.mkdir()
    (headers / "metrics.csv").write_text("step,train_loss,test_acc,consensus,grad_norm2\n")
    (wrong / "metrics.csv").write_text("a,b\n1,2\n")
    for folder, fragment in (
        (empty, "does not exist"),
        (headers, "has no rows"),
        (wrong, "lacks the columns"),
    ):
        assert plot_main([str(folder)]) == 2
        err = capsys.readouterr().err
        assert fragment in err and err.count("\n") == 1 and "Traceback" not in err
    a, b = tmp_path / "a" / "run", tmp_path / "b" / "run"
    for folder, eta in ((a, "0.1"), (b, "0.2")):
        assert sim_main([*_base(tiny, folder)[:-2], "--eta", eta]) == 0
    capsys.readouterr()
    names = labels([a, b])
    assert len(set(names)) == 2 and "a/run" in names[0] and "eta=0.1" in names[0] and "eta=0.2" in names[1]
    assert plot_main([str(a), str(b), "--out", "/proc/dflkit/curves"]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_theory_cli_refuses_out_of_range_integers_and_huge_grids(capsys) -> None:
    from bounds import InputError, make_graph
    from bounds.cli import main as bounds_main

    dfl = ["dfl", "--L", "1", "--sigma2", "1", "--nodes", "10", "--eta", "0.01", "--tau1", "4", "--tau2", "4",
           "--gap", "1"]  # fmt: skip
    cases = [
        ([*dfl, "--T", "1e30", "--zeta", "0.8"], "T = 1e+30 is too large"),
        ([*dfl, "--T", "100", "--topology", "erdos-renyi", "--seed", "-1"], "seed = -1 is out of range"),
        (["optimize", "--L", "1", "--sigma2", "1", "--nodes", "10", "--gap", "1", "--zeta", "0.8", "--t-comp",
          "1", "--t-comm", "1", "--budget-seconds", "1000", "--max-tau1", "30000", "--max-tau2", "30000"],
         "cells is too many"),
    ]  # fmt: skip
    for argv, fragment in cases:
        assert bounds_main(argv) == 2
        err = capsys.readouterr().err
        assert fragment in err and err.count("\n") == 1, err
    with pytest.raises(InputError, match="seed = -1"):
        make_graph("erdos-renyi", 10, seed=-1)


def test_dfl_check_refuses_an_unwritable_out(capsys, tmp_path) -> None:
    from paper_checks.cli import main as check_main

    afile = tmp_path / "afile"
    afile.write_text("")
    assert check_main(["--only", "zeta-values", "--out", str(afile / "sub")]) == 2
    assert "is not a writable folder" in capsys.readouterr().err


def test_a_failed_run_is_exit_1_with_one_line(capsys, monkeypatch) -> None:
    """A simulator failure (SimulationError) is not a bad input: exit 1, one line, no traceback."""
    import sim.runner
    from sim.errors import SimulationError

    def fail(config, progress=None):
        raise SimulationError("distributed run failed: process 1 exited (rerun with --resume)")

    monkeypatch.setattr(sim.runner, "run", fail)  # dfl-sim run imports it when it runs
    assert sim_main(["run", "--steps", "4"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rerun with --resume" in err


def test_resume_may_extend_steps_only_when_the_steps_taken_keep_their_kind(capsys, tiny, tmp_path) -> None:
    """tau1 = tau2 = 4: T = 14 ends with two local steps (13, 14) that T = 20 would make gossip steps."""
    import torch

    out = tmp_path / "run"
    base = _base(tiny, out)
    assert (
        sim_main([*base[: base.index("--steps")], "--steps", "14", *base[base.index("--steps") + 2 :]]) == 0
    )
    capsys.readouterr()
    state = torch.load(out / "checkpoint.pt", weights_only=False)
    assert "first_loss" in state["counters"]  # the divergence reference survives a resume
    err = _one_line_error(capsys, [*base, "--steps", "20", "--resume"])
    assert "changes the kind of steps already taken" in err
    err = _one_line_error(capsys, [*base, "--steps", "10", "--resume"])
    assert "the checkpoint is at step 14" in err


def test_verdicts_need_evidence() -> None:
    """No parts, or a NaN side, is never 'holds'."""
    from paper_checks.registry import combined
    from paper_checks.statements import PROPOSITION_1, Cell, judge_cells

    assert combined([]) == "inconclusive" and combined(["not run"]) == "inconclusive"
    cell = Cell(0.1, 1.0, 0.0, 2, 1, 1, 0.0, 1, 1.0)
    assert judge_cells([{"cell": cell, "lhs_all": float("nan"), "lhs_local": 0.0}], PROPOSITION_1)[
        "status"
    ] == ("inconclusive")


@pytest.mark.parametrize(
    "code",
    [
        "from sim.cli import main; exit_code = main(['--help'])",
        "from sim.cli import main; exit_code = main(['run', '--nodes', '0'])",
        "from sim.cli import main; exit_code = main(['run', '--model', 'foo'])",
        "from sim.cli import main; exit_code = main(['run', '--dataset', 'mnist2'])",
        "from sim.cli import main; exit_code = main(['run', '--topology', 'rnig'])",
        "from sim.cli import main; exit_code = main(['run', '--weights', 'uniform'])",
        "from paper_checks.cli import main; exit_code = main(['--device', 'tpu'])",
        "from sim.cli import main; exit_code = main(['sweep', 'no-such-grid.toml'])",
        "from paper_checks.cli import main; exit_code = main(['--help'])",
        "from paper_checks.cli import main; exit_code = main(['--jobs', '0'])",
    ],
)
def test_help_and_bad_flags_answer_before_torch_loads(code: str) -> None:
    """`--help` and a refused value answer in a fraction of a second: torch (about 2 s to import) is
    loaded only once a command is about to run (checked by its absence from sys.modules)."""
    script = (
        "import sys\n"
        "try:\n"
        f"    {code}\n"
        "except SystemExit as stop:\n"
        "    exit_code = stop.code\n"
        "print(exit_code, 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    exit_code, loaded = done.stdout.split()[-2:]
    assert exit_code in ("0", "2") and loaded == "False", (done.stdout[-300:], done.stderr[-300:])


def test_a_run_into_a_sweep_or_plan_folder_is_refused(capsys, tiny, tmp_path) -> None:
    """Its files went in beside the sweep's sweep.json (or the plan's plan.json)."""
    for marker in ("sweep.json", "plan.json"):
        folder = tmp_path / marker.split(".")[0]
        folder.mkdir()
        (folder / marker).write_text("[]")
        err = _one_line_error(capsys, _base(tiny, folder))
        assert f"is a dfl-sim {marker.split('.')[0]} folder (expected a folder of the run's own" in err
        assert sorted(p.name for p in folder.iterdir()) == [marker]
    runs = tmp_path / "plan" / "runs"  # a plan's runs folder (a plan written there broke dfl-plot, a probe)
    runs.mkdir()
    err = _one_line_error(capsys, _base(tiny, runs))
    assert "is the folder of a dfl-sim plan's runs (expected a folder of the run's own, such as " in err
    assert list(runs.iterdir()) == []


def test_a_config_json_from_a_larger_machine_repeats_here(capsys, tiny, tmp_path) -> None:
    """dfl-sim run records the threads it chose (64 on a larger machine): a repeat from that config.json
    must not be refused by the threads limit, which applies to what the user asks (flags, TOML, grids)."""
    out = tmp_path / "run"
    assert sim_main(_base(tiny, out)) == 0
    record = json.loads((out / "config.json").read_text())
    record["threads"] = 10**6
    (out / "config.json").write_text(json.dumps(record))
    assert sim_main(["run", "--config", str(out / "config.json"), "--out", str(tmp_path / "again")]) == 0
    capsys.readouterr()
    toml = tmp_path / "run.toml"
    toml.write_text("threads = 1000000\n")
    err = _one_line_error(capsys, ["run", "--config", str(toml), "--out", str(tmp_path / "t")])
    assert "threads = 1000000 is more than the" in err
    grid = tmp_path / "grid.toml"
    grid.write_text(f'[base]\ndataset = "npz:{tiny}"\nthreads = 1000000\n[grid]\nseed = [0]\n')
    err = _one_line_error(capsys, ["sweep", str(grid), "--out", str(tmp_path / "s")])
    assert "threads = 1000000 is more than the" in err


def test_the_library_refuses_more_threads_than_cores_as_the_commands_do(tiny, tmp_path) -> None:
    """sim.runner.run and sim.sweep.run_sweep took threads = 64 on 2 cores in silence and set them, and 10**6
    crashed the interpreter inside torch (only the command lines checked; a probe of the library): the same
    InputError now, before any folder is made."""
    from bounds import InputError
    from sim.sweep import run_sweep

    config = RunConfig(dataset=f"npz:{tiny}", model="logreg", nodes=6, steps=4, threads=10**6)
    for call, out in ((run, "run"), (lambda c: run_sweep([c]), "sweep")):
        with pytest.raises(InputError, match=r"^threads = 1000000 is more than the \d+ cores this process"):
            call(RunConfig(**{**config.__dict__, "out": str(tmp_path / out)}))
    with pytest.raises(InputError, match=r"^threads = 1000000 is more than the"):
        run(RunConfig(**{**config.__dict__, "out": str(tmp_path / "d"), "backend": "distributed",
                         "world_size": 2}))  # fmt: skip
    assert list(tmp_path.iterdir()) == [tiny]


def test_a_sweeps_bad_run_is_named_and_nodes_0_asks_for_2(tiny, tmp_path) -> None:
    """run_sweep([good, eta = -1]) said 'eta = -1 is out of range' without saying which run (a probe of the
    library); RunConfig(nodes=0) asked for an integer >= 1, and then 1 was refused for 2."""
    from bounds import InputError
    from sim.sweep import run_sweep

    good = RunConfig(dataset=f"npz:{tiny}", model="logreg", nodes=6, steps=4, out=str(tmp_path / "a"))
    bad = RunConfig(**{**good.__dict__, "eta": -1.0, "out": str(tmp_path / "b")})
    with pytest.raises(
        InputError, match=r"^eta = -1.0 is out of range .*; in the sweep's run with out = '.*b'$"
    ):
        run_sweep([good, bad])
    with pytest.raises(
        InputError, match=r"^eta = -1.0 is out of range .*; in the sweep's run with out = '.*b'$"
    ):
        run_sweep([bad, good])  # the first too (it was said without its run, a review)
    torus = RunConfig(**{**good.__dict__, "topology": "torus", "nodes": 7, "out": str(tmp_path / "c")})
    with pytest.raises(InputError, match=r"torus.*; in the sweep's run with out = '.*c'$"):  # (prepare's too)
        run_sweep([good, torus])
    with pytest.raises(InputError, match=r"^eta = -1.0 is out of range"):  # one run: as run() says it
        run_sweep([bad])
    with pytest.raises(InputError, match=r"^nodes = 0 is out of range \(expected an integer >= 2\)"):
        RunConfig(nodes=0).validate()
    assert list(tmp_path.iterdir()) == [tiny]


def test_folder_paths_and_a_full_disk_are_named(capsys, tiny, tmp_path, monkeypatch) -> None:
    """Found by a robustness probe: a name over 255 bytes exited 1 with 'File name too long' (bad input is
    exit 2); --resume into a sweep's folder was told to run without --resume, which is refused too; a full
    disk while writing metrics.csv said 'No space left on device' without the file."""
    err = _one_line_error(capsys, _base(tiny, tmp_path / ("a" * 300) / "run"))
    assert "is not a usable folder path (File name too long; expected names of at most 255 bytes)" in err
    deep = tmp_path / "/".join(["b" * 200] * 21)  # names of 200 bytes, a path past Linux's 4,096
    err = _one_line_error(capsys, _base(tiny, deep))  # (its lock file failed with exit 1, 20 folders made)
    assert "is not a usable folder path (its full path is " in err and "expected at most 4,032" in err
    assert not (tmp_path / ("b" * 200)).exists()
    grid = tmp_path / "deep.toml"  # a sweep's and a plan's own --out: 'File name too long', status 1
    grid.write_text(f'[base]\ndataset = "npz:{tiny}"\nmodel = "logreg"\nsteps = 2\n[grid]\nseed = [0, 1]\n')
    for argv in (["sweep", str(grid), "--threads", "1", "--out", str(deep)],
                 ["plan", "--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6", "--budget-seconds",
                  "20", "--out", str(deep)]):  # fmt: skip
        err = _one_line_error(capsys, argv)
        assert "is not a usable folder path (its full path is " in err and "expected at most " in err
        assert "..." in err and len(err) < 400  # the path's middle cut, not 4,000 bytes of it
    assert not (tmp_path / ("b" * 200)).exists()
    near = tmp_path / "/".join(["c" * 200] * 19) / ("c" * (4000 - len(str(tmp_path)) - 19 * 201 - 1))
    assert len(str(near)) == 4000  # under run's limit: a plan failed after its estimates (its runs/NAME/...)
    err = _one_line_error(capsys, ["plan", "--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6",
                                   "--budget-seconds", "20", "--out", str(near)])  # fmt: skip
    assert "its full path is 4,000 bytes; expected at most 3,772" in err
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text("[]")
    err = _one_line_error(capsys, [*_base(tiny, sweep), "--resume"])
    assert "is a dfl-sim sweep folder (expected a folder of the run's own" in err
    real = csv.DictWriter.writerow

    def writerow(self, row):  # the disk fills as the first metrics row is written (the header went in)
        if isinstance(row.get("step"), int):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, row)

    monkeypatch.setattr(csv.DictWriter, "writerow", writerow)
    assert sim_main(_base(tiny, tmp_path / "run")) == 1
    err = capsys.readouterr().err
    assert "No space left on device (writing its step 0 row; the rows before it" in err, err
    assert str(tmp_path / "run" / "metrics.csv") in err


def test_resume_names_every_differing_field_before_the_steps(capsys, tiny, tmp_path) -> None:
    """A resume with fewer --steps and another eta and model said only 'steps = 4 but the checkpoint is at
    step 8'; fixed, it then named the rest: the fields are named first, all at once."""
    out = tmp_path / "run"
    assert sim_main(_base(tiny, out)) == 0
    capsys.readouterr()
    argv = [*_base(tiny, out), "--resume", "--steps", "4", "--eta", "0.2", "--batch-size", "4"]
    err = _one_line_error(capsys, argv)
    assert "eta = 0.1 -> 0.2" in err and "batch_size = 8 -> 4" in err and "steps" not in err.split("(")[0], (
        err
    )
    err = _one_line_error(capsys, [*_base(tiny, out), "--resume", "--steps", "4"])
    assert "resume: steps = 4 but the checkpoint is at step 8" in err


def test_a_test_class_missing_from_training_but_in_range_is_accepted(tmp_path) -> None:
    """Only labels above the training set's largest are refused (they grew the model): a class that no
    training sample has, within that range, is a data set's business (a review)."""
    from sim.data import load_npz

    rng = np.random.default_rng(0)
    y_train = rng.choice([0, 1, 3], 60)
    data = load_npz(_npz(tmp_path, "gap.npz", y_train=y_train, y_test=np.arange(20) % 4))
    assert data.num_classes == 4


def _damaged(source: Path, how: str, tmp_path: Path) -> Path:
    """A copy of the npz ``source``, cut short, with a member's bytes overwritten (a bad CRC), or saved
    compressed and then overwritten (a bad deflate stream or CRC)."""
    if how == "compressed":
        with np.load(source) as f:
            arrays = {k: f[k] for k in f.files}
        np.savez_compressed(tmp_path / "packed.npz", **arrays)
        source = tmp_path / "packed.npz"
    data = bytearray(source.read_bytes())
    if how == "cut short":
        data = data[: len(data) // 2]
    elif how == "unknown method":  # the first member's compression method in the central directory: 99
        at = data.index(b"PK\x01\x02") + 10
        data[at : at + 2] = (99).to_bytes(2, "little")
    else:  # inside the first member's data: the archive's directory stays intact
        data[len(data) // 4 : len(data) // 4 + 16] = b"\x55" * 16
    path = tmp_path / f"damaged-{how.replace(' ', '-')}.npz"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("how", ["cut short", "overwritten", "compressed", "unknown method"])
def test_damaged_npz_files_are_refused_in_one_line(capsys, tiny, tmp_path, how: str) -> None:
    """A damaged .npz (cut short by a full disk, a flipped byte) was a BadZipFile, zlib.error or
    NotImplementedError traceback from --init-params, --dataset npz: and matrix: (numpy raises neither
    OSError nor ValueError)."""
    saved = tmp_path / "saved"
    assert sim_main([*_base(tiny, saved), "--save-params"]) == 0
    capsys.readouterr()
    ring = tmp_path / "ring.npz"
    np.savez(ring, C=np.roll(np.eye(6), 1, 0) / 3 + np.roll(np.eye(6), -1, 0) / 3 + np.eye(6) / 3)
    out = tmp_path / "run"
    for flag, source, fragment in [
        ("--init-params", saved / "params.npz", "init params file"),
        ("--dataset", tiny, "is not a readable .npz"),
        ("--topology", ring, "could not be read as an N x N matrix"),
    ]:
        damaged = _damaged(source, how, tmp_path)
        value = {"--dataset": f"npz:{damaged}", "--topology": f"matrix:{damaged}"}.get(flag, str(damaged))
        err = _one_line_error(capsys, [*_base(tiny, out), flag, value])
        assert fragment in err and str(damaged) in err, (flag, err)
        assert not out.exists()


def test_a_periodic_mixing_matrix_runs_with_a_note(capsys, tiny, tmp_path) -> None:
    """A matrix: file with eigenvalue -1 (a 6-ring with zero self-weights) trained without a word, the nodes
    never agreeing, while dfl-bounds refuses it (zeta = 1; an API probe): the run now says why."""
    ring6 = (np.roll(np.eye(6), 1, 0) + np.roll(np.eye(6), -1, 0)) / 2
    for name, C, noted in (("periodic", ring6, True), ("lazy", (ring6 + np.eye(6)) / 2, False)):
        np.savetxt(tmp_path / f"{name}.txt", C)
        argv = [*_base(tiny, tmp_path / name), "--topology", f"matrix:{tmp_path / name}.txt"]
        assert sim_main(argv) == 0
        err = capsys.readouterr().err
        assert ("C has eigenvalue -1 (a bipartite graph with zero self-weights)" in err) == noted, err


def test_a_file_that_is_no_numpy_file_is_named_so(capsys, tiny, tmp_path) -> None:
    """numpy reads a file without a .npy or .npz header as a pickle: a text file given as a matrix, data
    set or init params was said to hold 'pickled (object) data' that 'allow_pickle=' could load (a probe)."""
    from bounds import InputError
    from bounds.graph.mixing import load_matrix
    from sim.data import load_npz

    text = tmp_path / "not.npz"
    text.write_text("hello\n")
    said = r"no numpy file: it begins with b'hello\\n', not a .npy or .npz header"
    with pytest.raises(InputError, match=said):
        load_matrix(text)
    with pytest.raises(InputError, match=said):
        load_npz(text)
    err = _one_line_error(capsys, [*_base(tiny, tmp_path / "r"), "--init-params", str(text)])
    assert re.search(said, err) and "pickle" not in err, err
    (tmp_path / "empty.npy").write_bytes(b"")
    with pytest.raises(InputError, match=r"or whitespace/comma text\): it is empty$"):
        load_matrix(tmp_path / "empty.npy")
    (tmp_path / "m.txt").write_text("0.5 0.5\n0.5 x\n")  # a text matrix keeps its own reason (a review)
    with pytest.raises(InputError, match="could not convert string 'x' to float64 at row 1, column 2"):
        load_matrix(tmp_path / "m.txt")
