"""A tiny stand-in for ``tessera_array`` used to test the tb infrastructure itself.

It has the real top-level port names (``clk``, ``rst``, ``s_axil_*``, ``done``) and a small
subset of the host map (``tessera/spec/hostmap.py``): the read-only geometry registers, CONTROL,
STATUS, ENTRY, MAX_CYCLES, CYCLES, one tile's SRAM window, DECERR for unmapped addresses
and SLVERR for SRAM writes while running. It executes nothing: after a start it counts
cycles until MAX_CYCLES and then reports TIMEOUT. Tile register blocks read as 0.

This is *not* a model of Tessera; it only lets the runner / host driver / result plumbing be
tested before (and independently of) the real array.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from tessera.hdl.interfaces import AXI4LiteSignature
from tessera.spec.config import ArrayConfig
from tessera.spec.hostmap import (MAGIC, Ctrl, Status, SRAM_BASE, SRAM_STRIDE, TILE_REG_BASE,
                             TILE_REG_STRIDE)

__all__ = ["MockArray"]

OKAY, SLVERR, DECERR = 0, 2, 3


class MockArray(wiring.Component):
    """Host-port-only mock of ``tessera_array`` (one tile's SRAM, no cores)."""

    def __init__(self, config: ArrayConfig):
        self.config = config
        super().__init__({
            "s_axil": In(AXI4LiteSignature()),
            "done": Out(1),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        words = cfg.sram_words
        m.submodules.sram = sram = Memory(shape=32, depth=words, init=[])
        wp = sram.write_port(granularity=8)
        rp = sram.read_port()

        status = Signal(3, init=Status.IDLE)
        entry = Signal(32)
        max_cycles = Signal(64)
        cycles = Signal(64)
        running = status == Status.RUNNING
        m.d.comb += self.done.eq((status == Status.HALTED) | (status == Status.FAULT)
                                 | (status == Status.TIMEOUT))
        with m.If(running):
            with m.If((max_cycles != 0) & (cycles + 1 >= max_cycles)):
                m.d.sync += status.eq(Status.TIMEOUT)
            m.d.sync += cycles.eq(cycles + 1)

        def in_sram(addr):
            return (addr >= SRAM_BASE) & (addr < SRAM_BASE + cfg.sram_bytes)

        # -- write channel: accept AW and W together, one outstanding response
        aw, w = self.s_axil.awaddr, self.s_axil.wdata
        bvalid = Signal()
        bresp = Signal(2)
        m.d.comb += [self.s_axil.bvalid.eq(bvalid), self.s_axil.bresp.eq(bresp)]
        accept_w = self.s_axil.awvalid & self.s_axil.wvalid & ~bvalid
        m.d.comb += [self.s_axil.awready.eq(accept_w), self.s_axil.wready.eq(accept_w)]
        with m.If(bvalid & self.s_axil.bready):
            m.d.sync += bvalid.eq(0)
        with m.If(accept_w):
            m.d.sync += [bvalid.eq(1), bresp.eq(OKAY)]
            with m.If(in_sram(aw)):
                with m.If(running):
                    m.d.sync += bresp.eq(SLVERR)
                with m.Else():
                    m.d.comb += [wp.addr.eq((aw - SRAM_BASE) >> 2), wp.data.eq(w),
                                 wp.en.eq(self.s_axil.wstrb)]
            with m.Elif(aw == Ctrl.CONTROL):
                with m.If(running):
                    m.d.sync += bresp.eq(SLVERR)
                with m.Elif(w[0]):
                    m.d.sync += [status.eq(Status.RUNNING), cycles.eq(0)]
            with m.Elif(aw == Ctrl.ENTRY):
                m.d.sync += entry.eq(w)
            with m.Elif(aw == Ctrl.MAX_CYCLES_LO):
                m.d.sync += max_cycles[:32].eq(w)
            with m.Elif(aw == Ctrl.MAX_CYCLES_HI):
                m.d.sync += max_cycles[32:].eq(w)
            with m.Elif((aw < 0x34) | ((aw >= TILE_REG_BASE)
                                       & (aw < TILE_REG_BASE + cfg.tiles * TILE_REG_STRIDE))):
                m.d.sync += bresp.eq(SLVERR)   # read-only register
            with m.Else():
                m.d.sync += bresp.eq(DECERR)

        # -- read channel: one outstanding read, data the cycle after AR
        ar = Signal(32)
        rvalid = Signal()
        m.d.comb += self.s_axil.rvalid.eq(rvalid)
        accept_r = self.s_axil.arvalid & ~rvalid
        m.d.comb += self.s_axil.arready.eq(accept_r)
        with m.If(rvalid & self.s_axil.rready):
            m.d.sync += rvalid.eq(0)
        with m.If(accept_r):
            m.d.sync += [rvalid.eq(1), ar.eq(self.s_axil.araddr)]
            m.d.comb += [rp.addr.eq((self.s_axil.araddr - SRAM_BASE) >> 2), rp.en.eq(1)]
        with m.Else():
            m.d.comb += rp.en.eq(0)
        regs = {Ctrl.MAGIC: MAGIC, Ctrl.TILES: cfg.tiles, Ctrl.CONTEXTS: cfg.contexts,
                Ctrl.SRAM_BYTES: cfg.sram_bytes, Ctrl.XLATENCY: cfg.exchange_latency,
                Ctrl.STATUS: status, Ctrl.ENTRY: entry, Ctrl.MAX_CYCLES_LO: max_cycles[:32],
                Ctrl.MAX_CYCLES_HI: max_cycles[32:], Ctrl.CYCLES_LO: cycles[:32],
                Ctrl.CYCLES_HI: cycles[32:], Ctrl.FAULT_TILES: 0, Ctrl.CONTROL: 0}
        with m.If(in_sram(ar)):
            with m.If(running):
                m.d.comb += self.s_axil.rresp.eq(SLVERR)
            with m.Else():
                m.d.comb += self.s_axil.rdata.eq(rp.data)
        with m.Elif((ar >= TILE_REG_BASE) & (ar < TILE_REG_BASE + cfg.tiles * TILE_REG_STRIDE)):
            m.d.comb += self.s_axil.rdata.eq(0)
        with m.Else():
            with m.Switch(ar):
                for a, v in regs.items():
                    with m.Case(int(a)):
                        m.d.comb += self.s_axil.rdata.eq(v)
                with m.Default():
                    m.d.comb += self.s_axil.rresp.eq(DECERR)
        return m
