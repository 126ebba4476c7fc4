"""Dense int8 matrix multiply with int32 accumulation.

Semantics source: the Tessera ``dot4`` instruction (docs/architecture.md, section 3.3):
``rd ← rd + Σ s8(a_i)·s8(b_i) mod 2^32``. Each int8 × int8 product is formed exactly
(it needs 15 bits: -128 · -128 = 16384) and the running sum is kept modulo 2^32, as the
hardware's 32-bit adds do. Because the sum of exact products is computed here in int64
(exact for K < 2^48) and reduced modulo 2^32 once at the end, the result equals any
order of 32-bit wrapping additions (addition modulo 2^32 is associative).
"""

from __future__ import annotations

import numpy as np

from ._checks import INT8_MAX, INT8_MIN, as_int, as_int_array, wrap_int32

__all__ = ["matmul"]


def matmul(a, b, *, a_zero_point: int = 0, b_zero_point: int = 0) -> np.ndarray:
    """Integer matrix product ``Σ_k (a[m,k] - a_zp) · (b[k,n] - b_zp)`` wrapped to int32.

    Parameters
    ----------
    a : ndarray of int8, shape [M, K]
        Left operand (e.g. activations, one row per sample).
    b : ndarray of int8, shape [K, N]
        Right operand (e.g. weights, one column per output channel).
    a_zero_point, b_zero_point : int, optional
        Zero points in -128..127 subtracted from the operands before the product
        (TFLite convention, ``real = scale · (q - zero_point)``). Default 0, which is
        exactly what a tile computes with ``dot4``; a nonzero zero point is usually
        folded into the bias instead (``-a_zp · Σ_k b[k, n]``).

    Returns
    -------
    ndarray of int32, shape [M, N]
        The sum of exact (widened) products, reduced modulo 2^32 into int32
        (two's-complement wrap, like 32-bit hardware adds; no saturation).

    Raises
    ------
    TypeError
        If ``a`` or ``b`` is not an int8 array, or a zero point is not an int.
    ValueError
        If the operands are not 2-D, the inner dimensions differ, or a zero point
        is out of the int8 range.
    """
    where = "matmul"
    a = as_int_array(where, "a", a, np.int8, ndim=2)
    b = as_int_array(where, "b", b, np.int8, ndim=2)
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"{where}: inner dimensions differ: a is {a.shape} [M, K], b is {b.shape} [K, N]")
    azp = as_int(where, "a_zero_point", a_zero_point, INT8_MIN, INT8_MAX)
    bzp = as_int(where, "b_zero_point", b_zero_point, INT8_MIN, INT8_MAX)
    # Widen before multiplying: int8 · int8 in int8 would wrap (-128 · -128 = 16384).
    a64 = a.astype(np.int64) - azp
    b64 = b.astype(np.int64) - bzp
    return wrap_int32(a64 @ b64)
