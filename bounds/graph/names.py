"""The names a topology argument may take, without networkx (about 0.6 s to import): a caller such as
``dfl-sim``'s config refuses an unknown name before anything heavy loads. ``tests/test_topologies_mixing``
holds these equal to the builders of :data:`bounds.graph.topologies.TOPOLOGIES` and the rules of
:func:`bounds.graph.mixing.mixing_matrix`."""

from __future__ import annotations

from pathlib import Path

from bounds._checks import InputError, absent_file, one_of

TOPOLOGY_NAMES = (
    "ring", "quasi-ring", "torus", "complete", "star", "path", "hypercube", "exponential", "erdos-renyi",
)  # fmt: skip
WEIGHT_RULES = ("paper", "metropolis", "max-degree", "lazy")
FILE_PREFIXES = ("matrix:", "edges:")
"""A topology argument ``matrix:PATH`` (C as given) or ``edges:PATH`` (an edge list and a weight rule)."""
TOPOLOGY_FILES = {
    "matrix:": ("matrix file", "expected .npy, .npz or text"),
    "edges:": ("edge list file", "expected a text file of 'u v' lines"),
}
"""What each file prefix names, and what its file must be, for an InputError."""


def check_topology_name(name: object) -> None:
    """Raise InputError unless ``name`` is a graph name of :data:`TOPOLOGY_NAMES`."""
    one_of("topology", name, TOPOLOGY_NAMES)


def check_weight_rule(rule: object) -> None:
    """Raise InputError unless ``rule`` is one of :data:`WEIGHT_RULES`."""
    one_of("weight rule", rule, WEIGHT_RULES)


def check_topology_argument(name: str, rule: str) -> None:
    """A topology argument as the CLIs and the simulator take it: ``matrix:PATH``, ``edges:PATH`` or a graph
    name, and its weight rule (a file must exist; its content is read later)."""
    if name.startswith(FILE_PREFIXES):
        prefix = next(p for p in FILE_PREFIXES if name.startswith(p))
        check_topology_file(Path(name.removeprefix(prefix)), prefix)
    else:
        check_topology_name(name)
    check_weight_rule(rule)


def check_topology_file(path: Path, prefix: str) -> None:
    """Raise InputError unless ``path``, given as ``PREFIX:PATH``, is a file (a sweep checks every point's
    before its folder is made)."""
    if str(path) == ".":  # 'matrix:' (Path('') is the current folder): it said "'.' is a folder"
        raise InputError(f"topology = {prefix!r} names no file (expected {prefix}PATH)")
    if not path.is_file():
        what, expected = TOPOLOGY_FILES[prefix]
        raise InputError(f"{what} {str(path)!r} {absent_file(path)} ({expected})")
