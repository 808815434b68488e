"""Spectral quantities of a mixing matrix C (Assumption 1.6, Lemma 7).

* ``zeta = max(|lambda_2(C)|, |lambda_N(C)|)``, which by Lemma 7 equals
  ``||C - J||_op`` (we use the latter as the definition, so N = 1 gives 0);
* ``rho = 1 - zeta``, the spectral gap of Proposition 2;
* ``beta = ||I - C||_2 = 1 - lambda_N(C)`` of Assumption 1.6, called
  ``beta_mix`` in Python to keep it apart from Lemma 2's variance-growth
  parameter (``beta_var`` in :mod:`bounds.dfl.proposition1`), which the paper also
  writes beta;
* ``||C^j - J||_op`` by an explicit matrix power (:func:`consensus_op_norm`),
  an independent check of Lemma 7 (``= zeta^j``).

Dense matrices use ``numpy.linalg.eigvalsh``. Sparse matrices (large N) use
Lanczos on C - J; when Lanczos stalls (rings, paths, tori: eigenvalues
crowd near 1) zeta is taken from the largest eigenvalue 1 / (1 - zeta^2) of
((I - C) (I + C))^+ restricted to 1-perp, applied with two sparse LU solves,
which separates the crowded eigenvalues. :func:`zeta` of a 10,000-node ring
takes well under a second; :func:`spectral_summary` also needs lambda_N (for
beta), which Lanczos finds slowly on rings and paths (a few seconds at N = 10^4).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import networkx as nx
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from scipy.sparse.csgraph import connected_components

from bounds._checks import InputError, flag, whole_number
from bounds.graph.mixing import Matrix, check_mixing_matrix

__all__ = ["SpectralSummary", "consensus_op_norm", "has_eigenvalue_minus_one", "spectral_summary", "zeta"]

DISCONNECTED_TOL = 1e-12
_DENSE_OP_NORM_MAX_NODES = 5000


@dataclass(frozen=True)
class SpectralSummary:
    """Spectrum of C as the bounds use it.

    Attributes:
        nodes: N.
        lambda_2: second largest eigenvalue (NaN when N = 1, and for a large sparse periodic C,
            with ``allow_disconnected``, where Lanczos does not converge on it).
        lambda_N: smallest eigenvalue (NaN when N = 1).
        zeta: max(|lambda_2|, |lambda_N|) = ||C - J||_op.
        rho: 1 - zeta.
        beta_mix: ||I - C||_2 (Assumption 1.6), in [0, 2].
        method: how the eigenvalues were computed.
    """

    nodes: int
    lambda_2: float
    lambda_N: float
    zeta: float
    rho: float
    beta_mix: float
    method: str

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict (NaN as ``None``); ``beta_mix`` keeps its name, as in the API and the CLI."""
        out = asdict(self)
        return {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in out.items()}


def spectral_summary(C: Matrix, *, allow_disconnected: bool = False) -> SpectralSummary:
    """Eigenvalue summary of a mixing matrix.

    Args:
        C: symmetric doubly stochastic matrix (dense or scipy sparse); validated.
        allow_disconnected: return zeta = 1 instead of raising for a
            disconnected or periodic C.

    Raises:
        InputError: C is not a valid mixing matrix, or zeta = 1 and
            ``allow_disconnected`` is false.

    >>> from bounds.graph.topologies import ring
    >>> from bounds.graph.mixing import mixing_matrix
    >>> round(spectral_summary(mixing_matrix(ring(10))).zeta, 4)
    0.8727
    """
    allow_disconnected = flag("allow_disconnected", allow_disconnected)
    M = _dense_if_small_or_J(check_mixing_matrix(C, require_connected=not allow_disconnected))
    return _summary(M, allow_disconnected)


def _summary(M: Matrix, allow_disconnected: bool) -> SpectralSummary:
    """:func:`spectral_summary` of a checked C (checked again, a float32 C failed: its float64 copy's rows
    miss 1 by more than float64's tolerance)."""
    n = M.shape[0]
    if n == 1:
        return SpectralSummary(1, float("nan"), float("nan"), 0.0, 1.0, 0.0, "trivial (N = 1)")
    if sp.issparse(M):
        lam2, lamN, z, method = _sparse_spectrum(M)
    else:
        ev = np.linalg.eigvalsh(M)
        lam2, lamN = _zero_within_rounding(float(ev[-2]), n), _zero_within_rounding(float(ev[0]), n)
        z, method = max(abs(lam2), abs(lamN)), "dense eigvalsh"
    z = min(z, 1.0)
    if z >= 1.0 - DISCONNECTED_TOL and not allow_disconnected:
        raise InputError(_zeta_one_message(lamN))
    return SpectralSummary(n, lam2, lamN, z, 1.0 - z, 1.0 - lamN, method)


def _zero_within_rounding(eigenvalue: float, n: int) -> float:
    """0 for an eigenvalue of a dense n x n C (norm 1) within eigvalsh's rounding of 0, n float64 epsilons:
    C = J (the complete graph) printed zeta = 6.3e-17, lambda_N = -5.8e-17 for N = 10, noise for the exact
    0 (a probe); a connected graph's lambda_2 is never that small but for C = J's zeros."""
    return 0.0 if abs(eigenvalue) <= n * np.finfo(np.float64).eps else eigenvalue


def zeta(C: Matrix, *, allow_disconnected: bool = False) -> float:
    """zeta = max(|lambda_2(C)|, |lambda_N(C)|) = ||C - J||_op (Proposition 1, Lemma 7).

    Faster than :func:`spectral_summary` for large sparse C: lambda_N is not
    computed unless needed.

    >>> import numpy as np
    >>> round(zeta(np.full((4, 4), 0.25)), 12)  # C = J
    0.0
    """
    allow_disconnected = flag("allow_disconnected", allow_disconnected)
    M = _dense_if_small_or_J(check_mixing_matrix(C, require_connected=not allow_disconnected))
    if not sp.issparse(M) or M.shape[0] == 1:
        return _summary(M, allow_disconnected).zeta
    if connected_components(M != 0, directed=False)[0] > 1:  # eigenvalue 1 twice: Lanczos may miss it
        return 1.0
    periodic = _periodic(M)  # eigenvalue -1: Lanczos settled on lambda_2 (0.99999 for a 1,600-ring, a probe)
    z = 1.0 if periodic else min(_sparse_zeta(M), 1.0)
    if z >= 1.0 - DISCONNECTED_TOL and not allow_disconnected:
        raise InputError(_zeta_one_message(-1.0 if periodic else float("nan")))
    return z


DENSE_UP_TO = 200
"""Sparse matrices of at most this many nodes are solved dense (ARPACK needs n > k + 1 Lanczos vectors:
a sparse 2 x 2 C raised scipy's 'ncv must be k<ncv<=n'), as is a sparse C = J (C - J = 0 gave ARPACK's
'Starting vector is zero')."""


def _dense_if_small_or_J(M: Matrix) -> Matrix:
    """M as a dense array where Lanczos cannot or need not run (:data:`DENSE_UP_TO`, C = J), else as is."""
    if isinstance(M, np.ndarray):
        return M
    n = M.shape[0]
    if n <= DENSE_UP_TO or (M.nnz == n * n and np.allclose(M.data, 1.0 / n, rtol=0, atol=1e-15)):
        return M.toarray()
    return M


def _zeta_one_message(lamN: float) -> str:
    if lamN <= -1.0 + DISCONNECTED_TOL:
        why = (
            "C has eigenvalue -1 (a bipartite graph with zero self-weights: gossip "
            "oscillates); use lazy weights (C + I) / 2"
        )
    else:
        why = "the graph of C is disconnected (or C = I)"
    return f"zeta = 1: {why} (expected a connected, aperiodic C with zeta < 1)"


def _minus_J(M: sp.csr_matrix) -> sla.LinearOperator:
    n = M.shape[0]

    def matvec(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v).reshape(n, -1)
        return M @ v - v.mean(axis=0, keepdims=True)

    return sla.LinearOperator((n, n), matvec=matvec, matmat=matvec, dtype=np.float64)


def _lanczos(
    op: sla.LinearOperator, which: str, maxiter: int | None, *, ncv: int = 32, tol: float = 1e-12
) -> float | None:
    n = op.shape[0]
    start = np.random.default_rng(0).standard_normal(n)  # a fixed start vector: the same answer every call
    try:
        value = sla.eigsh(
            op, k=1, which=which, ncv=min(n - 1, ncv), tol=tol, maxiter=maxiter, v0=start,
            return_eigenvectors=False,
        )  # fmt: skip
    except sla.ArpackNoConvergence:
        return None
    return float(value[0])


def _folded_zeta(M: sp.csr_matrix) -> float:
    """zeta from the top eigenvalue 1 / (1 - zeta^2) of ((I - C)(I + C))^+ on 1-perp."""
    n = M.shape[0]
    eye = sp.identity(n, format="csc")
    laplacian = (eye - M).tocsc()
    try:
        grounded = sla.splu(laplacian[:-1, :-1].tocsc())
        plus = sla.splu((eye + M).tocsc())
    except RuntimeError:  # singular: disconnected (grounded) or eigenvalue -1 (plus)
        return 1.0

    def matvec(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v).ravel()
        x = np.zeros(n)
        x[:-1] = grounded.solve(v[:-1] - v.mean())
        y = plus.solve(x - x.mean())
        return y - y.mean()

    op = sla.LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    top = _lanczos(op, "LA", None)
    if top is None or top <= 1.0:
        return 1.0
    return float(np.sqrt(1.0 - 1.0 / top))


def _sparse_zeta(M: sp.csr_matrix) -> float:
    direct = _lanczos(_minus_J(M), "LM", maxiter=30)
    return abs(direct) if direct is not None else _folded_zeta(M)


def has_eigenvalue_minus_one(C: Matrix) -> bool:
    """Whether gossip through C oscillates for ever: C has eigenvalue -1 by its structure (a component with
    a zero diagonal and a bipartite graph, :func:`_periodic`), so zeta = 1 and the nodes never agree. Exact,
    no eigenvalues computed; C is taken as a valid mixing matrix (:func:`check_mixing_matrix`)."""
    return _periodic(sp.csr_matrix(C))


def _periodic(M: sp.csr_matrix) -> bool:
    """Whether C has eigenvalue -1 by its structure: a connected component with a zero diagonal and a
    bipartite graph (parts A, B), so that v = 1 on A, -1 on B, 0 elsewhere gives C v = -v exactly (every row
    of C sums to 1 and reaches only the other part). Lanczos, which sees -1 and lambda_2 close to 1 as nearly
    equal in magnitude, may miss it."""
    diagonal = M.diagonal()
    if diagonal.all():
        return False
    graph = nx.from_scipy_sparse_array(M != 0)  # (a stored zero is no edge: C.setdiag(0) stores N of them)
    return any(
        not diagonal[list(part)].any() and nx.is_bipartite(graph.subgraph(part))
        for part in nx.connected_components(graph)
    )


def _sparse_spectrum(M: sp.csr_matrix) -> tuple[float, float, float, str]:
    lam2: float | None
    if _periodic(M):  # lambda_N = -1 exactly (see _periodic)
        if connected_components(M != 0, directed=False)[0] > 1:  # eigenvalue 1 twice: Lanczos gave the
            lam2 = 1.0  # next one (0.99997 for two 800-rings)
        else:
            lam2 = _lanczos(_minus_J(M), "LA", maxiter=30)
        if lam2 is None:  # (NaN for a 1,600-ring): lambda_2 from the lazy (C + I) / 2, whose spectrum
            lazy = sp.csr_matrix((M + sp.identity(M.shape[0])) / 2)  # (lambda + 1) / 2 is >= 0, so its
            lam2 = 2.0 * _sparse_zeta(lazy) - 1.0  # zeta is its lambda_2 (the folded solve converges)
        return lam2, -1.0, 1.0, "bipartite graph, zero diagonal: lambda_N = -1"
    z = _sparse_zeta(M)
    # lambda_N only enters beta_mix; rings and paths crowd it (seconds at N = 10^4)
    lamN = _lanczos(sp.csr_matrix(M), "SA", None, ncv=128, tol=1e-9)
    lam2 = _lanczos(_minus_J(M), "LA", maxiter=30)
    if lam2 is None or lam2 < z - 1e-9:
        # the top of C - J is zeta itself unless zeta = |lambda_N|
        lam2 = z if lamN is None or abs(lamN) < z - 1e-9 else lam2
    if lam2 is None or lamN is None:
        raise InputError("the sparse eigenvalue solver did not converge (expected a smaller or denser C)")
    return lam2, lamN, z, "sparse Lanczos (ARPACK) with LU-folded fallback"


def consensus_op_norm(C: Matrix, j: int) -> float:
    """||C^j - J||_op computed from the explicit matrix power C^j (Lemma 7 says = zeta^j).

    >>> import numpy as np
    >>> C = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> round(consensus_op_norm(C, 3), 6)  # zeta = 0.5, zeta^3
    0.125
    """
    j = whole_number("j", j, low=0)  # (the power)
    M = check_mixing_matrix(C, require_connected=False)
    n = M.shape[0]
    if not isinstance(M, np.ndarray):  # sparse
        if n > _DENSE_OP_NORM_MAX_NODES:
            raise InputError(
                f"N = {n} is too large for the dense matrix power (expected N <= {_DENSE_OP_NORM_MAX_NODES})"
            )
        M = M.toarray()
    power = np.linalg.matrix_power(M, int(j)) - np.full((n, n), 1.0 / n)
    return float(np.linalg.norm(power, 2))
