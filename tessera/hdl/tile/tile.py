"""One Tessera tile: SRAM + exchange engine + core (docs/rtl.md "Tile ↔ array").

The SRAM is one :class:`amaranth.lib.memory.Memory` of ``sram_bytes / 8`` 64-bit words with
synchronous read ports only (BRAM friendly) and one write port with byte granularity:

* port A (transparent to the write port): core fetch, or the exchange engine's step words
  (an exchange step is two words, so the 64-bit width gives a whole step per read);
* port B (not transparent): core load, exchange send, or host read;
* write port: exchange receive, core store, or host write (never two in the same cycle:
  a tile in its exchange phase has no running context, and the host only writes while stopped).

Port A is transparent so that a fetch or step read issued in cycle c sees a write of cycle c
(architecturally: a store issued at t is seen by the fetch of an instruction issued at t + 2,
memory effects in issue order). Port B is not transparent so that a send at cycle c reads the
SRAM as after the writes of cycles < c (architecture §6) even when a receive writes the same
word at c.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Mux, Cat
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from .exchange_engine import ExchangeEngine

__all__ = ["Tile", "StubCore", "core_ports", "TRACE_FIELDS"]


def TRACE_FIELDS(config: ArrayConfig):
    """Name and width of each retire-trace field of a core, in port order."""
    return [("trace_valid", 1), ("trace_context", config.context_bits), ("trace_pc", 32),
            ("trace_insn", 32), ("trace_rd", 5), ("trace_value", 32), ("trace_st_mask", 4),
            ("trace_st_addr", 32), ("trace_st_data", 32)]


def core_ports(config: ArrayConfig) -> dict:
    """The core's port signature as used by the tile (docs/rtl.md "Core ↔ tile").

    Returns
    -------
    dict
        ``name -> In(width) / Out(width)`` from the core's point of view.
    """
    cb = config.context_bits
    d = {
        "start": In(1), "entry": In(32), "run": In(1), "kill": In(1), "cycle": In(64),
        "count_commit": In(1),
        "f_en": Out(1), "f_addr": Out(32), "f_data": In(32),
        "m_re": Out(1), "m_we": Out(4), "m_addr": Out(32), "m_wdata": Out(32), "m_rdata": In(32),
        "arrive": Out(1), "resume": In(1), "in_exchange": In(1), "xprog": Out(32),
        "fault_valid": Out(1), "fault_context": Out(cb), "fault_cause": Out(5),
        "fault_pc": Out(32), "fault_addr": Out(32), "all_halted": Out(1), "halting": Out(1),
        "dbg_ctx": In(cb), "dbg_reg": In(5), "dbg_state": Out(3), "dbg_pc": Out(32),
        "dbg_retired": Out(64), "dbg_x": Out(32),
        "dbg_compute": Out(64), "dbg_sync": Out(64), "dbg_exchange": Out(64),
        "dbg_halted": Out(64), "dbg_retired_tile": Out(64), "dbg_macs": Out(64),
    }
    for name, w in TRACE_FIELDS(config):
        d[name] = Out(w)
    return d


class StubCore(wiring.Component):
    """A core with the real ports that drives nothing (outputs stay 0 unless a testbench sets
    them). Used by the unit tests and by ``tessera gen --stub-core`` before the core lands.

    Parameters
    ----------
    config : ArrayConfig
    tile_id : int
    """

    def __init__(self, config: ArrayConfig, tile_id: int):
        self.config = config
        self.tile_id = tile_id
        super().__init__(core_ports(config))

    def elaborate(self, platform):
        return Module()


def _default_core(config, tile_id):
    from .core import Core
    return Core(config, tile_id)


class Tile(wiring.Component):
    """A tile: SRAM, exchange engine and core.

    Parameters
    ----------
    config : ArrayConfig
        Array configuration (SRAM size, N, T).
    tile_id : int
        Index 0..N-1.
    core_factory : callable, optional
        ``core_factory(config, tile_id)`` returns the core component (default
        :class:`tessera.hdl.tile.core.Core`; tests pass :class:`StubCore`).

    Members
    -------
    start, entry, run, kill, cycle, count_commit : In
        Forwarded to the core (docs/rtl.md).
    xen : In(1)
        Exchange steps may take effect this cycle (array running, no stop this cycle).
    xcommit : In(1)
        The exchange step of the previous cycle belongs to the run (no core fault issued two
        cycles ago and no run-ending ``ecall`` seen in this cycle): its receive write and
        fault record are committed in this cycle.
    prerelease, release : In(1)
        From the sync controller (cycles r − 1 and r).
    x_data : In(32)
        The fabric's word for this tile's receive (bus of ``x_src`` at k − L).
    arrive, waiting, all_halted, halting, in_exchange : Out(1)
        Barrier state (``arrive`` masked by the exchange phase; ``waiting``: arrived and some
        context in WAIT_ARRAY); ``halting``: every context HALTED or halting by an ecall in X.
    x_send, x_src : Out(32), Out(tile_bits)
        Send bus of the previous cycle; receive mux select.
    core_fault, xfault : Out(1)
        Core fault in X this cycle; exchange fault in this cycle's step.
    rec_valid, rec_xchg, rec_context, rec_cause, rec_pc, rec_addr : Out
        The tile's fault record (``rec_xchg``: exchange fault, context is null).
    h_re, h_we, h_addr, h_wdata, h_rdata : host SRAM port
        Read (data next cycle) or byte-masked write of the word at byte address ``h_addr``.
    dbg_* : the core's debug ports, forwarded; trace_* : the core's retire trace.

    Raises
    ------
    TypeError, ValueError
        Bad ``config`` or ``tile_id``.
    """

    def __init__(self, config: ArrayConfig, tile_id: int, core_factory=None):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"Tile needs an ArrayConfig, not {config!r}")
        if not isinstance(tile_id, int) or not 0 <= tile_id < config.tiles:
            raise ValueError(f"Tile tile_id must be in 0..{config.tiles - 1}, not {tile_id!r}")
        self.config = config
        self.tile_id = tile_id
        self.core = (core_factory or _default_core)(config, tile_id)
        self.engine = ExchangeEngine(config, tile_id)
        #: The SRAM: 64-bit words, byte address b is bits 8*(b % 8) .. of word b // 8.
        self.sram = Memory(shape=64, depth=config.sram_bytes // 8, init=[])
        cb, ab = config.context_bits, config.sram_addr_bits
        ports = {
            "start": In(1), "entry": In(32), "run": In(1), "kill": In(1), "cycle": In(64),
            "count_commit": In(1), "xen": In(1), "xcommit": In(1),
            "prerelease": In(1), "release": In(1),
            "x_data": In(32),
            "arrive": Out(1), "waiting": Out(1), "all_halted": Out(1), "halting": Out(1),
            "in_exchange": Out(1),
            "x_send": Out(32), "x_src": Out(config.tile_bits),
            "core_fault": Out(1), "xfault": Out(1),
            "rec_valid": Out(1), "rec_xchg": Out(1), "rec_context": Out(cb),
            "rec_cause": Out(5), "rec_pc": Out(32), "rec_addr": Out(32), "xprog": Out(32),
            "h_re": In(1), "h_we": In(4), "h_addr": In(ab), "h_wdata": In(32),
            "h_rdata": Out(32),
        }
        for name, sig in core_ports(config).items():
            if name.startswith("dbg_"):
                ports[name] = sig
            elif name.startswith("trace_"):
                ports[name] = sig
        super().__init__(ports)

    def elaborate(self, platform):
        from tessera.spec.faults import FaultCause
        m = Module()
        cfg = self.config
        ab = cfg.sram_addr_bits
        core, eng = self.core, self.engine
        m.submodules.core = core
        m.submodules.engine = eng
        m.submodules.sram = mem = self.sram
        wp = mem.write_port(granularity=8)
        pa = mem.read_port(transparent_for=(wp,))
        pb = mem.read_port()

        # -- core control inputs
        for name in ("start", "entry", "run", "kill", "cycle", "count_commit"):
            m.d.comb += getattr(core, name).eq(getattr(self, name))
        m.d.comb += [core.resume.eq(eng.resume), core.in_exchange.eq(eng.in_exchange)]
        for name, _ in core_ports(cfg).items():
            if name.startswith("dbg_") or name.startswith("trace_"):
                if name in ("dbg_ctx", "dbg_reg"):
                    m.d.comb += getattr(core, name).eq(getattr(self, name))
                else:
                    m.d.comb += getattr(self, name).eq(getattr(core, name))

        # -- exchange engine
        m.d.comb += [
            eng.prerelease.eq(self.prerelease), eng.release.eq(self.release),
            eng.xprog.eq(core.xprog), eng.enable.eq(self.xen), eng.clear.eq(self.start),
            self.in_exchange.eq(eng.in_exchange), self.xprog.eq(core.xprog),
            self.x_src.eq(eng.src),
            self.arrive.eq(core.arrive & ~eng.in_exchange),
            self.waiting.eq(core.arrive & ~eng.in_exchange & ~core.all_halted),
            self.all_halted.eq(core.all_halted), self.halting.eq(core.halting),
            self.core_fault.eq(core.fault_valid),
            self.xfault.eq(eng.fault_valid),
        ]

        # -- deferred receive write: the word received by the step of cycle k is written in
        # k+1 if that step belongs to the run (`xcommit`), since a core fault issued at k-1 is
        # only seen at k+1. Reads of cycle k+1 that must see it are forwarded below.
        pw_valid = Signal()
        pw_addr = Signal(ab - 2)
        pw_data = Signal(32)
        with m.If(self.start):
            m.d.sync += pw_valid.eq(0)
        with m.Else():
            m.d.sync += [pw_valid.eq(eng.recv), pw_addr.eq(eng.recv_addr),
                         pw_data.eq(self.x_data)]

        # -- port A: exchange step words, else core fetch (transparent: sees this cycle's write)
        fa_lane = Signal()
        pa_addr_q = Signal(ab - 3)
        pa_data = Signal(64)
        m.d.comb += pa.en.eq(1)
        with m.If(eng.pa_en):
            m.d.comb += pa.addr.eq(eng.pa_addr)
        with m.Else():
            m.d.comb += pa.addr.eq(core.f_addr[3:ab])
        m.d.sync += [fa_lane.eq(core.f_addr[2]), pa_addr_q.eq(pa.addr)]
        # a step read in cycle k-1 must see the receive of k-1, written only now (k): patch it
        m.d.comb += pa_data.eq(pa.data)
        with m.If(pw_valid & (pw_addr[1:] == pa_addr_q)):
            with m.If(pw_addr[0]):
                m.d.comb += pa_data[32:].eq(pw_data)
            with m.Else():
                m.d.comb += pa_data[:32].eq(pw_data)
        m.d.comb += [core.f_data.eq(Mux(fa_lane, pa_data[32:], pa_data[:32])),
                     eng.pa_data.eq(pa_data)]

        # -- port B: send, else load, else host read
        b_lane = Signal()
        send_q = Signal()
        m.d.comb += pb.en.eq(1)
        with m.If(eng.pb_en):
            m.d.comb += pb.addr.eq(eng.pb_addr[1:])
            m.d.sync += b_lane.eq(eng.pb_addr[0])
        with m.Elif(core.m_re):
            m.d.comb += pb.addr.eq(core.m_addr[3:ab])
            m.d.sync += b_lane.eq(core.m_addr[2])
        with m.Else():
            m.d.comb += pb.addr.eq(self.h_addr[3:ab])
            m.d.sync += b_lane.eq(self.h_addr[2])
        with m.If(self.start):
            m.d.sync += send_q.eq(0)
        with m.Else():
            m.d.sync += send_q.eq(eng.send)
        # a send in cycle k must see the receive of k-1, written only in k: forward it
        fwd_q = Signal()
        fwd_data = Signal(32)
        m.d.sync += [fwd_q.eq(eng.pb_en & pw_valid & (pw_addr == eng.pb_addr)),
                     fwd_data.eq(pw_data)]
        b_word = Signal(32)
        m.d.comb += b_word.eq(Mux(fwd_q, fwd_data, Mux(b_lane, pb.data[32:], pb.data[:32])))
        m.d.comb += [core.m_rdata.eq(b_word), self.h_rdata.eq(b_word),
                     self.x_send.eq(Mux(send_q, b_word, 0))]

        # -- write port: receive, else store, else host
        def write(word_lane, addr_dword, data, mask4):
            m.d.comb += [wp.addr.eq(addr_dword), wp.data.eq(Cat(data, data)),
                         wp.en.eq(Mux(word_lane, mask4 << 4, mask4))]

        with m.If(pw_valid & self.xcommit):
            write(pw_addr[0], pw_addr[1:], pw_data, 0xF)
        with m.Elif(core.m_we != 0):
            write(core.m_addr[2], core.m_addr[3:ab], core.m_wdata, core.m_we)
        with m.Elif(self.h_we != 0):
            write(self.h_addr[2], self.h_addr[3:ab], self.h_wdata, self.h_we)

        # -- fault record. Core faults are final when seen (all earlier faults were seen
        # earlier); an exchange fault at c is final in c+1 unless the run ended before c
        # (a core fault issued at c-1, or the last ecall at c-1, seen at c+1: `xcommit` low).
        xf_q = Signal()
        xf_pc = Signal(32)
        xf_addr = Signal(32)
        rec = [self.rec_valid, self.rec_xchg, self.rec_context, self.rec_cause, self.rec_pc,
               self.rec_addr]
        with m.If(self.start):
            m.d.sync += [s.eq(0) for s in rec] + [xf_q.eq(0)]
        with m.Else():
            m.d.sync += [xf_q.eq(eng.fault_valid), xf_pc.eq(eng.fault_pc),
                         xf_addr.eq(eng.fault_addr)]
            with m.If(~self.rec_valid):
                with m.If(core.fault_valid):
                    m.d.sync += [self.rec_valid.eq(1), self.rec_xchg.eq(0),
                                 self.rec_context.eq(core.fault_context),
                                 self.rec_cause.eq(core.fault_cause),
                                 self.rec_pc.eq(core.fault_pc), self.rec_addr.eq(core.fault_addr)]
                with m.Elif(xf_q & self.xcommit):
                    m.d.sync += [self.rec_valid.eq(1), self.rec_xchg.eq(1),
                                 self.rec_context.eq(0),
                                 self.rec_cause.eq(FaultCause.EXCHANGE_FAULT),
                                 self.rec_pc.eq(xf_pc), self.rec_addr.eq(xf_addr)]
        return m
