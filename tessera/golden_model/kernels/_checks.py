"""Argument validation shared by the reference kernels (private).

Every check raises ``TypeError`` / ``ValueError`` whose message names the kernel,
the argument and the offending value, so user errors never surface as deep numpy
tracebacks.
"""

from __future__ import annotations

import numbers

import numpy as np

INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def as_int_array(where: str, name: str, value, dtype, ndim: int | None = None) -> np.ndarray:
    """Return ``value`` as an ndarray of exactly ``dtype``.

    Raises ``TypeError`` if ``value`` is not an array of that dtype (no silent
    casts: a silent int64 → int8 cast would hide overflow), ``ValueError`` if the
    number of dimensions is wrong.
    """
    arr = np.asarray(value)
    if arr.dtype != np.dtype(dtype):
        raise TypeError(
            f"{where}: {name} must be a {np.dtype(dtype).name} array, got dtype "
            f"{arr.dtype.name}; convert explicitly (after range-checking) with "
            f"np.asarray(..., dtype=np.{np.dtype(dtype).name})")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(
            f"{where}: {name} must have {ndim} dimensions, got shape {arr.shape}")
    return arr


def as_int(where: str, name: str, value, lo: int | None = None, hi: int | None = None) -> int:
    """Return ``value`` as a Python int, checking type and the range ``lo..hi``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: {name} must be an int, not {value!r}")
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{where}: {name} must be in {lo}..{hi}, not {value}")
    return value


def pair(where: str, name: str, value, lo: int = 1) -> tuple[int, int]:
    """Normalise an int or a 2-sequence of ints (e.g. a stride) to a pair."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        v = as_int(where, name, value, lo=lo)
        return v, v
    try:
        a, b = value
    except (TypeError, ValueError):
        raise TypeError(f"{where}: {name} must be an int or a pair of ints, not {value!r}") from None
    return as_int(where, name, a, lo=lo), as_int(where, name, b, lo=lo)


def wrap_int32(x: np.ndarray) -> np.ndarray:
    """Reduce an int64 array modulo 2^32 into int32 (two's complement wrap)."""
    x = np.asarray(x, dtype=np.int64)
    return (((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)).astype(np.int32)
