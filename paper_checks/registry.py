"""The registry of checks: what each claims, how it is run, what it found."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bounds import InputError
from paper_checks.context import CheckContext

__all__ = [
    "CHECKS",
    "STATUSES",
    "Check",
    "Outcome",
    "check",
    "combined",
    "library_digest",
    "load_checks",
    "named_checks",
]

STATUSES = ("holds", "violated", "inconclusive", "reference", "could not run")
"""``reference``: a documented value or a case outside the claim's assumptions, not evidence either way."""


@dataclass
class Outcome:
    """What a check found: a status, a one-paragraph summary, and the numbers (tables as lists of rows)."""

    status: str
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {STATUSES}")


@dataclass(frozen=True)
class Check:
    """One claim of the paper (``ref`` is the paper's numbering) and the function that tests it.

    ``statement`` is the claim as data (a bound as a function, an ordering, a closed form, expected
    signs): ``run(context, statement)`` measures and then judges that statement, so a test can hand it a
    deliberately wrong one and see ``violated`` (tests/test_check_mutations.py does, for every check).
    A ``reference`` check documents a value or a case outside the claim's assumptions; its status is
    ``reference`` and it has no statement to falsify. ``planned(context)``: the training runs the check
    will simulate (those not cached yet), for ``dfl-check``'s time estimate. ``on_device``: the check
    simulates on ``context.device`` (trains the CNNs); the others never touch it (numpy, SDPs), so their
    cache key leaves the device out and, beside a GPU, they run in another process while the device works
    (:mod:`paper_checks.overlap`). ``reads_cifar``: it trains on CIFAR-10 (``context.cifar_dir``), whose
    folder dfl-check then checks before any check runs.
    """

    id: str
    ref: str
    claim: str
    method: str
    run: Callable[[CheckContext, Any], Outcome]
    statement: Any = None
    reference: bool = False
    planned: Callable[[CheckContext], list[Any]] | None = None  # its simulations not cached yet (RunConfigs)
    on_device: bool = False
    reads_cifar: bool = False

    def __call__(self, context: CheckContext, statement: Any = None) -> Outcome:
        """Run the check in ``context`` on ``statement`` (the paper's, by default)."""
        return self.run(context, self.statement if statement is None else statement)

    def fingerprint(self, context: CheckContext) -> str:
        """The cache key: changes with the context (mode, data, folders; the device for an ``on_device``
        check) or any source of ``bounds/``, ``sim/`` or ``paper_checks/`` (no stale verdict after a
        change). A device-free check's verdict computed on one device is reused on another."""
        where = context if self.on_device else dataclasses.replace(context, device="any")
        key = f"{self.id}|{library_digest(('bounds', 'sim', 'paper_checks'))}|{where}"
        return hashlib.sha256(key.encode()).hexdigest()[:16]


def combined(verdicts: list[str]) -> str:
    """One verdict from parts: 'violated' if any part is, 'holds' if every part run holds (and at
    least one ran), else 'inconclusive'; parts marked 'not run' are left out."""
    verdicts = [v for v in verdicts if v != "not run"]
    if "violated" in verdicts:
        return "violated"
    return "holds" if verdicts and all(v == "holds" for v in verdicts) else "inconclusive"


@functools.cache
def library_digest(packages: tuple[str, ...] = ("bounds", "sim")) -> str:
    """One hash of every source file of ``packages`` (by default what every simulation depends on)."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(p for package in packages for p in (root / package).rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


CHECKS: dict[str, Check] = {}


CheckFunction = Callable[[CheckContext, Any], Outcome]


def check(
    id: str,
    ref: str,
    claim: str,
    method: str,
    statement: Any = None,
    reference: bool = False,
    planned: Callable[[CheckContext], list[Any]] | None = None,
    on_device: bool = False,
    reads_cifar: bool = False,
) -> Callable[[CheckFunction], CheckFunction]:
    """Register ``fn(context, statement) -> Outcome`` as the check of one claim.

    Every check but a ``reference`` one must give the ``statement`` it tests; one that simulates on
    ``context.device`` says ``on_device=True`` (:class:`Check`).
    """
    if statement is None and not reference:
        raise ValueError(f"check {id!r} gives no statement to test (or declare it reference=True)")

    def register(fn: CheckFunction) -> CheckFunction:
        if id in CHECKS:
            raise ValueError(f"check {id!r} registered twice")
        CHECKS[id] = Check(id, ref, claim, method, fn, statement, reference, planned, on_device, reads_cifar)
        return fn

    return register


CHECK_MODULES = (
    "paper_checks.experiments",
    "paper_checks.theory",
    "paper_checks.drift",
    "paper_checks.real_problems",
    "paper_checks.repair",
    "paper_checks.heterogeneity",
    "paper_checks.heterogeneity_cnn",
    "paper_checks.planner",
    "paper_checks.tightness",
)


def load_checks() -> dict[str, Check]:
    """Import every module of checks (which registers them) and return the registry."""
    for module in CHECK_MODULES:
        importlib.import_module(module)
    return CHECKS


RENAMED = {
    "fig6-tau2": "fig7-tau2",
    "fig6-cifar": "fig7-cifar",
    "fig7-tau1": "fig8-tau1",
    "fig8-zeta": "fig9-zeta",
    "fig9-cdfl": "fig10-cdfl",
}
"""The ids of the Section VI figure checks before 2026-11-28, when dflkit numbered those figures one below
the paper (whose Fig. 6 is the topology drawing, Fig. 7 the tau2 curves, ..., Fig. 10 C-DFL); dfl-check
--only still takes them."""


def named_checks(ids: list[str] | None) -> list[Check]:
    """The checks ``ids`` names (all without ids), in registry order. InputError naming every unknown id,
    with the ids close to them (``fig7``: fig7-tau2, fig7-cifar), else all of them."""
    load_checks()
    unknown = list(dict.fromkeys(i for i in ids or [] if i not in CHECKS))
    if unknown:  # (quoted: an empty id printed as nothing, and every id was 'close' to it: a probe)
        named = [i.strip() for i in unknown if i.strip()]
        close = [c for c in CHECKS if any(c.startswith(i) for i in named)]
        close += [c for i in named for c in difflib.get_close_matches(i, CHECKS, n=3) if c not in close]
        raise InputError(
            f"--only names unknown checks: {', '.join(map(repr, unknown))} (expected ids dfl-check --list "
            + (f"names; close: {', '.join(close)})" if close else f"names: {', '.join(CHECKS)})")
        )
    return [chk for chk in CHECKS.values() if not ids or chk.id in ids]
