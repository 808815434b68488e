"""The cost model of a run: seconds per local step and per gossip step (ours: the paper
fixes a finite number of steps T under limited resources, Section III-B, but prices neither kind of step).

One model for the planner (:func:`bounds.plan.optimize.optimize_dfl` fits K whole rounds of
``round_seconds(tau1, tau2)`` into the budget) and for the simulator's modelled clock
(``dfl-sim run`` adds ``step_seconds`` per step to ``model_time``), so a plan and the run that
follows it count time the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bounds._checks import InputError, broadcastable, flag, real_array, real_number, whole_number

__all__ = ["CostModel"]


@dataclass(frozen=True)
class CostModel:
    """Seconds per local step (``t_comp``) and per gossip step (``t_comm``).

    Build with ``CostModel(t_comp, t_comm)``, :meth:`from_network`, or scale an uncompressed
    gossip cost to a compressed message with :meth:`with_message_bits`.
    """

    t_comp: float
    t_comm: float

    def __post_init__(self) -> None:  # stored as the floats they were checked as (a list [1] used to stay)
        object.__setattr__(self, "t_comp", real_number("t_comp", self.t_comp, low=0, low_open=True))
        object.__setattr__(self, "t_comm", real_number("t_comm", self.t_comm, low=0, low_open=True))

    @classmethod
    def from_network(
        cls, t_comp: float, *, latency: float, bandwidth: float, dim: int, bits: float | None = None
    ) -> CostModel:
        """t_comm = latency + message bits / bandwidth (bits/s); bits default to 32 dim (float32)."""
        lat = real_number("latency", latency, low=0)  # single numbers, as the model holds (a list: TypeError)
        rate = real_number("bandwidth", bandwidth, low=0, low_open=True)
        d = whole_number("dim", dim, low=1)
        message = 32.0 * d if bits is None else real_number("bits", bits, low=0, low_open=True)
        with np.errstate(over="ignore"):
            t_comm = lat + message / rate
        if not np.isfinite(t_comm):  # it blamed t_comm = inf, a value the user never gave
            raise InputError(
                f"latency + bits / bandwidth = {lat:g} + {message:g} / {rate:g} overflows float64 (expected "
                "a finite time per gossip step: a larger bandwidth or a smaller latency)"
            )
        return cls(t_comp, t_comm)

    def with_message_bits(self, bits: float, dim: int) -> CostModel:
        """This model, ``t_comm`` read as one uncompressed (32 dim bit) step, for ``bits``-bit messages."""
        d = whole_number("dim", dim, low=1)
        b = real_number("bits", bits, low=0, low_open=True)
        scale = b / (32.0 * d)  # first: t_comm = 1e303 times the bits overflowed before the division
        return CostModel(self.t_comp, self.t_comm * scale)

    def round_seconds(self, tau1: Any, tau2: Any) -> Any:
        """Seconds of one round, tau1 t_comp + tau2 t_comm (arrays broadcast; a float for two numbers).
        tau1 and tau2 are step counts, whole numbers >= 0: -4 gave a negative duration, 4.5 a time for
        half a step, and arrays that do not broadcast numpy's error (a probe of the library)."""
        steps = broadcastable({"tau1": real_array("tau1", tau1, low=0, integer=True),
                               "tau2": real_array("tau2", tau2, low=0, integer=True)})  # fmt: skip
        with np.errstate(over="ignore"):  # t_comp = t_comm = 1e308: a round longer than float64 holds is inf
            seconds = steps["tau1"] * self.t_comp + steps["tau2"] * self.t_comm
        return float(seconds) if seconds.ndim == 0 else seconds

    def step_seconds(self, local: bool, gossip: bool) -> float:
        """Seconds of one step that is a local step, a gossip step, or both at once (D-SGD). ``local`` and
        ``gossip`` are booleans (the string "no" counted as True, a probe)."""
        local, gossip = flag("local", local), flag("gossip", gossip)
        return (self.t_comp if local else 0.0) + (self.t_comm if gossip else 0.0)
