"""2-D convolution (NHWC, int8 in, int32 out) via im2col, regular and depthwise.

Semantics source: TFLite reference ``Conv`` / ``DepthwiseConv`` for int8
(``tensorflow/lite/kernels/internal/reference/integer_ops/conv.h`` and ``depthwise_conv.h``):
``acc[n, y, x, o] = Σ_{i, j, c} (in[n, y·sh + i - pt, x·sw + j - pl, c] - in_zp) · (w[i, j, c, o] - w_zp)``
where taps in the padding contribute nothing — exactly as if the padding were filled with the input
zero point, which is what :func:`im2col` does. Padding geometry follows TensorFlow (see
``_geometry.py``). Accumulation is exact and reduced modulo 2^32 into int32 (32-bit adds), like
:func:`~tessera.golden_model.kernels.matmul`.

Depthwise weights are ``[KH, KW, C, mult]`` and output channel ``c · mult + m`` comes from input
channel ``c`` (TFLite's ordering of its ``[1, KH, KW, C·mult]`` filter).
"""

from __future__ import annotations

import numpy as np

from ._checks import INT8_MAX, INT8_MIN, as_int, as_int_array, pair, wrap_int32
from ._geometry import resolve_padding

__all__ = ["im2col", "conv2d"]


def _windows(x: np.ndarray, kh: int, kw: int, stride, pads, out_hw, pad_value) -> np.ndarray:
    """Strided sliding windows ``[N, OH, OW, KH, KW, C]`` of the padded input (a view)."""
    (pt, pb), (pl, pr) = pads
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=pad_value)
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))  # [N,H',W',C,KH,KW]
    win = win[:, ::stride[0], ::stride[1]][:, :out_hw[0], :out_hw[1]]
    return win.transpose(0, 1, 2, 4, 5, 3)


def im2col(x, kernel_size, *, stride=1, padding="valid", pad_value: int = 0) -> np.ndarray:
    """Gather convolution patches: ``[N, H, W, C]`` → ``[N, OH, OW, KH·KW·C]``.

    Patch element order is ``(kh, kw, c)`` (C order), matching
    ``w.reshape(KH·KW·Cin, Cout)`` for weights ``[KH, KW, Cin, Cout]``, so a convolution is
    ``im2col(x) @ w.reshape(-1, Cout)``.

    Parameters
    ----------
    x : ndarray of int8, shape [N, H, W, C]
        Input activations, NHWC.
    kernel_size : int or (int, int)
        ``(KH, KW)``.
    stride : int or (int, int), default 1
    padding : 'valid', 'same', int, (ph, pw) or ((top, bottom), (left, right))
        TensorFlow semantics for the strings.
    pad_value : int in -128..127, default 0
        Value of the padding taps: pass the input zero point so that padding means real 0.

    Returns
    -------
    ndarray of int8, shape [N, OH, OW, KH·KW·C]

    Raises
    ------
    TypeError, ValueError
        On a wrong dtype/rank, a kernel larger than the padded input, or bad parameters.
    """
    where = "im2col"
    x = as_int_array(where, "x", x, np.int8, ndim=4)
    kh, kw = pair(where, "kernel_size", kernel_size)
    stride = pair(where, "stride", stride)
    pv = as_int(where, "pad_value", pad_value, INT8_MIN, INT8_MAX)
    pads, out_hw = resolve_padding(where, padding, x.shape[1:3], (kh, kw), stride)
    win = _windows(x, kh, kw, stride, pads, out_hw, np.int8(pv))
    n, oh, ow = win.shape[:3]
    return np.ascontiguousarray(win).reshape(n, oh, ow, kh * kw * x.shape[3])


def conv2d(x, w, stride=1, padding="valid", input_zero_point: int = 0,
           weight_zero_point: int = 0, depthwise: bool = False) -> np.ndarray:
    """Quantized 2-D convolution, NHWC, int8 operands, int32 accumulators.

    Parameters
    ----------
    x : ndarray of int8, shape [N, H, W, Cin]
        Input activations.
    w : ndarray of int8, shape [KH, KW, Cin, Cout], or [KH, KW, Cin, mult] if ``depthwise``
        Filter. No bias: add it in :func:`~tessera.golden_model.kernels.requantize`.
    stride : int or (int, int), default 1
    padding : 'valid', 'same', int, (ph, pw) or ((top, bottom), (left, right)), default 'valid'
        Padding taps hold the input zero point (i.e. real 0).
    input_zero_point : int in -128..127, default 0
        Subtracted from every input tap.
    weight_zero_point : int in -128..127, default 0
        Subtracted from every weight (0 for TFLite's symmetric int8 weights).
    depthwise : bool, default False
        Depthwise convolution: output channel ``c · mult + m`` uses input channel ``c`` only.

    Returns
    -------
    ndarray of int32, shape [N, OH, OW, Cout] (``Cin · mult`` if depthwise)
        ``Σ (x - in_zp)(w - w_zp)`` over the window, wrapped modulo 2^32.

    Raises
    ------
    TypeError
        If ``x`` or ``w`` is not int8, or a parameter has the wrong type.
    ValueError
        If ranks or channel counts disagree, the kernel does not fit, or a parameter is out of range.
    """
    where = "conv2d"
    x = as_int_array(where, "x", x, np.int8, ndim=4)
    w = as_int_array(where, "w", w, np.int8, ndim=4)
    kh, kw, wc, cout = w.shape
    if wc != x.shape[3]:
        kind = "[KH, KW, C, mult]" if depthwise else "[KH, KW, Cin, Cout]"
        raise ValueError(f"{where}: w has {wc} input channels (shape {w.shape} = {kind}) but x has "
                         f"{x.shape[3]} (shape {x.shape} = [N, H, W, C])")
    izp = as_int(where, "input_zero_point", input_zero_point, INT8_MIN, INT8_MAX)
    wzp = as_int(where, "weight_zero_point", weight_zero_point, INT8_MIN, INT8_MAX)
    stride = pair(where, "stride", stride)
    pads, out_hw = resolve_padding(where, padding, x.shape[1:3], (kh, kw), stride)
    w64 = w.astype(np.int64) - wzp
    win = _windows(x, kh, kw, stride, pads, out_hw, np.int8(izp))  # [N, OH, OW, KH, KW, C]
    n, oh, ow = win.shape[:3]
    if depthwise:
        # One multiply per (tap, channel, mult): einsum over the KH·KW taps only.
        acc = np.einsum("nhwijc,ijcm->nhwcm", win.astype(np.int64) - izp, w64)
        return wrap_int32(acc.reshape(n, oh, ow, wc * cout))
    cols = win.reshape(n * oh * ow, kh * kw * wc).astype(np.int64) - izp   # im2col
    acc = cols @ w64.reshape(kh * kw * wc, cout)
    return wrap_int32(acc.reshape(n, oh, ow, cout))
