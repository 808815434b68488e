"""The sweep engine: R runs stacked as one matrix equal the same runs one by one (up to float rounding)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import assert_same_records

from bounds import InputError
from sim.cli import main
from sim.config import RunConfig
from sim.data import load_mnist
from sim.engine import Stack
from sim.evaluation import Evaluator, evaluate_runs, node_sample
from sim.models import MnistCNN
from sim.runner import run
from sim.sweep import run_sweep

VARIANTS = [
    {},
    {"seed": 1, "tau1": 2, "tau2": 3},
    {"eta": 0.2, "topology": "complete"},
    {"algorithm": "dsgd"},
    {"algorithm": "sync", "steps": 17},
    {"algorithm": "cdfl", "compressor": "rand_k", "compressor_param": 3},
    {"partition": "iid", "batch_size": 0, "steps": 25},
    {"nodes": 4, "batch_size": 8, "algorithm": "cdfl", "compressor": "qsgd", "compressor_param": 4,
     "lr_schedule": "cdfl", "mu": 1.0, "a": 10.0},
]  # fmt: skip


def _base(tiny: Path) -> dict:
    return {"dataset": f"npz:{tiny}", "model": "logreg", "nodes": 6, "steps": 30, "log_every": 5,
            "eval_samples": 40, "checkpoint_every": 7}  # fmt: skip


def test_sweep_equals_the_runs_one_by_one(tiny, tmp_path) -> None:
    """Seeds, schedules, algorithms (D-SGD, sync, CHOCO-G with random compressors), partitions, batch sizes,
    node counts, steps and learning-rate schedules differ across the stacked runs."""
    base = _base(tiny)
    configs = [
        RunConfig(**{**base, **v, "out": str(tmp_path / f"sweep/{i}")}) for i, v in enumerate(VARIANTS)
    ]
    summaries = run_sweep(configs)
    assert [s["out_dir"] for s in summaries] == [c.out for c in configs]
    for i, v in enumerate(VARIANTS):
        run(RunConfig(**{**base, **v, "out": str(tmp_path / f"single/{i}")}))
        assert_same_records(tmp_path / f"sweep/{i}", tmp_path / f"single/{i}")
        for name in ("config.json", "checkpoint.pt", "summary.json"):
            assert (tmp_path / f"sweep/{i}" / name).is_file()
        saved = torch.load(tmp_path / f"sweep/{i}/checkpoint.pt", weights_only=False)
        tensors = [saved["X"], *saved["gossip"].values()]  # its own run's rows, not the whole stack
        assert all(t.untyped_storage().nbytes() == t.numel() * t.element_size() for t in tensors)
        assert saved["X"].shape[0] == configs[i].nodes


def test_sweep_differs_from_a_wrong_reference(tiny, tmp_path) -> None:
    """The equality test can fail: a run with another seed is not the same records."""
    base = _base(tiny)
    run_sweep([RunConfig(**{**base, "out": str(tmp_path / "a")})])
    run(RunConfig(**{**base, "seed": 5, "out": str(tmp_path / "b")}))
    with pytest.raises(AssertionError):
        assert_same_records(tmp_path / "a", tmp_path / "b")


def test_gradient_calls_cut_by_runs_give_the_same_runs(tiny, tmp_path) -> None:
    """samples_per_call below one run's samples: one gradient call per run, same records."""
    from sim.data import load_dataset
    from sim.setup import build_trainer, prepare
    from sim.sweep import SweepEngine

    base = _base(tiny)
    configs = [RunConfig(**{**base, "seed": s, "out": str(tmp_path / f"r{s}")}) for s in range(3)]
    data = load_dataset(configs[0].dataset)
    finals = []
    for per_call in (None, 1):
        setups = [prepare(c, data=data) for c in configs]
        engine = SweepEngine(
            setups[0].stack,
            [build_trainer(c, s) for c, s in zip(configs, setups, strict=True)],
            [s.C for s in setups],
            data.x_train,
            data.y_train,
            samples_per_call=per_call,
        )
        for _ in range(20):
            engine.step(engine.lanes)
        finals.append(engine.X.clone())
    torch.testing.assert_close(finals[0], finals[1], rtol=1e-5, atol=1e-6)


def test_a_diverging_run_stops_and_the_others_go_on(tiny, tmp_path) -> None:
    base = _base(tiny)
    configs = [
        RunConfig(**{**base, "eta": 1e6, "out": str(tmp_path / "bad")}),
        RunConfig(**{**base, "out": str(tmp_path / "good")}),
    ]
    bad, good = run_sweep(configs)
    assert bad["diverged"] and "diverged at step" in bad["message"] and bad["steps"] < base["steps"]
    assert not good["diverged"] and good["steps"] == base["steps"]
    run(RunConfig(**{**base, "out": str(tmp_path / "alone")}))
    assert_same_records(tmp_path / "good", tmp_path / "alone")


def test_an_interrupted_sweep_resumes_to_the_unbroken_runs(tiny, tmp_path) -> None:
    base = _base(tiny) | {"checkpoint_every": 4}
    variants = [{}, {"algorithm": "cdfl", "compressor": "rand_k", "compressor_param": 3, "seed": 2}]

    def configs(folder: str, resume: bool = False) -> list[RunConfig]:
        return [
            RunConfig(**{**base, **v, "out": str(tmp_path / folder / str(i)), "resume": resume})
            for i, v in enumerate(variants)
        ]

    run_sweep(configs("unbroken"))

    def stop(done: int, total: int) -> None:
        if done >= 2 * 13:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(configs("broken"), stop)
    assert not (tmp_path / "broken/0/summary.json").exists()
    taken = sum(torch.load(tmp_path / f"broken/{i}/checkpoint.pt", weights_only=False)["t"] for i in (0, 1))
    calls: list[tuple[int, int]] = []
    run_sweep(configs("broken", resume=True), lambda done, total: calls.append((done, total)))
    assert taken > 0 and calls[0] == (taken, 60)  # (the bar started at 0 of the whole, a probe)
    for i in range(len(variants)):
        assert_same_records(tmp_path / f"broken/{i}", tmp_path / f"unbroken/{i}")


def test_runs_that_cannot_share_a_sweep_are_refused(tiny, tmp_path) -> None:
    base = _base(tiny)
    with pytest.raises(InputError, match="model = 'lstsq' differs"):
        run_sweep([RunConfig(**{**base, "out": str(tmp_path / "a")}),
                   RunConfig(**{**base, "model": "lstsq", "out": str(tmp_path / "b")})])  # fmt: skip
    with pytest.raises(InputError, match="tf32 = True differs"):  # a flag of the process, not of a run
        run_sweep([RunConfig(**{**base, "out": str(tmp_path / "a")}),
                   RunConfig(**{**base, "tf32": True, "out": str(tmp_path / "b")})])  # fmt: skip
    with pytest.raises(InputError, match="same folder"):
        run_sweep([RunConfig(**{**base, "out": str(tmp_path / "a")}),
                   RunConfig(**{**base, "seed": 1, "out": str(tmp_path / "a")})])  # fmt: skip
    for other in (f"{tmp_path}/./a", f"{tmp_path}/b/../a"):  # one folder spelled two ways (the first run's
        with pytest.raises(InputError, match=f"same folder '{tmp_path}/a and {other}'"):  # files were lost)
            run_sweep([RunConfig(**{**base, "out": str(tmp_path / "a")}),
                       RunConfig(**{**base, "seed": 1, "out": other})])  # fmt: skip
    assert not (tmp_path / "a").exists()
    with pytest.raises(InputError, match="tau2 = -1"):
        run_sweep([RunConfig(**{**base, "out": str(tmp_path / "a")}),
                   RunConfig(**{**base, "tau2": -1, "out": str(tmp_path / "b")})])  # fmt: skip
    assert not (tmp_path / "a").exists()  # nothing ran: every config is checked first
    with pytest.raises(InputError, match="does not exist"):  # found only when the point is prepared
        missing = {"topology": f"edges:{tmp_path / 'nope'}", "out": str(tmp_path / "b")}
        run_sweep([RunConfig(**{**base, "out": str(tmp_path / "a")}), RunConfig(**{**base, **missing})])
    assert not (tmp_path / "a").exists()  # (it used to be made before the second point was refused)
    (tmp_path / "file").write_text("")  # a later run whose folder cannot be made: none is made before
    with pytest.raises(InputError, match="a file is in the way"):
        run_sweep([RunConfig(**{**base, "out": str(tmp_path / "a")}),
                   RunConfig(**{**base, "out": str(tmp_path / "file" / "b")})])  # fmt: skip
    assert not (tmp_path / "a").exists()


def test_a_refused_resume_in_a_sweep_leaves_the_other_runs_results(tiny, tmp_path) -> None:
    """A fresh run's old files are removed only once every run of the sweep is ready to start."""
    base = _base(tiny)
    run_sweep([RunConfig(**{**base, "out": str(tmp_path / "a")})])
    kept = (tmp_path / "a" / "summary.json").read_text()
    with pytest.raises(InputError, match="expected the folder of an interrupted run"):
        run_sweep([RunConfig(**{**base, "out": str(tmp_path / "a")}),
                   RunConfig(**{**base, "out": str(tmp_path / "b"), "resume": True})])  # fmt: skip
    assert (tmp_path / "a" / "summary.json").read_text() == kept and not (tmp_path / "b").exists()


@pytest.mark.parametrize(("batched", "per_pass"), [(True, 4096), (True, 50), (False, 4096)])
def test_batched_evaluation_equals_model_by_model(batched: bool, per_pass: int, monkeypatch) -> None:
    """evaluate_runs (one stacked pass over every run's models) against Stack.evaluate one model at a time,
    on the MNIST CNN with runs of different sizes and samples; per_pass = 50 cuts every run's samples into
    chunks of 8 (forward) and 2 (gradients), gathered from the runs' shared sample tensors."""
    import sim.evaluation

    monkeypatch.setattr(sim.evaluation, "MODEL_SAMPLES_PER_PASS", per_pass)
    torch.manual_seed(0)
    data = load_mnist()
    model = MnistCNN()
    stack = Stack(model)
    evaluators = [
        Evaluator(stack, data, samples, seed, torch.device("cpu")) for samples, seed in ((60, 0), (45, 1))
    ]
    Xs = [stack.flatten(model).repeat(n, 1) + 0.01 * torch.randn(n, stack.d) for n in (5, 3)]
    metrics = evaluate_runs(list(zip(evaluators, Xs, strict=True)), batched)
    for ev, X, got in zip(evaluators, Xs, metrics, strict=True):
        u = X.mean(0)
        loss, acc = stack.evaluate(u, ev.x_tr, ev.y_tr)
        _, test_acc = stack.evaluate(u, ev.x_te, ev.y_te)
        nodes = [stack.evaluate(X[i], ev.x_tr, ev.y_tr) for i in node_sample(len(X))]
        assert got["train_loss"] == pytest.approx(loss, rel=1e-5)
        assert got["train_acc"] == acc and got["test_acc"] == test_acc
        assert got["node_loss"] == pytest.approx(np.mean([n[0] for n in nodes]), rel=1e-5)
        assert got["node_acc"] == pytest.approx(np.mean([n[1] for n in nodes]))
        assert got["grad_norm2"] == pytest.approx(stack.full_gradient_norm2(u, ev.x_tr, ev.y_tr), rel=1e-4)
        assert got["consensus"] == pytest.approx(float(((X - u) ** 2).sum() / len(X)), rel=1e-6)


def _grid(tmp_path: Path, tiny: Path, body: str) -> Path:
    path = tmp_path / "grid.toml"
    path.write_text(
        f'[base]\ndataset = "npz:{tiny}"\nmodel = "logreg"\nnodes = 6\nsteps = 20\neval-samples = 30\n' + body
    )
    return path


def test_cli_sweep_json_folders_and_resume(tiny, tmp_path, capsys) -> None:
    grid = _grid(tmp_path, tiny, "[grid]\nseed = [0, 1]\ntau2 = [1, 4]\n")
    out = tmp_path / "out"
    assert main(["sweep", str(grid), "--out", str(out), "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert [r["grid"] for r in runs] == [{"seed": s, "tau2": t} for s in (0, 1) for t in (1, 4)]
    assert sorted(p.name for p in out.iterdir()) == sorted(  # (.dfl-sim.lock: one sweep at a time)
        [".dfl-sim.lock", "seed=0_tau2=1", "seed=0_tau2=4", "seed=1_tau2=1", "seed=1_tau2=4", "sweep.json"]
    )
    assert json.loads((out / "sweep.json").read_text()) == runs
    config = json.loads((out / "seed=1_tau2=4/config.json").read_text())
    assert (config["seed"], config["tau2"], config["steps"]) == (1, 4, 20)
    before = {p: (p / "metrics.csv").stat().st_mtime_ns for p in out.iterdir() if p.is_dir()}
    assert main(["sweep", str(grid), "--out", str(out), "--json", "--resume"]) == 0
    assert json.loads(capsys.readouterr().out) == runs  # finished runs are not run again
    assert before == {p: (p / "metrics.csv").stat().st_mtime_ns for p in out.iterdir() if p.is_dir()}


def test_a_sweeps_resume_never_trains_a_finished_run_again_and_its_folder_is_its_own(tiny, tmp_path, capsys):
    """Found by a robustness probe: with a finished run's checkpoint removed (to save disk) and the grid
    edited, --resume trained it again from step 0 in silence and replaced its results; a sweep went into a
    run's folder (whose interrupted run could then not resume) and beside another sweep at once."""
    grid = _grid(tmp_path, tiny, "[grid]\nseed = [0, 1]\n")
    out = tmp_path / "out"
    assert main(["sweep", str(grid), "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    (out / "seed=0" / "checkpoint.pt").unlink()
    kept = (out / "seed=0" / "metrics.csv").read_text()
    edited = _grid(tmp_path, tiny, "eta = 0.07\n[grid]\nseed = [0, 1]\n")
    assert main(["sweep", str(edited), "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "holds a finished run without a checkpoint" in err and "eta = 0.05 -> 0.07" in err, err
    assert (out / "seed=0" / "metrics.csv").read_text() == kept
    grid = _grid(tmp_path, tiny, "[grid]\nseed = [0, 1]\n")
    assert main(["sweep", str(grid), "--out", str(out), "--json", "--resume"]) == 0  # the same grid: done
    capsys.readouterr()
    metrics = out / "seed=0" / "metrics.csv"  # a metrics.csv cut short was reused as the whole run
    metrics.write_text(kept[: kept.rstrip("\n").rindex("\n") + 1])  # its last row lost
    assert main(["sweep", str(grid), "--out", str(out), "--resume"]) == 2
    assert "metrics.csv is unreadable or stops before step 20" in capsys.readouterr().err
    metrics.write_text(kept)
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    assert main(["sweep", str(grid), "--out", str(copy), "--json", "--resume"]) == 0  # where runs are now
    dirs = [r["out_dir"] for r in json.loads(capsys.readouterr().out)]
    assert dirs == [str(copy / "seed=0"), str(copy / "seed=1")]
    assert main(["sweep", str(grid), "--out", str(out / "seed=1")]) == 2
    assert "is a dfl-sim run folder (expected a folder of the sweep's own" in capsys.readouterr().err
    holder = subprocess.Popen(  # another sweep writing the folder now (the lock is flock: another process)
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); fcntl.flock(f, "
         "fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)", str(out / ".dfl-sim.lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        assert main(["sweep", str(grid), "--out", str(out), "--resume"]) == 2
        assert "is in use by another run" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("[grid]\nseed = []\n", "expected a non-empty list"),
        (
            "[grid]\nmethod = []\n",
            "[grid] method = [] is empty, and 'method' is no RunConfig field (expected a non-empty list",
        ),  # a bundle
        ("[grid]\nmodel = ['logreg', 'lstsq']\n", "'model' cannot vary"),
        ("[grid]\nsed = [1]\n", "unknown key 'sed'"),
        ("[grids]\nseed = [1]\n", "unknown table 'grids'"),
        ("[grid]\ntau1 = [1, 0]\n", "tau1 = 0 is out of range"),
        ("[grid]\nnodes = [6]\n", "'nodes' is in [base] and in [grid]"),
        ("[grid\n", "is not valid TOML"),
        ("[grid]\nseed = [0]\n[base.out]\n", "'out' in [base] is set by the sweep"),
        ("log_every = 2\nlog-every = 4\n[grid]\nseed = [0]\n", "'log_every' and 'log-every' set one field"),
        ("[grid]\nlog_every = [2]\nlog-every = [4]\n", "[grid] has 'log-every' twice, spelled two ways"),
        # these three made the sweep's folder and sweep.json, then stopped (or ran a duplicate, or a default)
        ("[grid]\nseed = [0, 0]\n", "[grid] seed lists one value twice (0; expected distinct values"),
        ("[grid]\neta = [1, 1.0]\n", "[grid] eta lists one value twice (1 and 1.0;"),
        ("[grid]\nseed = [0, 1, 2, 0]\n", "[grid] seed lists one value twice (0;"),
        ("[grid]\ntopology = ['ring', 'torus', 'ring']\n", "[grid] topology lists one value twice ('ring';"),
        ("", "has no [grid] entries (expected field = [value, ...] lines under [grid]"),
        # identical runs under other names (a probe): a grid field the runs do not read
        ("[grid]\nseed = [0]\n", "resume: '{out}' holds no sweep (no sweep.json"),  # a typo of --out
        # refused when the engine was built, after the sweep's folder and sweep.json were made (a probe)
        (
            "algorithm = 'cdfl'\ncompressor = 'top_k'\n[grid]\ncompressor_param = [3, 99999]\n",
            "k = 99999 exceeds",
        ),
        ("[grid]\ntopology = ['ring', 'hypercube']\n", "hypercube"),
        ("backend = 'distributed'\n[grid]\nseed = [0, 1]\n", "backend = 'distributed' (expected local"),
        (
            "[grid]\nalpha = [0.1, 10.0]\n",
            "[grid] alpha = [0.1, 10.0] changes nothing: only partition 'dirichlet'",
        ),
        (
            "algorithm = 'sync'\n[grid]\ntau2 = [1, 4]\n",
            "tau2 = [1, 4] changes nothing: algorithm 'sync' fixes",
        ),
        (
            "[grid]\ntopology = ['ring', 'matrix:/nonexistent/m.npy']\n",
            "matrix file '/nonexistent/m.npy' does not",
        ),
        # bundles: tables of fields set together
        (
            "[grid]\nalgorithm = [{tau1 = 2}]\n",
            "[grid] algorithm holds tables, but 'algorithm' is a RunConfig",
        ),
        ("[grid]\nm = [{tau1 = 2}, 3]\n", "[grid] m holds 3 beside tables (expected a list of non-empty"),
        ("[grid]\nm = [{tau1 = 2}, {}]\n", "[grid] m holds an empty table"),
        ("[grid]\nm = {tau1 = 2}\n", "[grid] m = {{'tau1': 2}} is one table (expected a list"),
        # a review's finds: a table's idle field ran (or a plain axis's rule refused what runs read)
        (
            "[grid]\nm = [{algorithm = 'dfl', gamma = 0.5}, {algorithm = 'cdfl', compressor = 'top_k', "
            "compressor_param = 5}]\n",
            "[grid] m: the table {{'algorithm': 'dfl', 'gamma': 0.5}} sets gamma = 0.5, which changes",
        ),
        (
            "[grid]\nm = [{algorithm = 'sync', tau2 = 4}, {algorithm = 'dfl', tau2 = 2}]\n",
            "sets tau2 = 4, which changes nothing at any of its points: algorithm 'sync' fixes",
        ),
        (
            "[grid]\nm = [{algorithm = 'dfl'}, {algorithm = 'dfl', compressor = 'identity'}]\n",
            "the points {{'algorithm': 'dfl'}} and {{'algorithm': 'dfl', 'compressor': 'identity'}} are one",
        ),
        (  # a field an algorithm fixes (sync's tau1 = 1), read by the other algorithm's points
            "[grid]\ntau1 = [1, 2]\nm = [{algorithm = 'sync'}, {algorithm = 'dfl'}]\n",
            "the points {{'tau1': 1, 'algorithm': 'sync'}} and {{'tau1': 2, 'algorithm': 'sync'}} are one",
        ),
        ("[grid]\nm = [{tau1 = 2}, {tau1 = 2.0}]\n", "[grid] m lists one table twice"),
        ("[grid]\nm = [{bogus = 2}]\n", "unknown key 'bogus'"),
        (
            "[grid]\nm = [{out = 'x'}]\n",
            "[grid] m: 'out' cannot vary in a sweep: the sweep sets it (expected --out",
        ),
        # a probe: these trained one run twice (what a run saves, not how it trains)
        (
            "[grid]\ncheckpoint_every = [5, 10]\n",
            "'checkpoint_every' cannot vary in a sweep: it changes what",
        ),
        (
            "[grid]\nm = [{save_params = true}]\n",
            "[grid] m: 'save_params' cannot vary in a sweep: it changes",
        ),
        ("tau1 = 3\n[grid]\nm = [{tau1 = 2}]\n", "[grid] m: 'tau1' is in [base] and in the bundle"),
        ("[grid]\ntau1 = [1, 2]\nm = [{tau1 = 2}]\n", "[grid] m: 'tau1' is also a [grid] entry of its own"),
        ("[grid]\nm = [{tau1 = 2}]\ntau1 = [1, 2]\n", "'tau1' is set by the bundle 'm' and by another"),
        ("[grid]\nm = [{tau1 = 2}]\nn = [{tau1 = 3}]\n", "'tau1' is set by the bundle 'm' and by another"),
        # a probe: a value of the wrong type was reported as a folder clash with its look-alike
        ("[grid]\nseed = [0, '0']\n", "seed = '0' has the wrong type (expected an integer)"),
        # ... and two spellings of one graph trained one run twice
        (
            "[grid]\nweights = ['paper', 'metropolis']\n",
            "the points {{'weights': 'paper'}} and {{'weights': 'metropolis'}} are one run: their topologies",
        ),
        (
            "[grid]\ntopology = ['ring', 'matrix:{tmp}/ring.npy']\n",
            "the points {{'topology': 'ring'}} and {{'topology': 'matrix:",
        ),
    ],
)
def test_cli_sweep_errors_exit_2_with_one_line(tiny, tmp_path, capsys, body: str, fragment: str) -> None:
    from bounds.graph.mixing import topology_matrix

    np.save(tmp_path / "ring.npy", topology_matrix("ring", 6))  # (the ring's own C, as a file)
    grid = _grid(tmp_path, tiny, body.replace("{tmp}", str(tmp_path)))
    resume = ["--resume"] if fragment.startswith("resume:") else []
    assert main(["sweep", str(grid), "--out", str(tmp_path / "out"), *resume]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        fragment.format(out=tmp_path / "out") in err and "\n" not in err and err.startswith("dfl-sim: error:")
    )
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_bundle_sets_its_fields_together_dfl_beside_cdfl_with_a_compressor(tiny, tmp_path, capsys) -> None:
    """An algorithm axis times a compressor axis holds DFL with top_k, which is refused: a probe could not
    compare DFL with C-DFL in one grid. A bundle's tables are points of their own, run as the run alone."""
    body = (
        "[grid]\nseed = [0, 1]\n"
        "method = [{algorithm = 'dfl'}, {algorithm = 'cdfl', compressor = 'top_k', compressor_param = 5}]\n"
    )
    grid, out = _grid(tmp_path, tiny, body), tmp_path / "out"
    assert main(["sweep", str(grid), "--out", str(out), "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    cdfl = {"algorithm": "cdfl", "compressor": "top_k", "compressor_param": 5}
    assert [r["grid"] for r in runs] == [
        {"seed": s, **m} for s in (0, 1) for m in ({"algorithm": "dfl"}, cdfl)
    ]
    folder = out / "seed=1_algorithm=cdfl_compressor=top_k_compressor_param=5"
    assert (
        main(["run", "--config", str(folder / "config.json"), "--out", str(tmp_path / "alone"), "--json"])
        == 0
    )
    alone = json.loads(capsys.readouterr().out)
    assert alone["steps"] == runs[3]["steps"] and alone["bits_per_node"] == runs[3]["bits_per_node"]
    assert runs[3]["final_train_loss"] == pytest.approx(alone["final_train_loss"], rel=1e-5)
    assert (out / "seed=0_algorithm=dfl" / "summary.json").is_file()


def test_grid_folder_names_keep_the_value_and_fit_a_file_system(tmp_path) -> None:
    """eta = 1e+30 was written to a folder named eta=1e-30 ('+' replaced), so [1e-30, 1e30] was refused as
    two runs in one folder; a name over 255 bytes (an edges: path) failed to be made."""
    from sim.grid import FOLDER_NAME_LIMIT, grid_points

    points = grid_points({"steps": 4}, {"eta": [1e-30, 1e30]}, tmp_path)
    assert [Path(p.config.out).name for p in points] == ["eta=1e-30", "eta=1e+30"]
    long = [f"edges:{tmp_path}/{'x' * 250}{i}.txt" for i in range(2)]
    names = [Path(p.config.out).name for p in grid_points({"steps": 4}, {"topology": long}, tmp_path)]
    assert len(set(names)) == 2 and all(len(n) == FOLDER_NAME_LIMIT for n in names)
    ring = "".join(f"{i} {(i + 1) % 10}\n" for i in range(10))
    for name in ("a b", "a-b"):
        (tmp_path / name).write_text(ring)
    with pytest.raises(
        InputError, match=r"the points \{'topology': 'edges:.*a b'\} and .* would write to one"
    ):
        grid_points({"steps": 4}, {"topology": [f"edges:{tmp_path}/a b", f"edges:{tmp_path}/a-b"]}, tmp_path)
    assert names[0].startswith("topology=edges-")


def test_cli_sweep_refuses_an_empty_out_and_a_config_key_spelled_twice(tiny, tmp_path, capsys) -> None:
    grid = _grid(tmp_path, tiny, "[grid]\nseed = [0]\n")
    assert main(["sweep", str(grid), "--out", ""]) == 2  # wrote ./run
    assert "--out = '' is empty (expected the sweep's folder)" in capsys.readouterr().err
    config = tmp_path / "run.toml"
    config.write_text("log_every = 2\nlog-every = 4\n")
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "r")]) == 2
    assert "'log_every' and 'log-every' set one field (expected it once)" in capsys.readouterr().err


def test_cli_sweep_missing_file(tmp_path, capsys) -> None:
    assert main(["sweep", str(tmp_path / "nope.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["sweep", str(tmp_path)]) == 2
    assert "is a folder (expected a TOML file" in capsys.readouterr().err
    flat = tmp_path / "flat.toml"
    flat.write_text("steps = 8\n")  # a run's config given to sweep
    assert main(["sweep", str(flat)]) == 2
    assert "a key outside the tables: 'steps' (expected [base] and [grid] tables" in capsys.readouterr().err


def test_health_of_runs_by_hand() -> None:
    """Three runs of 2, 3 and 1 rows: run 1 took a gossip-only step (no losses), run 2 has an inf
    parameter, run 0 a NaN loss; means summed in float64 per run."""
    from sim.loop import Health, health, health_of_runs

    X = torch.zeros(6, 4)
    X[5, 2] = float("inf")
    losses = [torch.tensor([1.0, float("nan")]), None, torch.tensor([0.25])]
    owner, loss_owner = torch.tensor([0, 0, 1, 1, 1, 2]), torch.tensor([0, 0, 2])
    got = health_of_runs(torch.isfinite(X).all(dim=1), [2, 3, 1], losses, owner, loss_owner)
    assert got[1] == Health(None, True) and got[2] == Health(0.25, False)
    assert got[0].finite is False and np.isnan(got[0].loss)
    ok = health(torch.ones(3, 2), torch.tensor([0.5, 1.0, 3.0]))
    assert ok == Health(1.5, True)
    assert health(torch.ones(3, 2), None) == Health(None, True)


def test_sweep_groups_split_by_the_shared_fields_in_order(tiny) -> None:
    from sim.sweep import sweep_groups

    a, b = RunConfig(seed=0), RunConfig(seed=1, tau2=3)
    c = RunConfig(dataset=f"npz:{tiny}", model="logreg")
    d = RunConfig(device="cuda")
    assert sweep_groups([a, c, b, d]) == [[a, b], [c], [d]]
    assert sweep_groups([]) == []


def test_run_sweep_names_arguments_that_are_not_run_configs() -> None:
    """run_sweep(config) was a TypeError from inside, run_sweep([dict]) an AttributeError."""
    with pytest.raises(InputError, match=r"configs = RunConfig\(.*\(expected a list of RunConfig\)"):
        run_sweep(RunConfig())
    with pytest.raises(InputError, match=r"configs = \[\{\}\]"):
        run_sweep([{}])


def test_the_runs_of_a_sweep_share_one_copy_of_the_training_set_on_the_device(tiny, tmp_path, monkeypatch):
    """Every run's trainer and the engine read the data set's one device copy (Dataset.train_on), not a copy
    each: 400 runs x MNIST's 188 MB filled an 80 GB GPU. On the CPU ``.to`` returns the tensor itself, so
    the copies are told apart here by a train_on that hands out a clone."""
    from sim.data import Dataset
    from sim.sweep import build_engine

    made: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def one_clone(self: Dataset, device: object) -> tuple[torch.Tensor, torch.Tensor]:
        return made.setdefault(id(self), (self.x_train.clone(), self.y_train.clone()))

    monkeypatch.setattr(Dataset, "train_on", one_clone)
    configs = [RunConfig(**_base(tiny), seed=s, out=str(tmp_path / str(s))) for s in range(3)]
    engine, _ = build_engine(configs)
    ((x, y),) = made.values()
    assert engine.x_train is x and engine.y_train is y
    assert all(lane.trainer.x_train is x and lane.trainer.y_train is y for lane in engine.lanes)


def test_runs_that_split_alike_share_their_parts_layouts_and_evaluation_samples(tiny, tmp_path) -> None:
    """Runs of one seed, partition and node count hold one copy of their nodes' index arrays, of their
    samplers' layout (the engine's flat index tensor holds each partition once) and of their evaluation
    samples; another seed has its own. Each run held its own: 4.8 MB a logistic-regression run of MNIST, 3.1
    MB of it evaluation images (200 runs, 2026-11-29). The shared samples go when no run holds them."""
    import gc

    from sim.engine import BatchSampler
    from sim.sweep import build_engine

    configs = [
        RunConfig(**_base(tiny), seed=seed, eta=eta, out=str(tmp_path / f"{seed}-{eta}"))
        for seed in (0, 1)
        for eta in (0.1, 0.2)
    ]
    engine, setups = build_engine(configs)
    parts = [s.parts for s in setups]
    assert parts[0] is parts[1] and parts[2] is parts[3] and parts[0] is not parts[2]
    flats = [lane.sampler.layout[0] for lane in engine.lanes]
    assert flats[0] is flats[1] and flats[0] is not flats[2]
    data = setups[0].data
    assert len(engine._flat) == 2 * len(data.y_train)  # each partition once, not each run
    evaluators = [
        Evaluator(s.stack, s.data, c.eval_samples, c.seed, s.device)
        for c, s in zip(configs, setups, strict=True)
    ]
    assert evaluators[0].x_tr is evaluators[1].x_tr and evaluators[0].y_te is evaluators[1].y_te
    assert evaluators[0].x_tr is not evaluators[2].x_tr
    assert not torch.equal(evaluators[0].x_tr, evaluators[2].x_tr)
    full = [BatchSampler(parts[0], 0, seed, torch.device("cpu"))._full for seed in (0, 1)]
    assert full[0][0] is full[1][0]  # the full batch's padded indices too
    assert len(data.shared) > 0
    import pickle

    again = pickle.loads(pickle.dumps(data))  # (the weak dictionary did not pickle)
    assert (
        torch.equal(again.x_train, data.x_train)
        and "shared" not in again.__dict__
        and again.digest == data.digest
    )
    del evaluators, engine, setups, parts, flats, full
    gc.collect()
    assert not [key for key in data.shared if key[0] == "evaluation"]


def test_train_on_copies_once_per_device(tiny) -> None:
    from sim.data import load_dataset

    data = load_dataset(f"npz:{tiny}")
    first = data.train_on("meta")
    assert first[0].device.type == "meta" and first[0].shape == data.x_train.shape
    assert data.train_on(torch.device("meta"))[0] is first[0]  # the same copy, however the device is named
    assert data.train_on("cpu")[0] is data.x_train  # on the CPU, the tensors themselves


def test_set_precision_sets_the_cuda_flags_and_leaves_the_cpu_alone() -> None:
    """Runs on CUDA are float32 unless --tf32 (torch's own default lets cuDNN round to TF32)."""
    from sim.setup import set_precision

    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    before = cudnn.allow_tf32, matmul.allow_tf32
    try:
        set_precision("cuda", True)
        assert cudnn.allow_tf32 and matmul.allow_tf32
        set_precision(torch.device("cuda:0"), False)
        assert not cudnn.allow_tf32 and not matmul.allow_tf32
        set_precision("cpu", True)  # a CPU run changes nothing
        assert not cudnn.allow_tf32 and not matmul.allow_tf32
    finally:
        cudnn.allow_tf32, matmul.allow_tf32 = before


def test_a_run_and_a_sweep_leave_torch_settings_as_they_found_them(tiny) -> None:
    """RunConfig.threads and set_precision change process-wide torch settings; a run or a sweep called from
    the user's own code gives them back on return and on an error (sim.setup.kept_torch_settings), and leaves
    torch's global random stream where it was."""
    from sim.host import allowed_cpus
    from sim.setup import kept_torch_settings, set_precision

    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    with kept_torch_settings():  # this test's own changes, undone for the tests after it
        cudnn.benchmark, cudnn.allow_tf32, matmul.allow_tf32 = True, True, False
        mine = torch.get_num_threads()
        with pytest.raises(RuntimeError, match="inside"), kept_torch_settings():
            torch.set_num_threads(mine + 1)
            set_precision("cuda", tf32=False)
            cudnn.benchmark = False
            raise RuntimeError("inside")
        assert (cudnn.benchmark, cudnn.allow_tf32, matmul.allow_tf32) == (True, True, False)
        assert torch.get_num_threads() == mine
        other = 1 if mine > 1 else min(2, len(allowed_cpus()))  # (within the cores: more are refused)
        base = {"dataset": f"npz:{tiny}", "model": "logreg", "nodes": 4, "steps": 3, "threads": other}
        torch.manual_seed(123)  # the caller's random stream: a run's seed used to reseed it (a probe)
        stream = torch.get_rng_state()
        run(RunConfig(**base, out=str(tiny.parent / "one")))
        assert torch.get_num_threads() == mine and torch.equal(torch.get_rng_state(), stream)
        run_sweep([RunConfig(**base, seed=s, out=str(tiny.parent / f"s{s}")) for s in (0, 1)])
        assert torch.get_num_threads() == mine and torch.equal(torch.get_rng_state(), stream)
        assert (cudnn.benchmark, cudnn.allow_tf32, matmul.allow_tf32) == (True, True, False)


def test_lanes_are_cut_greedily_by_width_and_samples_per_call() -> None:
    """sim.sweep._by_batch_width against its definition, on random lanes: lanes of one width (full batches
    apart) in order, a chunk closed when the next lane would take it past samples_per_call (a lane alone may
    exceed it)."""
    from types import SimpleNamespace

    from sim.sweep import _by_batch_width

    def reference(lanes, limit):
        groups = {}
        for lane in lanes:
            key = (lane.sampler.width, lane.sampler.batch_size == 0)
            chunks = groups.setdefault(key, [[]])
            if chunks[-1] and (sum(o.nodes for o in chunks[-1]) + lane.nodes) * key[0] > limit:
                chunks.append([])
            chunks[-1].append(lane)
        return [chunk for chunks in groups.values() for chunk in chunks]

    rng = np.random.default_rng(0)
    for _ in range(200):
        lanes = []
        for _ in range(rng.integers(1, 40)):
            width = int(rng.choice([8, 32, 100]))
            full = bool(rng.random() < 0.2)
            sampler = SimpleNamespace(width=width, batch_size=0 if full else width)
            lanes.append(SimpleNamespace(sampler=sampler, nodes=int(rng.integers(1, 30))))
        limit = int(rng.choice([50, 640, 8192]))
        assert _by_batch_width(lanes, limit) == reference(lanes, limit)


def test_a_grid_field_idle_at_some_points_only_is_kept_unless_it_makes_one_run_twice(tmp_path) -> None:
    """A one-value field that some runs read is kept. alpha = [0.1, 10.0] beside partition = ['shards',
    'dirichlet'] is read by the dirichlet points, but trained the shards run twice, identical, in two
    folders: refused, naming why, as is a bundle's table that does the same; a bundle says it once."""
    from sim.grid import grid_points, refuse_idle_fields

    refuse_idle_fields(grid_points({"steps": 4}, {"tau2": [4]}, tmp_path), "grid.toml")
    one = grid_points({"steps": 4}, {"algorithm": ["dfl", "cdfl"], "gamma": [0.5]}, tmp_path)
    refuse_idle_fields(one, "grid.toml")  # one value, read by the cdfl point: was refused (a review)
    with pytest.raises(InputError, match=r"\[grid\] gamma = \[0.5\] changes nothing"):
        refuse_idle_fields(grid_points({"steps": 4}, {"gamma": [0.5]}, tmp_path), "grid.toml")
    twice = r"\{'partition': 'shards', 'alpha': 0.1\} and \{'partition': 'shards', 'alpha': 10.0\} are "
    mixed = grid_points({"steps": 4}, {"partition": ["shards", "dirichlet"], "alpha": [0.1, 10.0]}, tmp_path)
    with pytest.raises(InputError, match=twice + r"one run \(alpha: only partition 'dirichlet' reads it"):
        refuse_idle_fields(mixed, "grid.toml")
    grid = {"partition": ["shards", "dirichlet"], "m": [{"alpha": 0.1}, {"alpha": 0.5}]}
    with pytest.raises(InputError, match="are one run"):
        refuse_idle_fields(grid_points({"steps": 4}, grid, tmp_path), "grid.toml")
    bundle = [{"partition": "shards"}] + [{"partition": "dirichlet", "alpha": a} for a in (0.1, 10.0)]
    refuse_idle_fields(grid_points({"steps": 4}, {"m": bundle}, tmp_path), "grid.toml")


def test_writable_folder_names_the_file_in_the_way(tmp_path) -> None:
    """sweep --out FILE said '(File exists)', where run says '(a file is in the way: FILE)'; a name too long
    stays one line (finding the file in the way must not raise itself, a review)."""
    from bounds.cli_tools import writable_folder

    (tmp_path / "afile").write_text("")
    for out in ("afile", "afile/sub"):
        with pytest.raises(
            InputError, match=f"not a writable folder \\(a file is in the way: '{tmp_path}/afile'\\)"
        ):
            writable_folder(tmp_path / out, "out")
    with pytest.raises(InputError, match=r"is not a writable folder \(File name too long\)"):
        writable_folder(tmp_path / ("x" * 300), "out")


def test_a_refused_resume_keeps_the_sweep_listing(tiny, tmp_path, capsys) -> None:
    """A --resume whose edited grid was refused when the engine was built had already rewritten sweep.json:
    the finished runs' summaries were gone from it."""
    out = tmp_path / "out"
    assert main(["sweep", str(_grid(tmp_path, tiny, "[grid]\nseed = [0, 1]\n")), "--out", str(out)]) == 0
    listing = (out / "sweep.json").read_text()
    edited = _grid(tmp_path, tiny, "[grid]\nseed = [0, 1]\ntopology = ['ring', 'hypercube']\n")
    capsys.readouterr()
    assert main(["sweep", str(edited), "--out", str(out), "--resume"]) == 2
    assert "hypercube" in capsys.readouterr().err and (out / "sweep.json").read_text() == listing


def test_a_sweeps_resume_after_a_divergence_and_with_more_steps(tiny, tmp_path, capsys) -> None:
    """A probe: --resume of a sweep holding a diverged run ended in 'Unknown format code g for object of type
    str' (its summary.json holds 'inf' as a string, a fresh run the number); raising steps was refused for
    the diverged run (no checkpoint to continue), though more steps diverge at the same step again."""
    grid = _grid(tmp_path, tiny, "[grid]\neta = [0.05, 1e38]\n")
    out = tmp_path / "out"
    assert main(["sweep", str(grid), "--out", str(out)]) == 0
    first = capsys.readouterr().out
    assert main(["sweep", str(grid), "--out", str(out), "--resume"]) == 0
    assert capsys.readouterr().out == first and "diverged" in first
    config = RunConfig(dataset=f"npz:{tiny}", model="logreg", nodes=6, steps=20, eval_samples=30, eta=1e38,
                       out=str(out / "eta=1e+38"))  # fmt: skip
    fresh = run_sweep([dataclasses.replace(config, out=str(tmp_path / "api"))])[0]
    from sim.grid import finished_summary

    done = finished_summary(config)  # read back from its files: the same types as a fresh run's
    assert fresh["diverged"] and {type(fresh[k]) for k in ("final_train_loss", "final_consensus")} == {float}
    assert done is not None and isinstance(done["final_train_loss"], float)  # (the number again, not 'inf')
    longer = (
        _grid(tmp_path, tiny, "[grid]\neta = [0.05, 1e38]\n").read_text().replace("steps = 20", "steps = 30")
    )
    grid.write_text(longer)
    assert main(["sweep", str(grid), "--out", str(out), "--resume", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert runs[0]["steps"] == 30 and runs[1]["diverged"] and runs[1]["steps"] < 20
    (out / "eta=0.05" / "summary.json").write_text('{"steps": 30}')  # hand-made: no finished run (KeyError)
    (out / "eta=0.05" / "checkpoint.pt").unlink()
    assert main(["sweep", str(grid), "--out", str(out), "--resume"]) == 2
    assert "holds a finished run without a checkpoint" in capsys.readouterr().err


def test_a_sweeps_resume_refuses_finished_runs_whose_graph_or_data_changed(tiny, tmp_path, capsys) -> None:
    """A probe: an edges: file (or npz data set) edited after the sweep, --resume reported the old runs'
    numbers as this grid's results. A summary keeps the digests of its C and data now; a run with its
    checkpoint is refused as a resume from it is, a diverged one (no checkpoint) by its own line."""
    edges = tmp_path / "edges.txt"
    edges.write_text("0 1\n1 2\n2 3\n3 4\n4 5\n")  # a path
    grid = _grid(
        tmp_path, tiny, f'weights = "metropolis"\ntopology = "edges:{edges}"\n[grid]\neta = [0.05, 1e38]\n'
    )
    out = tmp_path / "out"
    assert main(["sweep", str(grid), "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)[0]
    assert len(summary["mixing_digest"]) == 16 and len(summary["data_digest"]) > 0
    assert main(["sweep", str(grid), "--out", str(out), "--resume"]) == 0  # unchanged: reused
    capsys.readouterr()
    edges.write_text("0 1\n0 2\n0 3\n0 4\n0 5\n")  # a star
    assert main(["sweep", str(grid), "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert (
        "another mixing matrix C" in err
        or "its mixing matrix C (an edited edges:/matrix: file?) changed" in err
    )
    (out / "eta=0.05").rename(tmp_path / "aside")  # the diverged run alone: no checkpoint to compare with
    assert main(["sweep", str(grid), "--out", str(out), "--resume"]) == 2
    assert (
        "its mixing matrix C (an edited edges:/matrix: file?) changed since it ran" in capsys.readouterr().err
    )


def test_a_sweep_refuses_a_huge_grid_and_notes_runs_of_another_spelling(tiny, tmp_path, capsys, monkeypatch):
    """A probe: a 10^7-point grid was built in full (a MemoryError traceback after 35 s); a grid written with
    its keys in another order named its runs anew and --resume trained them all again without a word; and
    sweep.json was rewritten once for every run that ended (1,000 runs ending together: 64 of 113 s)."""
    import sim.run_folder

    big = _grid(
        tmp_path,
        tiny,
        "[grid]\nseed = " + str(list(range(1000))) + "\ntau1 = " + str(list(range(1, 101))) + "\n",
    )
    assert main(["sweep", str(big), "--out", str(tmp_path / "big")]) == 2
    err = capsys.readouterr().err
    assert "the grid has 100,000 points (1000 seed x 100 tau1; expected at most 10,000" in err
    assert not (tmp_path / "big").exists()
    writes: list[str] = []
    atomic_write = sim.run_folder.atomic_write

    def counted(path, write):
        writes.append(Path(path).name)
        return atomic_write(path, write)

    monkeypatch.setattr(sim.run_folder, "atomic_write", counted)
    grid = _grid(tmp_path, tiny, "[grid]\nseed = [0, 1, 2]\ntau2 = [1, 4]\n")
    out = tmp_path / "out"
    assert main(["sweep", str(grid), "--out", str(out)]) == 0
    assert writes.count("sweep.json") == 3  # the grid, once as the 6 runs end together, the whole
    capsys.readouterr()
    grid.write_text(
        grid.read_text().replace("seed = [0, 1, 2]\ntau2 = [1, 4]", "tau2 = [1, 4]\nseed = [0, 1, 2]")
    )
    assert main(["sweep", str(grid), "--out", str(out), "--resume"]) == 0
    note = capsys.readouterr().err
    assert "dfl-sim: note: 6 run folders in" in note and "are no point of this grid (seed=0_tau2=1" in note


def test_a_diverged_run_is_reused_for_more_steps_only_where_its_steps_keep_their_kinds(
    tiny, tmp_path, capsys
):
    """A review: with tau = (1, 20) the partial round of T = 10 is all local steps, of T = 30 gossip from
    step 2 on, so a run that diverged at step 2 of 10 is another run with 30 steps: refused as before."""
    grid = _grid(tmp_path, tiny, "tau1 = 1\ntau2 = 20\n[grid]\neta = [1e38]\n")
    grid.write_text(grid.read_text().replace("steps = 20", "steps = 10"))
    out = tmp_path / "out"
    assert main(["sweep", str(grid), "--out", str(out)]) == 0
    assert "diverged at step" in capsys.readouterr().out
    grid.write_text(grid.read_text().replace("steps = 10", "steps = 30"))
    assert main(["sweep", str(grid), "--out", str(out), "--resume"]) == 2
    assert "its settings differ: steps = 10 -> 30" in capsys.readouterr().err


def test_a_finished_sweeps_resume_without_its_inputs_and_a_listing_after_an_error(
    tiny, tmp_path, capsys, monkeypatch
):
    """A review: a finished sweep whose data set was moved away could no longer be listed (its digests are
    checked now): its runs are reused by their settings, with a note. And a run that ended in a step that
    an error then cut short (a later run's finish failing) was missing from sweep.json."""
    import sim.loop

    moved = tmp_path / "data.npz"
    shutil.copy(tiny, moved)
    grid = _grid(tmp_path, moved, "[grid]\nseed = [0, 1]\n")
    out = tmp_path / "out"
    assert main(["sweep", str(grid), "--out", str(out)]) == 0
    listed = capsys.readouterr().out
    moved.unlink()
    assert main(["sweep", str(grid), "--out", str(out), "--resume"]) == 0
    captured = capsys.readouterr()
    assert captured.out == listed and "data cannot be read to check it is theirs" in captured.err
    finish, calls = sim.loop.RunRecorder.finish, []

    def failing(self):
        calls.append(self)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return finish(self)

    monkeypatch.setattr(sim.loop.RunRecorder, "finish", failing)
    grid = _grid(tmp_path, tiny, "[grid]\nseed = [0, 1]\n")
    assert main(["sweep", str(grid), "--out", str(tmp_path / "full")]) == 1
    listing = json.loads((tmp_path / "full" / "sweep.json").read_text())
    assert ["final_train_loss" in r for r in listing] == [True, False]  # seed=0 ended before the error


def test_save_params_given_to_a_finished_sweep_writes_its_runs_params(tiny, tmp_path, capsys) -> None:
    """A review: save_params = true added to a finished sweep's [base] and --resume reused the runs without a
    params.npz, in silence. Their final checkpoints are resumed now, which write it (results unchanged); a
    diverged run (its parameters not finite) is reused as it is."""
    grid = _grid(tmp_path, tiny, "[grid]\neta = [0.05, 1e38]\n")
    out = tmp_path / "out"
    assert main(["sweep", str(grid), "--out", str(out), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    metrics = (out / "eta=0.05" / "metrics.csv").read_text()
    grid.write_text(grid.read_text().replace("[grid]", "save_params = true\n[grid]"))
    assert main(["sweep", str(grid), "--out", str(out), "--json", "--resume"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (out / "eta=0.05" / "params.npz").is_file() and not (out / "eta=1e+38" / "params.npz").exists()
    keys = ("final_train_loss", "final_test_accuracy", "final_consensus", "steps", "diverged")
    assert [{k: r[k] for k in keys} for r in again] == [{k: r[k] for k in keys} for r in first]
    assert (out / "eta=0.05" / "metrics.csv").read_text() == metrics
    (out / "eta=0.05" / "params.npz").unlink()
    (out / "eta=0.05" / "checkpoint.pt").unlink()
    assert main(["sweep", str(grid), "--out", str(out), "--resume"]) == 2
    assert (
        "save_params asks for its params.npz, which only its checkpoint could give" in capsys.readouterr().err
    )


def test_a_grid_list_longer_than_a_sweep_is_refused_before_its_values_are_compared(tmp_path) -> None:
    """30,000 seeds spent minutes comparing every pair of values before the points were counted (a probe)."""
    from sim.grid import load_grid

    grid = tmp_path / "g.toml"
    grid.write_text(f"[base]\nsteps = 4\n[grid]\nseed = {list(range(30_000))}\n")
    with pytest.raises(InputError, match="seed lists 30,000 values \\(expected at most 10,000 points"):
        load_grid(grid)
    grid.write_text(f"[base]\nsteps = 4\n[grid]\nseed = {[*range(9_000), 17]}\n")  # the dict finds it
    with pytest.raises(InputError, match="seed lists one value twice \\(17;"):
        load_grid(grid)
