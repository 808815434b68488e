"""Gossip rules over a pluggable mixing operator (the split of stochastic_gradient_push: graph / mixing /
gossiper).

A gossip rule (:class:`ExactGossip`, :class:`ChocoGossip`) is written once, in the paper's matrix form
with rows of X as nodes (the paper's X C is ``C @ X``), and calls a :class:`Mixing` operator for the
only two things that depend on where the nodes live:

* ``mix(own, halo)``: the rows of ``C @ Y`` that belong to this process's nodes, from this process's rows
  of Y and the *halo* (the rows of other processes' nodes that our nodes have an edge to);
* ``exchange(rows)``: send our rows to the processes whose nodes need them and receive the halo.

:class:`LocalMixing` holds every node (one process: the halo is empty and ``mix`` is ``C @ Y``), as do
its faster forms for special C, :class:`AverageMixing` (C = J: group means) and :class:`DiagonalMixing`
(shifted diagonals), among which :func:`choose_mixing` picks; :class:`sim.distributed.HaloMixing` holds
a block of nodes and exchanges halo rows point to point. The same CHOCO-G code therefore runs in one
process and across many.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp
import torch

from bounds import InputError
from bounds.cdfl.compression import Compressor, Identity, RandK, TopK
from bounds.graph.mixing import ExactAverage, as_dense, as_matrix
from sim.compressors import compress_rows

__all__ = [
    "BLOCK_BYTES_CPU",
    "DENSE_GOSSIP_NODES",
    "DENSE_GOSSIP_NODES_CPU",
    "DIAGONALS_FROM_NONZEROS",
    "DIAGONALS_PER_NONZERO",
    "MAX_DIAGONALS",
    "AverageMixing",
    "ChocoGossip",
    "DiagonalMixing",
    "ExactGossip",
    "LocalMixing",
    "Mixing",
    "as_mixing",
    "canonical_csr",
    "choose_mixing",
    "csr_product",
    "dense_gossip_nodes",
    "mixing_form",
    "sparse_mixing",
]

BLOCK_BYTES_CPU = 4 << 20  # DiagonalMixing's output block on the CPU: 4 MiB (51 rows of the MNIST CNN's
# d = 20,490), which with its shifted source rows stays in the cache between the diagonals' adds. Ring, N =
# 10,000, d = 20,490 on 2 cores (2026-11-27): 8 rows 194 ms, 16 134, 32 121, 64 119, 128 153, 512 188, the
# whole matrix 181; on a GPU the passes over the whole matrix (one kernel each) stay.

DENSE_GOSSIP_NODES = 200  # dense C @ X up to this many rows on a GPU, a sparse form above (see dfl-sim bench)
DENSE_GOSSIP_NODES_CPU = 16  # the same on the CPU. Measured on 2 cores (2026-11-27, d = 20,490, best of 3
# x 30 calls, ms for dense / CSR / diagonals): ring of 8 0.062 / 0.068 / 0.068, 16 0.119 / 0.094 / 0.094,
# 24 0.216 / 0.146 / 0.125, 48 0.884 / 0.373 / 0.230, 100 3.3 / 0.81 / 0.50, 200 18.1 / 1.96 / 0.99;
# torus of 9 0.071 / 0.074 / 0.176, 16 0.141 / 0.174 / 0.337, 25 0.248 / 0.192 / 0.308, 49 0.956 / 0.440
# / 0.578; a sweep's 8 stacked 10-rings (80 rows) 3.4 / 0.39 / 0.64. The paper's 10-node runs keep the
# dense product.
DIAGONALS_PER_NONZERO = 1.0  # choose_mixing takes DiagonalMixing on the CPU for a C with at most this
# many non-zero diagonals per non-zero in an average row, at most MAX_DIAGONALS of them, and at least
# DIAGONALS_FROM_NONZEROS non-zeros in an average row; else CSR (csr_product). Measured on 2 cores
# (2026-11-27, d = 20,490, a fresh process each, 3 x 5 calls, freed memory retained; ms for copy / CSR /
# diagonals, with the diagonals and non-zeros a row): ring of 10,000 (3, 3) 47 / 67 / 81; path of 10,000
# (3, 3) 48 / 68 / 80; ring of 2,000 9.6 / 14.1 / 16.1; torus of 2,500 (7, 5) 12.0 / 25.0 / 33.2;
# exponential graph of 1,024 (20, 20) 4.9 / 42.8 / 43.0; of 8,192 (26, 26) 28 / 901 / 477; hypercube of
# 8,192 (26, 14) 48 / 261 / 684. So the diagonals pay off only where a row has many far neighbours (the
# exponential graph: CSR gathers its 26 rows from all over X); a threshold between the measured points, not
# a fit. (Before csr_product, CSR paid for page faults on every call and the diagonals won rings too.)
DIAGONALS_FROM_NONZEROS = 16  # see DIAGONALS_PER_NONZERO
MAX_DIAGONALS = 32  # the most diagonals measured (26 above); beyond, CSR (stars' hubs, dense graphs)


def dense_gossip_nodes(device: torch.device | str) -> int:
    """The most rows of C for which :func:`choose_mixing` takes the dense product on ``device``."""
    return DENSE_GOSSIP_NODES_CPU if torch.device(device).type == "cpu" else DENSE_GOSSIP_NODES


def choose_mixing(C: Any, device: torch.device | str) -> Mixing | torch.Tensor:
    """The form of C for ``C @ X`` in one process (every form gives C @ X up to float rounding):

    * C = J, or a block-diagonal of J blocks (synchronous and local SGD, complete graphs with uniform
      weights, a sweep of such runs): :class:`AverageMixing`, one read and one write of X, on every
      device and at every size;
    * at most :func:`dense_gossip_nodes` rows (16 on the CPU, 200 on a GPU): the dense matrix;
    * on the CPU, C with at least DIAGONALS_FROM_NONZEROS non-zeros in an average row, at most
      DIAGONALS_PER_NONZERO non-zero diagonals per non-zero of such a row and at most MAX_DIAGONALS
      (exponential graphs): :class:`DiagonalMixing`;
    * otherwise sparse CSR, its stored zeros dropped and repeated entries added up (rings, paths, tori,
      hypercubes, stars, a sweep's block-diagonal of two or more runs; on a GPU every C: there the
      shifted adds, a kernel each, were measured slower than CSR, 2.26 ms against 1.99 ms for the
      10,000-ring on an H100, 2026-11-26).
    """
    if len(C.shape) != 2 or C.shape[0] != C.shape[1]:
        raise InputError(f"C has shape {tuple(C.shape)} (expected a square N x N mixing matrix)")
    average = AverageMixing.of(C)
    if average is not None:
        return average
    C = as_matrix(C)  # an ExactAverage is always the group means above; as a matrix for any other form
    if C.shape[0] <= dense_gossip_nodes(device):
        return torch.as_tensor(as_dense(C), dtype=torch.float32, device=device)
    M = canonical_csr(C)
    if torch.device(device).type == "cpu" and M.nnz >= DIAGONALS_FROM_NONZEROS * M.shape[0]:
        limit = min(MAX_DIAGONALS, math.ceil(DIAGONALS_PER_NONZERO * M.nnz / M.shape[0]))
        diagonal = DiagonalMixing.of(M, max_diagonals=limit)
        if diagonal is not None:
            return diagonal
    return sparse_mixing(M, device=device)


def canonical_csr(C: Any) -> sp.csr_matrix:
    """C (dense or sparse) as float64 CSR with one entry per (i, j) (a repeated entry's values added up)
    and no stored zeros: what the forms of C count and multiply (``sp.block_diag`` of dense blocks stores
    their zeros, 10 entries a row for a 10-node ring, which a CSR product would pay for)."""
    M = sp.csr_matrix(C, dtype=np.float64, copy=True)
    M.sum_duplicates()
    M.eliminate_zeros()
    return M


def sparse_mixing(
    C: object, dtype: torch.dtype = torch.float32, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """C as a torch sparse CSR tensor (a gossip step on a large sparse graph costs O(nnz d)), from
    :func:`canonical_csr` (torch's invariant check refuses a repeated entry).

    Built directly on ``device`` (default: the CPU) with its invariants checked. Torch's two
    warnings about constructing it, "Sparse CSR tensor support is in beta state" and "Sparse
    invariant checks are implicitly disabled", are silenced here and nowhere else.
    """
    M = canonical_csr(C)
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"Sparse CSR tensor support is in beta", category=UserWarning
        )
        warnings.filterwarnings(
            "ignore", message=r"Sparse invariant checks are implicitly disabled", category=UserWarning
        )
        return torch.sparse_csr_tensor(
            torch.from_numpy(M.indptr.astype(np.int64)),
            torch.from_numpy(M.indices.astype(np.int64)),
            torch.from_numpy(M.data).to(dtype),
            size=M.shape,
            device=device,
            check_invariants=True,
        )


def mixing_form(mixing: Mixing | torch.Tensor) -> str:
    """The name of a form :func:`choose_mixing` returns: ``average``, ``dense``, ``diagonal``, ``sparse``."""
    if isinstance(mixing, AverageMixing):
        return "average"
    if isinstance(mixing, DiagonalMixing):
        return "diagonal"
    if isinstance(mixing, LocalMixing):
        return mixing_form(mixing.C)
    assert isinstance(mixing, torch.Tensor), type(mixing)
    return "dense" if mixing.layout == torch.strided else "sparse"


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


class EveryNodeHere:
    """``exchange`` and ``split`` of a mixing operator that holds every node (one process): no halo."""

    halo_size: int = 0

    def exchange(self, rows: torch.Tensor, nonzeros_per_row: int | None = None) -> torch.Tensor:
        return rows[:0]

    def split(self, full: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return full, full[:0]


@dataclass
class LocalMixing(EveryNodeHere):
    """Every node in this process: ``mix`` is ``C @ Y`` (C dense or sparse CSR) and the halo is empty."""

    C: torch.Tensor

    def mix(self, own: torch.Tensor, halo: torch.Tensor) -> torch.Tensor:
        if self.C.layout == torch.sparse_csr and own.device.type == "cpu":
            return csr_product(self.C, own)
        return self.C @ own


def csr_product(C: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """``C @ X`` for a sparse CSR C on the CPU, written by ``addmm`` (beta = 0) into a new matrix: the same
    numbers, without the temporaries of X's size that torch's ``C @ X`` allocates on every call and whose
    pages the kernel faults in and zeroes each time (glibc's retained heap, :mod:`sim.host`, does not
    serve them). On 2 cores (2026-11-27, d = 20,490): torus of 10,000 626 ms and about 400,000 page
    faults per call against 132 ms and none; ring of 10,000 362 ms against 70-103 ms; torus of 1,024
    11.4 ms. The result is equal to ``C @ X`` bit for bit (tested). An X that requires grad gets ``C @ X``
    (``addmm`` with ``out=`` does not differentiate)."""
    if X.requires_grad:
        return C @ X
    out = torch.empty((C.shape[0], X.shape[1]), dtype=X.dtype, device=X.device)
    return torch.addmm(out, C, X, beta=0.0, out=out)


@dataclass
class AverageMixing(EveryNodeHere):
    """C = blockdiag(J_g1, J_g2, ...), J_g = (1/g) 1 1^T: every row of X replaced by the mean of its group
    of consecutive rows (``sizes``: the groups' sizes in row order). One group is the exact averaging of
    synchronous and local SGD (Algorithm 1 with C = J) and the mixing matrix of a complete graph with
    uniform weights (the paper's and Metropolis'); several, a sweep's block-diagonal of such runs. One read
    and one write of X, where ``C @ X`` does g multiply-adds per entry, dense or CSR (J has no zero). On 2
    cores (2026-11-27, d = 20,490, ms for the mean / dense J / CSR / a copy of X): N = 10 0.048 / 0.078 /
    0.159 / 0.013, N = 100 0.31 / 6.1 / 21.7 / 0.14, N = 1,000 8.2 / 332 / 8,409 / 5.2. The same as
    ``C @ X`` up to float rounding."""

    sizes: tuple[int, ...]

    def __post_init__(self) -> None:
        given = self.sizes
        whole = lambda g: isinstance(g, numbers.Integral) and not isinstance(g, bool) and int(g) >= 1  # noqa: E731
        if not (isinstance(given, tuple | list) and given and all(whole(g) for g in given)):
            raise InputError(
                f"sizes = {given!r} (expected the groups' sizes: a non-empty tuple of whole numbers >= 1)"
            )
        self.sizes = tuple(int(g) for g in given)

    @classmethod
    def of(cls, C: Any, rtol: float = 1e-12) -> AverageMixing | None:
        """The operator of C (N x N, dense or sparse) when C is blockdiag(J_g1, J_g2, ...) to ``rtol``, else
        None. O(nnz) for a sparse C; a dense C is read first in its first row (is it 1/g on g columns and
        0 after?), then compared whole with J where g = N, or as CSR where g < N; an
        :class:`~bounds.graph.mixing.ExactAverage` is J by construction (nothing read)."""
        if isinstance(C, ExactAverage):
            return cls((C.n,))
        n = C.shape[0]
        if n == 0 or C.shape != (n, n):
            return None
        if not sp.issparse(C):
            dense = np.asarray(C, dtype=np.float64)
            g = int(np.count_nonzero(dense[0]))
            if g == 0 or np.any(dense[0, g:]) or not np.allclose(dense[0, :g], 1.0 / g, rtol=rtol, atol=0.0):
                return None
            if g == n:  # compared with J in slices of rows: no temporaries of N x N
                rows = max(1, (1 << 22) // n)
                same = all(
                    np.allclose(dense[i : i + rows], 1.0 / n, rtol=rtol, atol=0.0) for i in range(0, n, rows)
                )
                return cls((n,)) if same else None
        M = canonical_csr(C)
        counts = np.diff(M.indptr)
        if not np.all(counts):
            return None
        first = M.indices[M.indptr[:-1]]  # each row's first column (canonical CSR: sorted)
        starts = np.flatnonzero(first == np.arange(n))  # a group starts where a row's first column is itself
        sizes = counts[starts]
        tiled = np.array_equal(starts, np.concatenate([[0], np.cumsum(sizes)[:-1]])) and sizes.sum() == n
        if not tiled or not np.array_equal(first, np.repeat(starts, sizes)):
            return None
        if not np.array_equal(counts, np.repeat(sizes, sizes)):
            return None
        columns = np.repeat(first, counts) + np.arange(M.nnz) - np.repeat(M.indptr[:-1], counts)
        if not np.array_equal(M.indices, columns):  # row i: the consecutive columns of its group
            return None
        if not np.allclose(M.data, np.repeat(1.0 / counts, counts), rtol=rtol, atol=0.0):
            return None
        return cls(tuple(int(g) for g in sizes))

    def mix(self, own: torch.Tensor, halo: torch.Tensor) -> torch.Tensor:
        """Each row's group mean, written into a new matrix (its rows share no memory): groups of one size
        in one reshaped pass, else group by group."""
        n, d = own.shape
        if n != sum(self.sizes):
            raise InputError(f"{n} rows, but the groups hold {sum(self.sizes)} (expected as many)")
        out = torch.empty_like(own)
        g = self.sizes[0]
        if all(size == g for size in self.sizes):
            groups = own.reshape(n // g, g, d)
            out.view_as(groups).copy_(groups.mean(1, keepdim=True).expand_as(groups))
            return out
        first = 0
        for size in self.sizes:
            out[first : first + size] = own[first : first + size].mean(0, keepdim=True)
            first += size
        return out


@dataclass
class DiagonalMixing(EveryNodeHere):
    """C as a sum of shifted diagonals, C_ij = w_k[i] for j = (i + k) mod N, so that
    ``(C X)_i = sum_k w_k[i] X_((i + k) mod N)``: one scaled copy and a shifted add per other diagonal,
    each a pass over X in memory order, instead of a sparse product.

    ``weights`` maps each offset k (0 <= k < N) to its diagonal: a number where the diagonal is constant (C
    circulant: rings, complete and exponential graphs), else the N per-row weights, zero where row i has
    no entry at offset k (tori: offsets 0, +-1, +-(cols - 1), +-cols; paths; the block-diagonal matrix of a
    sweep's rings). Same result as ``C @ X`` up to float rounding (the terms are summed in another order);
    :func:`choose_mixing` picks it where it was measured to be faster than a sparse product. A per-row
    weight of 0 still multiplies its row of X: an infinite entry of X spreads NaN to rows that are not
    its neighbours (a run stops at any non-finite entry of X anyway).
    """

    weights: dict[int, float | np.ndarray]  # offset k -> its constant w_k, or its N per-row weights
    block_bytes: int | None = None  # rows of the output per block (see mix); None: BLOCK_BYTES_CPU on the
    # CPU, every row in one block elsewhere
    _tensors: dict[tuple[torch.device, torch.dtype], dict[int, float | torch.Tensor]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        """Each diagonal as a float (a number of any type) or a float64 vector of per-row weights."""
        self.weights = {
            int(k): np.asarray(w, dtype=np.float64) if np.ndim(w) else float(w)
            for k, w in self.weights.items()
        }

    @classmethod
    def of(cls, C: Any, max_diagonals: int | None = None, rtol: float = 1e-12) -> DiagonalMixing | None:
        """The operator of C (N x N, dense or sparse), or None when C has more than ``max_diagonals``
        non-zero diagonals (None: any number). A diagonal whose weights agree to ``rtol`` (relative to C's
        largest entry) is stored as one number. O(nnz) before the check: a 10,000-node ring needs no dense
        N x N copy."""
        M = canonical_csr(C).tocoo()
        if M.shape[0] != M.shape[1]:
            raise InputError(f"C has shape {M.shape} (expected a square N x N mixing matrix)")
        n = M.shape[0]
        offsets, index = np.unique((M.col - M.row) % n, return_inverse=True)
        if max_diagonals is not None and len(offsets) > max_diagonals:
            return None
        W = np.zeros((len(offsets), n))
        W[index, M.row] = M.data
        tol = rtol * (np.abs(M.data).max() if M.nnz else 1.0)
        return cls({
            int(k): float(w[0]) if np.allclose(w, w[0], rtol=rtol, atol=tol) else w
            for k, w in zip(offsets, W, strict=True)
        })  # fmt: skip

    @property
    def circulant(self) -> bool:
        """Every diagonal is constant (C circulant)."""
        return all(isinstance(w, float) for w in self.weights.values())

    def mix(self, own: torch.Tensor, halo: torch.Tensor) -> torch.Tensor:
        """``C @ own``, block by block of output rows (``block_bytes`` each): a block is written by the
        scaled copy and then updated by each diagonal's shifted add while it is still in the cache, so X is
        read from memory about once per diagonal whose source rows are not in the cache (once in all for a
        ring) and the output written once. On 2 cores (2026-11-27, ring, N = 10,000, d = 20,490, 820 MB):
        119-121 ms in blocks of 32-64 rows against 181 ms in passes over the whole matrix and 57 ms for one
        copy of X. Every element is summed in the same order either way, so the blocks change no bit of
        the result (tested)."""
        n = own.shape[0]
        block = self.block_bytes
        if block is None:
            block = BLOCK_BYTES_CPU if own.device.type == "cpu" else 0
        rows = max(1, block // max(1, own[:1].nbytes) if block else n)
        weights = self._on(own)
        w0 = weights.get(0, 0.0)
        out = torch.empty_like(own)
        for a in range(0, n, rows):
            b = min(n, a + rows)
            torch.mul(own[a:b], w0 if isinstance(w0, float) else w0[a:b], out=out[a:b])
            for k, w in weights.items():
                if k:
                    _add_rows(out[a:b], own, (a + k) % n, w if isinstance(w, float) else w[a:b])
        return out

    def fused(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """``C @ X`` as one expression sum_k w_k roll(X, -k) compiled by ``torch.compile`` into one kernel
        (Triton on a GPU): one read of X (the shifted rows come from the cache) and one write, where
        :meth:`mix` makes a pass per diagonal. Compiled on its first call (seconds); raises what the
        compiler raises where no back end is available."""
        weights = tuple(
            (k, w if isinstance(w, float) else torch.from_numpy(w)[:, None]) for k, w in self.weights.items()
        )

        def mix(X: torch.Tensor) -> torch.Tensor:
            terms = ((w if isinstance(w, float) else w.to(X)) * torch.roll(X, -k, dims=0) for k, w in weights)
            return sum(terms, torch.zeros_like(X))

        return torch.compile(mix, dynamic=False)

    def _on(self, X: torch.Tensor) -> dict[int, float | torch.Tensor]:
        """The weights with each per-row diagonal as an (N, 1) tensor of X's device and dtype (made once)."""
        key = (X.device, X.dtype)
        if key not in self._tensors:
            self._tensors[key] = {
                k: w if isinstance(w, float) else torch.from_numpy(w)[:, None].to(X.device, X.dtype)
                for k, w in self.weights.items()
            }
        return self._tensors[key]


def _add_rows(out: torch.Tensor, X: torch.Tensor, first: int, w: float | torch.Tensor) -> None:
    """out += w X[(first + i) mod N] for the rows i of out (a run of consecutive rows of X that may wrap
    past its end: at most two slices); ``w`` a number, or one weight per row of out (m x 1)."""
    m = out.shape[0]
    head = min(m, X.shape[0] - first)
    if isinstance(w, float):
        out[:head].add_(X[first : first + head], alpha=w)
        if head < m:
            out[head:].add_(X[: m - head], alpha=w)
        return
    out[:head].addcmul_(X[first : first + head], w[:head])
    if head < m:
        out[head:].addcmul_(X[: m - head], w[head:])


def as_mixing(C: Mixing | torch.Tensor) -> Mixing:
    """A mixing operator from an operator or from the matrix C itself (then every node is local)."""
    return LocalMixing(C) if isinstance(C, torch.Tensor) else C


@dataclass
class ExactGossip:
    """X <- C X (Algorithm 1, line 6); every node sends its full float32 model (32 d bits) per step.

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
        sparse = self.compressor if isinstance(self.compressor, TopK | RandK) else None
        self._nonzeros = None if sparse is None else sparse.k  # only the kept coordinates travel

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
