"""Block-sparse (BSR) int8 weights: format, matmul and convolution.

The format is Block Compressed Sparse Row (as ``scipy.sparse.bsr_matrix``) restricted to square
int8 blocks of 4, 8 or 16 — sizes that map to whole ``dot4`` words on a tile. A weight matrix
``[K, N]`` (inputs × output channels, the layout :func:`~tessera.golden_model.kernels.matmul` uses) is cut
into a grid of ``ceil(K/bs) × ceil(N/bs)`` blocks; edge blocks are zero-padded and the padding is
never read back (``to_dense`` crops, the kernels ignore it). Only kept blocks are stored.

Arithmetic is that of :func:`~tessera.golden_model.kernels.matmul`: exact products of widened operands,
summed and reduced modulo 2^32 into int32. A dropped block contributes exactly zero, so
``block_sparse_matmul(a, W) == matmul(a, W.to_dense())`` bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._checks import INT8_MAX, INT8_MIN, as_int, as_int_array, pair, wrap_int32
from .conv2d import im2col

__all__ = ["BLOCK_SIZES", "BlockSparseMatrix", "block_sparse_matmul", "block_sparse_conv2d"]

#: Supported block sizes.
BLOCK_SIZES = (4, 8, 16)


@dataclass(frozen=True, eq=False)
class BlockSparseMatrix:
    """An int8 matrix ``[K, N]`` in block-CSR form with square ``block_size`` blocks.

    Members
    -------
    block_size : int
        4, 8 or 16.
    shape : (int, int)
        Logical dense shape ``(K, N)``; need not be a multiple of ``block_size``.
    indptr : ndarray of int32, shape [KB + 1]
        Block-row pointers, ``KB = ceil(K / block_size)``: the blocks of block row ``r`` are
        ``blocks[indptr[r]:indptr[r + 1]]``. ``indptr[0] = 0``, non-decreasing,
        ``indptr[-1] = nnzb``.
    indices : ndarray of int32, shape [nnzb]
        Block-column index of each stored block, in ``0..NB-1`` (``NB = ceil(N / block_size)``),
        strictly increasing within a block row.
    blocks : ndarray of int8, shape [nnzb, block_size, block_size]
        Block contents: ``blocks[z][i, j] = W[r·bs + i, indices[z]·bs + j]``.

    Raises
    ------
    TypeError, ValueError
        From the constructor if any member is inconsistent; the message names the member.
    """

    block_size: int
    shape: tuple
    indptr: np.ndarray
    indices: np.ndarray
    blocks: np.ndarray

    def __post_init__(self):
        where = "BlockSparseMatrix"
        bs = as_int(where, "block_size", self.block_size)
        if bs not in BLOCK_SIZES:
            raise ValueError(f"{where}: block_size must be one of {BLOCK_SIZES}, not {bs}")
        shape = pair(where, "shape", self.shape, lo=1)
        object.__setattr__(self, "shape", shape)
        kb, nb = self.grid
        indptr = np.asarray(self.indptr)
        indices = np.asarray(self.indices)
        for name, arr in (("indptr", indptr), ("indices", indices)):
            if not np.issubdtype(arr.dtype, np.integer) or arr.ndim != 1:
                raise TypeError(f"{where}: {name} must be a 1-D integer array, got "
                                f"dtype {arr.dtype.name} shape {arr.shape}")
        blocks = as_int_array(where, "blocks", self.blocks, np.int8, ndim=3)
        nnzb = blocks.shape[0]
        if blocks.shape[1:] != (bs, bs):
            raise ValueError(f"{where}: blocks must have shape [nnzb, {bs}, {bs}], got {blocks.shape}")
        if indptr.shape != (kb + 1,):
            raise ValueError(f"{where}: indptr must have KB + 1 = {kb + 1} entries for shape "
                             f"{shape} and block_size {bs}, got {indptr.shape[0]}")
        if indptr[0] != 0 or indptr[-1] != nnzb or np.any(np.diff(indptr) < 0):
            raise ValueError(f"{where}: indptr must start at 0, be non-decreasing and end at "
                             f"nnzb = {nnzb}, got {indptr.tolist()}")
        if indices.shape != (nnzb,):
            raise ValueError(f"{where}: indices must have nnzb = {nnzb} entries, got {indices.shape[0]}")
        if nnzb and (indices.min() < 0 or indices.max() >= nb):
            raise ValueError(f"{where}: block-column indices must be in 0..{nb - 1}, got "
                             f"[{indices.min()}, {indices.max()}]")
        rows = np.repeat(np.arange(kb), np.diff(indptr))
        same_row = rows[1:] == rows[:-1]
        if np.any(same_row & (indices[1:] <= indices[:-1])):
            raise ValueError(f"{where}: block-column indices must be strictly increasing "
                             f"within each block row")
        object.__setattr__(self, "indptr", indptr.astype(np.int32))
        object.__setattr__(self, "indices", indices.astype(np.int32))
        object.__setattr__(self, "blocks", blocks)

    @property
    def grid(self) -> tuple[int, int]:
        """Block grid ``(KB, NB) = (ceil(K/bs), ceil(N/bs))``."""
        k, n = self.shape
        bs = self.block_size
        return -(-k // bs), -(-n // bs)

    @property
    def nnzb(self) -> int:
        """Number of stored blocks."""
        return int(self.blocks.shape[0])

    @property
    def density(self) -> float:
        """Fraction of grid blocks that are stored (0..1)."""
        kb, nb = self.grid
        return self.nnzb / (kb * nb)

    def block_rows(self) -> np.ndarray:
        """Block-row index of every stored block, int32 [nnzb] (the expanded ``indptr``)."""
        return np.repeat(np.arange(self.grid[0], dtype=np.int32), np.diff(self.indptr))

    @classmethod
    def from_dense(cls, w, block_size: int, threshold=None, mask=None) -> "BlockSparseMatrix":
        """Build from a dense int8 matrix, keeping blocks selected by ``threshold`` or ``mask``.

        Parameters
        ----------
        w : ndarray of int8, shape [K, N]
        block_size : int, one of 4, 8, 16
        threshold : int or None
            Keep a block when ``max |w|`` over it is strictly greater than ``threshold``.
            Default (neither argument): ``threshold = 0``, i.e. keep every block with a
            nonzero element (lossless).
        mask : array_like of bool, shape [KB, NB], or None
            Explicit choice of the kept blocks (pruning); elements of dropped blocks are lost.
            Mutually exclusive with ``threshold``.

        Returns
        -------
        BlockSparseMatrix

        Raises
        ------
        TypeError, ValueError
            If ``w`` is not a 2-D int8 array, the block size is unsupported, both ``threshold``
            and ``mask`` are given, or ``mask`` has the wrong shape.
        """
        where = "BlockSparseMatrix.from_dense"
        w = as_int_array(where, "w", w, np.int8, ndim=2)
        bs = as_int(where, "block_size", block_size)
        if bs not in BLOCK_SIZES:
            raise ValueError(f"{where}: block_size must be one of {BLOCK_SIZES}, not {bs}")
        if w.size == 0:
            raise ValueError(f"{where}: w must not be empty, got shape {w.shape}")
        k, n = w.shape
        kb, nb = -(-k // bs), -(-n // bs)
        wp = np.zeros((kb * bs, nb * bs), dtype=np.int8)
        wp[:k, :n] = w
        grid = wp.reshape(kb, bs, nb, bs).transpose(0, 2, 1, 3)      # [KB, NB, bs, bs]
        if mask is not None and threshold is not None:
            raise ValueError(f"{where}: pass threshold or mask, not both")
        if mask is not None:
            keep = np.asarray(mask)
            if keep.dtype != np.bool_ or keep.shape != (kb, nb):
                raise ValueError(f"{where}: mask must be a bool array of shape [KB, NB] = "
                                 f"[{kb}, {nb}], got dtype {keep.dtype.name} shape {keep.shape}")
        else:
            t = 0 if threshold is None else as_int(where, "threshold", threshold, lo=0)
            keep = np.abs(grid.astype(np.int16)).max(axis=(2, 3)) > t
        rows, cols = np.nonzero(keep)                                 # row-major: sorted
        indptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
        return cls(block_size=bs, shape=(k, n), indptr=indptr, indices=cols,
                   blocks=np.ascontiguousarray(grid[rows, cols]))

    def to_dense(self) -> np.ndarray:
        """The dense int8 matrix ``[K, N]`` (dropped blocks are zero).

        Returns
        -------
        ndarray of int8, shape ``self.shape``
        """
        kb, nb = self.grid
        bs = self.block_size
        grid = np.zeros((kb, nb, bs, bs), dtype=np.int8)
        grid[self.block_rows(), self.indices] = self.blocks
        k, n = self.shape
        return grid.transpose(0, 2, 1, 3).reshape(kb * bs, nb * bs)[:k, :n].copy()


def _bsr_matmul_int64(a64: np.ndarray, w: BlockSparseMatrix) -> np.ndarray:
    """Exact ``a64 @ w`` in int64 for an int64 ``a64`` [M, K] (no wrap)."""
    m, k = a64.shape
    kb, nb = w.grid
    bs = w.block_size
    ap = np.zeros((m, kb * bs), dtype=np.int64)
    ap[:, :k] = a64
    a_blocks = ap.reshape(m, kb, bs).transpose(1, 0, 2)               # [KB, M, bs]
    # One small product per stored block: [nnzb, M, bs] @ [nnzb, bs, bs] -> [nnzb, M, bs].
    partial = a_blocks[w.block_rows()] @ w.blocks.astype(np.int64)
    out = np.zeros((nb, m, bs), dtype=np.int64)
    np.add.at(out, w.indices, partial)                                 # scatter to block columns
    return out.transpose(1, 0, 2).reshape(m, nb * bs)[:, :w.shape[1]]


def block_sparse_matmul(a, w: BlockSparseMatrix) -> np.ndarray:
    """``a @ W`` for int8 activations and block-sparse int8 weights, int32 accumulators.

    Parameters
    ----------
    a : ndarray of int8, shape [M, K]
    w : BlockSparseMatrix, logical shape [K, N]

    Returns
    -------
    ndarray of int32, shape [M, N]
        Identical to ``matmul(a, w.to_dense())`` (exact products, sum wrapped modulo 2^32).

    Raises
    ------
    TypeError
        If ``a`` is not int8 or ``w`` is not a :class:`BlockSparseMatrix`.
    ValueError
        If ``a.shape[1] != K``.
    """
    where = "block_sparse_matmul"
    a = as_int_array(where, "a", a, np.int8, ndim=2)
    if not isinstance(w, BlockSparseMatrix):
        raise TypeError(f"{where}: w must be a BlockSparseMatrix, not {type(w).__name__}")
    if a.shape[1] != w.shape[0]:
        raise ValueError(f"{where}: inner dimensions differ: a is {a.shape} [M, K], "
                         f"w is {w.shape} [K, N]")
    return wrap_int32(_bsr_matmul_int64(a.astype(np.int64), w))


def block_sparse_conv2d(x, w: BlockSparseMatrix, kernel_size=1, *, stride=1, padding="valid",
                        input_zero_point: int = 0) -> np.ndarray:
    """Convolution with block-sparse weights, via im2col (1×1 is the plain per-pixel matmul).

    Parameters
    ----------
    x : ndarray of int8, shape [N, H, W, Cin]
    w : BlockSparseMatrix, logical shape [KH·KW·Cin, Cout]
        The dense filter ``[KH, KW, Cin, Cout]`` reshaped to ``[KH·KW·Cin, Cout]`` (C order,
        the patch order of :func:`~tessera.golden_model.kernels.im2col`). Weights are symmetric
        (zero point 0).
    kernel_size : int or (int, int), default 1
    stride : int or (int, int), default 1
    padding : 'valid', 'same', int, (ph, pw) or ((top, bottom), (left, right)), default 'valid'
        Padding taps hold the input zero point.
    input_zero_point : int in -128..127, default 0

    Returns
    -------
    ndarray of int32, shape [N, OH, OW, Cout]
        Identical to ``conv2d(x, w.to_dense().reshape(KH, KW, Cin, Cout), ...)``.

    Raises
    ------
    TypeError, ValueError
        If ``w``'s row count is not ``KH·KW·Cin`` or another argument is invalid.
    """
    where = "block_sparse_conv2d"
    x = as_int_array(where, "x", x, np.int8, ndim=4)
    if not isinstance(w, BlockSparseMatrix):
        raise TypeError(f"{where}: w must be a BlockSparseMatrix, not {type(w).__name__}")
    kh, kw = pair(where, "kernel_size", kernel_size)
    izp = as_int(where, "input_zero_point", input_zero_point, INT8_MIN, INT8_MAX)
    if w.shape[0] != kh * kw * x.shape[3]:
        raise ValueError(f"{where}: w has {w.shape[0]} rows but KH·KW·Cin = {kh}·{kw}·{x.shape[3]} "
                         f"= {kh * kw * x.shape[3]}")
    cols = im2col(x, (kh, kw), stride=stride, padding=padding, pad_value=izp)
    n, oh, ow, kkc = cols.shape
    acc = _bsr_matmul_int64(cols.reshape(-1, kkc).astype(np.int64) - izp, w)
    return wrap_int32(acc.reshape(n, oh, ow, w.shape[1]))
