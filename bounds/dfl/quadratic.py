"""Exact expectations of DFL on quadratics with Gaussian gradient noise (no sampling).

Node i holds F_i(w) = (L/2) ||w - b_i||^2 + c and draws g_i(w) = grad F_i(w) + xi, with
xi independent across nodes and steps, mean 0 and E||xi||^2 = sigma^2. The means
M_t = E[X_t] (N x d) and the noise Gram matrix D_t = E[(X_t - M_t)(X_t - M_t)^T] (N x N,
summed over coordinates) then follow exactly:

* local step (X <- X - eta G):  M <- M - eta L (M - B),  D <- (1 - eta L)^2 D + eta^2 sigma^2 I;
* gossip step (X <- C X):       M <- C M,                D <- C D C.

With F = mean of the F_i, grad F(u) = L (u - b_bar), so

    E||grad F(u_t)||^2 = L^2 (||mean(M_t) - b_bar||^2 + 1^T D_t 1 / N^2),
    E||X_t (I - J)||_F^2 / N = (||M_t - mean(M_t)||_F^2 + tr((I - J) D_t)) / N,
    E||grad F(X_t)||_F^2 = L^2 (||M_t - 1 b_bar^T||_F^2 + tr(D_t))   (every node's model, eq. (103)).

L = 0 is pure noise (grad F = 0): the setting of the proof's A_1 term. Equal b_i is the
i.i.d. case of Assumption 1.4 (E g_i = grad F); different b_i break that assumption.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bounds._checks import InputError, real_array, whole_number
from bounds.dfl.schedule import local_step_mask
from bounds.graph.mixing import Matrix, as_dense, check_mixing_matrix

__all__ = [
    "NonIidQuadraticRun",
    "QuadraticRun",
    "exact_quadratic_dfl",
    "exact_quadratic_dfl_runs",
    "exact_quadratic_non_iid",
    "exact_quadratic_non_iid_runs",
]


@dataclass(frozen=True)
class QuadraticRun:
    """Per-step exact expectations for t = 1..T (entry t - 1 is the state X_t, before step t)."""

    grad_norm2: np.ndarray
    drift: np.ndarray
    node_grad_norm2: np.ndarray
    local: np.ndarray

    @property
    def grad_norm2_average(self) -> float:
        """E[(1/T) sum_t ||grad F(u_t)||^2], the left side of Proposition 1."""
        return float(self.grad_norm2.mean())

    @property
    def local_grad_sum(self) -> float:
        """S of eq. (103): the sum over local steps s of E||grad F(X_s)||_F^2."""
        return float(self.node_grad_norm2[self.local].sum())


def exact_quadratic_dfl(
    C: Matrix,
    tau1: int,
    tau2: int,
    T: int,
    *,
    eta: float,
    L: float = 1.0,
    sigma2: float = 0.0,
    targets: np.ndarray | None = None,
    w1: np.ndarray | None = None,
) -> QuadraticRun:
    """Exact E||grad F(u_t)||^2 and drift of Algorithm 1 on the quadratics above.

    Args:
        C: mixing matrix (N x N, dense).
        tau1, tau2, T: the schedule of Algorithm 1.
        eta, L, sigma2: step size, curvature, noise variance per node.
        targets: B (N x d), the minimisers b_i (default: zeros, d = 1).
        w1: the common starting point (d,) (default: zeros).
    """
    (run,) = exact_quadratic_dfl_runs(
        C, tau1, tau2, [T], eta=[eta], L=[L], sigma2=[sigma2], targets=[targets], w1=[w1]
    )
    return run


def exact_quadratic_dfl_runs(
    C: Matrix,
    tau1: int,
    tau2: int,
    T: Sequence[int],
    *,
    eta: Sequence[float],
    L: Sequence[float],
    sigma2: Sequence[float],
    targets: Sequence[np.ndarray | None],
    w1: Sequence[np.ndarray | None],
) -> list[QuadraticRun]:
    """:func:`exact_quadratic_dfl` of m problems on the same C and schedule at once (problem k: T[k],
    eta[k], L[k], sigma2[k], targets[k], w1[k]; one d for all), stacked as (m, N, d) means and (m, N, N)
    noise Gram matrices and stepped together up to max T, each by its own schedule of T[k] steps
    (:func:`_schedules`). The same numbers as m calls up to float rounding (tested)."""
    M_ = check_mixing_matrix(C, require_connected=False)
    Cd = as_dense(M_)
    n = Cd.shape[0]
    if n > 2000:
        raise InputError(f"N = {n} is too large for the exact recursion (expected N <= 2000)")
    m = len(T)
    if not (len(eta) == len(L) == len(sigma2) == len(targets) == len(w1) == m) or m == 0:
        raise InputError(
            f"{m} T, {len(eta)} eta, {len(L)} L, {len(sigma2)} sigma2, {len(targets)} targets and "
            f"{len(w1)} w1 (expected the same number of each, at least one)"
        )
    eta_ = np.array([float(real_array("eta", e, low=0, low_open=True)) for e in eta])[:, None, None]
    L_ = np.array([float(real_array("L", x, low=0)) for x in L])[:, None, None]
    s2 = np.array([float(real_array("sigma2", x, low=0)) for x in sigma2])[:, None, None]
    steps = [whole_number("T", t, low=1) for t in T]
    minimisers = [_targets(n, b) for b in targets]
    if len({b.shape[1] for b in minimisers}) > 1:
        raise InputError(
            f"the problems' targets have d = {[b.shape[1] for b in minimisers]} (expected one d for all)"
        )
    B = np.stack(minimisers)  # (m, N, d)
    d = B.shape[2]
    start = [np.zeros(d) if w is None else np.asarray(w, dtype=np.float64) for w in w1]
    M = np.stack([np.tile(w, (n, 1)) for w in start])
    D = np.zeros((m, n, n))
    centring = np.eye(n) - np.full((n, n), 1.0 / n)
    b_bar = B.mean(axis=1)  # (m, d)
    kinds = _schedules(tau1, tau2, steps)
    grad, drift, node_grad = (np.empty((len(kinds), m)) for _ in range(3))
    L2 = L_[:, 0, 0] ** 2
    diagonal = np.arange(n)

    def local(M: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        D = (1 - eta_ * L_) ** 2 * D
        D[:, diagonal, diagonal] += (eta_**2 * s2)[:, :, 0]
        return M - eta_ * L_ * (M - B), D

    def gossip(M: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return Cd @ M, Cd @ D @ Cd

    for t, is_local in enumerate(kinds):
        u = M.mean(axis=1)
        trace = np.trace(D, axis1=1, axis2=2)
        grad[t] = L2 * (((u - b_bar) ** 2).sum(-1) + D.sum((1, 2)) / n**2)
        node_grad[t] = L2 * (((M - b_bar[:, None]) ** 2).sum((1, 2)) + trace)
        drift[t] = (((M - u[:, None]) ** 2).sum((1, 2)) + np.trace(centring @ D, axis1=1, axis2=2)) / n
        M, D = _step_each(is_local, local, gossip, M, D)
    return [
        QuadraticRun(grad[:T_k, k].copy(), drift[:T_k, k].copy(), node_grad[:T_k, k].copy(), kinds[:T_k, k])
        for k, T_k in enumerate(steps)
    ]


def _schedules(tau1: int, tau2: int, steps: Sequence[int]) -> np.ndarray:
    """Each problem's :func:`~bounds.dfl.schedule.local_step_mask` of its own T = steps[k], as the columns of
    one (max T) x m array (a column is padded with local steps after its T, which no quantity reads). A
    shorter schedule is not always a prefix of a longer one: with T not a multiple of tau1 + tau2 its
    tail of T - K tau steps is local where the longer one gossips."""
    kinds = np.ones((max(steps), len(steps)), dtype=bool)
    for k, T in enumerate(steps):
        kinds[:T, k] = local_step_mask(tau1, tau2, T)
    return kinds


def _step_each(
    is_local: np.ndarray,
    local: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    gossip: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    M: np.ndarray,
    S: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """One step of stacked problems (M, S) (leading axis m), problem k local where is_local[k], else a
    gossip step: one of the two maps when all agree, else both and each problem's own."""
    if is_local.all():
        return local(M, S)
    if not is_local.any():
        return gossip(M, S)
    (M_local, S_local), (M_gossip, S_gossip) = local(M, S), gossip(M, S)
    pick = is_local[:, None, None]
    return np.where(pick, M_local, M_gossip), np.where(pick, S_local, S_gossip)


def _targets(n: int, targets: np.ndarray | None) -> np.ndarray:
    """The minimisers B (N x d) checked (None: zeros, d = 1)."""
    B = np.zeros((n, 1)) if targets is None else np.asarray(targets, dtype=np.float64)
    if B.ndim != 2 or B.shape[0] != n:
        raise InputError(f"targets have shape {B.shape} (expected N x d with N = {n})")
    return B


SERIES = ("grad", "drift", "node", "hetero", "moment")
"""The per-step series a non-i.i.d. quadratic recursion fills, in :class:`NonIidQuadraticRun`'s order."""


@dataclass(frozen=True)
class NonIidQuadraticRun:
    """Per-step exact expectations of a non-i.i.d. quadratic run (entry t - 1 is the state X_t)."""

    grad_norm2: np.ndarray
    """E||grad F(u_t)||^2."""
    drift: np.ndarray
    """E||X_t (I - J)||_F^2 / N."""
    node_grad_norm2: np.ndarray
    """E||grad F(X_t)||_F^2: the global F's gradient at every node's model (the S of (103))."""
    heterogeneity: np.ndarray
    """E (1/N) sum_i ||grad f_i(u_t) - grad F(u_t)||^2 at the average model."""
    second_moment: np.ndarray
    """E||X_t||_F^2 / N: the scale of the state (the recursion's rounding floor is eps times it)."""
    local: np.ndarray
    L: float
    """max_i ||A_i||_2: every f_i is L-smooth."""

    @property
    def local_drift_mean(self) -> float:
        """Mean over the local steps t of E||X_t (I - J)||_F^2 / N (the repair's drift quantity)."""
        return float(self.drift[self.local].mean())

    @property
    def varsigma2(self) -> float:
        """The largest E heterogeneity at the local steps: the varsigma^2 the derivation needs."""
        return float(self.heterogeneity[self.local].max())


def exact_quadratic_non_iid(
    C: Matrix,
    tau1: int,
    tau2: int,
    T: int,
    *,
    eta: float,
    curvatures: np.ndarray,
    minimisers: np.ndarray,
    sigma2: float = 0.0,
    w1: np.ndarray | None = None,
) -> NonIidQuadraticRun:
    """Exact expectations of Algorithm 1 on f_i(w) = (1/2)(w - a_i)^T A_i (w - a_i), node-specific A_i, a_i.

    g_i(w) = A_i (w - a_i) + xi with xi independent across nodes and steps, mean 0, covariance
    (sigma^2 / d) I (so E||xi||^2 = sigma^2). The mean M_t = E[X_t] (N x d) and the covariance S_t of
    vec(X_t) (node-major, Nd x Nd) follow exactly: a local step maps x_i to (I - eta A_i) x_i +
    eta A_i a_i - eta xi_i, so M_i <- (I - eta A_i) M_i + eta A_i a_i and S <- B S B^T + eta^2
    (sigma^2 / d) I with B = blockdiag(I - eta A_i); a gossip step maps M to C M and S to
    (C kron I) S (C kron I)^T. Every reported quantity is a quadratic form in X, so its expectation
    is exact from (M_t, S_t).

    Args:
        C: mixing matrix (N x N).
        tau1, tau2, T: the schedule of Algorithm 1.
        eta, sigma2: step size and noise variance per node.
        curvatures: A (N x d x d), symmetric positive semi-definite.
        minimisers: a (N x d).
        w1: the common start (d,) (default: the minimiser of F, so that all drift is heterogeneity's).
    """
    (run,) = exact_quadratic_non_iid_runs(
        C, tau1, tau2, [T], eta=[eta], curvatures=[curvatures], minimisers=[minimisers], sigma2=[sigma2],
        w1=[w1],
    )  # fmt: skip
    return run


def exact_quadratic_non_iid_runs(
    C: Matrix,
    tau1: int,
    tau2: int,
    T: Sequence[int],
    *,
    eta: Sequence[float],
    curvatures: Sequence[np.ndarray],
    minimisers: Sequence[np.ndarray],
    sigma2: Sequence[float],
    w1: Sequence[np.ndarray | None],
) -> list[NonIidQuadraticRun]:
    """:func:`exact_quadratic_non_iid` of m problems on the same C and schedule at once: problem k has its
    own T[k], eta[k], curvatures[k] (N x d x d), minimisers[k] (N x d), sigma2[k] and w1[k] (same N and d).

    The m recursions are stacked ((m, N, d) means, (m, Nd, Nd) covariances) and stepped together up to
    max T, each by its own schedule of T[k] steps (:func:`_schedules`). The same numbers as m separate
    calls up to float rounding (tested); one step of m problems costs about as much as one step of one
    problem in numpy's per-call overhead, which dominates at N d <= 400.
    """
    M_ = check_mixing_matrix(C, require_connected=False)
    Cd = as_dense(M_)
    n = Cd.shape[0]
    m = len(T)
    if not (len(eta) == len(curvatures) == len(minimisers) == len(sigma2) == len(w1) == m) or m == 0:
        raise InputError(
            f"{m} T, {len(eta)} eta, {len(curvatures)} curvatures, {len(minimisers)} minimisers, "
            f"{len(sigma2)} sigma2 and {len(w1)} w1 (expected the same number of each, at least one)"
        )
    problems = [_non_iid_problem(n, *args) for args in zip(curvatures, minimisers, w1, strict=True)]
    if len({p[0].shape[1] for p in problems}) > 1:
        raise InputError(
            f"the problems' dimensions d differ {[p[0].shape[1] for p in problems]} (expected one d for all)"
        )
    A = np.stack([p[0] for p in problems])  # (m, N, d, d)
    a = np.stack([p[1] for p in problems])
    d = A.shape[2]
    eta_ = np.array([float(real_array("eta", e, low=0, low_open=True)) for e in eta])
    s2 = np.array([float(real_array("sigma2", s, low=0)) for s in sigma2])
    steps = [whole_number("T", t, low=1) for t in T]
    A_bar = A.mean(axis=1)  # (m, d, d)
    b_bar = np.einsum("mnij,mnj->mi", A, a) / n
    M = np.stack([np.tile(p[2], (n, 1)) for p in problems])  # (m, N, d)
    S = np.zeros((m, n * d, n * d))
    eye = np.eye(d)
    step = np.zeros((m, n * d, n * d))  # blockdiag(I - eta A_i)
    for i in range(n):
        step[:, i * d : (i + 1) * d, i * d : (i + 1) * d] = eye - eta_[:, None, None] * A[:, i]
    step_t = step.transpose(0, 2, 1)
    gossip_matrix = np.kron(Cd, eye)
    average = np.kron(np.full((1, n), 1.0 / n), eye)  # u = average @ vec(X)
    centring = np.kron(np.eye(n) - np.full((n, n), 1.0 / n), eye)  # tr(centring S): drift noise
    AtA = A_bar.transpose(0, 2, 1) @ A_bar
    global_gram = np.einsum("ij,mkl->mikjl", np.eye(n), AtA).reshape(m, n * d, n * d)  # I kron A_bar^T A_bar
    spread = A - A_bar[:, None]  # grad f_i(u) - grad F(u) = (A_i - A_bar) u - (A_i a_i - b_bar)
    spread_gram = np.einsum("mnji,mnjk->mik", spread, spread)  # sum_i (A_i - A_bar)^T (A_i - A_bar)
    offsets = np.einsum("mnij,mnj->mni", A, a) - b_bar[:, None]
    noise = (eta_**2 * s2 / d)[:, None]  # added to the diagonal of S at a local step
    pull = eta_[:, None, None] * np.einsum("mnij,mnj->mni", A, a)
    kinds = _schedules(tau1, tau2, steps)
    out = {k: np.empty((len(kinds), m)) for k in SERIES}
    diagonal = np.arange(n * d)

    def local(M: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        S = step @ S @ step_t
        S[:, diagonal, diagonal] += noise
        return M - eta_[:, None, None] * np.einsum("mnij,mnj->mni", A, M) + pull, S

    def gossip(M: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return Cd @ M, gossip_matrix @ S @ gossip_matrix.T

    for t, is_local in enumerate(kinds):
        u = M.mean(axis=1)  # (m, d)
        cov_u = average @ S @ average.T  # (m, d, d)
        residual = np.einsum("mij,mj->mi", A_bar, u) - b_bar
        out["grad"][t] = (residual**2).sum(-1) + (AtA * cov_u).sum((-2, -1))
        out["drift"][t] = (((M - u[:, None]) ** 2).sum((-2, -1)) + (centring * S).sum((-2, -1))) / n
        out["node"][t] = ((M @ A_bar - b_bar[:, None]) ** 2).sum((-2, -1)) + (global_gram * S).sum((-2, -1))
        mean_part = ((np.einsum("mnij,mj->mni", spread, u) - offsets) ** 2).sum((-2, -1))
        out["hetero"][t] = (mean_part + (spread_gram * cov_u).sum((-2, -1))) / n
        out["moment"][t] = ((M**2).sum((-2, -1)) + np.trace(S, axis1=1, axis2=2)) / n
        M, S = _step_each(is_local, local, gossip, M, S)
    runs = []
    for k, T_k in enumerate(steps):
        grad, drift, node, hetero, moment = (out[key][:T_k, k].copy() for key in SERIES)
        runs.append(NonIidQuadraticRun(grad, drift, node, hetero, moment, kinds[:T_k, k], problems[k][3]))
    return runs


def _non_iid_problem(
    n: int, curvatures: np.ndarray, minimisers: np.ndarray, w1: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One problem's (A, a, w1, L) checked: A (N x d x d) symmetric positive semi-definite, a (N x d), w1 (d,)
    (None: the minimiser of F); L = max_i ||A_i||_2 from the same eigenvalues as the check."""
    A = np.asarray(curvatures, dtype=np.float64)
    a = np.asarray(minimisers, dtype=np.float64)
    if A.ndim != 3 or A.shape[0] != n or A.shape[1] != A.shape[2]:
        raise InputError(f"curvatures have shape {A.shape} (expected N x d x d with N = {n})")
    d = A.shape[1]
    if a.shape != (n, d):
        raise InputError(f"minimisers have shape {a.shape} (expected N x d = {n} x {d})")
    if n * d > 400:
        raise InputError(f"N d = {n * d} is too large for the exact recursion (expected N d <= 400)")
    eigenvalues = np.linalg.eigvalsh(A) if np.allclose(A, A.transpose(0, 2, 1)) else None
    if eigenvalues is None or eigenvalues.min() < -1e-12:
        raise InputError(
            "curvatures are not all symmetric positive semi-definite (expected A_i = A_i^T >= 0)"
        )
    L = float(eigenvalues.max())
    if w1 is None:
        A_bar, b_bar = A.mean(axis=0), np.einsum("nij,nj->i", A, a) / n
        return A, a, np.linalg.lstsq(A_bar, b_bar, rcond=None)[0], L
    return A, a, np.asarray(w1, dtype=np.float64), L
