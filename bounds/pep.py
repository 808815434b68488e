"""Exact worst cases of deterministic DFL by performance estimation (PEP), with PEPit.

Needs the optional dependency group ``pep`` (``pip install -e ".[pep]"``: PEPit and cvxpy with the
Clarabel / SCS solvers); nothing else in the toolkit imports this module.

The problem (Algorithm 1 with sigma^2 = 0, rows of X are nodes as in :mod:`sim`): N agents with their own
L-smooth (possibly non-convex) f_i, F = (1/N) sum_i f_i, a fixed mixing matrix C, every node starting
at the same x_1 = u_1. K rounds, each of tau1 local steps x_i <- x_i - eta grad f_i(x_i) and tau2 gossip
steps x_i <- sum_j C_ij x_j. Performance estimation (Drori and Teboulle 2014; Taylor, Hendrickx and
Glineur 2017; for agents and a fixed mixing matrix, Colla and Hendrickx 2022-2023) writes "the worst
functions f_1..f_N for this algorithm" as a semidefinite program over the Gram matrix of the iterates
and gradients, with the smooth interpolation conditions of each f_i at the points where it is
evaluated. :func:`dfl_worst_case` computes

    sup (1/(K tau1)) sum_{local steps s} ||grad F(u_s)||^2        (``metric="local"``, what the
                                                                    repaired Proposition 1 bounds)
    sup (1/T) sum_{t=1..T} ||grad F(u_t)||^2, T = K (tau1 + tau2)  (``metric="all"``, what the
                                                                    paper's Proposition 1 bounds)

over all L-smooth f_i (any dimension) subject to

* the gap: F(u_1) - F_inf <= Delta. PEP only sees the evaluated points, so F_inf is a scalar F_* (the
  value of F at an extra point x_*) with F_* <= F(u) - ||grad F(u)||^2 / (2L) at every evaluated average
  model u (true of inf F for every L-smooth F: a step 1/L from u descends that much) and
  F(u_1) - F_* <= Delta (``initial="lower"``, the default). Every real instance satisfies these, so the
  SDP value is an upper bound of the true worst case (the exact worst case of this relaxation; whether
  the relaxation is exact is not known in general: :func:`quadratic_lower_bound` gives true instances
  from below);
  ``initial="last"``: F(u_1) - F(u_end) <= Delta, PEPit's own convention for non-convex methods;
* the heterogeneity (non-i.i.d. data): (1/N) sum_i ||grad f_i(u_s) - grad F(u_s)||^2 <= varsigma^2 at
  the average model of every local step, the assumption of the non-i.i.d. repair
  (:func:`bounds.dfl.formulas.heterogeneity_term`).

The witness (the worst functions' values and gradients at the iterates, from the solver's Gram
matrix) comes back with the value: its left side, recomputed step by step, equals the SDP value.

The value is PEPit's dual objective: the constant of the proof PEPit rebuilds from the solver's dual
variables (multipliers of the interpolation and initial conditions, and the dual PSD matrix of the Gram
constraint). It is an upper bound of the SDP value only if that proof holds: dual multipliers >= 0, the
dual matrix PSD, and the rebuilt combination equal to the constant alone. A solver that stops early, or
runs with loose tolerances, can still report ``optimal`` with a "proof" that misses by far more than
its tolerance (Clarabel with tolerances 0.1: status ``optimal``, values 1.2447 and 1.2519 in two runs
for a cell whose value is 1.2500). :func:`certificate` measures how far the proof and the primal
witness are from exact (PEPit's own measures, a heuristic), and a result counts as a success only when
every error is at most ``certificate_rtol`` (default :data:`CERTIFICATE_RTOL`) of the value.
"""

from __future__ import annotations

import contextlib
import io
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bounds._checks import InputError, one_of, real_number
from bounds.graph.mixing import as_dense, check_mixing_matrix
from bounds.result import Result

__all__ = [
    "CERTIFICATE_PARTS",
    "CERTIFICATE_RTOL",
    "MAX_GRAM_SIZE",
    "METRICS",
    "PEPResult",
    "certificate",
    "dfl_worst_case",
    "gradient_descent_worst_case",
    "gram_size_estimate",
    "quadratic_lower_bound",
]

METRICS = ("local", "all")
CERTIFICATE_PARTS = ("proof_residual", "dual_infeasibility", "primal_infeasibility", "duality_gap")
CERTIFICATE_RTOL = 1e-4  # largest certificate error (relative to max(1, |value|)) of a trusted value
MAX_GRAM_SIZE = 150
"""The largest Gram matrix (:func:`gram_size_estimate`) :func:`dfl_worst_case` builds unless told more: an
SDP's solve time grows about as its size^3.5 (Clarabel, 2 cores, 2026-11-28: 23 in 0.3 s, 38 in 1.3 s, 52
in 8 s), so 150 takes minutes and 1,000 rounds on 3 nodes (about 6,000) would not end."""
INITIAL_CONDITIONS = ("lower", "last")


@dataclass(frozen=True)
class PEPResult(Result):
    """The worst case, the solver's status and time, and the witness (values at the iterates)."""

    worst_case: float
    solver_status: str
    seconds: float
    metric: str
    initial: str
    gram_size: int
    witness: dict[str, Any] = field(repr=False)
    certificate: dict[str, float] = field(default_factory=dict)
    success: bool = True
    message: str = ""


def _total(terms: list[Any]) -> Any:
    """The sum of PEPit points or expressions (``sum`` would start from the integer 0)."""
    return sum(terms[1:], terms[0])


def _require_pepit() -> Any:
    try:
        import PEPit
    except ImportError:
        raise InputError(
            'the PEP computations need PEPit and cvxpy (expected: pip install -e ".[pep]")'
        ) from None
    return PEPit


PEP_MATRIX_TOL = 1e-5  # rows and symmetry of a C typed to 6 digits (np.allclose's tolerance, as before)


def _check_inputs(C: Any, tau1: int, tau2: int, rounds: int, eta: float, L: float, gap: float,
                  heterogeneity: float, metric: str, initial: str) -> np.ndarray:  # fmt: skip
    """C as a validated dense float array (Assumption 1.6: symmetric, non-negative, doubly stochastic; a
    disconnected C is a valid problem), after every other argument is checked by name."""
    _check_schedule(tau1, tau2, rounds, eta, L, gap, metric)
    real_number("heterogeneity", heterogeneity, low=0)
    one_of("initial condition", initial, INITIAL_CONDITIONS)
    return as_dense(check_mixing_matrix(C, tol=PEP_MATRIX_TOL, require_connected=False))


def _check_schedule(tau1: int, tau2: int, rounds: int, eta: float, L: float, gap: float, metric: str) -> None:
    """The arguments of a DFL schedule and its metric, each named when it is out of its domain."""
    for name, value, low in (("tau1", tau1, 1), ("tau2", tau2, 0), ("rounds", rounds, 1)):
        real_number(name, value, low=low, integer=True)
    for name, number in (("eta", eta), ("L", L), ("gap", gap)):
        real_number(name, number, low=0, low_open=True)
    one_of("metric", metric, METRICS)


def dfl_worst_case(
    C: Any,
    *,
    tau1: int,
    tau2: int,
    rounds: int,
    eta: float,
    L: float,
    gap: float,
    heterogeneity: float = 0.0,
    metric: str = "local",
    initial: str = "lower",
    solver: str | None = None,
    solver_options: dict[str, Any] | None = None,
    certificate_rtol: float = CERTIFICATE_RTOL,
    max_gram: int = MAX_GRAM_SIZE,
) -> PEPResult:
    """The exact worst case of deterministic DFL (see the module docstring) for a numeric C (N x N).

    ``solver``: a cvxpy solver name (default: Clarabel if installed, else cvxpy's choice);
    ``solver_options``: keyword arguments for it (e.g. ``{"max_iter": 50}``). Returns ``success=False``
    with the reason in the message when the SDP is not solved to optimality or its certificate
    (:func:`certificate`) misses by more than ``certificate_rtol`` (default :data:`CERTIFICATE_RTOL`).
    A problem whose Gram matrix would exceed ``max_gram`` (:func:`gram_size_estimate`) is an InputError
    before anything is built.
    """
    PEPit = _require_pepit()
    from PEPit.functions import SmoothFunction

    C = _check_inputs(C, tau1, tau2, rounds, eta, L, gap, heterogeneity, metric, initial)
    tau1, tau2, rounds = int(tau1), int(tau2), int(rounds)  # 2.0 is a whole number: range() wants an int
    real_number("max_gram", max_gram, low=1, integer=True)
    size = gram_size_estimate(C.shape[0], tau1, rounds)
    if size > max_gram:  # ran on with no output for as long as one let it
        raise InputError(
            f"the SDP's Gram matrix would be about {size} x {size} (N = {C.shape[0]}, tau1 = {tau1}, "
            f"rounds = {rounds}: 2 N tau1 rounds + N + 2), more than max_gram = {max_gram} (expected fewer "
            "nodes, local steps or rounds, or a larger max_gram: the solve time grows about as the size^3.5, "
            "52 took 8 s on 2 cores)"
        )
    if not isinstance(certificate_rtol, int | float) or not 0 < certificate_rtol < 1:
        raise InputError(f"certificate_rtol = {certificate_rtol!r} is out of range (expected 0 < it < 1)")
    n = C.shape[0]
    start = time.perf_counter()
    problem = PEPit.PEP()
    fs = [problem.declare_function(SmoothFunction, L=L) for _ in range(n)]
    x1 = problem.set_initial_point()
    X = [x1] * n

    def average_model(points: list[Any]) -> Any:
        return points[0] if all(p is points[0] for p in points) else _total(points) / n

    def at_average(u: Any) -> tuple[Any, Any, list[Any]]:
        """grad F(u), F(u) and the N gradients grad f_i(u)."""
        oracles = [f.oracle(u) for f in fs]
        grads = [g for g, _ in oracles]
        return _total(grads) / n, _total([v for _, v in oracles]) / n, grads

    local_terms, round_end_terms, values, squares = [], [], [], []  # squares: ||grad F(u)||^2 beside F(u)
    trace: list[
        tuple[list[Any], list[Any], list[Any]]
    ] = []  # per local step: node points, node grads, grads at u
    mix = np.linalg.matrix_power(np.asarray(C, dtype=np.float64), int(tau2))
    for _ in range(rounds):
        for _ in range(tau1):
            u = average_model(X)
            gF, Fu, grads = at_average(u)
            local_terms.append(gF**2)
            values.append(Fu)
            squares.append(gF**2)
            if n > 1:
                spread = _total([(g - gF) ** 2 for g in grads]) / n
                problem.add_constraint(spread <= heterogeneity)
            node_grads = [f.gradient(x) for f, x in zip(fs, X, strict=True)]
            trace.append((X, node_grads, grads))
            X = [x - eta * g for g, x in zip(node_grads, X, strict=True)]
        if tau2:  # the tau2 gossip steps as one product with C^tau2: the same linear map (entries of a
            # non-negative C's powers are exact zeros where they are zero), its cost one step's for any tau2
            # (step by step, --tau2 1e9 ran for days without a word: a probe)
            X = [sum((mix[i, j] * X[j] for j in range(n) if mix[i, j] != 0.0), 0 * x1) for i in range(n)]
        gF_end, F_end, _ = at_average(average_model(X))
        round_end_terms.append(gF_end**2)
        values.append(F_end)
        squares.append(gF_end**2)
    if metric == "local":
        objective = _total(local_terms) / len(local_terms)
    else:  # u stays the same during the tau2 gossip steps: each round's end counts tau2 times
        total = rounds * (tau1 + tau2)
        objective = (_total(local_terms) + tau2 * _total(round_end_terms)) / total
    problem.set_performance_metric(objective)
    if initial == "last":
        problem.set_initial_condition(values[0] - values[-1] <= gap)
    else:
        x_star = PEPit.Point()
        F_star = _total([f.value(x_star) for f in fs]) / n
        for value, square in zip(values, squares, strict=True):  # inf F <= F(u) - ||grad F(u)||^2 / (2L)
            problem.add_constraint(F_star <= value - square / (2 * L))
        problem.set_initial_condition(values[0] - F_star <= gap)
    worst, status, proof = _solve_certified(problem, solver, solver_options)
    seconds = time.perf_counter() - start
    worst_case = float("nan") if worst is None else float(worst)
    solved = status in ("optimal", "optimal_inaccurate") and np.isfinite(worst_case)
    ok = solved and proof["error"] <= certificate_rtol
    if not solved:
        message = f"the SDP solver stopped with status {status!r} (expected optimal)"
    elif np.isnan(proof["error"]):
        message = (f"the SDP solver's certificate could not be computed (a PEPit version this was not tested "
                   f"with?): the value {worst_case!r} is not trusted")  # fmt: skip
    elif not ok:
        worst_part = max((k for k in proof if k != "error"), key=lambda k: proof[k])
        message = (
            f"the SDP solver's certificate misses by {proof['error']:.3g} ({worst_part}; expected at most "
            f"{certificate_rtol:g} of the value): the value {worst_case!r} is not trusted"
        )
    else:
        message = ""
    witness: dict[str, Any] = {}
    if ok:
        local = [float(t.eval()) for t in local_terms]
        witness = {
            "grad_norm2_local": local,
            "grad_norm2_round_end": [float(t.eval()) for t in round_end_terms],
            "F": [float(v.eval()) for v in values],
            "lhs_recomputed": float(objective.eval()),
            **_replay(fs, x1, trace, C, eta, tau1, tau2, L),
        }
    return PEPResult(
        worst_case=worst_case,
        solver_status=status,
        seconds=seconds,
        metric=metric,
        initial=initial,
        gram_size=_gram_size(problem),
        witness=witness,
        certificate=proof if solved else {},
        success=bool(ok),
        message=message,
    )


def _replay(fs: list[Any], x1: Any, trace: list[Any], C: np.ndarray, eta: float, tau1: int, tau2: int,
            L: float) -> dict[str, float]:  # fmt: skip
    """The witness as an instance, checked independently of PEPit's constraints:

    * replay: Algorithm 1 run in numpy from the witness's x_1 with the witness's gradients at the
      replayed points (``replay_max_deviation``: the largest distance from a replayed node model to the
      witness's, relative to the largest model norm) and its left side from the witness's gradients at
      the replayed average models (``lhs_replayed``);
    * existence of the f_i: the interpolation conditions of L-smooth functions at every point where
      f_i was evaluated, written in the convex form (f + (L/2)||x||^2 is convex and 2L-smooth, so
      h_a >= h_b + <s_b, x_a - x_b> + ||s_a - s_b||^2 / (4L) with h = f + (L/2)||x||^2, s = g + L x);
      ``interpolation_min_slack`` is the smallest slack over all pairs, relative to the largest |h|
      (>= 0 up to the solver's accuracy: then such f_i exist, by Taylor, Hendrickx and Glineur 2017).
    """
    n = C.shape[0]
    x = [_vector(x1)] * n
    deviation, scale, lhs, steps = 0.0, 1e-300, 0.0, 0
    for s, (points, node_grads, grads_u) in enumerate(trace):
        witness = [_vector(p) for p in points]
        deviation = max(deviation, max(float(np.linalg.norm(a - b)) for a, b in zip(x, witness, strict=True)))
        scale = max(scale, max(float(np.linalg.norm(w)) for w in witness))
        gF = np.mean([_vector(g) for g in grads_u], axis=0)
        lhs += float(gF @ gF)
        steps += 1
        x = [xi - eta * _vector(g) for xi, g in zip(x, node_grads, strict=True)]
        if (s + 1) % tau1 == 0 and tau2:  # (the same C^tau2 as the PEP's)
            x = list(np.linalg.matrix_power(np.asarray(C, dtype=np.float64), int(tau2)) @ np.stack(x))
    slack = min(
        interpolation_slack([(_vector(pt), _vector(g), float(v.eval())) for pt, g, v in f.list_of_points], L)
        for f in fs
    )
    return {"replay_max_deviation": deviation / scale, "lhs_replayed": lhs / max(steps, 1),
            "interpolation_min_slack": float(slack)}  # fmt: skip


def _vector(expression: Any) -> np.ndarray:
    return np.atleast_1d(np.asarray(expression.eval(), dtype=float))


def interpolation_slack(triples: list[tuple[np.ndarray, np.ndarray, float]], L: float) -> float:
    """The smallest slack of the L-smooth interpolation conditions over the pairs of (x, g, f) triples,
    relative to the largest |h|: >= 0 iff an L-smooth f with f(x) = f and grad f(x) = g at every triple
    exists (Taylor, Hendrickx and Glineur 2017: f + (L/2)||x||^2 is convex and 2L-smooth, so with
    h = f + (L/2)||x||^2 and s = g + L x, h_a >= h_b + <s_b, x_a - x_b> + ||s_a - s_b||^2 / (4L))."""
    h = [(x, g + L * x, f + L / 2 * float(x @ x)) for x, g, f in triples]
    size = max(1.0, max(abs(hb) for _, _, hb in h))
    slack = np.inf
    for xa, sa, ha in h:
        for xb, sb, hb in h:
            gap = ha - hb - float(sb @ (xa - xb)) - float((sa - sb) @ (sa - sb)) / (4 * L)
            slack = min(slack, gap / size)
    return float(slack)


def certificate(problem: Any, value: float | None) -> dict[str, float]:
    """How far a solved PEPit problem is from an exact certificate of ``value`` (its dual objective),
    each error relative to max(1, |value|), after PEPit's own ``check_feasibility``:

    * ``proof_residual``: the rebuilt proof, objective - sum_k lambda_k (constraint_k) + <G, S>, must be
      the constant ``value`` alone; the sum of |coefficients| of every other term (what the proof misses)
      and of the constant's difference from ``value``;
    * ``dual_infeasibility``: the most negative multiplier of an inequality and eigenvalue of the dual
      matrix S (a proof needs lambda >= 0 and S PSD);
    * ``primal_infeasibility``: the most negative eigenvalue of the Gram matrix G and the largest violation
      of a constraint at the solver's point (the witness must be a real instance);
    * ``duality_gap``: |value - primal objective at that point|;
    * ``error``: the largest of these.

    These are PEPit's own measures, and a heuristic, not a proven bound on the value's error: a missed
    coefficient multiplies a Gram entry, and a negative multiplier a slack, of unknown size. (Against
    Clarabel run at tolerances 1e-1 to 1e-5, the value's true relative error was 10-200 times below this
    error.) NaN everywhere, so not trusted, when the value is not finite or PEPit's internals are not what
    this reads (an untested PEPit version: constraint kinds other than equality / inequality, LMI
    constraints beside the Gram matrix, attributes missing). Call it right after the problem's solve:
    PEPit's leaf points are global, and a new ``PEP()`` resets them.
    """
    from PEPit.point import Point
    from PEPit.tools.dict_operations import prune_dict, symmetrize_dict

    unknown = dict.fromkeys((*CERTIFICATE_PARTS, "error"), float("nan"))
    if value is None or not np.isfinite(value):
        return unknown
    scale = max(1.0, abs(float(value)))
    try:
        S, G = np.asarray(problem.residual, dtype=float), np.asarray(problem.G_value, dtype=float)
        constraints = problem._list_of_prepared_constraints
        kinds = {c.equality_or_inequality for c in constraints}
        if not kinds <= {"equality", "inequality"} or problem._list_of_prepared_psd:
            return unknown  # a PEPit this was not written for, or LMIs this does not read
        inequalities = [c for c in constraints if c.equality_or_inequality == "inequality"]
        equalities = [c for c in constraints if c.equality_or_inequality == "equality"]
        combination = -np.dot(Point.list_of_leaf_points, np.dot(S, Point.list_of_leaf_points))
        for c in constraints:
            combination += c.eval_dual() * c.expression
        rebuilt = prune_dict(symmetrize_dict((problem.objective - combination).decomposition_dict))
        residual = sum(abs(float(v)) for k, v in rebuilt.items() if k != 1)
        residual += abs(float(rebuilt.get(1, 0.0)) - float(value))
        dual_bad = [-float(np.linalg.eigvalsh(S).min())] + [-float(c.eval_dual()) for c in inequalities]
        primal_bad = (
            [-float(np.linalg.eigvalsh(G).min())]
            + [float(c.eval()) for c in inequalities]
            + [abs(float(c.eval())) for c in equalities]
        )
        gap = abs(float(value) - float(problem.objective.eval()))
    except Exception:  # whatever PEPit's internals raise: not trusted, never a crash
        return unknown
    errors = {"proof_residual": residual, "dual_infeasibility": _largest(dual_bad),
              "primal_infeasibility": _largest(primal_bad), "duality_gap": gap}  # fmt: skip
    errors = {k: v / scale for k, v in errors.items()}
    parts = np.array(list(errors.values()))
    return errors | {"error": float(parts.max()) if np.isfinite(parts).all() else float("nan")}


def _largest(violations: list[float]) -> float:
    """The largest violation, 0 when none is positive; NaN when any is NaN (``max`` would drop it)."""
    values = np.asarray(violations, dtype=float)
    return float("nan") if np.isnan(values).any() else float(max(0.0, values.max(initial=0.0)))


def _solve_certified(
    problem: Any, solver: str | None, options: dict[str, Any] | None = None
) -> tuple[float | None, str, dict[str, float]]:
    """:func:`_solve`, and the :func:`certificate` of its value read at once (PEPit's leaf points are
    global: a later ``PEP()`` would reset them); returns (value, status, certificate)."""
    value, status = _solve(problem, solver, options)
    return value, status, certificate(problem, value)


def _solve(
    problem: Any, solver: str | None, options: dict[str, Any] | None = None
) -> tuple[float | None, str]:
    """Solve with cvxpy (Clarabel by default) and the solver's ``options``; returns (value, status)."""
    import cvxpy

    if options is not None and not isinstance(options, dict):
        raise InputError(
            f"solver_options = {options!r} is not a dict (expected keyword arguments for the solver)"
        )
    if solver is None:
        solver = "CLARABEL" if "CLARABEL" in cvxpy.installed_solvers() else None
    elif not isinstance(solver, str) or solver.upper() not in _sdp_solvers():  # a typo was a failed result
        raise InputError(  # with a NaN worst case (a probe of the library), as was OSQP (no SDP, a review)
            f"solver = {solver!r} is not an installed cvxpy solver of semidefinite programs (expected one "
            f"of: {', '.join(_sdp_solvers())})"
        )
    try:
        with warnings.catch_warnings():  # "Solution may be inaccurate": the status says so
            warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
            # cvxpy < 1.9 finds the shape of cp.sum by summing an uninitialised np.empty of its argument's
            # shape (cvxpy/atoms/affine/sum.py), whose garbage warns; only the shape is used
            warnings.filterwarnings("ignore", message=".* encountered in reduce", category=RuntimeWarning)
            # PEPit prints its duality-gap warning with verbose=0 too; the certificate reports it instead
            with contextlib.redirect_stdout(io.StringIO()):
                value = problem.solve(wrapper="cvxpy", solver=solver, verbose=0, **(options or {}))
    except Exception as exc:  # a solver failure is a result, not a crash
        return None, f"failed: {type(exc).__name__}: {exc}"
    status = getattr(problem.wrapper, "prob", None)
    status = getattr(status, "status", "optimal") if status is not None else "optimal"
    if value is None:  # PEPit's answer when the SDP is unbounded
        return None, f"unbounded ({status})"
    return float(value), str(status)


def _sdp_solvers() -> list[str]:
    """The installed cvxpy solvers that take PSD constraints (PEPit's problems are SDPs)."""
    from cvxpy.constraints import PSD
    from cvxpy.reductions.solvers.defines import INSTALLED_CONIC_SOLVERS, SOLVER_MAP_CONIC

    return [name for name in INSTALLED_CONIC_SOLVERS if PSD in SOLVER_MAP_CONIC[name].SUPPORTED_CONSTRAINTS]


def gram_size_estimate(nodes: int, tau1: int, rounds: int) -> int:
    """The side of the Gram matrix of :func:`dfl_worst_case`'s SDP: the initial point, per local step the N
    node gradients and the N gradients at the average model, and the N + 1 points of the end: the built
    problem's ``gram_size`` to within 1 where gossip keeps the nodes apart (38 for a ring of 4, tau1 = 2,
    2 rounds), at most this where exact averaging shares points (the complete graph: 34; tested)."""
    return 2 * nodes * tau1 * rounds + nodes + 2


def _gram_size(problem: Any) -> int:
    try:
        return int(problem.G_value.shape[0])
    except (AttributeError, TypeError):
        return 0


def gradient_descent_worst_case(
    *, L: float, eta: float, steps: int, gap: float = 1.0, metric: str = "min", solver: str | None = None
) -> float:
    """PEPit's own construction for gradient descent on one L-smooth f with f(x_0) - f(x_n) <= gap (the
    reference :func:`dfl_worst_case` must reproduce at N = 1): the worst ``min`` (PEPit's example) or
    ``average`` of ||grad f(x_t)||^2 over t = 0..steps - 1 (``average``) / t = 0..steps (``min``); NaN
    when the solve fails or its :func:`certificate` misses by more than :data:`CERTIFICATE_RTOL`."""
    PEPit = _require_pepit()
    from PEPit.functions import SmoothFunction

    problem = PEPit.PEP()
    f = problem.declare_function(SmoothFunction, L=L)
    x = problem.set_initial_point()
    g, f0 = f.oracle(x)
    terms = []
    for _ in range(steps):
        terms.append(g**2)
        if metric == "min":
            problem.set_performance_metric(g**2)
        x = x - eta * g
        g, fx = f.oracle(x)
    if metric == "min":
        problem.set_performance_metric(g**2)
    else:
        problem.set_performance_metric(_total(terms) / steps)
    problem.set_initial_condition(f0 - fx <= gap)
    value, _, proof = _solve_certified(problem, solver)
    if value is None or not proof["error"] <= CERTIFICATE_RTOL:  # a NaN error: not trusted
        return float("nan")
    return float(value)


def quadratic_lower_bound(
    *,
    tau1: int,
    tau2: int,
    rounds: int,
    eta: float,
    L: float,
    gap: float,
    metric: str = "local",
    grid: int = 400,
) -> tuple[float, float]:
    """A true instance from below: the best over a in (0, L] of F = f_i = (a / 2) ||x||^2 with
    F(u_1) - inf F = gap, where DFL is gradient descent on F (u_{s+1} = (1 - eta a) u_s at a local step,
    u unchanged by gossip): returns (value, a). Any instance's value is at most the true worst case, so
    a bound below it is violated; every f_i is L-smooth and bounded below (a > 0). ``grid``: the number of
    curvatures a tried."""
    _check_schedule(tau1, tau2, rounds, eta, L, gap, metric)
    real_number("grid", grid, low=1, integer=True)
    tau1, tau2, rounds, grid = int(tau1), int(tau2), int(rounds), int(grid)
    best, best_a = 0.0, 0.0
    total_local = rounds * tau1
    for a in np.linspace(L / grid, L, grid):
        r2 = (1 - eta * a) ** 2  # ||grad F||^2 shrinks by this factor per local step
        g0 = 2 * a * gap  # ||grad F(u_1)||^2 = a^2 ||u_1||^2 with (a / 2) ||u_1||^2 = gap
        local = g0 * sum(r2**s for s in range(total_local))
        if metric == "local":
            value = local / total_local
        else:  # each round's end model stays tau2 gossip steps
            ends = g0 * sum(r2 ** (tau1 * (k + 1)) for k in range(rounds))
            value = (local + tau2 * ends) / (rounds * (tau1 + tau2))
        if value > best:
            best, best_a = float(value), float(a)
    return best, best_a
