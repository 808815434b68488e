"""dflkit's theory package: topologies, mixing matrices, spectra and the paper's bounds.

Pure numpy / scipy / sympy; never imports torch. The main entry points:

* graphs and mixing matrices: :func:`make_graph` (ring, quasi-ring, torus, complete, ...),
  :func:`mixing_matrix` (weight rules ``RULES``), :func:`load_matrix`, :func:`check_mixing_matrix`;
* spectra: :func:`zeta` (fast, Lanczos for large sparse C), :func:`spectral_summary`;
* Proposition 1 (DFL): :func:`dfl_bound` (bound, ``bound_repaired``, terms, step-size conditions;
  arrays broadcast), :func:`bound_grid`, :func:`eta_max`; formulas written once for numpy and
  sympy in :mod:`bounds.dfl.formulas` and :mod:`bounds.dfl.symbolic`;
* the best (tau1, tau2, eta) under a budget: :func:`optimize_dfl` with a :class:`CostModel`
  (the repaired bound by default); C-DFL: :func:`cdfl_bound` (Proposition 2),
  :func:`optimize_cdfl`, compression operators :func:`make_compressor`;
* exact expectations on quadratics (:mod:`bounds.dfl.quadratic`) and Monte Carlo on smooth test
  functions (:mod:`bounds.dfl.montecarlo`), the independent checks of the formulas.

The subpackages: ``graph`` (topologies, mixing, spectral), ``dfl`` (Proposition 1, its repair and
their checks), ``cdfl`` (compression, Proposition 2), ``plan`` (cost model, optimisers, comparison).
Every name below is re-exported here, so ``from bounds import dfl_bound`` keeps working.

Bad input raises :class:`InputError` naming the value and what was expected. See README.md for a
tour and the findings about the paper.
"""

import importlib
from typing import TYPE_CHECKING

from bounds._checks import InputError

if TYPE_CHECKING:  # the names below, for type checkers; at run time they load on first use (PEP 562)
    from bounds.cdfl.compression import COMPRESSORS, make_compressor
    from bounds.cdfl.proposition2 import CDFLBound, cdfl_bound
    from bounds.dfl.proposition1 import DFLBound, bound_grid, dfl_bound, eta_max
    from bounds.dfl.schedule import local_step_mask
    from bounds.graph.mixing import RULES, check_mixing_matrix, lazy, load_matrix, mixing_matrix
    from bounds.graph.spectral import SpectralSummary, consensus_op_norm, spectral_summary, zeta
    from bounds.graph.topologies import TOPOLOGIES, from_edge_list, make_graph
    from bounds.plan.cost import CostModel
    from bounds.plan.optimize import OptimizeResult, optimize_dfl
    from bounds.plan.optimize_cdfl import optimize_cdfl

_LAZY = {
    "CDFLBound": "bounds.cdfl.proposition2",
    "COMPRESSORS": "bounds.cdfl.compression",
    "CostModel": "bounds.plan.cost",
    "DFLBound": "bounds.dfl.proposition1",
    "OptimizeResult": "bounds.plan.optimize",
    "RULES": "bounds.graph.mixing",
    "SpectralSummary": "bounds.graph.spectral",
    "TOPOLOGIES": "bounds.graph.topologies",
    "bound_grid": "bounds.dfl.proposition1",
    "cdfl_bound": "bounds.cdfl.proposition2",
    "check_mixing_matrix": "bounds.graph.mixing",
    "consensus_op_norm": "bounds.graph.spectral",
    "dfl_bound": "bounds.dfl.proposition1",
    "eta_max": "bounds.dfl.proposition1",
    "from_edge_list": "bounds.graph.topologies",
    "lazy": "bounds.graph.mixing",
    "load_matrix": "bounds.graph.mixing",
    "local_step_mask": "bounds.dfl.schedule",
    "make_compressor": "bounds.cdfl.compression",
    "make_graph": "bounds.graph.topologies",
    "mixing_matrix": "bounds.graph.mixing",
    "optimize_cdfl": "bounds.plan.optimize_cdfl",
    "optimize_dfl": "bounds.plan.optimize",
    "spectral_summary": "bounds.graph.spectral",
    "zeta": "bounds.graph.spectral",
}
"""Where each re-exported name lives: its module is imported when the name is first used, so importing
``bounds`` (or any of its modules: the package runs this file first) does not import sympy, scipy's
optimisers and the bounds' code for a caller that needs only, say, ``InputError`` (``dfl-sim run``)."""


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'bounds' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "COMPRESSORS",
    "RULES",
    "TOPOLOGIES",
    "CDFLBound",
    "CostModel",
    "DFLBound",
    "InputError",
    "OptimizeResult",
    "SpectralSummary",
    "bound_grid",
    "cdfl_bound",
    "check_mixing_matrix",
    "consensus_op_norm",
    "dfl_bound",
    "eta_max",
    "from_edge_list",
    "lazy",
    "load_matrix",
    "local_step_mask",
    "make_compressor",
    "make_graph",
    "mixing_matrix",
    "optimize_cdfl",
    "optimize_dfl",
    "spectral_summary",
    "zeta",
]
