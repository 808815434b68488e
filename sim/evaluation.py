"""The logged metrics of runs: fixed evaluation samples, and every model of every run in one batched pass.

A run's :class:`Evaluator` draws its evaluation samples once (seeded by the run's seed) and reuses them
at every logged step. :func:`evaluate_runs` computes the metrics of several runs at once (the runs of a
sweep, or one run): the average model u of each run on its training and test samples, up to four of
its nodes on the training sample, and ||grad F(u)||^2. On a GPU as one stacked forward pass over all
these models (the ``forward_stacked`` of the paper's models: grouped convolutions, batched matmuls) and
one stacked gradient, in chunks that bound the memory; on the CPU (and for models without
``forward_stacked``) model by model, u's training metrics and gradient from one pass.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import torch
from torch.func import functional_call

from sim.data import Dataset, device_key
from sim.engine import Stack
from sim.models import loss_fn

__all__ = [
    "MODEL_SAMPLES_PER_PASS",
    "MODEL_SAMPLES_PER_PASS_CUDA",
    "EvaluationSample",
    "Evaluator",
    "consensus_distance",
    "defined_accuracy",
    "evaluate_runs",
    "node_sample",
]

MODEL_SAMPLES_PER_PASS = 4096  # models x samples in one stacked forward pass (a quarter for gradients)
MODEL_SAMPLES_PER_PASS_CUDA = 8192
"""The same on a GPU, where every pass is dozens of kernel launches: when Figs. 7-10's 63 MNIST runs log
together (378 models on 2,000 samples each) 4,096 made 200 forward passes of 10 samples a model and 500
gradient passes of 4. 16,384 made 4x fewer; with each run's sample tensors cut once per chunk
(:func:`_chunks`) and one device sync per group, the evaluations of Figs. 7-10's MNIST sweep (its schedule at
1/50 of the steps, the logistic model, the GPU's code paths on the CPU, 2026-11-27) dispatch 148,000 torch
operations and 717 syncs instead of 1,282,000 and 10,038. On an H100 they took 9.3 s of that sweep at 1/5 of
its steps (30 s). 8,192, since the bmm form (:data:`sim.models.BMM_DEVICES`): its im2col matrices of a
forward pass take about 0.2 MB per MNIST model-sample and 1 MB per CIFAR-10 one (8 GB at 8,192)."""


def node_sample(nodes: int) -> range:
    """The nodes whose own models are evaluated: at most 4, evenly spaced (evaluation stays cheap)."""
    return range(0, nodes, -(-nodes // 4))


class EvaluationSample:
    """``samples`` training and test samples of a data set, drawn once by seed (without replacement)."""

    def __init__(self, data: Dataset, samples: int, seed: int, device: str) -> None:
        rng = np.random.default_rng(seed + 1)
        tr = rng.choice(len(data.y_train), size=min(samples, len(data.y_train)), replace=False)
        te = rng.choice(len(data.y_test), size=min(samples, len(data.y_test)), replace=False)
        self.x_tr, self.y_tr = data.x_train[tr].to(device), data.y_train[tr].to(device)
        self.x_te, self.y_te = data.x_test[te].to(device), data.y_test[te].to(device)


class Evaluator:
    """A run's fixed evaluation samples (``samples`` training and test samples, drawn once by seed).

    Runs of one data set with the same seed, samples and device share one copy of them while any holds it
    (:attr:`sim.data.Dataset.shared`): each run of a sweep held its own, 3.1 MB of MNIST images at the
    default 500 samples, most of a logistic-regression run's memory (4.8 MB a run, 200 runs, 2026-11-29)."""

    def __init__(self, stack: Stack, data: Dataset, samples: int, seed: int, device: torch.device) -> None:
        key = ("evaluation", samples, seed, device_key(device))
        sample = data.shared.get(key)
        if sample is None:
            sample = data.shared[key] = EvaluationSample(data, samples, seed, key[3])
        self.stack, self.sample = stack, sample  # (held: the shared copy lives while a run holds it)
        self.x_tr, self.y_tr, self.x_te, self.y_te = sample.x_tr, sample.y_tr, sample.x_te, sample.y_te

    def metrics(self, X: torch.Tensor) -> dict[str, float]:
        """The metrics of one run's node models X (N x d); see :func:`evaluate_runs`."""
        return evaluate_runs([(self, X)])[0]


def defined_accuracy(loss: float, accuracy: float) -> float:
    """``accuracy``, or NaN where the model's ``loss`` on the same samples is not finite: its outputs are
    then NaN or infinite and their argmax no prediction (a diverged run reported test accuracy 0.098, the
    share of class 0 that NaN logits all pick, as a measurement: a probe)."""
    return accuracy if math.isfinite(loss) else math.nan


def consensus_distance(X: torch.Tensor) -> float:
    """(1/N) sum_i ||x_i - u||^2, u the mean row, computed about the first row (exactly 0 when the rows are
    equal: about the rounded mean, identical CNN models at step 0 logged 1e-13, 13 decades on a log plot)."""
    D = X - X[:1]
    return float(((D - D.mean(0)) ** 2).sum() / X.shape[0])


def evaluate_runs(
    runs: list[tuple[Evaluator, torch.Tensor]], batched: bool | None = None
) -> list[dict[str, float]]:
    """Each run's metrics from its evaluator and node models X (N x d), u = the mean of X's rows:

    train_loss / train_acc (u on the training sample), test_acc (u on the test sample), node_loss /
    node_acc (the mean over :func:`node_sample` of the nodes' own models on the training sample),
    consensus (1/N sum_i ||x_i - u||^2) and grad_norm2 (||grad F(u)||^2, F the mean loss on the
    training sample).

    ``batched``: every model in one stacked pass (the default on a GPU, where one large pass keeps the
    device busy), or model by model with the plain module (the default on the CPU). On 2 cores
    (2026-11-27, MNIST CNN, 500 samples) a stacked pass cost up to twice as much with glibc's default
    allocator, which faults its large activations in afresh each time (8 runs: 3.0-3.2 s against
    1.5-2.2 s); with freed memory retained (:mod:`sim.host`, as the CLIs run) the two are close (8 runs
    1.59-1.73 s against 1.77-1.84 s, one run 0.22-0.24 s against 0.19-0.27 s), so the CPU keeps the
    path that is never slow. Both give the same metrics up to float rounding (tested).
    """
    if not runs:
        return []
    stack = runs[0][0].stack
    if batched is None:
        batched = runs[0][1].device.type == "cuda"
    models: list[torch.Tensor] = []
    inputs: list[tuple[torch.Tensor, torch.Tensor]] = []
    firsts: list[int] = []  # each run's u on its training sample
    averages = [X.mean(0) for _, X in runs]
    for (ev, X), u in zip(runs, averages, strict=True):
        firsts.append(len(models))
        nodes = node_sample(X.shape[0])
        models += [u, u, *(X[i] for i in nodes)]
        inputs += [(ev.x_tr, ev.y_tr), (ev.x_te, ev.y_te), *((ev.x_tr, ev.y_tr) for _ in nodes)]
    if batched and stack.forward_stacked is not None:
        losses, accuracies = _losses_and_accuracies(stack, models, inputs)
        grads = _gradient_norms2(stack, models, inputs, firsts)
    else:
        losses, accuracies, grads = _model_by_model(stack, models, inputs, firsts)
    accuracies = [defined_accuracy(loss, acc) for loss, acc in zip(losses, accuracies, strict=True)]
    out = []
    for (_, X), k in zip(runs, firsts, strict=True):
        n_nodes = len(node_sample(X.shape[0]))
        out.append(
            {
                "train_loss": losses[k],
                "train_acc": accuracies[k],
                "test_acc": accuracies[k + 1],
                "node_loss": float(np.mean(losses[k + 2 : k + 2 + n_nodes])),
                "node_acc": float(np.mean(accuracies[k + 2 : k + 2 + n_nodes])),
                "consensus": consensus_distance(X),
                "grad_norm2": grads[k],
            }
        )
    return out


def _groups(inputs: list[tuple[torch.Tensor, torch.Tensor]], chosen: list[int]) -> dict[int, list[int]]:
    """The chosen models grouped by their number of samples (one stacked pass per group)."""
    groups: dict[int, list[int]] = {}
    for i in chosen:
        groups.setdefault(len(inputs[i][1]), []).append(i)
    return groups


@torch.no_grad()
def _model_by_model(
    stack: Stack,
    models: list[torch.Tensor],
    inputs: list[tuple[torch.Tensor, torch.Tensor]],
    with_gradient: list[int],
) -> tuple[list[float], list[float], dict[int, float]]:
    """Loss and accuracy of each model on its own samples with the plain module, one model at a time;
    for the models in ``with_gradient`` also ||grad||^2, from the same forward pass."""
    losses, accuracies, norms = [0.0] * len(models), [0.0] * len(models), {}
    for i, (w, (x, y)) in enumerate(zip(models, inputs, strict=True)):
        if i in with_gradient:
            losses[i], accuracies[i], norms[i] = _loss_accuracy_gradient(stack, w, x, y)
        else:
            losses[i], accuracies[i] = stack.evaluate(w, x, y)
    return losses, accuracies, norms


def _loss_accuracy_gradient(
    stack: Stack, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> tuple[float, float, float]:
    """Mean loss, accuracy and ||grad of the mean loss||^2 of the model w (d,) on (x, y): one forward pass
    (the metrics of u on the training sample need all three)."""
    params = {k: v.detach().requires_grad_(True) for k, v in stack.unflatten(w).items()}
    with torch.enable_grad():
        logits = functional_call(stack.module, params, (x,))
        loss = loss_fn(stack.module, logits, y)
        grads = torch.autograd.grad(loss, list(params.values()))
    correct = int((logits.detach().argmax(-1) == y).sum())
    return float(loss), correct / len(y), float(sum(float((g.double() ** 2).sum()) for g in grads))


@torch.no_grad()
def _losses_and_accuracies(
    stack: Stack, models: list[torch.Tensor], inputs: list[tuple[torch.Tensor, torch.Tensor]]
) -> tuple[list[float], list[float]]:
    """Mean loss and accuracy of each model (d,) on its own samples, stacked passes."""
    losses, accuracies = [0.0] * len(models), [0.0] * len(models)
    stacked = stack.forward_stacked
    assert stacked is not None  # (the caller checked)
    for size, members in _groups(inputs, list(range(len(models)))).items():
        W = torch.stack([models[i] for i in members])
        params = stack.unflatten(W)
        m = len(members)
        chunk = max(1, _samples_per_pass(W) // m)
        loss_sum = torch.zeros(m, dtype=torch.float64, device=W.device)
        correct = torch.zeros(m, dtype=torch.int64, device=W.device)
        for x, y in _chunks(inputs, members, size, chunk):
            logits = stacked(params, x, stack.form)
            c = y.shape[1]
            per_sample = loss_fn(stack.module, logits.reshape(m * c, -1), y.reshape(-1), reduce=False)
            loss_sum += per_sample.reshape(m, c).double().sum(1)
            correct += (logits.argmax(-1) == y).sum(1)
        for i, loss, right in zip(members, loss_sum.tolist(), correct.tolist(), strict=True):  # one sync
            losses[i], accuracies[i] = loss / size, right / size
    return losses, accuracies


def _samples_per_pass(W: torch.Tensor) -> int:
    return MODEL_SAMPLES_PER_PASS_CUDA if W.device.type == "cuda" else MODEL_SAMPLES_PER_PASS


def _chunks(
    inputs: list[tuple[torch.Tensor, torch.Tensor]], members: list[int], size: int, chunk: int
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The members' samples, ``chunk`` at a time, as (models, chunk, ...) inputs and (models, chunk) labels.
    A run's models share its sample tensors (u and its nodes on the training sample), so each distinct
    tensor is cut once per chunk and the members' rows are gathered from those (2 cuts a run, not 6)."""
    sources: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor]] = {}  # distinct, first seen first
    for i in members:
        sources.setdefault((id(inputs[i][0]), id(inputs[i][1])), inputs[i])
    position = {key: k for k, key in enumerate(sources)}
    rows = [position[(id(inputs[i][0]), id(inputs[i][1]))] for i in members]
    row = torch.tensor(rows, device=inputs[members[0]][1].device)
    for start in range(0, size, chunk):
        x = torch.stack([xs[start : start + chunk] for xs, _ in sources.values()])
        y = torch.stack([ys[start : start + chunk] for _, ys in sources.values()])
        yield (x, y) if len(sources) == len(members) else (x[row], y[row])


def _gradient_norms2(
    stack: Stack,
    models: list[torch.Tensor],
    inputs: list[tuple[torch.Tensor, torch.Tensor]],
    chosen: list[int],
) -> dict[int, float]:
    """||grad of the mean loss||^2 of each chosen model on its own samples (one stacked gradient per
    chunk of samples; chunk means weighted by their sizes)."""
    norms: dict[int, float] = {}
    for size, members in _groups(inputs, chosen).items():
        W = torch.stack([models[i] for i in members])
        m = len(members)
        chunk = max(1, _samples_per_pass(W) // (4 * m))
        G = torch.zeros_like(W)
        for x, y in _chunks(inputs, members, size, chunk):
            g, _ = stack.gradients(W, x, y, torch.ones(y.shape, device=y.device))
            G += g * (y.shape[1] / size)
        norms.update(zip(members, (G.double() ** 2).sum(1).tolist(), strict=True))  # one sync
    return norms
