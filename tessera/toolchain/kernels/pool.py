"""int8 pooling on tiles (NHWC): max, average and global average pool
(docs/compiler.md, "Kernel library").

Bit-exact with :func:`tessera.golden_model.kernels.maxpool2d`, :func:`~tessera.golden_model.kernels.avgpool2d`
and :func:`~tessera.golden_model.kernels.global_avgpool` (TFLite reference semantics: padding taps are
ignored, the average rounds half away from zero, zero points pass through).

Mapping ("owner computes"): output row ``(n, oh)`` lives on the tile holding the first real
input row of its window. Output rows whose input rows all lie in one interval of ``x`` on
that tile read ``x`` in place; the others (windows crossing a tile boundary) get a per-tile
halo buffer ``<name>.halo<i>`` filled by one ``Copy`` (one exchange phase for all of them).
One vertex per run of such output rows, codelet ``tsk_pool`` (``tessera/toolchain/codelets/pool.c``),
split over the contexts by output elements.
"""

from __future__ import annotations

import numpy as np

from tessera.golden_model.kernels._checks import pair
from tessera.golden_model.kernels._geometry import resolve_padding
from tessera.toolchain.graph.graph import Graph
from tessera.toolchain.graph.program import Copy, Execute, Sequence

from ._common import KernelError, check_var, codelet, unique_name

__all__ = ["maxpool2d", "avgpool2d", "global_avgpool", "MODE_MAX", "MODE_AVG"]

MODE_MAX, MODE_AVG = 0, 1
_FIELDS = (("x", "in", "int8"), ("y", "out", "int8"),
           ("h", "scalar"), ("w", "scalar"), ("c", "scalar"), ("ow", "scalar"),
           ("ph", "scalar"), ("pw", "scalar"), ("sh", "scalar"), ("sw", "scalar"),
           ("pt", "scalar"), ("pl", "scalar"), ("oh0", "scalar"), ("ih0", "scalar"),
           ("mode", "scalar"))


def _pool(graph: Graph, x, pool_size, stride, padding, mode: int, name: str, where: str):
    x = check_var(where, "x", x, "int8", 4)
    nb, h, w, c = x.shape
    try:
        ph, pw = pair(where, "pool_size", pool_size)
        sh, sw = (ph, pw) if stride is None else pair(where, "stride", stride)
        ((pt, _), (pl, _)), (oh, ow) = resolve_padding(where, padding, (h, w), (ph, pw),
                                                       (sh, sw))
    except (TypeError, ValueError) as e:
        raise KernelError(str(e)) from None
    if min(ph, pw, sh, sw) < 1:
        raise KernelError(f"{where}: pool_size and stride must be positive, got pool_size "
                          f"{(ph, pw)}, stride {(sh, sw)}")
    name = unique_name(graph, name)
    rowlen = w * c
    # per output row (n, o): input rows [lo, hi) of image n, the x interval of row lo
    rows = []
    for n in range(nb):
        for o in range(oh):
            lo, hi = max(o * sh - pt, 0), min(o * sh - pt + ph, h)
            first, last = (n * h + lo) * rowlen, (n * h + hi) * rowlen - 1
            ivi, ivl = (int(i) for i in x.interval_of(np.array([first, last])))
            rows.append((n, o, lo, hi, ivi, ivi == ivl))
    # output mapping: row (n, o) on the tile of x's interval ivi
    orow = ow * c
    y_iv = []
    for r, (n, o, lo, hi, ivi, _) in enumerate(rows):
        t = x.intervals[ivi].tile
        if y_iv and y_iv[-1][0] == t:
            y_iv[-1][2] += orow
        else:
            y_iv.append([t, r * orow, (r + 1) * orow])
    y = graph.add_variable(f"{name}.y", (nb, oh, ow, c), "int8", [tuple(v) for v in y_iv])
    # vertices: runs of rows with the same (image, x interval, in-place)
    groups = []
    for r, (n, o, lo, hi, ivi, local) in enumerate(rows):
        key = (n, ivi, local)
        if groups and groups[-1][0] == key:
            groups[-1][2] = o + 1
            groups[-1][4] = hi
        else:
            groups.append([key, o, o + 1, lo, hi])
    cd = codelet(graph, "tsk_pool", "pool.c", _FIELDS)
    cs = graph.add_compute_set(f"{name}.pool")
    srcs, dsts = [], []
    for (n, ivi, local), o0, o1, lo, hi in groups:
        t = x.intervals[ivi].tile
        if local:
            xin = x[n, lo:hi]
        else:
            if rowlen % 4:
                raise KernelError(
                    f"{where}: the windows of output rows {o0}..{o1 - 1} of image {n} cross "
                    f"tiles, so their input rows must be copied to tile {t}; the exchange "
                    f"moves whole words, which needs W·C = {w}·{c} = {rowlen} to be a "
                    "multiple of 4 (or map x so that each window's rows lie on one tile)")
            buf = graph.add_variable(f"{name}.halo{len(srcs)}", (hi - lo, w, c), "int8", t)
            srcs.append(x[n, lo:hi])
            dsts.append(buf)
            xin = buf
        graph.add_vertex(cs, cd, x=xin, y=y[n, o0:o1], h=h, w=w, c=c, ow=ow, ph=ph, pw=pw,
                         sh=sh, sw=sw, pt=pt, pl=pl, oh0=o0, ih0=lo, mode=mode)
    prog = Execute(cs)
    if srcs:
        prog = Sequence(Copy(srcs, dsts), prog)
    return y, prog


_DOC_RET = """
    Returns
    -------
    (Variable, Program)
        ``y`` int8 [N, OH, OW, C] (``<name>.y``; output row ``(n, oh)`` on the tile holding
        the first real input row of its window) and the program: an optional exchange phase
        for halo rows, then one compute set ``<name>.pool``.

    Raises
    ------
    KernelError
        ``x`` not a 4-D int8 Variable; bad pool size, stride or padding (the reference's
        message); windows crossing tiles with ``W·C`` not a multiple of 4.
"""


def maxpool2d(graph: Graph, x, pool_size, *, stride=None, padding="valid",
              name: str = "maxpool"):
    """Build ``y = tessera.golden_model.kernels.maxpool2d(x, pool_size, stride=, padding=)``.

    Parameters
    ----------
    graph : Graph
    x : Variable, int8 [N, H, W, C]
        Any mapping; whole rows (``map_linearly(grain=W·C)``) are best.
    pool_size : int or (int, int)
    stride : int, (int, int) or None (= pool_size)
    padding : 'valid', 'same', int, (ph, pw) or ((top, bottom), (left, right))
        Padding taps never win.
    name : str
        Prefix of the variables and compute set.
    """
    return _pool(graph, x, pool_size, stride, padding, MODE_MAX, name,
                 f"maxpool2d({name!r})")


def avgpool2d(graph: Graph, x, pool_size, *, stride=None, padding="valid",
              name: str = "avgpool"):
    """Build ``y = tessera.golden_model.kernels.avgpool2d(x, pool_size, stride=, padding=)``.

    Parameters
    ----------
    graph : Graph
    x : Variable, int8 [N, H, W, C]
    pool_size : int or (int, int)
    stride : int, (int, int) or None (= pool_size)
    padding : 'valid', 'same', int, (ph, pw) or ((top, bottom), (left, right))
        Padding taps are not counted; the sum is divided by the real taps, rounding half
        away from zero.
    name : str
    """
    return _pool(graph, x, pool_size, stride, padding, MODE_AVG, name,
                 f"avgpool2d({name!r})")


def global_avgpool(graph: Graph, x, *, name: str = "gap"):
    """Build ``y = tessera.golden_model.kernels.global_avgpool(x, keepdims=True)``.

    An average pool whose window is the whole image: ``y[n, 0, 0, c] = round(Σ_{h,w} x / (H·W))``,
    half away from zero. Each image is reduced on one tile (the tile of its first row; rows on
    other tiles are copied there).

    Parameters
    ----------
    graph : Graph
    x : Variable, int8 [N, H, W, C]
    name : str

    Returns
    -------
    (Variable, Program)
        ``y`` int8 [N, 1, 1, C] and the program (as :func:`avgpool2d`).

    Raises
    ------
    KernelError
        As :func:`avgpool2d`.
    """
    where = f"global_avgpool({name!r})"
    x = check_var(where, "x", x, "int8", 4)
    return _pool(graph, x, x.shape[1:3], 1, "valid", MODE_AVG, name, where)


maxpool2d.__doc__ += _DOC_RET
avgpool2d.__doc__ += _DOC_RET
