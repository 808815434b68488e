"""Compression operators of Section V and their ratios delta (Assumption 2), in numpy.

Assumption 2: E_Q ||Q(x) - x||^2 <= (1 - delta) ||x||^2 for all x in R^d.

=================  ===========================================  =======================
operator           Q(x)                                         delta
=================  ===========================================  =======================
``identity``       x                                            1
``rand_k``         x on k coordinates drawn uniformly, 0 else   k / d
``top_k``          x on the k largest |x_i|, 0 else             k / d
``gossip``         x with probability p, else 0                 p
``qsgd``           sign(x) ||x|| / (s c) floor(s |x| / ||x|| + xi),  1 / c,
                   xi ~ U[0, 1]^d (s levels)                    c = 1 + min(d / s^2, sqrt(d) / s)
=================  ===========================================  =======================

Each operator also gives its exact expected error E||Q(x) - x||^2 (by linearity
over coordinates, no sampling), which the tests compare with (1 - delta)||x||^2,
and the bits of one message of a float32 vector of dimension d
(:meth:`Compressor.bits`). What is counted:

* values are float32 (32 bits);
* ``top_k`` sends k values and k indices of ceil(log2 d) bits each;
* ``rand_k`` sends k values and a 32-bit seed from which the receivers redraw
  the same indices;
* ``gossip`` sends the whole vector with probability p and a 1-bit flag always
  (bits() is the expectation, 1 + 32 d p);
* ``qsgd`` sends the norm (32 bits) and, per coordinate, a sign bit and a level
  in {0..s} of ceil(log2(s + 1)) bits (no entropy coding).

The simulator's torch operators are tested against these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bounds._checks import InputError, one_of, real_array, real_number, whole_number

__all__ = ["COMPRESSORS", "QSGD", "Compressor", "Gossip", "Identity", "RandK", "TopK", "make_compressor"]

FLOAT_BITS = 32


def _generator(rng: object, compressor: object) -> np.random.Generator:
    """``rng`` as the random generator a random compressor draws from; InputError for anything else (None
    was an AttributeError from inside the draw)."""
    if isinstance(rng, np.random.Generator | np.random.RandomState):  # (random.Random lacks choice(size=))
        return rng  # type: ignore[return-value]
    raise InputError(
        f"rng = {rng!r} is not a random generator (expected numpy.random.default_rng(seed): "
        f"{type(compressor).__name__} draws at random)"
    )


def _vector(x: object) -> np.ndarray:
    """``x`` as a float64 vector: InputError for strings, NaN, infinities (numpy's ValueError for ['1', 'x'])
    and anything but one non-empty dimension."""
    v = real_array("x", x)
    if v.ndim != 1:
        raise InputError(f"x has shape {v.shape} (expected a non-empty vector)")
    return v


class Compressor:
    """A compression operator Q: R^d -> R^d with ratio delta (Assumption 2)."""

    name = "compressor"
    random = False  # whether Q draws from a random stream (a simulation's compressor generator)

    def delta(self, d: int) -> float:
        """The compression ratio delta for dimension d."""
        raise NotImplementedError

    def bits(self, d: int) -> float:
        """Bits of one compressed message of a float32 vector of dimension d (expected, if random)."""
        raise NotImplementedError

    def __call__(self, x: object, rng: np.random.Generator) -> np.ndarray:
        """One draw of Q(x)."""
        raise NotImplementedError

    def expected_error(self, x: object) -> float:
        """E_Q ||Q(x) - x||^2, computed exactly (no sampling)."""
        raise NotImplementedError

    def check_dimension(self, d: int) -> int:
        """Validate that the operator is defined for dimension d."""
        return whole_number("d", d, low=1)  # (the vector dimension)


@dataclass(frozen=True)
class Identity(Compressor):
    """No compression: Q(x) = x, delta = 1 (plain DFL gossip)."""

    name = "identity"

    def delta(self, d: int) -> float:
        self.check_dimension(d)
        return 1.0

    def bits(self, d: int) -> float:
        return float(FLOAT_BITS * self.check_dimension(d))

    def __call__(self, x: object, rng: np.random.Generator) -> np.ndarray:
        return _vector(x).copy()

    def expected_error(self, x: object) -> float:
        _vector(x)
        return 0.0


@dataclass(frozen=True)
class _Sparsifier(Compressor):
    k: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", whole_number("k", self.k, low=1))  # (and k <= d: check_dimension)

    def check_dimension(self, d: int) -> int:
        d = super().check_dimension(d)
        if self.k > d:
            raise InputError(f"k = {self.k} exceeds the dimension d = {d} (expected 1 <= k <= d)")
        return d

    def delta(self, d: int) -> float:
        return self.k / self.check_dimension(d)


@dataclass(frozen=True)
class RandK(_Sparsifier):
    """rand_k: keep k coordinates chosen uniformly without replacement (unscaled), delta = k / d."""

    name = "rand_k"
    random = True

    def bits(self, d: int) -> float:
        self.check_dimension(d)
        return float(FLOAT_BITS * self.k + FLOAT_BITS)

    def __call__(self, x: object, rng: np.random.Generator) -> np.ndarray:
        v = _vector(x)
        self.check_dimension(v.size)
        out = np.zeros_like(v)
        keep = _generator(rng, self).choice(v.size, size=self.k, replace=False)
        out[keep] = v[keep]
        return out

    def expected_error(self, x: object) -> float:
        v = _vector(x)
        return float((1.0 - self.delta(v.size)) * (v @ v))  # each coordinate dropped w.p. 1 - k/d


@dataclass(frozen=True)
class TopK(_Sparsifier):
    """top_k: keep the k coordinates of largest magnitude (deterministic), delta = k / d."""

    name = "top_k"

    def bits(self, d: int) -> float:
        d = self.check_dimension(d)
        return float(self.k * (FLOAT_BITS + max(1, math.ceil(math.log2(d)))))

    def __call__(self, x: object, rng: np.random.Generator | None = None) -> np.ndarray:
        v = _vector(x)
        self.check_dimension(v.size)
        out = np.zeros_like(v)
        keep = np.argpartition(np.abs(v), v.size - self.k)[v.size - self.k :]
        out[keep] = v[keep]
        return out

    def expected_error(self, x: object) -> float:
        v = _vector(x)
        residual = v - self(v)
        return float(residual @ residual)


@dataclass(frozen=True)
class Gossip(Compressor):
    """Randomized gossip: Q(x) = x with probability p, else 0; delta = p."""

    p: float
    name = "gossip"
    random = True

    def __post_init__(self) -> None:  # True was p = 1; np.float32(0.5) was "out of range"
        p = real_number("p", self.p)
        if not 0.0 < p <= 1.0:
            raise InputError(f"p = {self.p!r} is out of range (expected 0 < p <= 1)")
        object.__setattr__(self, "p", p)

    def delta(self, d: int) -> float:
        self.check_dimension(d)
        return float(self.p)

    def bits(self, d: int) -> float:
        return 1.0 + FLOAT_BITS * self.check_dimension(d) * self.p

    def __call__(self, x: object, rng: np.random.Generator) -> np.ndarray:
        v = _vector(x)
        return v.copy() if _generator(rng, self).random() < self.p else np.zeros_like(v)

    def expected_error(self, x: object) -> float:
        v = _vector(x)
        return float((1.0 - self.p) * (v @ v))


@dataclass(frozen=True)
class QSGD(Compressor):
    """Rescaled random quantization qsgd_s with s levels; delta = 1 / c, c = 1 + min(d / s^2, sqrt(d) / s)."""

    s: int
    name = "qsgd"
    random = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "s", whole_number("s", self.s, low=1))  # (levels; 4.0 was refused)

    def c(self, d: int) -> float:
        """The variance factor c of the unbiased quantizer."""
        d = self.check_dimension(d)
        return 1.0 + min(d / self.s**2, math.sqrt(d) / self.s)

    def delta(self, d: int) -> float:
        return 1.0 / self.c(d)

    def bits(self, d: int) -> float:
        d = self.check_dimension(d)
        return float(FLOAT_BITS + d * (1 + math.ceil(math.log2(self.s + 1))))

    def _levels(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        top = float(np.max(np.abs(v)))  # scaled: ||v|| of entries near 1e200 would square past float64
        norm = top * float(np.linalg.norm(v / top)) if top > 0 else 0.0
        scaled = self.s * np.abs(v) / norm if norm > 0 else np.zeros_like(v)
        low = np.floor(scaled)
        return low, scaled - low, norm

    def __call__(self, x: object, rng: np.random.Generator) -> np.ndarray:
        v = _vector(x)
        low, frac, norm = self._levels(v)
        level = low + (_generator(rng, self).random(v.size) < frac)
        return np.sign(v) * norm / (self.s * self.c(v.size)) * level

    def expected_error(self, x: object) -> float:
        v = _vector(x)
        low, frac, norm = self._levels(v)
        unit = norm / (self.s * self.c(v.size))
        err_low = (np.abs(v) - unit * low) ** 2
        err_high = (np.abs(v) - unit * (low + 1)) ** 2
        return float(np.sum((1 - frac) * err_low + frac * err_high))


COMPRESSORS = ("identity", "rand_k", "top_k", "gossip", "qsgd")


def make_compressor(name: str, parameter: float | None = None) -> Compressor:
    """Build a compressor by name: ``rand_k``/``top_k`` take k, ``gossip`` p, ``qsgd`` s.

    >>> make_compressor("top_k", 10).delta(100)
    0.1
    """
    needs = {"rand_k": "k", "top_k": "k", "gossip": "p", "qsgd": "s"}
    one_of("compressor", name, COMPRESSORS)  # (a list or an array of names is none either)
    if name == "identity":
        if parameter is not None:  # it used to be dropped without a word
            raise InputError(f"compressor 'identity' takes no parameter (got {parameter!r})")
        return Identity()
    if parameter is None:
        raise InputError(f"compressor {name!r} needs its parameter {needs[name]} (expected "
                         f"make_compressor({name!r}, {needs[name]}); the flag: "
                         "--compressor-param)")  # fmt: skip
    if name == "gossip":
        return Gossip(real_number("p", parameter))
    value = real_number(needs[name], parameter, integer=True)  # NaN, inf, strings and booleans named here
    return {"rand_k": RandK, "top_k": TopK, "qsgd": QSGD}[name](int(value))
