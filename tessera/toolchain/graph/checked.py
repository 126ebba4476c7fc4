"""Checked runs: every store a vertex makes must land in a tensor the vertex may write.

A graph's codelets receive raw pointers; a wrong index in a codelet silently overwrites
another tensor, a vertex record or the control table. In a checked run
(``Engine.run(checked=True)``, the default in the test suite) the program runs on the
golden model with its store log on (``tessera.golden_model.Array(stores=...)``: the fast
engine records the store fields of every retired store's retire record; without a fast
engine, the vectorized engine's retire trace, ``Array(trace=True)``), and every retired
store (fields ``store_addr``/``store_mask``, :mod:`tessera.spec.trace`) is replayed against
the vertex its context was running:

* the runtime's "current entry" word of each context (``CompiledGraph.current_offset``;
  ``tessera/toolchain/codelets/runtime.c`` stores the worklist entry's address there before
  calling a codelet and 0 after it) tells which vertex a context is in; stores made outside
  a codelet (by the runtime) are not checked;
* inside a codelet a store may write only the byte ranges of the vertex's ``out`` and
  ``inout`` fields (:attr:`VertexEntry.writes`, all parts of a split vertex may write the
  whole field), the context's own stack (the ``stack_bytes`` below
  ``sram_bytes − context · stack_bytes``), and the context's own current-entry word.

The first violating store raises :class:`TensorBoundsError` naming the vertex, codelet,
compute set, tile, context, the pc (function and ``file:line``), the byte address and what
it hit (a tensor and its interval, a vertex record, the control table, the code, another
context's stack, or free memory).

Limits: exchange receives are the compiler's own writes and are not checked; matrix-engine
output writes (architecture §12) are not instruction stores and are not in the trace — their
ranges come from descriptors the compiler builds. Checked runs use the golden model only;
on the fast engine they cost about as much as a plain model run (the vectorized engine's
trace made them 7-20 times slower).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import EngineError

__all__ = ["TensorBoundsError", "Violation", "find_violations", "run_checked"]


@dataclass(frozen=True)
class Violation:
    """One store outside the writable ranges of the vertex that made it.

    Attributes
    ----------
    cycle : int
        Issue cycle of the store.
    tile, context : int
    pc : int
        The store's pc.
    addr : int
        First byte written outside the allowed ranges.
    nbytes : int
        Bytes the store wrote (1, 2 or 4).
    entry : VertexEntry
        The vertex the context was running.
    hit : str
        What lies at ``addr`` (e.g. ``tensor 'b' [0:64]``, ``vertex records of 'cs'``).
    """
    cycle: int
    tile: int
    context: int
    pc: int
    addr: int
    nbytes: int
    entry: object
    hit: str


class TensorBoundsError(EngineError):
    """A vertex wrote outside its tensors in a checked run.

    Attributes
    ----------
    violation : Violation
        The first offending store (``violations`` lists all that were found, in order).
    violations : list of Violation
    Plus the :class:`EngineError` attributes ``tile``, ``context``, ``pc``, ``addr`` and
    ``entry`` of the first violation.
    """

    def __init__(self, message, result, violations):
        v = violations[0]
        super().__init__(message, result, tile=v.tile, context=v.context, pc=v.pc,
                         addr=v.addr, entry=v.entry)
        self.violation = v
        self.violations = list(violations)


def _what_is(cg, tile: int, addr: int, context: int) -> str:
    """Describe the object at byte ``addr`` of ``tile`` from the compiled layout."""
    cfg = cg.config
    stacks_lo = cfg.sram_bytes - cfg.contexts * cg.stack_bytes
    if stacks_lo <= addr < cfg.sram_bytes:
        owner = (cfg.sram_bytes - 1 - addr) // cg.stack_bytes
        return f"the stack of context {owner}"
    for category, name, lo, nbytes in (cg.layout[tile] if cg.layout else ()):
        if lo <= addr < lo + nbytes:
            return name
    if addr >= cfg.sram_bytes:
        return "nothing (outside the SRAM)"
    return "free memory"


def find_violations(cg, trace, limit: int = 16) -> list:
    """Replay ``trace``'s stores against the vertices' writable ranges.

    Parameters
    ----------
    cg : CompiledGraph
    trace : iterable of dict, or numpy.ndarray
        Retire records in cycle order (keys of :data:`tessera.spec.trace.RECORD_KEYS`;
        records with a ``store_mask`` of None or 0 are skipped), or a store log
        (:attr:`tessera.golden_model.Array.stores`: the same store fields, one row per
        store, in cycle order).
    limit : int
        Stop after this many violations.

    Returns
    -------
    list of Violation
        Empty when every codelet store stayed inside its vertex's ranges.
    """
    keys = ("cycle", "tile", "context", "pc", "store_addr", "store_data", "store_mask")
    if isinstance(trace, np.ndarray):
        rows = zip(*(trace[k].tolist() for k in keys))
    else:
        rows = (tuple(rec[k] for k in keys) for rec in trace if rec["store_mask"])
    cfg = cg.config
    cur_base = cg.base + cg.current_offset
    current: dict = {}          # (tile, context) -> VertexEntry or None
    out: list = []
    for cycle, tile, ctx, pc, word, data, mask in rows:
        own = cur_base + 4 * ctx
        if word == own and cg.current_offset:
            # the runtime entering (entry address) or leaving (0) a codelet
            current[(tile, ctx)] = cg.entries.get((tile, data)) if data else None
            continue
        entry = current.get((tile, ctx))
        if entry is None:
            continue
        lanes = [i for i in range(4) if mask >> i & 1]
        lo, hi = word + lanes[0], word + lanes[-1] + 1
        stack_hi = cfg.sram_bytes - ctx * cg.stack_bytes
        allowed = [(stack_hi - cg.stack_bytes, stack_hi)] + [(a, b) for _, a, b in entry.writes]
        if any(a <= lo and hi <= b for a, b in allowed):
            continue
        bad = next(x for x in range(lo, hi) if not any(a <= x < b for a, b in allowed))
        out.append(Violation(cycle, tile, ctx, pc, bad, hi - lo, entry,
                             _what_is(cg, tile, bad, ctx)))
        if len(out) >= limit:
            break
    return out


#: First capacity (entries) of a checked run's store log; a run that retires more stores is
#: run again with a log of exactly its count (the model is deterministic).
STORE_LOG_ENTRIES = 1 << 20


def run_checked(cg, regions, max_cycles: int):
    """Run ``cg`` on the golden model, recording its stores.

    The fast engine records the stores in its store log (``Array(stores=...)``, at a small
    fraction of the plain run's cost); without a fast engine here the vectorized engine's
    retire trace gives them (several times slower). Both are bit- and cycle-exact, and the
    stores are the same (tests/test_model_store_log.py).

    Parameters
    ----------
    cg : CompiledGraph
    regions : list of bytes-like
        Each tile's data region (written at ``cg.base`` before the start).
    max_cycles : int

    Returns
    -------
    (RunResult, list of bytes, list of Violation)
        The run, each tile's data region read back, and the violations found.
    """
    from tessera.golden_model import Array
    from tessera.golden_model.fast import available

    def run(**kw):
        arr = Array(cg.config, **kw)
        for seg in cg.image.segments:
            if seg.data:
                arr.write_mem(None, seg.addr, bytes(seg.data))
        for t, r in enumerate(regions):
            arr.write_mem(t, cg.base, bytes(r))
        arr.start(entry=cg.image.entry)
        result = arr.run(max_cycles)
        result.backend = "model"
        return arr, result

    if available():
        arr, result = run(engine="fast", stores=STORE_LOG_ENTRIES)
        if arr.stores_needed > STORE_LOG_ENTRIES:
            arr, result = run(engine="fast", stores=arr.stores_needed)
        stores = arr.stores
    else:
        arr, result = run(trace=True, engine="vector")
        stores = arr.trace
    data = [bytes(arr.read_mem(t, cg.base, len(r))) for t, r in enumerate(regions)]
    return result, data, find_violations(cg, stores)


def violation_message(cg, violations) -> str:
    """The :class:`TensorBoundsError` text of ``violations`` (first one in full)."""
    from tessera.toolchain.run import describe_pc
    v = violations[0]
    text = (f"checked run: tile {v.tile} context {v.context} running {v.entry} wrote "
            f"{v.nbytes} byte(s) at {v.addr:#x}, outside the tensors that vertex may write; "
            f"the address is in {v.hit}; store at pc {describe_pc(v.pc, cg.image)}, "
            f"cycle {v.cycle}")
    writes = ", ".join(f"{name} [{a:#x}, {b:#x})" for name, a, b in v.entry.writes)
    text += f". The vertex may write: {writes or 'no tensor'} and its stack"
    if len(violations) > 1:
        text += f" ({len(violations) - 1} more violation(s) found)"
    return text
