"""The verdict cache of ``dfl-check``: one JSON file per check and mode in ``OUT/cache``, and
:func:`run_one`, which runs a check through it.

A file that cannot be read as a check's result (empty, cut short, edited by hand) counts as no cache:
the check runs again and the file is rewritten, atomically (a crash never leaves half a file).
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bounds.serialize import jsonable
from paper_checks.context import CheckContext
from paper_checks.registry import STATUSES, Check, Outcome

__all__ = ["cache_path", "cached_result", "check_result", "pending", "read_cache", "run_one", "write_cache"]


def cache_path(cache_dir: Path, check_id: str, quick: bool) -> Path:
    """The cache file of check ``check_id`` in the quick or the full mode."""
    return cache_dir / f"{check_id}-{'quick' if quick else 'full'}.json"


def read_cache(path: Path) -> dict[str, Any] | None:
    """The cached result at ``path``, or None when there is none or it is not a JSON object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):  # missing, unreadable, not JSON (ValueError covers UnicodeDecodeError)
        return None
    return data if isinstance(data, dict) else None


def write_cache(path: Path, result: dict[str, Any]) -> None:
    """Write ``result`` to ``path`` atomically (:func:`sim.run_folder.atomic_write`)."""
    from sim.run_folder import atomic_write

    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(result, indent=1)))


def cached_result(chk: Check, context: CheckContext, cache_dir: Path) -> dict[str, Any] | None:
    """The cached result of ``chk`` if it is still valid in ``context`` (same fingerprint) and whole (a
    result of this check, with a verdict it can give, a summary and evidence), else None."""
    cached = read_cache(cache_path(cache_dir, chk.id, context.quick))
    if cached is None or cached.get("fingerprint") != chk.fingerprint(context):
        return None
    whole = (  # an edited or half-written file with the right fingerprint: a traceback, or "banana" a verdict
        cached.get("id") == chk.id
        and cached.get("status") in STATUSES
        and cached.get("status") != "could not run"  # (never cached)
        and all(isinstance(cached.get(k), str) for k in ("ref", "claim", "method", "summary"))
        and isinstance(cached.get("evidence"), dict)
        and isinstance(cached.get("seconds"), int | float)
    )
    return cached if whole else None


def pending(checks: list[Check], context: CheckContext, cache_dir: Path) -> list[Check]:
    """The checks of ``checks`` without a valid cached result: those a run will compute."""
    return [chk for chk in checks if cached_result(chk, context, cache_dir) is None]


def run_one(chk: Check, context: CheckContext, cache_dir: Path) -> dict[str, Any]:
    """Run (or load from cache) one check; a crash becomes 'could not run' with the reason."""
    cached = cached_result(chk, context, cache_dir)
    if cached is not None:
        return {**cached, "cached": True}
    fingerprint = chk.fingerprint(context)
    start = time.perf_counter()
    try:
        outcome = chk(context)
    except Exception as exc:  # a check that cannot run says why; the others still run
        outcome = Outcome(
            "could not run", f"{type(exc).__name__}: {exc}", {"traceback": traceback.format_exc()}
        )
    result = check_result(chk, outcome, time.perf_counter() - start, fingerprint)
    if outcome.status != "could not run":  # a failure is retried next time (e.g. once data is there)
        try:
            write_cache(cache_path(cache_dir, chk.id, context.quick), result)
        except OSError as exc:  # a folder or a read-only file in the way: the result stands, uncached
            print(f"dfl-check: note: {chk.id} was not cached ({exc})", file=sys.stderr)
    return {**result, "cached": False}


def check_result(chk: Check, outcome: Outcome, seconds: float, fingerprint: str) -> dict[str, Any]:
    """The result of a check as the report and the cache hold it."""
    return {
        "id": chk.id,
        "ref": chk.ref,
        "claim": chk.claim,
        "method": chk.method,
        "status": outcome.status,
        "summary": outcome.summary,
        "evidence": jsonable(outcome.evidence),
        "seconds": round(seconds, 2),
        "fingerprint": fingerprint,
    }
