"""Proposition 1: values, limits, corollaries, step-size conditions, grids and input errors."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy
from scipy.optimize import brentq

from bounds import InputError, bound_grid, dfl_bound, eta_max, local_step_mask
from bounds.dfl import formulas as f
from bounds.dfl import symbolic as s

BASE = dict(L=2.0, sigma2=0.5, N=10, eta=0.01, tau1=4, tau2=3, zeta=0.87, T=700, gap=3.0)


def paper_bound_by_hand(L, sigma2, N, eta, tau1, tau2, zeta, T, gap):
    """eq. (upper-bound) typed again from the paper, term by term, in exact rational arithmetic (floats lost
    the digits of tau1 / (1 - zeta^(2 tau2)) - 1 at tau1 = 1 as the code once did: both agreed, wrongly)."""
    L, sigma2, eta, zeta, gap = (Fraction(v) for v in (L, sigma2, eta, zeta, gap))
    sync = 2 * gap / (eta * T) + eta * L * sigma2 / N
    drift = 2 * eta**2 * L**2 * sigma2 * (tau1 / (1 - zeta ** (2 * tau2)) - 1)
    tau = tau1 + tau2
    z = zeta**tau2
    lhs = eta * L + eta**2 * L**2 * tau / (1 - z) * (
        2 * tau1 * z * z / (1 + z) + 2 * tau1 * z / (1 - z) + tau - 1
    )
    return float(sync), float(drift), float(lhs)


def test_values_against_the_paper_typed_by_hand() -> None:
    for tau1, tau2, zeta in itertools.product([1, 2, 7], [1, 4, 15], [0.0, 0.3, 0.87, 0.999]):
        args = {**BASE, "tau1": tau1, "tau2": tau2, "zeta": zeta}
        r = dfl_bound(**args)
        sync, drift, lhs = paper_bound_by_hand(**args)
        assert r.sync_sgd_term == pytest.approx(sync, rel=1e-13)
        assert r.local_drift_term == pytest.approx(drift, rel=1e-12, abs=1e-300)
        assert r.bound == pytest.approx(sync + drift, rel=1e-12)
        assert r.eta_condition_lhs == pytest.approx(lhs, rel=1e-12)
        assert r.eta_condition_ok == (lhs <= 1)


def test_symbolic_and_numeric_agree() -> None:
    sym = {s.SYMBOLS[k]: v for k, v in BASE.items()}
    r = dfl_bound(**BASE)
    assert float(s.expression("upper_bound").subs(sym)) == pytest.approx(r.bound, rel=1e-12)
    assert float(s.expression("eta_condition_lhs").subs(sym)) == pytest.approx(r.eta_condition_lhs, rel=1e-12)
    assert float(s.expression("eta_max").subs(sym)) == pytest.approx(r.eta_max, rel=1e-12)
    assert "\\zeta^{2 \\tau_{2}}" in s.latex("local_drift_term")
    assert "τ₁" in s.pretty("upper_bound")
    with pytest.raises(InputError, match=r"unknown expression 'nope'"):
        s.expression("nope")


def test_limit_T_infinity_matches_inftyT() -> None:
    assert sympy.simplify(s.limit_T_to_infinity() - s.expression("limit_T_inf")) == 0
    big = dfl_bound(**{**BASE, "T": 10**15})
    assert big.bound == pytest.approx(big.limit_T_inf, rel=1e-9)


def test_corollary1_tau1_one_tau2_infinity_is_synchronous_sgd() -> None:
    assert sympy.simplify(s.corollary1() - s.expression("sync_sgd_term")) == 0
    r = dfl_bound(**{**BASE, "tau1": 1, "tau2": 4000, "zeta": 0.87})
    assert r.local_drift_term == pytest.approx(0, abs=1e-300)
    assert r.bound == pytest.approx(r.sync_sgd_term, rel=1e-15)


def test_corollary2_zeta_zero() -> None:
    eta, L, sigma2, tau1 = (s.SYMBOLS[k] for k in ("eta", "L", "sigma2", "tau1"))
    expected = s.expression("sync_sgd_term") + 2 * eta**2 * L**2 * sigma2 * (tau1 - 1)
    assert sympy.simplify(s.corollary2() - expected) == 0
    r = dfl_bound(**{**BASE, "zeta": 0.0})
    assert r.local_drift_term == pytest.approx(2 * 0.01**2 * 4 * 0.5 * 3, rel=1e-13)


def test_finding_corollary1_is_incompatible_with_the_step_size_condition() -> None:
    """(eta) contains eta^2 L^2 tau (tau - 1) / (1 - zeta^tau2): as tau2 -> oo no fixed eta satisfies it.

    So the limit of Corollary 1 (tau2 -> oo at fixed eta) leaves the region where
    Proposition 1 is proved; eta_max shrinks like 1 / (L tau).
    """
    maxima = [eta_max(L=1, tau1=1, tau2=t2, zeta=0.5) for t2 in (1, 10, 100, 1000)]
    assert all(a > b for a, b in itertools.pairwise(maxima))
    assert maxima[-1] * 1001 == pytest.approx(1, rel=0.01)
    assert not dfl_bound(**{**BASE, "tau1": 1, "tau2": 4000, "eta": 0.01}).eta_condition_ok


@pytest.mark.parametrize(
    ("tau1", "tau2", "zeta", "beta_var"),
    [(1, 1, 0.0, 0.0), (4, 4, 0.87, 0.0), (10, 1, 0.99, 0.0), (3, 7, 0.5, 0.7), (1, 20, 0.999, 2.0)],
)
def test_eta_max_is_the_root_of_the_condition(tau1: int, tau2: int, zeta: float, beta_var: float) -> None:
    L, N = 3.0, 10
    top = eta_max(L=L, tau1=tau1, tau2=tau2, zeta=zeta, N=N, beta_var=beta_var)

    def lhs(eta: float) -> float:
        return f.general_eta_condition_lhs(eta, L, N, tau1, tau2, zeta, beta_var) - 1

    root = brentq(lhs, 1e-15, 1 / L, xtol=1e-18, rtol=1e-14)
    assert top == pytest.approx(root, rel=1e-10)
    point = {**BASE, "L": L, "N": N, "tau1": tau1, "tau2": tau2, "zeta": zeta, "beta_var": beta_var}
    ok = dfl_bound(**{**point, "eta": top * (1 - 1e-9)})
    bad = dfl_bound(**{**point, "eta": top * (1 + 1e-9)})
    assert ok.general_condition_ok and not bad.general_condition_ok
    assert ok.lemma1_ok  # the general condition implies Lemma 1's
    if beta_var == 0:
        assert ok.eta_condition_ok and not bad.eta_condition_ok
        assert ok.general_condition_lhs == pytest.approx(ok.eta_condition_lhs)


@pytest.mark.parametrize("zeta", [1 - 1.87e-8, 1 - 2.6e-7, 0.3, 0.01, 0.87])
@pytest.mark.parametrize(("tau1", "tau2"), [(1, 4), (4, 5), (1, 50)])
def test_the_terms_and_eta_max_keep_their_digits_where_zeta_power_tau2_is_near_0_or_1(
    zeta: float, tau1: int, tau2: int
) -> None:
    """Against 60-digit arithmetic (the same formulas, as the paper writes them): 1 - zeta^tau2 near 0 (zeta
    within 2e-8 of 1: a 10,000-node ring) lost 9 digits, and eta_max passed (eta) by 1.05e-9 where
    CONDITION_RTOL promises 1e-12; tau1 / (1 - q) - 1 at tau1 = 1 lost them all (0.0 for q / (1 - q))."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 450  # (1 - q at q = 0.01^100 = 1e-200 keeps 250 digits: the paper's form cancels too)
    z, t1, t2 = mp.mpf(zeta), mp.mpf(tau1), mp.mpf(tau2)
    tau, zt = t1 + t2, z**t2
    A = tau / (1 - zt) * (2 * t1 * zt**2 / (1 + zt) + 2 * t1 * zt / (1 - zt) + tau - 1)
    drift = t1 / (1 - zt**2) - 1
    exact = {"A": A, "drift": drift, "drift + 1": drift + 1}
    ours = {"A": f.gossip_coefficient(tau1, tau2, zeta), "drift": f.drift_factor(tau1, tau2, zeta),
            "drift + 1": f.drift_factor_corrected(tau1, tau2, zeta)}  # fmt: skip
    for name, value in exact.items():  # (abs=0: approx's default 1e-12 passed 0.0 for 5e-53)
        assert float(ours[name]) == pytest.approx(float(value), rel=1e-13, abs=0), name
    top = mp.mpf(eta_max(L=1.0, tau1=tau1, tau2=tau2, zeta=zeta, N=10))
    assert top + A * top**2 <= 1 + 1e-12  # at eta_max, (eta) holds as CONDITION_RTOL says
    assert float(top) == pytest.approx(float((mp.sqrt(1 + 4 * A) - 1) / (2 * A)), rel=1e-12, abs=0)


def test_one_number_takes_the_same_digits_as_an_array() -> None:
    """one_minus_power's path for one number (13-22 us by np.where, 122k calls in one brute-force test)
    gives the array path's float64 bit for bit, 0.0 (not -0.0) at zeta = 1, and inf, not ZeroDivisionError,
    where it divides a Python float by it."""
    rng = np.random.default_rng(0)
    zeta = np.concatenate(
        [rng.random(2000), 1 - 10 ** -rng.uniform(1, 12, 500), [0.0, 1.0, 1e-300], -rng.random(50)]
    )
    k = rng.integers(0, 200, zeta.size).astype(float)
    whole = f.one_minus_power(zeta, k)
    for z, power, expected in zip(zeta, k, whole, strict=True):
        for one in (
            f.one_minus_power(float(z), int(power)),
            f.one_minus_power(np.asarray(z), np.asarray(power)),
        ):
            assert type(one) is np.float64 and one.tobytes() == expected.tobytes(), (z, power)
    assert not np.signbit(f.one_minus_power(1.0, 4))
    with np.errstate(divide="ignore"):
        assert f.drift_factor_corrected(4, 2, 1.0) == np.inf


def test_general_condition_is_stricter_with_variance_growth() -> None:
    r0 = dfl_bound(**BASE)
    r1 = dfl_bound(**BASE, beta_var=1.5)
    assert r1.general_eta_max < r0.general_eta_max == pytest.approx(r0.eta_max)
    assert r1.lemma1_lhs == pytest.approx(BASE["eta"] * BASE["L"] * (1 + 1.5 / BASE["N"]))


def test_variance_growth_that_breaks_the_general_condition_is_no_success() -> None:
    """With beta_var > 0 the bound needs the general condition (end of Appendix A) and Lemma 1's, not (eta)
    alone: success used to say True with both failing; the repairs, derived for beta_var = 0, are inf."""
    eta = 0.5 * dfl_bound(**BASE).eta_max  # (eta) holds
    top = dfl_bound(**{**BASE, "eta": eta}, beta_var=1e3).general_eta_max
    assert top < eta
    bad = dfl_bound(**{**BASE, "eta": eta}, beta_var=1e3)
    assert bad.eta_condition_ok and not bad.general_condition_ok and not bad.lemma1_ok and not bad.success
    assert "the general condition (end of Appendix A) and Lemma 1's condition fail" in bad.message
    assert f"the largest eta for both is {top:.6g}" in bad.message
    assert np.isinf(bad.bound_repaired) and np.isinf(bad.bound_non_iid) and np.isfinite(bad.bound)
    good = dfl_bound(**{**BASE, "eta": top}, beta_var=1e3)
    assert good.success and "derived for beta_var = 0" in good.message and np.isinf(good.bound_repaired)
    grid = dfl_bound(**{**BASE, "eta": eta}, beta_var=[0.0, 1e3])
    assert grid.success.tolist() == [True, False] and np.isfinite(grid.bound_repaired[0])
    assert "fail (at 1 of 2 points)" in grid.message


def test_grid_in_one_call_equals_pointwise_calls() -> None:
    tau1, tau2, zeta = [1, 2, 5], [0, 1, 3, 9], [0.0, 0.5, 0.87, 1.0]
    scalars = {k: v for k, v in BASE.items() if k not in ("tau1", "tau2", "zeta")}
    g = bound_grid(tau1=tau1, tau2=tau2, zeta=zeta, **scalars)
    assert g.bound.shape == (3, 4, 4)
    for (i, a), (j, b), (k, c) in itertools.product(enumerate(tau1), enumerate(tau2), enumerate(zeta)):
        r = dfl_bound(tau1=a, tau2=b, zeta=c, **scalars)
        for name in ("bound", "local_drift_term", "eta_max", "eta_condition_lhs", "general_eta_max"):
            assert np.asarray(getattr(g, name))[i, j, k] == pytest.approx(getattr(r, name), rel=1e-12)
    assert "have zeta = 1 or tau2 = 0" in g.message


def test_monotonicity_of_the_drift_term_remarks_1_and_2() -> None:
    g = bound_grid(
        tau1=np.arange(1, 30),
        tau2=np.arange(1, 30),
        zeta=np.linspace(0.01, 0.99, 30),
        **{k: v for k, v in BASE.items() if k not in ("tau1", "tau2", "zeta")},
    )
    d = g.local_drift_term
    assert (np.diff(d, axis=0) > 0).all()  # increases with tau1
    # decreases with tau2 and increases with zeta: strictly wherever zeta^(2 tau2) is not lost to
    # rounding against tau1 - 1 (zeta >= 0.5 and tau2 <= 10 here), weakly everywhere
    assert (np.diff(d, axis=1) <= 0).all() and (np.diff(d, axis=2) >= 0).all()
    box = d[:, :10, 15:]
    assert (np.diff(box, axis=1) < 0).all() and (np.diff(box, axis=2) > 0).all()


@pytest.mark.parametrize(
    "tau2,zeta,why", [(0, 0.5, "tau2 = 0: no gossip step"), (3, 1.0, "zeta = 1: the graph is disconnected")]
)
def test_never_mixing_gives_infinite_bound_with_reason(tau2: int, zeta: float, why: str) -> None:
    r = dfl_bound(**{**BASE, "tau2": tau2, "zeta": zeta})
    assert math.isinf(r.bound) and math.isinf(r.local_drift_term) and r.eta_max == 0
    assert not r.eta_condition_ok and not r.success and why in r.message
    assert r.to_dict()["bound"] == "inf"
    noise_free = dfl_bound(**{**BASE, "tau2": tau2, "zeta": zeta, "sigma2": 0.0, "beta_var": 1.0})
    assert math.isinf(noise_free.bound) and math.isinf(noise_free.general_condition_lhs)


def test_violated_condition_and_uneven_tail_are_explained() -> None:
    r = dfl_bound(**{**BASE, "eta": 0.5})
    assert not r.success and "violates the step-size condition (eta)" in r.message
    assert f"{r.eta_max:.6g}" in r.message
    r = dfl_bound(**{**BASE, "T": 7 * 10 + 6})
    assert r.rounds == 10 and r.tail_steps == 6 and "footnote 1" in r.message
    assert dfl_bound(**BASE).message == "" and dfl_bound(**BASE).success


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"zeta": 1.2}, r"zeta = 1.2 is out of range \(expected a real number >= 0 and <= 1\)"),
        ({"zeta": -0.1}, r"zeta = -0.1 is out of range"),
        ({"tau1": 0}, r"tau1 = 0 is out of range \(expected an integer >= 1\)"),
        ({"tau1": 2.5}, r"tau1 = 2.5 is not a whole number"),
        ({"tau2": -1}, r"tau2 = -1 is out of range \(expected an integer >= 0\)"),
        ({"eta": 0.0}, r"eta = 0 is out of range \(expected a real number > 0\)"),
        ({"N": 0}, r"N = 0 is out of range"),
        ({"L": float("nan")}, r"L is NaN"),
        ({"T": float("inf")}, r"T = inf is not finite \(expected a finite number\)$"),
        ({"gap": "x"}, r"gap = 'x' is a string \(expected a real number\)"),
        ({"gap": "1"}, r"gap = '1' is a string"),  # it used to convert to 1.0
        ({"T": []}, r"T = \[\] is empty"),
        ({"L": None}, r"L = None is not a number"),
        (
            {"L": [1, 2], "sigma2": [1, 2, 3]},
            r"sigma2 has shape \(3,\), which does not broadcast with L \(2,\)",
        ),
        ({"zeta": [0.5, 2.0]}, r"zeta = 2 is out of range"),
    ],
)
def test_out_of_range_inputs_are_clear_errors(override: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        dfl_bound(**{**BASE, **override})


def test_result_prints_in_a_fixed_order() -> None:
    text = str(dfl_bound(**BASE)).splitlines()
    assert text[0].split(":")[0].strip() == "bound" and "eta_max" in "".join(text)


def test_the_message_says_where_the_non_iid_bound_is_not_guaranteed() -> None:
    """success and message spoke only of (eta): a bound_non_iid whose own condition failed read as valid."""
    base = dict(L=1, sigma2=1, N=10, tau1=4, tau2=4, zeta=0.8727, T=1000, gap=1, heterogeneity=0.5)
    bad = dfl_bound(**base, eta=0.045)
    assert not bad.non_iid_condition_ok and "rho_D = 0.542" in bad.message
    assert "bound_non_iid is not guaranteed" in bad.message
    good = dfl_bound(**base, eta=0.01)
    assert good.non_iid_condition_ok and good.message == ""
    assert "at 1 of 2 points" in dfl_bound(**{**base, "eta": [0.01, 0.045]}).message
    assert dfl_bound(**{**base, "heterogeneity": 0.0}, eta=0.045).message == ""  # i.i.d.: not its concern


def test_an_overflowing_bound_says_so() -> None:
    """gap = 1e308 gave bound = inf, success False and message '(none)'."""
    r = dfl_bound(**{**BASE, "gap": 1e308})
    assert r.bound == float("inf") and not r.success and "overflows float64" in r.message
    assert "overflows" not in dfl_bound(**{**BASE, "tau2": 0}).message  # no gossip: its own reason


def test_an_eta_max_beyond_float64_is_inf_and_said() -> None:
    """L = 1e-320 printed eta_max = 1.79769e+308 (the largest float, nudged down from inf) without a word:
    the true root, about 1e320, is beyond float64, and every finite eta satisfies (eta)."""
    r = dfl_bound(**{**BASE, "L": 1e-320})
    assert r.eta_max == float("inf") and r.eta_condition_ok and "beyond float64's range" in r.message
    assert "beyond" not in dfl_bound(**{**BASE, "L": 1e-300}).message  # eta_max ~ 1e298: a float
    assert dfl_bound(**{**BASE, "L": 1e-300}).eta_max < 1e300


def test_the_repairs_count_the_local_steps_the_simulator_takes() -> None:
    """With sigma^2 = 0 the repair is 2 gap / (eta n_local): n_local must be the local steps of Algorithm 1's
    schedule (local_step_mask, which sim runs). A tail T - K tau longer than tau1 (all local steps, outside
    footnote 1) was counted as tau1 of them (6 against the simulator's 7 at T = 13, tau1 = 2, tau2 = 3: a
    probe); the repairs are not derived there and are inf."""
    for tau1, tau2, T in itertools.product(range(1, 5), range(1, 4), range(1, 30)):
        r = dfl_bound(L=1, sigma2=0, N=2, eta=0.01, tau1=tau1, tau2=tau2, zeta=0.5, T=T, gap=1)
        if T % (tau1 + tau2) > tau1:
            assert math.isinf(r.bound_repaired) and math.isinf(r.bound_non_iid), (tau1, tau2, T)
            assert "our repairs, derived under it, are inf there" in r.message
        else:
            assert 2 / (0.01 * r.bound_repaired) == pytest.approx(local_step_mask(tau1, tau2, T).sum())


def test_bound_grid_names_itself_and_an_empty_axis() -> None:
    """A missing constant was dfl_bound's TypeError; an empty axis showed the mesh of shape (0, 1, 1)."""
    with pytest.raises(InputError, match=r"^bound_grid needs sigma2, N, eta, T, gap"):
        bound_grid(tau1=[1, 2], tau2=[3], zeta=[0.5], L=1)
    with pytest.raises(InputError, match=r"^tau1 = \[\] is empty"):
        bound_grid(tau1=[], tau2=[3], zeta=[0.5], L=1, sigma2=1, N=10, eta=0.01, T=1000, gap=1)
    # a misspelt constant beside the right one was dfl_bound's TypeError too (a probe)
    with pytest.raises(InputError, match=r"^bound_grid got an unknown argument sigm2 \(sigma2\?\)"):
        bound_grid(tau1=[1], tau2=[3], zeta=[0.5], L=1, sigma2=1, N=10, eta=0.01, T=1000, gap=1, sigm2=1)


def test_bound_grid_names_the_axes_as_given_and_refuses_a_grid_beyond_memory() -> None:
    """A string axis was named by the mesh it made (tau1 = array([[['1']], [['2']]], dtype='<U1')), a
    generator by an object array of it, and a 10^5 x 10^5 grid was numpy's MemoryError for 149 GiB (a probe
    of the library); dfl_bound's own broadcast arrays too."""
    from bounds._checks import MAX_CELLS

    constants = {"L": 1, "sigma2": 1, "N": 10, "eta": 0.01, "T": 10**6, "gap": 1}
    cases = [
        ({"tau1": ["1", "2"]}, r"^tau1 = \['1', '2'\] is a string \(expected a real number\)$"),
        ({"tau2": (t for t in range(3))}, r"^tau2 = <generator object .* is not a list"),
        ({"zeta": {0.5, 0.9}}, r"^zeta = \{0.5, 0.9\} is not a list"),
        ({"tau1": range(1, 100_001), "tau2": range(1, 100_001)},
         r"^tau1 x tau2 x zeta 100000 x 100000 x 1 span 10,000,000,000 cells \(expected at most 20,000,000"),
    ]  # fmt: skip
    for axes, message in cases:
        with pytest.raises(InputError, match=message):
            bound_grid(**{"tau1": [1, 2], "tau2": [3], "zeta": [0.5], **axes}, **constants)
    big = {"tau1": np.arange(1, 100_001)[:, None], "tau2": np.arange(1, 100_001)[None, :], "zeta": 0.5}
    with pytest.raises(InputError, match=r"^tau1 \(100000, 1\), tau2 \(1, 100000\) span 10,000,000,000 "):
        dfl_bound(**big, **constants)
    assert MAX_CELLS == 20_000_000  # (5 GB at 250 bytes a cell: the message's figure)


def test_dates_none_masked_entries_and_nan_positions_are_named() -> None:
    """eta = datetime64 computed a bound of 3.3e9, tau1 = timedelta64(4) was taken as 4, a None was called
    NaN, a masked entry was computed anyway, and 'zeta is NaN' did not say which of the values (a probe)."""
    constants = {
        "L": 1,
        "sigma2": 1,
        "N": 10,
        "eta": 0.01,
        "tau1": 4,
        "tau2": 4,
        "zeta": 0.87,
        "T": 1000,
        "gap": 1,
    }
    cases = [
        (
            {"eta": np.datetime64("2020-01-01")},
            r"^eta = np.datetime64\('2020-01-01'\) is a date \(expected a real",
        ),
        ({"tau1": np.timedelta64(4)}, r"^tau1 = np.timedelta64\(4\) is a duration"),
        (
            {"zeta": np.array([0.5, None], dtype=object)},
            r"^zeta = array\(\[0.5, None\], dtype=object\) holds None",
        ),
        ({"zeta": np.ma.masked_array([0.5, 2.0], [False, True])}, r"^zeta has masked entries"),
        ({"zeta": [0.5, np.nan, 0.9]}, r"^zeta\[1\] is NaN"),
        # inside lists (a review): an object array counted the date's days, numpy made the masked a NaN
        ({"zeta": [0.5, np.datetime64("2020-01-01")]}, r"^zeta = .* holds a date or duration"),
        ({"zeta": [0.5, np.ma.masked]}, r"^zeta = \[0.5, masked\] holds masked values"),
        ({"zeta": [np.ma.masked_array([0.5, 2.0], [False, True])]}, r"(?s)^zeta = .* holds masked values"),
        ({"zeta": [[0.5, 0.6], [np.nan, 0.1]]}, r"^zeta\[1, 0\] is NaN"),
    ]
    for change, message in cases:
        with pytest.raises(InputError, match=message):
            dfl_bound(**{**constants, **change})
    unmasked = np.ma.masked_array([0.5, 0.6], [False, False])  # nothing masked: its values, as an array's
    assert (
        dfl_bound(**{**constants, "zeta": unmasked}).bound.tolist()
        == dfl_bound(**{**constants, "zeta": [0.5, 0.6]}).bound.tolist()
    )
