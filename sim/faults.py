"""Fault injection for the tests of the distributed backend, behind one environment variable.

``DFLKIT_TEST_FAULT=exit:STEP`` makes the last process of a distributed run die at step STEP;
``hang:STEP`` makes it hang there (for 10 x the run's timeout). Nothing here runs unless the
variable is set; it is not a flag of any command.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from sim.trainer import Trainer

__all__ = ["FAULT_ENV", "install_fault"]

FAULT_ENV = "DFLKIT_TEST_FAULT"


def install_fault(trainer: Trainer, last_process: bool, timeout: float) -> None:
    """If ``DFLKIT_TEST_FAULT`` is set and this is the last process, make its trainer fail later."""
    spec = os.environ.get(FAULT_ENV)
    if not spec or not last_process:
        return
    match = re.fullmatch(r"(exit|hang):(\d+)", spec)
    if match is None:
        raise ValueError(f"{FAULT_ENV} = {spec!r} is malformed (expected 'exit:STEP' or 'hang:STEP')")
    kind, step = match.group(1), int(match.group(2))
    original = trainer.step

    def step_then_fail() -> tuple[int, Any]:
        if trainer.t >= step:
            if kind == "hang":
                time.sleep(10 * timeout)
            os._exit(3)
        return original()

    trainer.step = step_then_fail  # type: ignore[method-assign]
