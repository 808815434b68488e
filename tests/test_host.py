"""sim.host: freed memory kept for reuse (no page faults for a step's recurring large activations)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from bounds import InputError
from sim.host import ENV_SWITCH, automatic_threads, busy_cores, retain_freed_memory

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

FAULTS = """
import resource, sys, torch
from sim.host import retain_freed_memory
print(retain_freed_memory())
def cycle():
    t = torch.empty(16 * 2**20)  # 64 MB: above glibc's largest adaptive mmap threshold (32 MB)
    t.fill_(1.0)
    del t
for _ in range(20):  # the heap settles: torch's posix_memalign asks for a little more than a freed block
    cycle()  # of the same size holds, so glibc extends the heap 5-6 times before neighbours coalesce
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    cycle()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(switch: str) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env[ENV_SWITCH] = switch
    out = subprocess.run(
        [sys.executable, "-c", FAULTS], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_retained_memory_is_reused_without_page_faults() -> None:
    """Five allocations of 64 MB after twenty: each faults its 16,384 pages in again with glibc's
    defaults (the measurement can fail), and almost none with freed memory retained."""
    retained, faults = _faults("1")
    default, default_faults = _faults("0")
    assert (retained, default) == ("True", "False")
    assert default_faults > 5 * 16384 * 0.9
    assert faults < 16384 * 0.1


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_settings_are_exported_to_child_processes_keeping_the_users(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "12345")
    monkeypatch.delenv("MALLOC_MMAP_MAX_", raising=False)
    assert retain_freed_memory()
    assert os.environ["MALLOC_MMAP_MAX_"] == "0"
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "12345"


def test_switch_off_and_bad_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_SWITCH, "0")
    assert retain_freed_memory() is False
    monkeypatch.setenv(ENV_SWITCH, "yes")
    with pytest.raises(InputError, match="DFLKIT_RETAIN_FREED_MEMORY = 'yes'"):
        retain_freed_memory()


def _fake_stat(snapshots: list[dict[int, tuple[int, int]]]):
    it = iter(snapshots)
    return lambda: next(it)


def test_busy_cores_from_idle_ticks() -> None:
    """cpu0 busy all the window, cpu1 idle, cpu2 (not ours) busy: 1 of our 2 cores is busy."""
    read = _fake_stat(
        [{0: (100, 1000), 1: (500, 1000), 2: (0, 10)}, {0: (100, 1100), 1: (600, 1100), 2: (0, 110)}]
    )
    assert busy_cores([0, 1], window=0.0, read=read) == pytest.approx(1.0)
    half = _fake_stat([{0: (0, 0)}, {0: (50, 100)}])
    assert busy_cores([0], window=0.0, read=half) == pytest.approx(0.5)
    assert busy_cores([3], window=0.0, read=_fake_stat([{0: (0, 0)}, {0: (1, 1)}])) is None


def test_automatic_threads_counts_busy_cores_not_the_load_average(monkeypatch: pytest.MonkeyPatch) -> None:
    """A high load average from processes that have ended must not cost threads; cores busy now must."""
    import sim.host as host

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(host, "allowed_cpus", lambda: [0, 1, 2, 3])
    monkeypatch.setattr(host.os, "getloadavg", lambda: (3.5, 3.0, 2.0))
    monkeypatch.setattr(host, "busy_cores", lambda cpus, window: 0.2)
    assert automatic_threads() == 4
    monkeypatch.setattr(host, "busy_cores", lambda cpus, window: 2.6)
    assert automatic_threads() == 1
    monkeypatch.setattr(host, "busy_cores", lambda cpus, window: 9.0)
    assert automatic_threads() == 1  # at least one
    monkeypatch.setattr(host, "busy_cores", lambda cpus, window: None)  # no /proc/stat: the load average
    assert automatic_threads() == 1


def test_proc_stat_is_read_here() -> None:
    """On Linux the real /proc/stat gives a busy share between 0 and the number of cores."""
    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc/stat")
    from sim.host import allowed_cpus

    cpus = allowed_cpus()
    busy = busy_cores(cpus, window=0.05)
    assert busy is not None and 0.0 <= busy <= len(cpus) + 1e-9


def test_available_memory_reads_memavailable_and_the_batch_check_uses_it(tmp_path, monkeypatch) -> None:
    """The batch check compared a step's inputs with the machine's memory: 23.4 GiB of inputs passed on a
    23.5 GiB machine with less free, and the kernel killed the run without a word."""
    from sim import setup
    from sim.config import RunConfig
    from sim.host import available_memory, physical_memory

    info = tmp_path / "meminfo"
    info.write_text("MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:    1000 kB\n")
    assert available_memory(str(info)) == 1000 * 1024
    assert available_memory(str(tmp_path / "none")) == physical_memory()
    monkeypatch.setattr(setup, "available_memory", lambda: 1e6)  # 1 MB free: 10 x 32 MNIST inputs take 1 MB
    with pytest.raises(InputError, match=r"more than the 0.000931 GiB this machine has free"):
        setup.prepare(RunConfig(steps=1, batch_size=32, out=str(tmp_path / "run")))
