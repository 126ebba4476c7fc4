"""Lower a graph program to per-tile images (docs/compiler.md, "Lowering").

Steps: flatten the program into control ops (EXEC compute set / EXCH exchange phase /
REPEAT) -> build the SPMD binary -> lay out every tile (control table, tensors, vertex
records, worklists, exchange programs) -> check that every tile fits (before anything
is written anywhere) -> emit each tile's data region as bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from tessera.spec.config import ArrayConfig

from .build import build_binary
from .codelet import BUILTIN
from .control import CTRL_HEADER_WORDS, CTRL_MAGIC, OP_EXCH, OP_EXEC, OP_PROF, OP_REPEAT, OP_WORDS
from .copy import exchange_transfers, plan_copy
from .errors import GraphError
from .graph import Graph
from .layout import TileMemory, check_fits, format_report
from .program import Copy, Execute, Program, Repeat, Sequence
from .tensor import Tensor

__all__ = ["compile_graph", "CompiledGraph", "VertexEntry", "CTRL_MAGIC", "OP_EXEC", "OP_EXCH",
           "OP_REPEAT"]



@dataclass(frozen=True)
class VertexEntry:
    """One worklist entry: which vertex a context runs, and which part of it.

    Attributes
    ----------
    compute_set : str
    vertex : int
        Index of the vertex in its compute set (``ComputeSet.vertices``).
    codelet : str
    tile : int
    context : int
    part, nparts : int
        The vertex runs as part ``part`` of ``nparts`` on this context.
    writes : tuple of (str, int, int)
        The tensors this vertex may write (its ``out`` and ``inout`` fields): ``(field:
        tensor description, first byte address, end byte address)`` on ``tile``; checked by
        :mod:`tessera.toolchain.graph.checked`.
    """
    compute_set: str
    vertex: int
    codelet: str
    tile: int
    context: int
    part: int
    nparts: int
    writes: tuple = ()

    def __str__(self) -> str:
        split = f", part {self.part} of {self.nparts}" if self.nparts > 1 else ""
        return (f"codelet {self.codelet!r}, vertex {self.vertex} of compute set "
                f"{self.compute_set!r}{split}")


@dataclass
class CompiledGraph:
    """Everything an :class:`~tessera.toolchain.graph.engine.Engine` needs to run a graph.

    Attributes
    ----------
    config : ArrayConfig
    image : tessera.toolchain.elf.Image
        The SPMD binary (loaded into every tile).
    base : int
        Start of every tile's data region (the control table).
    regions : list of bytes
        ``regions[t]`` = tile t's data region from ``base`` (tensors zero).
    tensors : dict
        Variable name -> (Variable, int64 array of each interval's byte address).
    memory : list of dict
        Per-tile bytes per category (``code control tensors vertices exchange stacks``)
        plus ``used`` and ``free``.
    exchanges : list of dict
        One scheduler report per exchange phase (``name`` added).
    ops : list of tuple
        The control ops, for inspection: ``("exec", name)``, ``("exch", name)``,
        ``("repeat", count, body_ops)``.
    stack_bytes : int
    profile : str or None
        Name of the profile variable passed to ``compile_graph(profile=...)``.
    current_offset : int
        Byte offset, in every region, of the T "current entry" words the runtime keeps
        (the worklist entry each context is running, 0 between codelets).
    entries : dict
        ``(tile, entry address)`` -> :class:`VertexEntry`, for naming the vertex a context
        was running (:class:`~tessera.toolchain.graph.EngineError`).
    xprograms : dict
        ``tile`` -> list of ``(start, end, phase name)`` of its exchange programs.
    layout : list of list
        ``layout[t]``: tile t's allocations ``(category, description, address, bytes)`` in
        address order (code, control, tensors, vertex records, exchange programs).
    engine_starts : dict
        ``tile`` -> list of ``(compute set name, descriptor address)``: the engine-start
        commands the runtime issues on that tile (``EXEC`` word 2), for naming an engine
        fault of one (:class:`~tessera.toolchain.graph.EngineError`).
    """
    config: ArrayConfig
    image: object
    base: int
    regions: list
    tensors: dict
    memory: list
    exchanges: list
    ops: list
    stack_bytes: int
    profile: str | None = None
    current_offset: int = 0
    entries: dict = field(default_factory=dict)
    xprograms: dict = field(default_factory=dict)
    layout: list = field(default_factory=list)
    engine_starts: dict = field(default_factory=dict)

    def memory_report(self) -> str:
        """The per-tile memory table as text."""
        return format_report(self.memory)


def _own_variable(graph, t, what, where):
    var = t.variable
    if graph.variables.get(var.name) is not var:
        other = (" (this graph has another variable of that name)"
                 if var.name in graph.variables else "")
        raise GraphError(f"{where}: Copy {what} {var.name!r} is a variable of another graph"
                         f"{other}; create it with this graph's add_variable")


def _flatten(program, ops, plans, where="program", graph=None):
    if isinstance(program, Sequence):
        for i, p in enumerate(program.programs):
            _flatten(p, ops, plans, f"{where}[{i}]", graph)
    elif isinstance(program, Execute):
        cs = program.compute_set
        if graph is not None and not any(c is cs for c in graph.compute_sets):
            raise GraphError(f"{where}: Execute of compute set {cs.name!r}, which belongs to "
                             f"another graph ({len(cs.vertices)} vertices); create it with "
                             "this graph's add_compute_set")
        ops.append(("exec", cs))
    elif isinstance(program, Copy):
        if graph is not None:
            for i, (src, dst) in enumerate(program.pairs):
                _own_variable(graph, src, f"source {i}" if len(program.pairs) > 1 else "source",
                              where)
                _own_variable(graph, dst, f"destination {i}" if len(program.pairs) > 1
                              else "destination", where)
        if id(program) not in plans:
            plans[id(program)] = plan_copy(program, f"copy{len(plans)}", BUILTIN["tsr_copy"])
        plan = plans[id(program)]
        if plan.local is not None:
            ops.append(("exec", plan.local))
        if plan.has_exchange:
            ops.append(("exch", plan))
    elif isinstance(program, Repeat):
        body = []
        _flatten(program.program, body, plans, f"{where}.body", graph)
        if program.count and body:
            ops.append(("repeat", program.count, len(body)))
            ops.extend(body)
    else:
        raise GraphError(f"{where}: not a Program: {program!r}")


def _worklists(vertices, contexts):
    """Per-context entries (vertex index, part, nparts): split vertices when fewer than T,
    else longest-processing-time-first by total tensor elements. A vertex of a ``single``
    codelet is never split (one entry, part 0 of 1, on the first free context, or on its
    ``Vertex.context`` if that is set); the other vertices share the remaining contexts."""
    nv = len(vertices)
    lists = [[] for _ in range(contexts)]
    if nv == 0:
        return lists
    pinned = set()
    for v in range(nv):
        c = getattr(vertices[v], "context", None)
        if c is None:
            continue
        if not vertices[v].codelet.single:
            raise GraphError(f"vertex {v} ({vertices[v].codelet.name!r}, tile "
                             f"{vertices[v].tile}): a context is only given to vertices of "
                             "single codelets")
        if not isinstance(c, int) or not 0 <= c < contexts:
            raise GraphError(f"vertex {v} ({vertices[v].codelet.name!r}, tile "
                             f"{vertices[v].tile}): context {c!r} is not in 0..{contexts - 1}")
        lists[c].append((v, 0, 1))
        pinned.add(v)
    rest = [v for v in range(nv) if v not in pinned]
    if len(rest) + len(pinned) < contexts:
        free = [c for c in range(contexts) if not lists[c]]
        split = []
        for v in rest:
            if vertices[v].codelet.single:
                lists[free.pop(0)].append((v, 0, 1))
            else:
                split.append(v)
        nfree, ns = len(free), len(split)      # nv < T, so ns < nfree
        for i, v in enumerate(split):
            parts = nfree // ns + (i < nfree % ns)
            for p in range(parts):
                lists[free.pop(0)].append((v, p, parts))
        return lists
    cost = [sum(x.size for x in vx.fields.values() if isinstance(x, Tensor)) + 1
            for vx in vertices]
    load = [0] * contexts
    for v in pinned:
        load[vertices[v].context] += cost[v]
    for v in sorted(rest, key=lambda i: -cost[i]):
        c = min(range(contexts), key=lambda k: load[k])
        lists[c].append((v, 0, 1))
        load[c] += cost[v]
    return lists


def _engine_start(cs, t: int, tensor_addr) -> int:
    """EXEC word b of compute set ``cs`` on tile ``t``: the address of its engine-start
    descriptor (``ComputeSet.engine_start``), 0 if none."""
    d = cs.engine_start.get(t)
    if d is None:
        return 0
    if not isinstance(d, Tensor) or d.size * d.dtype.itemsize != 64:
        raise GraphError(f"compute set {cs.name!r}: engine_start of tile {t} must be a "
                         f"64-byte Tensor (one engine descriptor), not {d!r}")
    iv, _ = d.contiguous_interval(f"compute set {cs.name!r}, engine_start")
    if iv.tile != t:
        raise GraphError(f"compute set {cs.name!r}: engine_start of tile {t} lies on tile "
                         f"{iv.tile}")
    if not any(v.tile == t for v in cs.vertices):
        raise GraphError(f"compute set {cs.name!r}: engine_start on tile {t}, which has no "
                         "vertex in the compute set (nothing would mwait for the command)")
    a = tensor_addr(d)
    if a % 8:
        raise GraphError(f"compute set {cs.name!r}: engine_start of tile {t} at {a:#x} is not "
                         "8-byte aligned")
    return a


def compile_graph(graph: Graph, program: Program, *, stack_bytes: int = 1024,
                  opt: str = "-O2", profile=None) -> CompiledGraph:
    """Compile ``program`` over ``graph`` into per-tile images.

    Parameters
    ----------
    graph : Graph
    program : Program
        Sequence / Execute / Copy / Repeat tree.
    stack_bytes : int
        Stack bytes per context (multiple of 16, at least 256).
    opt : str
        Compiler optimisation flag for the runtime and codelets.
    profile : Variable or None
        Optional superstep profile buffer: an int32 variable of shape ``[tiles, 1 + 2·R]``
        with row ``t`` on tile ``t``. A ``PROF`` op is emitted first; the last context
        (``T - 1``) of each tile then writes ``count`` and up to ``R`` records
        ``(tag, cycle)`` into its row
        (``tessera/toolchain/codelets/runtime.c``; decoded by :mod:`tessera.toolchain.profile`).

    Returns
    -------
    CompiledGraph

    Raises
    ------
    GraphError
        Invalid program or copy (see :mod:`tessera.toolchain.graph.copy`), or a compiler failure.
    GraphMemoryError
        A tile does not fit its SRAM; raised before any image is produced. The message
        names the tile, the bytes used and available, and the largest items.
    """
    if not isinstance(graph, Graph):
        raise GraphError(f"compile_graph: graph must be a Graph, not {graph!r}")
    if not isinstance(program, Program):
        raise GraphError(f"compile_graph: program must be a Program, not {program!r}")
    if not isinstance(stack_bytes, int) or stack_bytes < 256 or stack_bytes % 16:
        raise GraphError(f"compile_graph: stack_bytes must be a multiple of 16, >= 256, "
                         f"not {stack_bytes!r}")
    cfg = graph.config
    T, N = cfg.contexts, cfg.tiles
    ops: list = []
    plans: dict = {}
    if profile is not None:
        pv = graph.variables.get(getattr(profile, "name", None))
        if pv is not profile or pv.dtype.name != "int32" or len(pv.shape) != 2 \
                or pv.shape[0] != N or pv.shape[1] < 3 or \
                sorted((iv.tile, iv.start, iv.stop) for iv in pv.intervals) != \
                [(t, t * pv.shape[1], (t + 1) * pv.shape[1]) for t in range(N)]:
            raise GraphError(f"compile_graph: profile must be an int32 variable of this graph "
                             f"with shape [{N}, 1 + 2*records] and row t on tile t, not {profile!r}")
        ops.append(("prof", pv))
    _flatten(program, ops, plans, graph=graph)

    compute_sets = {id(op[1]): op[1] for op in ops if op[0] == "exec"}
    codelets = [v.codelet for cs in compute_sets.values() for v in cs.vertices]
    image = build_binary(codelets, opt=opt, stack_bytes=stack_bytes,
                         defines=(f"TSR_ENGINE_MACS={cfg.engine_macs}",))
    base = -(-image.end // 8) * 8
    mems = [TileMemory(t, image.end, base) for t in range(N)]
    current_offset = 4 * (CTRL_HEADER_WORDS + OP_WORDS * len(ops))  # T "current entry" words follow the ops
    ctrl_bytes = current_offset + 4 * T
    for m in mems:
        assert m.alloc("control", "control table", ctrl_bytes, 8) == base

    # tensors
    tensors = {}
    for name, var in graph.variables.items():
        addrs = np.zeros(len(var.intervals), dtype=np.int64)
        for i, iv in enumerate(var.intervals):
            addrs[i] = mems[iv.tile].alloc(
                "tensors", f"tensor {name!r} [{iv.start}:{iv.stop}]", iv.size * var.dtype.itemsize,
                getattr(var, "align", 4))
        tensors[name] = (var, addrs)

    def tensor_addr(t: Tensor) -> int:
        var, addrs = tensors[t.variable.name]
        iv, off = t.contiguous_interval("vertex field")
        return int(addrs[var.intervals.index(iv)]) + off * var.dtype.itemsize

    blobs = [dict() for _ in range(N)]  # addr -> bytes, per tile
    for name, (var, addrs) in tensors.items():   # constants (Graph.add_constant / add_late_constant)
        init = getattr(var, "initial", None)
        late = getattr(var, "late", None)
        if late is not None:      # e.g. engine descriptors: need every tensor's address
            data = np.frombuffer(bytes(late(tensor_addr)), dtype=np.uint8)
            if data.size != var.size:
                raise GraphError(f"late constant {name!r}: its builder returned {data.size} "
                                 f"bytes, not {var.size}")
            init = data.astype(var.dtype).reshape(var.shape)
        if init is not None:
            flat = init.reshape(-1)
            for iv, a in zip(var.intervals, addrs):
                blobs[iv.tile][int(a)] = flat[iv.start:iv.stop].tobytes()

    def vertex_writes(v) -> tuple:
        out = []
        for f in v.codelet.fields:
            x = v.fields[f.name]
            if f.kind in ("out", "inout"):
                lo = tensor_addr(x)
                out.append((f"field {f.name!r} (tensor {x.variable.name!r})", lo,
                            lo + x.size * x.dtype.itemsize))
        return tuple(out)

    # vertex records and worklists, once per compute set
    worklist_addr: dict = {}
    entries: dict = {}
    for key, cs in compute_sets.items():
        per_tile: dict = {}
        index = {id(v): i for i, v in enumerate(cs.vertices)}
        for v in cs.vertices:
            per_tile.setdefault(v.tile, []).append(v)
        wl = {}
        for t, verts in per_tile.items():
            m = mems[t]
            rec_addr = []
            for v in verts:
                words = [image.symbols[v.codelet.name]]
                for f in v.codelet.fields:
                    x = v.fields[f.name]
                    words += [tensor_addr(x), x.size] if isinstance(x, Tensor) else [x]
                a = m.alloc("vertices", f"vertex records of {cs.name!r}", 4 * len(words))
                blobs[t][a] = struct.pack(f"<{len(words)}I", *words)
                rec_addr.append(a)
            lists = _worklists(verts, T)
            sizes = [4 + 12 * len(lst) for lst in lists]
            a = m.alloc("control", f"worklist of {cs.name!r}", 4 * T + sum(sizes))
            words, pos = [], a + 4 * T
            for s in sizes:
                words.append(pos)
                pos += s
            pos = a + 4 * T
            for ctx, lst in enumerate(lists):
                words.append(len(lst))
                for j, (vi, p, n) in enumerate(lst):
                    words += [rec_addr[vi], p, n]
                    entries[(t, pos + 4 + 12 * j)] = VertexEntry(
                        cs.name, index[id(verts[vi])], verts[vi].codelet.name, t, ctx, p, n,
                        vertex_writes(verts[vi]))
                pos += 4 + 12 * len(lst)
            blobs[t][a] = struct.pack(f"<{len(words)}I", *words)
            wl[t] = a
        worklist_addr[key] = wl

    # fail on memory before scheduling: an exchange into a tensor placed past the SRAM would
    # otherwise surface as a confusing "address outside the SRAM" scheduling error
    check_fits(mems, T, stack_bytes, cfg.sram_bytes)

    # exchange phases
    from tessera.toolchain.exchange_scheduler import ExchangeScheduleError, schedule_exchange
    xprog_addr: dict = {}
    xprograms: dict = {}
    reports = []
    for plan in {id(op[1]): op[1] for op in ops if op[0] == "exch"}.values():
        transfers = exchange_transfers(plan, lambda var: tensors[var.name][1])
        try:
            sched = schedule_exchange(transfers, cfg)
        except ExchangeScheduleError as e:
            raise GraphError(f"{plan.name}: exchange scheduling failed: {e}") from None
        rep = sched.report()
        rep["name"] = plan.name
        reports.append(rep)
        progs = sched.encoded()
        addrs = {}
        for t in range(N):
            a = mems[t].alloc("exchange", f"exchange program {plan.name}", len(progs[t]), 8)
            blobs[t][a] = progs[t]
            addrs[t] = a
            xprograms.setdefault(t, []).append((a, a + len(progs[t]), plan.name))
        xprog_addr[id(plan)] = addrs

    check_fits(mems, T, stack_bytes, cfg.sram_bytes)

    regions = []
    engine_starts: dict = {}
    for t in range(N):
        words = [CTRL_MAGIC, len(ops)]  # flat count; a REPEAT's b counts its flat body
        for op in ops:
            if op[0] == "exec":
                start = _engine_start(op[1], t, tensor_addr)
                words += [OP_EXEC, worklist_addr[id(op[1])].get(t, 0), start]
                if start and (op[1].name, start) not in engine_starts.get(t, []):
                    engine_starts.setdefault(t, []).append((op[1].name, start))
            elif op[0] == "exch":
                words += [OP_EXCH, xprog_addr[id(op[1])][t], 0]
            elif op[0] == "prof":
                pv, paddrs = tensors[op[1].name]
                (pa,) = [int(x) for iv, x in zip(pv.intervals, paddrs) if iv.tile == t]
                words += [OP_PROF, pa, (pv.shape[1] - 1) // 2]
            else:
                words += [OP_REPEAT, op[1], op[2]]
        buf = bytearray(mems[t].top - base)
        buf[0:4 * len(words)] = struct.pack(f"<{len(words)}I", *words)
        for a, data in blobs[t].items():
            buf[a - base:a - base + len(data)] = data
        regions.append(bytes(buf))

    memory = [m.usage(T, stack_bytes, cfg.sram_bytes) for m in mems]
    summary = [(op[0], op[1].name) if op[0] != "repeat" else op for op in ops]
    return CompiledGraph(cfg, image, base, regions, tensors, memory, reports, summary,
                         stack_bytes, profile.name if profile is not None else None,
                         current_offset, entries, xprograms, [list(m.items) for m in mems],
                         engine_starts)

