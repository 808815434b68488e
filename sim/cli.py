"""``dfl-sim``: run DFL / C-DFL / D-SGD / C-SGD / synchronous / local SGD, or benchmark the engine.

    dfl-sim run [--config FILE.toml] [--dataset ... --steps ... any RunConfig field] [--json]
    dfl-sim bench [--quick] [--json] [--device cpu|cuda]

``dfl-sim run`` with no arguments runs a quick version of the paper's MNIST ring experiment
(10 nodes, tau1 = tau2 = 4, label-sorted shards) and says where the results are. Bad
arguments exit with code 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, NoReturn

from bounds import InputError
from sim.runner import RunConfig, run

__all__ = ["main"]

_HELP = {
    "dataset": "mnist (shipped), cifar10 (with --data-dir) or npz:PATH",
    "model": "cnn, logreg or lstsq",
    "topology": "ring, quasi-ring, torus, ..., edges:PATH or matrix:PATH",
    "algorithm": "dfl, cdfl, dsgd, csgd, sync or local",
    "steps": "the paper's T: local and gossip steps together",
    "batch_size": "per node; 0 = full local data",
    "partition": "iid, shards, dirichlet or given",
    "compressor": "identity, rand_k, top_k, gossip or qsgd (cdfl only)",
    "compressor_param": "k (rand_k, top_k), p (gossip) or s (qsgd)",
    "t_comm": "modelled seconds of one uncompressed gossip step (scaled by message bits)",
    "lr_schedule": "constant, or cdfl: eta_k = 4 / (mu (a + k))",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _add_config_flags(p: argparse.ArgumentParser) -> None:
    for f in fields(RunConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            p.add_argument(flag, action="store_true", default=None, help=_HELP.get(f.name))
            continue
        base = str(f.type).split(" | ")[0]  # annotations are strings: "int", "float | None", ...
        kind = {"int": int, "float": float}.get(base, str)
        p.add_argument(flag, type=kind, default=None, help=_HELP.get(f.name, f"default {f.default!r}"))


def _config(args: argparse.Namespace) -> RunConfig:
    values: dict[str, Any] = {}
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            raise InputError(f"config file {str(path)!r} does not exist (expected a TOML file)")
        try:
            raw = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"config file {str(path)!r} is not valid TOML ({exc})") from None
        known = {f.name for f in fields(RunConfig)}
        for key, value in raw.items():
            name = key.replace("-", "_")
            if name not in known:
                raise InputError(
                    f"config file {str(path)!r}: unknown key {key!r} (expected RunConfig fields)"
                )
            values[name] = value
    for f in fields(RunConfig):
        value = getattr(args, f.name)
        if value is not None:
            values[f.name] = value
    return RunConfig(**values)


def _progress(step: int, total: int) -> None:
    if step == total or step % max(1, total // 100) == 0:
        filled = int(30 * step / total)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {step}/{total} steps")
        if step == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _cmd_run(args: argparse.Namespace) -> dict[str, Any]:
    config = _config(args)
    progress = _progress if sys.stderr.isatty() and not args.json else None
    return run(config, progress)


def _cmd_bench(args: argparse.Namespace) -> dict[str, Any]:
    from sim.bench import run_benchmarks

    out = run_benchmarks(quick=args.quick, device=args.device)
    if args.distributed:
        from sim.bench import distributed_benchmark

        out["distributed"] = distributed_benchmark(args.quick, "runs/bench-distributed")
    return out


def _parser() -> _Parser:
    parser = _Parser(prog="dfl-sim", description="Decentralized FL simulator (vectorised across nodes).")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    r = sub.add_parser("run", help="run one experiment (no flags: quick paper MNIST ring run)")
    r.add_argument("--config", help="TOML file of RunConfig fields (flags override it)")
    _add_config_flags(r)
    r.add_argument("--json", action="store_true", help="print one JSON object at the end")
    r.set_defaults(run=_cmd_run)
    b = sub.add_parser("bench", help="node-steps per second: vectorised engine vs reference loop")
    b.add_argument("--quick", action="store_true")
    b.add_argument("--device", default="cpu")
    b.add_argument("--distributed", action="store_true", help="also P = 1 and 2 gloo processes")
    b.add_argument("--json", action="store_true")
    b.set_defaults(run=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dfl-sim`` / ``python -m sim``; returns the exit code."""
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv or ["run"])
    if args.command is None:
        args = parser.parse_args(["run", *argv])
    try:
        out = args.run(args)
    except InputError as exc:
        print(f"dfl-sim: error: {exc}", file=sys.stderr)
        return 2
    if not out:  # a non-zero torchrun rank: rank 0 reports
        return 0
    if args.json:
        print(json.dumps(out, allow_nan=False))
    else:
        width = max(len(k) for k in out)
        print(
            "\n".join(
                f"{k:>{width}} : {v:.6g}" if isinstance(v, float) else f"{k:>{width}} : {v}"
                for k, v in out.items()
            )
        )
        if "out_dir" in out:
            print(
                f"results: {out['out_dir']}/metrics.csv (one row per logged step), config.json, summary.json"
            )
    return 0
