"""The vectorised engine against the reference loop and against steps computed by hand."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import torch
from conftest import assert_rows_near

from bounds import InputError, mixing_matrix
from bounds.cdfl.compression import Identity, RandK, TopK
from bounds.graph.topologies import ring
from sim.algorithms import resolve_schedule, step_kinds
from sim.engine import BatchSampler, Stack
from sim.gossip import ChocoGossip, ExactGossip
from sim.models import LeastSquares, LogReg, MnistCNN
from sim.partition import IID, Shards
from sim.reference import reference_run
from sim.trainer import Trainer

N = 4


def problem(model: str = "logreg", seed: int = 0):
    torch.manual_seed(seed)
    x = torch.randn(200, 6, dtype=torch.float64)
    y = torch.randint(0, 3, (200,))
    template = (LogReg(6, 3) if model == "logreg" else LeastSquares(6, 3)).double()
    parts = Shards().split(y.numpy(), N, np.random.default_rng(seed))
    return template, x, y, parts


def engine_history(template, x, y, parts, algorithm, tau1, tau2, T, eta, gossip_kind="exact", batch=8):
    t1, t2, uses_J = resolve_schedule(algorithm, tau1, tau2)
    C = np.full((N, N), 1 / N) if uses_J else mixing_matrix(ring(N))
    Ct = torch.as_tensor(C, dtype=torch.float64)
    gossip = ExactGossip(Ct) if gossip_kind == "exact" else ChocoGossip(Ct, 0.7, TopK(3))
    stack = Stack(template)
    x0 = stack.flatten(template)
    trainer = Trainer(
        stack,
        x0.repeat(N, 1),
        step_kinds(algorithm, t1, t2, T),
        eta,
        gossip,
        BatchSampler(parts, batch, seed=1),
        x,
        y,
        tau=t1 + t2,
    )
    history = [trainer.X.clone()]
    for _ in range(T):
        trainer.step()
        history.append(trainer.X.clone())
    return history, C, x0, step_kinds(algorithm, t1, t2, T)


@pytest.mark.parametrize("algorithm", ["dfl", "csgd", "dsgd", "sync", "local"])
@pytest.mark.parametrize("batch", [8, 0])
def test_engine_matches_reference_loop(algorithm: str, batch: int) -> None:
    template, x, y, parts = problem()
    ours, C, x0, kinds = engine_history(template, x, y, parts, algorithm, 3, 2, 23, 0.1, batch=batch)
    theirs = reference_run(
        copy.deepcopy(template), x0, C, kinds, 0.1, BatchSampler(parts, batch, seed=1), x, y
    )
    for a, b in zip(ours, theirs, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)  # float64: agreement to rounding


def test_cdfl_matches_reference_with_numpy_compressor() -> None:
    template, x, y, parts = problem("lstsq")
    ours, C, x0, kinds = engine_history(template, x, y, parts, "cdfl", 2, 3, 25, 0.05, gossip_kind="choco")
    theirs = reference_run(
        copy.deepcopy(template),
        x0,
        C,
        kinds,
        0.05,
        BatchSampler(parts, 8, seed=1),
        x,
        y,
        gamma=0.7,
        compressor=TopK(3),
    )
    for a, b in zip(ours, theirs, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)


def test_cdfl_with_identity_and_gamma_one_is_dfl() -> None:
    """CHOCO-G with Q = identity and gamma = 1: X_hat = X after each step, so gossip is X <- C X."""
    C = torch.as_tensor(mixing_matrix(ring(N)), dtype=torch.float64)
    X = torch.randn(N, 21, dtype=torch.float64)
    choco = ChocoGossip(C, 1.0, Identity())
    choco.X_hat = X.clone()
    assert torch.allclose(choco.step(X), C @ X)


def test_hand_computed_steps_least_squares() -> None:
    """One-parameter least squares by hand: w <- w - eta (w x - y) x, then gossip with C."""
    x = torch.tensor([[1.0], [2.0], [3.0], [4.0]], dtype=torch.float64)
    y = torch.zeros(4, dtype=torch.long)  # one-hot target e_0 with a single output: target 1
    model = LeastSquares(1, 1).double()
    with torch.no_grad():
        model.linear.weight.fill_(0.0)
        model.linear.bias.fill_(0.0)
    stack = Stack(model)
    parts = [np.array([0]), np.array([1]), np.array([2]), np.array([3])]
    C = torch.full((4, 4), 0.25, dtype=torch.float64)
    trainer = Trainer(
        stack,
        torch.zeros(4, 2, dtype=torch.float64),
        step_kinds("dfl", 1, 1, 2),
        0.1,
        ExactGossip(C),
        BatchSampler(parts, 0, seed=0),
        x,
        y,
        tau=2,
    )
    trainer.step()
    # gradient of 0.5 (w x + b - 1)^2 at 0: (-x, -1); so w = 0.1 x_i, b = 0.1
    expected = torch.tensor([[0.1, 0.1], [0.2, 0.1], [0.3, 0.1], [0.4, 0.1]], dtype=torch.float64)
    assert torch.allclose(trainer.X, expected)
    trainer.step()
    assert torch.allclose(trainer.X, expected.mean(0).expand(4, 2))


def test_seeds_reproduce_exactly() -> None:
    template, x, y, parts = problem()
    a, *_ = engine_history(template, x, y, parts, "dfl", 2, 2, 30, 0.1)
    b, *_ = engine_history(template, x, y, parts, "dfl", 2, 2, 30, 0.1)
    assert all(torch.equal(p, q) for p, q in zip(a, b, strict=True))


def test_paper_cnn_gradients_match_per_node_autograd() -> None:
    torch.manual_seed(0)
    model = MnistCNN()
    stack = Stack(model)
    X = stack.flatten(model).repeat(3, 1) + 0.01 * torch.randn(3, stack.d)
    xb, yb = torch.randn(3, 5, 1, 28, 28), torch.randint(0, 10, (3, 5))
    G, losses = stack.gradients(X, xb, yb, torch.ones(3, 5))
    for i in range(3):
        m = copy.deepcopy(model)
        torch.nn.utils.vector_to_parameters(X[i].clone(), m.parameters())
        loss = torch.nn.functional.cross_entropy(m(xb[i]), yb[i])
        loss.backward()
        g = torch.cat([p.grad.reshape(-1) for p in m.parameters()])
        assert torch.allclose(G[i], g, atol=1e-5) and torch.isclose(losses[i], loss, atol=1e-6)


def test_iid_partition_covers_everything_once() -> None:
    parts = IID().split(np.arange(103) % 10, 7, np.random.default_rng(0))
    assert sorted(np.concatenate(parts).tolist()) == list(range(103))


@pytest.mark.parametrize("form", [None, "nchw", "channels_last", "bmm"])
@pytest.mark.parametrize("name", ["mnist_cnn", "cifar_cnn", "logreg", "lstsq"])
def test_stacked_fast_path_equals_vmap_path(name: str, form: str | None) -> None:
    """Every form of the stacked CNNs (and the device's default) gives the vmap path's gradients."""
    from sim.models import CifarCNN

    torch.manual_seed(1)
    model, shape = {
        "mnist_cnn": (MnistCNN(), (1, 28, 28)),
        "cifar_cnn": (CifarCNN(), (3, 32, 32)),
        "logreg": (LogReg(12, 4), (12,)),
        "lstsq": (LeastSquares(12, 4), (12,)),
    }[name]
    model = model.double()
    stack = Stack(model, form=form)
    X = stack.flatten(model).repeat(3, 1) + 0.05 * torch.randn(3, stack.d, dtype=torch.float64)
    x = torch.randn(3, 4, *shape, dtype=torch.float64)
    y = torch.randint(0, 4, (3, 4))
    w = torch.tensor([[1.0, 1, 1, 1], [1, 1, 0, 0], [1, 0, 1, 0]], dtype=torch.float64)
    fast, fast_losses = stack.gradients(X, x, y, w)
    slow, slow_losses = stack.gradients_vmap(X, x, y, w)
    assert torch.allclose(fast, slow, rtol=1e-10, atol=1e-12)
    assert torch.allclose(fast_losses, slow_losses, rtol=1e-12)


def test_sparse_gossip_equals_dense() -> None:
    from sim.gossip import sparse_mixing

    C = mixing_matrix(ring(300))
    X = torch.randn(300, 50, dtype=torch.float64)
    dense = torch.as_tensor(C.toarray() if hasattr(C, "toarray") else C)
    assert torch.allclose(sparse_mixing(C, torch.float64) @ X, dense @ X, atol=1e-12)


def test_channels_last_default_is_for_cpu_mini_batches() -> None:
    from sim.models import channels_last_default

    assert channels_last_default(torch.zeros(2, 4, 1, 28, 28))
    assert not channels_last_default(torch.zeros(256, 1, 1, 28, 28))  # per-sample gradients stay NCHW
    assert not channels_last_default(torch.zeros(2, 4, 1, 28, 28, device="meta"))


@pytest.mark.parametrize("name", ["mnist_cnn", "cifar_cnn"])
def test_plain_forward_is_the_same_in_both_layouts(name: str) -> None:
    """The one-model forward (evaluation, reference loop, Hessians) laid out channels-last, NCHW or by the
    default gives the same logits and gradients, with and without autograd."""
    from sim.models import CifarCNN

    cls, shape = {"mnist_cnn": (MnistCNN, (1, 28, 28)), "cifar_cnn": (CifarCNN, (3, 32, 32))}[name]
    torch.manual_seed(2)
    models = [cls(channels_last=cl).double() for cl in (None, False, True)]
    for m in models[1:]:
        m.load_state_dict(models[0].state_dict())
    x, y = torch.randn(6, *shape, dtype=torch.float64), torch.randint(0, 10, (6,))
    with torch.no_grad():
        logits = [m(x) for m in models]
    grads = []
    for m in models:
        torch.nn.functional.cross_entropy(m(x), y).backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in m.parameters()]))
    for other in range(1, 3):
        assert torch.allclose(logits[other], logits[0], rtol=1e-12, atol=1e-12)
        assert torch.allclose(grads[other], grads[0], rtol=1e-10, atol=1e-12)


def test_evaluate_does_not_depend_on_its_chunks() -> None:
    """Stack.evaluate in chunks (the CPU default, 512; any size) gives the one-pass loss and accuracy."""
    torch.manual_seed(3)
    model = MnistCNN().double()
    stack = Stack(model)
    w = stack.flatten(model)
    x, y = torch.randn(1030, 1, 28, 28, dtype=torch.float64), torch.randint(0, 10, (1030,))
    whole = stack.evaluate(w, x, y, chunk=len(y))
    for chunk in (None, 7, 512):
        loss, acc = stack.evaluate(w, x, y, chunk=chunk)
        assert loss == pytest.approx(whole[0], rel=1e-12) and acc == whole[1]


def test_channels_last_modules_work_inside_vmap() -> None:
    """torch.func transforms cannot set memory formats: a channels-last module gives the same gradients
    through the generic vmap path, and its inference runs under vmap too."""
    from torch.func import functional_call, vmap

    torch.manual_seed(4)
    model = MnistCNN(channels_last=True).double()
    stack = Stack(model)
    X = stack.flatten(model).repeat(2, 1) + 0.05 * torch.randn(2, stack.d, dtype=torch.float64)
    x, y = torch.randn(2, 3, 1, 28, 28, dtype=torch.float64), torch.randint(0, 10, (2, 3))
    w = torch.ones(2, 3, dtype=torch.float64)
    slow, _ = stack.gradients_vmap(X, x, y, w)
    fast, _ = stack.gradients(X, x, y, w)
    assert torch.allclose(slow, fast, rtol=1e-10, atol=1e-12)
    plain = MnistCNN().double()  # channels-last for inference on the CPU by default
    with torch.no_grad():
        logits = vmap(lambda p, xb: functional_call(plain, p, (xb,)))(stack.unflatten(X), x)
    assert torch.allclose(logits, MnistCNN.forward_stacked(stack.unflatten(X), x), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kernel, stride", [(2, None), (3, 2)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_pooled_relu_is_the_papers_relu_then_pool_bit_for_bit(
    kernel: int, stride: int | None, channels_last: bool
) -> None:
    """The CNNs pool before their ReLU (a quarter of the elements); values and gradients must be exactly
    those of Appendix C's order, ReLU then max-pool, including windows with ties and all-negative ones."""
    from torch.nn import functional as F

    from sim.models import _pooled_relu

    torch.manual_seed(2)
    h = torch.randn(4, 6, 13, 13)
    h[0, 0, :4, :4] = -1.0  # an all-negative window
    h[1, 1, :4, :4] = 0.5  # ties between positive values
    h[2, 2, :4, :4] = 0.0  # ties at zero
    if channels_last:
        h = h.contiguous(memory_format=torch.channels_last)
    g = torch.randn_like(F.max_pool2d(h, kernel, stride))
    results = []
    for f in (lambda t: _pooled_relu(t, kernel, stride), lambda t: F.max_pool2d(F.relu(t), kernel, stride)):
        t = h.clone().requires_grad_(True)
        out = f(t)
        out.backward(g)
        results.append((out.detach(), t.grad))
    assert torch.equal(results[0][0], results[1][0])
    assert torch.equal(results[0][1], results[1][1])
    # the check can fail: ReLU after an average pool is not the same thing
    t = h.clone().requires_grad_(True)
    assert not torch.equal(F.relu(F.avg_pool2d(t, kernel, stride)), results[1][0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_finite_rows_is_isfinite_all(dtype: torch.dtype) -> None:
    """The divergence check's row test from each row's extremes equals torch.isfinite(X).all(dim=1) exactly:
    NaN, +inf, -inf alone and together, anywhere in a row, a row all NaN, one column, huge finite values."""
    from sim.loop import finite_rows

    rng = np.random.default_rng(0)
    for shape in [(40, 30), (7, 1), (3, 5000)]:
        X = torch.as_tensor(rng.normal(size=shape), dtype=dtype)
        for value in (float("nan"), float("inf"), -float("inf")):
            for _ in range(4):
                X[rng.integers(shape[0]), rng.integers(shape[1])] = value
        X[0] = float("nan")
        X[-1] = torch.finfo(dtype).max  # finite however large
        assert torch.equal(finite_rows(X), torch.isfinite(X).all(dim=1))
        assert not finite_rows(X)[0] and finite_rows(X)[-1]


def test_stacked_form_default_is_bmm_on_bmm_devices_and_the_layout_elsewhere(monkeypatch) -> None:
    from sim import models

    assert models.stacked_form_default(torch.zeros(2, 4, 1, 28, 28)) == "channels_last"
    assert models.stacked_form_default(torch.zeros(256, 1, 1, 28, 28)) == "nchw"
    assert models.stacked_form_default(torch.zeros(2, 4, 1, 28, 28, device="meta")) == "nchw"
    assert "cuda" in models.BMM_DEVICES and "cpu" not in models.BMM_DEVICES
    monkeypatch.setattr(models, "BMM_DEVICES", frozenset({"meta"}))
    assert models.stacked_form_default(torch.zeros(2, 4, 1, 28, 28, device="meta")) == "bmm"


def test_an_unknown_stacked_form_is_refused_by_name() -> None:
    from sim.models import MnistCNN

    expected = r"stacked form 'im2col' \(expected one of: nchw, channels_last, bmm\)"
    with pytest.raises(InputError, match=expected):
        Stack(MnistCNN(), form="im2col")
    p = Stack(MnistCNN()).unflatten(torch.zeros(2, Stack(MnistCNN()).d))
    with pytest.raises(InputError, match="stacked form 'NCHW'"):
        MnistCNN.forward_stacked(p, torch.zeros(2, 3, 1, 28, 28), "NCHW")


@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.parametrize("name", ["mnist_cnn", "cifar_cnn"])
def test_bmm_form_equals_grouped_convolutions_at_a_sweep_like_size(name: str, seed: int) -> None:
    """The bmm form equals the grouped convolutions in float64; in float32 both give the float64 gradients
    row by row (:func:`conftest.assert_rows_near`: a near tie in a max-pool window or a ReLU moves a single
    node's gradient, in either form, and which one depends on the machine's order of sums)."""
    from sim.models import CifarCNN

    torch.manual_seed(seed)
    model, shape = {"mnist_cnn": (MnistCNN(), (1, 28, 28)), "cifar_cnn": (CifarCNN(), (3, 32, 32))}[name]
    stack = Stack(model.double())
    n, b = 24, 16
    X = stack.flatten(model).repeat(n, 1) + 0.01 * torch.randn(n, stack.d, dtype=torch.float64)
    x, y = torch.randn(n, b, *shape, dtype=torch.float64), torch.randint(0, 10, (n, b))
    w = torch.ones(n, b, dtype=torch.float64)
    exact, exact_losses = Stack(model, form="bmm").gradients(X, x, y, w)
    reference, _ = Stack(model, form="channels_last").gradients(X, x, y, w)
    assert torch.allclose(exact, reference, rtol=1e-10, atol=1e-12)
    model.float()
    for form in ("bmm", "channels_last"):
        G, losses = Stack(model, form=form).gradients(X.float(), x.float(), y, w.float())
        assert_rows_near(G, exact)
        assert torch.allclose(losses.double(), exact_losses, rtol=1e-5)


@pytest.mark.parametrize("name", ["mnist_cnn", "logreg"])
def test_a_call_cut_by_rows_gives_the_same_gradients(name: str) -> None:
    """Stack.gradients with samples_per_call below the rows x B of a call: the same G and losses, in row
    order (a GPU cuts a single run's large call so; the rows are independent)."""
    torch.manual_seed(4)
    model, shape = (MnistCNN(), (1, 28, 28)) if name == "mnist_cnn" else (LogReg(12, 4), (12,))
    stack = Stack(model.double())
    n, b = 7, 5
    X = stack.flatten(model).repeat(n, 1) + 0.05 * torch.randn(n, stack.d, dtype=torch.float64)
    x, y = torch.randn(n, b, *shape, dtype=torch.float64), torch.randint(0, 4, (n, b))
    w = torch.ones(n, b, dtype=torch.float64)
    whole, whole_losses = stack.gradients(X, x, y, w)
    for per_call in (1, 12, 15, 34, 35):  # 1 row a call (below B too), 2, 3, 6 rows, all 7
        G, losses = stack.gradients(X, x, y, w, samples_per_call=per_call)
        assert torch.allclose(G, whole, rtol=1e-12, atol=1e-14) and torch.allclose(losses, whole_losses)


@pytest.mark.parametrize(
    ("parts", "batch", "fragment"),
    [  # an empty part drew the next node's samples (its offset is theirs); the others failed inside torch
        ([np.arange(3), np.array([], dtype=np.int64), np.arange(3, 6)], 2, "parts[1] is empty"),
        ([np.arange(3)], -1, "batch_size = -1 is out of range"),
        ([np.arange(3)], 2.0, "batch_size = 2.0 is not an integer"),
        ([np.arange(3.0)], 2, "parts[0] holds float64"),
        ([np.array([0, -1])], 2, "parts[0] holds the index -1"),
        ([], 2, "parts is empty"),
    ],
)
def test_batch_sampler_refuses_parts_it_would_draw_wrongly(parts, batch, fragment) -> None:
    with pytest.raises(InputError, match=re.escape(fragment)):
        BatchSampler(parts, batch, seed=0)


def test_consensus_of_equal_models_is_exactly_zero() -> None:
    """About the rounded mean, 10 equal float32 rows of the CNN's d = 20,490 gave 1.1e-10 (a CNN run logged
    1e-13 at step 0, 13 decades below its later values on a log plot); about the first row it is 0, and
    otherwise the same number."""
    import torch

    from sim.evaluation import consensus_distance

    g = torch.Generator().manual_seed(0)
    X = torch.randn(1, 20_490, generator=g).repeat(10, 1)
    assert float(((X - X.mean(0)) ** 2).sum() / 10) > 0 and consensus_distance(X) == 0.0
    Y = torch.randn(10, 300, generator=g, dtype=torch.float64)
    assert consensus_distance(Y) == pytest.approx(float(((Y - Y.mean(0)) ** 2).sum() / 10), rel=1e-12)


def test_reference_run_refuses_a_compressor_without_gamma_or_its_draws() -> None:
    """CHOCO-G's step gamma is needed with a compressor ('None * tensor' deep inside the loop, before), a
    random compressor's generator too (a deterministic one, as in the test above, takes none)."""
    template, x, y, parts = problem("lstsq")
    _, C, x0, kinds = engine_history(template, x, y, parts, "cdfl", 2, 3, 5, 0.05, gossip_kind="choco")
    with pytest.raises(InputError, match="needs gamma"):
        reference_run(template, x0, C, kinds, 0.05, BatchSampler(parts, 8, seed=1), x, y, compressor=TopK(3))
    with pytest.raises(InputError, match="RandK draws at random"):
        reference_run(template, x0, C, kinds, 0.05, BatchSampler(parts, 8, seed=1), x, y, gamma=0.5,
                      compressor=RandK(3))  # fmt: skip
