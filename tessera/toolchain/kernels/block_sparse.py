"""Block-sparse int8 matmul on tiles: only stored (nonzero) weight blocks are computed
(docs/compiler.md, "Kernel library").

``C = init + A . W`` with ``W`` a :class:`tessera.golden_model.kernels.BlockSparseMatrix` (BSR, square
blocks of 4, 8 or 16), bit-exact with :func:`tessera.golden_model.kernels.block_sparse_matmul`.

* Rows of C live on the tiles of A's rows (output partitioning); every row needs the same work,
  so tiles are balanced when A's rows are spread evenly (``map_linearly(grain=K)``).
* The stored blocks are packed on the host in block-column order, each block transposed
  (``<name>.blk_src``, a constant on the first computing tile) and multicast by one exchange
  phase to a replica ``<name>.blk`` on every other computing tile: only nonzero blocks move.
* Work items are 4x4 output blocks (4 rows x 4 columns of one block column) over the stored
  blocks of that column; an empty block column only gets cheap *fill* items (its 4-column
  groups set to the initial accumulators in every row). Per tile the items are assigned
  longest-first to the least-loaded context (a constant plan table ``<name>.plan``), so
  contexts are balanced too.
* Inner loop (inline asm, generated per K and block size): per stored block, one load of its
  row offset, then BS/4 steps of 8 loads + 16 ``dot4``.
* **Matrix engine** (default when ``config.engine_macs > 0`` and K, N are multiples of 8;
  docs/architecture.md §12): blocks of 4 are regrouped into blocks of 8 (a block of 8 is
  stored when any of its four blocks of 4 is). A command accumulates over exactly the
  column's stored blocks: equally spaced block rows stream with the k1 stride, others
  through a ``K_GATHER`` table (``<name>.gather``: the byte offset of each stored block in a
  row of A, one 8-byte entry per block, §12). Per tile, per group of ≤ 256 rows, per stored
  block column and per M = P/8 of its channels one command; the packed weights (per column,
  channel-major, only the stored blocks) are a constant replicated on each computing tile; the columns without stored blocks are never computed:
  their output (the initial accumulators, or their requantization) is part of the output
  variable's initial value. Optional fused requantization (``requant``: the TFLite rule or
  the ONNX float32 rule, :func:`tessera.toolchain.kernels.engine.output_rule`). The commands
  are independent, so a tile's table is ordered longest first (the first is the runtime's
  engine start and covers the vertex dispatch) and issued from the contexts
  :func:`tessera.toolchain.kernels.engine.issue_plan` chooses.
"""

from __future__ import annotations

import numpy as np

from tessera.golden_model.kernels import BlockSparseMatrix
from tessera.toolchain.graph.codelet import CODELET_DIR
from tessera.toolchain.graph.graph import Graph
from tessera.toolchain.graph.program import Copy, Execute, Sequence

from ._common import KernelError, check_init, check_var, codelet, unique_name
from .matmul import _generated_source, _row_tiles
from .engine import (Command, add_engine_vertex, output_rule, param_table, require_align,
                     use_engine)

__all__ = ["block_sparse_matmul", "pack_blocks", "MAX_K"]

TEMPLATE = CODELET_DIR / "tsk_bsmm.c.in"
#: Largest depth K: row offsets 0, K, 2K, 3K (+ BS - 4) must be 12-bit load immediates.
MAX_K = 668


def _asm_loop(k: int, bs: int) -> str:
    lines = ["1:", "lw %[pa], 0(%[pz])", "add %[pa], %[pa], %[arow]"]
    for s in range(bs // 4):
        o = 4 * s
        for j in range(4):
            lines.append(f"lw %[b{j}], {j * bs + o}(%[pb])")
        for r in range(4):
            lines.append(f"lw %[x], {r * k + o}(%[pa])")
            for j in range(4):
                lines.append(f".insn r 0x0b, 0, 0, %[c{r}{j}], %[x], %[b{j}]")
    lines += [f"addi %[pb], %[pb], {bs * bs}", "addi %[pz], %[pz], 4",
              "bne %[pz], %[pzend], 1b"]
    return "\n".join(f'                "{ln}\\n"' for ln in lines)


def _codelet(graph: Graph, k: int, bs: int):
    name = f"tsk_bsmm_k{k}_b{bs}"
    if name in graph.codelets:
        return graph.codelets[name]
    text = (TEMPLATE.read_text().replace("@NAME@", name).replace("@KS@", str(k))
            .replace("@BS@", str(bs)).replace("@LOOP@", _asm_loop(k, bs)))
    return codelet(graph, name, _generated_source(name, text), (
        ("a", "in", "int8"), ("blk", "in", "int8"), ("rowoff", "in", "int32"),
        ("plan", "in", "int32"), ("c", "out", "int32"), ("init", "in", "int32"),
        ("rows", "scalar"), ("cols", "scalar")))


def pack_blocks(w: BlockSparseMatrix):
    """Host packing: stored blocks in block-column order, each transposed.

    Returns
    -------
    blk : ndarray of int8 [nnzb, bs, bs]
        ``blk[z][n][k] = W[row(z)·bs + k, col(z)·bs + n]``.
    rowoff : ndarray of int32 [nnzb]
        ``row(z) · bs`` (byte offset of the block row inside a row of A).
    colptr : ndarray of int64 [NB + 1]
        Stored blocks of block column ``j`` are ``colptr[j] .. colptr[j+1]-1``.
    """
    rows, cols = w.block_rows(), w.indices
    order = np.lexsort((rows, cols))
    blk = np.ascontiguousarray(w.blocks[order].transpose(0, 2, 1))
    rowoff = (rows[order] * w.block_size).astype(np.int32)
    colptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=w.grid[1]))])
    return blk, rowoff, colptr


def _plan(nrows: int, bs: int, colptr, contexts: int, k: int, n: int) -> np.ndarray:
    """Items balanced over contexts; the table the codelet reads (see tsk_bsmm.c.in).

    An item is 7 words ``(kind, init, c, a, blk, z, zend)`` (byte offsets into the fields).
    A block column with stored blocks gives one item per 4 x 4 output block (kind 0, or the
    number of rows 1..3 for the tile's last rows); an empty block column gives BS/4 *fill*
    items (kind -1: columns col0..col0+3 of every row get the initial accumulators, 4 stores
    per row instead of a whole 4 x 4 item each). Costs are estimated issue slots (inner loop
    per stored block, item set-up and stores).
    """
    items, cost = [], []
    per_block = (bs // 4) * 24 + 5
    for j in range(len(colptr) - 1):
        z0, z1 = int(colptr[j]), int(colptr[j + 1])
        for g in range(bs // 4):
            col0 = j * bs + 4 * g
            if z1 == z0:
                items.append((-1, 4 * col0, 4 * col0, 0, 0, 0, 0))
                cost.append(7 * nrows + 20)
                continue
            for r0 in range(0, nrows, 4):
                nr = min(4, nrows - r0)
                items.append((0 if nr == 4 else nr, 4 * col0, 4 * (r0 * n + col0), r0 * k,
                              z0 * bs * bs + 4 * g * bs, 4 * z0, 4 * z1))
                cost.append((z1 - z0) * per_block * (1 if nr == 4 else 4) + 45)
    load = [0] * contexts
    lists = [[] for _ in range(contexts)]
    for i in sorted(range(len(items)), key=lambda i: -cost[i]):
        c = min(range(contexts), key=lambda x: load[x])
        lists[c].append(items[i])
        load[c] += cost[i]
    words = [contexts]
    pos = 1 + contexts + 1
    for lst in lists:
        words.append(pos)
        pos += 7 * len(lst)
    words.append(pos)
    for lst in lists:
        for it in lst:
            words += list(it)
    return np.array(words, dtype=np.int64)


def block_sparse_matmul(graph: Graph, a, w: BlockSparseMatrix, *, init=None,
                        name: str = "bsmm", engine=None, requant=None):
    """Build ``C = init + A . W`` computing only W's stored blocks.

    Parameters
    ----------
    graph : Graph
    a : Variable, int8 [M, K]
        Mapped in whole rows (e.g. ``map_linearly(grain=K)``).
    w : tessera.golden_model.kernels.BlockSparseMatrix, shape [K, N], block size 4, 8 or 16
        K and N must be multiples of the block size; K ≤ 668 (immediate load offsets).
        Its blocks become constants of the graph.
    init : None, int or array_like [N] of int32
        Initial accumulator per output column (bias, or a folded zero-point correction).
    name : str
        Prefix of the variables and compute sets.
    engine : None or bool
        Use the matrix engine (module docstring). None: when the array has one and K, N are
        multiples of 8; False: ``dot4``.
    requant : None or dict
        Engine only: ``{"multiplier", "shift", "zero_point", "relu"}`` — fused TFLite
        requantization in the engine's output stage; ``C`` is then int8 [M, N].

    Returns
    -------
    (Variable, Program)
        ``C`` int32 [M, N] (rows on A's tiles) and the program (``dot4``: one exchange phase
        moving the stored blocks, one compute set; engine: one compute set).

    Raises
    ------
    KernelError
        Bad types or shapes, K or N not a multiple of the block size, K too large, bad init.
    """
    where = f"block_sparse_matmul({name!r})"
    a = check_var(where, "a", a, "int8", 2)
    if not isinstance(w, BlockSparseMatrix):
        raise KernelError(f"{where}: w must be a tessera.golden_model.kernels.BlockSparseMatrix, "
                          f"not {type(w).__name__}")
    m, k = a.shape
    bs = w.block_size
    if w.shape[0] != k:
        raise KernelError(f"{where}: inner dimensions differ: a {a.name!r} is {a.shape} [M, K], "
                          f"w is {w.shape} [K, N]")
    n = w.shape[1]
    if k % bs or n % bs:
        raise KernelError(f"{where}: K = {k} and N = {n} must be multiples of the block size "
                          f"{bs}")
    if k > MAX_K:
        raise KernelError(f"{where}: K = {k} is larger than {MAX_K} (row offsets must be "
                          "12-bit load immediates)")
    iv_init = check_init(where, init, n)
    tiles = _row_tiles(where, a, k)
    want = use_engine(graph, engine)
    if want and k % 8 == 0 and n % 8 == 0:
        return _block_sparse_engine(graph, a, w, iv_init, tiles, name, requant, where)
    if engine:
        raise KernelError(f"{where}: the matrix engine needs K and N multiples of 8 "
                          f"(K = {k}, N = {n})")
    if requant is not None:
        raise KernelError(f"{where}: requant needs the matrix engine")
    nt, T = len(tiles), graph.config.contexts
    name = unique_name(graph, name)
    blk, rowoff, colptr = pack_blocks(w)
    nz = max(w.nnzb, 1)
    if w.nnzb == 0:
        blk, rowoff = np.zeros((1, bs, bs), np.int8), np.zeros(1, np.int32)

    def per_tile(size):
        return [(t, i * size, (i + 1) * size) for i, t in enumerate(tiles)]

    c = graph.add_variable(f"{name}.c", (m, n), "int32",
                           [(iv.tile, iv.start // k * n, iv.stop // k * n) for iv in a.intervals])
    # the packed blocks are a constant on the first computing tile, multicast from there to a
    # replica on every other computing tile: a one-source broadcast (no local copy, meets
    # the exchange bound: every receiver takes all nz·BS²/4 words, the sender sends each once)
    src = graph.add_constant(f"{name}.blk_src", blk.reshape(nz, bs * bs), tiles[0], dtype="int8")
    rep = None
    if nt > 1:
        rep = graph.add_variable(f"{name}.blk", (nt - 1, nz, bs * bs), "int8",
                                 [(t, i * nz * bs * bs, (i + 1) * nz * bs * bs)
                                  for i, t in enumerate(tiles[1:])])
    roff = graph.add_constant(f"{name}.rowoff", np.broadcast_to(rowoff, (nt, nz)), per_tile(nz),
                              dtype="int32")
    initv = graph.add_constant(f"{name}.init", np.broadcast_to(iv_init, (nt, n)), per_tile(n),
                               dtype="int32")
    cd = _codelet(graph, k, bs)
    cs = graph.add_compute_set(f"{name}.mm")
    for iv in a.intervals:
        r0, r1 = iv.start // k, iv.stop // k
        i = tiles.index(iv.tile)
        plan = _plan(r1 - r0, bs, colptr, T, k, n)
        pv = graph.add_constant(f"{name}.plan{iv.tile}", plan, iv.tile, dtype="int32")
        graph.add_vertex(cs, cd, a=a[r0:r1], blk=src if i == 0 else rep[i - 1], rowoff=roff[i],
                         plan=pv, c=c[r0:r1], init=initv[i], rows=r1 - r0, cols=n)
    if rep is None:
        return c, Execute(cs)
    return c, Sequence(Copy([src] * (nt - 1), [rep[i] for i in range(nt - 1)]), Execute(cs))


def progression_cover(rows) -> tuple[int, int, int]:
    """The shortest arithmetic progression ``r0, r0 + d, ..., r0 + (L-1)·d`` containing the
    sorted block rows ``rows``: ``(r0, d, L)`` (d = the gcd of the gaps, 1 for one row)."""
    import math
    rows = sorted(int(r) for r in rows)
    r0 = rows[0]
    d = 0
    for r in rows[1:]:
        d = math.gcd(d, r - r0)
    d = d or 1
    return r0, d, (rows[-1] - r0) // d + 1


def _block_sparse_engine(graph, a, w, iv_init, tiles, name, requant, where):
    from tessera.golden_model.kernels import requantize as ref_requantize
    from tessera.golden_model.kernels import requantize_float32 as ref_requantize_float32
    from tessera.spec.engine import ACC_DEPTH, Flag, Mode
    m, k = a.shape
    n = w.shape[1]
    dense = w.to_dense()
    if w.block_size % 8:       # blocks of 4 -> blocks of 8 holding any stored block of 4
        mask = np.zeros((k // 8, n // 8), dtype=bool)
        r4 = w.block_rows() * w.block_size // 8
        c4 = np.asarray(w.indices) * w.block_size // 8
        mask[r4, c4] = True
        w = BlockSparseMatrix.from_dense(dense, 8, mask=mask)
    bs = w.block_size
    rows_of = w.block_rows()
    cols = {}
    for z in range(w.nnzb):
        cols.setdefault(int(w.indices[z]), []).append(int(rows_of[z]))
    name = unique_name(graph, name)
    nt = len(tiles)
    lanes = graph.config.engine_lanes
    # packed stationary operand: per stored block column, channel-major over its stored
    # block rows; rows in arithmetic progression stream with the k1 stride, others with a
    # K_GATHER table (one 8-byte entry per stored block: its byte offset in a row of A)
    plan, chunks, off, gtab = {}, [], 0, []
    for c in sorted(cols):
        rows_c = sorted(cols[c])
        r0, d, L = progression_cover(rows_c)
        if L == len(rows_c):
            g = None                                       # exactly a progression
        else:
            g = len(gtab)
            gtab += [r * bs for r in rows_c]
            r0, d, L = 0, 0, len(rows_c)
        rr = [r0 + l * d for l in range(L)] if g is None else rows_c
        blk = np.zeros((bs, L, bs), dtype=np.int8)         # [channel, block, row in block]
        for l, r in enumerate(rr):
            blk[:, l, :] = dense[r * bs:(r + 1) * bs, c * bs:(c + 1) * bs].T
        plan[c] = (r0, d, L, off, g)
        chunks.append(blk.reshape(-1))
        off += blk.size
    packed = np.concatenate(chunks) if chunks else np.zeros(8, np.int8)
    wv = graph.add_constant(f"{name}.w", np.broadcast_to(packed, (nt, packed.size)),
                            [(t, i * packed.size, (i + 1) * packed.size)
                             for i, t in enumerate(tiles)], dtype="int8")
    wv.align = 8
    if requant is None:
        mode, elem, dt = Mode.RAW, 4, "int32"
        table = param_table(iv_init)
        zp, qmin, qmax = 0, -128, 127
        empty_value = iv_init
    else:
        elem = 1
        table, fields, dt = output_rule(requant, iv_init, n, where)
        mode, zp, qmin, qmax = (fields[f] for f in ("mode", "zp", "qmin", "qmax"))
        if mode == Mode.TFLITE:
            empty_value = ref_requantize(np.zeros((1, n), np.int32), table[:, 1], table[:, 2],
                                         zp, relu=bool(requant.get("relu")), bias=table[:, 0])[0]
        else:       # FLOAT32: the §11 rule 2 reference of the bias alone, clamped at qmin
            empty_value = np.maximum(ref_requantize_float32(
                np.zeros((1, n), np.int32), table[:, 1].view(np.float32), zp, dtype=dt,
                bias=table[:, 0])[0], qmin)
    pv = graph.add_constant(f"{name}.params", np.broadcast_to(table, (nt, n, 4)),
                            [(t, i * n * 4, (i + 1) * n * 4) for i, t in enumerate(tiles)],
                            dtype="int32")
    pv.align = 8
    if gtab:
        gt = np.zeros((len(gtab), 2), np.int32)
        gt[:, 0] = gtab
        gv = graph.add_constant(f"{name}.gather", np.broadcast_to(gt.reshape(-1),
                                                                  (nt, gt.size)),
                                [(t, i * gt.size, (i + 1) * gt.size)
                                 for i, t in enumerate(tiles)], dtype="int32")
        gv.align = 8
    # columns that are never computed keep the output's initial value
    c = graph.add_constant(f"{name}.c", np.broadcast_to(empty_value, (m, n)),
                           [(iv.tile, iv.start // k * n, iv.stop // k * n) for iv in a.intervals],
                           dtype=dt)
    c.align = 8
    require_align(a)
    per_tile: dict = {}
    for iv in a.intervals:
        ra, rb = iv.start // k, iv.stop // k
        i = tiles.index(iv.tile)
        at, ct = a[ra:rb], c.flatten()[ra * n:rb * n]
        for g0 in range(0, rb - ra, ACC_DEPTH):
            nr = min(ACC_DEPTH, rb - ra - g0)
            for col, (r0, d, L, woff, g) in plan.items():
                for m0 in range(0, bs, lanes):
                    nc = min(lanes, bs - m0)
                    gather = {} if g is None else dict(ak_s1=(gv[i], 8 * g))
                    per_tile.setdefault(iv.tile, []).append(Command(
                        a_base=(at, g0 * k + r0 * bs), a_s0=k,
                        **(gather or dict(ak_s1=d * bs)),
                        w_base=(wv[i], woff + m0 * L * bs), w_sm=L * bs,
                        c_base=(ct, (g0 * n + col * bs + m0) * elem), c_s0=n * elem,
                        p_base=(pv[i], 16 * (col * bs + m0)), J0=nr, K0=bs // 8, K1=L,
                        C=nc, mode=mode,
                        flags=(0 if requant is None else fields["flags"])
                        | (0 if g is None else Flag.K_GATHER),
                        zp=zp, qmin=qmin, qmax=qmax))
    if not per_tile:                     # no stored block: the output is its initial value
        return c, Sequence()
    cs = graph.add_compute_set(f"{name}.mm")
    for t, cmds in per_tile.items():
        # the commands are independent (each writes its own output bytes and reads only A,
        # the weights and the tables), so their order is free: longest first (stable), so
        # the first one (the runtime's engine start) covers the vertex dispatch that issues
        # the second
        cmds = sorted(cmds, key=lambda cmd: -cmd.steps())
        add_engine_vertex(graph, cs, t, cmds, f"{name}.desc{t}", independent=True)
    return c, Execute(cs)
