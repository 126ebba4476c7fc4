"""ONNX / onnxruntime quantization arithmetic in IEEE-754 float32 (the second requantize rule).

Semantics sources:

- ONNX operator specification, ``QuantizeLinear`` (opset 10-23): ``y = saturate(round(x / y_scale)
  + y_zero_point)`` with round half to even; ``DequantizeLinear``: ``y = (x - x_zero_point) ·
  x_scale``; ``QLinearConv`` / ``QLinearMatMul``: int32 accumulation of ``(x - x_zp)(w - w_zp)``,
  int32 bias at scale ``x_scale · w_scale``, output requantized to ``y_scale`` / ``y_zero_point``.
- onnxruntime's CPU provider (what a default ``InferenceSession`` runs; MLAS
  ``MlasRequantizeOutput``, ``MlasQuantizeLinear``, the ``QLinearConv`` / ``QLinearMatMul`` /
  ``QGemm`` kernels and ``MlasQLinearGlobalAveragePool``): every step is one float32 operation,
  so the result is fixed by IEEE-754 single precision with round-to-nearest-even:

  * multiplier ``M = fl32(fl32(x_scale · w_scale) / y_scale)`` (evaluated left to right);
  * requantize: ``y = clamp(rne(fl32(fl32(acc + bias) · M)), qmin - zp, qmax - zp) + zp`` —
    ``acc + bias`` is a wrapping 32-bit add, ``fl32(int)`` rounds to nearest even (exact below
    2^24), ``rne`` is float-to-int conversion rounding half to even (``cvtps2dq``). onnxruntime
    clamps in float before converting; since the bounds are integers this equals clamping after;
  * quantize: ``y = clamp(rne(fl32(x / scale)), qmin - zp, qmax - zp) + zp``; NaN gives ``qmin``
    (the AVX-512 kernel's ``max(NaN, lo) = lo``);
  * dequantize: ``y = fl32(fl32(x - zp) · scale)``.

numpy evaluates ``float32 · float32`` and ``float32 / float32`` as single IEEE operations and
``np.rint`` rounds half to even, so these functions are the float32 rule itself. The tile code that
computes the same integers (``tessera/toolchain/onnx/codelets``) uses only integer instructions: see
docs/architecture.md §11 and :mod:`tessera.toolchain.onnx` for why it is exact.
"""

from __future__ import annotations

import numpy as np

from ._checks import wrap_int32

__all__ = ["float32_multiplier", "requantize_float32", "quantize_linear", "dequantize_linear",
           "qrange"]


def qrange(dtype) -> tuple[int, int]:
    """``(qmin, qmax)`` of an 8-bit quantized type: int8 → (-128, 127), uint8 → (0, 255)."""
    dt = np.dtype(dtype)
    if dt == np.int8:
        return -128, 127
    if dt == np.uint8:
        return 0, 255
    raise TypeError(f"qrange: quantized type must be int8 or uint8, not {dt.name}")


def _f32(where: str, name: str, value) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"{where}: {name} must be real-valued, got dtype {arr.dtype.name}")
    return arr.astype(np.float32)


def _channel(v: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """Reshape a per-channel [C] vector to broadcast along ``axis`` of an ``ndim`` array."""
    if v.ndim == 0:
        return v
    shape = [1] * ndim
    shape[axis] = v.shape[0]
    return v.reshape(shape)


def float32_multiplier(x_scale, w_scale, y_scale) -> np.ndarray:
    """onnxruntime's output multiplier ``fl32(fl32(x_scale · w_scale) / y_scale)``.

    Parameters
    ----------
    x_scale : float or array_like, scalar
        Input scale (float32).
    w_scale : float or array_like [C]
        Weight scale, per tensor or per output channel (float32).
    y_scale : float or array_like, scalar
        Output scale (float32).

    Returns
    -------
    ndarray of float32, the broadcast shape of the three (scalar or [C])
    """
    w = "float32_multiplier"
    with np.errstate(all="ignore"):
        return (_f32(w, "x_scale", x_scale) * _f32(w, "w_scale", w_scale)) / _f32(w, "y_scale", y_scale)


def requantize_float32(acc, multiplier, out_zero_point: int, *, dtype="int8", bias=None,
                       axis: int = -1) -> np.ndarray:
    """int32 accumulators → 8-bit codes with onnxruntime's float32 rule.

    For every element (``c`` = index along ``axis`` for per-channel parameters)::

        x = wrap32(acc + bias[c])
        y = clamp(rne(fl32(fl32(x) · M[c])), qmin - zp, qmax - zp) + zp

    Parameters
    ----------
    acc : array_like of int (int32 range), ``ndim ≥ 1``
        Accumulators ``Σ (x - x_zp)(w - w_zp)`` (e.g. from :func:`~tessera.golden_model.kernels.matmul`).
    multiplier : float32 scalar or array_like [C]
        ``M`` from :func:`float32_multiplier` (positive).
    out_zero_point : int
        Output zero point, inside the range of ``dtype``.
    dtype : {"int8", "uint8"}
        Output type; gives ``qmin, qmax``.
    bias : None or array_like of int32, scalar or [C]
        Int32 bias at scale ``x_scale · w_scale``, added with 32-bit wrap.
    axis : int
        Channel axis of ``acc`` for per-channel ``multiplier`` / ``bias``.

    Returns
    -------
    ndarray of ``dtype``, the shape of ``acc``
    """
    qmin, qmax = qrange(dtype)
    a = np.asarray(acc).astype(np.int64)
    axis = axis % a.ndim
    if bias is not None:
        a = wrap_int32(a + _channel(np.asarray(bias).astype(np.int64), a.ndim, axis)).astype(np.int64)
    else:
        a = wrap_int32(a).astype(np.int64)
    m = _channel(_f32("requantize_float32", "multiplier", multiplier), a.ndim, axis)
    with np.errstate(all="ignore"):
        f = a.astype(np.float32) * m                              # fl32(x) · M, one rounding
    zp = int(out_zero_point)
    f = np.clip(f, np.float32(qmin - zp), np.float32(qmax - zp))  # onnxruntime: clamp in float
    return (np.rint(f).astype(np.int64) + zp).astype(dtype)


def quantize_linear(x, scale, zero_point, *, dtype="int8", axis: int = 1) -> np.ndarray:
    """ONNX ``QuantizeLinear`` of float32 ``x`` as onnxruntime's CPU provider computes it.

    Parameters
    ----------
    x : array_like of float32
    scale : float32 scalar or array_like [C] (per-axis), positive
    zero_point : int scalar or array_like [C]
    dtype : {"int8", "uint8"}
    axis : int
        The per-axis quantization axis (ignored for scalar parameters).

    Returns
    -------
    ndarray of ``dtype``
        ``clamp(rne(fl32(x / scale)), qmin - zp, qmax - zp) + zp``; NaN → ``qmin``.
    """
    qmin, qmax = qrange(dtype)
    x = np.asarray(x, dtype=np.float32)
    ax = axis % x.ndim if x.ndim else 0
    s = _channel(_f32("quantize_linear", "scale", scale), x.ndim, ax)
    zp = _channel(np.asarray(zero_point).astype(np.int64), x.ndim, ax)
    with np.errstate(all="ignore"):
        q = x / s
    lo = (qmin - zp).astype(np.float32)
    hi = (qmax - zp).astype(np.float32)
    q = np.where(np.isnan(q), lo, q)
    q = np.minimum(np.maximum(q, lo), hi)
    return (np.rint(q).astype(np.int64) + zp).astype(dtype)


def dequantize_linear(x, scale, zero_point=0, *, axis: int = 1) -> np.ndarray:
    """ONNX ``DequantizeLinear``: ``fl32(fl32(x - zp) · scale)``.

    Parameters
    ----------
    x : array_like of int8, uint8 or int32
    scale : float32 scalar or array_like [C]
    zero_point : int scalar or array_like [C]
    axis : int

    Returns
    -------
    ndarray of float32, the shape of ``x``
    """
    x = np.asarray(x)
    ax = axis % x.ndim if x.ndim else 0
    s = _channel(_f32("dequantize_linear", "scale", scale), x.ndim, ax)
    zp = _channel(np.asarray(zero_point).astype(np.int64), x.ndim, ax)
    k = wrap_int32(x.astype(np.int64) - zp)
    with np.errstate(all="ignore"):
        return k.astype(np.float32) * s
