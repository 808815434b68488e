"""The straightforward reference implementation: the oracle the vectorised engine is tested against.

One ``nn.Module`` and one ``torch.optim.SGD`` per node, a Python loop over nodes, gossip by
averaging state dicts with weights c_ji, CHOCO-G with per-node copies of x_hat and the numpy
compressors of :mod:`bounds.cdfl.compression`. Slow by design; only for tests and the benchmark.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from bounds import InputError
from bounds.cdfl.compression import Compressor
from sim.algorithms import BOTH, GOSSIP, LOCAL
from sim.engine import Sampler
from sim.models import loss_fn

__all__ = ["reference_run"]


def _vector(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def _load(model: nn.Module, vector: torch.Tensor) -> None:
    torch.nn.utils.vector_to_parameters(vector.detach().clone(), model.parameters())


def _average(models: list[nn.Module], C: np.ndarray) -> list[dict[str, torch.Tensor]]:
    states = [m.state_dict() for m in models]
    return [
        {k: sum(float(C[j, i]) * states[j][k] for j in range(len(models))) for k in states[i]}
        for i in range(len(models))
    ]


def reference_run(
    template: nn.Module,
    x0: torch.Tensor,
    C: np.ndarray,
    kinds: np.ndarray,
    eta: float,
    sampler: Sampler,
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    *,
    gamma: float | None = None,
    compressor: Compressor | None = None,
    rng: np.random.Generator | None = None,
) -> list[torch.Tensor]:
    """Run the schedule ``kinds`` node by node; returns X (N x d) after every step (X_1 first).

    Gossip is exact averaging by C, or CHOCO-G with ``compressor`` and its consensus step ``gamma`` (both
    given), a random compressor drawing from ``rng`` (needed: a deterministic one takes none)."""
    if compressor is not None and gamma is None:
        raise InputError(f"compressor = {compressor!r} needs gamma (expected CHOCO-G's consensus step)")
    if compressor is not None and compressor.random and rng is None:
        raise InputError(f"rng = None: {type(compressor).__name__} draws at random (expected "
                         "numpy.random.default_rng(seed))")  # fmt: skip
    draws = np.random.default_rng(0) if rng is None else rng  # (unread by a deterministic compressor)
    n = C.shape[0]
    models = [copy.deepcopy(template) for _ in range(n)]
    for m in models:
        _load(m, x0)
    optimizers = [torch.optim.SGD(m.parameters(), lr=eta) for m in models]
    hats = [torch.zeros_like(x0) for _ in range(n)]
    history = [torch.stack([_vector(m) for m in models])]
    for kind in kinds:
        if kind in (LOCAL, BOTH):
            idx, weight = sampler.next()
            before = [_vector(m) for m in models]
            for i, (m, opt) in enumerate(zip(models, optimizers, strict=True)):
                opt.zero_grad()
                loss_fn(m, m(x_train[idx[i]]), y_train[idx[i]], weight[i]).backward()
                opt.step()
            if kind == BOTH:  # D-SGD: X C - eta G(X) = (X - eta G) + (X C - X)
                mixed = [sum(float(C[j, i]) * before[j] for j in range(n)) for i in range(n)]
                for i, m in enumerate(models):
                    _load(m, _vector(m) + mixed[i] - before[i])
        if kind == GOSSIP and compressor is None:
            for m, state in zip(models, _average(models, C), strict=True):
                m.load_state_dict(state)
        elif kind == GOSSIP and compressor is not None:  # CHOCO-G
            assert gamma is not None  # (checked above)
            xs = [_vector(m) for m in models]
            new = [
                xs[i] + gamma * sum(float(C[j, i]) * (hats[j] - hats[i]) for j in range(n)) for i in range(n)
            ]
            for i, m in enumerate(models):
                q = compressor((new[i] - hats[i]).numpy(), draws)
                hats[i] = hats[i] + torch.as_tensor(q, dtype=x0.dtype)
                _load(m, new[i])
        history.append(torch.stack([_vector(m) for m in models]))
    return history
