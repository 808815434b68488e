"""Topologies, weight rules and mixing-matrix validation."""

from __future__ import annotations

import math
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from bounds import InputError, check_mixing_matrix, lazy, load_matrix, make_graph, mixing_matrix
from bounds.graph import mixing as mixing_module
from bounds.graph.names import TOPOLOGY_NAMES, WEIGHT_RULES
from bounds.graph.topologies import TOPOLOGIES, erdos_renyi, from_edge_list, quasi_ring, ring, torus

SIZES = {"hypercube": 16, "torus": 12}


@pytest.mark.parametrize("name", list(TOPOLOGIES))
@pytest.mark.parametrize("rule", ["metropolis", "max-degree", "lazy"])
def test_every_topology_and_rule_gives_a_valid_mixing_matrix(name: str, rule: str) -> None:
    n = SIZES.get(name, 10)
    graph = make_graph(name, n)
    assert graph.number_of_nodes() == n and nx.is_connected(graph)
    C = mixing_matrix(graph, rule)
    assert np.allclose(C, C.T) and np.allclose(C.sum(axis=1), 1.0) and (C >= 0).all()
    assert ((C > 0) == (nx.to_numpy_array(graph) + np.eye(n) > 0)).all() or rule == "lazy"


def test_shapes_of_named_graphs() -> None:
    assert sorted(d for _, d in torus(12).degree()) == [4] * 12  # 3 x 4 torus
    assert make_graph("hypercube", 16).number_of_edges() == 32
    assert make_graph("star", 6).degree[0] == 5
    assert make_graph("path", 5).number_of_edges() == 4
    assert sorted(make_graph("exponential", 8).neighbors(0)) == [1, 2, 4, 6, 7]
    assert set(quasi_ring(10).edges) - set(ring(10).edges) == {(0, 5), (3, 6)}


def test_paper_rule_is_equal_weights_on_regular_graphs_and_rejects_irregular_ones() -> None:
    C = mixing_matrix(ring(10))
    assert np.allclose(C[0][[9, 0, 1]], 1 / 3) and np.isclose(C[0].sum(), 1)
    assert np.allclose(mixing_matrix(make_graph("complete", 7)), 1 / 7)  # C = J
    with pytest.raises(InputError, match=r"node 0 has degree 3 but its neighbour 1 has degree 2"):
        mixing_matrix(quasi_ring(10), "paper")


def test_metropolis_weights_by_hand() -> None:
    C = mixing_matrix(make_graph("star", 4), "metropolis")  # hub degree 3, leaves degree 1
    assert np.allclose(C[0], [1 - 3 / 4, 1 / 4, 1 / 4, 1 / 4])
    assert np.allclose(C[1], [1 / 4, 3 / 4, 0, 0])


def test_lazy_halves_the_spectrum_towards_one() -> None:
    C = mixing_matrix(ring(8), "metropolis")
    ev, ev_lazy = np.linalg.eigvalsh(C), np.linalg.eigvalsh(lazy(C))
    assert np.allclose(np.sort((1 + ev) / 2), ev_lazy)


def test_erdos_renyi_is_seeded_and_connected() -> None:
    a, b, c = erdos_renyi(30, seed=3), erdos_renyi(30, seed=3), erdos_renyi(30, seed=4)
    assert nx.is_connected(a) and set(a.edges) == set(b.edges) != set(c.edges)
    with pytest.raises(InputError, match=r"p = 1.5 is out of range"):
        erdos_renyi(10, p=1.5)


def test_large_graphs_give_sparse_matrices() -> None:
    C = mixing_matrix(ring(5000))
    assert sp.issparse(C) and C.nnz == 3 * 5000
    assert not sp.issparse(mixing_matrix(ring(50)))


@pytest.mark.parametrize(
    ("name", "nodes", "message"),
    [
        ("moebius", 10, r"unknown topology 'moebius' \(expected one of: ring"),
        ("ring", 2, r"nodes = 2 is too small for topology 'ring' \(expected >= 3\)"),
        ("hypercube", 12, r"nodes = 12 is not a power of two"),
        ("torus", 7, r"nodes = 7 cannot form a 2-D torus"),
        ("ring", 4.5, r"nodes = 4.5 is not a whole number \(expected an integer\)"),
        ("ring", "10", r"nodes = '10' is a string"),
    ],
)
def test_bad_topology_arguments(name: str, nodes: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        make_graph(name, nodes)  # type: ignore[arg-type]


def test_a_whole_number_float_of_nodes_is_taken_as_dfl_bound_takes_it() -> None:
    """make_graph('ring', 10.0) was 'is not an integer' while dfl_bound(N=10.0) took it (a probe)."""
    assert sorted(make_graph("ring", 10.0).edges) == sorted(make_graph("ring", np.int64(10)).edges)
    assert make_graph("ring", 10.0).number_of_nodes() == 10


def test_unknown_weight_rule() -> None:
    with pytest.raises(InputError, match=r"unknown weight rule 'uniform' \(expected one of: paper"):
        mixing_matrix(ring(5), "uniform")


def test_light_names_are_the_builders_names() -> None:
    """`bounds.graph.names` (read before networkx loads) lists exactly the builders and weight rules, each of
    which works."""
    assert TOPOLOGY_NAMES == tuple(TOPOLOGIES)
    for rule in WEIGHT_RULES:
        C = mixing_matrix(ring(5), rule)
        assert np.allclose(np.asarray(C).sum(axis=1), 1.0)
    assert set(WEIGHT_RULES) == {"lazy", *mixing_module._EDGE_WEIGHTS}


@pytest.mark.parametrize(
    ("C", "message"),
    [
        (np.ones((2, 3)) / 3, r"shape \(2, 3\) \(expected a non-empty square"),
        ([[0.5, np.nan], [0.5, 0.5]], r"NaN or infinite"),
        ([[1.2, -0.2], [-0.2, 1.2]], r"C\[0, 1\] = -0.2 is negative"),
        ([[0.5, 0.5], [0.4, 0.6]], r"not symmetric: \|C\[0, 1\] - C\[1, 0\]\| = 0.1"),
        ([[0.5, 0.4, 0.0], [0.4, 0.5, 0.1], [0.0, 0.1, 0.9]], r"row 0 of C sums to 0.9 \(expected"),
        ([[1e308, 1e308], [1e308, 1e308]], r"C\[0, 0\] = 1e\+308 exceeds 1"),  # its row sums overflowed
        (np.eye(3), r"disconnected \(3 components; node 0 cannot reach node 1\)"),
        ("abc", r"C holds strings \(expected an N x N matrix of real numbers\)"),
        ([["0.5", "0.5"], ["0.5", "0.5"]], r"C holds strings"),  # they used to convert
        (np.eye(2) * (1 + 1j), r"C holds complex numbers"),  # its imaginary part used to be dropped
        ([[1.0, 0.0], [0.0]], r"C holds no numbers"),
    ],
)
def test_invalid_mixing_matrices_are_named(C: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        check_mixing_matrix(C)


def test_worst_row_is_reported() -> None:
    C = np.full((3, 3), 1 / 3)
    C[2, 2] += 0.3
    C[1, 1] += 0.1
    with pytest.raises(InputError, match=r"row 2 of C sums to 1.3"):
        check_mixing_matrix(C)


def test_user_files(tmp_path) -> None:
    C = mixing_matrix(ring(6))
    np.save(tmp_path / "c.npy", C)
    np.savetxt(tmp_path / "c.txt", C)
    np.savetxt(tmp_path / "c.csv", C, delimiter=",")
    np.savez(tmp_path / "c.npz", C=C)
    sp.save_npz(tmp_path / "s.npz", sp.csr_matrix(C))
    for name in ("c.npy", "c.txt", "c.csv", "c.npz", "s.npz"):
        loaded = load_matrix(tmp_path / name)
        assert np.allclose(loaded.toarray() if sp.issparse(loaded) else loaded, C)
    (tmp_path / "bad.txt").write_text("1 2\n3\n")
    with pytest.raises(InputError, match=r"bad.txt' could not be read as an N x N matrix"):
        load_matrix(tmp_path / "bad.txt")
    with pytest.raises(InputError, match=r"does not exist"):
        load_matrix(tmp_path / "missing.npy")
    (tmp_path / "edges.txt").write_text("10 11\n11 12\n12 10\n12 13\n")
    graph = from_edge_list(tmp_path / "edges.txt")
    assert sorted(graph.nodes) == [0, 1, 2, 3] and graph.number_of_edges() == 4
    (tmp_path / "junk.txt").write_text("a b\n")
    with pytest.raises(InputError, match=r"line 1: 'a b' \(expected two node ids"):
        from_edge_list(tmp_path / "junk.txt")


def test_edge_list_files_take_commas_and_comments_and_name_a_bad_line(tmp_path) -> None:
    """'0,1' used to read as no edges at all; '1 -1' as a node named -1 (then 'disconnected'); a weight
    column was dropped without a word."""
    good = tmp_path / "good.txt"
    good.write_text("# a ring\n0,1\n1 2  # spaces\n\n2, 3\n3\t0\n")
    assert nx.is_isomorphic(from_edge_list(good), ring(4))
    for text, line in (("0 1\n1 -1\n", "line 2: '1 -1'"), ("0 1 0.5\n", "line 1: '0 1 0.5'"),
                       ("0 1\nzero one\n", "line 2: 'zero one'")):  # fmt: skip
        bad = tmp_path / "bad.txt"
        bad.write_text(text)
        with pytest.raises(InputError, match=f"{line} \\(expected two node ids, integers >= 0"):
            from_edge_list(bad)
    (tmp_path / "empty.txt").write_text("# nothing\n")
    with pytest.raises(InputError, match="has no edges"):
        from_edge_list(tmp_path / "empty.txt")
    with pytest.raises(InputError, match="is a folder"):
        from_edge_list(tmp_path)


def test_matrix_text_files_take_commas_whatever_the_suffix_and_refuse_an_empty_file(tmp_path) -> None:
    C = mixing_matrix(ring(5), "paper")
    (tmp_path / "c.txt").write_text("\n".join(",".join(repr(float(v)) for v in row) for row in C) + "\n")
    np.testing.assert_array_equal(load_matrix(tmp_path / "c.txt"), C)
    (tmp_path / "empty.txt").write_text("")
    with warnings.catch_warnings():  # numpy's "input contained no data" warning used to reach users
        warnings.simplefilter("error")
        with pytest.raises(InputError, match="holds no numbers"):
            load_matrix(tmp_path / "empty.txt")
    with pytest.raises(InputError, match="is a folder"):
        load_matrix(tmp_path)


def test_graphs_too_large_to_hold_are_refused_before_they_are_built() -> None:
    """A 200,000-node complete graph (2e10 edges) used to run until the memory ran out."""
    from bounds.graph.topologies import MAX_EDGES

    with pytest.raises(InputError, match=r"'complete' on nodes = 200,000 has up to 2e\+10 edges"):
        make_graph("complete", 200_000)
    with pytest.raises(InputError, match="'ring' on nodes = 100,000,000"):
        make_graph("ring", 10**8)
    largest = int((1 + (1 + 8 * MAX_EDGES) ** 0.5) / 2)  # the largest complete graph within the cap
    with pytest.raises(InputError, match="has up to"):
        make_graph("complete", largest + 1)
    with pytest.raises(InputError, match="'erdos-renyi' on nodes = 20,000 has up to 2e\\+08"):  # p given
        make_graph("erdos-renyi", 20_000, p=1.0)


def test_large_erdos_renyi_graphs_are_drawn_in_linear_time_and_small_ones_as_before() -> None:
    """gnp_random_graph draws all N^2 / 2 pairs (100,000 nodes took minutes); above FAST_GNP_ABOVE nodes the
    O(N + edges) draw of the same distribution is used."""
    from bounds.graph.topologies import FAST_GNP_ABOVE

    n = FAST_GNP_ABOVE + 1
    graph = erdos_renyi(n, seed=3)
    expected = 2 * math.log(n) / n * n * (n - 1) / 2
    assert nx.is_connected(graph) and abs(graph.number_of_edges() - expected) < 5 * expected**0.5
    seed = int(np.random.default_rng(3).integers(2**32))  # the first draw: connected at this size
    assert nx.utils.graphs_equal(
        erdos_renyi(500, seed=3), nx.gnp_random_graph(500, 2 * math.log(500) / 500, seed)
    )


def test_graph_and_matrix_helpers_name_what_they_cannot_use(tmp_path) -> None:
    """Each of these used to end in a TypeError, AttributeError or NetworkXError from inside networkx, or
    (a directed graph, a lone self-loop) in a silent answer."""
    cases = [
        (lambda: make_graph("ring", 6, foo=1), "topology 'ring' takes no option 'foo'"),
        (lambda: mixing_matrix(nx.DiGraph([(0, 1), (1, 0)])), "the graph is directed"),
        (lambda: mixing_matrix(np.eye(3)), "expected a networkx Graph"),
        (lambda: load_matrix(123), "matrix file = 123 \\(expected a path"),
        (lambda: from_edge_list([(0,)]), "expected a file path or \\(u, v\\) pairs"),
        (lambda: from_edge_list([(0, 0)]), "the edge list has no edges"),
        (lambda: from_edge_list(5), "edges = 5"),
        (lambda: lazy(np.eye(3) * 3), r"C\[0, 0\] = 3 exceeds 1"),
    ]
    for call, message in cases:
        with pytest.raises(InputError, match=message):
            call()
    assert make_graph("erdos-renyi", 10, p=0.5, seed=1).number_of_nodes() == 10  # its own options pass


def test_edge_lists_from_any_iterable_of_pairs_and_from_networkx_files(tmp_path) -> None:
    """The review found these refused by the first stricter version: arrays, edge views, zips, array rows,
    networkx's own write_edgelist ('0 1 {}'); numeric object matrices (sympy, Fraction) too."""
    from fractions import Fraction

    g = nx.cycle_graph(5)
    for edges in (np.array(list(g.edges)), g.edges, zip([0, 1, 2], [1, 2, 0], strict=True),
                  [np.array([0, 1]), np.array([1, 2])]):  # fmt: skip
        assert from_edge_list(edges).number_of_edges() >= 2
    nx.write_edgelist(g, tmp_path / "ring.edges")
    assert nx.is_isomorphic(from_edge_list(tmp_path / "ring.edges"), g)
    assert check_mixing_matrix([[Fraction(1, 2)] * 2] * 2).dtype == np.float64
    with pytest.raises(InputError, match=r"\(0, -1\) is not one"):
        from_edge_list([(0, 1), (0, -1)])
    for edges in ([(0, float("nan"))], [(0, np.float32("inf"))], np.array([[0, 1], [1, np.nan]])):
        with pytest.raises(
            InputError, match=r"^edges = [^\n]* integer node ids >= 0\): .*(nan|inf)\W* is not one"
        ):
            from_edge_list(edges)  # int(nan) raised ValueError, int(inf) OverflowError (a probe)
    assert (
        from_edge_list([(0, 1), (1, 2**70)]).number_of_nodes() == 3
    )  # any int is an id (np.isfinite: TypeError)


def test_the_tolerance_of_the_mixing_check_is_checked_itself() -> None:
    """tol = NaN accepted [[2, -1], [-1, 2]]; '1' raised a TypeError; -1 called C = J negative."""
    for tol, fragment in ((float("nan"), "tol is NaN"), ("1", "tol = '1' is a string"), (-1, "tol = -1")):
        with pytest.raises(InputError, match=fragment):
            check_mixing_matrix([[2.0, -1.0], [-1.0, 2.0]], tol=tol)
