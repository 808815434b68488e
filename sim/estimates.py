"""Estimates of the constants of Assumption 1 on a real model, and a drift probe for eq. (103).

For a network the constants of Proposition 1 are unknown; these are the estimates the paper
checks use, each with what it does and does not guarantee:

* :func:`hessian_norm`: ||grad^2 F(w)||_2 at one point by power iteration with exact
  Hessian-vector products (double backward). It is a *local* value on the given samples;
  the smoothness constant L of Assumption 1.1 is a supremum over all w, so the largest value
  found along a trajectory is a lower estimate of L.
* :func:`gradient_moments`: the mean of the per-sample gradients at one point and their variance
  v = sum_j ||g_j - g_bar||^2 / (M - 1) with its standard error; a mini-batch of B samples drawn
  with replacement has E||g_B - grad F||^2 = v / B (Assumption 1.5's sigma^2 at that point).
* :func:`node_gradient_norm2`: ||grad F(X)||_F^2 = sum_i ||grad F(w_i)||^2 on a fixed sample,
  unbiased (each node's squared mean gradient minus v_i / M), and every node's v_i.
* :func:`probe_drift`: one DFL run step by step, recording ||X_t (I - J)||_F^2 / N at every step
  and ||grad F(X_s)||_F^2 at every local step s, the two measured quantities of (103).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bounds._checks import InputError
from sim.algorithms import ALGORITHMS, LOCAL, algorithm
from sim.config import RunConfig
from sim.engine import Stack
from sim.setup import build_trainer, prepare

__all__ = [
    "DriftProbe",
    "GradientMoments",
    "gradient_moments",
    "hessian_norm",
    "node_gradient_norm2",
    "probe_drift",
]


def _flat_loss(stack: Stack, x: torch.Tensor, y: torch.Tensor):
    weight = torch.ones(len(y), device=x.device)
    return lambda w: stack._loss(stack.unflatten(w), x, y, weight)


def hessian_norm(
    stack: Stack, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, iters: int = 30, seed: int = 0
) -> tuple[float, list[float]]:
    """||grad^2 F(w)||_2 of the mean loss on (x, y), by power iteration on Hessian-vector products.

    Returns the estimate and its history (|Rayleigh quotient| per iteration), so a caller can see
    whether it settled. Power iteration converges to the eigenvalue of largest magnitude.
    """
    if iters < 1:
        raise InputError(f"iters = {iters} is not a positive integer (expected >= 1)")
    w = w.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(_flat_loss(stack, x, y)(w), w, create_graph=True)
    v = torch.randn(w.shape, generator=torch.Generator().manual_seed(seed)).to(w)
    v /= v.norm()
    history: list[float] = []
    for _ in range(iters):
        (hv,) = torch.autograd.grad(g, w, grad_outputs=v, retain_graph=True)
        history.append(abs(float(hv @ v)))
        norm = hv.norm()
        if norm == 0:
            break
        v = (hv / norm).detach()
    return history[-1], history


def _per_sample_gradients(stack: Stack, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One gradient per sample (M x d): the M samples as M one-sample 'nodes' sharing the model w."""
    ones = torch.ones(len(y), 1, device=x.device)
    G, _ = stack.gradients(w.expand(len(y), -1), x[:, None], y[:, None], ones)
    return G


@dataclass(frozen=True)
class GradientMoments:
    """The sample mean gradient at one point and the per-sample gradient variance around it."""

    mean: torch.Tensor
    variance: float
    """v = sum_j ||g_j - g_bar||^2 / (M - 1), unbiased for E||g_1 - grad F||^2."""
    variance_se: float
    samples: int

    @property
    def norm2(self) -> float:
        """Unbiased estimate of ||grad F(w)||^2: ||g_bar||^2 - v / M (may be slightly negative)."""
        return float((self.mean.double() ** 2).sum()) - self.variance / self.samples

    def batch_variance(self, batch_size: int) -> float:
        """E||g_B - grad F||^2 for a mini-batch of B samples drawn with replacement: v / B."""
        return self.variance / batch_size


def gradient_moments(
    stack: Stack, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, chunk: int = 256
) -> GradientMoments:
    """Per-sample gradients of the loss at w over (x, y): their mean, variance and its standard error."""
    if len(y) < 2:
        raise InputError(f"{len(y)} samples cannot give a variance (expected at least 2)")
    grads = torch.cat(
        [_per_sample_gradients(stack, w, x[i : i + chunk], y[i : i + chunk]) for i in range(0, len(y), chunk)]
    )
    mean = grads.mean(0)
    deviations = ((grads - mean) ** 2).sum(1).double()
    m = len(y)
    return GradientMoments(mean, float(deviations.sum() / (m - 1)), float(deviations.std() / np.sqrt(m)), m)


def node_gradient_norm2(
    stack: Stack, X: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> tuple[float, np.ndarray]:
    """||grad F(X)||_F^2 = sum_i ||grad F(w_i)||^2 on the fixed sample (x, y), and each node's v.

    Each node's term is the unbiased estimate of :attr:`GradientMoments.norm2` (the squared norm of
    a sample mean gradient alone overestimates ||grad F||^2 by v / M); the per-node per-sample
    variances v_i come with it, so Assumption 1.5's sigma^2 can be estimated at the same points.
    """
    moments = [gradient_moments(stack, w, x, y) for w in X]
    return float(sum(m.norm2 for m in moments)), np.array([m.variance for m in moments])


@dataclass(frozen=True)
class DriftProbe:
    """The per-step measurements of one run (index t - 1 is the state X_t before step t)."""

    drift: np.ndarray
    """||X_t (I - J)||_F^2 / N for t = 1..T."""
    local: np.ndarray
    """True where step t is a local step."""
    node_grad_norm2: np.ndarray
    """||grad F(X_s)||_F^2 (unbiased estimate) at the measured local steps s, NaN elsewhere."""
    node_variance: np.ndarray
    """T x N: each node's per-sample gradient variance v_i at the measured local steps, NaN elsewhere."""
    states: list[torch.Tensor]
    """The average model u_t at t = 1, T/2 and T + 1, for estimates of L along the trajectory."""

    @property
    def local_grad_sum(self) -> float:
        """S of (103): sum over local steps of ||grad F(X_s)||_F^2 (mean of the measured ones x count)."""
        measured = self.node_grad_norm2[self.local]
        return float(np.nanmean(measured) * len(measured))


def probe_drift(
    config: RunConfig, x_eval: torch.Tensor, y_eval: torch.Tensor, grad_every: int = 1
) -> DriftProbe:
    """Run ``config`` (an exact-gossip schedule) step by step and record the measured sides of (103).

    ``grad_every = k`` measures ||grad F(X_s)||_F^2 at every k-th local step only (the others stay
    NaN); :meth:`DriftProbe.local_grad_sum` then scales the measured ones up to all local steps.
    """
    if not algorithm(config.algorithm).has_drift_bound:
        described = ", ".join(a.name for a in ALGORITHMS.values() if a.has_drift_bound)
        raise InputError(f"algorithm {config.algorithm!r} has no (103) (expected {described})")
    if isinstance(grad_every, bool) or not isinstance(grad_every, int) or grad_every < 1:
        raise InputError(f"grad_every = {grad_every!r} is not a positive integer (expected >= 1)")
    s = prepare(config)
    trainer = build_trainer(config, s)
    T = config.steps
    drift, grad = np.empty(T), np.full(T, np.nan)
    variance = np.full((T, config.nodes), np.nan)
    states = []
    local = trainer.kinds == LOCAL
    for t in range(T):
        X = trainer.X
        u = X.mean(0)
        if t in (0, T // 2):
            states.append(u.clone())
        drift[t] = float(((X - u) ** 2).sum()) / X.shape[0]
        if local[t] and int(local[:t].sum()) % grad_every == 0:
            grad[t], variance[t] = node_gradient_norm2(s.stack, X, x_eval, y_eval)
        trainer.step()
    states.append(trainer.X.mean(0))
    return DriftProbe(drift, local, grad, variance, states)
