"""The algorithms as schedules of step kinds plus a gossip rule, in the paper's matrix form.

Rows of X are nodes (so the paper's X C is ``C @ X``):

* ``dfl``   (Algorithm 1): K rounds of tau1 local steps X <- X - eta G then tau2 gossip
  steps X <- C X, then the T - K tau tail of local steps.
* ``csgd``  DFL with tau2 = 1 (compute-then-communicate; Section VI and Remark 1's C-SGD): the gossip is
  a step of its own, so a round is tau1 + 1 steps. Eq. (C-SGD_rules) folds it into the tau-th gradient
  step, X_{t+1} = (X_t - eta G_t) C: the same models after each gossip, but T of its steps hold T gradient
  steps and T of ours T tau1 / (tau1 + 1) (as ``sync``'s hold T / 2: each step is one local or one gossip
  step, as Algorithm 1 counts them).
* ``dsgd``  communicate-then-compute: every step X <- C X - eta G(X) ((glo-d-sgd)).
* ``sync``  synchronous SGD: C = J, tau1 = tau2 = 1.
* ``local`` local SGD / FedAvg-style: C = J, tau1 local steps then one averaging.
* ``cdfl``  (Algorithm 2): DFL whose gossip steps are CHOCO-G:
  X <- X + gamma (C - I) X_hat;  X_hat <- X_hat + Q(X - X_hat), X_hat starting at 0.

The gossip rules themselves live in :mod:`sim.gossip`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bounds import InputError
from bounds._checks import MAX_EXACT_INTEGER
from bounds.dfl.schedule import local_step_mask

__all__ = [
    "ALGORITHMS",
    "BOTH",
    "GOSSIP",
    "LOCAL",
    "Algorithm",
    "algorithm",
    "keeps_steps_taken",
    "local_step_count",
    "resolve_schedule",
    "step_kinds",
]

LOCAL, GOSSIP, BOTH = 0, 1, 2


@dataclass(frozen=True)
class Algorithm:
    """One algorithm of Section III as a record (what used to be string branches on its name).

    ``tau1`` / ``tau2``: the schedule it fixes (None: the user's value); ``uses_J``: it mixes with
    exact averaging J instead of C; ``compressed``: CHOCO-G gossip with a compressor (Section V);
    ``simultaneous``: every step is a local and a gossip step at once (D-SGD).
    """

    name: str
    description: str
    tau1: int | None = None
    tau2: int | None = None
    uses_J: bool = False
    compressed: bool = False
    simultaneous: bool = False

    @property
    def has_drift_bound(self) -> bool:
        """Whether eq. (103)'s drift bound describes it (exact gossip, separate local and gossip steps)."""
        return not self.compressed and not self.simultaneous


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm("dfl", "Algorithm 1: tau1 local SGD steps, then tau2 gossip steps"),
        Algorithm("cdfl", "C-DFL (Section V): DFL with CHOCO-G compressed gossip", compressed=True),
        Algorithm("dsgd", "D-SGD: a local and a gossip step at once", tau1=1, tau2=1, simultaneous=True),
        Algorithm("csgd", "C-SGD: tau1 local steps, then one gossip step", tau2=1),
        Algorithm(
            "sync", "synchronous SGD: one local step, then exact averaging", tau1=1, tau2=1, uses_J=True
        ),
        Algorithm("local", "local SGD: tau1 local steps, then exact averaging", tau2=1, uses_J=True),
    )
}


def algorithm(name: str) -> Algorithm:
    """The record of an algorithm by name."""
    if name not in ALGORITHMS:
        raise InputError(f"unknown algorithm {name!r} (expected one of: {', '.join(ALGORITHMS)})")
    return ALGORITHMS[name]


def resolve_schedule(name: str, tau1: int, tau2: int) -> tuple[int, int, bool]:
    """(tau1, tau2, uses J) for an algorithm, with clear errors for impossible combinations."""
    record = algorithm(name)
    if tau1 < 1:
        raise InputError(f"tau1 = {tau1} is out of range (expected tau1 >= 1)")
    if tau2 < 0:
        raise InputError(f"tau2 = {tau2} is out of range (expected tau2 >= 0)")
    for field, value in (("tau1", tau1), ("tau2", tau2)):
        if value > MAX_EXACT_INTEGER:  # refused by the schedule only after the run's folder was made
            raise InputError(
                f"{field} = {value} is out of range (expected at most 2^53 = {MAX_EXACT_INTEGER:,}; a round "
                "longer than the run's steps is cut by them anyway)"
            )
    tau1 = record.tau1 if record.tau1 is not None else tau1
    if record.tau2 is None and tau2 == 0:
        raise InputError(f"tau2 = 0 never gossips (algorithm {name!r} expected tau2 >= 1)")
    return tau1, record.tau2 if record.tau2 is not None else tau2, record.uses_J


def step_kinds(name: str, tau1: int, tau2: int, T: int) -> np.ndarray:
    """The kind (LOCAL, GOSSIP or BOTH) of each step t = 1..T."""
    if algorithm(name).simultaneous:
        return np.full(T, BOTH, dtype=np.int8)
    kinds = np.full(T, GOSSIP, dtype=np.int8)
    kinds[local_step_mask(tau1, tau2, T)] = LOCAL
    return kinds


def keeps_steps_taken(name: str, tau1: int, tau2: int, T_before: int, T_after: int, t: int) -> bool:
    """Whether the first ``t`` steps of a run of T_before steps keep their kinds with T_after: the last,
    partial round of Algorithm 1 is all local steps, so another T can change steps already taken (what a
    resumed run with another --steps, or a diverged run reused for more steps, must not)."""
    tau1, tau2, _ = resolve_schedule(name, tau1, tau2)
    before, after = step_kinds(name, tau1, tau2, T_before)[:t], step_kinds(name, tau1, tau2, T_after)[:t]
    return len(before) == len(after) == t and bool((before == after).all())


def local_step_count(name: str, tau1: int, tau2: int, T: int) -> int:
    """How many of the steps t = 1..T compute gradients (LOCAL or BOTH), with the algorithm's schedule."""
    tau1, tau2, _ = resolve_schedule(name, tau1, tau2)
    return int((step_kinds(name, tau1, tau2, T) != GOSSIP).sum())
