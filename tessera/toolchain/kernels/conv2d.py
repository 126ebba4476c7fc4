"""Convolution on tiles (NHWC, int8, int32 out) as matmul over host-side im2col patches
(docs/compiler.md, "Kernel library").

Mapping: the host gathers patches with :func:`tessera.golden_model.kernels.im2col` (padding taps hold
the input zero point, patch order ``(kh, kw, c)``), zero-pads the patch length to a multiple of
4 (of the block size for block-sparse weights) and writes them as the A operand ``[N·OH·OW,
Kp]``, rows spread over the tiles. The weights ``[KH·KW·Cin, Cout]`` become graph constants
(dense: transposed ``[Cout, Kp]``; block-sparse: BSR blocks), multicast to the computing tiles
by the exchange. The input zero point is folded into the initial accumulators:
``Σ (x - zp)·w = Σ x·w - zp·Σ w`` (mod 2^32), so tiles run plain ``dot4`` loops and the result
is bit-exact with :func:`tessera.golden_model.kernels.conv2d` / ``block_sparse_conv2d``. A depthwise
convolution is the block-diagonal special case and runs on the block-sparse kernel (block
size 4).
"""

from __future__ import annotations

import numpy as np

from tessera.golden_model.kernels import BlockSparseMatrix, im2col
from tessera.golden_model.kernels._checks import wrap_int32
from tessera.toolchain.graph.graph import Graph

from ._common import KernelError, check_var
from .block_sparse import block_sparse_matmul
from .matmul import matmul

__all__ = ["conv_patches", "dense_conv_weights", "depthwise_as_dense", "conv2d_dense",
           "conv2d_block_sparse", "conv2d_nhwc", "pad_input", "conv_geometry"]


def conv_patches(x, kernel_size, stride=1, padding="valid", input_zero_point: int = 0,
                 k_multiple: int = 4) -> np.ndarray:
    """Host im2col: int8 ``[N·OH·OW, Kp]``, Kp = KH·KW·Cin rounded up to ``k_multiple``
    (extra columns zero). Raises ValueError/TypeError like :func:`tessera.golden_model.kernels.im2col`."""
    cols = im2col(x, kernel_size, stride=stride, padding=padding, pad_value=input_zero_point)
    n, oh, ow, kk = cols.shape
    kp = -(-kk // k_multiple) * k_multiple
    out = np.zeros((n * oh * ow, kp), dtype=np.int8)
    out[:, :kk] = cols.reshape(-1, kk)
    return out


def depthwise_as_dense(w) -> np.ndarray:
    """Depthwise filter ``[KH, KW, C, mult]`` as the equivalent dense ``[KH, KW, C, C·mult]``
    (output channel ``c·mult + m`` uses input channel ``c`` only)."""
    w = np.asarray(w)
    kh, kw, c, mult = w.shape
    dense = np.zeros((kh, kw, c, c * mult), dtype=np.int8)
    for ch in range(c):
        dense[:, :, ch, ch * mult:(ch + 1) * mult] = w[:, :, ch, :]
    return dense


def _zp_init(w2d: np.ndarray, input_zero_point: int) -> np.ndarray:
    """``-zp · Σ_k w[k, o]`` wrapped to int32 (the folded input zero point)."""
    return wrap_int32(-int(input_zero_point) * w2d.astype(np.int64).sum(axis=0)).astype(np.int64)


def dense_conv_weights(w, kp: int):
    """``[KH, KW, Cin, Cout]`` -> (B^T int8 ``[Cout, Kp]`` zero-padded, 2-D weights ``[K, Cout]``)."""
    w = np.asarray(w)
    kh, kw, cin, cout = w.shape
    w2 = w.reshape(kh * kw * cin, cout)
    bt = np.zeros((cout, kp), dtype=np.int8)
    bt[:, :w2.shape[0]] = w2.T
    return bt, w2


def conv2d_dense(graph: Graph, patches, w, input_zero_point: int = 0, *, name: str = "conv"):
    """Build a dense convolution over patches from :func:`conv_patches`.

    Parameters
    ----------
    graph : Graph
    patches : Variable, int8 [N·OH·OW, Kp]
        Rows mapped whole (``map_linearly(grain=Kp)``); the host writes ``conv_patches(x, ...)``.
    w : ndarray of int8 [KH, KW, Cin, Cout]
        Filter (zero point 0); becomes a constant ``<name>.w`` ([Cout, Kp], rows spread over
        the tiles, multicast to the computing tiles).
    input_zero_point : int
        Folded into the initial accumulators.

    Returns
    -------
    (Variable, Program)
        int32 ``[N·OH·OW, Cout]`` (reshape to ``[N, OH, OW, Cout]`` on the host) and the program.

    Raises
    ------
    KernelError
        If the patch length does not match the filter.
    """
    where = f"conv2d({name!r})"
    patches = check_var(where, "patches", patches, "int8", 2)
    w = np.asarray(w)
    if w.dtype != np.int8 or w.ndim != 4:
        raise KernelError(f"{where}: w must be int8 [KH, KW, Cin, Cout], got {w.dtype} {w.shape}")
    kp = patches.shape[1]
    kk = int(np.prod(w.shape[:3]))
    if not kk <= kp < kk + 4:
        raise KernelError(f"{where}: patches have {kp} columns but KH·KW·Cin = {kk} (expected "
                          f"{-(-kk // 4) * 4})")
    bt, w2 = dense_conv_weights(w, kp)
    from tessera.toolchain.graph.tensor import map_linearly
    ntiles = min(graph.config.tiles, bt.shape[0])
    wv = graph.add_constant(f"{name}.w", bt, map_linearly(tiles=range(ntiles), grain=kp))
    return matmul(graph, patches, wv, b_layout="nk", init=_zp_init(w2, input_zero_point),
                  name=name)


def conv2d_block_sparse(graph: Graph, patches, w: BlockSparseMatrix, input_zero_point: int = 0,
                        *, name: str = "bsconv"):
    """Build a convolution with block-sparse weights ``[KH·KW·Cin, Cout]`` over patches from
    :func:`conv_patches` (``k_multiple`` = block size; the weight rows must already be padded
    to the patch length Kp, e.g. ``BlockSparseMatrix.from_dense`` of the zero-padded
    ``[Kp, Cout]`` matrix). Returns (int32 [N·OH·OW, Cout] Variable, Program).

    Raises
    ------
    KernelError
        As :func:`tessera.toolchain.kernels.block_sparse_matmul`.
    """
    init = _zp_init(w.to_dense(), input_zero_point)
    return block_sparse_matmul(graph, patches, w, init=init, name=name)


# ---- NHWC convolution on the matrix engine (docs/architecture.md §12) ----------------------

def conv_geometry(in_shape, kernel_size, stride=1, padding="valid"):
    """``(pads, (OH, OW), (Hp, Wp), (sh, sw), (kh, kw))`` of a convolution of an NHWC input of
    ``in_shape`` (TensorFlow padding rules, :mod:`tessera.golden_model.kernels._geometry`).
    ``Hp, Wp`` is the padded input the windows read: ``(OH-1)·sh + kh`` by ``(OW-1)·sw + kw``."""
    from tessera.golden_model.kernels._checks import pair
    from tessera.golden_model.kernels._geometry import resolve_padding
    where = "conv2d"
    kh, kw = pair(where, "kernel_size", kernel_size)
    sh, sw = pair(where, "stride", stride)
    _, h, w, _ = in_shape
    pads, (oh, ow) = resolve_padding(where, padding, (h, w), (kh, kw), (sh, sw))
    return pads, (oh, ow), ((oh - 1) * sh + kh, (ow - 1) * sw + kw), (sh, sw), (kh, kw)


def pad_input(x, kernel_size, stride=1, padding="valid", input_zero_point: int = 0,
              c_multiple: int = 8) -> np.ndarray:
    """Host side of :func:`conv2d_nhwc`: the NHWC int8 input padded for the engine.

    Returns int8 ``[N, Hp, Wp, Cp]``: the padding taps (TensorFlow ``padding``) hold the input
    zero point, channels are zero-padded to ``Cp`` = a multiple of ``c_multiple`` (8: the
    engine's vector), and rows/columns no window reads are dropped.
    """
    x = np.asarray(x)
    if x.dtype != np.int8 or x.ndim != 4:
        raise ValueError(f"pad_input: x must be int8 NHWC, got {x.dtype} {x.shape}")
    n, h, w, c = x.shape
    ((pt, _), (pl, _)), _, (hp, wp), _, _ = conv_geometry(x.shape, kernel_size, stride, padding)
    cp = -(-c // c_multiple) * c_multiple
    out = np.zeros((n, hp, wp, cp), dtype=np.int8)
    out[:, :, :, :c] = np.int8(input_zero_point)
    hh, ww = min(h, hp - pt), min(w, wp - pl)
    out[:, pt:pt + hh, pl:pl + ww, :c] = x[:, :hh, :ww]
    return out


def conv2d_nhwc(graph: Graph, xp, w, in_shape, *, stride=1, padding="valid",
                input_zero_point: int = 0, bias=None, requant=None, name: str = "conv"):
    """Dense convolution of a padded NHWC input on the matrix engine (§12).

    Per image and group of output rows one command: the filter's output channels (M per
    command) stationary in the lanes, the input streamed straight from the padded tensor —
    k0 over the ``kw·Cp/8`` contiguous 8-byte blocks of one kernel row, k1 over the kernel
    rows (stride ``Wp·Cp``), j0/j1 over output columns/rows. No im2col; the input zero point
    is folded into the accumulators' start (``-zp·Σw``), so padding taps equal to the zero
    point contribute nothing, bit-exact with :func:`tessera.golden_model.kernels.conv2d`.

    Parameters
    ----------
    graph : Graph
    xp : Variable, int8 [N, Hp, Wp, Cp]
        The host writes :func:`pad_input` of the input; whole images per tile
        (``map_linearly(grain=Hp·Wp·Cp)``).
    w : ndarray of int8 [KH, KW, Cin, Cout]
    in_shape : tuple
        The unpadded input shape ``(N, H, W, Cin)``.
    stride, padding, input_zero_point
        As :func:`tessera.golden_model.kernels.conv2d`.
    bias : None, int or array_like [Cout] of int32
        Added to the accumulators (wrapping).
    requant : None or dict
        ``{"multiplier", "shift", "zero_point", "relu"}`` (per-tensor or per-channel): fused
        TFLite requantization in the engine's output stage (``TFLITE`` mode), or
        ``{"rule": "float32", "multiplier": float32 M, "zero_point", "dtype", "relu"}``: the
        ONNX float32 rule (``FLOAT32`` mode, bit-exact with
        :func:`tessera.golden_model.kernels.requantize_float32`); see
        :func:`tessera.toolchain.kernels.engine.output_rule`. The output is then int8 (or
        uint8) ``[N, OH, OW, Coutp]``, Coutp = Cout rounded up to 8, columns Cout.. unused.
        None: ``RAW`` int32 ``[N, OH, OW, Cout]`` (Cout must be even).

    Returns
    -------
    (Variable, Program)

    Raises
    ------
    KernelError
        Shapes that do not match, an odd Cout in RAW mode, no engine.
    """
    from tessera.spec.engine import ACC_DEPTH, Mode
    from .engine import Command, add_engine_vertex, output_rule, param_table, require_align
    from ._common import unique_name
    from tessera.toolchain.graph.program import Execute
    where = f"conv2d_nhwc({name!r})"
    if graph.config.engine_macs <= 0:
        raise KernelError(f"{where}: needs a matrix engine (engine_macs > 0); use conv2d_dense")
    xp = check_var(where, "xp", xp, "int8", 4)
    w = np.asarray(w)
    if w.dtype != np.int8 or w.ndim != 4:
        raise KernelError(f"{where}: w must be int8 [KH, KW, Cin, Cout], got {w.dtype} {w.shape}")
    kh, kw, cin, cout = w.shape
    nb, h, wd, c_in = in_shape
    try:
        _, (oh, ow), (hp, wp), (sh, sw), _ = conv_geometry(in_shape, (kh, kw), stride, padding)
    except (TypeError, ValueError) as e:
        raise KernelError(f"{where}: {e}") from None
    cp = xp.shape[3]
    if c_in != cin or xp.shape != (nb, hp, wp, cp) or cp % 8 or cp < cin:
        raise KernelError(f"{where}: xp {xp.shape} does not match pad_input of {in_shape} for "
                          f"a {kh}x{kw} filter (expected ({nb}, {hp}, {wp}, {-(-cin // 8) * 8}))")
    img = hp * wp * cp
    for iv in xp.intervals:
        if iv.start % img or iv.stop % img:
            raise KernelError(f"{where}: xp must be mapped in whole images "
                              f"(map_linearly(grain={img}))")
    k = kh * kw * cp
    wt = np.zeros((cout, kh, kw, cp), dtype=np.int8)
    wt[:, :, :, :cin] = w.transpose(3, 0, 1, 2)
    wt = wt.reshape(cout, k)
    init = _zp_init(w.reshape(-1, cout), input_zero_point)
    if bias is not None:
        init = wrap_int32(init + np.broadcast_to(np.asarray(bias, dtype=np.int64), (cout,)))
    if requant is None:
        if cout % 2:
            raise KernelError(f"{where}: RAW (int32) output needs an even Cout, not {cout}")
        mode, elem, coutp = Mode.RAW, 4, cout
        table = param_table(init)
        fields, odtype = dict(mode=mode), "int32"
    else:
        elem, coutp = 1, -(-cout // 8) * 8
        table, fields, odtype = output_rule(requant, init, cout, where)
        mode = fields["mode"]
    name = unique_name(graph, name)
    tiles = xp.tiles()
    nt = len(tiles)
    require_align(xp)
    wv = graph.add_constant(f"{name}.w", np.broadcast_to(wt, (nt, cout, k)),
                            [(t, i * cout * k, (i + 1) * cout * k) for i, t in enumerate(tiles)])
    wv.align = 8
    pv = graph.add_constant(f"{name}.params", np.broadcast_to(table, (nt, cout, 4)),
                            [(t, i * cout * 4, (i + 1) * cout * 4) for i, t in enumerate(tiles)],
                            dtype="int32")
    pv.align = 8
    osz = oh * ow * coutp
    out = graph.add_variable(f"{name}.out", (nb, oh, ow, coutp), odtype, [(iv.tile, iv.start // img * osz, iv.stop // img * osz)
                                           for iv in xp.intervals])
    out.align = 8
    lanes = graph.config.engine_lanes
    rows = max(1, min(oh, ACC_DEPTH // ow)) if ow <= ACC_DEPTH else None
    if rows is None:
        raise KernelError(f"{where}: output width {ow} exceeds the engine's {ACC_DEPTH} "
                          "accumulators")
    cmds: dict = {}
    for n in range(nb):
        i = tiles.index(xp.intervals[int(xp.interval_of(np.array([n * img]))[0])].tile)
        t = tiles[i]
        for r0 in range(0, oh, rows):
            nr = min(rows, oh - r0)
            for m0 in range(0, cout, lanes):
                nc = min(lanes, cout - m0)
                cmds.setdefault(t, []).append(Command(
                    a_base=(xp[n], r0 * sh * wp * cp), a_s0=sw * cp, a_s1=sh * wp * cp,
                    ak_s1=wp * cp, w_base=(wv[i], m0 * k), w_sm=k,
                    c_base=(out[n], (r0 * ow * coutp + m0) * elem), c_s0=coutp * elem,
                    c_s1=ow * coutp * elem, p_base=(pv[i], 16 * m0), J0=ow, J1=nr,
                    K0=kw * cp // 8, K1=kh, C=nc, **fields))
    cs = graph.add_compute_set(f"{name}.conv")
    for t, cl in cmds.items():
        add_engine_vertex(graph, cs, t, cl, f"{name}.desc{t}")
    return out, Execute(cs)
