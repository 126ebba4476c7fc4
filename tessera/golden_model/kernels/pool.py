"""int8 pooling: max, average and global average (NHWC).

Semantics source: TFLite reference int8 ``MaxPool`` / ``AveragePool``
(``tensorflow/lite/kernels/internal/reference/integer_ops/pooling.h``):

- padding taps are *ignored* (not counted, never the max); the window geometry follows
  TensorFlow 'valid'/'same' (see ``_geometry.py``);
- the average divides the int32 window sum by the number of real (non-padding) taps and
  rounds to nearest with **ties away from zero**:
  ``sum > 0 ? (sum + count/2) / count : (sum - count/2) / count`` with C truncating division;
- zero points pass through unchanged (input and output share scale and zero point, so the
  average of codes is the code of the average).
"""

from __future__ import annotations

import numpy as np

from ._checks import INT8_MAX, INT8_MIN, as_int_array, pair
from ._geometry import resolve_padding

__all__ = ["maxpool2d", "avgpool2d", "global_avgpool", "rounded_div"]


def rounded_div(total, count) -> np.ndarray:
    """Integer ``total / count`` rounded to nearest, ties away from zero (``count > 0``).

    Parameters
    ----------
    total : array_like of int
    count : array_like of int, positive, broadcastable with ``total``

    Returns
    -------
    ndarray of int64
    """
    total = np.asarray(total, dtype=np.int64)
    count = np.asarray(count, dtype=np.int64)
    return np.sign(total) * ((np.abs(total) + count // 2) // count)


def _pool_windows(where, x, pool_size, stride, padding, pad_value):
    x = as_int_array(where, "x", x, np.int8, ndim=4)
    ph, pw = pair(where, "pool_size", pool_size)
    stride = (ph, pw) if stride is None else pair(where, "stride", stride)
    pads, out_hw = resolve_padding(where, padding, x.shape[1:3], (ph, pw), stride)
    (pt, pb), (pl, pr) = pads
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=pad_value)
    win = np.lib.stride_tricks.sliding_window_view(xp, (ph, pw), axis=(1, 2))
    win = win[:, ::stride[0], ::stride[1]][:, :out_hw[0], :out_hw[1]]   # [N,OH,OW,C,PH,PW]
    return x, win, pads, stride, out_hw, (ph, pw)


def maxpool2d(x, pool_size, *, stride=None, padding="valid") -> np.ndarray:
    """Max pooling over ``pool_size`` windows.

    Parameters
    ----------
    x : ndarray of int8, shape [N, H, W, C]
    pool_size : int or (int, int)
    stride : int, (int, int) or None, default None (= ``pool_size``)
    padding : 'valid', 'same', int, (ph, pw) or ((top, bottom), (left, right)), default 'valid'
        Padding taps never win (they are filled with -128 and every window holds at least
        one real tap because padding is smaller than the window).

    Returns
    -------
    ndarray of int8, shape [N, OH, OW, C]

    Raises
    ------
    TypeError, ValueError
        On a wrong dtype/rank or geometry that does not fit.
    """
    _, win, *_ = _pool_windows("maxpool2d", x, pool_size, stride, padding, np.int8(INT8_MIN))
    return win.max(axis=(4, 5)).astype(np.int8)


def avgpool2d(x, pool_size, *, stride=None, padding="valid") -> np.ndarray:
    """Average pooling, rounding half away from zero; padding taps are not counted.

    Parameters
    ----------
    x : ndarray of int8, shape [N, H, W, C]
    pool_size : int or (int, int)
    stride : int, (int, int) or None, default None (= ``pool_size``)
    padding : 'valid', 'same', int, (ph, pw) or ((top, bottom), (left, right)), default 'valid'

    Returns
    -------
    ndarray of int8, shape [N, OH, OW, C]
        ``rounded_div(Σ window, number of real taps)`` (always within int8).

    Raises
    ------
    TypeError, ValueError
        On a wrong dtype/rank or geometry that does not fit.
    """
    where = "avgpool2d"
    x, win, pads, stride, out_hw, (ph, pw) = _pool_windows(where, x, pool_size, stride, padding, 0)
    total = win.astype(np.int64).sum(axis=(4, 5))
    ones = np.ones((1,) + x.shape[1:3] + (1,), dtype=np.int64)
    (pt, pb), (pl, pr) = pads
    mp = np.pad(ones, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    mwin = np.lib.stride_tricks.sliding_window_view(mp, (ph, pw), axis=(1, 2))
    count = mwin[:, ::stride[0], ::stride[1]][:, :out_hw[0], :out_hw[1]].sum(axis=(4, 5))
    return np.clip(rounded_div(total, count), INT8_MIN, INT8_MAX).astype(np.int8)


def global_avgpool(x, *, keepdims: bool = False) -> np.ndarray:
    """Average over all spatial positions, rounding half away from zero.

    Parameters
    ----------
    x : ndarray of int8, shape [N, H, W, C]
    keepdims : bool, default False
        Return ``[N, 1, 1, C]`` instead of ``[N, C]``.

    Returns
    -------
    ndarray of int8, shape [N, C] (or [N, 1, 1, C])
        ``rounded_div(Σ_{h,w} x, H·W)`` — the same arithmetic as :func:`avgpool2d` with a
        full-size window.

    Raises
    ------
    TypeError, ValueError
        If ``x`` is not a 4-D int8 array or has an empty spatial extent.
    """
    where = "global_avgpool"
    x = as_int_array(where, "x", x, np.int8, ndim=4)
    count = x.shape[1] * x.shape[2]
    if count == 0:
        raise ValueError(f"{where}: x has an empty spatial extent, shape {x.shape}")
    out = rounded_div(x.astype(np.int64).sum(axis=(1, 2), keepdims=keepdims), count)
    return out.astype(np.int8)
