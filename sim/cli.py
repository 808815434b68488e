"""``dfl-sim``: run DFL / C-DFL / D-SGD / C-SGD / synchronous / local SGD, or benchmark the engine.

    dfl-sim run [--config FILE.toml] [--dataset ... --steps ... any RunConfig field] [--json]
    dfl-sim plan --budget-seconds S [--t-comp --t-comm] [--top K --others K --seeds S --bound NAME]
                 [--eta-scales S1 S2 ...: each configuration also at those multiples of its eta]
                 [the run flags: --dataset --model --partition --topology --nodes ... --eta to fix eta]
    dfl-sim plan --algorithm cdfl --budget-bits B --mu MU --G2 G [...]   (C-DFL, Lemma 13)
    dfl-sim sweep GRID.toml [--out DIR] [--resume] [--json]   (a grid of runs stacked as one sweep)
    dfl-sim bench [--quick] [--json] [--device cpu|cuda] [--threads T]
    dfl-sim versus gossipy [--nodes N [N ...]] [--node-steps S] [--repeats K] [--threads T]
                           [--dataset mnist|cifar10 --data-dir DIR] [--json]   (against another simulator)

``dfl-sim run`` with no arguments runs a quick version of the paper's MNIST ring experiment
(10 nodes, tau1 = tau2 = 4, label-sorted shards) and says where the results are. Bad
arguments exit with code 2 and one line on stderr; a run that diverged exits with 3 (its records
kept), an interrupted one with 130.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bounds import InputError
from bounds.cli_tools import (
    OneLineParser,
    bar_interval,
    cli_entry,
    counted,
    key_value_table,
    writable_folder,
)
from bounds.serialize import jsonable
from sim.config import PLAN_CHOOSES, RunConfig, config_file_values
from sim.errors import RunInterrupted, SimulationError
from sim.host import automatic_threads, check_threads, retain_freed_memory
from sim.interrupt import checkpoint_on_interrupt
from sim.run_folder import (
    check_path_length,
    lock_folders,
    refuse_interrupted,
    refuse_other_kind,
    release_folders,
)

if TYPE_CHECKING:
    from sim.grid import GridPoint

__all__ = ["main"]

_HELP = {
    "dataset": "mnist (shipped, the default), cifar10 (with --data-dir) or npz:PATH (x_train, y_train, "
    "x_test, y_test and optionally node)",
    "data_dir": "the data set's folder: cifar-10-batches-py's (cifar10, required) or MNIST's idx files "
    "(mnist; default: the copy shipped with dflkit)",
    "model": "cnn (the paper's CNN for the data set, default), logreg or lstsq",
    "nodes": "number of nodes N (default 10)",
    "topology": "ring (default), quasi-ring, torus, complete, star, path, hypercube, exponential, "
    "erdos-renyi, edges:PATH or matrix:PATH",
    "weights": "mixing weights: paper (default), metropolis, max-degree or lazy",
    "algorithm": "dfl (default), cdfl, dsgd, csgd, sync or local",
    "tau1": "local steps per round (default 4)",
    "tau2": "gossip steps per round (default 4)",
    "eta": "learning rate (default 0.05)",
    "lr_schedule": "constant (default), or cdfl: eta_k = 4 / (mu (a + k))",
    "mu": "strong convexity mu of the cdfl schedule",
    "a": "offset a of the cdfl schedule",
    "gamma": "consensus step size of CHOCO-G, 0 < gamma <= 1 (cdfl; default 1)",
    "compressor": "identity (default), rand_k, top_k, gossip or qsgd (cdfl only)",
    "compressor_param": "k (rand_k, top_k), p (gossip) or s (qsgd)",
    "steps": "the paper's T: local and gossip steps together (default 400)",
    "batch_size": "mini-batch per node; 0 = full local data (default 32)",
    "partition": "iid, shards (default: label-sorted shards, as the paper), dirichlet or given",
    "alpha": "Dirichlet concentration of --partition dirichlet (default 0.5)",
    "seed": "random seed, an integer >= 0 (default 0)",
    "device": "cpu (default), cuda or cuda:INDEX",
    "tf32": "on CUDA, let convolutions and matrix products round to TF32 (10 mantissa bits; faster on "
    "Ampere and later GPUs; default: float32, as on the CPU)",
    "out": "run folder (default runs/latest); a fresh run replaces an earlier run's files there",
    "log_every": "write a metrics.csv row every this many steps (default 20)",
    "eval_samples": "training and test samples used for the logged metrics (default 500)",
    "t_comp": "modelled seconds of one local step (default 1)",
    "t_comm": "modelled seconds of one uncompressed gossip step, scaled by message bits (default 1)",
    "latency": "modelled seconds of latency per gossip step (with --bandwidth, replaces --t-comm)",
    "bandwidth": "modelled bits per second (with --latency, replaces --t-comm)",
    "checkpoint_every": "write checkpoint.pt every this many steps (default 100)",
    "checkpoint_seconds": "and at least every this many seconds (default 60)",
    "save_params": "write the final node models to params.npz",
    "init_params": "start every node from the average of the node models in this params.npz (from "
    "--save-params; any number of nodes)",
    "resume": "continue from the checkpoint in --out (refused if the settings differ, but --steps)",
    "allow_change": "with --resume: fields that may differ from the checkpoint's (comma-separated: eta, "
    "t_comp, t_comm, latency, bandwidth, log_every; --steps may always grow)",
    "backend": "local (default) or distributed (gloo processes)",
    "world_size": "processes of --backend distributed (default 1)",
    "timeout": "seconds a distributed process waits for the others (default 60)",
    "threads": "torch threads (default 0: the free cores, those this process may use less those busy "
    "now; OMP_NUM_THREADS wins); with --backend distributed, of each process (default: the cores / "
    "--world-size)",
}


PLAN_IGNORES = ("steps", "resume", "allow_change", "checkpoint_every", "checkpoint_seconds", "save_params",
                "backend", "world_size", "timeout", "latency", "bandwidth")  # fmt: skip
"""Run flags ``dfl-sim plan`` does not take: it sets them for each simulation (with PLAN_CHOOSES), or its
cost model has no place for them (a gossip step costs --t-comm)."""


CONFIG_HELP = "TOML file of RunConfig fields, or a run's config.json to repeat it (flags override it)"
RESUME_HINT = "the same command with --resume continues it"
NOTHING_KEPT_HINT = "the same command starts it again"
RUN_RESULTS = "metrics.csv (one row per logged step), config.json, summary.json"
PLAN_RESULTS = (
    "table.csv (one row per simulated configuration), ranking.csv, simulations.csv, plan_result.json, "
    "plan-predicted-vs-measured.png, plan-loss-vs-gossip.png; runs/ (one folder per simulation)"
)


def _add_config_flags(
    p: argparse.ArgumentParser, leave_out: Sequence[str] = (), helps: dict[str, str] | None = None
) -> None:
    """A flag per RunConfig field but ``leave_out``; ``helps`` replaces help texts for this command."""
    helps = {**_HELP, **(helps or {})}
    for f in fields(RunConfig):
        if f.name in leave_out:
            continue
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            p.add_argument(flag, action="store_true", default=None, help=helps[f.name])
            continue
        base = str(f.type).split(" | ")[0]  # annotations are strings: "int", "float | None", ...
        kind = {"int": int, "float": float}.get(base, str)
        p.add_argument(flag, type=kind, default=None, help=helps[f.name])


def _config(
    args: argparse.Namespace, chosen_by_command: Sequence[str] = (), file_values: dict[str, Any] | None = None
) -> RunConfig:
    """The RunConfig of the --config file and the flags given (which win), validated. A flag that would
    change nothing beside the others (``--alpha`` without ``--partition dirichlet``, ...) is refused;
    ``chosen_by_command``: fields the command sets itself (``dfl-sim plan``'s), not checked; ``file_values``:
    the --config file's values where the caller has read them already (the file is read once: it may
    change between two reads)."""
    if file_values is None and args.config:
        file_values = config_file_values(args.config, bool(getattr(args, "resume", False)))
    values = dict(file_values or {})
    given = [f.name for f in fields(RunConfig) if getattr(args, f.name, None) is not None]
    values.update({name: getattr(args, name) for name in given})
    config = RunConfig(**values)
    config.validate()  # a bad value is refused before torch loads (seconds)
    check_threads(config.threads)
    for name, why in config.without_effect(set(given) - set(chosen_by_command)):
        flag = "--" + name.replace("_", "-")
        raise InputError(f"{flag} {getattr(config, name)} has no effect: {why} (expected it left out)")
    return config


class _Progress:
    """Progress on stderr: a bar on a terminal; elsewhere (a log file, CI) one line every ``every`` s."""

    def __init__(self, tty: bool, every: float = 10.0) -> None:
        self.tty, self.every = tty, every
        self.start = self.last = time.perf_counter()

    def __call__(self, step: int, total: int, loss: float | None = None) -> None:
        now = time.perf_counter()
        if self.tty:
            if step == total or step % max(1, total // 100) == 0:
                filled = int(30 * step / total)
                sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {step}/{total} steps")
                sys.stderr.write("\n" if step == total else "")
                sys.stderr.flush()
            return
        if now - self.last >= self.every or (step == total and now - self.start >= self.every):
            self.last = now
            elapsed = now - self.start
            eta = elapsed / step * (total - step) if step else float("nan")
            shown = f", mini-batch loss {loss:.4g}" if loss is not None else ""
            print(
                f"dfl-sim: step {step}/{total} ({step / total:.0%}){shown}, {elapsed:.0f} s elapsed, "
                f"about {eta:.0f} s left",
                file=sys.stderr,
                flush=True,
            )


def _cmd_run(args: argparse.Namespace) -> dict[str, Any]:
    config = _config(args)
    if not config.resume:
        refuse_interrupted([Path(config.out)], "--resume continues it")

    from sim.runner import run

    if config.backend == "local":
        _refuse_copies_under_torchrun("run with backend = 'local'")
    if config.backend == "distributed":  # the launcher (or a torchrun rank) asks its processes to stop after
        with checkpoint_on_interrupt():  # a step, all the same one, checkpointed (sim.distributed)
            return run(config)
    if config.threads == 0:
        config.threads = automatic_threads()
    with checkpoint_on_interrupt():
        return run(config, _Progress(tty=sys.stderr.isatty() and not args.json))


def _refuse_copies_under_torchrun(what: str) -> None:
    """InputError in a process torchrun started among others (RANK, WORLD_SIZE > 1), for ``what`` is not a
    distributed run: each of the processes ran the whole of it into the same --out (one after another, or
    refused by the folder's lock)."""
    from sim.host import torchrun_rank_and_world

    try:
        launched = torchrun_rank_and_world()
    except InputError:  # malformed: not torchrun's, and nothing this command reads (a review)
        return
    if launched and launched[1] > 1:
        rank, world = launched
        raise InputError(
            f"a {what} in a process torchrun started (RANK = {rank}, WORLD_SIZE = {world}): each of the "
            f"{world} processes would run the whole of it into the same --out (expected one process; only "
            f"dfl-sim run --backend distributed --world-size {world} shares its work among them)"
        )


def _cmd_plan(args: argparse.Namespace) -> dict[str, Any]:
    from tqdm import tqdm

    from sim.plan import PlanSettings, plan

    _refuse_copies_under_torchrun("plan")

    # mu: the C-DFL plan's own --mu (a DFL plan's settings refuse it as that, not as lr_schedule's)
    given = config_file_values(args.config) if args.config else {}
    config = _config(args, chosen_by_command=(*PLAN_CHOOSES, "mu"), file_values=given)
    if args.config:  # a file's tau1 = 8 was dropped without a word
        default = RunConfig()
        chosen = [k for k in (*PLAN_CHOOSES, *PLAN_IGNORES) if k in given and given[k] != getattr(default, k)]
        if args.algorithm != "cdfl" and "lr_schedule" in chosen:  # a DFL plan refuses it (below), not ignores
            chosen.remove("lr_schedule")
        if args.out is None and given.get("out"):  # the plan's folder is --out's (default runs/plan)
            chosen.append("out")
        if chosen:
            print(f"dfl-sim: note: plan: the fields {', '.join(chosen)} in {args.config} are the plan's to "
                  "set (--out, and each simulation's own): not used", file=sys.stderr)  # fmt: skip
    if args.out is None:
        config.out = "runs/plan"
    if config.threads == 0:
        config.threads = automatic_threads()
    settings = PlanSettings(
        budget_seconds=args.budget_seconds, top=args.top, others=args.others, seeds=args.seeds,
        bound=args.bound, eta=args.eta, max_tau1=args.max_tau1, max_tau2=args.max_tau2, L=args.L,
        sigma2=args.sigma2, heterogeneity=args.heterogeneity, gap=args.gap, budget_bits=args.budget_bits,
        mu=args.mu, G2=args.G2, eta_scales=tuple(args.eta_scales),
    )  # fmt: skip
    bar: list[Any] = []

    def progress(done: int, total: int, label: str) -> None:
        if not bar:
            bar.append(tqdm(total=total, desc="dfl-sim plan", unit="run", file=sys.stderr, disable=args.json,
                            mininterval=bar_interval()))  # fmt: skip
        bar[0].set_postfix_str(label)
        bar[0].update(1)

    try:
        with checkpoint_on_interrupt():
            return plan(config, settings, progress)
    finally:
        if bar:
            bar[0].close()


def _cmd_sweep(args: argparse.Namespace) -> list[dict[str, Any]]:
    from sim.grid import (
        changed_inputs,
        finished_summary,
        grid_points,
        load_grid,
        refuse_idle_fields,
        refuse_one_matrix_twice,
        refuse_overwrite,
    )

    _refuse_copies_under_torchrun("sweep")
    if not str(args.out).strip():  # grid_points would put the runs under the current folder
        raise InputError(f"--out = {args.out!r} is empty (expected the sweep's folder)")
    base, grid = load_grid(args.grid)
    if args.threads is not None:
        base["threads"] = args.threads
    if isinstance(base.get("threads"), int):  # (another type: RunConfig.validate names it)
        check_threads(base["threads"])
    if not base.get("threads"):
        base["threads"] = automatic_threads()
    check_path_length(args.out, "out")  # ('File name too long' from refuse_other_kind, status 1: a review)
    refuse_other_kind(Path(args.out), "sweep")  # a run's or plan's folder (their runs could not resume)
    if args.resume and not (Path(args.out) / "sweep.json").is_file():  # (a sweep writes it before any run)
        raise InputError(
            f"resume: {str(args.out)!r} holds no sweep (no sweep.json; expected the --out of an interrupted "
            "sweep; without --resume a new one starts)"
        )
    points = grid_points(base, grid, args.out)
    done: dict[int, dict[str, Any]] = {}
    for point in points:
        point.config.validate()  # every point before the progress bar opens: a bad one is one line
    refuse_idle_fields(points, args.grid)
    if args.resume:  # each run folder read once: its finished run, then its inputs' digests now
        finished = {i: s for i, p in enumerate(points) if (s := finished_summary(p.config)) is not None}
        inputs = _digests_now(points, list(finished))
        for i, point in enumerate(points):
            summary = finished.get(i)
            if summary is not None and not changed_inputs(summary, inputs.get(i)):
                done[i] = summary
            elif (Path(point.config.out) / "checkpoint.pt").is_file():  # (its digests: check_sweep checks)
                point.config.resume = True
            else:
                refuse_overwrite(point.config, inputs.get(i))
        _note_other_runs(Path(args.out), points)
        if done:  # (their lines say "done" as this call's runs do: a probe could not tell them apart)
            are = "is reused, its result" if len(done) == 1 else "are reused, their results"
            print(f"dfl-sim: note: resume: {counted(len(done), 'run')} of {len(points)} had finished and "
                  f"{are} from then", file=sys.stderr)  # fmt: skip
    else:
        how = (  # (no sweep.json: a dfl-sim run's folder at a point's path)
            "--resume continues the sweep"
            if (Path(args.out) / "sweep.json").is_file()
            else "dfl-sim run --resume --out FOLDER continues it"
        )
        refuse_interrupted([Path(point.config.out) for point in points], how)
    from sim.sweep import check_sweep  # torch, after every point was validated (a bad one answers at once)

    todo = [point.config for i, point in enumerate(points) if i not in done]
    setups = check_sweep(todo) if todo else None  # the data, topologies, checkpoints: before any folder
    if setups:
        running = [point for i, point in enumerate(points) if i not in done]
        refuse_one_matrix_twice(running, [s.digests for s in setups], args.grid)
    out = writable_folder(args.out, "out")
    lock_folders([out])  # one sweep at a time in a folder (each run also locks its own)
    try:
        return _sweep_in(out, points, done, args.json, setups)
    finally:
        release_folders([out])


def _note_other_runs(out: Path, points: list[GridPoint]) -> None:
    """A note on stderr for run folders in a resumed sweep's ``out`` that are no point of its grid: a grid
    written another way (its keys in another order, 2.0 for 2) names its runs anew, and --resume trained
    them all again beside the old ones without a word (a probe)."""
    ours = {Path(p.config.out).name for p in points}
    others = sorted(p.name for p in out.iterdir() if p.name not in ours and (p / "config.json").is_file())
    if others:
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        are = "is" if len(others) == 1 else "are"
        print(f"dfl-sim: note: {counted(len(others), 'run folder')} in {str(out)!r} {are} no point of this "
              f"grid ({shown}); they are left as they are (if the grid is the same one written another "
              "way, its keys in another order or 2.0 for 2, it names its runs anew and trains them again)",
              file=sys.stderr)  # fmt: skip


def _digests_now(points: list[GridPoint], finished: list[int]) -> dict[int, dict[str, str]]:
    """For each of the ``finished`` points (whose folders hold a finished run of their settings,
    :func:`sim.grid.finished_summary`), the mixing matrix's and data set's digests of its run now
    (:func:`sim.setup.current_digests`: the data set loaded once, each C built once: 50 points on one
    1,000-node graph took 0.125 s each). An input that cannot be read now (a data set or edges file moved
    away) leaves those runs to be reused by their settings alone, with a note: listing a finished sweep
    copied elsewhere needs no data."""
    if not finished:
        return {}
    from sim.data import load_dataset
    from sim.setup import current_digests

    first = points[finished[0]].config  # (the data set is one of the fields every run of a sweep shares)
    try:
        data = load_dataset(first.dataset, first.data_dir)
    except InputError as exc:
        print(f"dfl-sim: note: resume: the finished runs' data cannot be read to check it is theirs ({exc}): "
              "they are reused by their settings alone", file=sys.stderr)  # fmt: skip
        return {}
    digests: dict[int, dict[str, str]] = {}
    built: dict[tuple[Any, ...], dict[str, str]] = {}  # what builds C -> its digests
    for i in finished:
        c = points[i].config
        key = (c.algorithm, c.topology, c.nodes, c.weights, c.seed if c.topology == "erdos-renyi" else None)
        try:
            if key not in built:
                built[key] = current_digests(c, data)
            digests[i] = built[key]
        except InputError as exc:
            print(f"dfl-sim: note: resume: the mixing matrix of the finished run in {c.out!r} cannot be "
                  f"built again to check it is its own ({exc}): reused by its settings alone",
                  file=sys.stderr)  # fmt: skip
    return digests


def _sweep_in(
    out: Path, points: list[GridPoint], done: dict[int, dict[str, Any]], quiet: bool, setups: list | None
) -> list[dict[str, Any]]:
    """:func:`_cmd_sweep` in its locked folder: sweep.json first lists the grid (the folder is a sweep's from
    its start), then every run's grid values and summary."""
    from tqdm import tqdm

    from sim.run_folder import atomic_write
    from sim.sweep import run_sweep

    listing = out / "sweep.json"  # every run's grid values and summary, in the grid's order

    def write_listing() -> list[dict[str, Any]]:
        result = [{"grid": point.values, **done.get(i, {})} for i, point in enumerate(points)]
        atomic_write(listing, lambda p: p.write_text(json.dumps(jsonable(result), indent=1)))
        return result

    todo = [i for i in range(len(points)) if i not in done]
    write_listing()

    if todo:
        total = sum(points[i].config.steps for i in todo)
        with tqdm(total=total, desc="dfl-sim sweep", unit="step", file=sys.stderr, disable=quiet,
                  mininterval=bar_interval()) as bar:  # fmt: skip
            ended: list[int] = []  # runs that ended since the listing was last written

            def progress(steps: int, _total: int) -> None:  # after every step of the stack
                bar.update(steps - bar.n)
                if ended:  # in sweep.json as they end (a Ctrl-C later loses nothing), once a step: once a
                    write_listing()  # run, 1,000 runs ending together rewrote it 1,000 times (64 of 113 s)
                    ended.clear()

            def finished(i: int, summary: dict[str, Any]) -> None:
                done[todo[i]] = summary
                ended.append(i)

            bar.set_postfix_str(f"{len(todo)} runs stacked, {len(done)} already done")
            with checkpoint_on_interrupt():
                try:
                    run_sweep([points[i].config for i in todo], progress, finished, setups)
                finally:  # runs that ended in a step an error (or a second Ctrl-C) cut short: listed too
                    if ended:
                        write_listing()
    return write_listing()


def _cmd_bench(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from sim.bench import run_benchmarks

    if args.threads is not None:  # (it had no such flag: torch's default, every core, whatever their load)
        if args.threads < 0:
            raise InputError(f"--threads = {args.threads} (expected a whole number >= 0; 0 = the free cores)")
        check_threads(args.threads)
        torch.set_num_threads(args.threads or automatic_threads())
    measured: dict[str, Any] = {}
    try:
        out = run_benchmarks(args.quick, args.device, lambda line: print(f"dfl-sim bench: {line}",
                             file=sys.stderr, flush=True), measured)  # fmt: skip
    except KeyboardInterrupt:  # what was measured, not lost with the rest
        if measured:
            kept = json.dumps(jsonable(measured), allow_nan=False)
            print(f"dfl-sim bench: measured before the stop: {kept}", file=sys.stderr)
        raise
    if args.distributed:
        from sim.bench import distributed_benchmark

        out["distributed"] = distributed_benchmark(args.quick, "runs/bench-distributed")
    return out


def _cmd_versus(args: argparse.Namespace) -> dict[str, Any]:
    from sim.versus import versus, versus_rows

    def say(line: str) -> None:  # a line per launch on stderr (stdout keeps the result, or the JSON)
        print(line, file=sys.stderr, flush=True)

    out = versus(
        args.simulator,
        args.nodes,
        args.node_steps,
        args.repeats,
        args.threads,
        args.dataset,
        args.data_dir,
        say,
    )
    return out if args.json else versus_rows(out)


def _parser() -> OneLineParser:
    parser = OneLineParser(
        prog="dfl-sim",
        description="Decentralized FL simulator (vectorised across nodes). With no command it is "
        "`dfl-sim run`: the default run, into runs/latest, which a fresh run replaces; flags alone are "
        "`dfl-sim run`'s.",
    )
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    r = sub.add_parser("run", help="run one experiment (no flags: quick paper MNIST ring run)")
    r.add_argument("--config", help=CONFIG_HELP)
    _add_config_flags(r)
    r.add_argument("--json", action="store_true", help="print one JSON object at the end")
    r.set_defaults(run=_cmd_run, results=RUN_RESULTS, resume_hint=RESUME_HINT)
    pl = sub.add_parser(
        "plan", help="rank (tau1, tau2, eta) by the bound under a budget, then train to check"
    )
    pl.add_argument("--config", help=CONFIG_HELP)
    plan_helps = {"algorithm": "dfl (default) or cdfl: the algorithms a bound ranks",
                  "mu": "strong convexity mu: Lemma 13's, for --algorithm cdfl"}  # fmt: skip
    _add_config_flags(pl, leave_out=(*PLAN_CHOOSES, *PLAN_IGNORES, "out"), helps=plan_helps)
    pl.add_argument("--out", help="the plan's folder (default runs/plan): ranking, simulations, figures")
    pl.add_argument("--eta", type=float, help="a fixed learning rate: only (tau1, tau2) are ranked (default: "
                    "the bound's best eta for each cell)")  # fmt: skip
    pl.add_argument("--eta-scales", type=float, nargs="+", default=(), metavar="S",
                    help="also train each simulated configuration at these multiples of its eta, as "
                    "contenders of the bound's choice (e.g. 0.3 3 10 30; default none)")  # fmt: skip
    budget = "modelled seconds per run: --t-comp per local step, --t-comm per gossip step"
    pl.add_argument("--budget-seconds", type=float, help=budget)
    bits = "C-DFL (--algorithm cdfl): bits each node may send; ranks by Lemma 13, needs --mu and --G2"
    pl.add_argument("--budget-bits", type=float, help=bits)
    pl.add_argument("--G2", type=float, help="C-DFL: Lemma 13's bound G^2 on E||g||^2")
    pl.add_argument("--top", type=int, default=3, help="simulate the K best of the ranking (default 3)")
    others = "and K others, one from each of K blocks of the rest (seeded; default 3)"
    pl.add_argument("--others", type=int, default=3, help=others)
    pl.add_argument("--seeds", type=int, default=2, help="seeds per simulated configuration (default 2)")
    pl.add_argument("--bound", default="auto",
                    help="auto (default: non-iid when varsigma^2, estimated or --heterogeneity, is > 0, "
                    "else repaired), repaired, non-iid, paper or corrected; for cdfl auto or paper (Lemma 13 "
                    "as printed) or repaired (its last step at its own step size)")  # fmt: skip
    pl.add_argument("--max-tau1", type=int, default=10, help="largest tau1 of the grid (default 10)")
    pl.add_argument("--max-tau2", type=int, default=15, help="largest tau2 of the grid (default 15)")
    for name, what in (("L", "smoothness L (default: Hessian power iteration at the initial model)"),
                       ("sigma2", "noise sigma^2 (default: estimated at the initial model)"),
                       ("heterogeneity", "varsigma^2 (default: estimated at the initial model)"),
                       ("gap", "F(u_1) - F_inf (default: F(u_1), the initial training loss)")):  # fmt: skip
        pl.add_argument(f"--{name}", type=float, help=what)
    pl.add_argument("--json", action="store_true", help="print one JSON object at the end")
    pl.set_defaults(run=_cmd_plan, results=PLAN_RESULTS,
                    resume_hint="the same command continues it (finished simulations are kept, the "
                    "interrupted one continues from its checkpoint)")  # fmt: skip
    sw = sub.add_parser("sweep", help="run a grid of configurations stacked as one sweep (GRID.toml)")
    grid_help = "TOML file: [base] RunConfig fields, [grid] field = [values] (the sweep is their product)"
    sw.add_argument("grid", help=grid_help)
    sw.add_argument("--out", default="runs/sweep", help="folder of the run folders (default runs/sweep)")
    sw.add_argument("--resume", action="store_true", help="skip finished runs, continue checkpointed ones")
    sw.add_argument("--threads", type=int, help="torch threads (default: the free cores)")
    sw.add_argument("--json", action="store_true", help="print the runs' summaries as one JSON list")
    sw.set_defaults(run=_cmd_sweep, resume_hint=RESUME_HINT)
    b = sub.add_parser("bench", help="node-steps per second: vectorised engine vs reference loop")
    b.add_argument("--quick", action="store_true", help="fewer sizes and repeats (about a minute on 2 cores)")
    b.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:INDEX")
    b.add_argument("--distributed", action="store_true", help="also P = 1 and 2 gloo processes")
    b.add_argument("--threads", type=int, help="torch threads (default: torch's, every core this process "
                   "may use; 0: the free cores)")  # fmt: skip
    b.add_argument("--json", action="store_true", help="print one JSON object (the ratios at its top level)")
    b.set_defaults(run=_cmd_bench)
    v = sub.add_parser("versus", help="node-steps per second end to end against another DFL simulator")
    v.add_argument("simulator", help="gossipy (pip install gossipy-dfl==0.0.1)")
    v.add_argument("--nodes", type=int, nargs="+", default=[10, 100], help="ring sizes (default 10 100)")
    v.add_argument("--node-steps", type=int, default=2000,
                   help="local SGD steps of a run (rounds = this // nodes; default 2000)")  # fmt: skip
    v.add_argument(
        "--repeats", type=int, default=2, help="timings of each tool, order alternating (default 2)"
    )
    v.add_argument("--threads", type=int, help="torch threads of both (default, or 0: this process's cores)")
    v.add_argument("--dataset", default="mnist", help="mnist (default, shipped) or cifar10 (with --data-dir)")
    v.add_argument(
        "--data-dir",
        help="cifar10: the folder holding cifar-10-batches-py (required); mnist: "
        "the folder of its IDX .gz files (default: the copy shipped)",
    )
    v.add_argument("--json", action="store_true", help="print one JSON object")
    v.set_defaults(run=_cmd_versus)
    return parser


@cli_entry("dfl-sim")
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dfl-sim`` / ``python -m sim``; returns the exit code."""
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    first = argv[0] if argv else ""
    asks_help = first == "-h" or (len(first) > 2 and "--help".startswith(first))  # (--he: an abbreviation)
    if not first or (first.startswith("-") and not asks_help):
        argv = ["run", *argv]  # no command: `dfl-sim --steps 5` is `dfl-sim run --steps 5` (it was "invalid
        # choice: '5'": argparse took the flag's value for the command)
    args = parser.parse_args(argv)
    try:
        retain_freed_memory()
        out = args.run(args)
    except InputError as exc:
        print(f"dfl-sim: error: {exc}", file=sys.stderr)
        return 2
    except RunInterrupted as exc:
        print(f"dfl-sim: {exc}: {args.resume_hint if exc.kept else NOTHING_KEPT_HINT}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("dfl-sim: interrupted", file=sys.stderr)
        return 130
    except SimulationError as exc:  # the run itself failed (its checkpoint allows --resume)
        print(f"dfl-sim: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk, a folder removed under a run: the files written so far are kept
        where = f": {exc.filename}" if exc.filename else ""
        print(f"dfl-sim: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    if not out:  # a non-zero torchrun rank: rank 0 reports
        return 0
    if args.json:
        print(json.dumps(jsonable(out), allow_nan=False))
    elif isinstance(out, list):  # a sweep: one line per run
        for summary in out:
            grid = ", ".join(f"{k} = {v}" for k, v in summary["grid"].items()) or "run"
            state = summary["message"] if summary["diverged"] else "done"
            print(
                f"{grid}: final training loss {summary['final_train_loss']:#.4g}, test accuracy "
                f"{summary['final_test_accuracy']:#.4g} ({state}) -> {summary['out_dir']}"
            )
    else:
        print(key_value_table(out))
        if "out_dir" in out and getattr(args, "results", None):
            print(f"results: {out['out_dir']}/{args.results}")
    if args.command == "run" and isinstance(out, dict) and out.get("diverged"):
        print(f"dfl-sim: the run {out['message']}; what it recorded is in {out['out_dir']}", file=sys.stderr)
        return DIVERGED
    return 0


DIVERGED = 3
"""The exit status of a ``dfl-sim run`` that diverged (its records kept); a sweep exits 0, each run's line
saying whether it diverged."""
