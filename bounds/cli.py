"""``dfl-bounds``: the theory from the command line.

Sub-commands::

    dfl-bounds topology NAME --nodes N [--weights RULE] [--json]
    dfl-bounds dfl --L --sigma2 --nodes --eta --tau1 --tau2 (--zeta Z | --topology NAME)
                   --T --gap [--beta-var B] [--heterogeneity V] [--weights RULE] [--json]
    dfl-bounds cdfl --L --mu --sigma2 --G2 --nodes --tau1 --tau2 --K (--zeta Z --beta B | --topology NAME)
                    (--delta D | --compressor NAME --compressor-param P --dim D) [--json]
    dfl-bounds compare (the dfl flags) [--mu --G2 (--delta D | --compressor ...)] [--json]
    dfl-bounds optimize --L --sigma2 --nodes --gap (--zeta Z | --topology NAME) --t-comp
                   (--t-comm S | --latency S --bandwidth B --dim D) [--budget-seconds S]
                   [--max-local-steps N] [--max-gossip-steps N] [--max-tau1 --max-tau2] [--json]
                   (--bound cdfl / cdfl-repaired: --mu --G2 --latency --bandwidth --dim [--init-dist2],
                   no --gap)
    dfl-bounds pep --L --nodes --topology NAME --tau1 --tau2 --rounds --eta --gap [--heterogeneity V]
                   [--initial lower|last] [--solver S] [--json]   (needs the "pep" extras)
    dfl-bounds expr NAME [--latex | --json]
    dfl-bounds bench [--quick] [--json]

NAME of a topology is a built-in one (ring, quasi-ring, torus, ...), ``edges:PATH``
(an edge list file) or ``matrix:PATH`` (a mixing matrix file). Bad arguments exit
with code 2 and one line on stderr saying what is wrong.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from bounds._checks import InputError, real_number
from bounds.cdfl.compression import COMPRESSORS, make_compressor
from bounds.cdfl.proposition2 import cdfl_bound
from bounds.cli_tools import OneLineParser, cli_entry, key_value_table
from bounds.dfl import symbolic
from bounds.dfl.proposition1 import dfl_bound
from bounds.graph.mixing import RULES, as_dense, topology_matrix
from bounds.graph.spectral import spectral_summary, zeta
from bounds.graph.topologies import TOPOLOGIES
from bounds.plan.compare import compare_methods
from bounds.plan.cost import CostModel
from bounds.plan.optimize import ALIASES, BOUNDS, OptimizeResult, optimize_dfl
from bounds.plan.optimize_cdfl import optimize_cdfl
from bounds.serialize import jsonable

__all__ = ["main"]


ZETA_ONLY_FROM_NODES = 5000  # --spectrum auto: above this (sparse C) only zeta, by Lanczos on C - J


def _cmd_topology(args: argparse.Namespace) -> dict[str, Any]:
    start = time.perf_counter()
    C = topology_matrix(args.name, args.nodes, args.weights, args.seed)
    n = C.shape[0]
    if args.nodes is not None and n != args.nodes:
        raise InputError(f"--nodes {args.nodes} but the file has {n} nodes")
    if args.spectrum == "zeta" or (args.spectrum == "auto" and n > ZETA_ONLY_FROM_NODES):
        z = zeta(C)
        method = "zeta only (Lanczos on C - J); --spectrum full adds lambda_2, lambda_N, beta"
        summary = {"nodes": n, "zeta": z, "rho": 1 - z, "method": method}
    else:
        summary = spectral_summary(C).to_dict()
    return {
        "topology": args.name,
        "weights": _weights_used(args.name, args.weights),
        **summary,
        "seconds": round(time.perf_counter() - start, 4),
    }


def _weights_used(topology: str, weights: str) -> str:
    """The weight rule a result reports: a matrix:PATH has its own weights, not the (unused) default rule."""
    return "matrix file" if str(topology).startswith("matrix:") else weights


def _cmd_dfl(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    z = _zeta_of(args, out, beta=False)
    result = dfl_bound(**_arguments(dfl_bound, args, zeta=z))
    out["zeta"] = z
    out.update(result.to_dict())
    out.pop("inputs")
    return out


CLI_NAMES = {"N": "nodes", "sigma2_bar": "sigma2"}
"""Keyword arguments of the library whose command-line option has another name."""


def _arguments(fn: Callable[..., Any], args: argparse.Namespace, **given: Any) -> dict[str, Any]:
    """The keyword arguments of ``fn`` from the parsed options (``given`` values win), one mapping for
    every command: a parameter takes the option of its own name, or of its name in ``CLI_NAMES``."""
    out = {}
    for name in inspect.signature(fn).parameters:
        option = CLI_NAMES.get(name, name)
        if name in given:
            out[name] = given[name]
        elif hasattr(args, option):
            out[name] = getattr(args, option)
    return out


def _zeta_of(args: argparse.Namespace, out: dict[str, Any], beta: bool = True) -> float:
    """zeta from --zeta, or from --topology (recording the topology and beta_mix in ``out``). Without
    ``beta`` (a DFL bound needs zeta alone), above ZETA_ONLY_FROM_NODES nodes only zeta is computed, as
    ``dfl-bounds topology`` does: lambda_N by Lanczos took minutes on a 10^5 ring, and beta_mix is then not
    in ``out``."""
    if args.topology is None:
        if args.nodes == 1 and args.zeta != 0:  # (the library takes N = 1 for a shared noise, at any zeta)
            raise InputError(
                f"--zeta {args.zeta:g} with --nodes 1 (expected --zeta 0: one node's C = [[1]] has no other "
                "eigenvalue)"
            )
        if getattr(args, "beta", None) is not None:
            out["beta_mix"] = args.beta
        return args.zeta + 0.0  # (-0.0 printed 'zeta : -0')
    if getattr(args, "beta", None) is not None:
        raise InputError(
            f"--beta {args.beta:g} and --topology: the topology gives beta_mix (expected one of them)"
        )
    C = topology_matrix(args.topology, args.nodes, args.weights, args.seed)
    if C.shape[0] != args.nodes:
        raise InputError(f"--nodes {args.nodes} but topology {args.topology!r} has {C.shape[0]} nodes")
    out.update(topology=args.topology, weights=_weights_used(args.topology, args.weights))
    if not beta and C.shape[0] > ZETA_ONLY_FROM_NODES:
        return zeta(C)
    summary = spectral_summary(C)
    out["beta_mix"] = summary.beta_mix
    return summary.zeta


def _cmd_optimize(args: argparse.Namespace) -> dict[str, Any]:
    if args.heterogeneity is not None:  # its own range first (nan was told it needs --bound non-iid)
        real_number("heterogeneity", args.heterogeneity, low=0)
    if args.heterogeneity and ALIASES.get(args.bound, args.bound) != "non-iid":
        raise InputError(
            f"--heterogeneity {args.heterogeneity:g} needs --bound non-iid (the bound {args.bound!r} has no "
            "heterogeneity term)"
        )
    if args.bound in ("cdfl", "cdfl-repaired"):
        return _optimize_cdfl(args)
    if args.gap is None:
        raise InputError(f"--bound {args.bound} needs --gap (F(u_1) - F_inf)")
    if args.compressor is not None:
        raise InputError(
            f"--compressor {args.compressor}: Proposition 1 assumes exact gossip, so compression would only "
            "change the cost, not the bound (use --bound cdfl to optimise C-DFL with Lemma 13)"
        )
    if args.t_comm is not None and (args.latency is not None or args.bandwidth is not None):
        raise InputError(
            "--t-comm and --latency/--bandwidth both give the gossip cost (expected one of them)"
        )
    if args.t_comm is not None:
        cost = CostModel(args.t_comp, args.t_comm)
    elif None not in (args.latency, args.bandwidth, args.dim):
        cost = CostModel.from_network(
            args.t_comp, latency=args.latency, bandwidth=args.bandwidth, dim=args.dim
        )
    else:
        raise InputError(
            "the gossip cost is missing (expected --t-comm, or --latency, --bandwidth and --dim)"
        )
    out: dict[str, Any] = {}
    z = _zeta_of(args, out, beta=False)
    result = optimize_dfl(**_arguments(optimize_dfl, args, zeta=z, cost=cost, C=None))
    _require_success(result)
    used = ALIASES.get(args.bound, args.bound)
    out.update(zeta=z, t_comp=cost.t_comp, t_comm=cost.t_comm, bound_used=used, **result.to_dict())
    return out


def _optimize_cdfl(args: argparse.Namespace) -> dict[str, Any]:
    missing = [
        f
        for f, v in (
            ("--mu", args.mu),
            ("--G2", args.G2),
            ("--dim", args.dim),
            ("--latency", args.latency),
            ("--bandwidth", args.bandwidth),
        )
        if v is None
    ]
    if missing:
        raise InputError(
            f"--bound {args.bound} needs {', '.join(missing)} (compression changes the cost through "
            "message bits / bandwidth)"
        )
    out: dict[str, Any] = {}
    zeta = _zeta_of(args, out)
    if "beta_mix" not in out:
        raise InputError("beta = ||I - C||_2 is missing (expected --beta with --zeta, or --topology)")
    candidates = None
    if args.compressor is not None:
        candidates = [(args.compressor, args.compressor_param)]
    repaired = args.bound == "cdfl-repaired"
    given = dict(
        zeta=zeta, beta_mix=out["beta_mix"], candidates=candidates, bound="repaired" if repaired else "paper"
    )
    result = optimize_cdfl(**_arguments(optimize_cdfl, args, **given))
    _require_success(result)
    best = result.grid_frame().sort_values("bound", kind="stable").iloc[0]
    found = {k: v for k, v in result.to_dict().items() if k not in result.when_set}
    out.update(
        zeta=zeta,
        bound_used="cdfl (Lemma 13, its last step repaired)" if repaired else "cdfl (Lemma 13)",
        compressor=result.compressor,
        compressor_param=result.parameter,  # None for identity
        delta=result.delta,
        bits_per_message=float(best["bits_per_message"]),
        **found,
    )
    return out


def _require_success(result: OptimizeResult) -> None:
    """The CLI reports an optimisation that found nothing as an error (exit 2) naming why."""
    if not result.success:
        raise InputError(result.message)


def _delta_of(args: argparse.Namespace, out: dict[str, Any]) -> float:
    """delta from --delta, or from --compressor NAME --compressor-param P --dim D."""
    if args.compressor is None:
        if args.delta is None:
            raise InputError("the compression ratio is missing (expected --delta, or --compressor and --dim)")
        return args.delta
    if args.delta is not None:
        raise InputError(
            f"--delta {args.delta:g} and --compressor: the compressor gives delta (expected one of them)"
        )
    if args.dim is None:
        raise InputError(f"--compressor {args.compressor} needs --dim (the model dimension d)")
    q = make_compressor(args.compressor, args.compressor_param)
    out.update(
        compressor=args.compressor, compressor_param=args.compressor_param, bits_per_message=q.bits(args.dim)
    )
    return q.delta(args.dim)


def _cdfl_extras(args: argparse.Namespace, out: dict[str, Any]) -> dict[str, Any]:
    if "beta_mix" not in out:
        raise InputError("beta = ||I - C||_2 is missing (expected --beta with --zeta, or --topology)")
    return dict(mu=args.mu, G2=args.G2, delta=_delta_of(args, out), beta_mix=out["beta_mix"])


def _cmd_cdfl(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    zeta = _zeta_of(args, out)
    extras = _cdfl_extras(args, out)
    result = cdfl_bound(**_arguments(cdfl_bound, args, zeta=zeta, **extras))
    out.update(zeta=zeta, delta=extras["delta"], **result.to_dict())
    out.pop("inputs")
    return out


def _cmd_compare(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    zeta = _zeta_of(args, out, beta=args.mu is not None)  # (C-DFL's row needs beta_mix)
    cdfl = _cdfl_extras(args, out) if args.mu is not None else None
    rows = compare_methods(
        L=args.L,
        sigma2=args.sigma2,
        N=args.nodes,
        eta=args.eta,
        tau1=args.tau1,
        tau2=args.tau2,
        zeta=zeta,
        T=args.T,
        gap=args.gap,
        cdfl=cdfl,
    )
    return {**out, "zeta": zeta, "rows": rows}


def _cmd_pep(args: argparse.Namespace) -> dict[str, Any]:
    """The worst case of each bound's own left side (local steps: the repairs; all T steps: the paper's)."""
    from bounds.pep import dfl_worst_case  # needs the optional group "pep"

    C = topology_matrix(args.topology, args.nodes, args.weights, args.seed)
    C = as_dense(C)
    if C.shape[0] != args.nodes:
        raise InputError(f"--nodes {args.nodes} but topology {args.topology!r} has {C.shape[0]} nodes")
    schedule = {"tau1": args.tau1, "tau2": args.tau2, "eta": args.eta, "L": args.L, "gap": args.gap,
                "rounds": args.rounds, "heterogeneity": args.heterogeneity, "initial": args.initial,
                "solver": args.solver}  # fmt: skip
    if args.max_gram is not None:
        schedule["max_gram"] = args.max_gram
    local, every = (dfl_worst_case(C, metric=m, **schedule) for m in ("local", "all"))
    for result in (local, every):
        if not result.success:
            raise InputError(f"pep: {result.message}")
    z = zeta(C)
    T = args.rounds * (args.tau1 + args.tau2)
    bound = dfl_bound(L=args.L, sigma2=0.0, N=args.nodes, eta=args.eta, tau1=args.tau1, tau2=args.tau2,
                      zeta=z, T=T, gap=args.gap, heterogeneity=args.heterogeneity)  # fmt: skip
    non_iid = args.heterogeneity > 0
    repaired = float(bound.bound_non_iid if non_iid else bound.bound_repaired)
    return {
        "worst_case": local.worst_case, "worst_case_all_steps": every.worst_case,
        "solver_status": local.solver_status, "solver_status_all_steps": every.solver_status,
        "certificate_error": local.certificate["error"],
        "certificate_error_all_steps": every.certificate["error"],
        "seconds": local.seconds + every.seconds, "initial": local.initial, "zeta": z, "T": T,
        "bound_repaired": repaired, "bound_paper": float(bound.bound),
        "ratio_repaired": repaired / local.worst_case, "ratio_paper": float(bound.bound) / every.worst_case,
        "eta_condition_ok": bool(bound.non_iid_condition_ok if non_iid else bound.eta_condition_ok),
        "gram_size": local.gram_size,
    }  # fmt: skip


def _cmd_bench(args: argparse.Namespace) -> dict[str, Any]:
    from bounds.bench import run_benchmarks

    return run_benchmarks(quick=args.quick)


def _cmd_expr(args: argparse.Namespace) -> str | dict[str, Any]:
    """The expression in Unicode, or its LaTeX; ``--json``: as text, exact (``srepr``), LaTeX, symbols."""
    if args.json:
        if args.latex:
            raise InputError("--latex has no effect with --json, which holds the LaTeX (expected either)")
        import sympy

        expression = symbolic.expression(args.name)
        return {
            "name": args.name,
            "expression": str(expression),  # to read ('sigma^2' is one symbol's name: not for sympify)
            "srepr": sympy.srepr(expression),  # exact: sympy.sympify gives the expression back
            "latex": symbolic.latex(args.name),
            "symbols": sorted(str(x) for x in expression.free_symbols),
        }
    return symbolic.latex(args.name) if args.latex else symbolic.pretty(args.name)


def _count(text: str) -> int | float:
    """A number as given: an integer literal stays an exact int (as a float, 2^53 + 1 became 2^53 before the
    range check saw it), anything else a float (1e6)."""
    try:
        return int(text)
    except ValueError:
        return float(text)


_count.__name__ = "number"  # argparse's "invalid number value: 'abc'"


_FLAGS: dict[str, tuple[Callable[[str], Any], str]] = {
    "--L": (float, "smoothness constant L"),
    "--sigma2": (float, "gradient-noise variance sigma^2 (C-DFL: the mean sigma_bar^2)"),
    "--nodes": (int, "number of nodes N"),
    "--eta": (float, "learning rate eta"),
    "--tau1": (int, "local steps per round"),
    "--tau2": (int, "gossip steps per round"),
    "--T": (_count, "total steps T (local and gossip)"),
    "--gap": (float, "F(u_1) - F_inf"),
    "--K": (int, "number of rounds K"),
    "--t-comp": (float, "seconds per local step"),
}


def _command(
    sub: Any, name: str, text: str, run: Any, required: tuple[str, ...] = ()
) -> argparse.ArgumentParser:
    """A sub-command with its required numeric flags and --json."""
    p = sub.add_parser(name, help=text)
    for flag in required:
        kind, help_text = _FLAGS[flag]
        p.add_argument(flag, type=kind, required=True, help=help_text)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)
    return p


def _add_graph(p: argparse.ArgumentParser, *, with_choice: bool = True) -> None:
    """--zeta | --topology (when ``with_choice``), and the weight rule and seed of a topology."""
    if with_choice:
        which = p.add_mutually_exclusive_group(required=True)
        which.add_argument("--zeta", type=float, help="zeta in [0, 1]")
        which.add_argument("--topology", help="topology name, edges:PATH or matrix:PATH")
    p.add_argument(
        "--weights",
        choices=RULES,
        help="weight rule for a graph (default: the paper's equal weights)",
    )
    p.add_argument("--seed", type=int, help="seed of erdos-renyi (default 0)")


def _add_cdfl(p: argparse.ArgumentParser, *, required: bool) -> None:
    """The inputs Lemma 13 needs beyond Proposition 1's."""
    p.add_argument("--mu", type=float, required=required, help="strong-convexity constant mu")
    p.add_argument("--G2", type=float, required=required, help="bound G^2 on E||g||^2")
    p.add_argument(
        "--beta-mix", "--beta", dest="beta", type=float, help="beta_mix = ||I - C||_2 when --zeta is given"
    )
    p.add_argument("--delta", type=float, help="compression ratio delta in (0, 1]")
    p.add_argument("--compressor", choices=COMPRESSORS, help="compression operator (gives delta)")
    p.add_argument("--compressor-param", type=float, help="k (rand_k, top_k), p (gossip) or s (qsgd)")
    p.add_argument("--dim", type=int, help="model dimension d")


def _build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="dfl-bounds",
        description="Bounds of the DFL paper: topologies, spectra, "
        "Propositions 1 and 2, budget optimisation.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    topo = _command(sub, "topology", "zeta, rho, beta of a topology", _cmd_topology)
    topo.add_argument("name", help=f"one of {', '.join(TOPOLOGIES)}, edges:PATH or matrix:PATH")
    topo.add_argument("--nodes", type=int, help="number of nodes N")
    topo.add_argument(
        "--spectrum",
        choices=("auto", "full", "zeta"),
        default="auto",
        help=f"full: lambda_2, lambda_N, zeta, rho, beta; zeta: zeta and rho only (fast on large sparse "
        f"graphs); auto (default): full up to {ZETA_ONLY_FROM_NODES} nodes",
    )
    _add_graph(topo, with_choice=False)

    proposition1 = ("--L", "--sigma2", "--nodes", "--eta", "--tau1", "--tau2", "--T", "--gap")
    dfl = _command(sub, "dfl", "Proposition 1: bound, terms, step-size condition", _cmd_dfl, proposition1)
    _add_graph(dfl)
    dfl.add_argument(
        "--beta-var", type=float, default=0.0, help="variance-growth parameter of Lemma 2 (default 0)"
    )
    dfl.add_argument(
        "--heterogeneity",
        type=float,
        default=0.0,
        metavar="V",
        help="varsigma^2 >= 0 of non-i.i.d. data, (1/N) sum_i ||grad f_i - grad F||^2 <= V (default 0). "
        "Adds heterogeneity_term, drift_term_paper and drift_term_repaired: each bounds L^2 times the "
        "mean over the local steps of ||X_t (I - J)||_F^2 / N (drift_term_paper is the paper's term, "
        "with no heterogeneity part), and bound_non_iid, valid when non_iid_condition_ok",
    )

    cdfl = _command(
        sub,
        "cdfl",
        "Proposition 2 / Lemma 13: C-DFL bound, terms, conditions",
        _cmd_cdfl,
        ("--L", "--sigma2", "--nodes", "--tau1", "--tau2", "--K"),
    )
    _add_graph(cdfl)
    _add_cdfl(cdfl, required=True)
    cdfl.add_argument("--a", type=float, help="shift of eta_k = 4 / (mu (a + k)) (default: smallest valid)")
    cdfl.add_argument("--theta", type=float, help="Remark 10's theta (default p / (2 (1 - p)))")
    cdfl.add_argument("--alpha", type=float, default=1.0, help="alpha_k of Lemma 8 (default 1)")
    cdfl.add_argument("--init-dist2", type=float, help="||u0 - u*||^2 (default (2 G / mu)^2)")

    compare = _command(
        sub, "compare", "DFL, C-SGD, D-SGD, local and synchronous SGD (and C-DFL)", _cmd_compare, proposition1
    )
    _add_graph(compare)
    _add_cdfl(compare, required=False)

    opt = _command(
        sub,
        "optimize",
        "best (tau1, tau2, eta) under a time or step budget",
        _cmd_optimize,
        ("--L", "--sigma2", "--nodes", "--t-comp"),
    )
    opt.add_argument("--gap", type=float, help="F(u_1) - F_inf (every bound but cdfl and cdfl-repaired)")
    opt.add_argument(
        "--init-dist2", type=float, help="||u0 - u*||^2 of --bound cdfl, cdfl-repaired (default (2G/mu)^2)"
    )
    _add_graph(opt)
    _add_cdfl(opt, required=False)
    opt.add_argument("--t-comm", type=float, help="seconds per gossip step")
    opt.add_argument("--latency", type=float, help="seconds of latency per gossip step")
    opt.add_argument("--bandwidth", type=float, help="bits per second")
    opt.add_argument("--budget-seconds", type=float, help="wall-clock budget in seconds")
    opt.add_argument("--max-local-steps", type=int, help="cap on local steps")
    opt.add_argument("--max-gossip-steps", type=int, help="cap on gossip steps")
    opt.add_argument("--max-tau1", type=int, default=50, help="largest tau1 tried (default 50)")
    opt.add_argument("--max-tau2", type=int, default=50, help="largest tau2 tried (default 50)")
    opt.add_argument(
        "--bound",
        choices=(*BOUNDS, *ALIASES, "cdfl", "cdfl-repaired"),
        default="repaired",
        help="repaired (default: our repair of Proposition 1, average over local steps), non-iid (the repair "
        "with the heterogeneity term of non-i.i.d. data, --heterogeneity), paper (Proposition 1 as stated, "
        "refuted; alias proposition1), corrected (refuted too), cdfl (Lemma 13, over compressors too) or "
        "cdfl-repaired (Lemma 13's last step at its own step size: README Finding 12)",
    )
    opt.add_argument("--heterogeneity", type=float, default=0.0, metavar="V",
                     help="varsigma^2 of non-i.i.d. data, (1/N) sum_i ||grad f_i - grad F||^2 <= V, for "
                     "--bound non-iid (default 0)")  # fmt: skip

    pep = _command(
        sub,
        "pep",
        "exact worst case of deterministic DFL by performance estimation (needs the 'pep' extras)",
        _cmd_pep,
        ("--L", "--nodes", "--tau1", "--tau2", "--eta", "--gap"),
    )
    pep.add_argument("--topology", required=True, help="topology name, edges:PATH or matrix:PATH")
    _add_graph(pep, with_choice=False)
    pep.add_argument("--rounds", type=int, required=True, help="number of rounds K")
    pep.add_argument("--heterogeneity", type=float, default=0.0, metavar="V",
                     help="varsigma^2: (1/N) sum_i ||grad f_i - grad F||^2 <= V at the local steps' "
                     "average models (default 0)")  # fmt: skip
    pep.add_argument("--initial", choices=("lower", "last"), default="lower",
                     help="lower (default): F(u_1) - F(x_*) <= gap with F(x_*) below F at every evaluated "
                     "average model; last: F(u_1) - F(u_end) <= gap (PEPit's convention)")  # fmt: skip
    pep.add_argument("--solver", help="cvxpy solver (default CLARABEL)")
    pep.add_argument("--max-gram", type=int, default=None, metavar="G",
                     help="largest Gram matrix side to build, 2 N tau1 rounds + N + 2 (default 150: "
                     "minutes on 2 cores; the solve time grows about as its size^3.5)")  # fmt: skip

    bench = _command(sub, "bench", "time zeta on large graphs, bound grids and the optimiser", _cmd_bench)
    bench.add_argument("--quick", action="store_true", help="smaller sizes, one repeat")

    expr = sub.add_parser("expr", help="a formula as a sympy expression")
    expr.add_argument("name", choices=symbolic.EXPRESSIONS)
    expr.add_argument("--latex", action="store_true", help="print LaTeX")
    expr.add_argument("--json", action="store_true", help="print one JSON object: the expression, its LaTeX")
    expr.set_defaults(run=_cmd_expr)
    return parser


def _refuse_without_effect(args: argparse.Namespace) -> None:
    """InputError for a flag given that the command would not read (it used to be dropped in silence:
    ``compare --delta 7`` without --mu, ``optimize --beta -5`` for a DFL bound, ``--weights`` with a
    matrix file); then the graph flags' defaults (paper weights, seed 0)."""
    given = lambda name: getattr(args, name, None) is not None  # noqa: E731
    unused: list[tuple[str, str]] = []
    graph = getattr(args, "name", None) if args.command == "topology" else getattr(args, "topology", None)
    if hasattr(args, "weights"):
        if graph is None:
            unused += [(n, "--zeta gives zeta itself: no graph is built") for n in ("weights", "seed")]
        elif str(graph).startswith("matrix:"):
            unused += [(n, "a matrix:PATH gives C itself") for n in ("weights", "seed")]
        elif graph != "erdos-renyi":
            unused.append(("seed", "only erdos-renyi draws its graph"))
    cdfl_flags = ("mu", "G2", "beta", "delta", "compressor", "compressor_param", "dim")
    if args.command == "compare" and not given("mu"):
        unused += [(n, "only the C-DFL row reads it, which needs --mu") for n in cdfl_flags if n != "mu"]
    elif args.command == "optimize" and args.bound not in ("cdfl", "cdfl-repaired"):
        # (--compressor has its own message: Proposition 1 assumes exact gossip)
        unused += [(n, f"only --bound cdfl reads it (got --bound {args.bound})") for n in cdfl_flags[:4]]
        unused.append(("init_dist2", f"only --bound cdfl reads it (got --bound {args.bound})"))
        if given("t_comm") and not (given("latency") or given("bandwidth")):  # (both: refused as such)
            unused.append(("dim", "--t-comm gives the gossip cost (--dim prices bits with --bandwidth)"))
    elif args.command == "optimize":
        unused.append(("t_comm", "--bound cdfl prices gossip as --latency + message bits / --bandwidth"))
        unused.append(("delta", "--bound cdfl takes delta from each compressor it tries"))
        unused.append(("gap", "Lemma 13 bounds F(w) - F* from ||u0 - u*||^2 (--init-dist2), not the gap"))
    if args.command in ("cdfl", "compare", "optimize") and not given("compressor"):
        unused.append(("compressor_param", "only --compressor reads it"))
        if args.command != "optimize":
            unused.append(("dim", "only --compressor reads it (its bits and delta)"))
    for name, why in unused:
        if given(name):
            flag = "--" + name.replace("_", "-")
            raise InputError(f"{flag} {getattr(args, name)} has no effect: {why} (expected it left out)")
    if hasattr(args, "weights"):
        args.weights = "paper" if args.weights is None else args.weights
        args.seed = 0 if args.seed is None else args.seed


@cli_entry("dfl-bounds")
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dfl-bounds`` / ``python -m bounds``; returns the exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        _refuse_without_effect(args)
        out = args.run(args)
    except InputError as exc:
        print(f"dfl-bounds: error: {exc}", file=sys.stderr)
        return 2
    if isinstance(out, str):
        print(out)
    elif args.json:
        print(json.dumps(jsonable(out), allow_nan=False))
    else:
        print(key_value_table(out))
    return 0
