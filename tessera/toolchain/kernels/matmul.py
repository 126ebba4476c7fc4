"""Dense int8 matmul on tiles with register-blocked dot4 inner loops (docs/compiler.md,
"Kernel library").

Plan for ``C = init + A . B`` (int8 x int8 -> int32, wrapping like the tiles' 32-bit adds):

* **Output partitioning**: C's rows live on the tiles of A's rows (A must be mapped in whole
  rows, e.g. ``map_linearly(grain=K)``); every tile holding rows computes them.
* **Operand broadcast**: one ``Copy`` multicasts every word of B^T (``[N, K]``) to a replica
  ``<name>.bt`` on each computing tile: one exchange phase, each word sent once (the
  scheduler meets its lower bound for this pattern). With ``b_layout="kn"`` (B given as
  ``[K, N]``) the replica of B is transposed on each tile first (``tsr_transpose8``).
* **Compute** on the matrix engine (default when ``config.engine_macs > 0``, K a multiple of
  8; docs/architecture.md §12): per tile one descriptor table built on the host, one command
  per group of ≤ 256 rows × M = P/8 output channels (Bᵀ rows stationary in the lanes, A rows
  streamed, ``RAW`` int32 or, in :func:`matmul_requantize`, ``TFLITE`` int8 output with the
  requantization and ReLU in the engine's output stage), issued by ``tsk_engine`` (``mrun``
  per command, ``mwait``).
* **Compute** with ``dot4`` (``engine_macs = 0``, or ``engine=False``): one vertex per tile,
  split over all contexts; each context takes interleaved
  4x4 output blocks and runs 16 ``dot4`` per 8 loads (``tessera/toolchain/codelets/tsk_matmul.c.in``,
  generated per K so the row strides are immediate offsets).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from tessera.toolchain.graph.build import cache_dir
from tessera.toolchain.graph.codelet import CODELET_DIR
from tessera.toolchain.graph.graph import Graph
from tessera.toolchain.graph.program import Copy, Execute, Sequence

from tessera.spec.engine import Mode

from ._common import KernelError, check_init, check_var, codelet, unique_name
from .engine import (add_engine_vertex, matmul_commands, output_rule, param_table, require_align,
                     use_engine)
from .requantize import requant_params, requantize

__all__ = ["matmul", "matmul_requantize", "matmul_codelet", "matmul_cols"]

TEMPLATE = CODELET_DIR / "tsk_matmul.c.in"


def _generated_source(name: str, text: str) -> Path:
    d = cache_dir().parent / "kernels"
    d.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256(text.encode()).hexdigest()[:12]
    p = d / f"{name}-{h}.c"
    if not p.exists():
        tmp = p.with_suffix(f".{__import__('os').getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(p)
    return p


def _asm_loop(k: int, unroll: int) -> str:
    """The 4x4 register-blocked inner loop: per k-word 4 B loads, then for each of the 4 A
    rows one load and 4 dot4 (16 dot4 per 8 loads), ``unroll`` k-words per iteration."""
    lines = ["1:"]
    for u in range(unroll):
        o = 4 * u
        for j in range(4):
            lines.append(f"lw %[b{j}], {j * k + o}(%[pb])")
        for r in range(4):
            lines.append(f"lw %[x], {r * k + o}(%[pa])")
            for j in range(4):
                lines.append(f".insn r 0x0b, 0, 0, %[c{r}{j}], %[x], %[b{j}]")
    lines += [f"addi %[pa], %[pa], {4 * unroll}", f"addi %[pb], %[pb], {4 * unroll}",
              "bne %[pa], %[end], 1b"]
    return "\n".join(f'        "{ln}\\n"' for ln in lines)


def matmul_codelet(graph: Graph, k: int):
    """The dense matmul codelet for depth ``k`` (a multiple of 4), registered once per graph."""
    name = f"tsk_mm_k{k}"
    if name in graph.codelets:
        return graph.codelets[name]
    kw = k // 4
    unroll = 4 if kw % 4 == 0 else 2 if kw % 2 == 0 else 1
    asm = 3 * k + 4 * (unroll - 1) <= 2047        # largest immediate load offset
    text = (TEMPLATE.read_text().replace("@NAME@", name).replace("@KS@", str(k))
            .replace("@UNROLL@", str(unroll)).replace("@ASM@", str(int(asm)))
            .replace("@LOOP@", _asm_loop(k, unroll) if asm else ""))
    src = _generated_source(name, text)
    return codelet(graph, name, src, (("a", "in", "int8"), ("bt", "in", "int8"),
                                      ("c", "out", "int32"), ("init", "in", "int32"),
                                      ("rows", "scalar"), ("cols", "scalar")))


def _row_tiles(where, a, k):
    for iv in a.intervals:
        if iv.start % k or iv.stop % k:
            raise KernelError(f"{where}: a {a.name!r} interval {iv.start}..{iv.stop} on tile "
                              f"{iv.tile} splits a row of {k} elements; map it with grain={k}")
    return sorted({iv.tile for iv in a.intervals})


def _engine_ok(graph, engine, k, n, where, need_even_n=True):
    """Use the engine? ``engine=None``: when the array has one and the shape suits it."""
    want = use_engine(graph, engine)
    if not want:
        return False
    ok = k % 8 == 0 and (n % 2 == 0 or not need_even_n)
    if not ok and engine:
        raise KernelError(f"{where}: the matrix engine needs K % 8 == 0"
                          + (" and an even N" if need_even_n else "")
                          + f" (K = {k}, N = {n}); pass engine=False for dot4")
    return ok


def _replicate_b(graph, b, b_layout, tiles, k, n, name, align):
    """``<name>.bt`` [tiles, N, K] on each computing tile (and the steps that fill it)."""
    nt = len(tiles)
    per_tile = lambda shape: [(t, i * int(np.prod(shape)), (i + 1) * int(np.prod(shape)))
                              for i, t in enumerate(tiles)]
    steps = []
    bt = graph.add_variable(f"{name}.bt", (nt, n, k), "int8", per_tile((n, k)))
    bt.align = align
    if b_layout == "nk":
        steps.append(Copy([b] * nt, [bt[i] for i in range(nt)]))
    else:
        bb = graph.add_variable(f"{name}.b", (nt, k, n), "int8", per_tile((k, n)))
        steps.append(Copy([b] * nt, [bb[i] for i in range(nt)]))
        tr = graph.add_compute_set(f"{name}.transpose")
        for i, t in enumerate(tiles):
            graph.add_vertex(tr, "tsr_transpose8", dst=bt[i], src=bb[i], rows=k, cols=n,
                             dst_stride=k)
        steps.append(Execute(tr))
    return bt, steps


def _engine_layer(graph, a, bt, tiles, k, n, table, out, out_row, mode, name, zp=0, qmin=-128,
                  qmax=127):
    """Engine compute set: for every A interval, commands over its rows (output ``out``, rows
    ``out_row`` bytes apart). ``table``: per-channel records [C, 4] int32 (bias, mult, shift)."""
    nt = len(tiles)
    lanes = graph.config.engine_lanes
    require_align(a)
    out.align = max(out.align, 8)
    params = graph.add_constant(f"{name}.params", np.broadcast_to(table, (nt, n, 4)),
                                [(t, i * n * 4, (i + 1) * n * 4) for i, t in enumerate(tiles)],
                                dtype="int32")
    params.align = 8
    elem = 4 if mode == Mode.RAW else 1
    per_tile: dict = {}
    for iv in a.intervals:
        r0, r1 = iv.start // k, iv.stop // k
        i = tiles.index(iv.tile)
        per_tile.setdefault(iv.tile, []).extend(matmul_commands(
            a=a[r0:r1], a_off=0, rows=r1 - r0, k=k, w=bt[i], w_off=0, n0=0, cols=n,
            lanes=lanes, c=out.flatten()[r0 * out_row // elem:r1 * out_row // elem], c_off=0,
            c_row=out_row, c_elem=elem, p=params[i], p_off=0, mode=mode, zp=zp, qmin=qmin,
            qmax=qmax))
    cs = graph.add_compute_set(f"{name}.mm")
    for t, cmds in per_tile.items():
        add_engine_vertex(graph, cs, t, cmds, f"{name}.desc{t}")
    return Execute(cs)


def matmul(graph: Graph, a, b, *, b_layout: str = "kn", init=None, name: str = "matmul",
           engine=None):
    """Build ``C = init + A . B`` on the tiles of A's rows.

    Parameters
    ----------
    graph : Graph
    a : Variable, int8 [M, K]
        Mapped in whole rows (e.g. ``map_linearly(grain=K)``); K must be a multiple of 4
        (pad with zero columns in A and zero rows in B otherwise).
    b : Variable, int8
        ``[K, N]`` if ``b_layout == "kn"``, or B transposed ``[N, K]`` if ``"nk"`` (the
        output-major layout of TFLite FullyConnected weights; no on-tile transpose needed).
        Any mapping whose cross-tile pieces are whole words (e.g. whole rows).
    b_layout : {"kn", "nk"}
    init : None, int or array_like [N] of int32
        Initial accumulator per output column (e.g. a bias, or ``-a_zero_point * sum_k B``
        to fold a zero point); added with 32-bit wrap.
    name : str
        Prefix of the variables (``<name>.c``, ``<name>.bt``, ...) and compute sets.
    engine : None or bool
        Use the matrix engine (``RAW`` mode, §12). None (default): when
        ``graph.config.engine_macs > 0``, K % 8 == 0 and N is even (otherwise ``dot4``);
        True: required (KernelError if impossible); False: ``dot4``.

    Returns
    -------
    (Variable, Program)
        ``C`` (int32 [M, N], rows on the tiles of A's rows) and the program.

    Raises
    ------
    KernelError (GraphError)
        Wrong ranks/dtypes, inner dimensions differ, K not a multiple of 4, A's mapping
        splits a row, bad ``init``.
    """
    where = f"matmul({name!r})"
    a = check_var(where, "a", a, "int8", 2)
    b = check_var(where, "b", b, "int8", 2)
    if b_layout not in ("kn", "nk"):
        raise KernelError(f"{where}: b_layout must be 'kn' or 'nk', not {b_layout!r}")
    m, k = a.shape
    kb, n = b.shape if b_layout == "kn" else b.shape[::-1]
    if k != kb:
        raise KernelError(f"{where}: inner dimensions differ: a {a.name!r} is {a.shape} [M, K], "
                          f"b {b.name!r} is {b.shape} ({'[K, N]' if b_layout == 'kn' else '[N, K]'})")
    if k % 4:
        raise KernelError(f"{where}: K = {k} is not a multiple of 4 (dot4 works on words); "
                          "pad A with zero columns and B with zero rows")
    iv_init = check_init(where, init, n)
    tiles = _row_tiles(where, a, k)
    nt = len(tiles)
    name = unique_name(graph, name)
    c = graph.add_variable(f"{name}.c", (m, n), "int32",
                           [(iv.tile, iv.start // k * n, iv.stop // k * n) for iv in a.intervals])
    if _engine_ok(graph, engine, k, n, where):
        bt, steps = _replicate_b(graph, b, b_layout, tiles, k, n, name, 8)
        steps.append(_engine_layer(graph, a, bt, tiles, k, n, param_table(iv_init), c, 4 * n,
                                   Mode.RAW, name))
        return c, Sequence(*steps)
    per_tile = lambda shape: [(t, i * int(np.prod(shape)), (i + 1) * int(np.prod(shape)))
                              for i, t in enumerate(tiles)]
    initv = graph.add_constant(f"{name}.init", np.broadcast_to(iv_init, (nt, n)),
                               per_tile((n,)), dtype="int32")
    bt, steps = _replicate_b(graph, b, b_layout, tiles, k, n, name, 4)   # dot4: word aligned
    cd = matmul_codelet(graph, k)
    cs = graph.add_compute_set(f"{name}.mm")
    for iv in a.intervals:
        r0, r1 = iv.start // k, iv.stop // k
        i = tiles.index(iv.tile)
        graph.add_vertex(cs, cd, a=a[r0:r1], bt=bt[i], c=c[r0:r1], init=initv[i],
                         rows=r1 - r0, cols=n)
    steps.append(Execute(cs))
    return c, Sequence(*steps)


def matmul_requantize(graph: Graph, a, b, multiplier, shift, out_zero_point: int,
                      relu: bool = False, bias=None, *, b_layout: str = "kn",
                      name: str = "dense", engine=None):
    """A quantized dense layer: ``requantize(A . B + bias)`` to int8, bit-exact with
    ``tessera.golden_model.kernels.requantize(matmul(A, B), multiplier, shift, out_zero_point,
    relu=relu, bias=bias)``.

    The bias is folded into the matmul's initial accumulators (32-bit wrapping adds are
    associative, so this equals adding it before scaling); the requantize compute set
    (:func:`tessera.toolchain.kernels.requantize`) follows the matmul.

    Parameters
    ----------
    graph, a, b, b_layout
        As :func:`matmul`.
    multiplier, shift, out_zero_point, relu, bias
        As :func:`tessera.toolchain.kernels.requantize` (per-tensor scalars or per-output-column
        arrays of length N).
    name : str
        Prefix; the int8 output is ``<name>.out`` mapped like ``<name>.c`` (A's row tiles).
    engine : None or bool
        Use the matrix engine: one ``TFLITE``-mode pass, the requantization (+ ReLU as
        ``qmin = zp``) in the engine's output stage, no int32 accumulators in SRAM. None
        (default): when ``graph.config.engine_macs > 0`` and K % 8 == 0; False: ``dot4`` +
        ``tsr_requant``.

    Returns
    -------
    (Variable, Program)
        int8 output and the program. With ``dot4`` the output is [M, N] (matmul then
        requantize); with the engine it is [M, Np], Np = N rounded up to 8 (an element's
        channels may not cross an 8-byte word, §12 engine fault 4), columns N.. unused
        (zero), one compute set.

    Raises
    ------
    KernelError
        As :func:`matmul` and :func:`tessera.toolchain.kernels.requantize`.
    """
    where = f"matmul_requantize({name!r})"
    n = b.shape[1] if b_layout == "kn" else b.shape[0]
    if bias is not None:
        bb = np.asarray(bias)
        if bb.dtype.kind not in "iu" or bb.ndim > 1 or (bb.ndim == 1 and bb.shape[0] != n):
            raise KernelError(f"{where}: bias must be an int or an int array of shape [N] = [{n}]")
    kk = a.shape[1] if hasattr(a, "shape") else None
    if kk is not None and _engine_ok(graph, engine, kk, n, where, need_even_n=False):
        return _matmul_requantize_engine(graph, a, b, multiplier, shift, out_zero_point, relu,
                                         bias, b_layout, name, where)
    c, prog = matmul(graph, a, b, b_layout=b_layout, init=bias, name=name, engine=False)
    base = c.name[:-2]
    out = graph.add_variable(f"{base}.out", c.shape, "int8",
                             [(iv.tile, iv.start, iv.stop) for iv in c.intervals])
    rq = requantize(graph, c, out, multiplier, shift, out_zero_point, relu=relu, bias=None,
                    name=f"{base}.rq")
    return out, Sequence(prog, rq)


def _matmul_requantize_engine(graph, a, b, multiplier, shift, out_zero_point, relu, bias,
                              b_layout, name, where):
    a = check_var(where, "a", a, "int8", 2)
    b = check_var(where, "b", b, "int8", 2)
    if b_layout not in ("kn", "nk"):
        raise KernelError(f"{where}: b_layout must be 'kn' or 'nk', not {b_layout!r}")
    m, k = a.shape
    kb, n = b.shape if b_layout == "kn" else b.shape[::-1]
    if k != kb:
        raise KernelError(f"{where}: inner dimensions differ: a {a.name!r} is {a.shape}, "
                          f"b {b.name!r} is {b.shape}")
    if isinstance(out_zero_point, bool) or not isinstance(out_zero_point, (int, np.integer)) \
            or not -128 <= out_zero_point <= 127:
        raise KernelError(f"{where}: out_zero_point must be an int in -128..127, "
                          f"not {out_zero_point!r}")
    if not isinstance(relu, (bool, np.bool_)):
        raise KernelError(f"{where}: relu must be a bool, not {relu!r}")
    table = requant_params(multiplier, shift, bias, n, where)      # [P, 3], P = 1 or n
    table = np.broadcast_to(table, (n, 3))
    tiles = _row_tiles(where, a, k)
    name = unique_name(graph, name)
    np_ = -(-n // 8) * 8
    out = graph.add_variable(f"{name}.out", (m, np_), "int8",
                             [(iv.tile, iv.start // k * np_, iv.stop // k * np_)
                              for iv in a.intervals])
    bt, steps = _replicate_b(graph, b, b_layout, tiles, k, n, name, 8)
    zp = int(out_zero_point)
    steps.append(_engine_layer(graph, a, bt, tiles, k, n,
                               param_table(table[:, 0], table[:, 1], table[:, 2]), out, np_,
                               Mode.TFLITE, name, zp=zp, qmin=zp if relu else -128, qmax=127))
    return out, Sequence(*steps)


def matmul_cols(graph: Graph, a, bt, *, init=None, name: str = "mmcols", engine=None,
                requant=None):
    """``C = init + A · B`` with the **output channels split over the tiles** (the weights
    stay put, A goes everywhere): the partition for a small batch against many channels, and
    the engine's best case (J = M rows per command; docs/architecture.md §12, the TessellateIPU
    set-up of docs/performance.md).

    Parameters
    ----------
    graph : Graph
    a : Variable, int8
        ``[M, K]`` (any mapping: replicated to ``<name>.a`` [tiles, M, K] by one ``Copy``,
        a broadcast in one exchange phase) or already replicated ``[tiles_used, M, K]`` with
        slice ``i`` on the ``i``-th tile of ``bt`` (nothing moves; e.g. written by the host).
    bt : Variable, int8 [N, K]
        Bᵀ (output-major, TFLite FullyConnected layout) mapped in whole rows, the same number
        of rows on each tile holding any (``map_linearly(grain=K)`` with N divisible).
    init : None, int or array_like [N]
    engine : None or bool
        As :func:`matmul` (engine: K % 8 == 0 and an even number of channels per tile).
    requant : None or dict
        Engine only: ``{"multiplier", "shift", "zero_point", "relu"}`` — the TFLite
        requantization fused in the engine's output stage (``init`` is the bias) — or
        ``{"rule": "float32", "multiplier": float32 M, "zero_point", "dtype", "relu"}``, the
        ONNX float32 rule (``FLOAT32`` mode; :func:`tessera.toolchain.kernels.engine.
        output_rule`); ``<name>.c`` is then int8 (or uint8) ``[tiles_used, M, ncp]``, ncp =
        N / tiles_used rounded up to 8.

    Returns
    -------
    (Variable, Program)
        ``<name>.c`` int32 ``[tiles_used, M, N / tiles_used]``: tile ``i``'s column block
        (``C = c.transpose(1, 0, 2).reshape(M, N)``), and the program.

    Raises
    ------
    KernelError
        Bad shapes or mappings.
    """
    where = f"matmul_cols({name!r})"
    bt = check_var(where, "bt", bt, "int8", 2)
    n, k = bt.shape
    tiles = _row_tiles(where, bt, k)
    nt = len(tiles)
    rows = {t: 0 for t in tiles}
    for iv in bt.intervals:
        rows[iv.tile] += (iv.stop - iv.start) // k
    nc = rows[tiles[0]]
    if any(r != nc for r in rows.values()) or any(
            sum(1 for iv in bt.intervals if iv.tile == t) != 1 for t in tiles):
        raise KernelError(f"{where}: bt {bt.name!r} must have the same number of whole rows, "
                          "in one interval, on every tile holding any")
    av = a.variable if hasattr(a, "variable") and not hasattr(a, "intervals") else a
    if len(av.shape) == 3:
        a3 = check_var(where, "a", av, "int8", 3)
        if a3.shape[0] != nt or a3.shape[2] != k or [iv.tile for iv in a3.intervals] != tiles \
                or any(iv.size != a3.shape[1] * k for iv in a3.intervals):
            raise KernelError(f"{where}: a replicated [{nt}, M, {k}] needs slice i on tile "
                              f"{tiles} [i]")
        m = a3.shape[1]
        steps = []
    else:
        a2 = check_var(where, "a", av, "int8", 2)
        m = a2.shape[0]
        if a2.shape[1] != k:
            raise KernelError(f"{where}: inner dimensions differ: a {a2.shape}, bt {bt.shape}")
        a3 = graph.add_variable(f"{unique_name(graph, name)}.a", (nt, m, k), "int8",
                                [(t, i * m * k, (i + 1) * m * k) for i, t in enumerate(tiles)])
        steps = [Copy([a2] * nt, [a3[i] for i in range(nt)])]
    iv_init = check_init(where, init, n)
    name = unique_name(graph, name)
    ivs = {iv.tile: iv for iv in bt.intervals}
    per = np.asarray(iv_init).reshape(nt, nc) if nt * nc == n else None
    if requant is not None:
        if not _engine_ok(graph, True if engine is None else engine, k, nc, where, False):
            raise KernelError(f"{where}: requant needs the matrix engine")
        ncp = -(-nc // 8) * 8
        tb, rq_fields, odtype = output_rule(requant, iv_init, n, where)
        tb = tb.reshape(nt, nc, 4)
        c = graph.add_variable(f"{name}.c", (nt, m, ncp), odtype,
                               [(t, i * m * ncp, (i + 1) * m * ncp) for i, t in enumerate(tiles)])
    else:
        c = graph.add_variable(f"{name}.c", (nt, m, nc), "int32",
                               [(t, i * m * nc, (i + 1) * m * nc) for i, t in enumerate(tiles)])
    cs = graph.add_compute_set(f"{name}.mm")
    if requant is not None or _engine_ok(graph, engine, k, nc, where):
        require_align(a3)
        require_align(bt)
        c.align = 8
        if requant is None:
            tables = [param_table(per[i]) for i in range(nt)]
            rq = dict(mode=Mode.RAW, c_row=4 * nc, c_elem=4)
        else:
            tables = [tb[i] for i in range(nt)]
            rq = dict(c_row=ncp, c_elem=1, **rq_fields)
        params = graph.add_constant(f"{name}.params", np.stack(tables),
            [(t, i * nc * 4, (i + 1) * nc * 4) for i, t in enumerate(tiles)], dtype="int32")
        params.align = 8
        for i, t in enumerate(tiles):
            r0 = ivs[t].start // k
            add_engine_vertex(graph, cs, t, matmul_commands(
                a=a3[i], a_off=0, rows=m, k=k, w=bt[r0:r0 + nc], w_off=0, n0=0, cols=nc,
                lanes=graph.config.engine_lanes, c=c[i], c_off=0, p=params[i], p_off=0, **rq),
                f"{name}.desc{t}")
    else:
        if k % 4:
            raise KernelError(f"{where}: K = {k} is not a multiple of 4")
        initv = graph.add_constant(f"{name}.init", per, [(t, i * nc, (i + 1) * nc)
                                                          for i, t in enumerate(tiles)],
                                   dtype="int32")
        cd = matmul_codelet(graph, k)
        for i, t in enumerate(tiles):
            r0 = ivs[t].start // k
            graph.add_vertex(cs, cd, a=a3[i], bt=bt[r0:r0 + nc], c=c[i], init=initv[i],
                             rows=m, cols=nc)
    steps.append(Execute(cs))
    return c, Sequence(*steps)
