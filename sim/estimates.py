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
* :func:`probe_heterogeneity`: the same for non-i.i.d. data, with the constants of the
  heterogeneity-aware drift term (sigma^2 at the nodes' models, varsigma^2 at the average model,
  both from per-sample gradients on each node's own data) at a few local steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from bounds._checks import InputError, whole_number
from sim.algorithms import ALGORITHMS, LOCAL, algorithm
from sim.config import RunConfig
from sim.engine import Stack
from sim.evaluation import consensus_distance
from sim.setup import Setup, build_trainer, prepare
from sim.sweep import build_engine
from sim.trainer import Trainer

__all__ = [
    "DriftProbe",
    "GradientMoments",
    "HeterogeneityProbe",
    "gradient_moments",
    "gradient_moments_of_rows",
    "hessian_norm",
    "node_gradient_norm2",
    "node_samples",
    "noise_and_heterogeneity",
    "probe_drift",
    "probe_heterogeneity",
    "probe_heterogeneity_runs",
]


def _flat_loss(stack: Stack, x: torch.Tensor, y: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
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


def _per_sample_gradients(stack: Stack, W: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One gradient per sample (M x d): the M samples as M one-sample 'nodes', sample j at the model W[j]."""
    ones = torch.ones(len(y), 1, device=x.device)
    G, _ = stack.gradients(W, x[:, None], y[:, None], ones)
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
    return gradient_moments_of_rows(stack, w[None], x[None], y[None], chunk)[0]


GRADIENT_ENTRIES = 2**26
"""The most per-sample gradient entries (samples x d) :func:`gradient_moments_of_rows` holds at once."""


def gradient_moments_of_rows(
    stack: Stack, W: torch.Tensor, x: torch.Tensor, y: torch.Tensor, chunk: int = 256
) -> list[GradientMoments]:
    """:func:`gradient_moments` of every model W[i] (k x d) on its own M samples x[i], y[i] (k x M x ...):
    the per-sample gradients of all models from stacked calls of ``chunk`` samples each (several models'
    samples in one call), their moments read back from the device once."""
    k, m = y.shape[:2]
    if m < 2:
        raise InputError(f"{m} samples cannot give a variance (expected at least 2)")
    per_pass = max(1, GRADIENT_ENTRIES // (m * W.shape[1]))  # models whose gradients are held at once
    means, deviations = [], []
    for first in range(0, k, per_pass):
        rows = W[first : first + per_pass]
        owner = torch.arange(len(rows), device=W.device).repeat_interleave(m)
        xs, ys = x[first : first + len(rows)].flatten(0, 1), y[first : first + len(rows)].flatten(0, 1)
        grads = torch.cat(
            [
                _per_sample_gradients(stack, rows[owner[i : i + chunk]], xs[i : i + chunk], ys[i : i + chunk])
                for i in range(0, len(ys), chunk)
            ]
        ).reshape(len(rows), m, -1)
        mean = grads.mean(1)
        means.append(mean)
        deviations.append(((grads - mean[:, None]) ** 2).sum(2).double())
    dev = torch.cat(deviations)
    variance = (dev.sum(1) / (m - 1)).cpu().numpy()
    se = (dev.std(1) / np.sqrt(m)).cpu().numpy()
    mean = torch.cat(means)
    return [GradientMoments(mean[i], float(variance[i]), float(se[i]), m) for i in range(k)]


def node_gradient_norm2(
    stack: Stack, X: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> tuple[float, np.ndarray]:
    """||grad F(X)||_F^2 = sum_i ||grad F(w_i)||^2 on the fixed sample (x, y), and each node's v.

    Each node's term is the unbiased estimate of :attr:`GradientMoments.norm2` (the squared norm of
    a sample mean gradient alone overestimates ||grad F||^2 by v / M); the per-node per-sample
    variances v_i come with it, so Assumption 1.5's sigma^2 can be estimated at the same points.
    """
    k = X.shape[0]
    moments = gradient_moments_of_rows(stack, X, x.expand(k, *x.shape), y.expand(k, *y.shape))
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


def _needs_drift_bound(config: RunConfig, bound: str) -> None:
    """Only exact-gossip schedules have a drift bound."""
    if not algorithm(config.algorithm).has_drift_bound:
        described = ", ".join(a.name for a in ALGORITHMS.values() if a.has_drift_bound)
        raise InputError(f"algorithm {config.algorithm!r} has no {bound} (expected {described})")


def _probed_run(config: RunConfig, bound: str) -> tuple[Setup, Trainer]:
    """The prepared run and trainer of a probe (an exact-gossip schedule)."""
    _needs_drift_bound(config, bound)
    s = prepare(config)
    return s, build_trainer(config, s)


def probe_drift(
    config: RunConfig, x_eval: torch.Tensor, y_eval: torch.Tensor, grad_every: int = 1
) -> DriftProbe:
    """Run ``config`` (an exact-gossip schedule) step by step and record the measured sides of (103).

    ``grad_every = k`` measures ||grad F(X_s)||_F^2 at every k-th local step only (the others stay
    NaN); :meth:`DriftProbe.local_grad_sum` then scales the measured ones up to all local steps.
    """
    grad_every = whole_number("grad_every", grad_every, low=1)
    s, trainer = _probed_run(config, "(103)")
    T = config.steps
    drift, grad = np.empty(T), np.full(T, np.nan)
    variance = np.full((T, config.nodes), np.nan)
    states = []
    local = trainer.kinds == LOCAL
    for t in range(T):
        X = trainer.X
        if t in (0, T // 2):
            states.append(X.mean(0))
        drift[t] = consensus_distance(X)
        if local[t] and int(local[:t].sum()) % grad_every == 0:
            grad[t], variance[t] = node_gradient_norm2(s.stack, X, x_eval, y_eval)
        trainer.step()
    states.append(trainer.X.mean(0))
    return DriftProbe(drift, local, grad, variance, states)


@dataclass(frozen=True)
class HeterogeneityProbe:
    """One non-i.i.d. run step by step: the drift at every step, the noise and heterogeneity at a few points.

    ``sigma2[k]`` is the mean over the nodes of the mini-batch noise E||g_i - grad f_i(w_i)||^2 =
    v_i / B at measured point k (v_i: the per-sample gradient variance on node i's own data at its
    model); the derivation needs (1/N) sum_i of it, so the mean over nodes is the right constant.
    ``varsigma2[k]`` is the unbiased estimate of (1/N) sum_i ||grad f_i(u) - grad F(u)||^2 at the
    average model u, grad f_i from M samples of node i's data and grad F = (1/N) sum_i grad f_i;
    ``varsigma2_noise[k]`` is the sampling-noise part it subtracted, (1/N)(1 - 1/N) sum_i v_i / M: an
    estimate much larger than it is well resolved.
    """

    drift: np.ndarray
    local: np.ndarray
    points: list[int]
    sigma2: np.ndarray
    sigma2_se: np.ndarray
    varsigma2: np.ndarray
    varsigma2_noise: np.ndarray
    states: list[torch.Tensor]
    """The average model u at the first and the last measured point, for estimates of L."""
    second_moment: float
    """max_t ||X_t||_F^2 / N: the scale of the parameters (the drift's rounding floor is eps^2 times it)."""

    @property
    def local_drift_mean(self) -> float:
        """Mean over the local steps of ||X_t (I - J)||_F^2 / N: the quantity the repair bounds (/ L^2)."""
        return float(self.drift[self.local].mean())


def noise_and_heterogeneity(
    stack: Stack, X: torch.Tensor, x: torch.Tensor, y: torch.Tensor, own: list[np.ndarray], batch_size: int
) -> tuple[float, float, float, float]:
    """(sigma^2, its standard error, varsigma^2, the sampling noise subtracted from it) at the models X.

    sigma^2: the nodes' mean mini-batch noise v_i / B, v_i the per-sample gradient variance on node i's
    samples ``own[i]`` at its model X_i (0 for full local batches, B = 0). varsigma^2: the unbiased
    estimate of (1/N) sum_i ||grad f_i(u) - grad F(u)||^2 at u = mean of X, with grad f_i from node i's
    samples and grad F = (1/N) sum_i grad f_i: the spread of the sample means minus
    (1/N)(1 - 1/N) sum_i v_i / M_i, the part their sampling noise adds (returned as the last value).
    """
    n = X.shape[0]
    index = torch.as_tensor(np.stack(own), device=x.device)  # (N, M): node i's samples
    at_nodes = gradient_moments_of_rows(stack, X, x[index], y[index])
    v = np.array([m.variance for m in at_nodes])
    se = np.array([m.variance_se for m in at_nodes])
    sigma2 = float(v.mean() / batch_size) if batch_size else 0.0
    sigma2_se = float(np.sqrt((se**2).sum()) / n / batch_size) if batch_size else 0.0
    u = X.mean(0)
    at_u = gradient_moments_of_rows(stack, u.expand(n, -1), x[index], y[index])
    means = torch.stack([m.mean.double() for m in at_u])
    noise = (1 - 1 / n) * sum(m.variance / m.samples for m in at_u) / n
    return sigma2, sigma2_se, float(((means - means.mean(0)) ** 2).sum()) / n - noise, noise


def node_samples(parts: list[np.ndarray], samples: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``samples`` indices of each node's own data, drawn with replacement from ``rng``."""
    return [rng.choice(part, size=samples, replace=True) for part in parts]


def probe_heterogeneity(config: RunConfig, samples: int = 64, points: int = 3) -> HeterogeneityProbe:
    """Run ``config`` (exact gossip) step by step: the drift at every step; at ``points`` local steps spread
    over the run, each node's noise v_i / B at its model and the heterogeneity at the average model."""
    return probe_heterogeneity_runs([config], samples, points)[0]


def probe_heterogeneity_runs(
    configs: Sequence[RunConfig],
    samples: int = 64,
    points: int = 3,
    done: Callable[[int, HeterogeneityProbe], None] | None = None,
) -> list[HeterogeneityProbe]:
    """:func:`probe_heterogeneity` of every config, the runs stacked in one sweep
    (:class:`~sim.sweep.SweepEngine`: one gradient call and one block-diagonal gossip per step for all
    runs, each run's trajectory its own up to float rounding). The configs share what a sweep shares
    (:data:`~sim.config.SHARED_FIELDS`). Each run's drift stays on the device until the run ends; then
    ``done(r, probe)`` is called with configs[r]'s probe (a caller saves it there, so a sweep stopped
    midway keeps the runs already ended)."""
    samples = whole_number("samples", samples, low=2)
    for config in configs:
        _needs_drift_bound(config, "drift bound")
    engine, setups = build_engine(configs)
    lanes = engine.lanes
    locals_ = [lane.trainer.kinds == LOCAL for lane in lanes]
    chosen = []
    for local in locals_:
        steps = np.flatnonzero(local)
        spread = np.linspace(0, len(steps) - 1, max(points, 1)).round().astype(int)
        chosen.append(sorted({int(steps[k]) for k in spread}))
    own = [
        node_samples(s.parts, samples, np.random.default_rng(c.seed + 7))
        for c, s in zip(configs, setups, strict=True)
    ]
    x_all, y_all = engine.x_train, engine.y_train
    measured: list[list[tuple[float, float, float, float]]] = [[] for _ in lanes]
    states: list[list[torch.Tensor]] = [[] for _ in lanes]
    length = [len(lane.trainer.kinds) for lane in lanes]
    drift = torch.zeros(len(lanes), max(length, default=0), dtype=torch.float64, device=engine.X.device)
    second = torch.zeros_like(drift)  # both filled step by step on the device, read back once per run
    probes: list[HeterogeneityProbe | None] = [None] * len(lanes)

    def finish(i: int) -> None:
        sigma2, sigma2_se, varsigma2, noise = (np.array(v) for v in zip(*measured[i], strict=True))
        probes[i] = probe = HeterogeneityProbe(
            drift[i, : length[i]].cpu().numpy(), locals_[i], chosen[i], sigma2, sigma2_se, varsigma2, noise,
            [states[i][0], states[i][-1]], float(second[i, : length[i]].max()),
        )  # fmt: skip
        if done:
            done(i, probe)

    active = [lane for lane in lanes if lane.t < length[lane.index]]
    index = torch.tensor([lane.index for lane in active], device=drift.device)  # sent again when runs end
    while active:
        t = active[0].t  # every run starts at 0 and steps together
        drift[index, t], second[index, t] = (v.double() for v in engine.spread(active))
        for lane in active:
            if lane.t in chosen[lane.index]:
                X, i = lane.X, lane.index
                measured[i].append(
                    noise_and_heterogeneity(setups[i].stack, X, x_all, y_all, own[i], configs[i].batch_size)
                )
                states[i].append(X.mean(0).clone())
        engine.step(active)
        ended = [lane for lane in active if lane.t == length[lane.index]]
        for lane in ended:
            finish(lane.index)
        if ended:
            active = [lane for lane in active if lane.t < length[lane.index]]
            index = torch.tensor([lane.index for lane in active], device=drift.device)
    return probes  # type: ignore[return-value]  # every run has a step (RunConfig.validate), so ended
