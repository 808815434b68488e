"""Exact local drift of DFL under pure gradient noise, by matrix recursion.

An exact, simulation-free value of the local-drift sum of Lemma 1 (bounded in Proposition 1's proof), for
the case where every gradient is pure noise (grad F = 0, E[g] = 0, E||g||^2 = sigma^2 per node, independent
across nodes and steps). Then, with M_t = E[(X_t (I - J))^T X_t (I - J)],

* a local step X <- X - eta G adds eta^2 sigma^2 (I - J) to M;
* a gossip step X <- X C maps M to C M C;

and E||X_t (I - J)||_F^2 = tr(M_t). Proposition 1's proof bounds exactly this
quantity (the A_1 part of (63)) by 2 eta^2 sigma^2 (tau1 / (1 - zeta^(2 tau2)) - 1)
per node and step, so this module gives an independent check of that term.
"""

from __future__ import annotations

import numpy as np

from bounds.dfl.quadratic import exact_quadratic_dfl
from bounds.graph.mixing import Matrix

__all__ = ["noise_drift"]


def noise_drift(C: Matrix, tau1: int, tau2: int, T: int, eta: float = 1.0, sigma2: float = 1.0) -> np.ndarray:
    """E||X_t (I - J)||_F^2 / N for t = 1..T under pure gradient noise (exact, no sampling).

    Args:
        C: mixing matrix (dense; validated, N <= a few hundred is cheap).
        tau1, tau2, T: the schedule of Algorithm 1.
        eta: learning rate; sigma2: per-node gradient-noise variance.

    Returns:
        Array of length T; entry t-1 is the drift of X_t (X_1 has none: all
        nodes start from the same point).

    >>> import numpy as np
    >>> C = np.full((2, 2), 0.5)  # C = J: one gossip step reaches consensus
    >>> noise_drift(C, 1, 1, 4).tolist()
    [0.0, 0.5, 0.0, 0.5]
    """
    # pure noise is the flat quadratic, L = 0
    return exact_quadratic_dfl(C, tau1, tau2, T, eta=eta, L=0.0, sigma2=sigma2).drift
