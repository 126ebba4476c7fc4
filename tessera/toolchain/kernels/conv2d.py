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
           "conv2d_block_sparse"]


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
