"""Models: the paper's two CNNs (Appendix C, Table I), logistic regression and least squares.

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

__all__ = ["MODELS", "CifarCNN", "LeastSquares", "LogReg", "MnistCNN", "make_model"]


class MnistCNN(nn.Module):
    """Appendix C, left column."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 7 * 7, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


class CifarCNN(nn.Module):
    """Appendix C, right column."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 5)
        self.conv2 = nn.Conv2d(64, 64, 5)
        self.fc1 = nn.Linear(64 * 4 * 4, 384)
        self.fc2 = nn.Linear(384, 192)
        self.fc3 = nn.Linear(192, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 3, stride=2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 3, stride=2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc3(F.relu(self.fc2(x)))


class LogReg(nn.Module):
    """Multinomial logistic regression: one linear layer with bias."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1))


class LeastSquares(LogReg):
    """Linear regression of the one-hot label (same layer as LogReg, squared loss)."""


MODELS = ("cnn", "logreg", "lstsq")


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
    model: nn.Module, logits: torch.Tensor, y: torch.Tensor, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean loss of a batch (weighted mean if ``weight`` is given, e.g. a padding mask).

    Cross-entropy, or 0.5 ||output - one_hot(y)||^2 for least squares.
    """
    if isinstance(model, LeastSquares):
        target = torch.zeros_like(logits).scatter(-1, y.unsqueeze(-1), 1.0)  # one-hot, vmap-safe
        per_sample = 0.5 * ((logits - target) ** 2).sum(-1)
    else:
        per_sample = F.cross_entropy(logits, y, reduction="none")
    if weight is None:
        return per_sample.mean()
    return (per_sample * weight).sum() / weight.sum()
