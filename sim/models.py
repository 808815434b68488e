"""Models: the paper's two CNNs (Appendix C, Table II), logistic regression and least squares.

MNIST CNN: conv 1->16 (3x3, padding 1), ReLU, maxpool 2, conv 16->32 (3x3, padding 1), ReLU,
maxpool 2, dense 32*7*7 -> 10. Padding 1 is what makes the table's 32x7x7 dense input.
CIFAR-10 CNN: conv 3->64 (5x5), ReLU, maxpool 3 (stride 2), conv 64->64 (5x5), ReLU, maxpool 3
(stride 2), dense 64*4*4 -> 384, ReLU, 384 -> 192, ReLU, 192 -> 10. No padding and pooling
stride 2 are what make the table's 64x4x4 (32 -> 28 -> 13 -> 9 -> 4); the paper does not say.
Logistic regression is one linear layer with bias (cross-entropy); least squares is one
linear layer regressing the one-hot label with loss 0.5 ||W x + b - e_y||^2 (mean over the batch),
whose smoothness constant is exactly the top eigenvalue of E[(x,1)(x,1)^T].
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from bounds import InputError
from sim.config import MODELS

__all__ = [
    "BMM_DEVICES",
    "CHANNELS_LAST_DEVICES",
    "MODELS",
    "STACKED_FORMS",
    "CifarCNN",
    "LeastSquares",
    "LogReg",
    "MnistCNN",
    "channels_last_default",
    "check_stacked_form",
    "make_model",
    "stacked_form_default",
]


def _pooled_relu(h: torch.Tensor, kernel: int, stride: int | None = None) -> torch.Tensor:
    """max_pool2d(relu(h)) of Appendix C's layers, computed as relu(max_pool2d(h)): ReLU is monotone, so it
    commutes with a maximum, exactly (the same floats), and its gradient too (a window whose maximum is
    <= 0 passes no gradient either way; otherwise both pass it to the same element, ties broken alike).
    The ReLU and its backward then touch a quarter of the elements (MNIST CNN: 4 MB instead of 16 MB per
    step of 10 nodes x 32). Stacked MNIST step on 2 cores (2026-11-27, three interleaved pairs in one
    process): 49-54 ms against 64-69 ms, outputs and gradients bit-identical (tested)."""
    return F.relu(F.max_pool2d(h, kernel, stride))


def _stacked_linear(h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """N nodes' dense layers in one batched matmul: h (N, B, in), weight (N, out, in)."""
    return torch.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))


CHANNELS_LAST_DEVICES = frozenset({"cpu"})
"""Device types on which the stacked CNNs run channels-last (NHWC) by default (:func:`channels_last_default`).
On the CPU oneDNN's grouped convolutions and above all its max-pooling are faster in that layout. The
stacked MNIST CNN step, forward + backward, 10 nodes x 32 samples, on 2 cores (2026-11-26, torch 2.13),
in eight paired measurements (both layouts in one process): channels-last 45-70 ms, NCHW 60-90 ms,
ratio 0.66-1.01 (median 0.83; this machine's timings vary by 10-30% from run to run); 20 nodes
106-140 against 118-166 ms; CIFAR-10 CNN, 10 nodes, 417-422 against 459-509 ms; a max-pool of
(32, 160, 28, 28) alone 1.7 ms against 16 ms. Per-sample gradients (B = 1, 256 nodes) took
1.03-1.27x the NCHW time channels-last, so they stay NCHW. Measured on one x86 machine only (other CPUs
may gain less). On CUDA the stacked CNNs take the bmm form (:data:`BMM_DEVICES`; channels-last grouped
convolutions were the slowest form there), and the one-model passes stay NCHW. The layout changes only the
order of float sums (the same gradients up to rounding, tested)."""


def channels_last_default(x: torch.Tensor) -> bool:
    """Whether the stacked CNNs lay out inputs x (N, B, C, H, W) channels-last when the caller does not
    choose: on the devices of CHANNELS_LAST_DEVICES, for mini-batches of more than one sample."""
    return x.device.type in CHANNELS_LAST_DEVICES and x.shape[1] > 1


STACKED_FORMS = ("nchw", "channels_last", "bmm")
"""How the stacked CNNs compute N nodes' convolutions at once (the same values up to float rounding, tested):
``nchw`` and ``channels_last``: one grouped convolution (groups = N) in that memory layout; ``bmm``: im2col
(a strided copy of ``Tensor.unfold`` windows) and one batched matrix product per layer, node by node in
the batch (:func:`_bmm_conv`)."""

BMM_DEVICES = frozenset({"cuda"})
"""Device types on which the stacked CNNs take the ``bmm`` form by default (:func:`stacked_form_default`).
On an H100 in float32 (no TF32; 2026-11-27, ``dfl-sim bench``'s ``stacked_forms``, all in one run), the
stacked step of 630 MNIST nodes x 32 took 22.3 ms in the bmm form against 49.1 ms as NCHW grouped
convolutions (2.5 TFLOP/s; channels-last 53.3, with cudnn.benchmark 47.1), as fast as cuDNN in TF32 (21.5,
which rounds to 10 mantissa bits); 150 CIFAR-10 nodes 23.0 ms against 44.7 (TF32 23.6). Its gradients
differ from the grouped convolutions' by 1.4e-5 (MNIST) and 1.3e-4 (CIFAR-10) relative there, float32
rounding and near ties in max-pool windows (tests/test_cuda.py checks it against float64). cuDNN's grouped
convolutions with many groups of few channels stay far below the card's float32 rate; a batched matrix
product of N (B * H_out * W_out, C_in * k * k) by (C_in * k * k, C_out) matrices is a kernel cuBLAS is
built for. On 2 CPU cores the bmm form is 2-3x slower than oneDNN's grouped convolutions (2026-11-27: MNIST
10 x 32, 100 ms against 30; CIFAR-10 467 against 217), so the CPU keeps those."""


def check_stacked_form(form: str | None) -> None:
    """InputError naming ``form`` unless it is one of STACKED_FORMS or None (the device's default)."""
    if form is not None and form not in STACKED_FORMS:
        raise InputError(f"stacked form {form!r} (expected one of: {', '.join(STACKED_FORMS)})")


def stacked_form_default(x: torch.Tensor) -> str:
    """The form of :data:`STACKED_FORMS` the stacked CNNs take for inputs x (N, B, C, H, W) when the caller
    does not choose: ``bmm`` on the devices of BMM_DEVICES, else ``channels_last`` where
    :func:`channels_last_default` says so, else ``nchw``."""
    if x.device.type in BMM_DEVICES:
        return "bmm"
    return "channels_last" if channels_last_default(x) else "nchw"


class _GroupedConvs:
    """The ``nchw`` / ``channels_last`` forms: the nodes' activations as (B, N * C, H, W), each layer one
    grouped convolution (groups = N)."""

    def __init__(self, p: dict[str, torch.Tensor], n: int, channels_last: bool) -> None:
        self.p, self.n, self.channels_last = p, n, channels_last

    def enter(self, x: torch.Tensor) -> torch.Tensor:
        """(N, B, C, H, W) -> (B, N * C, H, W), channels-last in memory if the form says so (the
        convolutions, ReLUs and poolings then keep it)."""
        n, b = x.shape[:2]
        h = x.transpose(0, 1).reshape(b, n * x.shape[2], *x.shape[3:])
        # the stacked forms never run under a torch.func transform, so no test for one here (a test that
        # torch.compile cannot trace: a graph break)
        return h.contiguous(memory_format=torch.channels_last) if self.channels_last else h

    def conv(self, h: torch.Tensor, layer: str, padding: int = 0) -> torch.Tensor:
        """N nodes' convolutions in one call: weight (N, C_out, C_in, k, k)."""
        weight, bias = self.p[f"{layer}.weight"], self.p[f"{layer}.bias"]
        w = weight.reshape(-1, *weight.shape[2:])
        return F.conv2d(h, w, bias.reshape(-1), groups=self.n, padding=padding)

    def leave(self, h: torch.Tensor) -> torch.Tensor:
        """(B, N * C, H, W) -> (N, B, C * H * W) (C, H, W flattened in that order whatever the layout)."""
        return h.reshape(h.shape[0], self.n, -1).transpose(0, 1)


class _BatchedMatmulConvs:
    """The ``bmm`` form: the nodes' activations as (N * B, C, H, W), node by node, each layer im2col and
    one batched matrix product (:func:`_bmm_conv`)."""

    def __init__(self, p: dict[str, torch.Tensor], n: int) -> None:
        self.p, self.n = p, n

    def enter(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])

    def conv(self, h: torch.Tensor, layer: str, padding: int = 0) -> torch.Tensor:
        return _bmm_conv(h, self.p[f"{layer}.weight"], self.p[f"{layer}.bias"], self.n, padding)

    def leave(self, h: torch.Tensor) -> torch.Tensor:
        """(N * B, C, H, W) -> (N, B, C * H * W) (C, H, W in that order: a copy from channels-last)."""
        return h.reshape(self.n, h.shape[0] // self.n, -1)


def _bmm_conv(
    h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, n: int, padding: int = 0
) -> torch.Tensor:
    """N nodes' convolutions (stride 1) as one batched matrix product: h (N * B, C_in, H, W), node i's B
    samples at rows i * B, ..., weight (N, C_out, C_in, k, k), bias (N, C_out). Node i's im2col matrix
    (B * H_out * W_out, C_in * k * k) times its weight (C_in * k * k, C_out) gives its outputs with the
    channels last, returned as the (N * B, C_out, H_out, W_out) view of them (channels-last in memory,
    which the poolings keep). The im2col matrices are one strided copy of sliding-window views
    (``Tensor.unfold``), not ``F.unfold``, whose CUDA kernel loops over the N * B samples (2026-11-26:
    2-5x slower than the grouped convolutions on an H100 for that reason)."""
    nb, c_in = h.shape[:2]
    c_out, k = weight.shape[1], weight.shape[-1]
    if padding:
        h = F.pad(h, (padding,) * 4)
    windows = h.unfold(2, k, 1).unfold(3, k, 1)  # (N * B, C_in, H_out, W_out, k, k), a view
    out_rows, out_cols = windows.shape[2:4]
    patches = windows.permute(0, 2, 3, 1, 4, 5).reshape(n, -1, c_in * k * k)  # (C_in, k, k) as the weight
    out = torch.baddbmm(bias.unsqueeze(1), patches, weight.reshape(n, c_out, -1).transpose(1, 2))
    return out.view(nb, out_rows, out_cols, c_out).permute(0, 3, 1, 2)


def _stacked_convs(
    p: dict[str, torch.Tensor], x: torch.Tensor, form: str | None
) -> _GroupedConvs | _BatchedMatmulConvs:
    """The convolutions of ``form`` (None: :func:`stacked_form_default`) for N nodes' parameters p and
    inputs x (N, B, C, H, W)."""
    check_stacked_form(form)
    form = stacked_form_default(x) if form is None else form
    if form == "bmm":
        return _BatchedMatmulConvs(p, x.shape[0])
    return _GroupedConvs(p, x.shape[0], form == "channels_last")


def _as_channels_last(h: torch.Tensor) -> torch.Tensor:
    """h (B, C, H, W) channels-last in memory; inside torch.func transforms (vmap, grad), where memory
    formats cannot be set, and for tensors that are not 4-d, h as it is (the same values either way)."""
    if h.dim() != 4 or torch._C._functorch.is_functorch_wrapped_tensor(h):
        return h
    return h.contiguous(memory_format=torch.channels_last)


def _laid_out(h: torch.Tensor, channels_last: bool | None) -> torch.Tensor:
    """One model's activations h (B, C, H, W), channels-last in memory if ``channels_last`` (None: for
    inference on the devices of CHANNELS_LAST_DEVICES; with gradients NCHW, as the MNIST CNN's forward +
    backward was no faster channels-last on 2 cores and its Hessian-vector products 15% slower)."""
    if channels_last is None:
        channels_last = h.device.type in CHANNELS_LAST_DEVICES and not torch.is_grad_enabled()
    return _as_channels_last(h) if channels_last else h


class MnistCNN(nn.Module):
    """Appendix C, left column. ``channels_last``: the memory layout of :meth:`forward`'s activations (None:
    channels-last for inference on the devices of CHANNELS_LAST_DEVICES: a run's logged metrics on 500
    MNIST samples, five forward passes and one gradient, took 230-261 ms against 327-340 ms in NCHW on 2
    cores in three measurements, 2026-11-26; the first convolution's output is laid out, as a one-channel
    input is the same in both)."""

    def __init__(self, num_classes: int = 10, channels_last: bool | None = None) -> None:
        super().__init__()
        self.channels_last = channels_last
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 7 * 7, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _pooled_relu(_laid_out(self.conv1(x), self.channels_last), 2)
        x = _pooled_relu(self.conv2(x), 2)
        return self.fc(x.flatten(1))

    @staticmethod
    def forward_stacked(p: dict[str, torch.Tensor], x: torch.Tensor, form: str | None = None) -> torch.Tensor:
        """All N nodes at once: p[name] is (N, *shape), x (N, B, 1, 28, 28) -> logits (N, B, classes);
        ``form``: how the convolutions are computed, one of STACKED_FORMS (None:
        :func:`stacked_form_default`)."""
        convs = _stacked_convs(p, x, form)
        h = _pooled_relu(convs.conv(convs.enter(x), "conv1", padding=1), 2)
        h = _pooled_relu(convs.conv(h, "conv2", padding=1), 2)
        return _stacked_linear(convs.leave(h), p["fc.weight"], p["fc.bias"])


class CifarCNN(nn.Module):
    """Appendix C, right column (``channels_last`` as in :class:`MnistCNN`)."""

    def __init__(self, num_classes: int = 10, channels_last: bool | None = None) -> None:
        super().__init__()
        self.channels_last = channels_last
        self.conv1 = nn.Conv2d(3, 64, 5)
        self.conv2 = nn.Conv2d(64, 64, 5)
        self.fc1 = nn.Linear(64 * 4 * 4, 384)
        self.fc2 = nn.Linear(384, 192)
        self.fc3 = nn.Linear(192, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _pooled_relu(self.conv1(_laid_out(x, self.channels_last)), 3, 2)
        x = _pooled_relu(self.conv2(x), 3, 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc3(F.relu(self.fc2(x)))

    @staticmethod
    def forward_stacked(p: dict[str, torch.Tensor], x: torch.Tensor, form: str | None = None) -> torch.Tensor:
        """All N nodes at once: x (N, B, 3, 32, 32) -> logits (N, B, classes) (``form`` as in
        :meth:`MnistCNN.forward_stacked`)."""
        convs = _stacked_convs(p, x, form)
        h = _pooled_relu(convs.conv(convs.enter(x), "conv1"), 3, 2)
        h = _pooled_relu(convs.conv(h, "conv2"), 3, 2)
        h = F.relu(_stacked_linear(convs.leave(h), p["fc1.weight"], p["fc1.bias"]))
        h = F.relu(_stacked_linear(h, p["fc2.weight"], p["fc2.bias"]))
        return _stacked_linear(h, p["fc3.weight"], p["fc3.bias"])


class LogReg(nn.Module):
    """Multinomial logistic regression: one linear layer with bias."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1))

    @staticmethod
    def forward_stacked(p: dict[str, torch.Tensor], x: torch.Tensor, form: str | None = None) -> torch.Tensor:
        """All N nodes at once: x (N, B, ...) -> (N, B, classes) (no convolution: ``form``, the stacked CNNs'
        option, changes nothing)."""
        return _stacked_linear(x.flatten(2), p["linear.weight"], p["linear.bias"])


class LeastSquares(LogReg):
    """Linear regression of the one-hot label (same layer as LogReg, squared loss)."""


def make_model(name: str, input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """``cnn`` (the paper's CNN for the input shape), ``logreg`` or ``lstsq``."""
    if name == "cnn":
        if input_shape == (1, 28, 28):
            return MnistCNN(num_classes)
        if input_shape == (3, 32, 32):
            return CifarCNN(num_classes)
        raise InputError(
            f"model 'cnn' has no paper architecture for inputs {input_shape} "
            "(expected (1, 28, 28) MNIST or (3, 32, 32) CIFAR-10; use logreg or lstsq)"
        )
    if name in ("logreg", "lstsq"):
        cls = LogReg if name == "logreg" else LeastSquares
        return cls(math.prod(input_shape), num_classes)
    raise InputError(f"unknown model {name!r} (expected one of: {', '.join(MODELS)})")


def loss_fn(
    model: nn.Module,
    logits: torch.Tensor,
    y: torch.Tensor,
    weight: torch.Tensor | None = None,
    reduce: bool = True,
) -> torch.Tensor:
    """Mean loss of a batch (weighted mean if ``weight`` is given, e.g. a padding mask).

    Cross-entropy, or 0.5 ||output - one_hot(y)||^2 for least squares; ``reduce=False`` gives
    the per-sample losses.
    """
    if isinstance(model, LeastSquares):
        target = torch.zeros_like(logits).scatter(-1, y.unsqueeze(-1), 1.0)  # one-hot, vmap-safe
        per_sample = 0.5 * ((logits - target) ** 2).sum(-1)
    else:
        per_sample = F.cross_entropy(logits, y, reduction="none")
    if not reduce:
        return per_sample
    if weight is None:
        return per_sample.mean()
    return (per_sample * weight).sum() / weight.sum()
