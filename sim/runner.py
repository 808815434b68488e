"""A full simulation run: config in, metrics CSV, checkpoints and a summary out.

:func:`run` is the one entry point: it prepares the run (:mod:`sim.setup`) and steps it
(:mod:`sim.loop`) in this process, or hands it to the gloo backend (:mod:`sim.distributed`).
The config is :class:`sim.config.RunConfig`. ``resume=True`` continues from the last checkpoint
with the same random streams, so a resumed run equals an unbroken one. A diverging run (NaN or
inf, or a loss grown 1000-fold) stops with a message and keeps what it recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from bounds import InputError
from sim.config import RunConfig
from sim.distributed import run_distributed
from sim.host import automatic_threads, check_threads
from sim.loop import COLUMNS, Single, run_loop
from sim.run_folder import release_folders
from sim.setup import build_trainer, kept_torch_settings, prepare

__all__ = ["COLUMNS", "RunConfig", "automatic_threads", "run"]


def run(
    config: RunConfig, progress: Callable[[int, int, float | None], None] | None = None
) -> dict[str, Any]:
    """Run one simulation; returns the summary (also written to ``summary.json``). The run folder is
    locked while it runs (:mod:`sim.run_folder`: a second run into it is refused). torch's threads and TF32
    flags are the caller's again afterwards (:func:`sim.setup.kept_torch_settings`). ``config.threads``: at
    most the cores this process may use (:func:`sim.host.check_threads`; checked for the command lines
    only before), 0 leaving torch's own choice (``dfl-sim run`` chooses by the machine's load)."""
    if not isinstance(config, RunConfig):  # (AttributeError: 'dict' object has no attribute 'out')
        raise InputError(f"config = {config!r} is not a RunConfig (expected sim.RunConfig(...))")
    config.validate()  # here: out = 5 was a TypeError from releasing its folder, the InputError hidden
    try:
        with kept_torch_settings():  # threads, TF32: as the caller had them, after the run
            if config.backend == "distributed":
                if progress is not None:  # (it was dropped in silence, a probe)
                    raise InputError("progress with backend 'distributed' (expected progress=None: rank 0 "
                                     "prints its own progress lines)")  # fmt: skip
                return run_distributed(config)
            check_threads(config.threads)
            if config.threads:
                torch.set_num_threads(config.threads)
            s = prepare(config, lock=True)
            return run_loop(config, s, build_trainer(config, s), Single(), progress)
    finally:
        release_folders([config.out])
