"""Assumption 2 for each operator of Section V: exactly where possible, by Monte Carlo for the samplers."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from bounds import InputError
from bounds.cdfl.compression import QSGD, Gossip, Identity, RandK, TopK, make_compressor

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
vectors = st.integers(1, 64).flatmap(lambda d: arrays(np.float64, d, elements=finite))


def operators(d: int) -> list:
    ks = sorted({1, max(1, d // 3), d})
    return [
        Identity(),
        *[RandK(k) for k in ks],
        *[TopK(k) for k in ks],
        Gossip(0.3),
        Gossip(1.0),
        *[QSGD(s) for s in (1, 2, 16)],
    ]


@settings(max_examples=150, deadline=None)
@given(x=vectors)
def test_assumption2_holds_exactly_for_every_operator(x: np.ndarray) -> None:
    """E||Q(x) - x||^2 <= (1 - delta) ||x||^2, the left side computed exactly (no sampling)."""
    norm2 = float(x @ x)
    for q in operators(x.size):
        assert q.expected_error(x) <= (1 - q.delta(x.size)) * norm2 * (1 + 1e-12) + 1e-12, q


@pytest.mark.parametrize("d", [1, 3, 5])
def test_rand_k_expectation_by_enumerating_all_subsets(d: int) -> None:
    x = np.arange(1.0, d + 1) ** 1.5
    for k in range(1, d + 1):
        subsets = list(itertools.combinations(range(d), k))
        brute = np.mean([np.sum(np.delete(x, list(s)) ** 2) for s in subsets])
        assert RandK(k).expected_error(x) == pytest.approx(brute, rel=1e-12)


def test_qsgd_expectation_by_enumerating_all_roundings() -> None:
    x = np.array([0.3, -1.2, 2.5, 0.0])
    q = QSGD(3)
    low, frac, norm = q._levels(x)
    unit = norm / (q.s * q.c(x.size))
    brute = 0.0
    for up in itertools.product([0, 1], repeat=x.size):
        prob = np.prod([f if u else 1 - f for f, u in zip(frac, up, strict=True)])
        value = np.sign(x) * unit * (low + np.array(up))
        brute += prob * np.sum((value - x) ** 2)
    assert q.expected_error(x) == pytest.approx(brute, rel=1e-12)


def test_qsgd_is_scale_equivariant_up_to_float64_extremes() -> None:
    """Q(c x) = c Q(x) for a power of two c: the norm near 1e298 is computed without squaring past float64
    (it was NaN), and near 1e-300 without underflowing to 0."""
    x = np.random.default_rng(1).normal(size=50)
    q = QSGD(4)
    for c in (2.0**990, 2.0**-990):
        scaled = q(c * x, np.random.default_rng(2))
        assert np.array_equal(scaled, c * q(x, np.random.default_rng(2)))


def test_qsgd_before_rescaling_is_unbiased_with_variance_factor_c() -> None:
    """The paper's c: E Q = x and E||Q||^2 <= c ||x||^2 for the unscaled quantizer (Monte Carlo)."""
    rng = np.random.default_rng(0)
    for d, s in [(10, 1), (100, 4), (1000, 2)]:
        x = rng.normal(size=d)
        q = QSGD(s)
        draws = np.array([q(x, rng) for _ in range(4000)]) * q.c(d)  # undo the 1/c
        assert np.abs(draws.mean(axis=0) - x).max() < 6 * draws.std(axis=0).max() / math.sqrt(4000) + 1e-12
        assert (draws**2).sum(axis=1).mean() <= q.c(d) * (x @ x) * 1.02


@pytest.mark.parametrize("q", [RandK(3), Gossip(0.4), QSGD(2), TopK(3), Identity()])
def test_samplers_match_their_exact_expectation(q) -> None:
    """Monte Carlo mean of ||Q(x) - x||^2 within 5 standard errors of the exact expectation."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=12)
    errors = np.array([np.sum((q(x, rng) - x) ** 2) for _ in range(20_000)])
    se = errors.std(ddof=1) / math.sqrt(errors.size)
    assert abs(errors.mean() - q.expected_error(x)) <= 5 * se + 1e-12
    assert errors.mean() <= (1 - q.delta(x.size)) * (x @ x) + 5 * se + 1e-12


def test_deltas_and_bits() -> None:
    assert TopK(10).delta(100) == 0.1 == RandK(10).delta(100)
    assert QSGD(4).delta(100) == pytest.approx(1 / (1 + min(100 / 16, 10 / 4)))
    assert Gossip(0.6).delta(7) == 0.6 and Identity().delta(7) == 1
    assert Identity().bits(100) == 3200
    assert TopK(10).bits(100) == 10 * (32 + 7)
    assert RandK(10).bits(100) == 10 * 32 + 32
    assert Gossip(0.5).bits(100) == 1 + 1600
    assert QSGD(4).bits(100) == 32 + 100 * (1 + 3)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: TopK(0), r"k = 0 is out of range \(expected an integer >= 1\)"),
        (lambda: TopK(11).delta(10), r"k = 11 exceeds the dimension d = 10"),
        (lambda: Gossip(0.0), r"p = 0.0 is out of range \(expected 0 < p <= 1\)"),
        (lambda: QSGD(0), r"s = 0 is out of range \(expected an integer >= 1\)"),
        (lambda: make_compressor("zip", 3), r"unknown compressor 'zip'"),
        (lambda: make_compressor("top_k"), r"needs its parameter k \(expected make_compressor\('top_k', k\)"),
        (lambda: make_compressor("rand_k", 2.5), r"k = 2.5 is not a whole number"),
        (lambda: RandK(2)(np.array([1.0, np.nan]), np.random.default_rng()), r"x\[1\] is NaN"),
        (lambda: TopK(2)(np.array([1.0, np.inf]), None), r"x = inf is not finite"),
        # strings were numpy's ValueError "could not convert string to float: 'x'" (a probe of the library)
        (lambda: TopK(2)("abc", None), r"x = 'abc' is a string \(expected a real number\)"),
        (lambda: make_compressor("rand_k", 2).expected_error(["1", "x"]), r"x = \['1', 'x'\] is a string"),
        (lambda: TopK(2)([[1.0, 2.0]], None), r"x has shape \(1, 2\) \(expected a non-empty vector\)"),
        (lambda: TopK(2).delta(0), r"d = 0 is out of range \(expected an integer >= 1\)"),
    ],
)
def test_bad_parameters(build, message: str) -> None:
    with pytest.raises(InputError, match=message):
        build()


def test_whole_number_floats_and_numpy_integers_are_taken_as_everywhere_else() -> None:
    """delta(100.0) was 'd = 100.0 is not a positive integer' while make_compressor('top_k', 10.0) and
    dfl_bound(N=10.0) took whole-number floats (a probe of the library): one rule now, bounds._checks's."""
    assert TopK(10).delta(100.0) == TopK(10).delta(np.int64(100)) == TopK(10).delta(100)
    assert TopK(np.int64(3)).k == TopK(3.0).k == 3 and isinstance(TopK(3.0).k, int)
    assert QSGD(4.0).s == 4 and isinstance(QSGD(4.0).s, int)  # (it alone refused 4.0, a review)
    from bounds.graph.mixing import ExactAverage

    assert ExactAverage(4.0).n == 4 and isinstance(ExactAverage(np.int64(4)).n, int)


def test_random_compressors_need_a_generator_and_gossip_takes_numpy_numbers() -> None:
    """rng = None was an AttributeError from inside the draw; Gossip(True) was p = 1, and np.float32(0.5) 'out
    of range' (an API probe)."""
    for name, param in (("rand_k", 1), ("gossip", 0.5), ("qsgd", 4)):
        with pytest.raises(InputError, match=r"rng = None is not a random generator"):
            make_compressor(name, param)([1.0, -3.0, 2.0], None)
    with pytest.raises(InputError, match="p = True is a boolean"):
        Gossip(True)
    assert Gossip(np.float32(0.5)).p == 0.5 and Gossip(np.float32(0.5)).delta(4) == 0.5


def test_a_python_random_or_the_numpy_module_is_not_a_generator() -> None:
    """random.Random passed a hasattr('random') test and failed inside choice(size=...) (a review)."""
    import random

    for rng in (random.Random(0), np.random):
        with pytest.raises(InputError, match="is not a random generator"):
            make_compressor("rand_k", 1)([1.0, -3.0, 2.0], rng)
    assert make_compressor("rand_k", 1)([1.0, -3.0, 2.0], np.random.RandomState(0)).tolist().count(0.0) == 2
