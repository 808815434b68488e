"""The C allocator's settings for training on the CPU: freed memory kept for reuse, not returned to the OS.

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

The cost is memory: a process keeps up to its peak (plus at most 1 GiB) until it ends. The settings are
exported as glibc's ``MALLOC_MMAP_MAX_`` / ``MALLOC_TRIM_THRESHOLD_`` too, so the processes a run spawns
(``--jobs`` workers, gloo ranks) start with them; where the user set one of them already, glibc has read
it and it is kept.
``DFLKIT_RETAIN_FREED_MEMORY=0`` leaves glibc's defaults. Nothing changes in any result: only where memory
comes from.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

from bounds import InputError

__all__ = ["ENV_SWITCH", "M_MMAP_MAX", "M_TRIM_THRESHOLD", "TRIM_THRESHOLD_BYTES", "retain_freed_memory"]

ENV_SWITCH = "DFLKIT_RETAIN_FREED_MEMORY"
M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_MAX = -4
TRIM_THRESHOLD_BYTES = 1 << 30
_SETTINGS = {
    "MALLOC_MMAP_MAX_": (M_MMAP_MAX, 0),
    "MALLOC_TRIM_THRESHOLD_": (M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
}


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
