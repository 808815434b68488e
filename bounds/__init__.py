"""dflkit's theory package: topologies, mixing matrices, spectra and the paper's bounds.

Pure numpy / scipy / sympy; never imports torch. See README.md for a tour.
"""

from bounds._checks import InputError
from bounds.mixing import RULES, check_mixing_matrix, lazy, load_matrix, mixing_matrix
from bounds.proposition1 import DFLBound, bound_grid, dfl_bound, eta_max
from bounds.spectral import SpectralSummary, consensus_op_norm, spectral_summary, zeta
from bounds.topologies import TOPOLOGIES, from_edge_list, make_graph

__all__ = [
    "RULES",
    "TOPOLOGIES",
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
    "spectral_summary",
    "zeta",
]
