"""onnxruntime's float32 arithmetic of the ``com.microsoft`` quantized element-wise and pooling
operators (``QLinearAdd``, ``QLinearMul``, ``QLinearAveragePool``), bit-exact references for the
ONNX importer's codelets (``tessera/toolchain/onnx/codelets``, docs/architecture.md §11).

Semantics sources (onnxruntime's CPU provider, what a default ``InferenceSession`` runs on x86-64
with AVX2; checked against onnxruntime element by element in ``tests/test_onnx_qlinear.py``):

- ``QLinearAdd`` (onnxruntime docs/ContribOperators.md; kernel
  ``contrib_ops/cpu/quantization/qlinear_binary_op.cc`` → MLAS ``MlasQLinearAddKernelAvx2Helper``,
  ``lib/intrinsics/avx2/qladd_avx2.cpp``): with ``rA = fl32(A_scale / C_scale)``,
  ``rB = fl32(B_scale / C_scale)`` and the fixed part
  ``F = fl32(zC - fma(rA, zA, fl32(rB · zB)))`` (the compiler contracts ``rA·zA + rB·zB`` into
  one fused multiply-add), every element is ``C = sat(cvt(fma(a, rA, fma(b, rB, F))))`` on the
  raw codes ``a``, ``b`` (as float32), ``cvt`` = ``cvtps2dq`` (round half to even, out of
  range → INT32_MIN) and ``sat`` = the saturating packs to 16 and then 8 bits. When onnxruntime's
  broadcast loop finds input A scalar in its innermost span it calls the kernel with the inputs
  swapped, so the roles of A and B (and the fixed part) swap: see :func:`ort_broadcast_kind`.
- ``QLinearMul`` (MLAS ``qlmul.cpp``, SSE2, no contraction): ``R = fl32(fl32(A_scale ·
  B_scale) / C_scale)``, ``p = (a - zA)(b - zB)`` (exact int32),
  ``C = sat(cvt(fl32(fl32(fl32(p) · R) + zC)))``.
- ``QLinearAveragePool`` (``contrib_ops/cpu/quantization/qlinear_pool.cc``): the input is
  dequantized ``d = fl32(x_scale · fl32(x - x_zp))``, each window is summed in float32 from 0 in
  row-major order, divided by the count (``count_include_pad``: the kernel size, else the
  window clipped to the input) and quantized ``y = clamp(int(nearbyint(fl32(fl32(s / y_scale)
  + y_zp))), qmin, qmax)`` (out of int32 range → INT32_MIN → qmin, as x86 converts). A kernel
  that covers the whole image without padding takes onnxruntime's global average pool path
  instead (int32 sum, :func:`~tessera.golden_model.kernels.float_quant.requantize_float32` with
  ``fl32(x_scale / fl32(y_scale · hw))``).

numpy's float32 ``+ - * /`` are single IEEE-754 operations (round half to even); the fused
multiply-add is :func:`fma_float32`.
"""

from __future__ import annotations

import numpy as np

from .float_quant import qrange, requantize_float32

__all__ = ["fma_float32", "cvt_rne_int32", "ort_broadcast_kind", "qlinear_add_fixed",
           "qlinear_softmax_table", "qlinear_softmax",
           "qlinear_add", "qlinear_mul", "qlinear_average_pool"]

_INT32_MIN = -(1 << 31)


def fma_float32(a, b, c) -> np.ndarray:
    """``fl32(a · b + c)`` with one rounding (IEEE-754 fusedMultiplyAdd, round half to even).

    The product of two float32 values is exact in float64; the float64 sum is corrected with
    its exact error (TwoSum) where it lands on a float32 rounding midpoint, the only case in
    which rounding the float64 sum to float32 differs from rounding the exact sum.

    Parameters
    ----------
    a, b, c : array_like of float32 (finite), broadcast together

    Returns
    -------
    ndarray of float32
    """
    a = np.asarray(a, np.float32).astype(np.float64)
    b = np.asarray(b, np.float32).astype(np.float64)
    c = np.asarray(c, np.float32).astype(np.float64)
    p = a * b
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)
    with np.errstate(over="ignore"):
        r = s.astype(np.float32)
    d = s - r.astype(np.float64)
    toward = np.where(d > 0, np.float32(np.inf), np.float32(-np.inf)).astype(np.float32)
    nb = np.nextafter(r, toward)
    gap = nb.astype(np.float64) - r.astype(np.float64)
    mid = (d != 0) & (2 * d == gap)
    up = mid & (err != 0) & (np.sign(err) == np.sign(d))
    return np.where(up, nb, r).astype(np.float32)


def cvt_rne_int32(v) -> np.ndarray:
    """x86 ``cvtps2dq`` of float32 ``v``: round half to even; NaN, infinities and values outside
    the int32 range give INT32_MIN. Returns int64."""
    v = np.asarray(v, np.float32).astype(np.float64)
    ok = np.isfinite(v) & (v < 2.0 ** 31) & (v >= -2.0 ** 31)
    r = np.rint(np.where(ok, v, 0.0))
    ok &= (r < 2.0 ** 31)
    return np.where(ok, r, _INT32_MIN).astype(np.int64)


def _sat(y, dtype) -> np.ndarray:
    lo, hi = qrange(dtype)
    return np.clip(np.clip(y, -32768, 32767), lo, hi).astype(dtype)


def ort_broadcast_kind(shape_a, shape_b) -> str:
    """Which span function onnxruntime's ``BroadcastLooper`` uses for inputs of these shapes.

    The spans are the innermost output dimensions (size-1 output dimensions skipped) over which
    neither input changes between broadcasting and not. Returns ``"scalar_a"`` when input A
    is broadcast (constant) over its innermost span (this includes a 1-element A, and two
    1-element inputs), ``"scalar_b"`` when B is, else ``"vector"``.
    """
    out = np.broadcast_shapes(tuple(shape_a), tuple(shape_b))
    ra, rb = len(out) - len(shape_a), len(out) - len(shape_b)
    for i in range(len(out) - 1, -1, -1):
        if out[i] == 1:
            continue
        da = shape_a[i - ra] if i >= ra else 1
        db = shape_b[i - rb] if i >= rb else 1
        if da == 1:
            return "scalar_a"
        if db == 1:
            return "scalar_b"
        return "vector"
    return "scalar_a"


def qlinear_add_fixed(r_a, z_a, r_b, z_b, z_c) -> np.float32:
    """The fixed part ``fl32(zC - fma(rA, zA, fl32(rB · zB)))`` of MLAS's QLinearAdd."""
    rb_zb = np.float32(np.float32(r_b) * np.float32(z_b))
    return np.float32(np.float32(z_c) - fma_float32(r_a, np.float32(z_a), rb_zb))


def _scalar(v, what):
    a = np.asarray(v).reshape(-1)
    if a.size != 1:
        raise ValueError(f"{what} must be a scalar (per-tensor), got {a.size} values")
    return a[0]


def qlinear_add(a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale, c_zero_point):
    """``com.microsoft`` QLinearAdd as onnxruntime's CPU provider computes it (module docstring).

    Parameters
    ----------
    a, b : ndarray of int8 or uint8 (the same type), numpy-broadcastable
    a_scale, b_scale, c_scale : float32 scalars
    a_zero_point, b_zero_point, c_zero_point : scalars of the data type

    Returns
    -------
    ndarray of the data type, the broadcast shape
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.dtype not in (np.int8, np.uint8):
        raise TypeError(f"qlinear_add: A and B must both be int8 or both uint8, got "
                        f"{a.dtype.name} and {b.dtype.name}")
    sa, sb, sc = (np.float32(_scalar(s, n)) for s, n in ((a_scale, "a_scale"),
                                                        (b_scale, "b_scale"), (c_scale, "c_scale")))
    za, zb, zc = (int(_scalar(z, n)) for z, n in ((a_zero_point, "a_zero_point"),
                                                  (b_zero_point, "b_zero_point"),
                                                  (c_zero_point, "c_zero_point")))
    kind = ort_broadcast_kind(a.shape, b.shape)
    if kind == "scalar_a":      # onnxruntime calls the kernel as (B, A)
        a, b, sa, sb, za, zb = b, a, sb, sa, zb, za
    ra, rb = np.float32(sa / sc), np.float32(sb / sc)
    f = qlinear_add_fixed(ra, za, rb, zb, zc)
    af, bf = np.broadcast_arrays(a.astype(np.float32), b.astype(np.float32))
    v = fma_float32(af, ra, fma_float32(bf, rb, f))
    return _sat(cvt_rne_int32(v), a.dtype)


def qlinear_mul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale, c_zero_point):
    """``com.microsoft`` QLinearMul as onnxruntime's CPU provider computes it (module docstring).

    Parameters and result as :func:`qlinear_add`.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.dtype not in (np.int8, np.uint8):
        raise TypeError(f"qlinear_mul: A and B must both be int8 or both uint8, got "
                        f"{a.dtype.name} and {b.dtype.name}")
    sa, sb, sc = (np.float32(_scalar(s, n)) for s, n in ((a_scale, "a_scale"),
                                                        (b_scale, "b_scale"), (c_scale, "c_scale")))
    za, zb, zc = (int(_scalar(z, n)) for z, n in ((a_zero_point, "a_zero_point"),
                                                  (b_zero_point, "b_zero_point"),
                                                  (c_zero_point, "c_zero_point")))
    r = np.float32(np.float32(sa * sb) / sc)
    p = (a.astype(np.int64) - za) * (b.astype(np.int64) - zb)
    v = ((p.astype(np.float32) * r).astype(np.float32) + np.float32(zc)).astype(np.float32)
    return _sat(cvt_rne_int32(v), a.dtype)


def qlinear_average_pool(x, x_scale, x_zero_point, y_scale, y_zero_point, kernel_shape,
                         strides=None, pads=None, count_include_pad=0, out_shape=None):
    """``com.microsoft`` QLinearAveragePool (NCHW, 1-D or 2-D) as onnxruntime computes it.

    Parameters
    ----------
    x : ndarray of int8 or uint8, [N, C, W] or [N, C, H, W]
    x_scale, y_scale : float32 scalars
    x_zero_point, y_zero_point : scalars of x's type
    kernel_shape, strides : sequences of 1 or 2 ints
    pads : sequence of 2 or 4 ints (begins, then ends)
    count_include_pad : int
    out_shape : sequence of ints, optional
        The pooled spatial shape (default: floor mode from ``pads``); onnxruntime's windows
        start at ``o · stride - pad_begin`` and are clipped to the input.

    Returns
    -------
    ndarray of x's type, [N, C, *out_shape]
    """
    x = np.asarray(x)
    dt = x.dtype
    qmin, qmax = qrange(dt)
    nd = len(kernel_shape)
    if x.ndim != nd + 2 or nd not in (1, 2):
        raise ValueError(f"qlinear_average_pool: x {list(x.shape)} and kernel {list(kernel_shape)}"
                         " must be 1-D or 2-D NCHW pooling")
    strides = list(strides or [1] * nd)
    pads = list(pads or [0] * (2 * nd))
    xs, ys = np.float32(x_scale), np.float32(y_scale)
    xz, yz = int(x_zero_point), int(y_zero_point)
    if nd == 1:
        x = x[:, :, None, :]
        kernel_shape, strides = [1] + list(kernel_shape), [1] + strides
        pads = [0, pads[0], 0, pads[1]]
        out_shape = None if out_shape is None else [1] + list(out_shape)
    n, c, H, W = x.shape
    kh, kw = kernel_shape
    if out_shape is None:
        out_shape = [(H + pads[0] + pads[2] - kh) // strides[0] + 1,
                     (W + pads[1] + pads[3] - kw) // strides[1] + 1]
    OH, OW = out_shape
    if (kh, kw) == (H, W) and not any(pads):
        hw = H * W
        acc = (x.astype(np.int64) - xz).reshape(n, c, hw).sum(axis=2)
        mult = np.float32(xs / np.float32(ys * np.float32(hw)))
        y = requantize_float32(acc, mult, yz, dtype=dt).reshape(n, c, 1, 1)
        return y[:, :, 0, :] if nd == 1 else y
    d = (xs * (x.astype(np.int64) - xz).astype(np.float32)).astype(np.float32)
    y = np.zeros((n, c, OH, OW), dt)
    for i in range(OH):
        hs = i * strides[0] - pads[0]
        he, hs = min(hs + kh, H), max(hs, 0)
        for j in range(OW):
            ws = j * strides[1] - pads[1]
            we, ws = min(ws + kw, W), max(ws, 0)
            acc = np.zeros((n, c), np.float32)
            for h in range(hs, he):
                for w in range(ws, we):
                    acc = (acc + d[:, :, h, w]).astype(np.float32)
            cnt = kh * kw if count_include_pad else (he - hs) * (we - ws)
            acc = (acc / np.float32(cnt)).astype(np.float32)
            v = ((acc / ys).astype(np.float32) + np.float32(yz)).astype(np.float32)
            y[:, :, i, j] = np.clip(cvt_rne_int32(v), qmin, qmax).astype(dt)
    return y[:, :, 0, :] if nd == 1 else y


def qlinear_softmax_table(x_scale, reduce_len: int, signed: bool) -> np.ndarray:
    """onnxruntime's QLinearSoftmax lookup table (``QlinearBuildLookupTableUint32``): 256
    float32 values ``fl32(exp((i - 255 + b) · x_scale))`` in double precision, with
    ``b = max(0, log(fl32(FLT_MAX / D)) - 5) / x_scale``, stored at byte ``i`` (uint8) or
    ``i - 128`` (int8). Python's ``math.exp``/``math.log`` are the C library's, as
    onnxruntime's ``std::exp``/``log`` are on the same machine.

    Returns
    -------
    ndarray of float32 [256], indexed by the byte
    """
    import math
    xs = float(np.float32(x_scale))
    fmax = np.float32(np.finfo(np.float32).max)
    b = math.log(float(np.float32(fmax / np.float32(reduce_len))))
    b = max(0.0, b - 5.0) / xs
    t = np.zeros(256, np.float32)
    for i in range(256):
        t[(i - 128) & 0xFF if signed else i] = np.float32(math.exp((float(i) - 255 + b) * xs))
    return t


def qlinear_softmax(x, x_scale, y_scale, y_zero_point, axis=-1, opset=13):
    """``com.microsoft`` QLinearSoftmax as onnxruntime's CPU kernel computes it
    (``contrib_ops/cpu/quantization/qlinear_softmax.cc``; also what its QDQ transformer makes of
    DequantizeLinear → Softmax → QuantizeLinear).

    Per row (the ``axis`` dimension for opset ≥ 13, everything from ``axis`` on for older
    opsets): ``e = table[x - max + 255]`` (the table of :func:`qlinear_softmax_table`; int8 rows
    are shifted to put the maximum at 127), ``s = Σ e`` in float32 in order,
    ``y = min(int(nearbyint(fl32(fl32(e · Y) / s))) + y_zp, qmax)`` with
    ``Y = floor(fl32(1 / y_scale))``. ``x``'s zero point does not enter.

    Parameters
    ----------
    x : ndarray of int8 or uint8
    x_scale, y_scale : float32 scalars
    y_zero_point : scalar of x's type
    axis : int
    opset : int
        The ``opset`` attribute (the model's default-domain opset).

    Returns
    -------
    ndarray of x's type, x's shape
    """
    x = np.asarray(x)
    dt = x.dtype
    signed = dt == np.int8
    axis = axis % x.ndim
    if opset < 13:
        rows = x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1)
    else:
        rows = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])
    d = rows.shape[1]
    t = qlinear_softmax_table(x_scale, d, signed)
    big_y = np.float32(np.floor(np.float32(np.float32(1.0) / np.float32(y_scale))))
    r = rows.astype(np.int64)
    mx = r.max(axis=1, keepdims=True)
    idx = ((r + 127 - mx) & 0xFF) if signed else (r + 255 - mx)
    e = t[idx]
    s = np.zeros(len(rows), np.float32)
    for j in range(d):
        s = (s + e[:, j]).astype(np.float32)
    q = ((e * big_y).astype(np.float32) / s[:, None]).astype(np.float32)
    n = cvt_rne_int32(q) + int(y_zero_point)
    out = np.minimum(n, qrange(dt)[1]).astype(dt)
    if opset < 13:
        return out.reshape(x.shape)
    shp = list(np.moveaxis(x, axis, -1).shape)
    return np.moveaxis(out.reshape(shp), -1, axis)
