"""Argument checks shared by the `bounds` package.

Every public function validates its inputs here, early, and fails with an
:class:`InputError` whose message names the argument, the offending value and
what was expected, never with a traceback from deep inside numpy.
"""

from __future__ import annotations

import datetime
import math
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

__all__ = [
    "MAX_CELLS",
    "UNREADABLE_FILE_ERRORS",
    "InputError",
    "absent_file",
    "broadcastable",
    "check_cells",
    "flag",
    "one_of",
    "real_array",
    "real_number",
    "unreadable_reason",
    "whole_number",
    "whole_numbers",
]


class InputError(ValueError):
    """An argument is outside the domain a formula of the paper is stated on."""


# what numpy raises for a file that is not the .npy/.npz it claims to be: cut short (EOFError, BadZipFile),
# damaged (a bad CRC: BadZipFile; a compressed member: zlib.error; a header's method or flags byte:
# NotImplementedError, "compression method is not supported"), or not numpy at all (ValueError)
UNREADABLE_FILE_ERRORS = (OSError, ValueError, EOFError, NotImplementedError, zipfile.BadZipFile, zlib.error)


NUMPY_HEADERS = (b"\x93NUMPY", b"PK")
"""How a .npy file and an .npz (a zip archive) begin."""


def unreadable_reason(path: Path, exc: BaseException) -> str:
    """Why ``np.load`` could not load ``path`` (its error ``exc``), for an InputError: for a file that is no
    numpy file at all, that it is empty or what it begins with (numpy reads such a file as a pickle and said
    'This file contains pickled (object) data ... allow_pickle=' of a text file, a probe); else ``exc``."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return str(exc)
    if head.startswith(NUMPY_HEADERS):
        return str(exc)
    return f"no numpy file: it begins with {head!r}, not a .npy or .npz header" if head else "it is empty"


def absent_file(path: Path) -> str:
    """Why ``path`` is not a file a user can give, for an InputError: "is a folder" or "does not exist"."""
    return "is a folder" if path.is_dir() else "does not exist"


def _first_bad(values: np.ndarray, bad: np.ndarray) -> Any:
    """The first offending element, as a plain Python number for the message."""
    return values[bad].flat[0].item()


DATES = (np.datetime64, np.timedelta64, datetime.date, datetime.timedelta)
"""Values numpy would count in their units as numbers (days since 1970, say)."""
MAX_EXACT_INTEGER = 2**53  # integers beyond it are not exact in float64 (T = 1e30 would overflow int64)
MAX_CELLS = 20_000_000
"""The most cells a bound's broadcast arguments may span: about 250 bytes each are held while it is computed
(Proposition 1: 246 MB for 10^6 cells), so 5 GB. A 10^5 x 10^5 grid asked numpy for 149 GiB (MemoryError
from inside numpy, a probe of the library)."""


def _holds_bool(value: Any) -> bool:
    """Whether a list / tuple (nested) holds a bool, which numpy turns into 1 or 0 beside integers."""
    if isinstance(value, list | tuple):
        return any(_holds_bool(v) for v in value)
    return isinstance(value, bool | np.bool_)


def real_array(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    integer: bool = False,
    allow_inf: bool = False,
) -> np.ndarray:
    """Return ``value`` as a float64 array after checking its domain.

    Args:
        name: the argument's name as the user wrote it (used in messages).
        value: a number or an array-like of numbers.
        low, high: bounds of the admissible interval (``None``: unbounded).
        low_open, high_open: whether the bound itself is excluded.
        integer: require whole numbers.
        allow_inf: accept ``+inf`` (for limits such as tau2 -> infinity).

    Raises:
        InputError: with the offending value and the expected domain.
    """
    if value is None:
        raise InputError(f"{name} = None is not a number (expected a real number)")
    if isinstance(value, list | tuple) and any(  # (numpy made the masked a NaN, or dropped a row's mask)
        v is np.ma.masked or (np.ma.isMaskedArray(v) and np.ma.getmaskarray(v).any()) for v in value
    ):
        raise InputError(f"{name} = {value!r} holds masked values (expected plain numbers)")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # ragged nested lists
        raise InputError(f"{name} = {value!r} is not a number (expected a real number)") from None
    if raw.dtype.kind == "b" or (raw.dtype.kind in "iu" and _holds_bool(value)):  # ([True, 2] is int64)
        raise InputError(f"{name} = {value!r} {'holds' if raw.ndim else 'is'} a boolean (expected a number)")
    if raw.dtype.kind in "UScmM":  # '1' and b'1' would convert, a complex number lose its imaginary part, a
        # date or duration count its units (a datetime64 eta computed a bound of 3.3e9, a probe)
        kind = {"c": "a complex number", "m": "a duration", "M": "a date"}.get(raw.dtype.kind, "a string")
        raise InputError(f"{name} = {value!r} is {kind} (expected a real number)")
    if raw.dtype.kind == "O":  # numbers of several kinds: None was called NaN, a date counted its days
        for v in raw.flat:
            what = "None" if v is None else "numpy.ma.masked" if v is np.ma.masked else None
            what = "a date or duration" if isinstance(v, DATES) else what
            if what:
                raise InputError(f"{name} = {value!r} holds {what} (expected real numbers)")
    if np.ma.isMaskedArray(value) and np.ma.getmaskarray(value).any():  # (the masked values were used)
        raise InputError(f"{name} has masked entries (expected plain numbers: the mask is not read; give "
                         "the values meant, with .filled() or .compressed())")  # fmt: skip
    if raw.size == 0:
        raise InputError(f"{name} = {value!r} is empty (expected a number or a non-empty array)")
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} = {value!r} is not a number (expected a real number)") from None
    if np.isnan(arr).any():  # (an array's position named: 'zeta is NaN' for [0.5, nan, 0.9])
        where = "" if arr.ndim == 0 else str(list(map(int, np.argwhere(np.isnan(arr))[0])))
        raise InputError(f"{name}{where} is NaN (expected a real number)")
    if not allow_inf and np.isinf(arr).any():
        bad = _first_bad(arr, np.isinf(arr))
        raise InputError(f"{name} = {bad} is not finite (expected a finite number)")
    expected = _domain_text(low, high, low_open, high_open, integer)
    if integer:
        finite = np.isfinite(arr)
        frac = np.zeros(arr.shape, dtype=bool)
        frac[finite] = arr[finite] != np.round(arr[finite])
        if frac.any():
            raise InputError(f"{name} = {_first_bad(arr, frac)} is not a whole number ({expected})")
        # on the integers as given where numpy holds them (2^53 + 1 is 2^53 as a float, and passed); past
        # int64 (an object array) as floats
        exact = raw if raw.dtype.kind in "iu" else arr
        huge = np.abs(exact) > MAX_EXACT_INTEGER
        if huge.any():
            raise InputError(
                f"{name} = {_num(_first_bad(exact, huge))} is too large (expected an integer of magnitude at "
                "most 2^53, which a float holds exactly)"
            )
    if low is not None:
        below = arr <= low if low_open else arr < low
        if below.any():
            raise InputError(f"{name} = {_num(_first_bad(arr, below))} is out of range ({expected})")
    if high is not None:
        above = arr >= high if high_open else arr > high
        if above.any():
            raise InputError(f"{name} = {_num(_first_bad(arr, above))} is out of range ({expected})")
    if np.signbit(arr[arr == 0]).any():  # -0.0 as 0.0 (zeta = -0.0 printed 'zeta : -0', a probe); a copy:
        arr = np.where(arr == 0, 0.0, arr)  # arr may be the caller's own array
    return arr


def check_one_node(N: Any, **spectrum: Any) -> None:
    """InputError where N = 1 comes with a zeta or beta_mix (``spectrum``: name -> validated value or array,
    broadcasting with ``N``) other than 0: one node's mixing matrix is C = [[1]], whose zeta (no other
    eigenvalue) and beta_mix = 1 - lambda_N are 0. Bounds at N = 1, zeta = 0.87 and a C-DFL bound at
    beta_mix = 1.5 were computed with success True (probes)."""
    for name, value in spectrum.items():
        ones, values = np.broadcast_arrays(np.asarray(N) == 1, np.asarray(value, dtype=np.float64))
        bad = ones & (values != 0)
        if bad.any():
            raise InputError(
                f"{name} = {_num(_first_bad(values, bad))} with N = 1 (expected {name} = 0: one node's "
                "mixing matrix is C = [[1]], whose zeta and beta_mix = 1 - lambda_N are 0)"
            )


def real_number(name: str, value: Any, **domain: Any) -> float:
    """One number: :func:`real_array`'s checks (``domain``: its keyword arguments), and a single value, not
    an array (for arguments that are not grid axes)."""
    arr = real_array(name, value, **domain)
    if arr.ndim != 0:
        raise InputError(f"{name} = {value!r} is not a single number (expected a number, not an array)")
    return float(arr)


def one_of(what: str, value: Any, options: Sequence[str]) -> str:
    """``value`` where it is one of the names ``options``; else InputError 'unknown {what} {value!r}
    (expected one of: ...)'. Anything but a string is refused first: ``value in options`` raised numpy's
    'truth value of an array is ambiguous' for an array and 'unhashable type' for a list in a dict's keys."""
    if not isinstance(value, str) or value not in options:
        raise InputError(f"unknown {what} {value!r} (expected one of: {', '.join(options)})")
    return value


@overload
def flag(name: str, value: Any, *, none: Literal[False] = False) -> bool: ...
@overload
def flag(name: str, value: Any, *, none: bool) -> bool | None: ...
def flag(name: str, value: Any, *, none: bool = False) -> bool | None:
    """A true/false argument as a bool (None too where ``none``): 'no', 0 or an array are not one (a
    truthy string silently meant True)."""
    if (value is None and none) or isinstance(value, bool | np.bool_):
        return None if value is None else bool(value)
    expected = "True, False or None" if none else "True or False"
    raise InputError(f"{name} = {value!r} is not a flag (expected {expected})")


def whole_number(name: str, value: Any, **domain: Any) -> int:
    """One integer: :func:`real_number` with ``integer=True`` (an array of them is refused, not a TypeError
    from int())."""
    return int(real_number(name, value, integer=True, **domain))


def whole_numbers(a: np.ndarray) -> bool:
    """Whether ``a`` holds integers: of an integer or boolean dtype, or finite floats without a fraction."""
    return a.dtype.kind in "biu" or (
        a.dtype.kind == "f" and bool(np.isfinite(a).all() and (a == np.round(a)).all())
    )


def broadcastable(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``arrays`` (name -> validated array), after checking that their shapes broadcast together; else an
    InputError naming the first argument whose shape does not fit the ones before it."""
    shape: tuple[int, ...] = ()
    seen: list[str] = []
    for name, arr in arrays.items():
        try:
            shape = np.broadcast_shapes(shape, arr.shape)
        except ValueError:
            raise InputError(
                f"{name} has shape {arr.shape}, which does not broadcast with {', '.join(seen)} (expected "
                "array arguments of broadcastable shapes)"
            ) from None
        if arr.ndim:
            seen.append(f"{name} {arr.shape}")
    check_cells(math.prod(shape), ", ".join(seen))
    return arrays


def check_cells(cells: int, what: str) -> None:
    """InputError where ``cells`` (the broadcast size of ``what``, the arguments' shapes) exceeds
    :data:`MAX_CELLS`."""
    if cells > MAX_CELLS:
        raise InputError(
            f"{what} span {cells:,} cells (expected at most {MAX_CELLS:,}: a bound holds about 250 bytes a "
            "cell in memory; compute it in parts)"
        )


def _num(x: float) -> str:
    """A value in a message: integers whole, floats from 1e16 on as floats (1e308 as a 309-digit integer
    filled a line)."""
    if isinstance(x, int | np.integer):
        return str(int(x))
    return str(int(x)) if math.isfinite(x) and x == int(x) and abs(x) < 1e16 else repr(float(x))


def _domain_text(
    low: float | None, high: float | None, low_open: bool, high_open: bool, integer: bool
) -> str:
    kind = "an integer" if integer else "a real number"
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {_num(low)}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {_num(high)}")
    return f"expected {kind}" + (" " + " and ".join(parts) if parts else "")
