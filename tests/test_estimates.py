"""sim.estimates against closed forms on least squares, and the drift probe against the runner."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bounds._checks import InputError
from sim.engine import Stack
from sim.estimates import gradient_moments, hessian_norm, node_gradient_norm2, probe_drift
from sim.models import LeastSquares
from sim.runner import RunConfig, run


@pytest.fixture
def problem():
    """Least squares on 200 random 5-dimensional inputs, 3 classes, in float64 for exact comparisons."""
    torch.manual_seed(0)
    model = LeastSquares(5, 3).double()
    stack = Stack(model)
    x = torch.randn(200, 5, dtype=torch.float64) * torch.tensor(
        [3.0, 1.0, 1.0, 0.5, 0.2], dtype=torch.float64
    )
    y = torch.randint(0, 3, (200,))
    w = torch.randn(stack.d, dtype=torch.float64)
    xt = torch.cat([x, torch.ones(200, 1, dtype=torch.float64)], 1).numpy()
    W = w[:15].reshape(3, 5).numpy()
    b = w[15:].numpy()
    residual = x.numpy() @ W.T + b - np.eye(3)[y.numpy()]  # 200 x 3
    per_sample = np.concatenate(
        [(residual[:, :, None] * x.numpy()[:, None, :]).reshape(200, -1), residual], axis=1
    )  # gradient w.r.t. (W row-major, b): the Stack's flattening order
    return stack, w, x, y, xt, per_sample


def test_hessian_norm_is_lambda_max_of_the_second_moment(problem) -> None:
    stack, w, x, y, xt, _ = problem
    exact = np.linalg.eigvalsh(xt.T @ xt / len(xt))[-1]  # Hessian = I_3 (x) E[(x,1)(x,1)^T]
    value, history = hessian_norm(stack, w, x, y, iters=200)
    assert value == pytest.approx(exact, rel=1e-6)
    assert history[0] <= value * (1 + 1e-9)  # Rayleigh quotients grow towards the top eigenvalue


def test_gradient_variance_matches_per_sample_gradients(problem) -> None:
    stack, w, x, y, _, per_sample = problem
    moments = gradient_moments(stack, w, x, y, chunk=64)
    exact = ((per_sample - per_sample.mean(0)) ** 2).sum(1).sum() / (len(per_sample) - 1)
    assert moments.variance == pytest.approx(exact, rel=1e-9)
    assert 0 < moments.variance_se < moments.variance
    assert np.allclose(moments.mean.numpy(), per_sample.mean(0))
    assert moments.norm2 == pytest.approx((per_sample.mean(0) ** 2).sum() - exact / 200, rel=1e-9)
    assert moments.batch_variance(32) == pytest.approx(exact / 32)


def test_node_gradient_norm_sums_the_nodes_full_gradients(problem) -> None:
    stack, w, x, y, _, per_sample = problem
    X = torch.stack([w, torch.zeros_like(w)])
    zero_model = np.concatenate(
        [(-np.eye(3)[y.numpy()][:, :, None] * x.numpy()[:, None, :]).reshape(200, -1), -np.eye(3)[y.numpy()]],
        axis=1,
    )
    variances = [((g - g.mean(0)) ** 2).sum() / 199 for g in (per_sample, zero_model)]
    exact = sum(
        (g.mean(0) ** 2).sum() - v / 200 for g, v in zip((per_sample, zero_model), variances, strict=True)
    )
    norm2, node_variances = node_gradient_norm2(stack, X, x, y)
    assert norm2 == pytest.approx(exact, rel=1e-9)
    assert np.allclose(node_variances, variances, rtol=1e-9)


def test_bad_arguments_are_named(problem) -> None:
    stack, w, x, y, *_ = problem
    with pytest.raises(InputError, match="iters = 0"):
        hessian_norm(stack, w, x, y, iters=0)
    with pytest.raises(InputError, match="1 samples"):
        gradient_moments(stack, w, x[:1], y[:1])


def test_probe_follows_the_same_trajectory_as_the_runner(tiny, tmp_path) -> None:
    """The probe's drift at the logged steps equals the runner's consensus column (same seed, same X_t)."""
    config = RunConfig(
        dataset=f"npz:{tiny}",
        model="logreg",
        nodes=4,
        steps=12,
        tau1=2,
        tau2=1,
        eta=0.1,
        batch_size=4,
        partition="iid",
        log_every=3,
        out=str(tmp_path / "run"),
        eval_samples=20,
    )
    run(config)
    import csv

    rows = list(csv.DictReader((tmp_path / "run" / "metrics.csv").open()))
    probe_cfg = RunConfig(**{**config.__dict__, "out": str(tmp_path / "probe")})
    x, y = torch.zeros(3, 8), torch.zeros(3, dtype=torch.long)
    probe = probe_drift(probe_cfg, x, y)
    logged = {int(r["step"]): float(r["consensus"]) for r in rows}
    for step, consensus in logged.items():
        if 0 < step < 12:
            assert probe.drift[step] == pytest.approx(consensus, rel=1e-5, abs=1e-9)
    assert probe.local.tolist() == [True, True, False] * 4
    assert (
        np.isnan(probe.node_grad_norm2[~probe.local]).all()
        and (probe.node_grad_norm2[probe.local] >= 0).all()
    )


def test_probe_can_measure_every_kth_local_step(tiny, tmp_path) -> None:
    config = RunConfig(
        dataset=f"npz:{tiny}",
        model="logreg",
        nodes=3,
        steps=9,
        tau1=2,
        tau2=1,
        eta=0.1,
        batch_size=4,
        partition="iid",
        out=str(tmp_path / "p"),
        eval_samples=20,
    )
    x, y = torch.zeros(5, 8), torch.zeros(5, dtype=torch.long)
    every = probe_drift(config, x, y)
    sparse = probe_drift(RunConfig(**{**config.__dict__, "out": str(tmp_path / "q")}), x, y, grad_every=2)
    measured = ~np.isnan(sparse.node_grad_norm2)
    assert measured.tolist() == [True, False, False, True, False, False, True, False, False]
    assert np.allclose(sparse.node_grad_norm2[measured], every.node_grad_norm2[measured])
    assert sparse.local_grad_sum == pytest.approx(np.mean(every.node_grad_norm2[measured]) * 6)
    with pytest.raises(InputError, match="grad_every = 0"):
        probe_drift(config, x, y, grad_every=0)


def _heterogeneity_config(tiny, tmp_path, partition: str) -> RunConfig:
    return RunConfig(
        dataset=f"npz:{tiny}", model="logreg", nodes=3, steps=6, tau1=2, tau2=1, eta=0.1, batch_size=4,
        partition=partition, out=str(tmp_path / partition), eval_samples=20,
    )  # fmt: skip


def test_heterogeneity_probe_matches_full_data_gradients(tiny, tmp_path) -> None:
    """At the first measured point (u_1 = x0 on every node) the probe's sigma^2 and varsigma^2 against
    the exact values from every sample of every node's part: unbiased estimators, 4,000 samples."""
    from sim.estimates import probe_heterogeneity
    from sim.setup import prepare

    config = _heterogeneity_config(tiny, tmp_path, "shards")
    probe = probe_heterogeneity(config, samples=4000, points=2)
    assert probe.points[0] == 0 and len(probe.points) == 2 and probe.drift[0] == 0.0
    s = prepare(RunConfig(**{**config.__dict__, "out": str(tmp_path / "exact")}))
    full = [gradient_moments(s.stack, s.x0, s.data.x_train[p], s.data.y_train[p]) for p in s.parts]
    means = torch.stack([m.mean.double() for m in full])
    varsigma2 = float(((means - means.mean(0)) ** 2).sum()) / 3
    population = [m.variance * (m.samples - 1) / m.samples for m in full]  # sampling with replacement
    assert probe.varsigma2[0] == pytest.approx(varsigma2, rel=0.05)
    assert probe.sigma2[0] == pytest.approx(np.mean(population) / 4, rel=0.1)
    assert probe.varsigma2_noise[0] < 0.05 * varsigma2 and probe.second_moment > 0


def test_heterogeneity_probe_sees_label_shards_but_not_iid(tiny, tmp_path) -> None:
    from sim.estimates import probe_heterogeneity

    shards = probe_heterogeneity(_heterogeneity_config(tiny, tmp_path, "shards"), samples=500)
    iid = probe_heterogeneity(_heterogeneity_config(tiny, tmp_path, "iid"), samples=500)
    assert shards.varsigma2.max() > 10 * max(iid.varsigma2.max(), iid.varsigma2_noise.max())
    with pytest.raises(InputError, match="samples = 1"):
        probe_heterogeneity(_heterogeneity_config(tiny, tmp_path, "iid"), samples=1)
