"""Gossip rules over a pluggable mixing operator (the split of stochastic_gradient_push: graph / mixing /
gossiper).

A gossip rule (:class:`ExactGossip`, :class:`ChocoGossip`) is written once, in the paper's matrix form
with rows of X as nodes (the paper's X C is ``C @ X``), and calls a :class:`Mixing` operator for the
only two things that depend on where the nodes live:

* ``mix(own, halo)``: the rows of ``C @ Y`` that belong to this process's nodes, from this process's rows
  of Y and the *halo* (the rows of other processes' nodes that our nodes have an edge to);
* ``exchange(rows)``: send our rows to the processes whose nodes need them and receive the halo.

:class:`LocalMixing` holds every node (one process: the halo is empty and ``mix`` is ``C @ Y``);
:class:`sim.distributed.HaloMixing` holds a block of nodes and exchanges halo rows point to point. The
same CHOCO-G code therefore runs in one process and across many.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp
import torch

from bounds import InputError
from bounds.cdfl.compression import Compressor, Identity, RandK, TopK
from sim.compressors import compress_rows

__all__ = [
    "BLOCK_BYTES_CPU",
    "ChocoGossip",
    "CirculantMixing",
    "ExactGossip",
    "LocalMixing",
    "Mixing",
    "as_mixing",
]

BLOCK_BYTES_CPU = 4 << 20  # CirculantMixing's output block on the CPU: 4 MiB (51 rows of the MNIST CNN's
# d = 20,490), which with its shifted source rows stays in the cache between the diagonals' adds. Ring, N =
# 10,000, d = 20,490 on 2 cores (2026-11-27): 8 rows 194 ms, 16 134, 32 121, 64 119, 128 153, 512 188, the
# whole matrix 181; on a GPU the passes over the whole matrix (one kernel each) stay.


class Mixing(Protocol):
    """Multiplication by the mixing matrix C for the nodes one process holds."""

    halo_size: int  # rows of other processes' nodes that this process's nodes mix with

    def mix(self, own: torch.Tensor, halo: torch.Tensor) -> torch.Tensor:
        """This process's rows of ``C @ Y``, from its rows ``own`` of Y and the halo rows of Y."""
        ...

    def exchange(self, rows: torch.Tensor, nonzeros_per_row: int | None = None) -> torch.Tensor:
        """Send ``rows`` (this process's) to whoever needs them; return the halo rows received.

        ``nonzeros_per_row``: each row has at most that many non-zeros (top_k / rand_k messages), so only
        their indices and values need to travel.
        """
        ...

    def split(self, full: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(own rows, halo rows) of a full N x d matrix (restoring a checkpoint)."""
        ...


@dataclass
class LocalMixing:
    """Every node in this process: ``mix`` is ``C @ Y`` (C dense or sparse CSR) and the halo is empty."""

    C: torch.Tensor
    halo_size: int = 0

    def mix(self, own: torch.Tensor, halo: torch.Tensor) -> torch.Tensor:
        return self.C @ own

    def exchange(self, rows: torch.Tensor, nonzeros_per_row: int | None = None) -> torch.Tensor:
        return rows[:0]

    def split(self, full: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return full, full[:0]


@dataclass
class CirculantMixing:
    """C circulant, C_ij = c_((j - i) mod N) (rings, complete graphs, any graph whose mixing matrix is):
    ``C @ X`` as one scaled copy and a shifted add per other non-zero diagonal, each a pass over X in
    memory order, instead of a sparse product. Same result as ``C @ X`` up to float rounding (the
    terms are summed in another order), so runs use :class:`LocalMixing` unless they ask for it.
    """

    weights: dict[int, float]  # offset k -> c_k, (C X)_i = sum_k c_k X_((i + k) mod N)
    halo_size: int = 0
    block_bytes: int | None = None  # rows of the output per block (see mix); None: BLOCK_BYTES_CPU on the
    # CPU, every row in one block elsewhere

    @classmethod
    def of(cls, C: Any, rtol: float = 1e-12) -> CirculantMixing | None:
        """The operator of C if C is circulant (up to ``rtol``), else None."""
        M = sp.coo_matrix(C, dtype=np.float64)  # O(nnz): a 10,000-node ring needs no dense N x N copy
        n = M.shape[0]
        first = np.zeros(n)
        first[M.col[M.row == 0]] = M.data[M.row == 0]
        diagonals = np.flatnonzero(first)
        expected = first[(M.col - M.row) % n]  # C_ij = c_((j - i) mod N)
        circulant = M.nnz == n * len(diagonals) and np.allclose(
            M.data, expected, rtol=rtol, atol=rtol * np.abs(first).max()
        )
        return cls({int(k): float(first[k]) for k in diagonals}) if circulant else None

    def mix(self, own: torch.Tensor, halo: torch.Tensor) -> torch.Tensor:
        """``C @ own``, block by block of output rows (``block_bytes`` each): a block is written by the
        scaled copy and then updated by each diagonal's shifted add while it is still in the cache, so X is
        read from memory about once and the output written once. On 2 cores (2026-11-27, ring, N = 10,000,
        d = 20,490, 820 MB): 119-121 ms in blocks of 32-64 rows against 181 ms in passes over the whole
        matrix and 57 ms for one copy of X. Every element is summed in the same order either way, so the
        blocks change no bit of the result (tested)."""
        n = own.shape[0]
        block = self.block_bytes
        if block is None:
            block = BLOCK_BYTES_CPU if own.device.type == "cpu" else 0
        rows = max(1, block // max(1, own[:1].nbytes) if block else n)
        out = torch.empty_like(own)
        for a in range(0, n, rows):
            b = min(n, a + rows)
            torch.mul(own[a:b], self.weights.get(0, 0.0), out=out[a:b])
            for k, c in self.weights.items():
                if k:
                    _add_rows(out[a:b], own, (a + k) % n, c)
        return out

    def exchange(self, rows: torch.Tensor, nonzeros_per_row: int | None = None) -> torch.Tensor:
        return rows[:0]

    def split(self, full: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return full, full[:0]

    def fused(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """``C @ X`` as one expression sum_k c_k roll(X, -k) compiled by ``torch.compile`` into one kernel
        (Triton on a GPU): one read of X (the shifted rows come from the cache) and one write, where
        :meth:`mix` makes a pass per diagonal. Compiled on its first call (seconds); raises what the
        compiler raises where no back end is available."""
        weights = tuple(self.weights.items())

        def mix(X: torch.Tensor) -> torch.Tensor:
            return sum((c * torch.roll(X, -k, dims=0) for k, c in weights), torch.zeros_like(X))

        return torch.compile(mix, dynamic=False)


def _add_rows(out: torch.Tensor, X: torch.Tensor, first: int, c: float) -> None:
    """out += c X[(first + i) mod N] for the rows i of out (a run of consecutive rows of X that may wrap
    past its end: at most two slices)."""
    m = out.shape[0]
    head = min(m, X.shape[0] - first)
    out[:head].add_(X[first : first + head], alpha=c)
    if head < m:
        out[head:].add_(X[: m - head], alpha=c)


def as_mixing(C: Mixing | torch.Tensor) -> Mixing:
    """A mixing operator from an operator or from the matrix C itself (then every node is local)."""
    return LocalMixing(C) if isinstance(C, torch.Tensor) else C


@dataclass
class ExactGossip:
    """X <- C X (Algorithm 1, line 8); every node sends its full float32 model (32 d bits) per step.

    ``C``: the mixing operator, or the matrix itself for a one-process run.
    """

    C: Mixing | torch.Tensor
    compressor: Compressor = field(default_factory=Identity)

    def __post_init__(self) -> None:
        self.mixing = as_mixing(self.C)

    def step(self, X: torch.Tensor, gen: torch.Generator | None = None) -> torch.Tensor:
        return self.mixing.mix(X, self.mixing.exchange(X))

    def state(self) -> dict[str, torch.Tensor]:
        return {}

    def restore(self, state: dict[str, torch.Tensor]) -> None:
        return None


@dataclass
class ChocoGossip:
    """CHOCO-G (Algorithm 2, lines 6-11): X <- X + gamma (C - I) X_hat; X_hat <- X_hat + Q(X - X_hat).

    X_hat starts at 0. Every neighbour of a node holds the same copy of its x_hat, since it only changes
    by the compressed messages q = Q(x - x_hat) that all of them receive: ``X_hat`` holds this process's
    rows and ``X_hat_halo`` its replicas of the halo nodes' rows (empty in one process).
    """

    C: Mixing | torch.Tensor
    gamma: float
    compressor: Compressor
    X_hat: torch.Tensor | None = None
    X_hat_halo: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if not 0 < self.gamma <= 1:
            raise InputError(f"gamma = {self.gamma} is out of range (expected 0 < gamma <= 1)")
        self.mixing = as_mixing(self.C)
        sparse = isinstance(self.compressor, TopK | RandK)
        self._nonzeros = self.compressor.k if sparse else None  # only the kept coordinates travel

    def step(self, X: torch.Tensor, gen: torch.Generator | None = None) -> torch.Tensor:
        if self.X_hat is None:
            self.X_hat = torch.zeros_like(X)
        if self.X_hat_halo is None:
            self.X_hat_halo = X.new_zeros((self.mixing.halo_size, X.shape[1]))
        X = X + self.gamma * (self.mixing.mix(self.X_hat, self.X_hat_halo) - self.X_hat)
        q = compress_rows(self.compressor, X - self.X_hat, gen)
        self.X_hat = self.X_hat + q
        self.X_hat_halo = self.X_hat_halo + self.mixing.exchange(q, self._nonzeros)
        return X

    def state(self) -> dict[str, torch.Tensor]:
        return {} if self.X_hat is None else {"X_hat": self.X_hat}

    def restore(self, state: dict[str, torch.Tensor]) -> None:
        """From a checkpoint's full X_hat (N x d): this process's rows and its halo replicas."""
        full = state.get("X_hat")
        self.X_hat, self.X_hat_halo = (None, None) if full is None else self.mixing.split(full)
