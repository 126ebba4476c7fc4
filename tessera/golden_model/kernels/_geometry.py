"""Window geometry shared by conv2d and the pools (private): padding and output size.

Semantics source: TensorFlow ``padding='VALID' | 'SAME'`` (tf.nn.conv2d documentation,
"Padding"): for SAME the output size is ``ceil(in / stride)`` and the total padding
``max((out - 1)·stride + k - in, 0)`` is split with the smaller half first (top/left).
"""

from __future__ import annotations

import numbers

from ._checks import as_int


def resolve_padding(where: str, padding, in_hw, k_hw, stride):
    """Return ``((top, bottom), (left, right)), (out_h, out_w)``.

    ``padding`` is ``'valid'``, ``'same'``, an int (all sides), a pair ``(ph, pw)``
    (symmetric per axis) or ``((top, bottom), (left, right))``.
    """
    if isinstance(padding, str):
        mode = padding.lower()
        if mode == "valid":
            pads = ((0, 0), (0, 0))
        elif mode == "same":
            pads = []
            for n, k, s in zip(in_hw, k_hw, stride):
                out = -(-n // s)
                total = max((out - 1) * s + k - n, 0)
                pads.append((total // 2, total - total // 2))
            pads = tuple(pads)
        else:
            raise ValueError(f"{where}: padding must be 'valid', 'same' or explicit, not {padding!r}")
    elif isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        p = as_int(where, "padding", padding, lo=0)
        pads = ((p, p), (p, p))
    else:
        try:
            a, b = padding
            if isinstance(a, numbers.Integral):
                pads = ((as_int(where, "padding", a, lo=0),) * 2, (as_int(where, "padding", b, lo=0),) * 2)
            else:
                (t, bo), (le, r) = a, b
                pads = tuple((as_int(where, "padding", u, lo=0), as_int(where, "padding", v, lo=0))
                             for u, v in ((t, bo), (le, r)))
        except (TypeError, ValueError) as e:
            if isinstance(e, ValueError) and str(e).startswith(where):
                raise
            raise TypeError(f"{where}: padding must be 'valid', 'same', an int, (ph, pw) or "
                            f"((top, bottom), (left, right)), not {padding!r}") from None
    out = []
    for axis, (n, k, s, (p0, p1)) in enumerate(zip(in_hw, k_hw, stride, pads)):
        if max(p0, p1) >= k:
            raise ValueError(f"{where}: padding {p0, p1} on axis {'HW'[axis]} must be smaller "
                             f"than the kernel size {k}")
        span = n + p0 + p1 - k
        if span < 0:
            raise ValueError(f"{where}: kernel size {k} exceeds the padded input size "
                             f"{n + p0 + p1} on axis {'HW'[axis]}")
        out.append(span // s + 1)
    return pads, tuple(out)
