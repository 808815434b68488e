"""Property tests of the spectral lemmas and the sums in the proof of Proposition 1.

Random symmetric doubly stochastic matrices (random connected graphs, random
weights, N from 2 to 50) must satisfy Lemmas 5, 6, 7 to tight tolerance, and
the closed forms of the proof's geometric sums must equal brute-force sums.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from conftest import mixing_matrices
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bounds import consensus_op_norm, spectral_summary
from bounds.dfl import formulas as f
from bounds.dfl import proof_sums as ps

RTOL = 1e-9


def _J(n: int) -> np.ndarray:
    return np.full((n, n), 1.0 / n)


@settings(max_examples=60, deadline=None)
@given(C=mixing_matrices(), d=st.integers(1, 8), seed=st.integers(0, 2**31))
def test_lemma5_frobenius_of_product_bounded_by_op_norm(C: np.ndarray, d: int, seed: int) -> None:
    """Lemma 5: ||A B||_F <= ||B||_op ||A||_F for symmetric B (here B = C^j - J)."""
    A = np.random.default_rng(seed).normal(size=(d, C.shape[0]))
    for j in (0, 1, 3):
        B = np.linalg.matrix_power(C, j) - _J(C.shape[0])
        lhs = np.linalg.norm(A @ B, "fro")
        rhs = np.linalg.norm(B, 2) * np.linalg.norm(A, "fro")
        assert lhs <= rhs * (1 + RTOL) + 1e-12


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 20), n=st.integers(1, 20), seed=st.integers(0, 2**31))
def test_lemma6_trace_bounded_by_frobenius_norms(m: int, n: int, seed: int) -> None:
    """Lemma 6: |Tr(A B)| <= ||A||_F ||B||_F, with equality when B = A^T."""
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(m, n)), rng.normal(size=(n, m))
    assert abs(np.trace(A @ B)) <= np.linalg.norm(A) * np.linalg.norm(B) * (1 + RTOL)
    assert np.isclose(np.trace(A @ A.T), np.linalg.norm(A) ** 2, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(C=mixing_matrices())
def test_lemma7_op_norm_of_power_is_zeta_power(C: np.ndarray) -> None:
    """Lemma 7: ||C^j - J||_op = zeta^j, the left side from an explicit matrix power."""
    z = spectral_summary(C, allow_disconnected=True).zeta
    for j in (0, 1, 2, 5, 13):
        assert np.isclose(consensus_op_norm(C, j), z**j, rtol=1e-8, atol=1e-13)


@settings(max_examples=60, deadline=None)
@given(C=mixing_matrices())
def test_C_commutes_with_J_and_powers_converge_to_J(C: np.ndarray) -> None:
    """C J = J C = J, and ||C^j - J||_op <= zeta^j -> 0 for a connected aperiodic C."""
    n = C.shape[0]
    J = _J(n)
    assert np.allclose(C @ J, J, atol=1e-13) and np.allclose(J @ C, J, atol=1e-13)
    z = spectral_summary(C, allow_disconnected=True).zeta
    assume(z < 0.999)
    j = int(np.ceil(np.log(1e-6) / np.log(max(z, 1e-300)))) if z > 0 else 1
    assert np.abs(np.linalg.matrix_power(C, j) - J).max() <= 1e-6 + 1e-12


@settings(max_examples=80, deadline=None)
@given(zeta=st.floats(0.0, 0.999), tau2=st.integers(1, 10), j=st.integers(0, 40))
def test_geometric_sums_before_79_and_92(zeta: float, tau2: int, j: int) -> None:
    """The closed forms stated at (79) and (92) equal brute-force sums and obey their bounds."""
    s79 = sum(zeta ** (2 * tau2 * (j - r)) for r in range(j))
    assert np.isclose(ps.geometric_79(zeta, tau2, j), s79, rtol=1e-10, atol=1e-300)
    assert s79 <= ps.geometric_79_bound(zeta, tau2) * (1 + 1e-12)
    full = sum(zeta ** (tau2 * m) for m in range(j + 1))
    assert np.isclose(ps.geometric_92_full(zeta, tau2, j), full, rtol=1e-10)
    # the use: sum over l != n of zeta^(tau2 (j - l)). The paper writes '<'; at zeta = 0 it is '='
    # (0^0 = 1), which is harmless because the proof only needs '<='.
    bound = ps.geometric_92_full_bound(zeta, tau2)
    for n in range(j + 1):
        assert sum(zeta ** (tau2 * (j - m)) for m in range(j + 1) if m != n) <= bound * (1 + 1e-12)
    tail = sum(zeta ** (tau2 * (j - m)) for m in range(j))
    assert np.isclose(ps.geometric_92_tail(zeta, tau2, j), tail, rtol=1e-10, atol=1e-300)
    assert tail <= ps.geometric_92_tail_bound(zeta, tau2) * (1 + 1e-12)


@settings(max_examples=80, deadline=None)
@given(zeta=st.floats(0.0, 0.999), tau2=st.integers(1, 10), m=st.integers(0, 40))
def test_round_sum_before_101(zeta: float, tau2: int, m: int) -> None:
    """sum_{j=1}^m (zeta^(2 tau2 j) + zeta^(tau2 j) / (1 - zeta^tau2)): closed form and bound."""
    q = zeta**tau2
    brute = sum(q ** (2 * j) + q**j / (1 - q) for j in range(1, m + 1))
    assert np.isclose(ps.a2_round_sum(zeta, tau2, m), brute, rtol=1e-10, atol=1e-300)
    assert brute <= ps.a2_round_sum_bound(zeta, tau2) * (1 + 1e-12)


def test_gossip_coefficient_is_the_proofs_constant_of_101() -> None:
    """A of (eta) equals 2 tau1 tau (z^2/(1-z^2) + z/(1-z)^2) + tau (tau-1)/(1-z), z = zeta^tau2 (sympy)."""
    t1, t2 = sympy.symbols("tau1 tau2", positive=True)
    tau = t1 + t2
    q = sympy.Symbol("q", positive=True)
    A = f.gossip_coefficient(t1, t2, q ** (1 / t2))  # zeta^tau2 = q
    proof = 2 * t1 * tau * ps.a2_round_sum_bound(q ** (1 / t2), t2) + tau * (tau - 1) / (1 - q)
    assert sympy.simplify(A - proof) == 0


def test_sum_j5_closed_form_exactly() -> None:
    """Lemma 13: sum_{j=0}^{tau1-1} j^5. The printed form (with tau) is wrong; the corrected one is exact."""
    t1 = sympy.Symbol("tau1", positive=True, integer=True)
    t2 = sympy.Symbol("tau2", positive=True, integer=True)
    j = sympy.Symbol("j", integer=True)
    exact = sympy.summation(j**5, (j, 0, t1 - 1))
    assert sympy.simplify(exact - ps.sum_j5(t1)) == 0
    printed = sympy.expand(ps.sum_j5_as_printed(t1, t2) - exact)
    assert printed != 0  # the paper's form differs by a non-zero polynomial in tau1, tau2
    assert printed.subs(t2, 0) == 0  # it is right only when tau2 = 0
    assert ps.sum_j5_as_printed(3, 1) != sum(k**5 for k in range(3))  # a concrete counterexample
    for n in range(1, 60):
        assert ps.sum_j5(sympy.Integer(n)) == sum(k**5 for k in range(n))
        assert ps.sum_j5(sympy.Integer(n)) <= ps.sum_j5_bound(sympy.Integer(n))


@settings(max_examples=60, deadline=None)
@given(C=mixing_matrices())
def test_beta_mix_lies_within_one_zeta_of_one(C: np.ndarray) -> None:
    """1 - zeta <= beta_mix <= 1 + zeta for every mixing matrix (beta_mix = 1 - lambda_N, zeta >= lambda_2 >=
    lambda_N >= -zeta): the consistency cdfl_bound now requires of a given (zeta, beta_mix)."""
    from bounds import InputError

    try:
        s = spectral_summary(C)
    except InputError:  # zeta = 1 (a periodic C): no finite C-DFL bound to check
        assume(False)
    assert 1 - s.zeta - 1e-9 <= s.beta_mix <= 1 + s.zeta + 1e-9


def test_cdfl_bound_refuses_a_zeta_and_beta_mix_no_matrix_has() -> None:
    import pytest

    from bounds import InputError, cdfl_bound, make_graph, mixing_matrix

    base = dict(L=1, mu=0.5, sigma2_bar=1, G2=1, N=10, tau1=2, tau2=2, K=50, delta=0.5)
    for zeta, beta in ((0.87, 0.0), (0.0, 1.33)):  # C = I has zeta = 1; zeta = 0 means C = J, beta = 1
        with pytest.raises(InputError, match="cannot belong to one mixing matrix"):
            cdfl_bound(**base, zeta=zeta, beta_mix=beta)
    ring = spectral_summary(mixing_matrix(make_graph("ring", 10)))
    assert cdfl_bound(**base, zeta=ring.zeta, beta_mix=ring.beta_mix).bound > 0


def test_cdfl_bound_takes_one_node() -> None:
    """C = [[1]]: zeta = beta_mix = 0, which the consistency check must not refuse."""
    from bounds import cdfl_bound

    s = spectral_summary(np.array([[1.0]]))
    r = cdfl_bound(L=1, mu=0.1, sigma2_bar=1, G2=1, N=1, tau1=2, tau2=1, K=100, delta=0.5, zeta=s.zeta,
                   beta_mix=s.beta_mix)  # fmt: skip
    assert r.bound > 0


def test_small_sparse_matrices_and_a_sparse_J_are_solved() -> None:
    """A sparse 2 x 2 C raised scipy's 'ncv must be k<ncv<=n' and a sparse C = J ARPACK's 'Starting vector is
    zero': both are solved dense, with the dense answer."""
    import scipy.sparse as sp

    from bounds.graph.mixing import mixing_matrix
    from bounds.graph.spectral import spectral_summary, zeta
    from bounds.graph.topologies import make_graph

    for C in (np.full((3, 3), 1 / 3), np.array([[0.75, 0.25], [0.25, 0.75]]), np.full((300, 300), 1 / 300)):
        assert zeta(sp.csr_matrix(C)) == pytest.approx(zeta(C), abs=1e-12)
        assert spectral_summary(sp.csr_matrix(C)).zeta == pytest.approx(zeta(C), abs=1e-12)
    assert zeta(mixing_matrix(make_graph("complete", 4), "metropolis", sparse=True)) == pytest.approx(
        0, abs=1e-12
    )
