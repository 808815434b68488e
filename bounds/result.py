"""One base for the toolkit's result records, in the style of scipy's ``OptimizeResult``.

A result is a frozen dataclass whose fields keep the order they are declared in, with ``success``
(a field or a property) and ``message``; :class:`Result` gives every one of them the same
``to_dict`` (JSON-ready, non-finite numbers as strings) and ``__str__`` (one aligned line per field,
``success`` and ``message`` last; the ``when_set`` fields only when they are not None). Used by
:class:`bounds.dfl.proposition1.DFLBound`, :class:`bounds.cdfl.proposition2.CDFLBound` and
:class:`bounds.plan.optimize.OptimizeResult`.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, ClassVar

import numpy as np

from bounds.serialize import jsonable

__all__ = ["Result", "overflow_note", "scalar_or_array"]


def scalar_or_array(x: np.ndarray) -> Any:
    """A 0-d array as its Python scalar; other arrays unchanged (results broadcast their inputs)."""
    return x.item() if x.ndim == 0 else x


def overflow_note(bound: Any, expected_finite: Any = True) -> str:
    """'the bound overflows float64 ...' where ``bound`` is inf although ``expected_finite`` (the formula has
    a finite value there, e.g. gossip mixes), '... cannot be evaluated in float64 ...' where it is NaN (an
    intermediate value overflowed, inf / inf: the bound's value is unknown, not infinite; mu = 1e-160 in
    C-DFL's a^3 / S_K, a probe read the NaN as a wrong kind of overflow); '' where it is finite everywhere."""
    value = np.asarray(bound, dtype=float)
    expected = np.asarray(expected_finite, dtype=bool)
    kinds = [
        (
            np.isinf(value) & expected,
            "overflows float64{} (inputs too large or too small for a finite value)",
        ),
        (
            np.isnan(value) & expected,
            "cannot be evaluated in float64{} (an intermediate value overflows with inputs this large or "
            "small: its value is unknown, nan)",
        ),
    ]
    return "; ".join(
        f"the bound {what.format('' if at.ndim == 0 else f' at {int(at.sum())} point(s)')}"
        for at, what in kinds
        if at.any()
    )


def _fmt(value: Any) -> str:
    arr = np.asarray(value)
    if arr.ndim:
        return f"array{arr.shape}"
    item = arr.item()
    return f"{item:.6g}" if isinstance(item, float) else str(item)


class Result:
    """Mixin of the result dataclasses: ``to_dict`` and ``__str__`` over their ordered fields.

    ``not_shown``: fields left out of ``__str__`` (the arguments, a whole grid); ``not_in_dict``:
    fields left out of ``to_dict`` (a grid too large for a JSON summary).
    """

    not_shown: ClassVar[tuple[str, ...]] = ("inputs", "grid")
    not_in_dict: ClassVar[tuple[str, ...]] = ()
    when_set: ClassVar[tuple[str, ...]] = ()  # fields shown and written only when not None
    success: Any
    message: str

    def _fields(self) -> list[str]:
        names = [f.name for f in fields(self)]  # type: ignore[arg-type]
        return [n for n in names if n not in self.when_set or getattr(self, n) is not None]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the fields in order, then ``success`` and ``message``; inf becomes ``"inf"``."""
        names = [n for n in self._fields() if n not in (*self.not_in_dict, "success", "message")]
        out = {n: jsonable(getattr(self, n)) for n in names}
        out["success"] = jsonable(self.success)
        out["message"] = self.message
        return out

    def __str__(self) -> str:
        rows: list[tuple[str, Any]] = []
        for name in self._fields():
            if name in self.not_shown or name in ("success", "message"):
                continue
            value = getattr(self, name)
            if isinstance(value, dict):
                rows.extend((f"{name}.{k}", v) for k, v in value.items())
            elif not isinstance(value, list):
                rows.append((name, value))
        rows += [("success", self.success), ("message", self.message or "(none)")]
        width = max(len(name) for name, _ in rows)
        return "\n".join(
            f"{name:>{width}} : {value if name == 'message' else _fmt(value)}" for name, value in rows
        )
