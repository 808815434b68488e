"""What several checks share: the paper's topologies and the cache folders of simulations.

One module, so no check module imports another's internals.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bounds import make_graph, mixing_matrix
from bounds.graph.topologies import quasi_ring, ring
from paper_checks.context import CheckContext
from paper_checks.registry import library_digest

__all__ = ["TOPOLOGIES", "run_folder", "same_config"]

TOPOLOGIES: dict[str, Callable[[], np.ndarray]] = {
    "ring": lambda: mixing_matrix(ring(10)),
    "quasi-ring": lambda: mixing_matrix(quasi_ring(10), "metropolis"),
    "complete": lambda: mixing_matrix(make_graph("complete", 10)),
}
"""The paper's 10-node topologies (Section VI): ring (zeta = 0.87), quasi-ring (0.85), and complete."""


def run_folder(ctx: CheckContext, name: str, key: str) -> Path:
    """The cache folder of one simulation: ``<runs>/<name>-<hash of its config and of bounds/, sim/>``."""
    return ctx.runs / f"{name}-{hashlib.sha256((key + library_digest()).encode()).hexdigest()[:10]}"


def same_config(config_file: Path, key: str) -> bool:
    """Whether a run folder's config.json is the run of ``key`` (its JSON without ``out``)."""
    saved = json.loads(config_file.read_text())
    saved.pop("resolved", None)
    saved.pop("out", None)
    return json.dumps(saved, sort_keys=True) == key
