"""The forms of C @ X a run may take (sim.gossip.choose_mixing): shifted diagonals and group means against
the matrix product on every kind of graph, blocks that change no bit, and the rule that picks the form."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from bounds import InputError, make_graph, mixing_matrix
from bounds.cdfl.compression import TopK
from bounds.graph.mixing import as_dense
from sim.gossip import (
    DENSE_GOSSIP_NODES,
    DENSE_GOSSIP_NODES_CPU,
    AverageMixing,
    ChocoGossip,
    DiagonalMixing,
    ExactGossip,
    LocalMixing,
    choose_mixing,
    csr_product,
    dense_gossip_nodes,
    mixing_form,
    sparse_mixing,
)

GRAPHS = [  # (topology, N, weight rule): circulant and not, regular and not
    ("ring", 3, "paper"), ("ring", 7, "paper"), ("complete", 5, "paper"), ("exponential", 16, "paper"),
    ("torus", 12, "paper"), ("torus", 30, "metropolis"), ("path", 9, "metropolis"), ("star", 8, "metropolis"),
    ("hypercube", 16, "paper"), ("erdos-renyi", 20, "metropolis"),
]  # fmt: skip


@pytest.fixture
def ten_per_node(tmp_path):
    """A 3-class, 8-feature npz data set of 2,400 training samples: 10 per node of a 240-node run."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 2600)
    x = rng.normal(size=(3, 8))[y] * 2 + rng.normal(size=(2600, 8))
    path = tmp_path / "ten_per_node.npz"
    np.savez(path, x_train=x[:2400], y_train=y[:2400], x_test=x[2400:], y_test=y[2400:])
    return path


def _matrix(topology: str, n: int, rule: str) -> np.ndarray:
    return as_dense(mixing_matrix(make_graph(topology, n), rule))


@pytest.mark.parametrize("topology, n, rule", GRAPHS)
def test_diagonals_give_the_matrix_product(topology: str, n: int, rule: str) -> None:
    """float64 to 1e-12, for the operator alone and inside both gossip rules."""
    C = _matrix(topology, n, rule)
    op = DiagonalMixing.of(C)
    assert op is not None
    X = torch.randn(n, 13, dtype=torch.float64)
    expected = torch.as_tensor(C) @ X
    torch.testing.assert_close(op.mix(X, X[:0]), expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ExactGossip(op).step(X), expected, rtol=1e-12, atol=1e-12)
    choco_dense = ChocoGossip(torch.as_tensor(C), 0.5, TopK(5))
    choco_diag = ChocoGossip(op, 0.5, TopK(5))
    for _ in range(3):
        torch.testing.assert_close(choco_diag.step(X), choco_dense.step(X), rtol=1e-12, atol=1e-12)


def test_circulant_graphs_keep_one_number_per_diagonal() -> None:
    ring = DiagonalMixing.of(_matrix("ring", 10, "paper"))
    assert ring is not None and ring.circulant
    assert ring.weights == pytest.approx({0: 1 / 3, 1: 1 / 3, 9: 1 / 3})
    torus = DiagonalMixing.of(_matrix("torus", 12, "paper"))  # 3 x 4: offsets 0, +-1, +-3, +-4 (mod 12)
    assert torus is not None and not torus.circulant
    assert sorted(torus.weights) == [0, 1, 3, 4, 8, 9, 11]
    masked = torus.weights[3]  # row i reaches i + 3 only from the first column of its grid row
    assert isinstance(masked, np.ndarray) and np.count_nonzero(masked) == 3


def test_a_wrong_diagonal_is_seen() -> None:
    """The check can fail: an operator with one weight moved gives another product."""
    C = _matrix("torus", 12, "paper")
    op = DiagonalMixing.of(C)
    assert op is not None
    w = op.weights[1].copy()
    w[[0, 1]] = w[[1, 0]] + np.array([0.0, 0.25])
    wrong = DiagonalMixing({**op.weights, 1: w})
    X = torch.randn(12, 5, dtype=torch.float64)
    assert not torch.allclose(wrong.mix(X, X[:0]), torch.as_tensor(C) @ X, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("rows", [1, 2, 4, 5, 9])
@pytest.mark.parametrize("topology", ["ring", "torus"])
def test_blocks_change_no_bit(rows: int, topology: str) -> None:
    """Blocks of output rows (wrapping past the end of X) give exactly the passes over the whole matrix,
    for constant diagonals (an asymmetric circulant) and per-row ones (a torus)."""
    n = 12
    if topology == "ring":
        C = np.zeros((n, n))
        for k, c in {0: 0.5, 1: 0.3, 3: 0.2}.items():
            C[np.arange(n), (np.arange(n) + k) % n] = c
    else:
        C = _matrix("torus", n, "paper")
    op = DiagonalMixing.of(C)
    assert op is not None
    X = torch.randn(n, 7)
    whole = DiagonalMixing(op.weights, block_bytes=0).mix(X, X[:0])
    blocked = DiagonalMixing(op.weights, block_bytes=rows * 7 * 4).mix(X, X[:0])
    assert torch.equal(blocked, whole)
    torch.testing.assert_close(whole, torch.as_tensor(C, dtype=torch.float32) @ X, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("topology", ["ring", "torus"])
def test_fused_diagonals_give_the_matrix_product(topology: str) -> None:
    """The compiled one-kernel form; skipped where torch.compile has no back end (no C++ compiler)."""
    C = _matrix(topology, 12, "paper")
    op = DiagonalMixing.of(C)
    assert op is not None
    X = torch.randn(12, 17)
    try:
        got = op.fused()(X)
    except Exception as exc:  # torch's compiler errors have no common public base class
        pytest.skip(f"torch.compile has no back end here: {type(exc).__name__}")
    torch.testing.assert_close(got, torch.as_tensor(C, dtype=torch.float32) @ X, rtol=1e-5, atol=1e-6)


def test_max_diagonals_refuses_fuller_matrices() -> None:
    C = _matrix("ring", 10, "paper")
    assert DiagonalMixing.of(C, max_diagonals=2) is None
    assert DiagonalMixing.of(C, max_diagonals=3) is not None


@pytest.mark.parametrize(
    "topology, n, rule, form",
    [
        ("ring", DENSE_GOSSIP_NODES_CPU, "paper", "dense"),  # small: the dense product
        ("ring", DENSE_GOSSIP_NODES_CPU + 1, "paper", "sparse"),  # 3 non-zeros a row: too few for diagonals
        ("ring", 300, "paper", "sparse"),
        ("torus", 25, "paper", "sparse"),  # 7 diagonals, 5 non-zeros a row
        ("torus", 400, "paper", "sparse"),  # 7 diagonals, 5 non-zeros a row
        ("exponential", 256, "paper", "diagonal"),  # circulant: 16 diagonals, 16 non-zeros a row
        ("path", 300, "metropolis", "sparse"),
        ("hypercube", 256, "paper", "sparse"),  # 16 diagonals, 9 non-zeros a row
        ("erdos-renyi", 300, "metropolis", "sparse"),  # diagonals everywhere
        ("star", 300, "metropolis", "sparse"),  # the hub reaches every diagonal; 2 non-zeros an average row
        ("complete", 300, "paper", "average"),  # C = J: the mean (CSR would hold 300 non-zeros a row)
        ("complete", 300, "metropolis", "average"),
        ("complete", 10, "paper", "average"),  # at every size
        ("ring", 3, "paper", "average"),  # the 3-ring's C is J
        ("ring", 4, "metropolis", "dense"),
    ],
)
def test_choose_mixing_on_the_cpu(topology: str, n: int, rule: str, form: str) -> None:
    C = mixing_matrix(make_graph(topology, n), rule)
    chosen = choose_mixing(C, "cpu")
    assert mixing_form(chosen) == form
    X = torch.randn(n, 6)
    product = chosen @ X if isinstance(chosen, torch.Tensor) else chosen.mix(X, X[:0])
    expected = torch.as_tensor(as_dense(C), dtype=torch.float32) @ X
    torch.testing.assert_close(product, expected, rtol=1e-5, atol=1e-6)


def test_choose_mixing_off_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU keeps the dense product up to 200 rows and takes CSR above, the mean for J."""
    import sim.gossip

    assert dense_gossip_nodes("cuda") == DENSE_GOSSIP_NODES == 200
    assert dense_gossip_nodes("cpu") == DENSE_GOSSIP_NODES_CPU == 16
    assert choose_mixing(np.full((300, 300), 1 / 300), "cuda") == AverageMixing((300,))  # no device used
    C = mixing_matrix(make_graph("ring", 300))
    built = []  # a GPU run takes sparse CSR (built on the device: recorded here, no GPU needed)
    monkeypatch.setattr(sim.gossip, "sparse_mixing", lambda C, device: built.append(device) or "csr")
    assert choose_mixing(C, "cuda") == "csr" and built == ["cuda"]


def test_a_sweeps_block_diagonal_drops_the_zeros_of_its_dense_blocks() -> None:
    """sp.block_diag of dense 10-node rings stores 10 entries a row; the CSR product gets the 3 non-zeros."""
    blocks = sp.block_diag([_matrix("ring", 10, "paper")] * 30, format="csr")
    assert blocks.nnz == 3000  # scipy keeps the dense blocks' zeros
    chosen = choose_mixing(blocks, "cpu")  # 5 diagonals (0, +-1, +-9), 3 non-zeros a row: CSR
    assert isinstance(chosen, torch.Tensor) and chosen.layout == torch.sparse_csr
    assert chosen.values().numel() == 900
    X = torch.randn(300, 4)
    expected = torch.as_tensor(blocks.toarray(), dtype=torch.float32) @ X
    torch.testing.assert_close(chosen @ X, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("algorithm", ["dfl", "cdfl"])
def test_a_large_ring_run_with_shifted_diagonals_equals_the_csr_run(
    algorithm: str, ten_per_node, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 240-node ring run with DiagonalMixing (taken where rows had 3 non-zeros) has the records of the same
    run with CSR (what the rule takes)."""
    from conftest import assert_same_records

    import sim.gossip
    from sim.config import RunConfig
    from sim.runner import run
    from sim.setup import build_trainer, prepare

    base = {"dataset": f"npz:{ten_per_node}", "model": "logreg", "nodes": 240, "partition": "iid",
            "steps": 12,
            "tau1": 2, "tau2": 2, "eta": 0.1, "log_every": 4, "eval_samples": 50,
            "algorithm": algorithm}  # fmt: skip
    if algorithm == "cdfl":
        base |= {"compressor": "top_k", "compressor_param": 4}
    csr = RunConfig(**base, out=str(tmp_path / "csr"))
    assert mixing_form(build_trainer(csr, prepare(csr)).gossip.mixing) == "sparse"
    run(csr)
    monkeypatch.setattr(sim.gossip, "DIAGONALS_FROM_NONZEROS", 3)
    config = RunConfig(**base, out=str(tmp_path / "diagonal"))
    assert isinstance(build_trainer(config, prepare(config)).gossip.mixing, DiagonalMixing)
    run(config)
    assert_same_records(tmp_path / "diagonal", tmp_path / "csr")


def test_repeated_and_zero_entries_of_a_coo_matrix() -> None:
    """A COO input that repeats an entry (the values add up, as in C) or stores a zero."""
    C = _matrix("ring", 6, "paper")
    M = sp.coo_matrix(C)
    first = (M.row == 0) & (M.col == 0)  # C_00 is stored as two halves
    rows = np.concatenate([M.row, [0, 2]])
    cols = np.concatenate([M.col, [0, 4]])
    data = np.concatenate([np.where(first, M.data / 2, M.data), [C[0, 0] / 2, 0.0]])
    repeated = sp.coo_matrix((data, (rows, cols)), shape=C.shape)
    op = DiagonalMixing.of(repeated)
    assert op is not None and sorted(op.weights) == [0, 1, 5]  # the stored zero at (2, 4) adds no diagonal
    X = torch.randn(6, 3, dtype=torch.float64)
    torch.testing.assert_close(op.mix(X, X[:0]), torch.as_tensor(C) @ X, rtol=1e-12, atol=1e-12)


def test_weights_of_any_number_type_and_a_fresh_cache_after_replace() -> None:
    """An int or numpy scalar is a constant diagonal; dataclasses.replace does not reuse the old weights'
    tensors; a non-square C is refused."""
    import dataclasses

    from bounds import InputError

    X = torch.randn(5, 3)
    op = DiagonalMixing({0: 1, 1: np.float32(0.5), 4: np.full(5, 0.25)})
    assert op.circulant is False and op.weights[0] == 1.0 and isinstance(op.weights[1], float)
    C = np.eye(5) + 0.5 * np.roll(np.eye(5), 1, axis=1) + 0.25 * np.roll(np.eye(5), 4, axis=1)
    torch.testing.assert_close(op.mix(X, X[:0]), torch.as_tensor(C, dtype=torch.float32) @ X)
    other = dataclasses.replace(op, weights={0: 2.0})
    torch.testing.assert_close(other.mix(X, X[:0]), 2 * X)
    with pytest.raises(InputError, match=r"shape \(3, 5\)"):
        DiagonalMixing.of(np.ones((3, 5)))


def test_choose_mixing_adds_up_repeated_csr_entries() -> None:
    """A non-canonical CSR input (every entry stored as two halves) gives C's product: torch's CSR check
    refuses repeated entries, and the diagonals would count them twice."""
    C = sp.csr_matrix(mixing_matrix(make_graph("torus", 400)))
    doubled = sp.csr_matrix((np.repeat(C.data / 2, 2), np.repeat(C.indices, 2), 2 * C.indptr), shape=C.shape)
    assert doubled.nnz == 2 * C.nnz  # stored twice, not added up by scipy
    X = torch.randn(400, 3)
    expected = torch.as_tensor(C.toarray(), dtype=torch.float32) @ X
    chosen = choose_mixing(doubled, "cpu")
    assert mixing_form(chosen) == "sparse"
    torch.testing.assert_close(chosen @ X, expected, rtol=1e-5, atol=1e-6)


def test_a_sweep_above_200_rows_equals_its_runs_alone(ten_per_node, tmp_path, monkeypatch) -> None:
    """Two 240-node ring runs stacked, diagonals allowed from 3 non-zeros a row: steps where one gossips take
    its diagonals, steps where both do take the block-diagonal's CSR (5 diagonals, 3 non-zeros a row); each
    run's records are its run's alone."""
    from conftest import assert_same_records

    import sim.gossip

    monkeypatch.setattr(sim.gossip, "DIAGONALS_FROM_NONZEROS", 3)
    from sim.config import RunConfig
    from sim.runner import run
    from sim.sweep import build_engine, run_sweep

    base = {"dataset": f"npz:{ten_per_node}", "model": "logreg", "nodes": 240, "partition": "iid",
            "steps": 12,
            "eta": 0.1, "log_every": 4, "eval_samples": 50}  # fmt: skip
    variants = [{"tau1": 2, "tau2": 2}, {"tau1": 1, "tau2": 3, "seed": 3}]
    configs = [RunConfig(**base, **v, out=str(tmp_path / f"sweep/{i}")) for i, v in enumerate(variants)]
    engine, _ = build_engine(configs)
    assert mixing_form(engine._block(engine.lanes[:1])) == "diagonal"
    assert mixing_form(engine._block(engine.lanes)) == "sparse"
    run_sweep(configs)
    for i, v in enumerate(variants):
        run(RunConfig(**base, **v, out=str(tmp_path / f"alone/{i}")))
        assert_same_records(tmp_path / f"sweep/{i}", tmp_path / f"alone/{i}")


def test_sparse_mixing_takes_the_canonical_matrix_and_leaves_the_callers_alone() -> None:
    """sparse_mixing itself (the bench and every CSR run call it) adds up repeated entries and drops stored
    zeros; the caller's matrix keeps what it stored."""
    C = sp.csr_matrix(mixing_matrix(make_graph("torus", 400)))
    doubled = sp.csr_matrix((np.repeat(C.data / 2, 2), np.repeat(C.indices, 2), 2 * C.indptr), shape=C.shape)
    with_zeros = sp.block_diag([_matrix("ring", 10, "paper")] * 30, format="csr")
    for M, nnz in ((doubled, C.nnz), (with_zeros, 900)):
        stored = M.nnz
        S = sparse_mixing(M)
        assert S.values().numel() == nnz and M.nnz == stored
        X = torch.randn(M.shape[0], 3)
        expected = torch.as_tensor(M.toarray(), dtype=torch.float32) @ X
        torch.testing.assert_close(S @ X, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sizes", [(1,), (6,), (4, 4, 4), (1,) * 12, (4, 2, 3), (1, 5, 1), (2, 7)])
def test_group_means_give_the_matrix_product(sizes: tuple[int, ...]) -> None:
    """blockdiag(J_g1, J_g2, ...) from a dense or a sparse C: float64 to 1e-12, alone and in both gossip
    rules; the result is a new matrix whose rows share no memory (an in-place update of it works)."""
    n = sum(sizes)
    C = sp.block_diag([np.full((g, g), 1 / g) for g in sizes], format="csr")
    for given in (C, C.toarray(), sp.coo_matrix(C)):
        assert AverageMixing.of(given) == AverageMixing(sizes)
    op = AverageMixing(sizes)
    X = torch.randn(n, 9, dtype=torch.float64)
    expected = torch.as_tensor(C.toarray()) @ X
    out = op.mix(X, X[:0])
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    assert out.data_ptr() != X.data_ptr() and out.stride() == X.stride()
    out.add_(1.0)  # no two rows alias
    torch.testing.assert_close(ExactGossip(op).step(X), expected, rtol=1e-12, atol=1e-12)
    choco_dense = ChocoGossip(torch.as_tensor(C.toarray()), 0.5, TopK(4))
    choco_mean = ChocoGossip(op, 0.5, TopK(4))
    for _ in range(3):
        torch.testing.assert_close(choco_mean.step(X), choco_dense.step(X), rtol=1e-12, atol=1e-12)


def test_near_averages_are_not_taken_for_J() -> None:
    """What is almost, but not, a block-diagonal of equal J blocks keeps its own form."""
    J = np.full((6, 6), 1 / 6)
    nudged = J.copy()
    nudged[0, 1] += 1e-9
    nudged[0, 2] -= 1e-9  # still doubly stochastic
    unequal = sp.block_diag([np.full((4, 4), 0.25), np.full((2, 2), 0.4)], format="csr")  # 0.4: not 1/2
    band = mixing_matrix(make_graph("ring", 6))  # 3 entries of 1/3 a row, not in groups of 3
    shuffled = sp.csr_matrix(sp.block_diag([np.full((3, 3), 1 / 3)] * 2).toarray()[[0, 3, 1, 4, 2, 5]])
    overlapping = sp.csr_matrix(np.kron(np.eye(3), np.full((2, 2), 0.5)))  # groups 0-1, 2-3, 4-5 ...
    overlapping[2, 1], overlapping[2, 3] = 0.5, 0.0  # ... but row 2 reaches back into the first group
    first_row_only = J.copy()
    first_row_only[3:, :] = np.eye(6)[3:]  # its first row is J's: the whole matrix is compared
    others = (sp.csr_matrix(nudged), unequal, band, shuffled, overlapping, first_row_only, J[:, :5])
    for C in (nudged, *others):
        assert AverageMixing.of(C) is None
        if C.shape[0] == C.shape[1]:
            assert mixing_form(choose_mixing(C, "cpu")) == "dense"


def test_a_wrong_group_mean_is_seen() -> None:
    """The means of groups of the wrong sizes are not C @ X (the comparison the tests above make can fail)."""
    C = sp.block_diag([np.full((3, 3), 1 / 3)] * 4, format="csr")
    X = torch.randn(12, 5, dtype=torch.float64)
    expected = torch.as_tensor(C.toarray()) @ X
    for wrong in (
        AverageMixing((4, 4, 4)),
        AverageMixing((12,)),
        AverageMixing((1,) * 12),
        AverageMixing((3, 3, 6)),
    ):
        assert not torch.allclose(wrong.mix(X, X[:0]), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("sizes", [3, (), (0,), (2, -2), (2.5,), (True,), ("3",), None])
def test_bad_group_sizes_are_refused(sizes: object) -> None:
    with pytest.raises(InputError, match=re.escape(f"sizes = {sizes!r} (expected the groups' sizes")):
        AverageMixing(sizes)  # type: ignore[arg-type]


def test_group_sizes_of_any_integer_type_and_rows_that_do_not_fit() -> None:
    assert AverageMixing((np.int64(3), 2)).sizes == (3, 2) and AverageMixing([4]).sizes == (4,)
    with pytest.raises(InputError, match=r"7 rows, but the groups hold 6 \(expected as many\)"):
        AverageMixing((3, 3)).mix(torch.zeros(7, 2), torch.zeros(0, 2))


def test_choose_mixing_refuses_a_non_square_matrix() -> None:
    C = sp.csr_matrix(mixing_matrix(make_graph("ring", 300)))
    with pytest.raises(InputError, match=r"C has shape \(301, 300\) \(expected a square N x N"):
        choose_mixing(sp.vstack([C, C[:1]]).tocsr(), "cpu")


@pytest.mark.parametrize("algorithm", ["sync", "local"])
def test_exact_averaging_runs_take_the_mean(algorithm: str, ten_per_node, tmp_path, monkeypatch) -> None:
    """Synchronous and local SGD (C = J) take the mean, alone and stacked in a sweep, and their records equal
    those of the same runs with the matrix product."""
    from conftest import assert_same_records

    import sim.gossip
    from sim.config import RunConfig
    from sim.runner import run
    from sim.setup import build_trainer, prepare
    from sim.sweep import build_engine, run_sweep

    base = {"dataset": f"npz:{ten_per_node}", "model": "logreg", "nodes": 40, "partition": "iid", "steps": 8,
            "tau1": 2, "eta": 0.1, "log_every": 4, "eval_samples": 50, "algorithm": algorithm}  # fmt: skip
    config = RunConfig(**base, out=str(tmp_path / "mean"))
    assert build_trainer(config, prepare(config)).gossip.mixing == AverageMixing((40,))
    run(config)
    sweep = [RunConfig(**base, seed=s, out=str(tmp_path / f"sweep{s}")) for s in (0, 1)]
    engine, _ = build_engine(sweep)
    assert engine._block(engine.lanes) == AverageMixing((40, 40))
    run_sweep(sweep)
    assert_same_records(tmp_path / "mean", tmp_path / "sweep0")
    monkeypatch.setattr(sim.gossip.AverageMixing, "of", classmethod(lambda cls, C: None))
    product = RunConfig(**base, out=str(tmp_path / "product"))
    assert mixing_form(build_trainer(product, prepare(product)).gossip.mixing) != "average"
    run(product)
    assert_same_records(tmp_path / "mean", tmp_path / "product")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("topology, n, rule", GRAPHS)
def test_the_csr_product_is_the_matrix_product_bit_for_bit(
    topology: str, n: int, rule: str, dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    """csr_product (what a CSR run computes on the CPU) equals torch's C @ X bit for bit, in a new matrix,
    whatever its fresh output held before (here NaN: addmm with beta = 0 reads none of it)."""
    S = sparse_mixing(_matrix(topology, n, rule), dtype)
    X = torch.randn(n, 13, dtype=dtype)
    expected = S @ X
    empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: empty(*a, **k).fill_(float("nan")))
    out = csr_product(S, X)
    assert torch.equal(out, expected) and out.data_ptr() != X.data_ptr()
    assert torch.equal(LocalMixing(S).mix(X, X[:0]), expected)


def test_diagonals_only_from_many_nonzeros_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule's third condition: a 300-ring (3 non-zeros a row) takes CSR, unless the threshold is 3."""
    import sim.gossip

    C = mixing_matrix(make_graph("ring", 300))
    assert mixing_form(choose_mixing(C, "cpu")) == "sparse"
    monkeypatch.setattr(sim.gossip, "DIAGONALS_FROM_NONZEROS", 3)
    assert mixing_form(choose_mixing(C, "cpu")) == "diagonal"
    monkeypatch.setattr(sim.gossip, "DIAGONALS_FROM_NONZEROS", 4)
    assert mixing_form(choose_mixing(C, "cpu")) == "sparse"


def test_a_large_dense_J_is_compared_in_slices_to_its_last_row() -> None:
    """2,100 rows: compared in two slices of rows; a change in the last row (the second slice) is seen."""
    n = 2100
    J = np.full((n, n), 1 / n)
    assert AverageMixing.of(J) == AverageMixing((n,))
    J[-1, -2:] = [0.5 / n, 1.5 / n]  # rows still sum to 1
    assert AverageMixing.of(J) is None


def test_exact_averaging_holds_no_n_by_n_array(ten_per_node, tmp_path, monkeypatch) -> None:
    """Synchronous SGD on 2,000 nodes: the run's C is ExactAverage, and neither the run nor a sweep of two
    such runs ever makes J's array (toarray raises); a sweep of a synchronous and a DFL run (the block-
    diagonal needs J's matrix) gives each run's records alone."""
    from conftest import assert_same_records

    from bounds.graph.mixing import ExactAverage
    from sim.config import RunConfig
    from sim.runner import run
    from sim.setup import prepare
    from sim.sweep import build_engine, run_sweep

    base = {"dataset": f"npz:{ten_per_node}", "model": "logreg", "partition": "iid", "steps": 4, "eta": 0.1,
            "log_every": 2, "eval_samples": 50}  # fmt: skip
    large = RunConfig(**base, nodes=2000, algorithm="sync", out=str(tmp_path / "large"))
    assert prepare(large).C == ExactAverage(2000)

    def no_array(self) -> None:
        raise AssertionError(f"J of {self.n} nodes made into an array")

    with monkeypatch.context() as patch:
        patch.setattr(ExactAverage, "toarray", no_array)
        run(large)
        sweep = [RunConfig(**{**base, "seed": s}, nodes=2000, algorithm="sync", out=str(tmp_path / f"s{s}"))
                 for s in (0, 1)]  # fmt: skip
        engine, _ = build_engine(sweep)
        assert engine._block(engine.lanes) == AverageMixing((2000, 2000))
    mixed = [RunConfig(**base, nodes=20, algorithm=a, topology="ring", out=str(tmp_path / f"mixed-{a}"))
             for a in ("sync", "dfl")]  # fmt: skip
    run_sweep(mixed)
    for c in mixed:
        alone = RunConfig(**{**base, "nodes": 20, "algorithm": c.algorithm, "topology": "ring"},
                          out=str(tmp_path / f"alone-{c.algorithm}"))  # fmt: skip
        run(alone)
        assert_same_records(tmp_path / f"mixed-{c.algorithm}", tmp_path / f"alone-{c.algorithm}")


@pytest.mark.parametrize("n", [0, -3, 2.5, True, "4"])
def test_exact_average_refuses_a_bad_size(n: object) -> None:
    from bounds.graph.mixing import ExactAverage

    with pytest.raises(InputError, match="n = "):
        ExactAverage(n)


def test_exact_average_as_a_matrix() -> None:
    from bounds.graph.mixing import ExactAverage, as_matrix

    J = ExactAverage(4)
    assert J.shape == (4, 4) and np.array_equal(as_dense(J), np.full((4, 4), 0.25))
    M = sp.eye(3, format="csr")
    assert np.array_equal(as_matrix(J), as_dense(J)) and as_matrix(M) is M  # any other matrix unchanged
    assert mixing_form(choose_mixing(J, "cpu")) == "average"
