"""Communication graphs of the N nodes, as networkx graphs (nodes 0..N-1).

Graph, weights and spectrum are kept apart: this module only says who talks to
whom; :mod:`bounds.graph.mixing` turns a graph into a mixing matrix C and
:mod:`bounds.graph.spectral` computes zeta from C.

The paper's experiments (Section VI-A) use a 10-node ring (zeta = 0.87) and a
10-node "quasi-ring" (zeta = 0.85) whose figure was lost. :func:`quasi_ring`
is our documented stand-in: the ring plus the chords (0, N/2) and
(round(0.3 N), round(0.6 N)), i.e. (0, 5) and (3, 6) for N = 10, with
Metropolis-Hastings weights. Its zeta is 0.8496, which rounds to 0.85.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np

from bounds._checks import InputError, real_number, whole_number
from bounds.graph.names import check_topology_file, check_topology_name

__all__ = [
    "TOPOLOGIES",
    "complete",
    "erdos_renyi",
    "exponential",
    "from_edge_list",
    "hypercube",
    "make_graph",
    "path",
    "quasi_ring",
    "ring",
    "star",
    "torus",
]


def _check_nodes(name: str, nodes: int, minimum: int) -> int:
    nodes = whole_number("nodes", nodes)
    if nodes < minimum:
        raise InputError(f"nodes = {nodes} is too small for topology {name!r} (expected >= {minimum})")
    return int(nodes)


def ring(nodes: int) -> nx.Graph:
    """Cycle 0-1-...-(N-1)-0. With the paper's weights and N = 10, zeta = 0.8727."""
    return nx.cycle_graph(_check_nodes("ring", nodes, 3))


def quasi_ring(nodes: int = 10) -> nx.Graph:
    """Ring plus two chords, (0, N//2) and (round(0.3 N), round(0.6 N)).

    For N = 10 the chords are (0, 5) and (3, 6); with Metropolis-Hastings weights
    zeta = 0.8496 (the paper reports 0.85 for its lost quasi-ring figure).
    The graph is not regular, so the paper's equal-weight rule is not symmetric on it.
    """
    n = _check_nodes("quasi-ring", nodes, 7)
    graph = nx.cycle_graph(n)
    graph.add_edges_from([(0, n // 2), (round(0.3 * n), round(0.6 * n))])
    return graph


def torus(nodes: int) -> nx.Graph:
    """2-D torus (periodic grid) of rows x cols = N, rows the largest divisor <= sqrt(N)."""
    n = _check_nodes("torus", nodes, 4)
    rows = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    if rows < 2:
        raise InputError(f"nodes = {n} cannot form a 2-D torus (expected rows x cols with rows, cols >= 2)")
    grid = nx.grid_2d_graph(rows, n // rows, periodic=True)
    return nx.convert_node_labels_to_integers(grid, ordering="sorted")


def complete(nodes: int) -> nx.Graph:
    """Every node talks to every other; with the paper's weights C = J and zeta = 0."""
    return nx.complete_graph(_check_nodes("complete", nodes, 1))


def star(nodes: int) -> nx.Graph:
    """Node 0 is the hub."""
    return nx.star_graph(_check_nodes("star", nodes, 2) - 1)


def path(nodes: int) -> nx.Graph:
    """Line 0-1-...-(N-1)."""
    return nx.path_graph(_check_nodes("path", nodes, 2))


def hypercube(nodes: int) -> nx.Graph:
    """log2(N)-dimensional hypercube; N must be a power of two."""
    n = _check_nodes("hypercube", nodes, 2)
    if n & (n - 1):
        raise InputError(f"nodes = {n} is not a power of two (topology 'hypercube')")
    cube = nx.hypercube_graph(n.bit_length() - 1)
    return nx.convert_node_labels_to_integers(cube, ordering="sorted")


def exponential(nodes: int) -> nx.Graph:
    """Undirected exponential graph: node i links to i +- 2^k (mod N), k = 0..floor(log2(N-1))."""
    n = _check_nodes("exponential", nodes, 2)
    graph = nx.empty_graph(n)
    hop = 1
    while hop < n:
        graph.add_edges_from((i, (i + hop) % n) for i in range(n))
        hop *= 2
    graph.remove_edges_from(nx.selfloop_edges(graph))
    return graph


FAST_GNP_ABOVE = 10_000  # nodes; gnp_random_graph draws every pair: 4,000 nodes 0.73 s, fast_gnp 0.05 s


def erdos_renyi(nodes: int, p: float | None = None, seed: int = 0, max_tries: int = 1000) -> nx.Graph:
    """Connected G(N, p) graph, reproducible from ``seed``.

    Draws with ``numpy.random.default_rng(seed)`` until the graph is connected.
    The default p = min(1, 2 ln(N) / N) is twice the connectivity threshold. Above FAST_GNP_ABOVE nodes
    the draw is networkx's ``fast_gnp_random_graph`` (time O(N + edges), not O(N^2): 100,000 nodes took
    minutes), the same distribution, other graphs for a seed; up to it the graphs are those of earlier
    versions.
    """
    n = _check_nodes("erdos-renyi", nodes, 1)
    if p is None:
        p = min(1.0, 2.0 * math.log(max(n, 2)) / n)
    p = real_number("p", p)  # True was p = 1 (a complete graph), '0.5' a TypeError
    if not 0.0 < p <= 1.0:
        raise InputError(f"p = {p!r} is out of range for topology 'erdos-renyi' (expected 0 < p <= 1)")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < 2**63:
        raise InputError(f"seed = {seed!r} is out of range (expected an integer 0 <= seed < 2^63)")
    rng = np.random.default_rng(seed)
    for _ in range(max_tries):
        draw = nx.fast_gnp_random_graph if n > FAST_GNP_ABOVE else nx.gnp_random_graph
        graph = draw(n, p, seed=int(rng.integers(2**32)))
        if nx.is_connected(graph):
            return graph
    raise InputError(
        f"no connected Erdos-Renyi graph with nodes = {n}, p = {p} in {max_tries} draws (expected a larger p)"
    )


def from_edge_list(path_or_edges: str | Path | list[tuple[int, int]]) -> nx.Graph:
    """A user graph from an edge list file or a list of pairs.

    The file holds one edge per line: two node ids, integers >= 0, separated by whitespace or a comma
    (``0 1`` or ``0,1``); blank lines and ``#`` comments are skipped. Weights are not read (a third
    column is refused: give a weighted C as ``matrix:PATH``). Nodes are relabelled 0..N-1 in sorted
    order of their ids. A self-loop ``u u`` adds node u and no edge: every weight rule gives each node its
    own weight C_uu already.
    """
    if isinstance(path_or_edges, str | Path):
        graph = nx.Graph()
        graph.add_edges_from(_read_edges(Path(path_or_edges)))
    else:
        graph = nx.Graph()
        graph.add_edges_from(_pairs(path_or_edges))
    graph.remove_edges_from(nx.selfloop_edges(graph))
    if graph.number_of_edges() == 0:  # (a self-loop alone is no edge between nodes)
        raise InputError("the edge list has no edges (expected at least one 'u v' pair)")
    return nx.convert_node_labels_to_integers(graph, ordering="sorted")


def _pairs(edges: object) -> list[tuple[int, int]]:
    """(u, v) pairs of integer node ids >= 0 from any iterable of pairs (a list, an (E, 2) array, a networkx
    edge view, a zip); InputError naming the first pair that is not one."""
    shown = " ".join(repr(edges).split())  # one line: an array's repr has several
    bad = f"edges = {shown:.80} (expected a file path or (u, v) pairs of integer node ids >= 0)"
    scalar = isinstance(edges, np.ndarray) and edges.ndim == 0  # np.array(1): no pairs, iteration a TypeError
    if isinstance(edges, str | bytes) or not hasattr(edges, "__iter__") or scalar:
        raise InputError(bad)
    pairs = []
    for e in edges:
        values = tuple(e) if hasattr(e, "__iter__") and not isinstance(e, str | bytes) else ()
        ids = [_node_id(x) for x in values]
        u, v = ids if len(ids) == 2 else (None, None)
        if u is None or v is None:
            raise InputError(f"{bad}: {e!r} is not one")
        pairs.append((u, v))
    return pairs


def _node_id(x: object) -> int | None:
    """x as a node id (an integer >= 0, of any integer type or a whole float), or None."""
    if isinstance(x, bool | np.bool_) or not isinstance(x, int | float | np.integer | np.floating):
        return None
    if isinstance(x, float | np.floating) and not np.isfinite(x):  # int() raised ValueError, OverflowError
        return None  # (ints of any size are ids: np.isfinite(2**70) raised TypeError)
    return int(x) if float(x) == int(x) and x >= 0 else None


def _read_edges(file: Path) -> list[tuple[int, int]]:
    """The (u, v) pairs of an edge list file (see :func:`from_edge_list`); InputError naming the first bad
    line."""
    check_topology_file(file, "edges:")
    try:
        lines = file.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"edge list file {str(file)!r} is not readable text ({exc})") from None
    edges = []
    for number, line in enumerate(lines, 1):
        fields = [f for f in re.split(r"[,\s]+", line.split("#")[0].strip()) if f]
        if fields[2:] == ["{}"]:  # networkx's write_edgelist adds each edge's (empty) attribute dict
            fields = fields[:2]
        if not fields:
            continue
        if len(fields) != 2 or not all(re.fullmatch(r"\d+", f) for f in fields):
            raise InputError(
                f"edge list file {str(file)!r}, line {number}: {line.strip()!r} (expected two node ids, "
                "integers >= 0, such as '0 1' or '0,1'; weights are not read: give C as matrix:PATH)"
            )
        edges.append((int(fields[0]), int(fields[1])))
    return edges


TOPOLOGIES: dict[str, Callable[[int], nx.Graph]] = {
    "ring": ring,
    "quasi-ring": quasi_ring,
    "torus": torus,
    "complete": complete,
    "star": star,
    "path": path,
    "hypercube": hypercube,
    "exponential": exponential,
    "erdos-renyi": erdos_renyi,
}


def make_graph(name: str, nodes: int, **options: object) -> nx.Graph:
    """Build a named topology (see :data:`TOPOLOGIES`) on ``nodes`` nodes.

    >>> make_graph("ring", 5).number_of_edges()
    5
    """
    check_topology_name(name)
    builder = TOPOLOGIES[name]
    accepted = set(inspect.signature(builder).parameters) - {"nodes"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise InputError(f"topology {name!r} takes no option {unknown[0]!r} (expected: "
                         f"{', '.join(sorted(accepted)) or 'none'})")  # fmt: skip
    n = whole_number("nodes", nodes)  # (a float N = 1e5 skipped this guard, and the memory ran out: a probe)
    if n > 0:
        edges = _edges_at_most(name, n, options.get("p"))
        if edges > MAX_EDGES:
            raise InputError(
                f"topology {name!r} on nodes = {nodes:,} has up to {edges:.3g} edges (expected at most "
                f"{MAX_EDGES:.0e}, which networkx holds in about 4 GB)"
            )
    return builder(nodes, **options)


MAX_EDGES = 2 * 10**7
"""The most edges :func:`make_graph` builds: networkx takes about 200 bytes and 1 microsecond per edge (a
complete graph of 3,000 nodes, 4.5 million edges: 0.76 GB and 3.6 s on 2 cores), so 2e7 edges are about
4 GB; a 200,000-node complete graph (2e10 edges) used to run until the memory ran out."""


def _edges_at_most(name: str, n: int, p: object = None) -> float:
    """An upper bound on the edges of topology ``name`` on n nodes (before it is built)."""
    if name == "complete":
        return n * (n - 1) / 2
    if name == "erdos-renyi":
        default = min(1.0, 2.0 * math.log(max(n, 2)) / n)
        try:  # (a numpy p = float32(0.9) was taken for the default: 1.15e6 edges guessed, 4.5e9 built)
            share = default if p is None else min(1.0, real_number("p", p))
        except InputError:  # the builder names a bad p
            share = 0.0
        return share * n * (n - 1) / 2
    if name in ("exponential", "hypercube"):
        return n * (math.log2(max(n, 2)) + 1)
    return 2.0 * n  # rings, paths, stars, tori, the quasi-ring
