"""The verdict cache of ``dfl-check``: one JSON file per check and mode in ``OUT/cache``.

A file that cannot be read as a check's result (empty, cut short, edited by hand) counts as no cache:
the check runs again and the file is rewritten, atomically (a crash never leaves half a file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["cache_path", "read_cache", "write_cache"]


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
    """Write ``result`` to ``path`` atomically (:func:`sim.loop.atomic_write`)."""
    from sim.loop import atomic_write  # torch: loaded once a check has run

    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(result, indent=1)))
