"""torch.distributed backend (gloo, P = 2): same results, only neighbours' rows travel, faults stop."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import torch

from bounds import InputError
from sim.errors import RunInterrupted, SimulationError
from sim.faults import FAULT_ENV
from sim.runner import RunConfig, run


def base(tiny, out, **kw) -> RunConfig:
    return RunConfig(
        **{
            **dict(
                dataset=f"npz:{tiny}",
                model="logreg",
                nodes=6,
                steps=50,
                log_every=10,
                eval_samples=60,
                batch_size=8,
                partition="iid",
                eta=0.1,
                tau1=2,
                tau2=3,
                save_params=True,
                out=str(out),
                checkpoint_every=10,
            ),
            **kw,
        }
    )


@pytest.mark.parametrize(
    ("algorithm", "extra", "wire"),
    [
        ("dfl", {}, 2 * 2 * 27 * 4),  # per gossip step: 2 ranks x 2 boundary rows x d = 27 float32
        ("cdfl", {"compressor": "top_k", "compressor_param": 5, "gamma": 0.8}, 2 * 2 * 5 * (4 + 4)),
        ("sync", {}, 2 * 3 * 27 * 4),  # C = J (held as ExactAverage): each rank needs all 3 rows of the other
    ],
)
def test_two_processes_match_one_after_50_steps(tiny, tmp_path, algorithm, extra, wire) -> None:
    one = run(base(tiny, tmp_path / "one", algorithm=algorithm, **extra))
    two = run(base(tiny, tmp_path / "two", algorithm=algorithm, backend="distributed", world_size=2, **extra))
    a, b = np.load(tmp_path / "one" / "params.npz"), np.load(tmp_path / "two" / "params.npz")
    assert max(float(np.abs(a[k] - b[k]).max()) for k in a.files) < 1e-5  # float32 summation order only
    assert two["final_train_loss"] == pytest.approx(one["final_train_loss"], rel=1e-5)
    assert two["bytes_on_wire_per_gossip_step"] == wire and two["world_size"] == 2
    assert json.loads((tmp_path / "two" / "summary.json").read_text())["steps"] == 50


@pytest.mark.parametrize("extra", [{}, {"algorithm": "cdfl", "compressor": "top_k", "compressor_param": 5}])
def test_a_dying_process_stops_the_run_and_it_resumes(tiny, tmp_path, extra, monkeypatch, caplog) -> None:
    """C-DFL also restores each rank's x_hat rows and its neighbours' replicas from the checkpoint. torch's
    own 'Terminating process N via signal SIGTERM' warning is not printed beside the run's error."""
    start = time.perf_counter()
    monkeypatch.setenv(FAULT_ENV, "exit:25")
    advice = r"rerun with --resume to continue from the checkpoint at step \d+; .* larger --timeout than 20 s"
    with pytest.raises(SimulationError, match=r"distributed run failed: .*" + advice):
        run(
            base(
                tiny,
                tmp_path / "f",
                backend="distributed",
                world_size=2,
                timeout=20,
                **extra,
            )
        )
    assert time.perf_counter() - start < 60
    assert not [r for r in caplog.records if "Terminating process" in r.getMessage()]
    monkeypatch.delenv(FAULT_ENV)
    resumed = run(base(tiny, tmp_path / "f", backend="distributed", world_size=2, resume=True, **extra))
    run(base(tiny, tmp_path / "c", **extra))
    assert resumed["steps"] == 50
    a, b = np.load(tmp_path / "f" / "params.npz"), np.load(tmp_path / "c" / "params.npz")
    assert max(float(np.abs(a[k] - b[k]).max()) for k in a.files) < 1e-5


def test_a_resumed_random_compressor_run_continues_every_process_stream(tiny, tmp_path, monkeypatch) -> None:
    """rand_k draws from one stream per process: a resumed run restores each process's own stream (not
    the first process's on all), so it equals the unbroken distributed run."""
    extra = {"algorithm": "cdfl", "compressor": "rand_k", "compressor_param": 5, "gamma": 0.5}
    monkeypatch.setenv(FAULT_ENV, "exit:25")
    with pytest.raises(SimulationError, match="distributed run failed"):
        run(base(tiny, tmp_path / "f", backend="distributed", world_size=2, timeout=20, **extra))
    monkeypatch.delenv(FAULT_ENV)
    run(base(tiny, tmp_path / "f", backend="distributed", world_size=2, resume=True, **extra))
    run(base(tiny, tmp_path / "c", backend="distributed", world_size=2, **extra))
    a, b = np.load(tmp_path / "f" / "params.npz"), np.load(tmp_path / "c" / "params.npz")
    assert max(float(np.abs(a[k] - b[k]).max()) for k in a.files) < 1e-6
    # the streams are per process: resuming them with another number of processes is refused
    with pytest.raises(InputError, match=r"2 processes.*world.size 2"):
        run(base(tiny, tmp_path / "f", resume=True, steps=60, **extra))


def test_a_hanging_process_makes_the_others_fail_after_the_timeout(tiny, tmp_path, monkeypatch) -> None:
    start = time.perf_counter()
    monkeypatch.setenv(FAULT_ENV, "hang:25")
    with pytest.raises(SimulationError, match=r"distributed run failed"):
        run(base(tiny, tmp_path / "h", backend="distributed", world_size=2, timeout=5))
    assert time.perf_counter() - start < 45  # timeout 5 s; the hung process would sleep 50 s


def test_uneven_blocks(tiny, tmp_path) -> None:
    """5 nodes on 2 processes (blocks of 3 and 2) give the single-process result too."""
    run(base(tiny, tmp_path / "one", nodes=5, steps=20))
    run(base(tiny, tmp_path / "two", nodes=5, steps=20, backend="distributed", world_size=2))
    a, b = np.load(tmp_path / "one" / "params.npz"), np.load(tmp_path / "two" / "params.npz")
    assert max(float(np.abs(a[k] - b[k]).max()) for k in a.files) < 1e-5


def test_world_size_is_validated(tiny, tmp_path) -> None:
    with pytest.raises(
        InputError, match=r"world_size = 7 is out of range \(expected 1 <= world_size <= nodes = 6: each"
    ):
        run(base(tiny, tmp_path, backend="distributed", world_size=7))


@pytest.mark.parametrize(
    ("topology", "n", "cuts"), [("ring", 12, (5, 9)), ("torus", 16, (3, 11)), ("star", 9, (1,))]
)
def test_halo_mixing_reads_a_csr_matrix_as_the_dense_one(
    topology: str, n: int, cuts: tuple[int, ...]
) -> None:
    """HaloMixing from CSR C (large topologies keep that form) finds the same halo as from the dense C, and
    its rows of C @ Y are the dense product's."""
    import scipy.sparse as sp
    import torch

    from bounds import make_graph, mixing_matrix
    from sim.distributed import HaloMixing

    dense = mixing_matrix(make_graph(topology, n), "metropolis", sparse=False)
    blocks = np.split(np.arange(n), cuts)
    Y = torch.randn(n, 7)
    for rank, own in enumerate(blocks):
        a, b = HaloMixing(dense, blocks, rank), HaloMixing(sp.csr_matrix(dense), blocks, rank)
        assert a.give.keys() == b.give.keys() and a.need.keys() == b.need.keys() and len(a.halo) > 0
        assert all(
            np.array_equal(a.give[q], b.give[q]) and np.array_equal(a.need[q], b.need[q]) for q in a.give
        )
        assert np.array_equal(a.halo, b.halo)
        expected = (torch.as_tensor(dense, dtype=torch.float32) @ Y)[own]
        for op in (a, b):
            torch.testing.assert_close(op.mix(Y[own], Y[op.halo]), expected, rtol=1e-5, atol=1e-6)


def test_a_1200_node_run_keeps_c_sparse_and_two_processes_match_one(tmp_path) -> None:
    """Above 1,000 nodes the run's C stays CSR (no N x N array); one process and two agree."""
    import scipy.sparse as sp

    from sim.setup import prepare

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 2600)
    x = rng.normal(size=(3, 8))[y] * 2 + rng.normal(size=(2600, 8))
    data = tmp_path / "data.npz"
    np.savez(data, x_train=x[:2400], y_train=y[:2400], x_test=x[2400:], y_test=y[2400:])
    kw = {"nodes": 1200, "steps": 6, "log_every": 3, "checkpoint_every": 100, "batch_size": 2, "tau1": 1}
    config = base(data, tmp_path / "one", **kw)
    assert sp.issparse(prepare(config).C)
    run(config)
    run(base(data, tmp_path / "two", backend="distributed", world_size=2, **kw))
    a, b = np.load(tmp_path / "one" / "params.npz"), np.load(tmp_path / "two" / "params.npz")
    assert max(float(np.abs(a[k] - b[k]).max()) for k in a.files) < 1e-5


@pytest.mark.parametrize("how", ["sigterm-to-the-launcher", "ctrl-c-to-the-group"])
def test_a_stopped_distributed_run_stops_every_process_after_one_step_checkpointed(tiny, tmp_path, how):
    """`timeout` signals only the launcher, which forwards the request; a terminal's Ctrl-C reaches every
    process (none may stop before the others). Every rank agrees on the step in the collective it takes
    each step, the checkpoint of that step is written, the CLI says so (and exits 130 after a SIGTERM, ends by
    SIGINT after a Ctrl-C, as the shell expects), and --resume ends where
    the unbroken run ends (before, the processes died at once and the last every-N checkpoint was all that
    was kept)."""
    import os
    import signal
    import subprocess
    import sys

    steps = 2000
    flags = ["--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6", "--steps", str(steps),
             "--log-every", "10", "--eval-samples", "60", "--batch-size", "8", "--partition", "iid",
             "--eta", "0.1", "--tau1", "2", "--tau2", "3", "--save-params",
             "--checkpoint-every", "100000"]  # fmt: skip
    folder = tmp_path / "f"
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    child = subprocess.Popen(
        [sys.executable, "-m", "sim", "run", *flags, "--backend", "distributed", "--world-size", "2",
         "--out", str(folder)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )  # fmt: skip
    metrics, deadline = folder / "metrics.csv", time.time() + 120
    while time.time() < deadline and (not metrics.is_file() or len(metrics.read_text().splitlines()) < 4):
        time.sleep(0.05)
    if how == "sigterm-to-the-launcher":
        child.send_signal(signal.SIGTERM)
    else:
        os.killpg(child.pid, signal.SIGINT)  # its own session: the launcher and its workers
    _, err = child.communicate(timeout=120)  # a Ctrl-C'd command ends by SIGINT (bounds.cli_tools.entry)
    assert child.returncode == (130 if how == "sigterm-to-the-launcher" else -signal.SIGINT), err[-2000:]

    t = int(torch.load(folder / "checkpoint.pt", weights_only=False)["t"])
    assert 20 <= t < steps and f"interrupted at step {t} of {steps}" in err  # rows at 0, 10, 20 were written
    assert not (folder / "summary.json").exists()
    long = {"steps": steps, "log_every": 10, "checkpoint_every": 100000}
    resumed = run(base(tiny, folder, **long, backend="distributed", world_size=2, resume=True))
    unbroken = run(base(tiny, tmp_path / "c", **long, backend="distributed", world_size=2))  # the sums' order
    assert resumed["steps"] == steps
    # the bytes of the whole run (a resumed run reported only its own part, a probe's finding), and a resume
    # of the finished run, which writes its summary again, keeps them (it wrote 0)
    assert resumed["bytes_on_wire"] == unbroken["bytes_on_wire"] > 0
    assert resumed["bytes_on_wire_per_gossip_step"] == unbroken["bytes_on_wire_per_gossip_step"]
    again = run(base(tiny, folder, **long, backend="distributed", world_size=2, resume=True))
    assert again["bytes_on_wire"] == unbroken["bytes_on_wire"]
    a, b = np.load(folder / "params.npz"), np.load(tmp_path / "c" / "params.npz")
    assert max(float(np.abs(a[k] - b[k]).max()) for k in a.files) < 1e-6


def test_a_sigterm_to_every_process_exits_130_naming_the_checkpoint_it_kept(tiny, tmp_path) -> None:
    """Slurm and systemd signal every process: the workers end at once (SIGTERM still kills them, as the
    launcher stops the others of a failed run), and the launcher says which periodic checkpoint is left,
    exit 130, not 'distributed run failed'."""
    import os
    import signal
    import subprocess
    import sys

    flags = ["--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6", "--steps", "2000",
             "--log-every", "10", "--eval-samples", "60", "--batch-size", "8", "--checkpoint-every", "10",
             "--backend", "distributed", "--world-size", "2", "--out", str(tmp_path / "f")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    child = subprocess.Popen([sys.executable, "-m", "sim", "run", *flags], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)  # fmt: skip
    metrics, deadline = tmp_path / "f" / "metrics.csv", time.time() + 120
    while time.time() < deadline and (not metrics.is_file() or len(metrics.read_text().splitlines()) < 4):
        time.sleep(0.05)
    os.killpg(child.pid, signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 130, err[-2000:]
    t = int(torch.load(tmp_path / "f" / "checkpoint.pt", weights_only=False)["t"])
    assert t % 10 == 0 and f"interrupted at step {t} of 2000" in err and "failed" not in err


def test_a_stop_asked_before_the_workers_start_starts_none(tiny, tmp_path, monkeypatch) -> None:
    import sim.distributed

    monkeypatch.setattr(sim.distributed, "interrupt_requested", lambda: True)
    started = lambda *a, **k: pytest.fail("a process started")  # noqa: E731
    monkeypatch.setattr(sim.distributed.mp, "start_processes", started)
    with pytest.raises(RunInterrupted, match="interrupted before the processes started"):
        sim.distributed._launch(base(tiny, tmp_path / "f", backend="distributed", world_size=2))


def test_a_failed_run_without_a_checkpoint_is_not_told_to_resume(tmp_path) -> None:
    """The advice was always --resume, which then failed for want of a checkpoint (a --timeout of 0.001 s,
    now refused, failed before the first one)."""
    from sim.config import RunConfig
    from sim.distributed import _next_step

    config = RunConfig(out=str(tmp_path), backend="distributed", world_size=2, timeout=3)
    assert _next_step(config).startswith("no checkpoint was written: rerun without --resume")
    with pytest.raises(InputError, match=r"timeout = 0.001 is out of range \(expected seconds >= 1"):
        RunConfig(out=str(tmp_path), backend="distributed", world_size=2, timeout=0.001).validate()


def test_a_torchrun_rank_alone_or_a_dead_peer_is_one_line_not_a_cpp_trace(
    tiny, tmp_path, monkeypatch
) -> None:
    """Under torchrun, a rank whose peers never came raised torch's DistStoreError, and a collective that
    timed out gloo's RuntimeError, each a Python traceback ending in a C++ source path; both are now a
    SimulationError naming the rank, the address or the checkpoint, and a larger --timeout. Any other
    RuntimeError is a defect and keeps its traceback."""
    import sim.distributed as distributed
    from sim.distributed import _free_port

    port = _free_port()
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    config = base(tiny, tmp_path / "alone", backend="distributed", world_size=2, timeout=2)
    with pytest.raises(SimulationError) as alone:
        run(config)
    assert f"rank 0 could not form the process group of 2 at 127.0.0.1:{port} within --timeout 2 s" in str(
        alone.value
    )
    assert "\n" not in str(alone.value)

    def timed_out(*args) -> None:
        raise RuntimeError("[/x/third_party/gloo/gloo/transport/tcp/pair.cc:534] Timed out\nframe #0: c10::")

    closed = RuntimeError(  # gloo's closed connection, with its sign-off (left out of the line)
        "Read error [127.0.0.1]:40833: Connection reset by peer. Check the logs of the remote worker before "
        "reporting an error. GLHF! \U0001f3d6\ufe0f"
    )
    assert distributed._first_line(closed).endswith("the remote worker before reporting an error.")
    monkeypatch.setattr(distributed, "_worker", timed_out)
    with pytest.raises(
        SimulationError, match=r"failed on rank 0 of 2: Timed out \(no checkpoint was"
    ) as hung:
        run(base(tiny, tmp_path / "hung", backend="distributed", world_size=2, timeout=2))
    assert "frame #0" not in str(hung.value)

    def defect(*args) -> None:
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr(distributed, "_worker", defect)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        run(base(tiny, tmp_path / "bug", backend="distributed", world_size=2, timeout=2))


def _torchrun_rank(rank: int, port: int, flags: list[str]):
    """One rank of a 2-process run as torchrun starts it (RANK, WORLD_SIZE, MASTER_ADDR/PORT), by hand."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root, "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1"}  # fmt: skip
    return subprocess.Popen([sys.executable, "-m", "sim", "run", *flags], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


def _two_ranks(tiny, flags0: list[str], flags1: list[str]) -> list[tuple[int, str]]:
    """Start ranks 0 and 1 with their own flags (after the common ones); each one's exit code and stderr."""
    from sim.distributed import _free_port

    common = ["--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6", "--steps", "20",
              "--log-every", "10", "--eval-samples", "60", "--batch-size", "8", "--partition", "iid",
              "--eta", "0.1", "--tau1", "2", "--tau2", "3",  # base()'s
              "--backend", "distributed", "--world-size", "2", "--timeout", "30"]  # fmt: skip
    port = _free_port()
    ranks = [_torchrun_rank(r, port, common + f) for r, f in enumerate((flags0, flags1))]
    errors = [p.communicate(timeout=120)[1] for p in ranks]
    return [(p.returncode, err) for p, err in zip(ranks, errors, strict=True)]


def test_the_mismatch_message_names_every_flag_a_rank_may_set_for_its_host():
    """It said 'only the paths and threads and timeout may differ' while --allow-change may differ too."""
    from sim.config import RunConfig
    from sim.distributed import HOST_FIELDS, HOST_FLAGS

    assert set(HOST_FIELDS) <= set(RunConfig.__dataclass_fields__)
    for field in HOST_FIELDS:
        named = {"dataset": "a data set's", "topology": "topology's"}.get(
            field, "--" + field.replace("_", "-")
        )
        assert named in HOST_FLAGS, field


def test_ranks_started_with_other_flags_or_another_checkpoint_are_refused_on_every_rank(tiny, tmp_path):
    """Under torchrun each host types its own command: rank 1 with --seed 2 trained its nodes from another
    x_0 and batches while config.json said seed 1, and a --resume on a host without the run folder's
    checkpoint failed there only (rank 0 got gloo's 'Connection reset by peer'). Every rank now compares its
    settings and inputs with rank 0's first and all stop with the same line; another --out holding the same
    checkpoint (a folder shared under two names) resumes."""
    out = str(tmp_path / "run")
    results = _two_ranks(tiny, ["--seed", "1", "--out", out], ["--seed", "2", "--out", out])
    for code, err in results:
        assert code == 1, err[-2000:]
        assert err.strip().splitlines()[-1] == (
            "dfl-sim: error: rank 1 of 2 runs another experiment than rank 0: seed = 2 there, 1 on rank 0 "
            "(expected every rank started with the same flags, data and, on --resume, checkpoint, in a "
            "folder the hosts share; only the paths (--out, --data-dir, --init-params, a data set's or "
            "topology's file), --threads, --timeout and --allow-change may differ)"
        )
    assert not (tmp_path / "run" / "metrics.csv").exists()
    missing = tmp_path / "elsewhere.npz"  # a data set one host lacks: rank 0 waited, then 'Connection reset'
    results = _two_ranks(tiny, ["--out", out], ["--out", out, "--dataset", f"npz:{missing}"])
    for code, err in results:
        assert code == 2, err[-2000:]
        assert err.strip().splitlines()[-1].startswith(f"dfl-sim: error: rank 1 of 2: data file '{missing}'")

    run(base(tiny, tmp_path / "first", steps=10, log_every=10, eval_samples=60, checkpoint_every=10))
    longer = ["--steps", "20", "--checkpoint-every", "10", "--resume"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = [*longer, "--out", str(tmp_path / "first")]
    results = _two_ranks(tiny, first, [*longer, "--out", str(elsewhere)])
    for code, err in results:
        assert code == 1, err[-2000:]
        assert f"checkpoint digest = 'none: no file {elsewhere}/checkpoint.pt' there" in err
    fresh = ["--steps", "20", "--checkpoint-every", "10", "--out", str(tmp_path / "first")]
    results = _two_ranks(tiny, fresh, first)  # rank 0 without --resume cleared the checkpoint (a review)
    for code, err in results:
        assert code == 1 and "resume = True there, False on rank 0" in err, err[-2000:]
    assert (tmp_path / "first" / "checkpoint.pt").is_file()
    import shutil

    shutil.copytree(tmp_path / "first", tmp_path / "copy")
    results = _two_ranks(tiny, first, [*longer, "--out", str(tmp_path / "copy")])
    assert [code for code, _ in results] == [0, 0], results[0][1][-2000:] + results[1][1][-2000:]
    assert json.loads((tmp_path / "first" / "summary.json").read_text())["steps"] == 20


def test_torchrun_variables_are_checked_before_any_process_group(tiny, tmp_path, monkeypatch) -> None:
    """RANK = 'x' was a ValueError traceback, RANK set without MASTER_ADDR a traceback from torch's
    rendezvous, and --world-size 4 under torchrun's 2 processes ran on 2 while config.json said 4."""
    from sim.host import torchrun_rank_and_world

    config = base(tiny, tmp_path / "r", backend="distributed", world_size=2, timeout=2)
    for rank, world, expected in [
        ("x", "2", "environment variable RANK = 'x' is not an integer"),
        ("0", "two", "environment variable WORLD_SIZE = 'two' is not an integer"),
        ("2", "2", r"RANK = 2, WORLD_SIZE = 2 \(expected 0 <= RANK < WORLD_SIZE"),
        ("-1", "2", r"RANK = -1, WORLD_SIZE = 2 \(expected 0 <= RANK < WORLD_SIZE"),
    ]:
        monkeypatch.setenv("RANK", rank)
        monkeypatch.setenv("WORLD_SIZE", world)
        with pytest.raises(InputError, match=expected):
            torchrun_rank_and_world()
        with pytest.raises(InputError, match=expected):
            run(config)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.setenv("MASTER_PORT", "29500")
    with pytest.raises(InputError, match=r"RANK and WORLD_SIZE are set but MASTER_ADDR is not \(expected"):
        run(config)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    with pytest.raises(InputError, match=r"world_size = 3 but torchrun started WORLD_SIZE = 2 processes"):
        run(base(tiny, tmp_path / "r", backend="distributed", world_size=3, timeout=2))
    with pytest.raises(InputError, match=r"world_size = 1 but torchrun started WORLD_SIZE = 2 processes"):
        run(base(tiny, tmp_path / "r", backend="distributed", world_size=1, timeout=2))
    assert not (tmp_path / "r").exists()
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    assert torchrun_rank_and_world() is None


def test_a_local_run_sweep_or_plan_under_torchrun_is_refused(tiny, tmp_path, monkeypatch, capsys) -> None:
    """Every rank ran the whole local experiment into the same --out (one after another, or refused by the
    folder's lock); the command now names the flags it needs. The library's run() is left alone: a program
    of its own may give each rank its own local run."""
    from sim.cli import main

    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    flags = ["run", "--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6", "--steps", "10",
             "--out", str(tmp_path / "loc")]  # fmt: skip
    assert main(flags) == 2
    assert capsys.readouterr().err == (
        "dfl-sim: error: a run with backend = 'local' in a process torchrun started (RANK = 1, WORLD_SIZE = "
        "2): each of the 2 processes would run the whole of it into the same --out (expected one process; "
        "only dfl-sim run --backend distributed --world-size 2 shares its work among them)\n"
    )
    assert not (tmp_path / "loc").exists()
    grid = tmp_path / "grid.toml"  # a sweep and a plan alike
    grid.write_text(f'[base]\ndataset = "npz:{tiny}"\nmodel = "logreg"\nsteps = 2\n[grid]\nseed = [0, 1]\n')
    for argv, what in ((["sweep", str(grid), "--out", str(tmp_path / "s")], "a sweep"),
                       (["plan", "--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6",
                         "--budget-seconds", "20", "--out", str(tmp_path / "p")], "a plan")):  # fmt: skip
        assert main(argv) == 2
        assert capsys.readouterr().err.startswith(f"dfl-sim: error: {what} in a process torchrun started")
    assert not (tmp_path / "s").exists() and not (tmp_path / "p").exists()
    summary = run(base(tiny, tmp_path / "lib", steps=10))
    assert summary["steps"] == 10
    monkeypatch.setenv("RANK", "x")  # not torchrun's; a local run reads neither (it was refused, a review)
    assert main([*flags[:-1], str(tmp_path / "malformed")]) == 0


def test_threads_are_each_processes_and_given_ones_are_taken(tiny, tmp_path, monkeypatch) -> None:
    """--threads 1 with --backend distributed was ignored in silence (each process took the cores / P)."""
    import os

    from sim.distributed import process_threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    config = base(tiny, tmp_path, backend="distributed", world_size=2)
    assert process_threads(config, 2) == max(1, (os.cpu_count() or 1) // 2)
    config.threads = 1
    assert process_threads(config, 2) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # torchrun's: torch's choice, unless --threads says
    assert process_threads(config, 2) == 1
    config.threads = 0
    assert process_threads(config, 2) is None


def test_the_ranks_compare_every_input_value_not_a_sample() -> None:
    """Dataset.digest hashes an evenly spaced sample of about 2^20 inputs (a resume's check); two hosts'
    copies that differ off it trained in silence (a review: half the columns zeroed on one host)."""
    from sim.data import Dataset

    x = torch.rand(3000, 1000)
    y = torch.zeros(3000, dtype=torch.int64)
    edited = x.clone()
    edited[:, 1::2] = 0.0  # the values at odd positions: off the sample, every 2nd of the 3,000,000
    a = Dataset("a", x, y, x[:10], y[:10], 2)
    b = Dataset("a", edited, y, x[:10], y[:10], 2)
    assert a.digest == b.digest  # the sample misses it (why the ranks do not compare this one)
    assert a.full_digest != b.full_digest
    assert a.full_digest == Dataset("a", x.clone(), y, x[:10].clone(), y[:10], 2).full_digest


def test_a_distributed_run_on_a_gpu_is_refused(tiny, tmp_path) -> None:
    """Its mixing block and its messages are CPU tensors (gloo): with --device cuda the first gossip step
    multiplied a CPU matrix by CUDA rows, a traceback from inside torch (read from the code; no GPU here)."""
    for device in ("cuda", "cuda:1"):
        refused = rf"device = '{device}' with backend 'distributed' \(expected cpu"
        with pytest.raises(InputError, match=refused):
            base(tiny, tmp_path, backend="distributed", world_size=2, device=device).validate()
