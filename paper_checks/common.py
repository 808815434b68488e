"""What several checks share: the paper's topologies, the cache folders of simulations and their results.

One module, so no check module imports another's internals.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bounds import make_graph, mixing_matrix
from bounds.graph.mixing import topology_matrix
from bounds.graph.topologies import quasi_ring, ring
from paper_checks.cache import read_cache, write_cache
from paper_checks.context import CheckContext
from paper_checks.registry import library_digest

__all__ = ["TOPOLOGIES", "TOPOLOGY_WEIGHTS", "cached_json", "run_folder", "same_config", "ten_node_matrix"]

TOPOLOGIES: dict[str, Callable[[], np.ndarray]] = {
    "ring": lambda: mixing_matrix(ring(10)),
    "quasi-ring": lambda: mixing_matrix(quasi_ring(10), "metropolis"),
    "complete": lambda: mixing_matrix(make_graph("complete", 10)),
}
"""The paper's 10-node topologies (Section VI): ring (zeta = 0.87), quasi-ring (0.85), and complete."""

TOPOLOGY_WEIGHTS = {"ring": "paper", "quasi-ring": "metropolis", "complete": "paper", "torus": "paper",
                    "path": "metropolis"}  # fmt: skip
"""The weight rule of each topology the checks use on 10 nodes (Metropolis where degrees differ)."""


def ten_node_matrix(topology: str) -> np.ndarray:
    """The mixing matrix of ``topology`` on 10 nodes with its weight rule of :data:`TOPOLOGY_WEIGHTS`."""
    return topology_matrix(topology, 10, TOPOLOGY_WEIGHTS[topology])


def cached_json(path: Path, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The result stored in ``path``, or ``compute()``'s, then written there atomically (cached probes). A
    file that is not a JSON object (cut short by a crash or a full disk) counts as none: it made its check
    "could not run" on every later run, without naming the file."""
    stored = read_cache(path)
    if stored is not None:
        return stored
    result = compute()
    write_cache(path, result)
    return result


def run_folder(ctx: CheckContext, name: str, key: str) -> Path:
    """The cache folder of one simulation: ``<runs>/<name>-<hash of its config and of bounds/, sim/>``."""
    return ctx.runs / f"{name}-{hashlib.sha256((key + library_digest()).encode()).hexdigest()[:10]}"


def same_config(config_file: Path, key: str) -> bool:
    """Whether a run folder's config.json is the run of ``key`` (its JSON without ``out``)."""
    saved = json.loads(config_file.read_text())
    saved.pop("resolved", None)
    saved.pop("out", None)
    return json.dumps(saved, sort_keys=True) == key
