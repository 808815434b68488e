"""zeta, rho, beta: paper values, closed forms, dense against sparse."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from bounds import InputError, consensus_op_norm, make_graph, mixing_matrix, spectral_summary, zeta
from bounds.graph.topologies import quasi_ring, ring


def ring_lambda(n: int, k: int) -> float:
    """Eigenvalue k of the equal-weight ring (circulant): 1/3 + 2/3 cos(2 pi k / n)."""
    return 1 / 3 + 2 / 3 * math.cos(2 * math.pi * k / n)


def test_paper_ring_has_zeta_087() -> None:
    s = spectral_summary(mixing_matrix(ring(10)))
    assert round(s.zeta, 2) == 0.87
    assert np.isclose(s.zeta, ring_lambda(10, 1), rtol=1e-13)
    assert np.isclose(s.lambda_N, ring_lambda(10, 5)) and np.isclose(s.beta_mix, 4 / 3)
    assert np.isclose(s.rho, 1 - s.zeta)


def test_our_quasi_ring_has_zeta_085() -> None:
    s = spectral_summary(mixing_matrix(quasi_ring(10), "metropolis"))
    assert round(s.zeta, 2) == 0.85 and 0.849 < s.zeta < 0.850


def test_complete_graph_with_paper_weights_is_J() -> None:
    assert spectral_summary(mixing_matrix(make_graph("complete", 9))).zeta == pytest.approx(0, abs=1e-12)


def test_single_node() -> None:
    s = spectral_summary(np.array([[1.0]]))
    assert s.zeta == 0 and s.rho == 1 and s.beta_mix == 0 and math.isnan(s.lambda_2)
    assert s.to_dict()["lambda_2"] is None


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("ring", "paper"),
        ("path", "metropolis"),
        ("erdos-renyi", "metropolis"),
        ("torus", "paper"),
        ("exponential", "metropolis"),
        ("star", "lazy"),
    ],
)
def test_sparse_solver_matches_dense(name: str, rule: str) -> None:
    n = 400
    C = mixing_matrix(make_graph(name, n), rule)
    dense = spectral_summary(C)
    sparse = spectral_summary(sp.csr_matrix(C))
    assert sparse.method.startswith("sparse")
    assert sparse.zeta == pytest.approx(dense.zeta, abs=1e-10)
    assert sparse.lambda_2 == pytest.approx(dense.lambda_2, abs=1e-8)
    assert sparse.lambda_N == pytest.approx(dense.lambda_N, abs=1e-7)
    assert zeta(sp.csr_matrix(C)) == pytest.approx(dense.zeta, abs=1e-10)


def test_ten_thousand_node_ring_against_its_closed_form() -> None:
    z = zeta(mixing_matrix(ring(10_000)))
    assert abs(z - ring_lambda(10_000, 1)) < 1e-12


def test_consensus_op_norm_is_zeta_power_lemma7() -> None:
    C = mixing_matrix(ring(10))
    z = zeta(C)
    for j in range(0, 30, 3):
        assert consensus_op_norm(C, j) == pytest.approx(z**j, rel=1e-9)
    with pytest.raises(InputError, match=r"j = -1 is out of range \(expected an integer >= 0\)"):
        consensus_op_norm(C, -1)
    with pytest.raises(InputError, match=r"j = 2.5 is not a whole number"):
        consensus_op_norm(C, 2.5)
    assert consensus_op_norm(C, 3.0) == consensus_op_norm(C, 3)  # (3.0 was refused, 10.0 nodes taken)


def test_zeta_one_is_an_error_with_the_reason() -> None:
    flip = np.array([[0.0, 1.0], [1.0, 0.0]])  # eigenvalue -1: periodic gossip
    with pytest.raises(InputError, match=r"zeta = 1: C has eigenvalue -1 .* use lazy weights"):
        spectral_summary(flip)
    assert spectral_summary(flip, allow_disconnected=True).zeta == 1.0
    with pytest.raises(InputError, match=r"disconnected"):
        spectral_summary(np.eye(4))
    assert spectral_summary(np.eye(4), allow_disconnected=True).zeta == 1.0
    block = sp.block_diag([mixing_matrix(ring(600))] * 2, format="csr")
    assert zeta(block, allow_disconnected=True) == pytest.approx(1.0, abs=1e-9)


def _zero_diagonal_ring(n: int) -> sp.csr_matrix:
    """A ring with weights 1/2 to each neighbour and none on itself: eigenvalue -1 exactly for even n."""
    R = sp.diags([np.full(n - 1, 0.5), np.full(n - 1, 0.5)], [1, -1], format="lil")
    R[0, n - 1] = R[n - 1, 0] = 0.5
    return R.tocsr()


@pytest.mark.parametrize("n", [1200, 1600])
def test_a_large_sparse_periodic_c_is_refused_as_the_dense_one_is(n: int) -> None:
    """Lanczos settled on lambda_2 = cos(2 pi / n) and zeta() answered 0.99999 for a sparse bipartite C with a
    zero diagonal, which the dense path refuses (a probe); spectral_summary said the solver did not converge.
    Its eigenvalue -1 is now read from the structure (bipartite, zero diagonal)."""
    R = _zero_diagonal_ring(n)
    assert np.linalg.eigvalsh(R.toarray())[0] == pytest.approx(-1.0, abs=1e-12)  # the claim, independently
    for solve in (zeta, spectral_summary):
        with pytest.raises(InputError, match=r"zeta = 1: C has eigenvalue -1 \(a bipartite graph"):
            solve(R)
    assert zeta(R, allow_disconnected=True) == 1.0
    summary = spectral_summary(R, allow_disconnected=True)
    assert (summary.zeta, summary.lambda_N, summary.beta_mix) == (1.0, -1.0, 2.0)
    stored = R.copy()
    with warnings.catch_warnings():  # (scipy: changing a CSR's structure is slow; wanted here)
        warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
        stored.setdiag(0.0)  # explicit zeros: a self-loop (or an odd chord) for a graph of the stored entries
        stored[0, 2] = stored[2, 0] = 0.0
    assert stored.nnz > R.nnz
    with pytest.raises(InputError, match="eigenvalue -1"):  # (a review: stored zeros hid the bipartite graph)
        zeta(stored)
    lazy = sp.csr_matrix(mixing_matrix(ring(600)))
    summary = spectral_summary(sp.block_diag([R, lazy], format="csr"), allow_disconnected=True)
    assert summary.lambda_N == -1.0  # one periodic component suffices ("did not converge" before, a review)
    assert (
        spectral_summary(sp.block_diag([lazy, lazy], format="csr"), allow_disconnected=True).lambda_N > -0.34
    )
    odd = _zero_diagonal_ring(n + 1)  # not bipartite: zeta = cos(pi / (n + 1)) < 1, by Lanczos
    assert zeta(odd) == pytest.approx(np.cos(np.pi / (n + 1)), abs=1e-12)
    import networkx as nx

    walk = nx.to_scipy_sparse_array(make_graph("hypercube", 1024), format="csr") / 10  # 10 neighbours each
    with pytest.raises(InputError, match="eigenvalue -1"):  # said "disconnected (or C = I)"
        zeta(sp.csr_matrix(walk))


@pytest.mark.parametrize("n", [400, 1600, 10_000])
def test_lambda_2_of_a_large_periodic_c_is_its_own_not_nan(n: int) -> None:
    """With allow_disconnected, spectral_summary gave lambda_2 = NaN for a 1,600-ring with a zero diagonal
    (Lanczos on C - J did not converge in its 30 restarts), and 0.99997 (the next eigenvalue) for two
    800-rings, whose lambda_2 is 1. Against the closed form cos(2 pi / n) of the ring and the block matrix's
    eigenvalue 1 twice."""
    summary = spectral_summary(_zero_diagonal_ring(n), allow_disconnected=True)
    assert summary.lambda_2 == pytest.approx(np.cos(2 * np.pi / n), abs=1e-12)
    assert (summary.lambda_N, summary.zeta) == (-1.0, 1.0)
    if n == 1600:
        two = sp.block_diag([_zero_diagonal_ring(800)] * 2, format="csr")
        assert spectral_summary(two, allow_disconnected=True).lambda_2 == 1.0


def test_a_float32_mixing_matrix_is_taken_to_its_precision_and_a_graph_is_named() -> None:
    """zeta of a float32 C (torch's default dtype) was refused: 'row 0 of C sums to 1.0000000298', as every
    lower-precision C; a networkx graph given for C was 'C has shape (5,)' (a probe of the library). A
    float32 C is checked to its own precision (a row sum off by 1e-5 is still refused)."""
    import torch

    C = mixing_matrix(ring(10))
    exact = zeta(C)
    low = C.astype(np.float32)
    for given in (low, torch.tensor(C, dtype=torch.float32), sp.csr_matrix(low), C.astype(np.float16)):
        assert zeta(given) == pytest.approx(exact, abs=1e-3 if given.dtype == np.float16 else 1e-6)
        assert spectral_summary(given).zeta == zeta(given)
    with pytest.raises(InputError, match=r"^row 0 of C sums to 1.00001"):
        zeta((C + 1e-5 * np.eye(10)).astype(np.float32))
    # checked once, a float32 C failed the next check of its float64 copy (lazy(C), a matrix: file, a run's
    # setup: a review); it comes back balanced, and 16 ulps of slack let a float16 C whose rows sum to
    # 1.0098 through
    from bounds.graph.mixing import check_mixing_matrix, lazy

    checked = check_mixing_matrix(low)
    assert check_mixing_matrix(checked) is checked and zeta(lazy(low)) == pytest.approx(
        zeta(lazy(C)), abs=1e-6
    )
    assert np.abs(checked.sum(axis=1) - 1).max() < 1e-14 and (checked == checked.T).all()
    assert consensus_op_norm(low, 3) == pytest.approx(exact**3, abs=1e-6)
    with pytest.raises(InputError, match=r"^row 0 of C sums to 1.009765625"):
        zeta(np.array([[0.51, 0.5], [0.5, 0.51]], dtype=np.float16))
    with pytest.raises(InputError, match=r"^C\[0, 1\] = -0.00780106 is negative"):
        zeta(np.array([[1.0078, -0.0078], [-0.0078, 1.0078]], dtype=np.float16))
    with pytest.raises(InputError, match=r"^row 0 of C sums to 1.0000000298"):  # float64 keeps its 1e-10
        zeta(C.astype(np.float32).astype(np.float64))
    with pytest.raises(InputError, match=r"^C is a networkx Graph \(expected its mixing matrix: "):
        zeta(make_graph("ring", 5))


def test_the_complete_graphs_zeros_are_zero_not_rounding_noise() -> None:
    """C = J: dfl-bounds printed zeta = 6.30023e-17 and lambda_N = -5.83492e-17 for N = 10 (eigvalsh's
    rounding of the exact 0, a probe); a ring's lambda_2 and a lazy C's are untouched."""
    for n in (2, 3, 10, 64):
        s = spectral_summary(np.full((n, n), 1.0 / n))
        assert (s.lambda_2, s.lambda_N, s.zeta) == (0.0, 0.0, 0.0), (n, s)
    ring = spectral_summary(mixing_matrix(make_graph("ring", 10)))
    assert ring.zeta == pytest.approx((1 + 2 * np.cos(2 * np.pi / 10)) / 3, abs=1e-14)
    lazy = spectral_summary(0.5 * np.eye(4) + 0.5 * np.full((4, 4), 0.25))
    assert lazy.zeta == pytest.approx(0.5, abs=1e-15)
