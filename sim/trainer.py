"""One step at a time of any algorithm on the vectorised engine (the runner adds logging)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from sim.algorithms import BOTH, GOSSIP, LOCAL
from sim.engine import Sampler, Stack
from sim.gossip import ChocoGossip, ExactGossip

__all__ = ["Trainer"]


@dataclass
class Trainer:
    """Holds X (N x d) and advances it by the step kinds of an algorithm.

    ``eta`` is a constant or a function of the round index k (0-based), e.g. C-DFL's
    eta_k = 4 / (mu (a + k)).
    """

    stack: Stack
    X: torch.Tensor
    kinds: np.ndarray
    eta: float | Callable[[int], float]
    gossip: ExactGossip | ChocoGossip
    sampler: Sampler
    x_train: torch.Tensor
    y_train: torch.Tensor
    tau: int
    gen: torch.Generator | None = None
    t: int = 0

    def learning_rate(self, t: int | None = None) -> float:
        """The learning rate of step ``t`` (0-based; default the next step, ``self.t``): eta of its round."""
        step = self.t if t is None else t
        return self.eta(step // self.tau) if callable(self.eta) else self.eta

    def step(self) -> tuple[int, torch.Tensor | None]:
        """Advance one step; returns its kind and the nodes' mini-batch losses (None for gossip)."""
        kind = int(self.kinds[self.t])
        losses = None
        if kind in (LOCAL, BOTH):
            idx, weight = self.sampler.next()
            G, losses = self.stack.gradients(self.X, self.x_train[idx], self.y_train[idx], weight)
            update = self.learning_rate() * G
            self.X = (self.gossip.step(self.X, self.gen) if kind == BOTH else self.X) - update
        elif kind == GOSSIP:
            self.X = self.gossip.step(self.X, self.gen)
        self.t += 1
        return kind, losses
