"""One JSON conversion for every command and file: plain types, non-finite numbers as strings.

JSON has no NaN or infinity (``json.dumps`` would write the invalid tokens ``NaN`` / ``Infinity``,
or raise with ``allow_nan=False``), so they become the strings ``"nan"``, ``"inf"``, ``"-inf"``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["jsonable"]


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
