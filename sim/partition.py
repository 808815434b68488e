"""Partitions of the training set across N nodes (one small class per scheme, seeded).

The test set is never partitioned: it stays whole and i.i.d.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from bounds import InputError
from bounds._checks import real_number, whole_number, whole_numbers

if TYPE_CHECKING:  # (sim.config imports this module: the CLIs' --help answers without torch)
    import torch

__all__ = ["IID", "PARTITIONS", "Dirichlet", "Given", "NodeParts", "Shards", "make_partition"]


def _check(labels: np.ndarray, nodes: int, rng: np.random.Generator) -> int:
    """The arguments every ``split`` takes: one label per sample, a whole number of nodes (returned as an
    int: 4.0 or numpy's 4 are taken), a generator."""
    if not isinstance(labels, np.ndarray) or labels.ndim != 1:
        what = f"of shape {labels.shape}" if isinstance(labels, np.ndarray) else f"a {type(labels).__name__}"
        raise InputError(f"labels {what} (expected a 1-d numpy array, one label per training sample)")
    nodes = whole_number("nodes", nodes, low=1)
    if not isinstance(rng, np.random.Generator):
        raise InputError(f"rng = {rng!r} is not a numpy Generator (expected numpy.random.default_rng(seed))")
    if nodes > len(labels):
        raise InputError(
            f"nodes = {nodes} exceeds the {len(labels)} training samples (expected nodes <= samples)"
        )
    return nodes


@dataclass(frozen=True)
class IID:
    """Shuffle, then split into N near-equal parts."""

    def split(self, labels: np.ndarray, nodes: int, rng: np.random.Generator) -> list[np.ndarray]:
        nodes = _check(labels, nodes, rng)
        return [np.sort(p) for p in np.array_split(rng.permutation(len(labels)), nodes)]


@dataclass(frozen=True)
class Shards:
    """The paper's non-i.i.d. split: sort by label, cut into ``shards_per_node * N`` shards, deal them out."""

    shards_per_node: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "shards_per_node", whole_number("shards_per_node", self.shards_per_node, low=1)
        )

    def split(self, labels: np.ndarray, nodes: int, rng: np.random.Generator) -> list[np.ndarray]:
        nodes = _check(labels, nodes, rng)
        if self.shards_per_node * nodes > len(labels):  # (>= 1: __post_init__)
            raise InputError(
                f"shards_per_node = {self.shards_per_node} does not fit {len(labels)} samples on "
                f"{nodes} nodes (expected 1 <= shards_per_node * nodes <= samples)"
            )
        order = np.argsort(labels, kind="stable")
        shards = np.array_split(order, self.shards_per_node * nodes)
        dealt = rng.permutation(len(shards)).reshape(nodes, self.shards_per_node)
        return [np.sort(np.concatenate([shards[s] for s in row])) for row in dealt]


MAX_DIRICHLET_ALPHA = 1e300
"""The largest Dirichlet alpha a partition takes (beyond it numpy's draw of N proportions fails)."""


@dataclass(frozen=True)
class Dirichlet:
    """Per class, proportions across nodes drawn from Dirichlet(alpha); every node keeps >= 1 sample."""

    alpha: float = 0.5

    def __post_init__(self) -> None:
        # (above about 3.6e307 / N numpy's draw is all zeros: alpha = 1e308 put 996 of 1,000 samples on one
        # node of 5, a probe; at 1e300 the split is already even to 16 digits)
        object.__setattr__(
            self, "alpha", real_number("alpha", self.alpha, low=0, low_open=True, high=MAX_DIRICHLET_ALPHA)
        )

    def split(self, labels: np.ndarray, nodes: int, rng: np.random.Generator) -> list[np.ndarray]:
        nodes = _check(labels, nodes, rng)
        parts: list[list[int]] = [[] for _ in range(nodes)]
        for c in np.unique(labels):
            members = rng.permutation(np.flatnonzero(labels == c))
            cuts = (np.cumsum(rng.dirichlet(np.full(nodes, self.alpha))) * len(members)).astype(int)[:-1]
            for node, chunk in enumerate(np.split(members, cuts)):
                parts[node].extend(chunk.tolist())
        for node in range(nodes):  # move one sample to any empty node, from the largest
            if not parts[node]:
                donor = max(range(nodes), key=lambda i: len(parts[i]))
                parts[node].append(parts[donor].pop())
        return [np.sort(np.asarray(p, dtype=np.int64)) for p in parts]


@dataclass(frozen=True)
class Given:
    """The node of each sample is given (e.g. the ``node`` array of an npz data set)."""

    node: np.ndarray

    def split(self, labels: np.ndarray, nodes: int, rng: np.random.Generator) -> list[np.ndarray]:
        nodes = _check(labels, nodes, rng)
        node = np.asarray(self.node)
        if not whole_numbers(node):  # a node id of 0.5 matched no node: its sample was dropped
            raise InputError(f"the given node ids have dtype {node.dtype} and are not all whole numbers "
                             "(expected integer ids in 0..nodes-1)")  # fmt: skip
        if node.shape != labels.shape or node.min() < 0 or node.max() >= nodes:
            raise InputError(
                f"the given node ids span {node.min()}..{node.max()} for {nodes} nodes "
                "(expected one id in 0..nodes-1 per training sample)"
            )
        parts = [np.flatnonzero(node == i) for i in range(nodes)]
        empty = [i for i, p in enumerate(parts) if len(p) == 0]
        if empty:
            raise InputError(f"node {empty[0]} has no training sample in the given partition")
        return parts


PARTITIONS = ("iid", "shards", "dirichlet", "given")


class NodeParts(list[np.ndarray]):
    """A partition's index arrays, one per node, as runs share them: the runs of a sweep with one partition,
    node count and seed hold one copy (:func:`sim.setup.node_parts`; each of them held its own, and its
    samplers two more, 1.4 MB a run of MNIST, 2026-11-29), so they are not to be changed in place (not
    made read-only: torch warns when such an array indexes a tensor, ``x_train[part]``). ``layouts`` keeps
    what samplers build from them, once per device (:func:`sim.engine.sampler_layout`)."""

    def __init__(self, parts: list[np.ndarray]) -> None:
        super().__init__(parts)
        self.layouts: dict[tuple[str, str], tuple[torch.Tensor, ...]] = {}


def make_partition(
    name: str, *, alpha: float = 0.5, node: np.ndarray | None = None
) -> IID | Shards | Dirichlet | Given:
    """A partitioner by name."""
    if name == "iid":
        return IID()
    if name == "shards":
        return Shards()
    if name == "dirichlet":
        return Dirichlet(alpha)
    if name == "given":
        if node is None:
            raise InputError("partition 'given' needs a data set with a 'node' array (npz:PATH)")
        return Given(node)
    raise InputError(f"unknown partition {name!r} (expected one of: {', '.join(PARTITIONS)})")
