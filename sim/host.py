"""What a run takes from the machine it runs on: torch's threads, the C allocator's settings, and torchrun's
rank and world size (:func:`torchrun_rank_and_world`).

**Threads** (:func:`automatic_threads`): the cores this process may use less those busy now, measured
over a short window of /proc/stat, not by the load average (which still counts processes that ended up
to a minute ago).

**Allocator** (:func:`retain_freed_memory`): freed memory kept for reuse, not returned to the OS.

glibc's malloc serves a large allocation with fresh pages from the OS (mmap) and gives freed memory at the
top of its heap back. A training step allocates and frees the same large activations every step (the
stacked MNIST CNN's first convolution: 16 MB at 10 nodes x 32 samples, 128 MB at 80), so every step
faults those pages in again and the kernel zeroes them: 115,612-129,332 minor page faults per step of 80
nodes x 32 on 2 cores (2026-11-27), 7.2 ms per node-step against 4.3 ms with the settings below (0-5,512
faults); at 10 and 20 nodes glibc's adaptive threshold already keeps most of them (3,708 and 490-1,143
faults per step). This is what the PyTorch CPU tuning guide's advice to preload jemalloc or tcmalloc is
about; glibc's own ``mallopt`` does it without a preload:

* ``M_MMAP_MAX = 0``: every allocation comes from the heap, which reuses freed blocks;
* ``M_TRIM_THRESHOLD = 1 GiB``: free memory at the top of the heap is returned to the OS only beyond 1 GiB.

The cost is memory: a process keeps up to its peak (plus at most 1 GiB) until it ends, and the heap grows
by a few blocks before it reuses them (torch allocates with ``posix_memalign``, which asks for a little
more than a freed block of the same size holds, until freed neighbours coalesce: a loop allocating one
64 MB tensor grew the heap by five such blocks, then faulted no page in its next 23 iterations).
The settings are exported as glibc's ``MALLOC_MMAP_MAX_`` / ``MALLOC_TRIM_THRESHOLD_`` too, so the
processes a run spawns (``--jobs`` workers, gloo ranks) start with them; where the user set one of them
already, glibc has read it and it is kept.
``DFLKIT_RETAIN_FREED_MEMORY=0`` leaves glibc's defaults. Nothing changes in any result: only where memory
comes from.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import time
from collections.abc import Callable, Sequence

from bounds import InputError

__all__ = [
    "ENV_SWITCH",
    "M_MMAP_MAX",
    "M_TRIM_THRESHOLD",
    "TRIM_THRESHOLD_BYTES",
    "allowed_cpus",
    "automatic_threads",
    "available_memory",
    "busy_cores",
    "check_threads",
    "physical_memory",
    "retain_freed_memory",
    "torchrun_rank_and_world",
]

ENV_SWITCH = "DFLKIT_RETAIN_FREED_MEMORY"
M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_MAX = -4
TRIM_THRESHOLD_BYTES = 1 << 30
_SETTINGS = {
    "MALLOC_MMAP_MAX_": (M_MMAP_MAX, 0),
    "MALLOC_TRIM_THRESHOLD_": (M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
}


def physical_memory() -> float:
    """Bytes of physical memory of this machine (inf where the OS does not say)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return float("inf")


def available_memory(meminfo: str = "/proc/meminfo") -> float:
    """Bytes of memory a new allocation can take now without swapping (Linux's MemAvailable); where the OS
    does not say, :func:`physical_memory`."""
    try:
        with open(meminfo) as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return physical_memory()


def retain_freed_memory() -> bool:
    """Keep freed memory in this process for reuse (see the module docstring); True if set, False where
    ``DFLKIT_RETAIN_FREED_MEMORY=0`` or the C library is not glibc (musl, macOS, Windows: left as is).
    Safe to call again. Raises InputError for a value of the switch other than 0 or 1."""
    switch = os.environ.get(ENV_SWITCH, "1")
    if switch not in ("0", "1"):
        raise InputError(f"{ENV_SWITCH} = {switch!r} (expected 0 to keep glibc's defaults, or 1)")
    if switch == "0" or platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    for name, (option, value) in _SETTINGS.items():
        if name in os.environ:  # the user's own setting, which glibc read at start-up
            continue
        if not mallopt(option, value):
            return False
        os.environ[name] = str(value)  # for the processes this one spawns
    return True


def check_threads(threads: int) -> None:
    """InputError unless ``threads`` (torch threads asked for; 0 = automatic) is at most the cores this
    process may use: 10,000 ran a run 8x slower, loaded the machine to 1,759 and crashed versus's children.
    Checked where the user asks (a flag, a config file, a grid), not in RunConfig.validate: a config.json
    records the threads its machine chose."""
    cores = len(allowed_cpus())
    if threads > cores:
        raise InputError(
            f"threads = {threads!r} is more than the {cores} cores this process may use (expected at most "
            f"{cores}; 0 = automatic)"
        )


def automatic_threads(window: float = 0.2) -> int:
    """Torch threads for a fresh process on a possibly shared machine (``dfl-sim run`` without --threads).

    The cores this process may use (``os.sched_getaffinity``) less the cores busy now (:func:`busy_cores`
    over ``window`` seconds; where /proc/stat cannot be read, the 1-minute load average), at least 1: on
    a busy machine torch's default (every core) makes each step wait for the slowest core.
    ``OMP_NUM_THREADS``, when set, wins. Called at start-up, before this process adds load.

    The load average alone was wrong for a run started right after another: it still counts processes
    that ended up to a minute ago. On 2 idle cores, ``dfl-sim`` runs started one after another got 1
    thread (load average 1-2) and took 7-9 ms per MNIST node-step instead of 4.4 (2026-11-27).
    """
    if "OMP_NUM_THREADS" in os.environ:
        import torch  # here: paper_checks.parallel's numpy workers import this module, and not torch

        return torch.get_num_threads()
    cpus = allowed_cpus()
    busy = busy_cores(cpus, window)
    if busy is None:
        busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(1, min(len(cpus), round(len(cpus) - busy)))


def allowed_cpus() -> list[int]:
    """The cores this process may run on (``os.sched_getaffinity``; elsewhere every core)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def busy_cores(
    cpus: Sequence[int], window: float = 0.2, read: Callable[[], dict[int, tuple[int, int]]] | None = None
) -> float | None:
    """How many of ``cpus`` were busy over the next ``window`` seconds: the sum over them of the share of
    time not idle (idle and iowait count as idle; steal as busy, the hypervisor's). ``read`` returns
    {cpu: (idle ticks, total ticks)} (default: /proc/stat); None where it cannot be read."""
    read = read or _proc_stat
    try:
        before = read()
        time.sleep(window)
        after = read()
    except OSError:
        return None
    busy = 0.0
    for cpu in cpus:
        if cpu not in before or cpu not in after:
            return None
        idle = after[cpu][0] - before[cpu][0]
        total = after[cpu][1] - before[cpu][1]
        busy += 1.0 - idle / total if total > 0 else 0.0
    return busy


def _proc_stat() -> dict[int, tuple[int, int]]:
    """{cpu: (idle + iowait ticks, all ticks)} from /proc/stat's per-cpu lines (guest time is already
    counted in user time, so it is left out of the total)."""
    out = {}
    with open("/proc/stat") as fh:
        for line in fh:
            name, *fields = line.split()
            if name.startswith("cpu") and name[3:].isdigit():
                ticks = [int(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
                out[int(name[3:])] = (ticks[3] + ticks[4], sum(ticks))
    return out


def torchrun_rank_and_world() -> tuple[int, int] | None:
    """(RANK, WORLD_SIZE) when this process was launched by torchrun (both set), else None. InputError where
    they are not integers with 0 <= RANK < WORLD_SIZE (a RANK of 'x' ended in a ValueError traceback)."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        return None
    values = {}
    for name in ("RANK", "WORLD_SIZE"):
        text = os.environ[name]
        try:
            values[name] = int(text)
        except ValueError:
            raise InputError(
                f"environment variable {name} = {text!r} is not an integer (expected what torchrun sets: "
                "0 <= RANK < WORLD_SIZE)"
            ) from None
    rank, world = values["RANK"], values["WORLD_SIZE"]
    if not 0 <= rank < world:
        raise InputError(
            f"environment variables RANK = {rank}, WORLD_SIZE = {world} (expected 0 <= RANK < WORLD_SIZE, as "
            "torchrun sets them)"
        )
    return rank, world
