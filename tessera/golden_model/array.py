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

Effects are applied at issue time. That is exact because (§4) data memory effects of a tile
happen in issue order, a context's register/pc effects are only observed at its next slot
(≥ t+4), and a tile never runs instructions while its exchange program runs. The one
exception is instruction fetch: the fetch at t must not see a store issued at t-1 (it writes
the SRAM at t+1), so the word each tile overwrote in the previous cycle is remembered and
substituted when that address is fetched. State changes (ecall,
sync, fault) become *visible* at t+3: they are kept as per-context pending changes and applied
at the start of cycle t+3, together with barrier decisions (§5) and counter bookkeeping (§8),
which are event driven. Cycles in which no context can issue are skipped in bulk (unless a
matrix engine is busy).

Matrix engines (§12, :mod:`tessera.golden_model.engine`): the engine cycle k of every busy tile
is stepped in loop iteration k, after the exchange of cycle k and before the issue of cycle k.
Instructions take effect at issue, i.e. two cycles before their X cycle; the only ones that
are applied too early relative to the engine step of cycle k are those issued at k − 1 (X at
k + 1; one issued at k − 2 is in X at k, which is then not an engine cycle if it is a load or a
store). So the engine's SRAM port undoes that instruction's store for the engine's reads,
keeps the store's bytes over the engine's write, and re-reads that instruction's load when the
engine writes its bytes. An engine fault of cycle k is recorded after the issue of cycle k, so
that an instruction fault of the same tile and cycle wins (§12).

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
from tessera.spec.timing import STATE_VISIBLE_DELAY
from tessera.spec.result import not_arrived as result_not_arrived
from tessera.spec.result import (COUNTER_NAMES, ContextResult, ContextState, Fault, RunResult,
                            RunStatus, TileResult)

from . import sync
from .contexts import NEVER as _NEVER
from .contexts import Contexts
from .decode import ROW_OF, Op, decode
from .engine import MatrixEngines
from .exchange import ExchangeEngine
from .memorder import LoadRecord, PortSlots, StoreRecord
from .memory import Sram
from .schedule import Schedule
from .semantics import IsaSemantics
from .tiles import Tiles

__all__ = ["Array", "ENGINES", "FAST_HAS_MATRIX_ENGINE"]

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

#: The engines of :class:`Array` (``engine=``).
ENGINES = ("fast", "vector")
_WARNED = []


def _choose_engine(engine: str | None, trace: bool) -> str:
    """Resolve ``Array(engine=...)``; see :class:`Array`."""
    import os
    explicit = engine is not None
    if engine is None:
        engine = os.environ.get("TESSERA_MODEL_ENGINE") or ("vector" if trace else "fast")
    if engine not in ENGINES:
        raise ValueError(f"Array: engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine == "fast":
        if trace:
            if explicit:
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
        warning if the fast engine cannot be built here).

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
    xtrace : list of dict or None
        Exchange STEP events (``cycle``, ``tile``, ``step_addr``, ``send`` (word or None),
        ``recv`` ((source tile, byte address, word) or None)).

    Notes
    -----
    A new Array is in the state of a host start with entry 0 (all SRAM zero). The model is
    "stopped" between :meth:`run` calls, so host SRAM access is always allowed (§9).
    """

    def __init__(self, config: ArrayConfig, trace: bool = False, engine: str | None = None):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"Array: config must be a tessera.spec.config.ArrayConfig, "
                            f"not {type(config).__name__}")
        self.config = config
        self.engine = _choose_engine(engine, bool(trace))
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
        # records (§4 fetch after store, §12 memory order) and the matrix engines (idle).
        self._ctx = Contexts.start(n, t, int(entry))
        self._tl = Tiles.start(n)
        self._sch = Schedule.start(n, t)
        self._bar = sync.Barrier()
        self._st = StoreRecord.start(n)
        self._lsu = PortSlots.start(n)
        self._ld_rec: LoadRecord | None = None
        self._x.reset()
        self.trace = [] if self._trace_on else None
        self.xtrace = [] if self._trace_on else None
        self._mx = MatrixEngines(n, self.config.engine_lanes, self.nbytes, self._tl.macs)
        # the engine faults of the current cycle and the cycle of the engine step in progress
        self._mx_faults: list[tuple[int, int]] = []
        self._mx_k = -1
        self._port = _EnginePort(self)
        self._isa = IsaSemantics(self._ctx, self._tl, self.sram, self._mx, self._state_change,
                                 self._engine_idle_at_x, self._note_loads, self._note_stores,
                                 self._trace_on)

    # ------------------------------------------------------------------ views
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
            ``backend = "model"``. Calling again after a halt or fault returns the same result.

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
        self.last_engine = "vector"
        T = self.t
        mx = self._mx
        x = self._x
        k = self._sch.cycle
        while k < max_cycles:
            if k >= self._sch.next_event:
                self._events(k)
            if x.next_cycle == k:
                self._exchange(k)
            if mx.nbusy:
                self._engine_cycle(k)
            c = k % T
            if self._sch.running_ctx[c]:
                self._issue(k, c)
            if self._mx_faults:
                self._engine_faults(k)
            k += 1
            if self._sch.stop:
                break
            if not self._sch.running_ctx.any() and not mx.nbusy:  # jump to the next event
                nxt = min(self._sch.next_event, x.next_cycle, max_cycles)
                if nxt > k:
                    k = int(nxt)
        self._sch.cycle = k
        return self._finish()

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
        if self._sch.stop:
            self._sch.status = (RunStatus.FAULT if any(f is not None for f in self._tl.faults)
                                else RunStatus.HALTED)
        else:
            self._sch.status = RunStatus.TIMEOUT
        return self._result()

    def _update_next_event(self) -> None:
        self._sch.next_event = min(self._sch.next_pend, int(self._tl.xphase_end.min()),
                                   self._bar.release)

    def _events(self, k: int) -> None:
        """State changes visible at k, barrier decisions at k, counter categories from k."""
        ctx, tl, bar, sch = self._ctx, self._tl, self._bar, self._sch
        if sch.next_pend == k:
            m = ctx.pend_cycle == k
            ctx.state[m] = ctx.pend_state[m]
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
                bar.release = k + self.config.sync_latency
        cat = sync.categories(vis, tl.xphase)
        ch = np.nonzero(cat != tl.category)[0]
        if len(ch):
            tl.acc[tl.category[ch], ch] += k - tl.since[ch]
            tl.since[ch] = k
            tl.category[ch] = cat[ch]
        sch.running_ctx = (vis == RUNNING).any(axis=0)
        self._update_next_event()

    def _schedule(self, cycle: int, mask: np.ndarray, state: int) -> None:
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
        for tile, pc, addr in faults:
            self._tl.faults[tile] = Fault(None, FaultCause.EXCHANGE_FAULT, pc, addr)
            self._sch.stop = True
        if self._trace_on:
            self.xtrace.extend(events)
        self._end_exchange(k, ended)

    # ------------------------------------------------------------------ matrix engines
    def _engine_cycle(self, k: int) -> None:
        """Step every busy engine for which k is an engine cycle (§12 "Engine cycles")."""
        mx = self._mx
        cand = mx.busy & (mx.accept < k) & ~self._tl.xphase
        if self._lsu.cycle[k & 1] == k - 2:          # the words issued at k-2 are in X at k
            cand &= ~self._lsu.ls[k & 1]
        self._mx_k = k
        tiles = np.nonzero(cand)[0]
        if len(tiles) == 0:
            return
        # tiles whose instruction issued at k-1 is a store or a load take the corrected path
        solo = np.zeros(len(tiles), dtype=bool)
        if self._st.cycle == k - 1:
            solo |= self._st.word[tiles] >= 0
        rec = self._ld_rec
        if rec is not None and rec.cycle == k - 1:
            solo |= np.isin(tiles, np.fromiter(rec.tiles, dtype=np.int64, count=len(rec.tiles)))
        self._mx_faults += mx.step_tiles(tiles, solo, k, self._port)

    def _engine_idle_at_x(self, k: int, tiles: np.ndarray) -> np.ndarray:
        """Idle at k+2, the X cycle of ``mrun``/``mwait`` issued at k on ``tiles`` (bool)."""
        if not self._mx.nbusy:
            return np.ones(len(tiles), dtype=bool)
        ls_prev = self._lsu.at(k - 1, tiles)
        return self._mx.idle_at_next_x(tiles, k, ~ls_prev)

    def _engine_faults(self, k: int) -> None:
        """Record the engine faults of cycle k, after its issue: an instruction fault of the
        same tile in the same cycle keeps its record (§12 "Engine faults")."""
        mx = self._mx
        for t, addr in self._mx_faults:
            if self._tl.faults[t] is not None:
                continue
            ce, pce = int(mx.issuer[t]), int(mx.issuer_pc[t])
            self._tl.faults[t] = Fault(ce, FaultCause.ENGINE_FAULT, pce, addr & _M32)
            self._ctx.pc[t, ce] = pce
            m = np.zeros((self.n, self.t), dtype=bool)
            m[t, ce] = True
            self._schedule(k + STATE_VISIBLE_DELAY, m, FAULT)
        self._mx_faults = []
        self._sch.stop = True

    # ------------------------------------------------------------------ issue
    def _issue(self, k: int, c: int) -> None:
        """The issue slot of context c at cycle k (§4): fetch (its faults, the word a store
        issued at k - 1 overwrote), the LOAD/STORE record of §12, decode, dispatch per op."""
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
        words = self.sram.w32[tiles, pcs >> 2]
        if self._st.cycle == k - 1:
            # a store issued at k-1 writes the SRAM at k+1: this fetch (at k) sees the old word
            hit = self._st.word[tiles] == (pcs >> 2)
            if hit.any():
                words = words.copy()
                words[hit] = self._st.old[tiles[hit]]
        if self._mx.nbusy:               # §12: a LOAD/STORE in X at k+2 takes the SRAM ports
            slot = k & 1
            self._lsu.ls[slot] = False
            self._lsu.ls[slot, tiles] = (words & _LS_MASK) == _LS_MATCH
            self._lsu.cycle[slot] = k
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
    def _state_change(self, k: int, c: int, tiles: np.ndarray, state: int) -> None:
        """Context c of ``tiles`` enters ``state``, visible at k + 3 (§4 "State changes"):
        HALTED counts the contexts out of the run, FAULT ends it (§7)."""
        m = np.zeros((self.n, self.t), dtype=bool)
        m[tiles, c] = True
        self._schedule(k + STATE_VISIBLE_DELAY, m, state)
        if state == HALTED:
            self._sch.live -= len(tiles)
            if self._sch.live == 0:
                self._sch.stop = True
        elif state == FAULT:
            self._sch.stop = True

    def _note_loads(self, k, c, tiles, rd, addrs, size, signed) -> None:
        """Record the loads issued at k while an engine is busy: an engine write at k + 1 may
        have to reach them (§12 "Memory order")."""
        if not self._mx.nbusy:
            return
        if self._ld_rec is None or self._ld_rec.cycle != k:
            self._ld_rec = LoadRecord(k, c, {})
        rec = self._ld_rec.tiles
        for tt, r, aa in zip(tiles.tolist(), np.broadcast_to(rd, tiles.shape).tolist(),
                             addrs.tolist()):
            rec[tt] = (r, aa, size, signed)

    def _note_stores(self, k, tiles, addrs, size) -> None:
        """Record the stores issued at k before they are applied: the word each overwrites (a
        fetch at k + 1 sees it, §4) and, while an engine is busy, the byte enables (§12)."""
        st = self._st
        st.begin(k)
        st.word[tiles] = addrs >> 2
        st.old[tiles] = self.sram.w32[tiles, addrs >> 2]
        if self._mx.nbusy:      # byte enables, for an engine step of cycle k+1 (§12 port)
            st.mask[tiles] = (((1 << size) - 1) << (addrs & _U32(3))).astype(np.uint8)

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
    """The SRAM as seen by a matrix-engine step of cycle ``arr._mx_k`` (§12 "Memory order").

    The instruction issued at k − 1 is in X at k + 1, after the engine step of cycle k, but
    the model has applied it already: its store is hidden from the engine's reads and kept over
    the engine's write, and its load is re-read when the engine writes bytes it reads.
    """

    def __init__(self, arr: Array):
        self.arr = arr
        self.sram = arr.sram

    def _store(self, t: int):
        a = self.arr
        if a._st.cycle == a._mx_k - 1 and a._st.word[t] >= 0:
            return int(a._st.word[t]), int(a._st.mask[t])
        return None

    def read8(self, t: int, addr: int) -> np.ndarray:
        """The 8 bytes at ``addr`` (8-byte aligned) as after all writes of cycles < k, uint8 [8]."""
        a = self.arr
        wi = addr >> 2
        words = a.sram.w32[t, wi:wi + 2].copy()
        st = self._store(t)
        if st is not None and wi <= st[0] <= wi + 1:
            words[st[0] - wi] = a._st.old[t]
        return words.view(np.uint8)

    def write(self, t: int, addr: int, data: bytes) -> None:
        """Write ``data`` at ``addr`` (inside one aligned 8-byte word) in cycle k."""
        a = self.arr
        k = a._mx_k
        buf = np.frombuffer(data, dtype=np.uint8)
        n = len(buf)
        st = self._store(t)
        if st is None or not addr >> 2 <= st[0] <= (addr + n - 1) >> 2:
            a.sram.w8[t, addr:addr + n] = buf
        else:
            sw, smask = st
            old = a._st.old[t:t + 1].view(np.uint8)     # the word the k-1 store overwrote
            for i in range(n):
                p = addr + i
                if p >> 2 == sw:
                    old[p & 3] = buf[i]                 # fetches at k see the engine's byte
                    if smask >> (p & 3) & 1:
                        continue                        # the later store's byte stays
                a.sram.w8[t, p] = buf[i]
        rec = a._ld_rec
        if rec is None or rec.cycle != k - 1 or t not in rec.tiles:
            return
        rd, la, size, signed = rec.tiles[t]
        if la + size <= addr or la >= addr + n:
            return
        raw = int.from_bytes(a.sram.w8[t, la:la + size].tobytes(), "little")
        if signed and raw >> (8 * size - 1) & 1:
            raw -= 1 << (8 * size)
        val = raw & _M32
        if rd:
            a._ctx.regs[t, rec.context, rd] = val
            if a._trace_on:
                for r in reversed(a.trace):
                    if r["cycle"] == k - 1 and r["tile"] == t:
                        r["value"] = val
                        break
