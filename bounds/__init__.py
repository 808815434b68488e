"""dflkit's theory package: topologies, mixing matrices, spectra and the paper's bounds.

Pure numpy / scipy / sympy; never imports torch. The main entry points:

* graphs and mixing matrices: :func:`make_graph` (ring, quasi-ring, torus, complete, ...),
  :func:`mixing_matrix` (weight rules ``RULES``), :func:`load_matrix`, :func:`check_mixing_matrix`;
* spectra: :func:`zeta` (fast, Lanczos for large sparse C), :func:`spectral_summary`;
* Proposition 1 (DFL): :func:`dfl_bound` (bound, ``bound_repaired``, terms, step-size conditions;
  arrays broadcast), :func:`bound_grid`, :func:`eta_max`; formulas written once for numpy and
  sympy in :mod:`bounds.formulas` and :mod:`bounds.symbolic`;
* the best (tau1, tau2, eta) under a budget: :func:`optimize_dfl` with a :class:`CostModel`
  (the repaired bound by default); C-DFL in :mod:`bounds.proposition2`,
  :mod:`bounds.optimize_cdfl`, compression operators in :mod:`bounds.compression`;
* exact expectations on quadratics (:mod:`bounds.quadratic`) and Monte Carlo on smooth test
  functions (:mod:`bounds.montecarlo`), the independent checks of the formulas.

Bad input raises :class:`InputError` naming the value and what was expected. See README.md for a
tour and the findings about the paper.
"""

from bounds._checks import InputError
from bounds.mixing import RULES, check_mixing_matrix, lazy, load_matrix, mixing_matrix
from bounds.optimize import CostModel, optimize_dfl
from bounds.proposition1 import DFLBound, bound_grid, dfl_bound, eta_max
from bounds.spectral import SpectralSummary, consensus_op_norm, spectral_summary, zeta
from bounds.topologies import TOPOLOGIES, from_edge_list, make_graph

__all__ = [
    "RULES",
    "TOPOLOGIES",
    "CostModel",
    "DFLBound",
    "InputError",
    "SpectralSummary",
    "bound_grid",
    "check_mixing_matrix",
    "consensus_op_norm",
    "dfl_bound",
    "eta_max",
    "from_edge_list",
    "lazy",
    "load_matrix",
    "make_graph",
    "mixing_matrix",
    "optimize_dfl",
    "spectral_summary",
    "zeta",
]
