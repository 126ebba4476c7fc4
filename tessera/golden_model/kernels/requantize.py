"""Requantization of int32 accumulators to int8 (TFLite / gemmlowp fixed-point arithmetic).

Semantics source: TensorFlow Lite ``MultiplyByQuantizedMultiplier`` and ``QuantizeMultiplier``
(``tensorflow/lite/kernels/internal/common.h``, ``quantization_util.cc``, the classic
*double-rounding* variant, i.e. built without ``TFLITE_SINGLE_ROUNDING``), which use gemmlowp's
``SaturatingRoundingDoublingHighMul`` and ``RoundingDivideByPOT``
(``gemmlowp/fixedpoint/fixedpoint.h``).

A real multiplier ``M > 0`` is stored as an int32 ``m`` in [2^30, 2^31) and an exponent ``shift``
with ``M ≈ m · 2^(shift - 31)``. Applying it to an int32 ``x``::

    left  = max(shift, 0);  right = max(-shift, 0)
    y = RDBPOT(SRDHM(x · 2^left, m), right)

Rounding, step by step (each verified against the C code in ``tests/test_kernels_requantize.py``):

``SRDHM(a, b)`` — *round to nearest, ties toward +∞*.
    The C code adds a nudge of ``2^30`` when ``a·b ≥ 0`` and ``1 - 2^30`` when ``a·b < 0`` and then
    divides by 2^31 with C's truncating division. For ``a·b ≥ 0`` that is ``floor((ab + 2^30)/2^31)``;
    for ``a·b < 0`` the ``+1`` combined with truncation toward zero gives exactly the same formula
    (``trunc((ab + 1 - 2^30)/2^31) = ceil(...) = floor((ab + 2^30)/2^31)``). So a tie such as
    ``ab/2^31 = -1.5`` rounds to ``-1`` (not ``-2``): the step is *not* round-half-away-from-zero,
    although it is often described that way. This matches ARM NEON ``VQRDMULH``, the instruction
    gemmlowp emulates. The only saturating case is ``a = b = -2^31``, which returns ``2^31 - 1``.
``RDBPOT(x, e)`` — *round to nearest, ties away from zero*.
    ``(x >> e) + (remainder > threshold)`` with ``threshold = (2^e - 1) >> 1`` plus 1 when ``x < 0``:
    ``2.5 → 3`` and ``-2.5 → -3``.
``QuantizeMultiplier`` — ``std::round`` of ``q · 2^31`` (``q`` = frexp mantissa in [0.5, 1)),
    i.e. ties away from zero; ``q_fixed = 2^31`` is renormalised to ``2^30`` with ``shift + 1``;
    ``shift < -31`` collapses to ``(0, 0)``.

Integer widths follow a 32-bit machine: ``x · 2^left`` and ``acc + bias`` wrap modulo 2^32 (as a
RV32 ``sll``/``add`` would); the product inside SRDHM is exact (64-bit, ``mulh``-style).
"""

from __future__ import annotations

import numbers

import numpy as np

from ._checks import INT8_MAX, INT8_MIN, INT32_MAX, INT32_MIN, as_int, as_int_array, wrap_int32

__all__ = [
    "saturating_rounding_doubling_high_mul", "rounding_divide_by_pot",
    "multiply_by_quantized_multiplier", "quantize_multiplier", "requantize",
    "MIN_SHIFT", "MAX_SHIFT",
]

#: Range of the ``shift`` exponent accepted by :func:`multiply_by_quantized_multiplier`.
#: ``-31`` is the smallest TFLite produces; ``30`` keeps ``1 << shift`` inside int32.
MIN_SHIFT, MAX_SHIFT = -31, 30


def _int32_values(where: str, name: str, value) -> np.ndarray:
    """int64 array of int32-ranged integers (accepts any integer dtype or Python ints)."""
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{where}: {name} must be integer-valued, got dtype {arr.dtype.name}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < INT32_MIN or arr.max() > INT32_MAX):
        raise ValueError(f"{where}: {name} has values outside the int32 range "
                         f"[{arr.min()}, {arr.max()}]")
    return arr


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """gemmlowp ``SaturatingRoundingDoublingHighMul``: ``round(a·b / 2^31)``, ties toward +∞.

    Parameters
    ----------
    a, b : array_like of int (int32 range), broadcastable
        Operands (typically the accumulator and the quantized multiplier).

    Returns
    -------
    ndarray of int32
        ``floor((a·b + 2^30) / 2^31)``; ``2^31 - 1`` where ``a = b = -2^31`` (the only
        case whose result does not fit in int32).

    Raises
    ------
    TypeError, ValueError
        If an operand is not integer-valued or lies outside the int32 range.
    """
    where = "saturating_rounding_doubling_high_mul"
    a = _int32_values(where, "a", a)
    b = _int32_values(where, "b", b)
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    ab = a * b                                   # exact: |ab| ≤ 2^62
    high = (ab + (1 << 30)) >> 31                # arithmetic shift = floor division
    return np.where(overflow, INT32_MAX, high).astype(np.int32)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp ``RoundingDivideByPOT``: ``round(x / 2^exponent)``, ties away from zero.

    Parameters
    ----------
    x : array_like of int (int32 range)
        Dividend.
    exponent : int or array_like of int in 0..31, broadcastable with ``x``
        Power of two to divide by.

    Returns
    -------
    ndarray of int32

    Raises
    ------
    TypeError, ValueError
        If ``x`` is not int32-ranged integers or ``exponent`` is outside 0..31.
    """
    where = "rounding_divide_by_pot"
    x = _int32_values(where, "x", x)
    e = _int32_values(where, "exponent", exponent)
    if e.size and (e.min() < 0 or e.max() > 31):
        raise ValueError(f"{where}: exponent must be in 0..31, got [{e.min()}, {e.max()}]")
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return ((x >> e) + (remainder > threshold)).astype(np.int32)


def multiply_by_quantized_multiplier(x, multiplier, shift) -> np.ndarray:
    """TFLite ``MultiplyByQuantizedMultiplier(x, multiplier, shift)`` (double rounding).

    Parameters
    ----------
    x : array_like of int (int32 range)
        Values to scale (accumulators).
    multiplier : int or array_like of int (int32 range), broadcastable with ``x``
        Quantized multiplier, normally from :func:`quantize_multiplier`.
    shift : int or array_like of int in ``MIN_SHIFT..MAX_SHIFT`` (-31..30), broadcastable
        Exponent: positive = left shift before SRDHM, negative = rounding right shift after.

    Returns
    -------
    ndarray of int32
        ``RDBPOT(SRDHM(wrap32(x · 2^max(shift,0)), multiplier), max(-shift,0))``.

    Raises
    ------
    TypeError, ValueError
        On non-integer inputs or values out of range; the message names the argument.
    """
    where = "multiply_by_quantized_multiplier"
    x = _int32_values(where, "x", x)
    m = _int32_values(where, "multiplier", multiplier)
    s = _int32_values(where, "shift", shift)
    if s.size and (s.min() < MIN_SHIFT or s.max() > MAX_SHIFT):
        raise ValueError(f"{where}: shift must be in {MIN_SHIFT}..{MAX_SHIFT}, "
                         f"got [{s.min()}, {s.max()}]")
    left = np.maximum(s, 0)
    right = np.maximum(-s, 0)
    shifted = wrap_int32(x << left)              # 32-bit sll: wraps like the C int multiply
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, m), right)


def _quantize_array(real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized QuantizeMultiplier for finite, non-negative float64 values (int64 results)."""
    q, shift = np.frexp(real)                    # real = q · 2^shift, q in [0.5, 1); frexp(0) = (0, 0)
    q_fixed = np.floor(q * 2.0**31 + 0.5).astype(np.int64)   # std::round (q ≥ 0): exact in float64
    shift = shift.astype(np.int64)
    renorm = q_fixed == (1 << 31)
    q_fixed = np.where(renorm, q_fixed // 2, q_fixed)
    shift = np.where(renorm, shift + 1, shift)
    tiny = shift < -31
    return np.where(tiny, 0, q_fixed), np.where(tiny, 0, shift)


def quantize_multiplier(real_multiplier):
    """TFLite ``QuantizeMultiplier``: encode a real multiplier as ``(m, shift)``.

    ``real ≈ m · 2^(shift - 31)`` with ``m`` in [2^30, 2^31) (or ``(0, 0)`` for 0 and for
    multipliers below about 2^-32, as TFLite does).

    Parameters
    ----------
    real_multiplier : float or array_like of float, ≥ 0 and < 2^30
        Typically ``input_scale · weight_scale / output_scale``; an array gives per-channel values.

    Returns
    -------
    (m, shift)
        Python ints for a scalar input; int32 ndarrays of the input's shape otherwise.

    Raises
    ------
    ValueError
        If a multiplier is negative, not finite, or so large that ``shift`` would exceed
        ``MAX_SHIFT`` (30).
    TypeError
        If the input is not real-valued.
    """
    where = "quantize_multiplier"
    scalar = isinstance(real_multiplier, numbers.Real) and not isinstance(real_multiplier, bool)
    arr = np.asarray(real_multiplier)
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.floating)
                                     or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{where}: real_multiplier must be real-valued, got {real_multiplier!r}")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        raise ValueError(f"{where}: real_multiplier must be finite and >= 0, "
                         f"got {arr[bad].ravel()[0]!r}")
    m, s = _quantize_array(arr)
    if s.size and s.max() > MAX_SHIFT:
        raise ValueError(f"{where}: real_multiplier {arr.max()!r} is too large "
                         f"(shift {s.max()} > {MAX_SHIFT})")
    if scalar or arr.ndim == 0:
        return int(m), int(s)
    return m.astype(np.int32), s.astype(np.int32)


def _per_channel(where: str, name: str, value, acc_shape, axis: int) -> np.ndarray:
    """Broadcast a scalar or a per-channel [C] vector against ``acc`` along ``axis``."""
    v = np.asarray(value)
    if v.ndim == 0:
        return v.astype(np.int64)
    if v.ndim != 1 or v.shape[0] != acc_shape[axis]:
        raise ValueError(
            f"{where}: {name} must be a scalar or have shape [C] = [{acc_shape[axis]}] "
            f"(acc.shape[{axis}]), got shape {v.shape}")
    shape = [1] * len(acc_shape)
    shape[axis] = v.shape[0]
    return v.reshape(shape)


def requantize(acc, multiplier, shift, out_zero_point: int, axis: int = -1,
               relu: bool = False, bias=None) -> np.ndarray:
    """Scale int32 accumulators to int8: bias add, fixed-point multiply, zero point, clamp.

    For every element::

        x = wrap32(acc + bias[c])                      # 32-bit add
        y = multiply_by_quantized_multiplier(x, multiplier[c], shift[c])
        out = clamp(y + out_zero_point, lo, 127)       # lo = out_zero_point if relu else -128

    where ``c`` is the index along ``axis`` (per-channel) or the scalar value (per-tensor).
    The zero-point add is exact (equivalently ``clamp(y, lo - zp, 127 - zp) + zp``, which is
    how a 32-bit codelet should order it to avoid a wrap when ``|y|`` is near 2^31).
    Rounding is documented in this module's docstring.

    Parameters
    ----------
    acc : ndarray of int32, any shape with ``ndim ≥ 1``
        Accumulators (e.g. from :func:`~tessera.golden_model.kernels.matmul` or ``conv2d``).
    multiplier : int or array_like of int32, scalar or shape [C]
        Quantized multiplier(s) from :func:`quantize_multiplier`.
    shift : int or array_like of int, scalar or shape [C], values in -31..30
        Matching exponent(s).
    out_zero_point : int in -128..127
        Output zero point.
    axis : int, default -1
        Channel axis of ``acc`` used by per-channel ``multiplier``/``shift``/``bias``.
    relu : bool, default False
        Fused ReLU: clamp below at the output zero point (the int8 code for real 0).
    bias : None, int or array_like of int32, scalar or shape [C]
        Added to the accumulator (wrapping int32 add) before scaling; already in the
        accumulator's scale (``input_scale · weight_scale``).

    Returns
    -------
    ndarray of int8, same shape as ``acc``

    Raises
    ------
    TypeError
        If ``acc`` is not an int32 array or a parameter has the wrong type.
    ValueError
        If a per-channel parameter's length differs from ``acc.shape[axis]``, ``axis`` is out
        of range, or a value is out of range.
    """
    where = "requantize"
    acc = as_int_array(where, "acc", acc, np.int32)
    if acc.ndim == 0:
        raise ValueError(f"{where}: acc must have at least one dimension")
    axis = as_int(where, "axis", axis, -acc.ndim, acc.ndim - 1) % acc.ndim
    zp = as_int(where, "out_zero_point", out_zero_point, INT8_MIN, INT8_MAX)
    if not isinstance(relu, (bool, np.bool_)):
        raise TypeError(f"{where}: relu must be a bool, not {relu!r}")
    m = _per_channel(where, "multiplier", _int32_values(where, "multiplier", multiplier),
                     acc.shape, axis)
    s = _per_channel(where, "shift", _int32_values(where, "shift", shift), acc.shape, axis)
    x = acc.astype(np.int64)
    if bias is not None:
        b = _per_channel(where, "bias", _int32_values(where, "bias", bias), acc.shape, axis)
        x = wrap_int32(x + b).astype(np.int64)
    y = multiply_by_quantized_multiplier(x, m, s).astype(np.int64) + zp
    lo = zp if relu else INT8_MIN
    return np.clip(y, lo, INT8_MAX).astype(np.int8)
