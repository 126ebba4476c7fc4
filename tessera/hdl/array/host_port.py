"""AXI4-Lite host port of ``tessera_array`` (architecture §9, map in :mod:`tessera.spec.hostmap`).

One transaction at a time (reads have priority over writes when both are pending):

* read: AR accepted → one cycle to drive the tile's SRAM port B / debug selects → one cycle for
  the synchronous data → response registered, ``rvalid`` until ``rready``;
* write: AW and W accepted together → performed in one cycle → ``bvalid`` until ``bready``.

Responses: DECERR for unmapped addresses (outside the control block, beyond the last tile, an
SRAM offset ≥ sram_bytes, an undefined register offset, a context ≥ T); SLVERR (and no effect)
for an SRAM access while the array is RUNNING, a write to a read-only register, or a write of
1 to CONTROL while RUNNING. Register writes ignore ``wstrb``; SRAM writes honour it. The low two
address bits are ignored. Tile registers can be read at any time (their values are only final
once the run has ended).

The host port owns one :class:`~tessera.hdl.interfaces.HostTileSignature` port per tile
(``tiles[i]``: SRAM window, debug read-back, fault record, xprog); the array connects each to
its tile's ``host``. Only the selected tile gets the read / write strobes.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Mux, Array, Cat, Const
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.hostmap import (MAGIC, Ctrl, Status, TileReg, ContextReg,
                                  TILE_REG_BASE, TILE_REG_STRIDE, SRAM_BASE, SRAM_STRIDE)

from ..interfaces import AXI4LiteSignature, AxiResp, HostTileSignature

#: Address bits inside one tile register block.
_TREG_BITS = TILE_REG_STRIDE.bit_length() - 1
assert TILE_REG_STRIDE == 1 << _TREG_BITS

__all__ = ["HostPort"]

OKAY, SLVERR, DECERR = AxiResp.OKAY, AxiResp.SLVERR, AxiResp.DECERR

_RO_CTRL = (Ctrl.MAGIC, Ctrl.TILES, Ctrl.CONTEXTS, Ctrl.SRAM_BYTES, Ctrl.XLATENCY, Ctrl.STATUS,
            Ctrl.CYCLES_LO, Ctrl.CYCLES_HI, Ctrl.FAULT_TILES)


class HostPort(wiring.Component):
    """AXI4-Lite slave implementing the host map.

    Parameters
    ----------
    config : ArrayConfig

    Members
    -------
    s_axil : In(AXI4LiteSignature())
        The AXI4-Lite slave.
    tiles : Out(HostTileSignature(config)).array(N)
        Per-tile access: SRAM window, debug read-back (counters, contexts), fault record
        (FAULT_* registers; FAULT_TILES counts the valid records), xprog.
    status : In(Status)
        The run status (STATUS register).
    cycles : In(64)
        CYCLES register value.
    start : Out(1)
        Pulse: CONTROL written with bit 0 set while not RUNNING.
    entry, max_cycles : Out(32), Out(64)
        The ENTRY and MAX_CYCLES registers.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise TypeError(f"HostPort needs an ArrayConfig, not {config!r}")
        self.config = config
        super().__init__({
            "s_axil": In(AXI4LiteSignature()),
            "tiles": Out(HostTileSignature(config)).array(config.tiles),
            "status": In(Status), "cycles": In(64),
            "start": Out(1), "entry": Out(32), "max_cycles": Out(64),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        n, T = cfg.tiles, cfg.contexts
        ab = cfg.sram_addr_bits
        axi = self.s_axil
        running = self.status == Status.RUNNING

        addr = Signal(32)
        wdata = Signal(32)
        wstrb = Signal(4)
        rdata = Signal(32)
        resp = Signal(AxiResp)
        rvalid = Signal()
        bvalid = Signal()
        m.d.comb += [axi.rdata.eq(rdata), axi.rresp.eq(resp), axi.bresp.eq(resp),
                     axi.rvalid.eq(rvalid), axi.bvalid.eq(bvalid)]

        # -- decode of the latched address
        is_ctrl = addr < TILE_REG_BASE
        toff = Signal(32)
        m.d.comb += toff.eq(addr - TILE_REG_BASE)
        is_treg = (addr >= TILE_REG_BASE) & (toff < n * TILE_REG_STRIDE)
        soff = Signal(32)
        m.d.comb += soff.eq(addr - SRAM_BASE)
        is_sram = (addr >= SRAM_BASE) & (soff < n * SRAM_STRIDE) & (soff[:20] < cfg.sram_bytes)
        tsel = Signal(range(max(2, n)))
        with m.If(is_sram):
            m.d.comb += tsel.eq(soff[20:])
        with m.Else():
            m.d.comb += tsel.eq(toff[_TREG_BITS:])
        reg = Signal(_TREG_BITS)
        m.d.comb += reg.eq(Cat(Const(0, 2), addr[2:_TREG_BITS]))
        ctx_off = Signal(_TREG_BITS)
        m.d.comb += ctx_off.eq(reg - TileReg.CONTEXT_BASE)
        is_ctx = (reg >= TileReg.CONTEXT_BASE) & (ctx_off[8:] < T)
        creg = ctx_off[:8]
        ctx_ok = is_ctx & ((creg <= ContextReg.RETIRED_HI) | (creg >= ContextReg.REGS))
        tile_ok = ctx_ok | (reg <= TileReg.ENGINE_HI) | (
            (reg >= TileReg.FAULT_VALID) & (reg <= TileReg.XPROG))
        ctrl_ok = is_ctrl & (addr[2:20] <= (Ctrl.FAULT_TILES >> 2))   # low two bits ignored

        # shared tile-side bus (only the selected tile gets the strobes)
        for t in self.tiles:
            m.d.comb += [t.sram.addr.eq(Cat(Const(0, 2), soff[2:ab])), t.sram.wdata.eq(wdata),
                         t.dbg.ctx.eq(ctx_off[8:8 + cfg.context_bits]),
                         t.dbg.reg.eq(creg[2:7])]

        # -- per-tile read value
        def tile_word(i, t):
            w = Signal(32, name=f"tword{i}")
            c = t.dbg.counters
            ctr = {TileReg.COMPUTE_LO: c.compute, TileReg.SYNC_LO: c.sync,
                   TileReg.EXCHANGE_LO: c.exchange, TileReg.RETIRED_LO: c.retired,
                   TileReg.MACS_LO: c.macs, TileReg.HALTED_LO: c.halted,
                   TileReg.ENGINE_LO: c.engine}
            with m.If(ctx_ok):
                with m.Switch(creg):
                    with m.Case(ContextReg.STATE):
                        m.d.comb += w.eq(t.dbg.state)
                    with m.Case(ContextReg.PC):
                        m.d.comb += w.eq(t.dbg.pc)
                    with m.Case(ContextReg.RETIRED_LO):
                        m.d.comb += w.eq(t.dbg.retired[:32])
                    with m.Case(ContextReg.RETIRED_HI):
                        m.d.comb += w.eq(t.dbg.retired[32:])
                    with m.Default():
                        m.d.comb += w.eq(t.dbg.x)
            with m.Else():
                with m.Switch(reg):
                    for lo, sig in ctr.items():
                        with m.Case(int(lo)):
                            m.d.comb += w.eq(sig[:32])
                        with m.Case(int(lo) + 4):
                            m.d.comb += w.eq(sig[32:])
                    with m.Case(TileReg.FAULT_VALID):
                        m.d.comb += w.eq(t.fault.valid)
                    with m.Case(TileReg.FAULT_CONTEXT):
                        m.d.comb += w.eq(Mux(t.fault.valid & t.fault.xchg, 0xFFFFFFFF,
                                             t.fault.context))
                    with m.Case(TileReg.FAULT_CAUSE):
                        m.d.comb += w.eq(t.fault.cause)
                    with m.Case(TileReg.FAULT_PC):
                        m.d.comb += w.eq(t.fault.pc)
                    with m.Case(TileReg.FAULT_ADDR):
                        m.d.comb += w.eq(t.fault.addr)
                    with m.Case(TileReg.XPROG):
                        m.d.comb += w.eq(t.xprog)
            return w

        treg_words = Array(tile_word(i, t) for i, t in enumerate(self.tiles))
        sram_words = Array(t.sram.rdata for t in self.tiles)
        fault_tiles = Signal(32)
        m.d.comb += fault_tiles.eq(sum(t.fault.valid for t in self.tiles))
        ctrl_word = Signal(32)
        regs = {Ctrl.MAGIC: MAGIC, Ctrl.TILES: n, Ctrl.CONTEXTS: T,
                Ctrl.SRAM_BYTES: cfg.sram_bytes, Ctrl.XLATENCY: cfg.exchange_latency,
                Ctrl.STATUS: self.status, Ctrl.ENTRY: self.entry,
                Ctrl.MAX_CYCLES_LO: self.max_cycles[:32], Ctrl.MAX_CYCLES_HI: self.max_cycles[32:],
                Ctrl.CYCLES_LO: self.cycles[:32], Ctrl.CYCLES_HI: self.cycles[32:],
                Ctrl.FAULT_TILES: fault_tiles, Ctrl.CONTROL: 0}
        with m.Switch(Cat(Const(0, 2), addr[2:20])):
            for a, v in regs.items():
                with m.Case(int(a)):
                    m.d.comb += ctrl_word.eq(v)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(axi.arvalid):
                    m.d.comb += axi.arready.eq(1)
                    m.d.sync += addr.eq(axi.araddr)
                    m.next = "RD_SEL"
                with m.Elif(axi.awvalid & axi.wvalid):
                    m.d.comb += [axi.awready.eq(1), axi.wready.eq(1)]
                    m.d.sync += [addr.eq(axi.awaddr), wdata.eq(axi.wdata),
                                 wstrb.eq(axi.wstrb)]
                    m.next = "WR"
            with m.State("RD_SEL"):
                # selects are stable now (a context's register x: the core's register file
                # answers two cycles later, its debug read sharing a pipeline port, and the
                # tile registers it: in RD_DATA)
                m.next = "RD_WAIT"
            with m.State("RD_WAIT"):
                # SRAM read issued; the tile registers its SRAM word, so it is on the tile's
                # output two cycles later, in RD_DATA
                with m.If(is_sram & ~running):
                    for i, t in enumerate(self.tiles):
                        m.d.comb += t.sram.re.eq(tsel == i)
                m.next = "RD_WAIT2"
            with m.State("RD_WAIT2"):
                m.next = "RD_DATA"
            with m.State("RD_DATA"):
                m.d.sync += rvalid.eq(1)
                with m.If(ctrl_ok):
                    m.d.sync += [rdata.eq(ctrl_word), resp.eq(OKAY)]
                with m.Elif(is_treg & ctx_ok & (creg != ContextReg.STATE) & running):
                    # a context's pc, retired and registers are read only while stopped (the
                    # core shares their read-out with its pipeline): like an SRAM read
                    m.d.sync += [rdata.eq(0), resp.eq(SLVERR)]
                with m.Elif(is_treg & tile_ok):
                    m.d.sync += [rdata.eq(treg_words[tsel]), resp.eq(OKAY)]
                with m.Elif(is_sram & ~running):
                    m.d.sync += [rdata.eq(sram_words[tsel]), resp.eq(OKAY)]
                with m.Elif(is_sram):
                    m.d.sync += [rdata.eq(0), resp.eq(SLVERR)]
                with m.Else():
                    m.d.sync += [rdata.eq(0), resp.eq(DECERR)]
                m.next = "RD_RESP"
            with m.State("RD_RESP"):
                with m.If(axi.rready):
                    m.d.sync += rvalid.eq(0)
                    m.next = "IDLE"
            with m.State("WR"):
                m.d.sync += bvalid.eq(1)
                reg20 = Cat(Const(0, 2), addr[2:20])
                with m.If(ctrl_ok):
                    m.d.sync += resp.eq(OKAY)
                    with m.Switch(reg20):
                        with m.Case(Ctrl.CONTROL):
                            with m.If(running):
                                m.d.sync += resp.eq(SLVERR)
                            with m.Elif(wdata[0]):
                                m.d.comb += self.start.eq(1)
                        with m.Case(Ctrl.ENTRY):
                            m.d.sync += self.entry.eq(wdata)
                        with m.Case(Ctrl.MAX_CYCLES_LO):
                            m.d.sync += self.max_cycles[:32].eq(wdata)
                        with m.Case(Ctrl.MAX_CYCLES_HI):
                            m.d.sync += self.max_cycles[32:].eq(wdata)
                        with m.Default():
                            m.d.sync += resp.eq(SLVERR)     # read-only register
                with m.Elif(is_treg & tile_ok):
                    m.d.sync += resp.eq(SLVERR)             # tile registers are read-only
                with m.Elif(is_sram & ~running):
                    m.d.sync += resp.eq(OKAY)
                    for i, t in enumerate(self.tiles):
                        m.d.comb += t.sram.we.eq(Mux(tsel == i, wstrb, 0))
                with m.Elif(is_sram):
                    m.d.sync += resp.eq(SLVERR)
                with m.Else():
                    m.d.sync += resp.eq(DECERR)
                m.next = "WR_RESP"
            with m.State("WR_RESP"):
                with m.If(axi.bready):
                    m.d.sync += bvalid.eq(0)
                    m.next = "IDLE"
        return m
