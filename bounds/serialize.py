"""One JSON conversion for every command and file: plain types, non-finite numbers as strings.

JSON has no NaN or infinity (``json.dumps`` would write the invalid tokens ``NaN`` / ``Infinity``,
or raise with ``allow_nan=False``), so they become the strings ``"nan"``, ``"inf"``, ``"-inf"``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["NON_FINITE", "jsonable", "numbers_restored"]

NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
"""The strings :func:`jsonable` writes for the numbers JSON lacks."""


def jsonable(value: Any) -> Any:
    """``value`` with dicts / lists / tuples / numpy arrays and scalars turned into JSON-ready types."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist()) if value.ndim else jsonable(value.item())
    if hasattr(value, "item") and not isinstance(value, str):  # numpy / torch scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    return value


def numbers_restored(record: dict[str, Any], text: tuple[str, ...] = ()) -> dict[str, Any]:
    """A flat record read back from JSON with :func:`jsonable`'s ``"nan"``, ``"inf"``, ``"-inf"`` made
    numbers again, but for the keys in ``text`` (fields that hold text): a diverged run's summary read from
    its file had the string 'inf' where the run had returned the number (a probe: its line then failed to
    print)."""
    return {k: NON_FINITE[v] if k not in text and isinstance(v, str) and v in NON_FINITE else v
            for k, v in record.items()}  # fmt: skip
