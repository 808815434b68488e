"""The simulator's own failure: a run that could not finish (not a bad input, which is ``InputError``)."""

from __future__ import annotations

__all__ = ["RunInterrupted", "SimulationError"]


class SimulationError(RuntimeError):
    """A run stopped by a failure of its processes (one died or hung); ``--resume`` continues it."""


class RunInterrupted(SimulationError):
    """A run stopped by Ctrl-C after a whole step, its checkpoint written (:mod:`sim.interrupt`)."""
