"""The step schedule of Algorithm 1: which of the T steps are local SGD steps and which gossip steps."""

from __future__ import annotations

import numpy as np

from bounds._checks import whole_number

__all__ = ["local_step_mask"]


MAX_STEPS = 10**9
"""The most steps T a mask holds (one byte a step: 1 GB)."""


def local_step_mask(tau1: int, tau2: int, T: int) -> np.ndarray:
    """Boolean mask over steps t = 1..T: True for a local SGD step, False for a gossip step.

    Algorithm 1: K = floor(T / tau) rounds of tau1 local then tau2 gossip steps,
    then T - K tau local steps. One byte a step, T <= :data:`MAX_STEPS`.

    >>> local_step_mask(2, 1, 7).astype(int).tolist()
    [1, 1, 0, 1, 1, 0, 1]
    """
    t1 = whole_number("tau1", tau1, low=1)
    t2 = whole_number("tau2", tau2, low=0)
    n = whole_number("T", T, low=1, high=MAX_STEPS)
    tau = t1 + t2
    rounds = n // tau
    mask = np.ones(n, dtype=bool)
    mask[: rounds * tau].reshape(rounds, tau)[:, t1:] = False
    return mask
