"""The simulator's own failure: a run that could not finish (not a bad input, which is ``InputError``), and
the one bad input a caller may recover from: a resume whose settings differ from the checkpoint's."""

from __future__ import annotations

from bounds import InputError

__all__ = ["ResumeSettingsDiffer", "RunInterrupted", "SimulationError"]


class SimulationError(RuntimeError):
    """A run stopped by a failure of its processes (one died or hung); ``--resume`` continues it."""


class RunInterrupted(SimulationError):
    """A run stopped by Ctrl-C after a whole step, its checkpoint written (:mod:`sim.interrupt`); ``kept``:
    whether anything was kept to continue from (none before the first step, where the advice to --resume,
    which would then be refused, contradicted 'nothing to keep yet', a review)."""

    def __init__(self, message: str, kept: bool = True) -> None:
        super().__init__(message)
        self.kept = kept


class ResumeSettingsDiffer(InputError):
    """``--resume`` with settings other than the checkpoint's; ``pairs`` names them ('eta = 0.1 -> 0.2').
    The message advises ``--allow-change`` where it applies; a caller that sets the fields itself (a plan)
    says instead that it starts the run again."""

    def __init__(self, message: str, pairs: str) -> None:
        super().__init__(message)
        self.pairs = pairs
