"""A run folder's guarantees (sim.run_folder and the resume checks): one writer at a time, no files lost to
a fresh run or a resume, no resume onto other data or another measurement, results written as each run
ends, a full disk or a SIGTERM answered in one line with the checkpoint kept."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from bounds import InputError
from sim.cli import main as sim_main
from sim.run_folder import LOCK_NAME, lock_folders, release_folders
from sim.runner import RunConfig, run
from sim.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]


def _config(tiny: Path, out: Path, **over: object) -> RunConfig:
    fields = dict(dataset=f"npz:{tiny}", model="logreg", nodes=6, steps=8, log_every=4, eval_samples=30,
                  batch_size=8, partition="iid", out=str(out), checkpoint_every=4, eta=0.1)  # fmt: skip
    return RunConfig(**{**fields, **over})


def _argv(tiny: Path, out: Path, *more: str) -> list[str]:
    return ["run", "--dataset", f"npz:{tiny}", "--model", "logreg", "--nodes", "6", "--steps", "8",
            "--log-every", "4", "--eval-samples", "30", "--batch-size", "8", "--partition", "iid",
            "--out", str(out), "--checkpoint-every", "4", *more]  # fmt: skip


def test_a_folder_another_process_writes_is_refused_and_freed_when_it_dies(tiny, tmp_path) -> None:
    """Two runs into one folder used to mix their files (config of one, summary of the other, exit 0)."""
    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from sim.run_folder import "
         "lock_folders; lock_folders([Path(sys.argv[1])]); print('locked', flush=True); time.sleep(60)",
         str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(InputError, match=rf"is in use by another run \(process {holder.pid};"):
            run(_config(tiny, out))
        assert not (out / "config.json").exists()  # refused before anything was written
    finally:
        holder.kill()
        holder.wait()
    assert run(_config(tiny, out))["steps"] == 8  # the kernel dropped the dead holder's lock
    lock_folders([out])  # and this process gave its own back when the run ended
    release_folders([out])
    assert (out / LOCK_NAME).read_text().strip() == str(os.getpid())


def test_a_fresh_run_clears_only_a_folder_a_run_wrote_and_out_must_be_named(tiny, tmp_path, capsys) -> None:
    """--out "" (an unset $OUT) ran in the current folder and deleted its params.npz and summary.json."""
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("params.npz", "summary.json"):
        (mine / name).write_text("the user's own")
    run(_config(tiny, mine))
    assert (mine / "params.npz").read_text() == "the user's own"  # no config.json: not a run's files
    code = sim_main([*_argv(tiny, tmp_path / "x")[:-4], "--checkpoint-every", "4", "--out", ""])
    assert code == 2 and "out = '' is empty" in capsys.readouterr().err


def test_resume_refuses_other_columns_other_data_and_another_eval_sample(tiny, tmp_path, capsys) -> None:
    """A metrics.csv of other columns lost every row on resume; a data file changed under its name and a new
    --eval-samples were resumed silently (other labels, other measured losses)."""
    out = tmp_path / "run"
    assert sim_main(_argv(tiny, out, "--steps", "8")) == 0
    capsys.readouterr()
    metrics = (out / "metrics.csv").read_text()
    (out / "metrics.csv").write_text(metrics.replace(",grad_norm2", "", 1))
    assert sim_main(_argv(tiny, out, "--steps", "12", "--resume")) == 2
    assert "lacks grad_norm2" in capsys.readouterr().err
    (out / "metrics.csv").write_bytes(b"\xff\xfe step")
    assert sim_main(_argv(tiny, out, "--steps", "12", "--resume")) == 2
    assert "cannot be read (UnicodeDecodeError" in capsys.readouterr().err
    (out / "metrics.csv").write_text(metrics)
    assert sim_main(_argv(tiny, out, "--steps", "12", "--resume", "--eval-samples", "20")) == 2
    assert "eval_samples = 30 -> 20" in capsys.readouterr().err
    data = dict(np.load(tiny))
    np.savez(tiny, **{**data, "y_train": (data["y_train"] + 1) % 3})
    assert sim_main(_argv(tiny, out, "--steps", "12", "--resume")) == 2
    assert "read other data than the checkpoint's" in capsys.readouterr().err
    np.savez(tiny, **data)
    assert sim_main(_argv(tiny, out, "--steps", "12", "--resume")) == 0


@pytest.mark.parametrize(
    ("saved", "missing"),
    [(torch.zeros(3), "X, counters, gen, gossip, sampler, t"), ({"foo": 1}, "X, counters"), ([1, 2], "X")],
)
def test_resume_refuses_a_file_that_is_not_a_checkpoint(tiny, tmp_path, capsys, saved, missing) -> None:
    out = tmp_path / "run"
    assert sim_main(_argv(tiny, out)) == 0
    torch.save(saved, out / "checkpoint.pt")
    assert sim_main(_argv(tiny, out, "--steps", "12", "--resume")) == 2
    err = capsys.readouterr().err
    assert "is not a dflkit checkpoint (it lacks " + missing in err and err.count("\n") == 1


def test_resume_refuses_a_damaged_checkpoint_in_one_line(tiny, tmp_path, capsys) -> None:
    """One flipped byte inside the saved X resumed a wrong model in silence (torch.load does not check the
    zip's CRC-32s; a probe: training loss 36 for 0.52); a cut file's message held torch's four sentences,
    a folder named checkpoint.pt 'did not exist'."""
    out = tmp_path / "run"
    assert sim_main(_argv(tiny, out)) == 0
    whole = (out / "checkpoint.pt").read_bytes()
    flipped = bytearray(whole)
    at = whole.index(b"data/0") + 200  # (the X tensor's bytes follow its entry's local header)
    flipped[at] ^= 0xFF
    import struct

    index = whole.index(b"PK\x01\x02")  # the central directory's first entry: zipfile raised
    method, encrypted = bytearray(whole), bytearray(whole)  # NotImplementedError / RuntimeError (a review)
    struct.pack_into("<H", method, index + 10, 99)  # an unknown compression method
    encrypted[index + 8] |= 0x01  # the 'encrypted' flag
    for damaged, fragment in ((bytes(flipped), "is damaged (the bytes of its entry '"),
                              (whole[: len(whole) // 2], "is not a readable checkpoint ("),
                              (bytes(method), "is not a readable checkpoint ("),
                              (bytes(encrypted), "is not a readable checkpoint (")):  # fmt: skip
        (out / "checkpoint.pt").write_bytes(damaged)
        assert sim_main(_argv(tiny, out, "--steps", "12", "--resume")) == 2
        err = capsys.readouterr().err
        assert fragment in err and err.count("\n") == 1 and "miniz" not in err, err
    (out / "checkpoint.pt").unlink()
    (out / "checkpoint.pt").mkdir()
    assert sim_main(_argv(tiny, out, "--steps", "12", "--resume")) == 2
    assert "checkpoint.pt' is not a file (a folder) (expected the folder" in capsys.readouterr().err


def test_a_full_disk_at_a_checkpoint_is_one_line_and_keeps_the_previous_one(
    tiny, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "run"
    real = torch.save
    calls = []

    def full(obj: object, path: object) -> None:
        calls.append(path)
        if len(calls) >= 2:  # the first checkpoint fits; the second finds the disk full
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 1600 vs 1494")
        real(obj, path)

    monkeypatch.setattr(torch, "save", full)
    assert sim_main(_argv(tiny, out, "--steps", "12")) == 1
    err = capsys.readouterr().err
    assert "cannot write the checkpoint" in err and "at step 8" in err and err.count("\n") == 1
    assert "no space left on the device?" in err
    assert torch.load(out / "checkpoint.pt", weights_only=False)["t"] == 4
    assert not list(out.glob("*.tmp"))
    monkeypatch.setattr(torch, "save", real)
    assert sim_main(_argv(tiny, out, "--steps", "12", "--resume")) == 0


def test_a_checkpoint_denied_is_not_blamed_on_a_full_disk(tiny, tmp_path, capsys, monkeypatch) -> None:
    """torch.save's 'open file failed with strerror: Permission denied' (a folder made read-only during a run)
    was reported with 'no space left on the device?' (a probe)."""

    def denied(obj: object, path: object) -> None:
        raise RuntimeError("[enforce fail at inline_container.cc:747] . open file failed with strerror: "
                           "Permission denied")  # fmt: skip

    monkeypatch.setattr(torch, "save", denied)
    assert sim_main(_argv(tiny, tmp_path / "run")) == 1
    err = capsys.readouterr().err
    assert "at step 4 (Permission denied); no earlier checkpoint" in err and "space" not in err, err


def test_a_sweep_run_that_ends_early_writes_its_summary_then(tiny, tmp_path, monkeypatch) -> None:
    """A sweep's short run wrote summary.json only when the whole sweep ended: a kill lost it."""
    import sim.sweep as sweep

    configs = [_config(tiny, tmp_path / "short", steps=4), _config(tiny, tmp_path / "long", steps=40)]
    seen: dict[int, bool] = {}
    real = sweep.SweepEngine.step

    def step(self: object, lanes: list) -> object:
        seen.setdefault(lanes[0].t, (tmp_path / "short" / "summary.json").is_file())
        return real(self, lanes)

    monkeypatch.setattr(sweep.SweepEngine, "step", step)
    short, long = run_sweep(configs)
    assert short["steps"] == 4 and long["steps"] == 40
    assert not seen[0] and seen[10]  # written right after its step 4, long before the sweep ended


def test_allow_change_is_recorded_and_such_a_config_json_is_not_repeated(tiny, tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert sim_main(_argv(tiny, out, "--eta", "0.1")) == 0
    assert (
        sim_main(_argv(tiny, out, "--eta", "0.2", "--steps", "12", "--resume", "--allow-change", "eta")) == 0
    )
    capsys.readouterr()
    record = json.loads((out / "config.json").read_text())
    assert record["eta"] == 0.2 and record["changes"] == [{"field": "eta", "from": 0.1, "to": 0.2, "step": 8}]
    assert sim_main(["run", "--config", str(out / "config.json"), "--out", str(tmp_path / "again")]) == 2
    assert "records a run whose eta changed at step 8" in capsys.readouterr().err


def test_log_every_changes_on_resume_only_when_allowed_and_recorded(tiny, tmp_path, capsys) -> None:
    """Found by a robustness probe: --log-every changed on a resume in silence; config.json then gave the
    new interval for rows logged at the old one, and the lost-rows warning blamed rows 'removed or cut'."""
    out = tmp_path / "run"
    assert sim_main(_argv(tiny, out)) == 0
    assert sim_main(_argv(tiny, out, "--steps", "12", "--resume", "--log-every", "2")) == 2
    assert "log_every = 4 -> 2 (expected the same settings (or --allow-change log_every; in a sweep" in (
        capsys.readouterr().err
    )
    argv = _argv(tiny, out, "--steps", "12", "--resume", "--log-every", "2", "--allow-change", "log_every")
    assert sim_main(argv) == 0
    err = capsys.readouterr().err
    assert "warning" not in err, err
    record = json.loads((out / "config.json").read_text())
    assert record["changes"] == [{"field": "log_every", "from": 4, "to": 2, "step": 8}]
    steps = [int(line.split(",")[0]) for line in (out / "metrics.csv").read_text().splitlines()[1:]]
    assert steps == [0, 4, 8, 10, 12]
    # a later resume checks the rows for gaps at the interval each was logged at (not 2, 6 "missing")
    assert sim_main([*argv[: argv.index("12")], "16", *argv[argv.index("12") + 1 :]]) == 0
    assert "warning" not in capsys.readouterr().err


def test_sigterm_stops_after_the_step_with_a_checkpoint(tiny, tmp_path) -> None:
    """SIGTERM (timeout, kill, batch schedulers) ended the run silently, losing up to a minute of steps."""
    out = tmp_path / "run"
    argv = _argv(tiny, out, "--steps", "200000", "--checkpoint-every", "100000", "--threads", "1")
    proc = subprocess.Popen([sys.executable, "-m", "sim", *argv], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out / "metrics.csv").is_file() or len((out / "metrics.csv").read_text().splitlines()) < 5:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "SIGTERM: stopping after this step" in err
    t = torch.load(out / "checkpoint.pt", weights_only=False)["t"]
    assert f"interrupted at step {t} of 200000" in err and 0 < t < 100000


def test_a_worker_dies_with_the_process_that_started_it(tmp_path) -> None:
    """A SIGKILLed dfl-sim left its gloo workers writing its folder; now the kernel kills them with it."""
    script = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import os, sys, time; "
        "from sim.distributed import _die_with_parent; _die_with_parent(int(sys.argv[1])); "
        "print(os.getpid(), flush=True); time.sleep(60)', str(os.getpid())], stdout=subprocess.PIPE, "
        "text=True)\n"
        "print(child.stdout.readline().strip(), flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    pytest.fail("the child outlived its parent")


def _held() -> dict:
    import sim.run_folder

    return dict(sim.run_folder._held)


def test_no_lock_outlives_its_run_sweep_or_plan_even_when_they_fail(tiny, tmp_path, monkeypatch) -> None:
    """Only run, run_sweep, run_distributed and plan lock, and each gives its locks back, also on failure;
    the library's prepare and the estimates' probes lock nothing (they left folders locked until exit)."""
    from sim.estimates import probe_drift
    from sim.plan import PlanSettings, plan
    from sim.setup import prepare

    before = _held()  # (what other tests' leftovers hold is not this test's business)
    prepare(_config(tiny, tmp_path / "p"))
    data = np.load(tiny)
    x, y = torch.tensor(data["x_train"][:20], dtype=torch.float32), torch.tensor(data["y_train"][:20])
    probe_drift(_config(tiny, tmp_path / "probe", steps=4), x, y)
    assert _held() == before
    run(_config(tiny, tmp_path / "r"))
    run_sweep([_config(tiny, tmp_path / "s1"), _config(tiny, tmp_path / "s2", seed=1)])
    assert _held() == before
    import sim.loop

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a failure in the middle of the run")

    monkeypatch.setattr(sim.loop.RunRecorder, "record", broken)
    for call in (
        lambda: run(_config(tiny, tmp_path / "r")),
        lambda: run_sweep([_config(tiny, tmp_path / "s1")]),
    ):
        with pytest.raises(RuntimeError, match="a failure in the middle"):
            call()
        assert _held() == before
    settings = PlanSettings(budget_seconds=40, top=1, others=1, seeds=1, max_tau1=2, max_tau2=2,
                            estimate_samples=16, hessian_iters=3)  # fmt: skip
    with pytest.raises(RuntimeError, match="a failure in the middle"):
        plan(_config(tiny, tmp_path / "plan", partition="shards"), settings)
    assert _held() == before


def test_lock_is_counted_per_take(tmp_path) -> None:
    lock_folders([tmp_path])
    lock_folders([tmp_path])
    release_folders([tmp_path])
    assert tmp_path.resolve() in _held()  # an inner release leaves the outer take's lock
    release_folders([tmp_path])
    assert tmp_path.resolve() not in _held()


def test_a_resume_that_never_reached_a_checkpoint_leaves_no_change_behind(tiny, tmp_path, capsys) -> None:
    """A resume with --allow-change that diverged (no checkpoint) recorded its change for good: the next
    resume, with the old value, left config.json saying the run had changed eta."""
    out = tmp_path / "run"
    assert sim_main(_argv(tiny, out, "--eta", "0.1")) == 0
    assert (
        sim_main(_argv(tiny, out, "--eta", "1e30", "--steps", "12", "--resume", "--allow-change", "eta")) == 3
    )
    assert sim_main(_argv(tiny, out, "--eta", "0.1", "--steps", "12", "--resume")) == 0
    assert "changes" not in json.loads((out / "config.json").read_text())
    assert sim_main(["run", "--config", str(out / "config.json"), "--out", str(tmp_path / "again")]) == 0
    capsys.readouterr()


def test_damaged_plan_and_grid_files_are_one_line_errors(tiny, tmp_path, capsys) -> None:
    from sim.plan import PlanSettings, plan

    folder = tmp_path / "plan"
    folder.mkdir()
    settings = PlanSettings(budget_seconds=40, top=1, others=1, seeds=1, max_tau1=2, max_tau2=2,
                            estimate_samples=16, hessian_iters=3)  # fmt: skip
    config = _config(tiny, folder, partition="shards")
    for text, fragment in (("{", "cannot be read (JSONDecodeError"), ("[]", "is not a plan's state")):
        (folder / "plan.json").write_text(text)
        with pytest.raises(InputError, match=re.escape(fragment)):
            plan(config, settings)
    (folder / "plan.json").unlink()
    for text, fragment in (("", "cannot be read (EmptyDataError"), ("tau1,tau2\n1,1\n", "lacks the columns")):
        (folder / "simulations.csv").write_text(text)
        with pytest.raises(InputError, match=re.escape(fragment)):
            plan(config, settings)
    grid = tmp_path / "grid.toml"
    for text, fragment in (
        ("base = 3\n", "base = 3 (expected a [base] table"),
        ("grid = [1]\n", "grid = [1]"),
    ):
        grid.write_text(text)
        assert sim_main(["sweep", str(grid), "--out", str(tmp_path / "sw")]) == 2
        assert fragment in capsys.readouterr().err
    grid.write_bytes(b"[base]\nseed = \xff\n")
    assert sim_main(["sweep", str(grid), "--out", str(tmp_path / "sw")]) == 2
    assert "is not valid TOML" in capsys.readouterr().err


def test_timeout_without_the_distributed_backend_is_refused(tiny, tmp_path, capsys) -> None:
    assert sim_main(_argv(tiny, tmp_path / "run", "--timeout", "5")) == 2
    assert "--timeout 5.0 has no effect: only backend 'distributed' reads it" in capsys.readouterr().err


def test_tf32_on_the_cpu_is_refused(tiny, tmp_path, capsys) -> None:
    assert sim_main(_argv(tiny, tmp_path / "run", "--tf32")) == 2
    err = capsys.readouterr().err
    assert "--tf32 True has no effect: only a CUDA device rounds matrix products to TF32" in err


def test_an_older_checkpoint_is_checked_against_config_json_for_eval_samples(tiny, tmp_path, capsys) -> None:
    """A checkpoint written before eval_samples joined the fingerprint lacks it: the run's config.json says
    which sample its logged losses used, and a resume with another one is refused too."""
    out = tmp_path / "run"
    assert sim_main(_argv(tiny, out)) == 0
    state = torch.load(out / "checkpoint.pt", weights_only=False)
    del state["config"]["eval_samples"]
    torch.save(state, out / "checkpoint.pt")
    assert sim_main(_argv(tiny, out, "--steps", "12", "--resume", "--eval-samples", "20")) == 2
    assert "eval_samples = 30 -> 20" in capsys.readouterr().err
    assert sim_main(_argv(tiny, out, "--steps", "12", "--resume")) == 0


def test_atomic_write_flushes_the_file_before_the_rename_and_the_folder_after(tmp_path, monkeypatch) -> None:
    """atomic_write renamed a file that might still be in the page cache: after a power loss the new name
    could point at an empty file. The data is flushed (fsync) before the rename, the folder after it."""
    import sim.run_folder

    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync file")
        real_fsync(fd)

    def replace(src: object, dst: object) -> None:
        events.append("rename")
        real_replace(src, dst)

    monkeypatch.setattr(sim.run_folder.os, "fsync", fsync)
    monkeypatch.setattr(sim.run_folder.os, "replace", replace)
    sim.run_folder.atomic_write(tmp_path / "a.json", lambda p: p.write_text("{}"))
    assert events == ["fsync file", "rename", "fsync folder"]
    assert (tmp_path / "a.json").read_text() == "{}" and not (tmp_path / "a.json.tmp").exists()


def test_a_folder_in_the_way_of_a_checkpoint_or_summary_is_named(tiny, tmp_path, capsys) -> None:
    """A folder named checkpoint.pt got 'no space left on the device?' and a --resume from a checkpoint that
    did not exist; one named summary.json was reported by its temporary twin, summary.json.tmp."""
    (tmp_path / "a" / "checkpoint.pt").mkdir(parents=True)
    assert sim_main(_argv(tiny, tmp_path / "a", "--steps", "12")) == 1
    err = capsys.readouterr().err
    assert f"cannot write the checkpoint {tmp_path / 'a' / 'checkpoint.pt'} at step 4 (Is a directory)" in err
    assert "no earlier checkpoint to continue from" in err and "no space" not in err and "--resume" not in err
    (tmp_path / "b" / "summary.json").mkdir(parents=True)
    assert sim_main(_argv(tiny, tmp_path / "b", "--steps", "12", "--checkpoint-every", "1000")) == 1
    err = capsys.readouterr().err
    assert err.strip().endswith(f"Is a directory: {tmp_path / 'b' / 'summary.json'}"), err


def test_a_checkpoints_failure_cause_is_said_once() -> None:
    """A full disk raised as an OSError read 'No space left on device; no space left on the device?'; torch's
    RuntimeError naming no cause still gets the guess, one naming the system's error gets that error."""
    import errno

    from sim.loop import _save_failure

    assert _save_failure(OSError(errno.ENOSPC, "No space left on device")) == "No space left on device"
    assert _save_failure(OSError(errno.EACCES, "Permission denied")) == "Permission denied"
    guessed = _save_failure(RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 1600"))
    assert guessed.endswith("; no space left on the device?")
    named = RuntimeError("File x.tmp cannot be opened ... failed with strerror: Read-only file system")
    assert _save_failure(named) == "Read-only file system"
    gone = RuntimeError("Parent directory /tmp/x does not exist.")  # blamed on a full disk (a review)
    assert _save_failure(gone) == "Parent directory /tmp/x does not exist."


def test_an_empty_data_dir_is_refused_not_read_as_the_shipped_copy(tmp_path, capsys) -> None:
    """--data-dir "" (an unset $DATA) trained on the shipped MNIST in silence, and CIFAR-10 read the
    current folder ("data file 'data_batch_1' does not exist", no folder named): a probe."""
    from sim.data import dataset_files, load_dataset
    from sim.versus import versus

    for argv in (["--model", "logreg"], ["--dataset", "cifar10"]):
        code = sim_main(
            [*argv, "--nodes", "4", "--steps", "2", "--data-dir", " ", "--out", str(tmp_path / "r")]
        )
        assert code == 2 and "data_dir = ' ' is empty (expected a folder" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    for call in (lambda: dataset_files("mnist", ""), lambda: load_dataset("cifar10", ""),
                 lambda: versus("gossipy", [4], 8, 1, 1, "mnist", "", lambda line: None)):  # fmt: skip
        with pytest.raises(InputError, match="data_dir = '' is empty"):
            call()
