"""The local-drift term of Proposition 1 against the exact drift under pure gradient noise.

With grad F = 0 the drift E||X_t (I - J)||_F^2 is computed exactly by a matrix
recursion (bounds.dfl.noise_drift.noise_drift), independent of the proof. The proof's
bound on this quantity (A_1 of (63), summed in (83)) is the paper's
local-drift term divided by L^2.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import mixing_matrices
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bounds import InputError, make_graph, mixing_matrix, spectral_summary, zeta
from bounds.dfl import formulas as f
from bounds.dfl.noise_drift import noise_drift
from bounds.dfl.quadratic import exact_quadratic_dfl
from bounds.dfl.schedule import local_step_mask
from bounds.graph.topologies import quasi_ring, ring

MATRICES = {
    "ring": mixing_matrix(ring(10)),
    "quasi-ring": mixing_matrix(quasi_ring(10), "metropolis"),
    "complete": mixing_matrix(make_graph("complete", 10)),
    "path": mixing_matrix(make_graph("path", 12), "metropolis"),
}


def brute_force_drift(C: np.ndarray, tau1: int, tau2: int, T: int, draws: int, seed: int) -> np.ndarray:
    """Monte Carlo of the same quantity by running DFL on pure-noise gradients."""
    rng = np.random.default_rng(seed)
    n = C.shape[0]
    local = local_step_mask(tau1, tau2, T)
    X = np.zeros((draws, n))  # d = draws independent coordinates, unit variance each
    out = np.empty(T)
    for t, is_local in enumerate(local):
        out[t] = ((X - X.mean(axis=1, keepdims=True)) ** 2).sum() / draws / n
        X = X - rng.normal(size=X.shape) if is_local else X @ C
    return out


def test_exact_recursion_matches_monte_carlo() -> None:
    C = MATRICES["quasi-ring"]
    exact = noise_drift(C, 3, 2, 25)
    mc = brute_force_drift(C, 3, 2, 25, draws=40_000, seed=1)
    assert np.allclose(mc, exact, rtol=0.03, atol=1e-12)


def test_paper_term_holds_for_tau1_at_least_two() -> None:
    worst = 0.0
    for C in MATRICES.values():
        z = zeta(C)
        for tau1, tau2, K in itertools.product(range(2, 8), range(1, 12), (1, 3, 30)):
            measured = noise_drift(C, tau1, tau2, K * (tau1 + tau2)).mean()
            stated = f.local_drift_term(1.0, 1.0, 1.0, tau1, tau2, z)
            worst = max(worst, measured / stated)
    assert worst <= 1.0, worst


@pytest.mark.parametrize("name", ["ring", "quasi-ring", "complete"])
def test_finding_paper_term_is_violated_for_tau1_equal_one(name: str) -> None:
    """With tau1 = 1 the proof counts (i - 1) = 0 noisy gradients of the current round at every step,
    but at the steps between the local step and the end of gossip that gradient is still unmixed."""
    C = MATRICES[name]
    z = zeta(C)
    measured = noise_drift(C, 1, 10, 10 * 11).mean()
    stated = f.local_drift_term(1.0, 1.0, 1.0, 1, 10, z)
    assert measured > stated
    assert measured <= f.local_drift_term_corrected(1.0, 1.0, 1.0, 1, 10, z)


def test_finding_zeta_zero_tau1_one_by_hand() -> None:
    """C = J, tau1 = tau2 = 1: every other state holds one unmixed gradient, drift (N-1)/N sigma^2."""
    C = MATRICES["complete"]
    d = noise_drift(C, 1, 1, 40, eta=0.1, sigma2=2.0)
    assert np.allclose(d[1::2], 0.1**2 * 2.0 * 9 / 10) and np.allclose(d[0::2], 0)
    assert f.local_drift_term(0.1, 1.0, 2.0, 1, 1, 0.0) == 0  # the paper's term says no drift


@settings(max_examples=40, deadline=None)
@given(C=mixing_matrices(max_nodes=25), tau1=st.integers(1, 6), tau2=st.integers(1, 8), K=st.integers(1, 6))
def test_corrected_term_bounds_the_exact_drift(C: np.ndarray, tau1: int, tau2: int, K: int) -> None:
    z = spectral_summary(C, allow_disconnected=True).zeta
    assume(z < 0.999)
    measured = noise_drift(C, tau1, tau2, K * (tau1 + tau2)).mean()
    assert measured <= f.local_drift_term_corrected(1.0, 1.0, 1.0, tau1, tau2, z) * (1 + 1e-9)
    if tau1 >= 2:
        assert measured <= f.local_drift_term(1.0, 1.0, 1.0, tau1, tau2, z) * (1 + 1e-9)


def test_schedule_of_algorithm1() -> None:
    assert local_step_mask(3, 2, 12).astype(int).tolist() == [1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1]
    assert local_step_mask(1, 0, 3).all()


@pytest.mark.parametrize(("tau1", "tau2", "T"), [(2, 1, 7), (4, 4, 40), (1, 5, 3), (5, 2, 23), (3, 0, 5)])
def test_schedule_equals_the_period_rule(tau1: int, tau2: int, T: int) -> None:
    """Step t (from 0) is local iff t mod tau < tau1 or t is past the K full rounds (Algorithm 1)."""
    t, tau = np.arange(T), tau1 + tau2
    assert np.array_equal(local_step_mask(tau1, tau2, T), ((t % tau) < tau1) | (t >= (T // tau) * tau))


def test_schedule_refuses_more_steps_than_it_can_hold() -> None:
    with pytest.raises(InputError, match=r"T = 1000000000000 is out of range \(expected .* <= 1000000000\)"):
        local_step_mask(1, 1, 10**12)


def test_finding_eq_103_in_full_is_zero_where_the_drift_is_not() -> None:
    """C = J, tau1 = tau2 = 1, one round from the optimum: the only local step is taken at grad F = 0,
    so (103)'s gradient sum is 0, its noise term is 0 (zeta = 0, tau1 = 1), yet the noisy step leaves
    the nodes apart: E||X_2 (I - J)||_F^2 / N = eta^2 sigma^2 (N - 1) / N."""
    C = MATRICES["complete"]
    eta, n = 0.25, C.shape[0]
    run = exact_quadratic_dfl(C, 1, 1, 2, eta=eta, L=1.0, sigma2=1.0)
    assert run.local_grad_sum == 0.0
    assert f.local_drift_bound_103(eta, 1.0, 1.0, n, 1, 1, 0.0, 2, run.local_grad_sum) == 0.0
    assert run.drift.mean() == pytest.approx(eta**2 * (n - 1) / n / 2, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    C=mixing_matrices(max_nodes=20),
    tau1=st.integers(1, 5),
    tau2=st.integers(1, 6),
    K=st.integers(1, 8),
    fraction=st.floats(0.05, 1.0),
    start=st.floats(-5.0, 5.0),
)
def test_eq_103_with_corrected_noise_term_bounds_the_exact_drift(
    C: np.ndarray, tau1: int, tau2: int, K: int, fraction: float, start: float
) -> None:
    """(103) in full, with the exact gradient norms of the run, once its noise term is corrected."""
    z = spectral_summary(C, allow_disconnected=True).zeta
    assume(z < 0.999)
    n, T = C.shape[0], K * (tau1 + tau2)
    eta = fraction * f.eta_max(1.0, tau1, tau2, z)
    run = exact_quadratic_dfl(C, tau1, tau2, T, eta=eta, L=1.0, sigma2=1.0, w1=np.array([start]))
    full = f.local_drift_bound_103(eta, 1.0, 1.0, n, tau1, tau2, z, T, run.local_grad_sum)
    noise = f.local_drift_term(eta, 1.0, 1.0, tau1, tau2, z)
    corrected = full - noise + f.local_drift_term_corrected(eta, 1.0, 1.0, tau1, tau2, z)
    assert run.drift.mean() <= corrected * (1 + 1e-9)
    if tau1 >= 2:
        assert run.drift.mean() <= full * (1 + 1e-9)
