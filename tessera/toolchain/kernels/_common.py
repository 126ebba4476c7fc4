"""Shared helpers of the kernel builders (docs/compiler.md, "Kernel library")."""

from __future__ import annotations

import numpy as np

from tessera.toolchain.graph.codelet import CODELET_DIR, Codelet, Field
from tessera.toolchain.graph.errors import GraphError
from tessera.toolchain.graph.graph import Graph
from tessera.toolchain.graph.tensor import Tensor, Variable

__all__ = ["KernelError", "codelet", "check_var", "unique_name", "tile_pieces", "check_init"]


class KernelError(GraphError):
    """Bad arguments to a kernel builder (shape, dtype, mapping, parameter range)."""


def codelet(graph: Graph, name: str, source, fields, single: bool = False) -> Codelet:
    """Register codelet ``name`` (from ``tessera/toolchain/codelets/<source>`` or a path) once
    per graph; ``single``: its vertices are never split over contexts (:class:`Codelet`)."""
    if name in graph.codelets:
        return graph.codelets[name]
    from pathlib import Path
    src = Path(source)
    if not src.is_absolute():
        src = CODELET_DIR / src
    c = Codelet(name, src.resolve(), tuple(Field(*f) for f in fields), single=single)
    graph.codelets[name] = c
    return c


def check_var(where: str, what: str, v, dtype: str, ndim: int | None = None) -> Variable:
    """Check that ``v`` is a Variable of ``dtype`` (and rank ``ndim``)."""
    if isinstance(v, Tensor) and v.index.size == v.variable.size and \
            np.array_equal(v.index.reshape(-1), np.arange(v.variable.size)):
        v = v.variable
    if not isinstance(v, Variable):
        raise KernelError(f"{where}: {what} must be a graph Variable, not {v!r}")
    if v.dtype.name != dtype:
        raise KernelError(f"{where}: {what} ({v.name!r}) must be {dtype}, not {v.dtype.name}")
    if ndim is not None and len(v.shape) != ndim:
        raise KernelError(f"{where}: {what} ({v.name!r}) must be {ndim}-D, not shape {v.shape}")
    return v


def check_init(where: str, init, n: int) -> np.ndarray:
    """Validate a matmul accumulator start value: None, an int, or an int array of shape [n].

    Returns
    -------
    numpy.ndarray of int64, shape [n]
        The start value per output column.

    Raises
    ------
    KernelError
        If ``init`` is not integer, has the wrong shape, or does not fit int32.
    """
    iv = np.zeros(n, dtype=np.int64) if init is None else np.asarray(init)
    if iv.dtype.kind not in "iu" or iv.ndim > 1 or (iv.ndim == 1 and iv.shape[0] != n):
        raise KernelError(f"{where}: init must be an int or int array of shape [N] = [{n}]")
    iv = np.broadcast_to(iv.astype(np.int64), (n,))
    if iv.min() < -2**31 or iv.max() >= 2**31:
        raise KernelError(f"{where}: init values must fit int32")
    return iv


def unique_name(graph: Graph, base: str) -> str:
    """``base`` if no variable or compute set uses it as a prefix yet, else ``base_2``, ..."""
    used = {n.split(".")[0] for n in graph.variables} | \
        {cs.name.split(".")[0] for cs in graph.compute_sets}
    if base not in used:
        return base
    i = 2
    while f"{base}_{i}" in used:
        i += 1
    return f"{base}_{i}"


def tile_pieces(where: str, a: Variable, b: Variable):
    """Intersect the intervals of two same-size variables: ``[(tile, start, stop)]``.

    Raises KernelError if an element of ``a`` and the same element of ``b`` lie on
    different tiles (elementwise kernels need both operands mapped alike).
    """
    out = []
    ia = ib = 0
    pos = 0
    A, B = a.intervals, b.intervals
    while pos < a.size:
        while A[ia].stop <= pos:
            ia += 1
        while B[ib].stop <= pos:
            ib += 1
        stop = min(A[ia].stop, B[ib].stop)
        if A[ia].tile != B[ib].tile:
            raise KernelError(f"{where}: elements {pos}..{stop - 1} of {a.name!r} are on tile "
                              f"{A[ia].tile} but those of {b.name!r} are on tile {B[ib].tile}; "
                              "map both alike")
        out.append((A[ia].tile, pos, stop))
        pos = stop
    return out
