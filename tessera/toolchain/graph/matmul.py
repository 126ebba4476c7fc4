"""int8 matmul builder: C = A . B on the tiles holding A's rows (docs/compiler.md, "Matmul").

Plan (output-row partitioning, operand broadcast):

1. ``Copy`` B to a per-tile copy ``<name>.b`` (shape [tiles, K, N], slice t on tile t):
   one exchange phase, each word of B multicast to every tile (plus a local copy on B's
   own tile).
2. Compute set ``<name>.transpose``: each tile transposes its copy into
   ``<name>.bt`` ([tiles, N, Kp], Kp = K rounded up to 4, zero padded).
3. Compute set ``<name>.mm``: on each tile, one ``tsr_matmul8`` vertex over its rows of A,
   split across the tile's contexts (interleaved rows), dot4 inner loop when K % 4 == 0.

With a matrix engine (``config.engine_macs > 0``, K % 8 == 0, N even) steps 2-3 are the
kernel library's engine matmul (:func:`tessera.toolchain.kernels.matmul`, docs/architecture.md
§12): the same copy and transpose, then one engine command per ≤ 256 rows × M channels.
"""

from __future__ import annotations


from .errors import GraphError
from .graph import Graph
from .program import Copy, Execute, Sequence
from .tensor import Variable

__all__ = ["matmul"]


def matmul(graph: Graph, a: Variable, b: Variable, name: str = "matmul"):
    """Build ``C = A . B`` (int8 x int8 -> int32, wrapping like the hardware's adds).

    Parameters
    ----------
    graph : Graph
    a : Variable
        int8 [M, K]; its mapping must give each tile whole rows (e.g.
        ``map_linearly(grain=K)``). Its tiles compute their rows of C.
    b : Variable
        int8 [K, N], any mapping whose cross-tile pieces are word aligned (e.g. one tile).
    name : str
        Prefix of the variables and compute sets created.

    Returns
    -------
    (Variable, Program)
        ``C`` (int32 [M, N], rows on the same tiles as A's rows) and the program computing it.

    Raises
    ------
    GraphError
        Wrong ranks, dtypes or inner dimensions, or A's mapping splits a row.
    """
    for v, what in ((a, "a"), (b, "b")):
        if not isinstance(v, Variable):
            raise GraphError(f"matmul: {what} must be a Variable, not {v!r}")
        if len(v.shape) != 2 or v.dtype.name != "int8":
            raise GraphError(f"matmul: {what} ({v.name!r}) must be a 2-D int8 variable, "
                             f"not {v.dtype.name} {v.shape}")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise GraphError(f"matmul: inner dimensions differ: a {a.name!r} is {a.shape}, "
                         f"b {b.name!r} is {b.shape}")
    for iv in a.intervals:
        if iv.start % k or iv.stop % k:
            raise GraphError(f"matmul: a {a.name!r} interval {iv.start}..{iv.stop} on tile "
                             f"{iv.tile} splits a row of {k} elements; map it with grain={k}")
    if graph.config.engine_macs > 0 and k % 8 == 0 and n % 2 == 0:
        from tessera.toolchain.kernels.matmul import matmul as engine_matmul
        return engine_matmul(graph, a, b, b_layout="kn", name=name, engine=True)
    tiles = sorted({iv.tile for iv in a.intervals})
    nt, kp = len(tiles), -(-k // 4) * 4
    c = graph.add_variable(f"{name}.c", (m, n), "int32",
                           [(iv.tile, iv.start // k * n, iv.stop // k * n) for iv in a.intervals])
    bb = graph.add_variable(f"{name}.b", (nt, k, n), "int8",
                            [(t, i * k * n, (i + 1) * k * n) for i, t in enumerate(tiles)])
    bt = graph.add_variable(f"{name}.bt", (nt, n, kp), "int8",
                            [(t, i * n * kp, (i + 1) * n * kp) for i, t in enumerate(tiles)])
    tr = graph.add_compute_set(f"{name}.transpose")
    mm = graph.add_compute_set(f"{name}.mm")
    for i, t in enumerate(tiles):
        graph.add_vertex(tr, "tsr_transpose8", dst=bt[i], src=bb[i], rows=k, cols=n,
                         dst_stride=kp)
    for iv in a.intervals:
        r0, r1 = iv.start // k, iv.stop // k
        i = tiles.index(iv.tile)
        graph.add_vertex(mm, "tsr_matmul8", a=a[r0:r1], bt=bt[i], c=c[r0:r1], rows=r1 - r0,
                         cols=n, depth=k, bt_stride=kp)
    prog = Sequence(Copy([b] * nt, [bb[i] for i in range(nt)]), Execute(tr), Execute(mm))
    return c, prog
