"""One Tessera tile: core, SRAM, exchange engine and fault record (docs/rtl.md "Tile ↔ array").

Wiring (every link is a signature of :mod:`tessera.hdl.interfaces`):

* core ``fetch`` / ``mem`` → SRAM ``fetch`` / ``data`` (:mod:`.sram`: port A, port B and the
  write port, shared with the exchange engine's ``sram`` and the host's ``host.sram``);
* exchange engine: started by the sync controller's ``prerelease`` / ``release``, runs the
  program at the core's ``xprog``, resumes the core's WAIT_ARRAY contexts at its END step;
  the SRAM drives the tile's ``exchange.send``, the engine its ``exchange.src``;
* core ``fault`` / ``efault`` and engine ``fault`` → :class:`.fault_record.FaultRecord` →
  ``host.fault`` (the tile's one fault record; its fields a cycle after it is visible);
* ``host.dbg`` → core ``dbg``; core ``trace`` → tile ``trace``;
* with ``engine_macs`` > 0 the matrix engine (:mod:`.matrix_engine`): core ``eng`` → engine
  ``core`` (``mrun`` accept, busy, counters; the engine fault goes through the core's
  ``efault``), engine ``sram`` → SRAM ``eng``; it steps in the cycles where the array runs
  (``xen``) and the tile is not exchanging (the core's LOAD/STORE in M is the engine's own
  check).

Contract v2 (architecture §4, §7): every output the array reduces over the tiles is a function
of this tile's **visible** states, held in registers: ``arrive``, ``waiting``, ``all_halted``
from the context states (a state change of an instruction issued at t is visible from
t + ``STATE_VISIBLE_DELAY`` = t+5), ``faulted`` from the fault record (visible from t+5 for an
instruction, c+1 / s+1 for an exchange / engine step, s+2 for an engine data-check fault, which
the core presents with ``fault_now`` from the engine's register in s+2). The
array registers them once more on the way out (the first register of D). ``run`` is high exactly in the run's cycles 0..C-1
(C - 1 = t_s): the tile stops issuing, releasing and counting from the first cycle it is low,
and completes the instructions issued up to t_s.

The tile is arrived (``arrive``) when its core is, except during its exchange phase.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from tessera.spec.config import ArrayConfig

from ..interfaces import ExchangeLinkSignature, HostTileSignature, TraceSignature
from ..variant import CONTRACT, Variant
from .core import Core
from .exchange_engine import ExchangeEngine
from .fault_record import FaultRecord
from .matrix_engine import MatrixEngine
from .sram import TileSram

__all__ = ["Tile"]


class Tile(wiring.Component):
    """A tile: core, SRAM, exchange engine, fault record.

    Parameters
    ----------
    config : ArrayConfig
        Array configuration (SRAM size, N, T).
    tile_id : int
        Index 0..N-1.
    variant : Variant, keyword-only
        The core's variant (default :data:`tessera.hdl.variant.CONTRACT`).
    core_factory : callable, keyword-only, optional
        ``core_factory(config, tile_id)`` returns a component with
        :class:`~tessera.hdl.tile.core.CoreSignature` to use instead of
        ``Core(config, tile_id, variant=variant)`` (tests pass
        :class:`~tessera.hdl.tile.core.StubCore`).

    Members
    -------
    start, entry, run, cycle : In
        Forwarded to the core (docs/rtl.md; ``run``: this cycle is one of the run's cycles
        0..C-1).
    xen : In(1)
        Exchange and matrix-engine steps may take effect this cycle (a cycle of the run).
    prerelease, release : In(1)
        From the sync controller (cycles r − 1 and r).
    arrive, waiting, all_halted, in_exchange : Out(1)
        Barrier state from the visible context states (``arrive`` masked by the exchange
        phase; ``waiting``: arrived and some context in WAIT_ARRAY); ``all_halted``: every
        context HALTED (visible).
    faulted : Out(1)
        A fault is visible on this tile (its fault record is set): from t+5 for an
        instruction issued at t, from c+1 / s+1 for an exchange / matrix-engine step, from
        s + 2 for a matrix-engine data-check fault of step s (§7 "Stop"): ``fault.valid |
        core.fault_now``. Every fault but that one is taken by the record at the end of
        the cycle it is decided in (visible from the next; its fields follow a cycle later); the data check is decided in
        s + 1 from the word read in s, registered in the engine, presented by the core with
        ``fault_now`` in s + 2 and taken by the record at the end of s + 2, so nothing of
        the SRAM word reaches ``faulted`` combinationally.
    exchange : Out(ExchangeLinkSignature(config))
        Send bus of the previous cycle, receive mux select, the fabric's word.
    host : In(HostTileSignature(config))
        The host port's access: SRAM window, debug read-back, fault record, xprog.
    trace : Out(TraceSignature(config))
        The core's retire trace.

    Attributes
    ----------
    core, engine, sram, fault
        The tile's parts (``sram.banks`` is the storage, ``sram.word(i)`` its word i).
    matrix : MatrixEngine or None
        The matrix engine (None when ``engine_macs`` = 0).

    Raises
    ------
    TypeError, ValueError
        Bad ``config``, ``tile_id`` or ``variant``.
    """

    def __init__(self, config: ArrayConfig, tile_id: int, *, variant: Variant = CONTRACT,
                 core_factory=None):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"Tile needs an ArrayConfig, not {config!r}")
        if not isinstance(tile_id, int) or not 0 <= tile_id < config.tiles:
            raise ValueError(f"Tile tile_id must be in 0..{config.tiles - 1}, not {tile_id!r}")
        if not isinstance(variant, Variant):
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise TypeError(f"Tile variant must be a Variant, not {variant!r}")
        self.config = config
        self.tile_id = tile_id
        self.variant = variant
        self.core = (core_factory(config, tile_id) if core_factory is not None
                     else Core(config, tile_id, variant=variant))
        self.engine = ExchangeEngine(config, tile_id)
        self.sram = TileSram(config)
        self.fault = FaultRecord(config)
        self.matrix = MatrixEngine(config) if config.engine_macs else None
        super().__init__({
            "start": In(1), "entry": In(32), "run": In(1), "cycle": In(64), "xen": In(1),
            "prerelease": In(1), "release": In(1),
            "arrive": Out(1), "waiting": Out(1), "all_halted": Out(1),
            "in_exchange": Out(1), "faulted": Out(1),
            "exchange": Out(ExchangeLinkSignature(config)),
            "host": In(HostTileSignature(config)),
            "trace": Out(TraceSignature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        core, eng, sram, rec = self.core, self.engine, self.sram, self.fault
        m.submodules.core = core
        m.submodules.engine = eng
        m.submodules.sram = sram
        m.submodules.fault = rec

        # -- core: run control from the array, barrier resume from the engine
        for name in ("start", "entry", "run", "cycle"):
            m.d.comb += getattr(core, name).eq(getattr(self, name))
        m.d.comb += [core.resume.eq(eng.resume), core.in_exchange.eq(eng.in_exchange)]

        # -- memories: the core's fetch and data access, the engine's, the host's
        connect(m, core.fetch, sram.fetch)
        connect(m, core.mem, sram.data)
        connect(m, eng.sram, sram.xchg)
        # The SRAM's port-B word leaves the tile only through a register: the host's read
        # data (the host port waits a cycle more, docs/rtl.md "Host port") and the send bus
        # (the fabric's delay line starts after it: a word read at c is on exchange.send at
        # c + 2, architecture §6's L >= 2 unchanged).
        hs = self.host.sram
        m.d.comb += [sram.host.addr.eq(hs.addr), sram.host.re.eq(hs.re),
                     sram.host.we.eq(hs.we), sram.host.wdata.eq(hs.wdata)]
        m.d.sync += [hs.rdata.eq(sram.host.rdata),
                     self.exchange.send.eq(Mux(self.start, 0, sram.x_send))]
        m.d.comb += [sram.clear.eq(self.start), sram.x_data.eq(self.exchange.data),
                     self.exchange.src.eq(eng.src)]

        # -- exchange engine
        m.d.comb += [
            eng.prerelease.eq(self.prerelease), eng.release.eq(self.release),
            eng.xprog.eq(core.xprog), eng.enable.eq(self.xen), eng.clear.eq(self.start),
            eng.arrived.eq(core.arrive),
            self.in_exchange.eq(eng.in_exchange),
            self.arrive.eq(core.arrive & ~eng.in_exchange),
            self.waiting.eq(core.arrive & ~eng.in_exchange & ~core.all_halted),
            self.all_halted.eq(core.all_halted),
        ]

        # -- the one fault record, host read-back, retire trace
        connect(m, core.fault, rec.insn)
        connect(m, core.efault, rec.eng)
        connect(m, eng.fault, rec.xchg)
        connect(m, rec.record, flipped(self.host.fault))
        m.d.comb += [rec.clear.eq(self.start), self.host.xprog.eq(core.xprog)]
        # the core's registered engine fault is visible in the cycle it is presented (the
        # record holds it from the next one)
        m.d.comb += [rec.eng_now.eq(core.fault_now),
                     self.faulted.eq(rec.valid | core.fault_now)]
        # -- matrix engine
        if self.matrix is not None:
            m.submodules.matrix = mx = self.matrix
            connect(m, core.eng, mx.core)
            connect(m, mx.sram, sram.eng)
            # v2: every step of a cycle <= t_s takes effect (no commit condition)
            m.d.comb += [mx.clear.eq(self.start), mx.run.eq(self.xen & ~eng.in_exchange)]

        # Debug read-back: the selects go straight to the core, the values that pass through
        # its multiplexers and the register file's debug port come back through a register.
        hd = self.host.dbg
        m.d.comb += [core.dbg.ctx.eq(hd.ctx), core.dbg.reg.eq(hd.reg)]
        m.d.sync += [hd.state.eq(core.dbg.state), hd.pc.eq(core.dbg.pc),
                     hd.retired.eq(core.dbg.retired), hd.x.eq(core.dbg.x)]
        for name in hd.counters.signature.members:   # registers already: no register here
            m.d.comb += getattr(hd.counters, name).eq(getattr(core.dbg.counters, name))
        connect(m, core.trace, flipped(self.trace))
        return m
