"""sim.allocator: freed memory kept for reuse (no page faults for a step's recurring large activations)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from bounds import InputError
from sim.allocator import ENV_SWITCH, retain_freed_memory

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

FAULTS = """
import resource, sys, torch
from sim.allocator import retain_freed_memory
print(retain_freed_memory())
def cycle():
    t = torch.empty(16 * 2**20)  # 64 MB: above glibc's largest adaptive mmap threshold (32 MB)
    t.fill_(1.0)
    del t
for _ in range(3):  # the heap settles (a small allocation between two may move the block once)
    cycle()
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
    """Five allocations of 64 MB after three: each faults its 16,384 pages in again with glibc's
    defaults (the measurement can fail), and almost none with freed memory retained."""
    retained, faults = _faults("1")
    default, default_faults = _faults("0")
    assert (retained, default) == ("True", "False")
    assert default_faults > 5 * 16384 * 0.9
    assert faults < 16384 * 0.1


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_settings_reach_spawned_processes_and_keep_the_users(monkeypatch: pytest.MonkeyPatch) -> None:
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
