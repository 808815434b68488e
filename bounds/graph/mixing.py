"""Mixing (confusion) matrices C from graphs, and their validation.

Assumption 1.6 of the paper: C is doubly stochastic and symmetric, C 1 = 1, C^T = C, and
max(|lambda_2|, |lambda_N|) < lambda_1 = 1; with c_ji > 0 exactly when j and i are neighbours (or j = i),
as Section III-C-1 builds it. A gossip step is X <- X C (eq. (5) without the gradient step).

Weight rules (``RULES``):

``paper``
    The paper's rule (Section VI-A): each node averages itself and its
    neighbours equally, c_ij = 1 / (d_i + 1). Symmetric only when every edge
    joins two nodes of equal degree (e.g. a regular graph); otherwise it is
    rejected with the offending edge named.
``metropolis``
    Metropolis-Hastings: c_ij = 1 / (1 + max(d_i, d_j)), c_ii = 1 - sum_j c_ij.
``max-degree``
    c_ij = 1 / (1 + d_max), c_ii = 1 - d_i / (1 + d_max).
``lazy``
    Lazy Metropolis-Hastings, (C_MH + I) / 2 (see :func:`lazy` for any C).

Large graphs give ``scipy.sparse`` CSR matrices (``sparse=None`` picks sparse
for N > ``SPARSE_FROM_NODES``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from bounds._checks import (
    UNREADABLE_FILE_ERRORS,
    InputError,
    flag,
    real_number,
    unreadable_reason,
    whole_number,
)
from bounds.graph.names import WEIGHT_RULES, check_topology_file, check_weight_rule

__all__ = [
    "RULES",
    "SPARSE_FROM_NODES",
    "ExactAverage",
    "Matrix",
    "as_dense",
    "as_matrix",
    "check_mixing_matrix",
    "lazy",
    "load_matrix",
    "mixing_matrix",
    "topology_matrix",
]

Matrix: TypeAlias = np.ndarray | sp.csr_matrix
SPARSE_FROM_NODES = 1000


@dataclass(frozen=True)
class ExactAverage:
    """C = J = (1/N) 1 1^T, the exact averaging of synchronous and local SGD (Algorithm 1 with C = J),
    without its N^2 entries: what a run holds for J (a dense J of 10,000 nodes is 800 MB, of 100,000
    80 GB). The simulator mixes with it as group means (:class:`sim.gossip.AverageMixing`);
    :meth:`toarray` makes the array where a matrix is needed (:func:`as_matrix`, :func:`as_dense`)."""

    n: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", whole_number("n", self.n, low=1))  # (nodes)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.n)

    def toarray(self) -> np.ndarray:
        return np.full((self.n, self.n), 1.0 / self.n)


def as_matrix(C: object) -> Any:
    """C as a numpy or scipy matrix: :class:`ExactAverage` made into its array, anything else unchanged."""
    return C.toarray() if isinstance(C, ExactAverage) else C


def as_dense(C: Any) -> np.ndarray:
    """A matrix (dense, scipy sparse, :class:`ExactAverage`, or nested lists) as a dense numpy array (a dense
    one is not copied)."""
    C = as_matrix(C)
    return C.toarray() if sp.issparse(C) else np.asarray(C)


DEFAULT_TOL = 1e-10
LOW_PRECISION_ULPS = 4
"""The slack, in ulps of its own dtype, by which a float32 or float16 C may miss symmetry and rows summing to
1: rounding a doubly stochastic C costs half an ulp an entry and a row (16 ulps let a float16 C with rows
summing to 1.0098 through, a review)."""


def _edges_and_degrees(graph: nx.Graph) -> tuple[np.ndarray, np.ndarray, int]:
    n = graph.number_of_nodes()
    if sorted(graph.nodes) != list(range(n)):
        graph = nx.convert_node_labels_to_integers(graph, ordering="sorted")
    graph = nx.Graph(graph)
    graph.remove_edges_from(nx.selfloop_edges(graph))
    edges = np.array(list(graph.edges), dtype=np.int64).reshape(-1, 2)
    degrees = np.bincount(edges.ravel(), minlength=n).astype(np.float64)
    return edges, degrees, n


def _paper_weights(edges: np.ndarray, degrees: np.ndarray) -> np.ndarray:
    u, v = edges[:, 0], edges[:, 1]
    unequal = degrees[u] != degrees[v]
    if unequal.any():
        k = int(np.flatnonzero(unequal)[0])
        raise InputError(
            "weight rule 'paper' (each node averages itself and its neighbours equally) gives a "
            f"non-symmetric C on this graph: node {u[k]} has degree {int(degrees[u[k]])} but its "
            f"neighbour {v[k]} has degree {int(degrees[v[k]])} (expected a regular graph; "
            "use weights 'metropolis' or 'max-degree')"
        )
    return 1.0 / (degrees[u] + 1.0)


def _metropolis_weights(edges: np.ndarray, degrees: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.maximum(degrees[edges[:, 0]], degrees[edges[:, 1]]))


def _max_degree_weights(edges: np.ndarray, degrees: np.ndarray) -> np.ndarray:
    return np.full(len(edges), 1.0 / (1.0 + degrees.max(initial=0.0)))


_EDGE_WEIGHTS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "paper": _paper_weights,
    "metropolis": _metropolis_weights,
    "max-degree": _max_degree_weights,
}
RULES = WEIGHT_RULES  # the keys of _EDGE_WEIGHTS and "lazy" (tested)


def lazy(C: Matrix) -> Matrix:
    """The lazy matrix (C + I) / 2: same eigenvectors, eigenvalues (1 + lambda) / 2 >= 0 (C validated
    first, :func:`check_mixing_matrix`)."""
    C = check_mixing_matrix(C, require_connected=False)
    eye = sp.identity(C.shape[0], format="csr") if sp.issparse(C) else np.eye(C.shape[0])
    return (C + eye) / 2.0


def mixing_matrix(graph: nx.Graph, rule: str = "paper", *, sparse: bool | None = None) -> Matrix:
    """Mixing matrix C of ``graph`` under weight ``rule`` (see the module docstring).

    Args:
        graph: undirected networkx graph; nodes are relabelled 0..N-1 in sorted order.
        rule: one of :data:`RULES`.
        sparse: return a CSR matrix; ``None`` chooses sparse for N > SPARSE_FROM_NODES.

    Returns:
        The symmetric doubly stochastic N x N matrix C (validated).

    >>> C = mixing_matrix(nx.cycle_graph(4))
    >>> C[0].round(3).tolist()
    [0.333, 0.333, 0.0, 0.333]
    """
    if not isinstance(graph, nx.Graph):
        raise InputError(f"graph = {type(graph).__name__} (expected a networkx Graph; a matrix is checked by "
                         "check_mixing_matrix)")  # fmt: skip
    sparse = flag("sparse", sparse, none=True)
    if graph.is_directed():  # weights of an undirected graph: a directed one was read as undirected
        raise InputError("the graph is directed (expected an undirected networkx Graph: C must be symmetric)")
    check_weight_rule(rule)  # first: ``rule == "lazy"`` of an array was numpy's ambiguous truth value
    if rule == "lazy":
        return lazy(mixing_matrix(graph, "metropolis", sparse=sparse))
    edges, degrees, n = _edges_and_degrees(graph)
    if n == 0:
        raise InputError("the graph has no nodes (expected at least one)")
    weights = _EDGE_WEIGHTS[rule](edges, degrees) if len(edges) else np.zeros(0)
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    cols = np.concatenate([edges[:, 1], edges[:, 0]])
    off = sp.coo_matrix((np.concatenate([weights, weights]), (rows, cols)), shape=(n, n)).tocsr()
    diagonal = 1.0 - np.asarray(off.sum(axis=1)).ravel()
    C = (off + sp.diags(diagonal)).tocsr()
    if sparse is None:
        sparse = n > SPARSE_FROM_NODES
    return check_mixing_matrix(C if sparse else C.toarray(), require_connected=False)


def _real_objects(C: object) -> bool:
    """Whether an object array holds only real numbers (none a string, a bool or complex; each converts)."""
    items = np.asarray(C).ravel()
    try:
        return all(not isinstance(x, str | bytes | bool | complex) and float(x) == float(x) for x in items)
    except (TypeError, ValueError):
        return False


def _kind(C: object) -> str:
    """The numpy dtype kind of a dense C ('?' when it is not an array of one type, e.g. ragged rows)."""
    try:
        return np.asarray(C).dtype.kind
    except (TypeError, ValueError):
        return "?"


def check_mixing_matrix(C: Any, *, tol: float = DEFAULT_TOL, require_connected: bool = True) -> Matrix:
    """Validate Assumption 1.6 and return C as a float64 dense array or CSR matrix.

    Checks, each with a message naming the worst entry: square, finite,
    non-negative, symmetric, rows summing to 1, and (``require_connected``) a
    connected graph of non-zero entries. A C given in a lower precision has
    :data:`LOW_PRECISION_ULPS` of its ulps added to ``tol`` (4.8e-7 for
    float32) and is returned balanced in float64 (:func:`_balanced`).
    Whether zeta < 1 (which also needs C to be aperiodic) is checked by
    :func:`bounds.graph.spectral.spectral_summary`.

    >>> check_mixing_matrix([[0.5, 0.5], [0.4, 0.6]])
    Traceback (most recent call last):
    ...
    bounds._checks.InputError: C is not symmetric: |C[0, 1] - C[1, 0]| = 0.1 (expected C = C^T within 1e-10)
    """
    tol = real_number("tol", tol, low=0)  # NaN accepted any C; '1' raised a TypeError
    require_connected = flag("require_connected", require_connected)  # 'no' meant True
    if type(C).__module__.startswith("networkx"):  # ('C has shape (5,)': a graph given for its matrix)
        raise InputError(f"C is a networkx {type(C).__name__} (expected its mixing matrix: "
                         "bounds.mixing_matrix(graph))")  # fmt: skip
    if np.ma.isMaskedArray(C) and np.ma.getmaskarray(C).any():  # (the values under the mask were used)
        raise InputError("C has masked entries (expected a plain matrix: the mask is not read; give the "
                         "values meant, with .filled())")  # fmt: skip
    kind = C.dtype.kind if sp.issparse(C) else _kind(C)
    if kind == "O":  # objects: numbers such as sympy Rationals or Fractions are real numbers too
        kind = "f" if _real_objects(C) else "?"
    if kind not in "iuf":  # strings would convert, a complex C lose its imaginary part (a warning only)
        names = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "strings"}
        what = names.get(kind, "no numbers")
        raise InputError(f"C holds {what} (expected an N x N matrix of real numbers)")
    if sp.issparse(C):
        given = C.dtype
        M = sp.csr_matrix(C, dtype=np.float64)
        values = M.data
    else:
        given = np.asarray(C).dtype
        M = np.asarray(C, dtype=np.float64)
        values = M
    row_tol = tol * max(1, M.shape[0]) if M.ndim == 2 else tol  # (float64 sums of N entries)
    low_precision = given.kind == "f" and given.itemsize < 8
    if low_precision:  # float32 (torch's default) holds 1/3 to 3e-8: its rows missed 1 by more than 1e-10
        slack = LOW_PRECISION_ULPS * float(np.finfo(given).eps)  # (a probe); a rounded entry is off by half
        tol, row_tol = tol + slack, row_tol + slack  # an ulp of itself, a row sum (entries summing to 1) too
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise InputError(f"C has shape {M.shape} (expected a non-empty square N x N matrix)")
    if not np.isfinite(values).all():
        raise InputError("C has NaN or infinite entries (expected finite numbers)")
    if values.size and values.min() < -tol:
        i, j = _argworst(-M)
        raise InputError(f"C[{i}, {j}] = {_entry(M, i, j):.6g} is negative (expected c_ij >= 0)")
    if values.size and values.max() > 1 + tol:  # before the row sums (1e308 entries overflowed them)
        i, j = _argworst(M)
        raise InputError(
            f"C[{i}, {j}] = {_entry(M, i, j):.6g} exceeds 1 (expected 0 <= c_ij <= 1: non-negative entries "
            "whose rows sum to 1)"
        )
    asym = abs(M - M.T)
    if asym.max() > tol:
        i, j = _argworst(asym)
        raise InputError(
            f"C is not symmetric: |C[{i}, {j}] - C[{j}, {i}]| = {asym.max():.6g} "
            f"(expected C = C^T within {tol:g})"
        )
    sums = np.asarray(M.sum(axis=1)).ravel()
    worst = int(np.argmax(abs(sums - 1.0)))
    if abs(sums[worst] - 1.0) > row_tol:
        raise InputError(
            f"row {worst} of C sums to {sums[worst]:.12g} (expected every row to sum to 1; "
            "this is the worst row)"
        )
    if require_connected:
        count, labels = connected_components(sp.csr_matrix(M) != 0, directed=False)
        if count > 1:
            lonely = int(np.flatnonzero(labels != labels[0])[0])
            raise InputError(
                f"the graph of C is disconnected ({count} components; node 0 cannot reach node "
                f"{lonely}), so zeta = 1 (expected a connected graph)"
            )
    return _balanced(M) if low_precision else M


def _balanced(M: Matrix) -> Matrix:
    """A low-precision C accepted by :func:`check_mixing_matrix`, made symmetric, non-negative and doubly
    stochastic in float64 (symmetric Sinkhorn scaling D M D, which keeps its zeros), so that it passes the
    float64 check again: lazy(C), a matrix: file, a run's setup check their C once more (a review: float32
    passed once and failed there). Its entries move by about the rounding it already had."""
    M = (M + M.T) / 2
    # (-slack <= c_ij < 0: rounding of a 0)
    M = sp.csr_matrix(M).maximum(0) if sp.issparse(M) else np.maximum(M, 0.0)
    for _ in range(100):
        sums = np.asarray(M.sum(axis=1)).ravel()
        if np.abs(sums - 1.0).max() <= 1e-15 * max(1, M.shape[0]):
            break
        d = 1.0 / np.sqrt(sums)
        M = (sp.diags(d) @ M @ sp.diags(d)).tocsr() if sp.issparse(M) else M * d[:, None] * d[None, :]
    return M


def _argworst(score: Matrix) -> tuple[int, int]:
    """The (row, column) of ``score``'s largest entry."""
    dense = as_dense(score)
    i, j = np.unravel_index(int(np.argmax(dense)), dense.shape)
    return int(i), int(j)


def _entry(M: Matrix, i: int, j: int) -> float:
    return float(M[i, j])


def load_matrix(path: str | Path) -> Matrix:
    """A user mixing matrix from ``.npy``, ``.npz`` (scipy sparse or key ``C``) or text (.txt/.csv).

    The matrix is validated (:func:`check_mixing_matrix`).
    """
    if not isinstance(path, str | Path):
        raise InputError(f"matrix file = {path!r} (expected a path: a str or pathlib.Path)")
    file = Path(path)
    check_topology_file(file, "matrix:")
    try:
        if file.suffix == ".npy":
            C = np.load(file, allow_pickle=False)
        elif file.suffix == ".npz":
            with np.load(file, allow_pickle=False) as archive:
                C = archive["C"] if "C" in archive.files else sp.load_npz(file)
        else:  # text: rows of numbers separated by whitespace and/or commas, whatever the suffix
            lines = file.read_text().replace(",", " ").splitlines()
            rows = [row for row in lines if row.split("#")[0].strip()]
            C = np.loadtxt(rows, ndmin=2) if rows else np.zeros((0, 0))
    except (*UNREADABLE_FILE_ERRORS, KeyError, UnicodeDecodeError) as exc:
        raise InputError(
            f"matrix file {str(file)!r} could not be read as an N x N matrix "
            f"(.npy, .npz with key 'C' or a scipy sparse matrix, or whitespace/comma text): "
            f"{unreadable_reason(file, exc) if file.suffix in ('.npy', '.npz') else exc}"
        ) from None
    if math.prod(C.shape) == 0:  # (a 0-d array has one number: check_mixing_matrix refuses it)
        raise InputError(f"matrix file {str(file)!r} holds no numbers (expected N rows of N numbers)")
    return check_mixing_matrix(C)


def topology_matrix(name: str, nodes: int | None, weights: str = "paper", seed: int = 0) -> Matrix:
    """The mixing matrix a topology argument names: ``matrix:PATH`` (a file, as given), ``edges:PATH``
    (an edge list with the weight rule ``weights``) or a graph name (``make_graph(name, nodes)``,
    ``seed`` for erdos-renyi) with ``weights``. The one resolver of the CLIs and the simulator.
    """
    from bounds.graph.topologies import from_edge_list, make_graph

    if name.startswith("matrix:"):
        return load_matrix(name.removeprefix("matrix:"))
    if name.startswith("edges:"):
        return mixing_matrix(from_edge_list(name.removeprefix("edges:")), weights)
    if nodes is None:
        raise InputError(f"--nodes is required for topology {name!r} (expected the number of nodes N)")
    options = {"seed": seed} if name == "erdos-renyi" else {}
    return mixing_matrix(make_graph(name, nodes, **options), weights)
