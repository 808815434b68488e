"""``dfl-sim bench``: tensors on the requested device, a synchronising timer, refused devices, no warnings."""

from __future__ import annotations

import dataclasses
import functools
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode

import sim.bench as bench
from sim.cli import main
from sim.engine import Stack
from sim.gossip import LocalMixing

TINY = bench._Sizes(
    nodes=2, batch=2, repeats=1, scaling_nodes=(3,), gossip_nodes=(4, 6), dense_gossip_up_to=4, matmul=32,
    sweep_runs=2, sweep_steps=2, form_nodes=(2, 1),
)  # fmt: skip
BAD_DEVICES = ["nonsense", "cuda:99", "meta", ""]
FACTORIES = {
    torch.randn,
    torch.rand,
    torch.randint,
    torch.ones,
    torch.zeros,
    torch.empty,
    torch.full,
    torch.tensor,
    torch.as_tensor,
    torch.sparse_csr_tensor,
}
SIM = Path(bench.__file__).parent


def _tensors(obj: Any) -> list[torch.Tensor]:
    """Every tensor reachable from what a timed closure captured (tensors, modules, optimizers, lists, the
    CSR mixing operator)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, LocalMixing):
        return [obj.C]
    if isinstance(obj, nn.Module):
        return [*obj.parameters(), *obj.buffers()]
    if isinstance(obj, Stack):
        return _tensors(obj.module)
    if isinstance(obj, torch.optim.Optimizer):
        return [p for group in obj.param_groups for p in group["params"]]
    if isinstance(obj, list | tuple):
        return [t for item in obj for t in _tensors(item)]
    return []


def _captured(fn: Any) -> list[Any]:
    """What a timed callable uses: a closure's cells and defaults, a partial's function and arguments, a bound
    method's object."""
    if isinstance(fn, functools.partial):
        return [*_captured(fn.func), *fn.args, *fn.keywords.values()]
    cells = [cell.cell_contents for cell in getattr(fn, "__closure__", None) or ()]
    owner = [fn.__self__] if hasattr(fn, "__self__") else []
    return cells + list(getattr(fn, "__defaults__", None) or ()) + owner


class _FactoryDevices(TorchFunctionMode):
    """Records the ``device=`` of every tensor factory called from sim/ (None when not given)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int, Any]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        caller = sys._getframe(1)
        if func in FACTORIES and Path(caller.f_code.co_filename).parent == SIM:
            self.calls.append((Path(caller.f_code.co_filename).name, caller.f_lineno, kwargs.get("device")))
        return func(*args, **kwargs)


def test_bench_puts_every_tensor_on_the_requested_device(monkeypatch: pytest.MonkeyPatch) -> None:
    timed: list[torch.Tensor] = []
    devices: list[torch.device] = []

    def fake_time(fn, repeats: int, dev: torch.device) -> float:
        timed.extend(_tensors(_captured(fn)))
        devices.append(dev)
        fn()
        return 1e-3

    monkeypatch.setattr(bench, "_sizes", lambda quick: TINY)
    monkeypatch.setattr(bench, "_time", fake_time)
    mode = _FactoryDevices()
    with mode:
        out = bench.run_benchmarks(quick=True, device="cpu")
    cpu = torch.device("cpu")
    assert out["device"] == "cpu"
    assert devices and all(d == cpu for d in devices)
    # Every tensor the timed closures use (X, batches, C dense and sparse, models) is on the device ...
    assert len(timed) > 20
    assert {t.device for t in timed} == {cpu}
    assert any(t.layout == torch.sparse_csr for t in timed)
    # ... and every tensor the bench creates is created there, explicitly (not by the CPU default).
    assert any(name == "bench.py" for name, _, _ in mode.calls)
    missing = [(name, line) for name, line, dev in mode.calls if dev is None or torch.device(dev) != cpu]
    assert not missing, f"tensors created without device='cpu' at {missing}"


def test_gossip_figures_and_headline_ratios(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "_sizes", lambda quick: TINY)
    torch.manual_seed(7)  # the caller's random stream: the benchmark reseeded it with 0
    stream = torch.get_rng_state()
    out = bench.run_benchmarks(quick=True, device="cpu")
    assert torch.equal(torch.get_rng_state(), stream)
    assert set(out) >= {"N2_B2", "N3_B2", "timer"}
    assert "step_compiled_over_eager" not in out  # only the full bench compiles
    gossip = out[f"gossip_step_ms_d{20490}"]
    assert set(gossip) == {"4", "6"}
    assert set(gossip["4"]) == {"dense_ms", "sparse_ms", "diagonal_ms", "copy_ms", "chosen"}
    assert set(gossip["6"]) == {"sparse_ms", "diagonal_ms", "copy_ms", "chosen"}  # above dense_gossip_up_to
    assert gossip["6"]["chosen"] == "dense"  # 6 nodes: at most DENSE_GOSSIP_NODES_CPU
    torus = out[f"gossip_torus_step_ms_d{20490}"]
    assert set(torus) == {"6"}  # at the largest N only
    for name, row in (("ring", gossip["6"]), ("torus", torus["6"])):
        fastest = min(("sparse", "diagonal"), key=lambda form, row=row: row[f"{form}_ms"])
        ratio = row[f"{fastest}_ms"] / row["copy_ms"]
        assert out[f"gossip_{name}_6_over_copy"] == pytest.approx(ratio, rel=0.01, abs=0.01)
        assert out[f"gossip_{name}_6_method"] == fastest
        assert out[f"gossip_{name}_6_sparse_over_copy"] == pytest.approx(
            row["sparse_ms"] / row["copy_ms"], rel=0.01, abs=0.01
        )
        assert out[f"gossip_{name}_6_chosen"] == "dense"  # dense is not timed above 4 rows here
        assert out[f"gossip_{name}_6_chosen_over_copy"] is None
    chosen = bench._gossip_headline(
        "g", {"copy_ms": 2.0, "sparse_ms": 3.0, "diagonal_ms": 5.0, "chosen": "diagonal"}
    )
    assert chosen == {"g_over_copy": 1.5, "g_method": "sparse", "g_chosen": "diagonal",
                      "g_chosen_over_copy": 2.5, "g_sparse_over_copy": 1.5}  # fmt: skip
    assert all(v >= 0 for row in gossip.values() for v in row.values() if not isinstance(v, str))
    row = out["N2_B2"]
    assert out["step_over_big_batch"] == row["step_time_over_single_big_batch"]
    forms, big = row["step_ms_by_form"], row["big_batch_ms_by_layout"]
    assert set(forms) == {"nchw", "channels_last", "bmm"} and row["default_form"] == "channels_last"
    assert set(big) == {"nchw", "channels_last"}
    for form in ("channels_last", "bmm"):
        ratio = out[f"step_{form}_over_nchw"]
        assert ratio == pytest.approx(forms[form] / forms["nchw"], rel=0.01, abs=0.01)
    assert out["step_fraction_of_peak"] > 0 and out["matmul_32_gflop_per_s"] > 0
    sweep = out["sweep"]
    assert sweep["runs"] == 2 and sweep["steps_per_run"] == 2 and sweep["repeats"] == 2
    assert len(sweep["sweep_s"]) == len(sweep["sequential_s"]) == 2
    ratio = sum(sweep["sweep_s"]) / sum(sweep["sequential_s"])
    assert out["sweep_over_sequential"] == pytest.approx(ratio, rel=0.01)
    by_repeat = [b / a for a, b in zip(sweep["sequential_s"], sweep["sweep_s"], strict=True)]
    assert sweep["sweep_over_sequential_by_repeat"] == pytest.approx(by_repeat, rel=0.01)


def test_sweep_benchmark_alternates_the_modes_ab_ba(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Sequential (A) and sweep (B) timed in the order AB BA, each into fresh folders; the ratio is of the
    totals (fake runs of fixed durations stand in for the training)."""
    import sim.runner
    import sim.sweep

    calls: list[str] = []
    clock = iter(range(0, 1000, 1))
    monkeypatch.setattr(bench.time, "perf_counter", lambda: float(next(clock)))
    monkeypatch.setattr(sim.runner, "run", lambda c: calls.append(Path(c.out).parent.name))
    monkeypatch.setattr(sim.sweep, "run_sweep", lambda cs: calls.append(Path(cs[0].out).parent.name))
    got = bench.sweep_benchmark(3, 2, torch.device("cpu"), tmp_path, repeats=2)
    assert calls == ["sequential-0"] * 3 + ["sweep-0", "sweep-1"] + ["sequential-1"] * 3
    assert got["sequential_s"] == [1.0, 1.0] and got["sweep_s"] == [1.0, 1.0]  # one tick per timed block
    assert got["sweep_over_sequential"] == 1.0 and got["sweep_over_sequential_by_repeat"] == [1.0, 1.0]


def test_timer_synchronises_a_cuda_device_before_and_after_the_repeats(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[str] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: events.append(f"sync {device}"))
    bench._time(lambda: events.append("fn"), 3, torch.device("cuda", 0))
    assert events == ["fn", "sync cuda:0", "fn", "fn", "fn", "sync cuda:0"]
    events.clear()
    bench._time(lambda: events.append("fn"), 2, torch.device("cpu"))
    assert events == ["fn", "fn", "fn"]


@pytest.mark.parametrize("device", BAD_DEVICES)
def test_unusable_device_is_refused_naming_it(device: str) -> None:
    with pytest.raises(ValueError, match="expected") as info:
        bench.run_benchmarks(quick=True, device=device)  # refused before anything is measured
    message = str(info.value)
    assert repr(device) in message
    assert "\n" not in message


def test_cpu_devices_are_accepted() -> None:
    assert bench.resolve_device("cpu") == torch.device("cpu")
    assert bench.resolve_device(torch.device("cpu")) == torch.device("cpu")


def test_cli_refuses_a_bad_device_with_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--quick", "--device", "nonsense"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("dfl-sim: error: device 'nonsense'")
    assert "expected" in err


def test_cli_bad_device_has_no_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sim", "bench", "--device", "nonsense"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "dfl-sim: error: device 'nonsense' is not a torch device (expected cpu, cuda or cuda:INDEX)"
    ]


def test_sparse_gossip_prints_no_torch_warning() -> None:
    """In a fresh process (torch warns once per process) with every warning an error."""
    code = (
        "import torch\n"
        "from bounds import mixing_matrix\n"
        "from bounds.graph.topologies import ring\n"
        "from sim.gossip import sparse_mixing\n"
        "from sim.bench import gossip_benchmark\n"
        "S = sparse_mixing(mixing_matrix(ring(12)), device='cpu')\n"
        "assert S.layout == torch.sparse_csr and (S @ torch.ones(12, 3)).shape == (12, 3)\n"
        "print(gossip_benchmark(8, [4, 6], 1, torch.device('cpu'), dense_up_to=4))\n"
    )
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "copy_ms" in done.stdout


def test_step_flops_are_the_cnns_hand_counted_flops() -> None:
    """MNIST CNN, per sample: forward conv1 2*28*28*16*9, conv2 2*14*14*32*16*9, dense 2*1568*10; the
    backward computes the weight gradients of all three and the input gradients of conv2 and the dense
    layer (not of conv1, whose input is the data)."""
    from sim.models import MnistCNN

    c1, c2, fc = 2 * 28 * 28 * 16 * 9, 2 * 14 * 14 * 32 * 16 * 9, 2 * 1568 * 10
    per_sample = (c1 + c2 + fc) + (c1 + 2 * c2 + 2 * fc)
    x, y = torch.randn(3, 4, 1, 28, 28), torch.randint(0, 10, (3, 4))
    assert bench.step_flops(MnistCNN(), x, y) == 12 * per_sample


def test_stacked_forms_time_every_form_and_agree_on_the_gradients() -> None:
    torch.manual_seed(7)  # the caller's random stream: the benchmark reseeded it with 0 (a probe's finding)
    stream = torch.get_rng_state()
    got = bench.stacked_forms_benchmark((3, 2), 4, 1, torch.device("cpu"))
    assert torch.equal(torch.get_rng_state(), stream)
    assert set(got) == {"mnist_N3_B4", "cifar10_N2_B4"}
    forms = ("nchw", "channels_last", "bmm")
    for rows in got.values():
        assert set(rows) == {*forms, "fastest"}  # cuDNN's timed algorithms and TF32: on CUDA only
        assert rows["fastest"] in forms
        assert rows["nchw"]["relative_difference"] == 0.0  # the reference
        for form in forms[1:]:  # the same gradients: reordered sums, and near ties in max-pool windows that
            assert 0 <= rows[form]["relative_difference"] < 1e-2  # move a node's gradient (5e-3 seen)
        assert all(rows[k]["ms"] > 0 and rows[k]["node_steps_per_s"] > 0 for k in forms)


def test_the_compiled_step_gives_the_eager_gradients_and_a_failing_variant_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sim.models import LogReg

    torch.manual_seed(0)
    model = LogReg(784, 10)
    X = bench.Stack(model).flatten(model).repeat(3, 1) + 0.01 * torch.randn(3, 7850)
    x, y = torch.randn(3, 4, 1, 28, 28), torch.randint(0, 10, (3, 4))
    cpu = torch.device("cpu")
    out = bench.compiled_step_benchmark(model, X, x, y, 2, cpu)
    if "InvalidCxxCompiler" in out["compiled"].get("error", ""):
        pytest.skip("inductor has no C++ compiler on this machine (the eager-backend test still traces)")
    assert set(out) == {"eager_ms", "compiled"}  # no CUDA graph on the CPU
    assert "error" not in out["compiled"], out["compiled"]
    assert len(out["eager_ms"]) == 2  # before and after the compiled step (A B B A)
    assert out["compiled"]["relative_difference"] < 1e-6
    assert out["compiled"]["ms"] > 0 and out["compiled"]["compile_s"] >= 0
    ratio = out["compiled"]["ms"] / (sum(out["eager_ms"]) / 2)
    assert out["compiled"]["over_eager"] == pytest.approx(ratio, rel=0.02, abs=2e-3)  # both rounded

    def no_compiler(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no C++ compiler found\nsecond line")

    monkeypatch.setattr(torch, "compile", no_compiler)
    failed = bench.compiled_step_benchmark(model, X, x, y, 1, cpu)
    assert failed["compiled"] == {"error": "RuntimeError: no C++ compiler found"}
    assert len(failed["eager_ms"]) == 1 and failed["eager_ms"][0] > 0


@pytest.mark.parametrize("form", ["nchw", "channels_last", "bmm", None])
def test_the_stacked_cnn_compiles_as_one_graph(form: str | None) -> None:
    """torch.compile with fullgraph (as the bench compiles it) traces the stacked MNIST CNN's losses without
    a graph break, and gives the eager losses (dynamo's eager backend: no C++ compiler needed)."""
    from sim.models import MnistCNN

    torch.manual_seed(0)
    stack = bench.Stack(MnistCNN(), form=form)
    X = stack.flatten(stack.module).repeat(2, 1)
    x, y, w = torch.randn(2, 3, 1, 28, 28), torch.randint(0, 10, (2, 3)), torch.ones(2, 3)
    compiled = torch.compile(stack.stacked_losses, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(X, x, y, w), stack.stacked_losses(X, x, y, w))


def test_the_full_bench_reports_the_compiled_step_at_its_top_level(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, ...]] = []

    def fake(model, X, x, y, repeats, dev):
        seen.append(tuple(X.shape))
        return {
            "eager_ms": [2.0, 2.0],
            "compiled": {"ms": 3.0, "over_eager": 1.5},
            "cuda_graph": {"error": "E"},
        }

    monkeypatch.setattr(bench, "_sizes", lambda quick: dataclasses.replace(TINY, compiled=True))
    monkeypatch.setattr(bench, "compiled_step_benchmark", fake)
    out = bench.run_benchmarks(quick=True, device="cpu")
    assert seen == [(2, 20490)]  # the bench's N nodes of the MNIST CNN
    assert out["compiled_step_N2_B2"]["compiled"]["over_eager"] == 1.5
    assert out["step_compiled_over_eager"] == 1.5
    assert out["step_cuda_graph_over_eager"] is None  # failed: no ratio


def test_bench_takes_threads_and_refuses_bad_counts(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """``dfl-sim bench`` had no --threads (torch's default, every core, whatever their load; a probe):
    --threads T benchmarks with T torch threads, 0 with the free cores, and a count above the usable cores
    or below 0 is refused with one line."""
    import json

    from sim.host import allowed_cpus

    monkeypatch.setattr(bench, "run_benchmarks", lambda *args: {"threads": torch.get_num_threads()})
    kept = torch.get_num_threads()
    try:
        assert main(["bench", "--quick", "--json", "--threads", "1"]) == 0
        assert json.loads(capsys.readouterr().out) == {"threads": 1}
        assert main(["bench", "--quick", "--json", "--threads", "0"]) == 0
        assert 1 <= json.loads(capsys.readouterr().out)["threads"] <= len(allowed_cpus())
    finally:
        torch.set_num_threads(kept)
    for bad in ("-1", str(len(allowed_cpus()) + 1)):
        assert main(["bench", "--quick", "--threads", bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("dfl-sim: error: ") and err.count("\n") == 1 and bad in err, err


def test_bench_says_each_part_and_a_stop_keeps_what_was_measured(monkeypatch, capsys) -> None:
    """The full bench on 2 busy cores ran past 400 s without a word, and its stop (SIGTERM) printed only
    'dfl-sim: interrupted', every number measured lost (a probe)."""
    import json

    monkeypatch.setattr(bench, "_sizes", lambda quick: TINY)

    def stopped(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "gossip_benchmark", stopped)
    assert main(["bench", "--quick", "--json"]) == 130
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0].startswith("dfl-sim bench: the stacked step, N = 2, B = 2: ")
    assert lines[1] == "dfl-sim bench: the stacked step at N = 3"
    assert lines[2].startswith("dfl-sim bench: gossip steps, d = ")
    kept = lines[3].removeprefix("dfl-sim bench: measured before the stop: ")
    assert {"N2_B2", "N3_B2", "step_over_big_batch"} <= json.loads(kept).keys()
    assert lines[4:] == ["dfl-sim: interrupted"]
