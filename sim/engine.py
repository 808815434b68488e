"""The vectorised engine: N node models as one (N, d) parameter matrix X.

All nodes' stochastic gradients come from one call, ``vmap(grad(loss))`` over
``functional_call``; a gossip step is one matrix product with C (dense, or sparse
for large N). Rows are nodes, so the paper's X_{t+1} = X_t C (columns = nodes) is
``X = C @ X`` here (C is symmetric).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from bounds import InputError
from sim.data import device_key
from sim.models import check_stacked_form, loss_fn
from sim.partition import NodeParts

__all__ = [
    "EVAL_CHUNK_CPU",
    "EVAL_CHUNK_CUDA",
    "SAMPLES_PER_CALL_CUDA",
    "BatchSampler",
    "Sampler",
    "Stack",
    "full_batch",
    "sampler_layout",
]

EVAL_CHUNK_CPU = 512  # samples per evaluation pass on the CPU: MNIST CNN on its 10,000 test samples,
# 2 cores: 0.58 s in chunks of 512 against 1.70 s in chunks of 4,096 (the caches overflow); CIFAR-10 CNN
# on 4,096 samples 2.11 s against 2.17 s (2026-11-26)
EVAL_CHUNK_CUDA = 4096  # a GPU keeps busy with large passes
SAMPLES_PER_CALL_CUDA = 8192  # node mini-batch samples per stacked gradient call on a GPU: a sweep cuts
# its calls by whole runs (sim.sweep), Stack.gradients a larger call (a single run's) by rows. The bmm form of
# the stacked CNNs (sim.models.BMM_DEVICES) keeps each layer's im2col matrix for the backward pass: 0.28 MB
# per MNIST sample and 1.1 MB per CIFAR-10 sample saved (against 0.13 and 0.38 for the grouped convolutions;
# measured on the CPU, 2026-11-27), about 0.5 and 1.5 MB at the peak of a call, so a call of 8,192 takes
# about 4 and 12 GB, and Figs. 7-10's 630 MNIST nodes x 32 make three calls a step. Larger calls were no
# faster (bench on an H100, grouped convolutions: N = 1000 x 32, 21,410 node-steps/s, N = 100, 23,984). A
# 400-run probe sweep ran out of memory (2026-11-27) because every run held its own copy of the training
# set on the GPU (75 GB); the runs share one now (Dataset.train_on)


StackedForward: TypeAlias = Callable[[dict[str, torch.Tensor], torch.Tensor, str | None], torch.Tensor]
"""A model's ``forward_stacked(params, x, form)``: N models' logits from (N, ...) parameters and inputs."""


class Stack:
    """Flattening between a module's parameters and rows of X, and batched losses/gradients."""

    def __init__(self, module: nn.Module, form: str | None = None) -> None:
        """``form``: how the stacked CNNs compute the nodes' convolutions in :meth:`gradients` and in the
        batched evaluation, one of :data:`sim.models.STACKED_FORMS` (None: the device's default,
        :func:`sim.models.stacked_form_default`; the gradients are the same up to float rounding). The
        one-model passes (:meth:`evaluate`, :meth:`gradients_vmap`) follow the module's own
        ``channels_last`` (:class:`sim.models.MnistCNN`)."""
        check_stacked_form(form)
        self.module = module
        self.form = form
        self.forward_stacked: StackedForward | None = getattr(module, "forward_stacked", None)
        """All nodes' models in one pass (the paper's CNNs, logreg, lstsq); None: vmap per node."""
        named = list(module.named_parameters())
        self.names = [n for n, _ in named]
        self.shapes = [tuple(p.shape) for _, p in named]
        self.sizes = [p.numel() for _, p in named]
        self.d = sum(self.sizes)

        def loss(
            params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, w: torch.Tensor
        ) -> torch.Tensor:
            return loss_fn(module, functional_call(module, params, (x,)), y, w)

        self._loss = loss
        self._grads = vmap(grad_and_value(loss))

    def flatten(self, module: nn.Module) -> torch.Tensor:
        """A module's parameters as one vector of length d."""
        return torch.cat([p.detach().reshape(-1) for p in module.parameters()])

    def unflatten(self, X: torch.Tensor) -> dict[str, torch.Tensor]:
        """Rows of X (N x d) as a dict of (N, *shape) views; a vector (d,) gives (*shape) views."""
        lead = X.shape[:-1]
        pieces = X.split(self.sizes, dim=-1)
        return {n: t.reshape(*lead, *s) for n, t, s in zip(self.names, pieces, self.shapes, strict=True)}

    def gradients(
        self,
        X: torch.Tensor,
        x: torch.Tensor,
        y: torch.Tensor,
        w: torch.Tensor,
        samples_per_call: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each node's mini-batch gradient and loss: G (N x d), losses (N,). x: (N, B, ...).

        Models with a ``forward_stacked`` (the paper's CNNs, logreg, lstsq) run all nodes as one
        stacked forward pass (:data:`sim.models.STACKED_FORMS`) and differentiate the sum of the node
        losses with respect to X directly (node i's loss depends only on row i). Other models use
        ``vmap(grad(...))``. Both give the same gradients (tested).

        ``samples_per_call``: the most node samples (rows x B) one pass takes; more are cut by rows, which
        changes nothing but the memory (the rows are independent). None: SAMPLES_PER_CALL_CUDA on a GPU
        (a single run of 1,000 CIFAR-10 nodes x 32 would otherwise keep about 36 GB of im2col matrices),
        no cut elsewhere.
        """
        if samples_per_call is None and X.device.type == "cuda":
            samples_per_call = SAMPLES_PER_CALL_CUDA
        rows = X.shape[0] if samples_per_call is None else max(1, samples_per_call // max(1, x.shape[1]))
        if X.shape[0] <= rows:
            return self._gradients(X, x, y, w)
        parts = [self._gradients(X[i : i + rows], x[i : i + rows], y[i : i + rows], w[i : i + rows])
                 for i in range(0, X.shape[0], rows)]  # fmt: skip
        return torch.cat([G for G, _ in parts]), torch.cat([losses for _, losses in parts])

    def _gradients(
        self, X: torch.Tensor, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`gradients` in one pass."""
        if self.forward_stacked is None:
            return self.gradients_vmap(X, x, y, w)
        with torch.enable_grad():
            Xg = X.detach().requires_grad_(True)
            losses = self.stacked_losses(Xg, x, y, w)
            (G,) = torch.autograd.grad(losses.sum(), Xg)
        return G, losses.detach()

    def stacked_losses(
        self, X: torch.Tensor, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor
    ) -> torch.Tensor:
        """Each node's weighted-mean mini-batch loss (N,) from one stacked forward pass of the module's
        ``forward_stacked`` in this Stack's form: the function :meth:`gradients` differentiates (and
        ``dfl-sim bench`` compiles, :func:`sim.bench.compiled_step_benchmark`)."""
        if self.forward_stacked is None:
            raise TypeError(f"{type(self.module).__name__} has no forward_stacked (expected a stacked model)")
        logits = self.forward_stacked(self.unflatten(X), x, self.form)
        return _node_losses(self.module, logits, y, w)

    def gradients_vmap(
        self, X: torch.Tensor, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The generic path, ``vmap(grad_and_value(loss))`` over functional_call (any model)."""
        grads, losses = self._grads(self.unflatten(X), x, y, w)
        return torch.cat([grads[n].reshape(X.shape[0], -1) for n in self.names], dim=1), losses

    @torch.no_grad()
    def evaluate(
        self, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, chunk: int | None = None
    ) -> tuple[float, float]:
        """Mean loss and accuracy of the single model w (d,) on (x, y), ``chunk`` samples per forward pass
        (None: EVAL_CHUNK_CPU on the CPU, EVAL_CHUNK_CUDA elsewhere)."""
        if chunk is None:
            chunk = EVAL_CHUNK_CPU if x.device.type == "cpu" else EVAL_CHUNK_CUDA
        params = self.unflatten(w)
        total_loss, correct = 0.0, 0
        for start in range(0, len(y), chunk):
            xb, yb = x[start : start + chunk], y[start : start + chunk]
            logits = functional_call(self.module, params, (xb,))
            total_loss += float(loss_fn(self.module, logits, yb)) * len(yb)
            correct += int((logits.argmax(-1) == yb).sum())
        return total_loss / len(y), correct / len(y)

    def full_gradient_norm2(self, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> float:
        """||grad F(w)||^2 with F the mean loss over (x, y)."""
        g, _ = grad_and_value(self._loss)(self.unflatten(w), x, y, torch.ones(len(y), device=x.device))
        return float(sum((t**2).sum() for t in g.values()))


def _node_losses(module: nn.Module, logits: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Each node's weighted-mean loss from stacked logits (N, B, classes): one loss_fn call."""
    n, b = y.shape
    per_sample = loss_fn(module, logits.reshape(n * b, -1), y.reshape(-1), None, reduce=False).reshape(n, b)
    return (per_sample * w).sum(1) / w.sum(1)


def pick(u: torch.Tensor, flat: torch.Tensor, offsets: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """Sample indices from uniform draws u (rows x B): row i draws uniformly with replacement from its
    part ``flat[offsets[i] : offsets[i] + sizes[i]]``."""
    local = (u * sizes[:, None]).long().clamp_max(sizes[:, None] - 1)
    return flat[offsets[:, None] + local]


class Sampler(Protocol):
    """A run's mini-batch stream as a trainer and the checkpoints use it: :class:`BatchSampler`, or a
    distributed rank's slice of it (:class:`sim.distributed.RowSampler`)."""

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Each node's sample indices and weights for one local step."""
        ...

    def state(self) -> torch.Tensor:
        """The stream's random state, for a checkpoint."""
        ...

    def restore(self, state: torch.Tensor) -> None:
        """Continue from a checkpoint's :meth:`state`."""
        ...


def sampler_layout(
    parts: list[np.ndarray], device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """What a :class:`BatchSampler` of ``parts`` draws through on ``device``: (flat, offsets, sizes), the
    nodes' parts concatenated, where each starts and its size. Built once per device for shared parts
    (:class:`sim.partition.NodeParts`), whose samplers then share it."""

    def build() -> tuple[torch.Tensor, ...]:
        sizes = np.array([len(p) for p in parts])
        flat, offsets = np.concatenate(parts), np.concatenate([[0], np.cumsum(sizes)[:-1]])
        return tuple(torch.from_numpy(a).to(device) for a in (flat, offsets, sizes))

    flat, offsets, sizes = _layout_memo(parts, device, "flat", build)
    return flat, offsets, sizes


def full_batch(parts: list[np.ndarray], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """A full-batch step's (indices, 0/1 weights), N x the largest part: each node's part, repeated to that
    width, the repeats weighted 0 (each node's loss is the mean over its own samples); shared as
    :func:`sampler_layout` is."""

    def build() -> tuple[torch.Tensor, ...]:
        flat, offsets, sizes = sampler_layout(parts, device)
        width = max(len(p) for p in parts)
        j = torch.arange(width, device=device).expand(len(parts), width)
        return flat[offsets[:, None] + j % sizes[:, None]], (j < sizes[:, None]).to(torch.float32)

    indices, weights = _layout_memo(parts, device, "full", build)
    return indices, weights


def _layout_memo(
    parts: list[np.ndarray], device: torch.device, kind: str, build: Callable[[], tuple[torch.Tensor, ...]]
) -> tuple[torch.Tensor, ...]:
    """``build()``, kept in shared parts' ``layouts`` under (device, kind) (plain lists: built each time)."""
    if not isinstance(parts, NodeParts):
        return build()
    key = (device_key(device), kind)
    if key not in parts.layouts:
        parts.layouts[key] = build()
    return parts.layouts[key]


@dataclass
class BatchSampler:
    """Each node's mini-batch indices, drawn uniformly with replacement from its own part.

    ``batch_size = 0`` means the whole local data every step (padded to the largest part,
    with a 0/1 weight so that every node's loss is the mean over its own samples).
    """

    parts: list[np.ndarray]
    batch_size: int
    seed: int
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    def __post_init__(self) -> None:
        self._check()
        self._flat, self._offsets, self._sizes = sampler_layout(self.parts, self.device)
        self.gen = torch.Generator(device=self.device).manual_seed(self.seed)
        self._width = max(len(p) for p in self.parts)  # the padded full batch, read without a device sync
        if self.batch_size == 0:
            self._full = full_batch(self.parts, self.device)

    def _check(self) -> None:
        """InputError for what would draw wrong samples: an empty part drew another node's samples (its
        offset is the next part's), a negative batch size failed inside torch, a float index or a list
        of lists was cast."""
        expected = "expected an integer >= 0; 0 = the full batch"
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int | np.integer):
            raise InputError(f"batch_size = {self.batch_size!r} is not an integer ({expected})")
        if self.batch_size < 0:
            raise InputError(f"batch_size = {self.batch_size} is out of range ({expected})")
        if not len(self.parts):
            raise InputError("parts is empty (expected one array of sample indices per node)")
        for i, part in enumerate(self.parts):
            part = np.asarray(part)
            if part.ndim != 1 or not np.issubdtype(part.dtype, np.integer):
                raise InputError(f"parts[{i}] holds {part.dtype} of shape {part.shape} (expected a 1-d array "
                                 "of integer sample indices)")  # fmt: skip
            if part.size == 0:
                raise InputError(f"parts[{i}] is empty (expected every node to hold at least one sample)")
            if part.min() < 0:
                raise InputError(f"parts[{i}] holds the index {part.min()} (expected indices >= 0)")

    @property
    def layout(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(flat, offsets, sizes): the nodes' parts concatenated, where each starts, and its size."""
        return self._flat, self._offsets, self._sizes

    @property
    def width(self) -> int:
        """Samples per node per step: the batch size, or the largest part (padded) for full batches."""
        return self.batch_size or self._width

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Global sample indices (N x B) and weights (N x B) for one step."""
        if self.batch_size == 0:
            return self._full
        idx = pick(self.uniforms(), self._flat, self._offsets, self._sizes)
        return idx, torch.ones(idx.shape, device=self.device)

    def uniforms(self) -> torch.Tensor:
        """This step's N x B uniform draws from the sampler's own stream (:meth:`next` maps them through
        :func:`pick`; a sweep maps many samplers' draws at once)."""
        return torch.rand(len(self.parts), self.batch_size, generator=self.gen, device=self.device)

    def state(self) -> torch.Tensor:
        return self.gen.get_state()

    def restore(self, state: torch.Tensor) -> None:
        self.gen.set_state(state)
