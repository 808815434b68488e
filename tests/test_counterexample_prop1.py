"""Finding: Proposition 1 itself fails on a noise-free quadratic (exact arithmetic, no sampling).

F(w) = w^2 / 2 + 1 on every node (L = 1, F_inf = 1, exact gradients: no noise, so any sigma^2 > 0 of
Assumption 1.5 bounds it; its bounded gradients (G^2) hold on the trajectory, |w| <= 1, not on all of R),
N = 2 nodes, C = J (zeta = 0), tau1 = 1, tau2 = 2, eta = eta_max of (eta) = 1/3, K = 3 rounds.
The gossip steps leave u_t unchanged but are counted in T and in the average of
||grad F(u_t)||^2, while the proof of Lemma 1 claims a descent inequality at them too
(its Lemma 3 step at t in [k]_2 replaces grad F(w_t^(i)) by grad F(u_t)).
"""

from __future__ import annotations

import numpy as np
import pytest

from bounds import dfl_bound, eta_max
from bounds.dfl.schedule import local_step_mask


def gradient_norm_average(tau1: int, tau2: int, K: int, eta: float, C: np.ndarray, w0: float = 1.0) -> float:
    """(1/T) sum_{t=1}^T ||grad F(u_t)||^2 of DFL on F(w) = w^2/2 + const, run step by step."""
    X = np.full(C.shape[0], w0)
    total = 0.0
    local = local_step_mask(tau1, tau2, K * (tau1 + tau2))
    for is_local in local:
        total += X.mean() ** 2  # grad F(u) = u
        X = X - eta * X if is_local else X @ C
    return total / local.size


def test_smallest_counterexample_found() -> None:
    C = np.full((2, 2), 0.5)
    eta = eta_max(L=1, tau1=1, tau2=2, zeta=0.0)
    assert eta == pytest.approx(1 / 3)
    measured = gradient_norm_average(1, 2, 3, eta, C)
    r = dfl_bound(L=1, sigma2=0, N=2, eta=eta, tau1=1, tau2=2, zeta=0.0, T=9, gap=0.5)
    assert r.eta_condition_ok and r.lemma1_ok
    # by hand: u = 1, (2/3) x3, (4/9) x3, (8/27) x2 -> sum of squares / 9
    by_hand = (1 + 3 * (2 / 3) ** 2 + 3 * (4 / 9) ** 2 + 2 * (8 / 27) ** 2) / 9
    assert measured == pytest.approx(by_hand, rel=1e-14)
    assert r.bound == pytest.approx(2 * 0.5 / (eta * 9))
    assert measured > r.bound  # 0.3446 > 0.3333: Proposition 1 is violated
    assert measured / r.bound == pytest.approx(1.0338, abs=1e-4)
    # Assumption 1.5 asks sigma^2 > 0: a noise bound that is not tight, 0.01, leaves it violated
    noisy = dfl_bound(L=1, sigma2=0.01, N=2, eta=eta, tau1=1, tau2=2, zeta=0.0, T=9, gap=0.5)
    assert noisy.eta_condition_ok and measured > noisy.bound == pytest.approx(1 / 3 + 0.01 / 6)


@pytest.mark.parametrize(("tau2", "K", "fraction", "ratio"), [(2, 5, 0.5, 1.0926), (9, 50, 1.0, 4.363)])
def test_violation_grows_with_tau2_and_is_not_a_boundary_effect(
    tau2: int, K: int, fraction: float, ratio: float
) -> None:
    C = np.full((2, 2), 0.5)
    eta = fraction * eta_max(L=1, tau1=1, tau2=tau2, zeta=0.0)
    measured = gradient_norm_average(1, tau2, K, eta, C)
    bound = dfl_bound(L=1, sigma2=0, N=2, eta=eta, tau1=1, tau2=tau2, zeta=0.0, T=K * (1 + tau2), gap=0.5)
    assert measured / bound.bound == pytest.approx(ratio, abs=1e-3)


def test_candidate_repair_covers_the_counterexample() -> None:
    """Our unproven candidate (local steps only) on that cell: (1 + 4/9 + 16/81) / 3 <= 2 gap / (eta K)."""
    from bounds.dfl import formulas as f

    C = np.full((2, 2), 0.5)
    eta = eta_max(L=1, tau1=1, tau2=2, zeta=0.0)
    local_values = [1.0, (2 / 3) ** 2, (4 / 9) ** 2]  # ||grad F(u)||^2 at the three local steps
    measured = sum(local_values) / 3
    candidate = f.candidate_local_step_bound(eta, 1.0, 0.0, 2, 1, 2, 0.0, 3, 0.5)
    assert candidate == pytest.approx(2 * 0.5 / (eta * 3))
    assert measured <= candidate
    assert (
        gradient_norm_average(1, 2, 3, eta, C)
        > dfl_bound(L=1, sigma2=0, N=2, eta=eta, tau1=1, tau2=2, zeta=0.0, T=9, gap=0.5).bound
    )
