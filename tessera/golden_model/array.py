"""The golden model of a Tessera array: bit- and cycle-exact to docs/architecture.md.

This module is the model's timing machinery and its host interface. What an instruction does
to the [N] vectors of the issuing tiles is :mod:`tessera.golden_model.semantics`; the state
lives in named records: :class:`~tessera.golden_model.contexts.Contexts` ([N, T] registers,
pcs, states, pending changes, division turns, stack limits),
:class:`~tessera.golden_model.tiles.Tiles` ([N] xprog, exchange phase, counters, fault
records), :class:`~tessera.golden_model.schedule.Schedule` (cycle, event times, run end),
:class:`~tessera.golden_model.sync.Barrier`, the memory-order records of
:mod:`tessera.golden_model.memorder`, the SRAM (:mod:`~tessera.golden_model.memory`), the
exchange engine (:mod:`~tessera.golden_model.exchange`) and the matrix engines
(:mod:`~tessera.golden_model.engine`). The compiled fast engine runs on the same arrays.

Simulation strategy
-------------------
The model steps the global cycle counter t. At cycle t, context c = t mod T of every tile owns
the issue slot; all tiles whose context c is RUNNING execute their instruction **in one numpy
step**: the words are gathered from the SRAM array, decoded (cached per distinct word; one
scalar decode when every tile runs the same word, the SPMD common case), grouped by operation
and applied to the [N, T, 32] register file with vectorized numpy ops. There is no Python loop
over tiles or contexts per instruction.

Register and pc effects are applied at issue. That is exact because (§4) a context's
register/pc effects are only observed at its next slot (≥ t+6, T ≥ 6), and the operands an
instruction reads (in R) can only be changed by the context itself. **Data-memory effects**
(a store's write, a load's read) happen in their M cycle t+4 (contract v2): the semantics
queue them at issue (:mod:`tessera.golden_model.memorder`) and the loop applies them at the
end of iteration t+4, after the fetch and the matrix-engine steps of that cycle. So the fetch
of cycle k sees exactly the SRAM writes of cycles < k (stores issued ≤ k−5, exchange receives
and engine writes of cycles < k), an engine step of cycle k sees the writes of cycles < k, and
loads see every write of earlier cycles: all of §4 and §12 "Memory order" hold without
corrections. ``mrun``/``mwait`` are decided in M too (at the start of iteration t+4, from the
engine state after the steps of cycles < t+4). State changes (ecall, sync, fault) become
*visible* at t+5: they are kept as per-context pending changes and applied at the start of
cycle t+5, together with barrier decisions (§5) and counter bookkeeping (§8), which are event
driven. Cycles in which no context can issue are skipped in bulk (unless a matrix engine is
busy or M-stage work is in flight).

Stop (§7): every fault is recorded with the cycle from which it is visible (t+5 for an
instruction issued at t, c+1 for an exchange step at c, s+1 for an engine step at s); a tile
keeps the record visible first (the instruction's on a tie with an engine step, whose fault is
then dropped, §12). The stop condition (a fault visible, or every context HALTED) first holds
at v; the run ends after cycle t_s = v + D − 1 (``cycles = v + D``): every tile keeps issuing
and stepping until then. At the end of a run the M-stage work still in flight (instructions
issued in the last four cycles) is applied with the matrix engines frozen at the end of the
run (nothing of cycles ≥ C happens; docs/design/contract-v2.md §6 point 4). A tile whose
exchange step faults does no further exchange step (§6), and an engine whose step faults
makes no further step and stays busy (§12).

Fast engine and the matrix engine: until the compiled loop implements §12
(:data:`FAST_HAS_MATRIX_ENGINE`, or ``HAS_MATRIX_ENGINE = True`` in
:mod:`tessera.golden_model.fast`), a :meth:`Array.run` call on the fast engine runs the
vectorized engine instead when the configuration has an engine (``engine_macs > 0``) and
the SRAM of some tile holds an ``mrun``/``mwait`` word (or an engine is busy). Programs
without those words keep the fast engine. The fast engine decodes ``mrun``/``mwait`` as
illegal; if such a word only appears at run time (written by a store or an exchange) and the
fast engine faults on it, :meth:`Array.run` raises ``RuntimeError`` instead of returning a
wrong result.
"""

from __future__ import annotations

import numpy as np

from tessera.spec.config import ArrayConfig
from tessera.spec.faults import FaultCause
from tessera.spec.instructions import BY_NAME, is_division
from tessera.spec.isa import DIV_TURNS
from tessera.spec.timing import STATE_VISIBLE_DELAY, STEP_FAULT_VISIBLE_DELAY, Stage
from tessera.spec.result import not_arrived as result_not_arrived
from tessera.spec.result import (COUNTER_NAMES, ContextResult, ContextState, Fault, RunResult,
                            RunStatus, TileResult)

from . import sync
from .contexts import NEVER as _NEVER
from .contexts import Contexts
from .decode import ROW_OF, Op, decode
from .engine import MatrixEngines
from .exchange import ExchangeEngine
from .memorder import MStageQueue, PortSlots
from .memory import Sram
from .schedule import Schedule
from .semantics import IsaSemantics
from .tiles import FAULT_RING, Tiles

__all__ = ["Array", "ENGINES", "FAST_HAS_MATRIX_ENGINE", "CONTRACT_VERSION"]

#: The version of the timing contract (docs/architecture.md §4, §7) this module implements.
CONTRACT_VERSION = 2

#: The compiled fast engine implements the matrix engine (§12) (branch engine-fast; also
#: ``HAS_MATRIX_ENGINE`` in ``tessera/golden_model/fast/__init__.py``), so the fallback of
#: the module docstring is off.
FAST_HAS_MATRIX_ENGINE = True


def _fast_has_matrix_engine() -> bool:
    from . import fast
    return FAST_HAS_MATRIX_ENGINE or bool(getattr(fast, "HAS_MATRIX_ENGINE", False))


_MRUN, _MWAIT = BY_NAME["mrun"], BY_NAME["mwait"]


def _engine_words(words: np.ndarray) -> np.ndarray:
    """Which of ``words`` (uint32 array) are ``mrun``/``mwait`` encodings, bool (same shape)."""
    return ((words & _U32(_MRUN.mask)) == _U32(_MRUN.match)) | (words == _U32(_MWAIT.match))


def _fast_contract_version() -> int:
    from . import fast
    return int(getattr(fast, "CONTRACT_VERSION", 1))


#: The engines of :class:`Array` (``engine=``).
ENGINES = ("fast", "vector")
_WARNED = []


def _choose_engine(engine: str | None, trace: bool) -> str:
    """Resolve ``Array(engine=...)``; see :class:`Array`."""
    import os
    asked = engine is not None
    explicit = asked or bool(os.environ.get("TESSERA_MODEL_ENGINE"))
    if engine is None:
        engine = os.environ.get("TESSERA_MODEL_ENGINE") or ("vector" if trace else "fast")
    if engine not in ENGINES:
        raise ValueError(f"Array: engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine == "fast" and _fast_contract_version() != CONTRACT_VERSION:
        if explicit:
            raise ValueError(
                f"Array: engine='fast' implements contract v{_fast_contract_version()} of "
                f"docs/architecture.md, this model contract v{CONTRACT_VERSION} (the compiled "
                "loop tessera/golden_model/fast/engine.c is not ported yet); use "
                "engine='vector'")
        return "vector"
    if engine == "fast":
        if trace:
            if asked:           # the argument, not $TESSERA_MODEL_ENGINE: tracing runs vector
                raise ValueError("Array: trace=True needs engine='vector' (the fast engine "
                                 "does not record retire traces)")
            return "vector"
        from .fast import FastEngineUnavailable, library
        try:
            library()
        except FastEngineUnavailable as e:
            if explicit:
                raise
            if not _WARNED:
                import warnings
                warnings.warn(f"{e}\ngolden_model: using the vectorized engine", RuntimeWarning,
                              stacklevel=3)
                _WARNED.append(True)
            return "vector"
    return engine

_U32 = np.uint32
_LS_MASK, _LS_MATCH = _U32(0x5F), _U32(0x03)    # opcode LOAD (0x03) or STORE (0x23)
_M32 = 0xFFFFFFFF
#: Cycles from issue to M, the cycle of data-memory effects and engine decisions (§4).
_M_DELAY = int(Stage.M)
RUNNING, WAIT_TILE, WAIT_ARRAY, HALTED, FAULT = (int(s) for s in ContextState)


# The divisions (their turns are timing, §4 "Division"; their result is ISA semantics).
_DIVS = frozenset(op for op, row in ROW_OF.items() if is_division(row.match))


class Array:
    """Golden model of one Tessera array.

    Parameters
    ----------
    config : tessera.spec.config.ArrayConfig
        Geometry (N tiles, T contexts, SRAM bytes, exchange latency L) and the matrix
        engine's MACs per cycle P (``engine_macs``; 0: ``mrun``/``mwait`` are illegal).
    trace : bool
        Record one retire record per retired instruction in :attr:`trace` (slow: a Python
        dict per instruction; use for small runs). Tracing runs the vectorized engine.
    engine : {None, "fast", "vector"}
        Which implementation runs :meth:`run`: ``"fast"``, the compiled cycle loop of
        :mod:`tessera.golden_model.fast`, or ``"vector"``, the numpy implementation of this module
        (one vectorized step per cycle over all tiles). Both are bit- and cycle-exact and
        share this object's state. None (default): ``$TESSERA_MODEL_ENGINE`` if set, else
        ``"vector"`` with ``trace=True`` and ``"fast"`` otherwise (``"vector"`` with a
        warning if the fast engine cannot be built here). While the fast engine implements
        another timing contract than this module (``tessera.golden_model.fast.
        CONTRACT_VERSION`` != :data:`CONTRACT_VERSION`), ``"fast"`` asked for explicitly or
        through the environment raises ``ValueError`` and the default is ``"vector"``.
    stores : int
        Capacity (entries) of the store log, 0 (default): none. With a capacity, the fast
        engine records every retired store in :attr:`stores` (the store fields of its retire
        record, at a small fraction of a trace's cost: the tensor-bounds checked graph runs,
        :mod:`tessera.toolchain.graph.checked`). Stores past the capacity are counted in
        :attr:`stores_needed` but not kept. Needs the fast engine.

    Members
    -------
    config : ArrayConfig
    engine : str
        ``"fast"`` or ``"vector"``, the engine chosen at construction.
    last_engine : str or None
        The engine that ran the latest :meth:`run` call: ``"vector"`` also when ``engine`` is
        ``"fast"`` but the run needed the matrix engine (module docstring); None before.
    trace : list of dict or None
        Retire records in retire order (cycle, then tile), keys ``cycle`` (issue cycle),
        ``tile``, ``context``, ``pc``, ``insn``, ``rd`` (None when no register is written or
        rd = x0), ``value`` (the written value or None), ``store_addr`` (word-aligned byte
        address), ``store_data`` (the 32-bit SRAM write-port word, bytes in their lanes),
        ``store_mask`` (4-bit byte enables) — the three store keys are None for non-stores.
        Faulting instructions are not recorded.
    stores : numpy.ndarray or None
        The store log (``stores`` > 0): structured array of dtype
        :data:`tessera.golden_model.fast.run.STORE_DTYPE`, fields ``cycle`` (issue cycle),
        ``tile``, ``context``, ``pc``, ``store_addr``, ``store_data``, ``store_mask`` as in
        :attr:`trace`, one per retired store since the last :meth:`start`, in (cycle, tile)
        order; at most ``stores`` entries (an overflowed log is incomplete: run again with
        ``stores=stores_needed``).
    stores_needed : int
        Stores retired since the last :meth:`start` (more than :attr:`stores` holds when the
        log overflowed).
    xtrace : list of dict or None
        Exchange STEP events (``cycle``, ``tile``, ``step_addr``, ``send`` (word or None),
        ``recv`` ((source tile, byte address, word) or None)).

    Notes
    -----
    A new Array is in the state of a host start with entry 0 (all SRAM zero). The model is
    "stopped" between :meth:`run` calls, so host SRAM access is always allowed (§9).
    """

    def __init__(self, config: ArrayConfig, trace: bool = False, engine: str | None = None,
                 stores: int = 0):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"Array: config must be a tessera.spec.config.ArrayConfig, "
                            f"not {type(config).__name__}")
        if not isinstance(stores, (int, np.integer)) or isinstance(stores, bool) or stores < 0:
            raise ValueError(f"Array: stores must be a capacity >= 0 (entries), not {stores!r}")
        self.config = config
        self.engine = _choose_engine(engine, bool(trace))
        if stores and self.engine != "fast":
            raise ValueError(f"Array: stores={stores} needs the fast engine, not "
                             f"{self.engine!r} (the vectorized engine records stores in its "
                             "retire trace, trace=True)")
        self._slog = None
        if stores:
            from .fast.run import STORE_DTYPE
            self._slog = np.zeros(int(stores), STORE_DTYPE)
        self._slog_n = 0
        self._has_engine = config.engine_macs > 0
        self.last_engine: str | None = None
        self.n = config.tiles
        self.t = config.contexts
        self.nbytes = config.sram_bytes
        self.sram = Sram(self.n, self.nbytes)
        self._x = ExchangeEngine(self.n, config.exchange_latency, self.sram)
        self._x._trace = bool(trace)
        self._trace_on = bool(trace)
        self._ar = np.arange(self.n, dtype=np.int64)
        self.start(0)

    # ------------------------------------------------------------------ host interface
    def write_mem(self, tile: int | None, addr: int, data: bytes) -> None:
        """Write ``data`` to SRAM byte address ``addr`` of ``tile`` (None = every tile).

        Raises
        ------
        ValueError
            If ``tile``, ``addr`` or ``addr + len(data)`` is out of range; the message names
            the tile, address and length.
        """
        self.sram.write(tile, addr, data)

    def read_mem(self, tile: int, addr: int, nbytes: int) -> bytes:
        """Read ``nbytes`` bytes from SRAM byte address ``addr`` of ``tile``.

        Raises
        ------
        ValueError
            If the tile, address or length is out of range.
        """
        return self.sram.read(tile, addr, nbytes)

    def start(self, entry: int = 0) -> None:
        """Host start (§9): reset registers, pcs (= ``entry``), states, counters, cycle
        counter, xprog, matrix engines (idle) and fault records. SRAM keeps its content.

        Raises
        ------
        ValueError
            If ``entry`` is not an int in 0..2^32-1.
        """
        if not isinstance(entry, (int, np.integer)) or isinstance(entry, bool) \
                or not 0 <= entry <= _M32:
            raise ValueError(f"start: entry must be an address 0..0xFFFFFFFF, not {entry!r}")
        n, t = self.n, self.t
        # The state, in named records (each documents its members, shapes and sections):
        # contexts [N, T], tiles [N], run control, the ARRAY barrier, the memory-order
        # records (M-stage work in flight, §4; the SRAM port slots, §12) and the matrix
        # engines (idle).
        self._ctx = Contexts.start(n, t, int(entry))
        self._tl = Tiles.start(n)
        self._sch = Schedule.start(n, t)
        self._bar = sync.Barrier()
        self._mq = MStageQueue.start()
        self._lsu = PortSlots.start(n)
        self._d = self.config.decision_latency
        self._x.reset()
        self.trace = [] if self._trace_on else None
        self.xtrace = [] if self._trace_on else None
        self._slog_n = 0
        self._mx = MatrixEngines(n, self.config.engine_lanes, self.nbytes, self._tl.macs)
        self._mx_faults: list[tuple[int, int, int]] = []  # engine faults of the cycle (tile,
        #                                                   addr, visibility delay)
        # c_e's pc = pc_e of data faults (checks 2, 3) of cycle k, set after the issue of k + 1
        # (c_e may issue then: FAULT only from k + 2): [(k + 1, tile, c_e, pc_e)]
        self._pc_fix: list[tuple[int, int, int, int]] = []
        self._port = _EnginePort(self.sram)
        self._isa = IsaSemantics(self._ctx, self._tl, self.sram, self._mx, self._state_change,
                                 self._mq_add, self._trace_on)

    # ------------------------------------------------------------------ views
    @property
    def stores(self) -> np.ndarray | None:
        """The store log (see the class docstring), or None without one."""
        if self._slog is None:
            return None
        log = self._slog[:min(self._slog_n, self._slog.size)]
        return log[np.lexsort((log["tile"], log["cycle"]))]

    @property
    def stores_needed(self) -> int:
        """Stores retired since the last start (see the class docstring)."""
        return int(self._slog_n)

    @property
    def cycle(self) -> int:
        """Cycles simulated since the last start (the C of §7 once a run ended)."""
        return self._sch.cycle

    @property
    def regs(self) -> np.ndarray:
        """Register files, uint32 [N, T, 32] (the live array; x0 is always 0)."""
        return self._ctx.regs

    @property
    def pc(self) -> np.ndarray:
        """Next pc of every context, uint32 [N, T] (live array)."""
        return self._ctx.pc

    @property
    def state(self) -> np.ndarray:
        """Final-state view of every context (§7), uint8 [N, T] of ContextState values:
        the visible state with every already-decided change applied."""
        return self._ctx.final_state()

    @property
    def xprog(self) -> np.ndarray:
        """The per-tile xprog CSR, uint32 [N] (live array)."""
        return self._tl.xprog

    @property
    def faults(self) -> list:
        """Per-tile fault record (tessera.spec.result.Fault) or None."""
        return list(self._tl.faults)

    @property
    def counters(self) -> dict:
        """§8 counters for cycles 0..C-1: name → uint64 [N] (names COUNTER_NAMES)."""
        acc = self._tl.acc.copy()
        acc[self._tl.category, self._ar] += self._sch.cycle - self._tl.since
        out = {name: acc[i].astype(np.uint64) for i, name in enumerate(COUNTER_NAMES[:4])}
        out["retired"] = self._ctx.retired.sum(axis=1, dtype=np.uint64)
        out["macs"] = self._tl.macs.copy()
        out["engine"] = self._mx.busy_cycles(self._sch.cycle)
        return out

    @property
    def retired(self) -> np.ndarray:
        """Instructions retired per context, uint64 [N, T]."""
        return self._ctx.retired

    # ------------------------------------------------------------------ run loop
    def run(self, max_cycles: int) -> RunResult:
        """Run from the current state until halted, fault, or cycle count ``max_cycles``.

        Parameters
        ----------
        max_cycles : int
            Total cycle limit since :meth:`start` (not an increment). A run that reaches it
            ends with ``status = timeout`` and can be continued by another call.

        Returns
        -------
        tessera.spec.result.RunResult
            ``backend = "model"``. Calling again after a halt or fault returns the same result
            (also for a run cut by ``max_cycles`` with a fault recorded, §7 "Timeout").

        Raises
        ------
        ValueError
            If ``max_cycles`` is not a non-negative int.
        """
        if not isinstance(max_cycles, (int, np.integer)) or isinstance(max_cycles, bool) \
                or max_cycles < 0:
            raise ValueError(f"run: max_cycles must be a non-negative int, not {max_cycles!r}")
        if self._sch.status in (RunStatus.HALTED, RunStatus.FAULT):
            return self._result()
        if self.engine == "fast" and self._fast_can_run():
            from .fast.run import run_fast
            self.last_engine = "fast"
            run_fast(self, max_cycles)
            self._check_fast_engine_words()
            return self._finish()
        if self._slog is not None:
            raise RuntimeError("golden_model: the store log (Array(stores=...)) needs the fast "
                               "engine, and this run needs the vectorized one")
        self.last_engine = "vector"
        T = self.t
        mx = self._mx
        x = self._x
        mq = self._mq
        sch = self._sch
        isa = self._isa
        k = sch.cycle
        # one iteration per cycle k < C: visible changes and decisions, the exchange step,
        # the M-stage mrun/mwait decisions, the issue (its fetch sees writes of cycles < k),
        # the engine steps, then the M-stage stores and loads (SRAM writes of cycle k)
        while k < max_cycles and k < sch.stop_at:
            if k >= sch.next_event:
                self._events(k)
            if x.next_cycle == k:
                self._exchange(k)
            work = mq.pop(k)
            if work is not None:
                self._engine_decisions(k, work)
            c = k % T
            if sch.running_ctx[c]:
                self._issue(k, c)
            if self._pc_fix:
                self._apply_pc_fix(k)
            if mx.nbusy:
                self._engine_cycle(k)
            if work is not None:
                isa.memory_effects(work)
            if self._mx_faults:
                self._engine_faults(k)
            k += 1
            if not sch.running_ctx.any() and not mx.nbusy and not mq:  # jump ahead
                nxt = min(sch.next_event, x.next_cycle, max_cycles, sch.stop_at)
                if nxt > k:
                    k = int(nxt)
        sch.cycle = k
        self._flush_m()
        self._apply_pc_fix(None)
        return self._finish()

    def _engine_decisions(self, m: int, work: list) -> None:
        recs = self._isa.engine_decisions(m, work)
        if recs and self.trace is not None:
            self.trace.extend(recs)

    def _flush_m(self) -> None:
        """Apply the M-stage work still in flight at the end of a run (instructions issued in
        the last four cycles take effect, §7 "Final state"); the engines do not step."""
        for m, work in self._mq.drain():
            self._engine_decisions(m, work)
            self._isa.memory_effects(work)

    def _mq_add(self, k: int, item) -> None:
        """Queue the M-stage ``item`` of an instruction issued at k for k + 4 (§4)."""
        self._mq.add(k + _M_DELAY, item)

    def _stop_from(self, v: int) -> None:
        """The stop condition holds from cycle v: the run ends after v + D − 1 (§7 "Stop")."""
        if v + self._d < self._sch.stop_at:
            self._sch.stop_at = v + self._d

    def _record_fault(self, tile: int, fault: Fault, vis: int) -> None:
        """Record ``fault`` of ``tile``, visible from ``vis``; a tile keeps the record visible
        first (§7), the earlier-recorded one on a tie (an instruction's before an engine
        step's, §12)."""
        tl = self._tl
        if vis < tl.fault_vis[tile]:
            tl.faults[tile] = fault
            tl.fault_vis[tile] = vis
        self._stop_from(vis)

    def _fast_can_run(self) -> bool:
        """The fast engine gives the contract's result for this run (see the module doc)."""
        if not self._has_engine or _fast_has_matrix_engine():
            return True
        if self._mx.nbusy:
            return False
        w32 = self.sram.w32
        step = max(1, (1 << 22) // w32.shape[1])          # about 16 MiB of SRAM per scan
        return not any(_engine_words(w32[i:i + step]).any() for i in range(0, self.n, step))

    def _check_fast_engine_words(self) -> None:
        if not self._has_engine or _fast_has_matrix_engine():
            return
        for t, f in enumerate(self._tl.faults):
            if f is not None and f.cause == FaultCause.ILLEGAL_INSTRUCTION \
                    and _engine_words(np.array([f.addr], dtype=_U32))[0]:
                raise RuntimeError(
                    f"golden_model: the fast engine met an mrun/mwait word ({f.addr:#010x}) at "
                    f"tile {t} pc {f.pc:#x} that was not in the SRAM when the run started; it "
                    f"does not implement the matrix engine yet: run with engine='vector'")

    def _finish(self) -> RunResult:
        # §7: a stopped run is `fault` if a fault is recorded, else `halted`; a run cut by
        # max_cycles (no stop, or t_s >= max_cycles) is `fault` if a fault is recorded, else
        # `timeout`
        sch = self._sch
        if any(f is not None for f in self._tl.faults):
            sch.status = RunStatus.FAULT
        elif sch.cycle >= sch.stop_at:
            sch.status = RunStatus.HALTED
        else:
            sch.status = RunStatus.TIMEOUT
        if self.trace is not None:      # mrun/mwait records are made in M: retire order
            self.trace.sort(key=lambda r: (r["cycle"], r["tile"]))
        return self._result()

    def _update_next_event(self) -> None:
        self._sch.next_event = min(self._sch.next_pend, int(self._tl.xphase_end.min()),
                                   self._bar.release)

    def _events(self, k: int) -> None:
        """State changes visible at k, barrier decisions at k, counter categories from k."""
        ctx, tl, bar, sch = self._ctx, self._tl, self._bar, self._sch
        if sch.next_pend == k:
            m = ctx.pend_cycle == k
            ap = m & ((ctx.state != FAULT) | (ctx.pend_state == FAULT))     # FAULT is final
            ctx.state[ap] = ctx.pend_state[ap]
            ctx.pend_cycle[m] = _NEVER
            sch.next_pend = int(ctx.pend_cycle.min())
        m = tl.xphase_end == k
        if m.any():
            tl.xphase[m] = False
            tl.xphase_end[m] = _NEVER
        if bar.release == k:                  # ARRAY release: every tile's exchange phase
            bar.release = _NEVER
            bar.armed = False
            tl.xphase[:] = True
            no_prog = self._x.start(k, tl.xprog)
            self._end_exchange(k, no_prog)
        vis = ctx.state
        if not bar.armed:
            rel = sync.tile_release(vis)
            if rel.any():
                self._schedule(k + 1, (vis == WAIT_TILE) & rel[:, None], RUNNING)
            arr = sync.arrived(vis, tl.xphase)
            if arr.all() and (vis == WAIT_ARRAY).any():
                bar.armed = True
                bar.release = k + self._d                 # r = k* + D (§5)
        cat = sync.categories(vis, tl.xphase)
        ch = np.nonzero(cat != tl.category)[0]
        if len(ch):
            tl.acc[tl.category[ch], ch] += k - tl.since[ch]
            tl.since[ch] = k
            tl.category[ch] = cat[ch]
        sch.running_ctx = (vis == RUNNING).any(axis=0)
        self._update_next_event()

    def _schedule(self, cycle: int, mask: np.ndarray, state: int) -> None:
        ctx = self._ctx
        pend_fault = (ctx.pend_state == FAULT) & (ctx.pend_cycle != _NEVER)
        if state != FAULT:                  # a context that is (or becomes) FAULT stays so
            mask = mask & (ctx.state != FAULT) & ~pend_fault
        else:                               # FAULT from the earliest cycle scheduled (an
            mask = mask & ~(pend_fault & (ctx.pend_cycle <= cycle))  # engine data fault at
            #                                 k + 2, then c_e's instruction of k + 1 faulting)
        self._ctx.pend_cycle[mask] = cycle
        self._ctx.pend_state[mask] = state
        if cycle < self._sch.next_pend:
            self._sch.next_pend = cycle
            if cycle < self._sch.next_event:
                self._sch.next_event = cycle

    def _end_exchange(self, e: int, tiles: np.ndarray) -> None:
        """END of ``tiles``' exchange at cycle e: resume their WAIT_ARRAY contexts at e+1."""
        if len(tiles) == 0:
            return
        self._tl.xphase_end[tiles] = e + 1
        m = np.zeros((self.n, self.t), dtype=bool)
        m[tiles] = self._ctx.state[tiles] == WAIT_ARRAY
        self._schedule(e + 1, m, RUNNING)
        self._update_next_event()

    def _exchange(self, k: int) -> None:
        ended, faults, events = self._x.step(k)
        for tile, pc, addr in faults:       # visible from k + 1 (§7 "Stop")
            self._record_fault(tile, Fault(None, FaultCause.EXCHANGE_FAULT, pc, addr),
                               k + STEP_FAULT_VISIBLE_DELAY)
        if self._trace_on:
            self.xtrace.extend(events)
        self._end_exchange(k, ended)

    # ------------------------------------------------------------------ matrix engines
    def _engine_cycle(self, k: int) -> None:
        """Step every busy, not frozen engine for which k is an engine cycle (§12 "Engine
        cycles"): not in the tile's exchange phase, and the word issued at k − 4 (in M at k)
        is no LOAD/STORE."""
        mx = self._mx
        cand = mx.busy & ~mx.frozen & (mx.accept < k) & ~self._tl.xphase
        ls = self._lsu.at(k - _M_DELAY)
        if ls is not None:
            cand &= ~ls
        tiles = np.nonzero(cand)[0]
        if len(tiles):
            self._mx_faults += mx.step_tiles(tiles, k, self._port)

    def _engine_faults(self, k: int) -> None:
        """Record the engine faults of cycle k, visible from v = k + 1 (checks 1 and 4) or
        k + 2 (checks 2 and 3, ``ENGINE_DATA_FAULT_VISIBLE_DELAY``; §7 "Stop", §12 "Engine
        faults"): context c_e enters FAULT from v with final pc = pc_e, unless an instruction
        fault of the same tile is visible from v too (the engine fault is then dropped; the
        instruction that can be visible from k + 2 was issued at k − 3, so it is recorded
        already). Either way the engine is frozen (:meth:`MatrixEngines.step_tiles`). After a
        data fault c_e may still issue at k + 1 (its slot; that instruction takes effect), so
        its pc becomes pc_e only after that issue (:meth:`_apply_pc_fix`)."""
        mx = self._mx
        tl = self._tl
        for t, addr, delay in self._mx_faults:
            vis = k + delay
            if tl.insn_fault_vis[t, vis % FAULT_RING] == vis:
                continue
            ce, pce = int(mx.issuer[t]), int(mx.issuer_pc[t])
            self._record_fault(t, Fault(ce, FaultCause.ENGINE_FAULT, pce, addr & _M32), vis)
            if vis == k + 1:
                self._ctx.pc[t, ce] = pce   # "its final pc is pc_e" (§12), also if c_e was FAULT
            else:
                self._pc_fix.append((vis - 1, t, ce, pce))
            m = np.zeros((self.n, self.t), dtype=bool)
            m[t, ce] = True
            self._schedule(vis, m, FAULT)
        self._mx_faults = []

    def _apply_pc_fix(self, k: int | None) -> None:
        """Set c_e's pc to pc_e for the data faults whose cycle k + 1 has issued (``k`` None:
        all, at the end of a run)."""
        keep = []
        for fix in self._pc_fix:
            if k is None or fix[0] <= k:
                _, t, ce, pce = fix
                self._ctx.pc[t, ce] = pce
            else:
                keep.append(fix)
        self._pc_fix = keep

    # ------------------------------------------------------------------ issue
    def _issue(self, k: int, c: int) -> None:
        """The issue slot of context c at cycle k (§4): fetch (its faults; the SRAM as after
        the writes of cycles < k), the LOAD/STORE record of §12, decode, dispatch per op."""
        run = self._ctx.state[:, c] == RUNNING
        tiles = self._ar if run.all() else np.nonzero(run)[0]
        pcs = self._ctx.pc[tiles, c]
        bad = (pcs & _U32(3)) != 0
        bad_range = pcs >= self.nbytes
        if bad.any() or bad_range.any():
            mis = bad
            self._isa.fault(k, c, tiles[mis], FaultCause.MISALIGNED_FETCH, pcs[mis], pcs[mis])
            oor = bad_range & ~bad
            self._isa.fault(k, c, tiles[oor], FaultCause.ACCESS_FAULT_FETCH, pcs[oor], pcs[oor])
            keep = ~(bad | bad_range)
            tiles, pcs = tiles[keep], pcs[keep]
            if len(tiles) == 0:
                return
        # the fetch at k sees the SRAM writes of cycles < k: stores issued <= k-5 (§4)
        words = self.sram.w32[tiles, pcs >> 2]
        if self._has_engine:             # §12: a LOAD/STORE in M at k+4 takes the SRAM ports
            self._lsu.record(k, tiles, (words & _LS_MASK) == _LS_MATCH)
        if self._trace_on:
            self._isa.tr = {}
        eng = self._has_engine
        w0 = int(words[0])
        if (words == w0).all():
            d = decode(w0, eng)
            self._dispatch(d.op, k, c, tiles, pcs, d.rd, d.rs1, d.rs2, d.imm, words)
        else:
            uniq, inv = np.unique(words, return_inverse=True)
            decs = [decode(int(w), eng) for w in uniq]
            ops_u = np.array([d.op for d in decs], dtype=np.int64)
            f_u = np.array([(d.rd, d.rs1, d.rs2, d.imm) for d in decs], dtype=np.int64)
            ops = ops_u[inv]
            for op in np.unique(ops_u):
                sel = np.nonzero(ops == op)[0]
                fi = f_u[inv[sel]]
                self._dispatch(Op(int(op)), k, c, tiles[sel], pcs[sel], fi[:, 0], fi[:, 1],
                               fi[:, 2], fi[:, 3].astype(_U32), words[sel])
        if self._trace_on:
            tr = self._isa.tr
            for tile in sorted(tr):
                self.trace.append(tr[tile])
            self._isa.tr = None

    def _dispatch(self, op, k, c, tiles, pcs, rd, rs1, rs2, imm, words) -> None:
        """Issue of ``op`` on ``tiles`` (context c, cycle k): the division turns (§4), the
        operation's effects (:meth:`IsaSemantics.execute`) and the retire count (§8)."""
        ctx = self._ctx
        if ctx.div_any[c] and op not in _DIVS:  # a non-division issue sets n to 0 (§4)
            ctx.div_turn[tiles, c] = 0
            ctx.div_any[c] = bool(ctx.div_turn[:, c].any())
        if op in _DIVS:
            ok = self._division_turn(op, k, c, tiles, pcs, rd, rs1, rs2, imm, words)
        else:
            ok = self._isa.execute(op, k, c, tiles, pcs, rd, rs1, rs2, imm, words)
            if ok is False:
                return
        rt = tiles if ok is None else tiles[ok]
        ctx.retired[rt, c] += 1
        if self._trace_on:
            self._isa.trace_retire(k, c, rt, tiles, pcs, words, ok)

    def _division_turn(self, op, k, c, tiles, pcs, rd, rs1, rs2, imm, words):
        """One turn of a division (§4, "Division"); returns the mask of ``tiles`` whose
        division is in its last turn (they execute and retire)."""
        ctx = self._ctx
        n = ctx.div_turn[tiles, c]
        j = np.where((ctx.div_word[tiles, c] == words) & (n > 0), n, 0)
        last = j == DIV_TURNS - 1
        busy = ~last
        if busy.any():
            tb = tiles[busy]
            ctx.div_word[tb, c] = words[busy]
            ctx.div_turn[tb, c] = j[busy] + 1
            ctx.div_any[c] = True
        if last.any():
            t = tiles[last]
            ctx.div_turn[t, c] = 0
            sel = (lambda f: f[last] if np.ndim(f) else f)
            done = self._isa.execute(op, k, c, t, pcs[last], sel(rd), sel(rs1), sel(rs2),
                                     sel(imm), words[last])
            if done is not None:     # a stack_overflow fault: no retire
                last = last.copy()
                last[np.nonzero(last)[0][~done]] = False
        return last

    # ------------------------------------------------------------------ what the semantics ask
    def _state_change(self, k: int, c: int, tiles: np.ndarray, state: int,
                      faults: list | None = None) -> None:
        """Context c of ``tiles`` enters ``state``, visible from k + 5 (§4 "State changes"):
        HALTED counts the contexts out of the run (all HALTED: the stop condition, §7); FAULT
        records ``faults`` (one per tile) as visible from k + 5."""
        vis = k + STATE_VISIBLE_DELAY
        m = np.zeros((self.n, self.t), dtype=bool)
        m[tiles, c] = True
        self._schedule(vis, m, state)
        if state == HALTED:
            self._sch.live -= len(tiles)
            if self._sch.live == 0:         # every context HALTED from k + 5 (§7 "Stop")
                self._stop_from(vis)
        elif state == FAULT:
            for t, f in zip(np.asarray(tiles).tolist(), faults):
                self._tl.insn_fault_vis[t, vis % FAULT_RING] = vis
                self._record_fault(t, f, vis)

    # ------------------------------------------------------------------ result
    def not_arrived(self) -> list[int]:
        """Tiles not arrived at the ARRAY barrier in the final state (§7,
        :func:`tessera.spec.result.not_arrived`)."""
        return result_not_arrived(self.state)

    def _result(self) -> RunResult:
        state = self.state
        counters = self.counters
        regs = self._ctx.regs.tolist()
        pcs = self._ctx.pc.tolist()
        retired = self._ctx.retired.tolist()
        tiles = []
        for i in range(self.n):
            ctxs = []
            for c in range(self.t):
                st = ContextState(int(state[i, c]))
                ctxs.append(ContextResult(
                    context=c, state=st, pc=pcs[i][c],
                    exit_code=int(self._ctx.exit_code[i, c]) if st == ContextState.HALTED else None,
                    retired=retired[i][c], regs=regs[i][c]))
            tiles.append(TileResult(tile=i, counters={k: int(v[i]) for k, v in counters.items()},
                                    fault=self._tl.faults[i], contexts=ctxs))
        status = self._sch.status
        return RunResult(config=self.config, status=status, cycles=self._sch.cycle, tiles=tiles,
                         not_arrived=self.not_arrived() if status == RunStatus.TIMEOUT else [],
                         backend="model")


class _EnginePort:
    """The SRAM as seen by a matrix-engine step of cycle k (§12 "Memory order"): the model
    applies every data-memory effect in its own cycle, so reads and writes go straight to the
    SRAM (a read sees all writes of cycles < k; an engine write of cycle k is seen by fetches,
    loads and sends of cycles > k)."""

    def __init__(self, sram: Sram):
        self.sram = sram

    def read8(self, t: int, addr: int) -> np.ndarray:
        """The 8 bytes at ``addr`` (8-byte aligned), uint8 [8] (a copy)."""
        return self.sram.w8[t, addr:addr + 8].copy()

    def write(self, t: int, addr: int, data: bytes) -> None:
        """Write ``data`` at ``addr`` (inside one aligned 8-byte word, or two consecutive aligned
        words from ``addr``, §12 "Engine cycles") in cycle k."""
        self.sram.w8[t, addr:addr + len(data)] = np.frombuffer(data, dtype=np.uint8)
