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
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Mux, Array, Cat, Const
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.hostmap import (MAGIC, Ctrl, Status, TileReg, ContextReg, CONTEXT_STRIDE,
                             TILE_REG_BASE, TILE_REG_STRIDE, SRAM_BASE, SRAM_STRIDE)

#: Address bits inside one tile register block.
_TREG_BITS = TILE_REG_STRIDE.bit_length() - 1
assert TILE_REG_STRIDE == 1 << _TREG_BITS

__all__ = ["HostPort", "AXIL_PORTS", "OKAY", "SLVERR", "DECERR"]

OKAY, SLVERR, DECERR = 0, 2, 3

#: AXI4-Lite slave port names (without the ``s_axil_`` prefix) and directions/widths.
AXIL_PORTS = {
    "awaddr": In(32), "awprot": In(3), "awvalid": In(1), "awready": Out(1),
    "wdata": In(32), "wstrb": In(4), "wvalid": In(1), "wready": Out(1),
    "bresp": Out(2), "bvalid": Out(1), "bready": In(1),
    "araddr": In(32), "arprot": In(3), "arvalid": In(1), "arready": Out(1),
    "rdata": Out(32), "rresp": Out(2), "rvalid": Out(1), "rready": In(1),
}

_RO_CTRL = (Ctrl.MAGIC, Ctrl.TILES, Ctrl.CONTEXTS, Ctrl.SRAM_BYTES, Ctrl.XLATENCY, Ctrl.STATUS,
            Ctrl.CYCLES_LO, Ctrl.CYCLES_HI, Ctrl.FAULT_TILES)


class HostPort(wiring.Component):
    """AXI4-Lite slave implementing the host map.

    Parameters
    ----------
    config : ArrayConfig
    tiles : list of tessera.hdl.tile.Tile
        The array's tiles; the host port drives their ``h_*`` and ``dbg_ctx``/``dbg_reg``
        inputs and reads their record, counter and debug outputs.

    Members
    -------
    s_axil_* : AXI4-Lite slave (see :data:`AXIL_PORTS`).
    status : In(3)
        A :class:`tessera.spec.hostmap.Status` value.
    cycles : In(64)
        CYCLES register value.
    fault_tiles : In(32)
        FAULT_TILES register value.
    start : Out(1)
        Pulse: CONTROL written with bit 0 set while not RUNNING.
    entry, max_cycles : Out(32), Out(64)
        The ENTRY and MAX_CYCLES registers.

    Raises
    ------
    ValueError
        If ``tiles`` does not hold ``config.tiles`` tiles.
    """

    def __init__(self, config: ArrayConfig, tiles):
        if len(tiles) != config.tiles:
            raise ValueError(f"HostPort needs {config.tiles} tiles, got {len(tiles)}")
        self.config = config
        self.tiles = list(tiles)
        ports = {f"s_axil_{k}": v for k, v in AXIL_PORTS.items()}
        ports.update({"status": In(3), "cycles": In(64), "fault_tiles": In(32),
                      "start": Out(1), "entry": Out(32), "max_cycles": Out(64)})
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        n, T = cfg.tiles, cfg.contexts
        ab = cfg.sram_addr_bits
        running = self.status == Status.RUNNING

        addr = Signal(32)
        wdata = Signal(32)
        wstrb = Signal(4)
        rdata = Signal(32)
        resp = Signal(2)
        rvalid = Signal()
        bvalid = Signal()
        m.d.comb += [self.s_axil_rdata.eq(rdata), self.s_axil_rresp.eq(resp),
                     self.s_axil_bresp.eq(resp), self.s_axil_rvalid.eq(rvalid),
                     self.s_axil_bvalid.eq(bvalid)]

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
        tile_ok = ctx_ok | (reg <= TileReg.HALTED_HI) | (
            (reg >= TileReg.FAULT_VALID) & (reg <= TileReg.XPROG))
        ctrl_ok = is_ctrl & (addr[:20] <= Ctrl.FAULT_TILES)

        # shared tile-side bus (only the selected tile gets the strobes)
        for i, t in enumerate(self.tiles):
            m.d.comb += [t.h_addr.eq(Cat(Const(0, 2), soff[2:ab])), t.h_wdata.eq(wdata),
                         t.dbg_ctx.eq(ctx_off[8:8 + cfg.context_bits]),
                         t.dbg_reg.eq(creg[2:7])]

        # -- per-tile read value
        def tile_word(t):
            w = Signal(32, name=f"tword{t.tile_id}")
            ctr = {TileReg.COMPUTE_LO: t.dbg_compute, TileReg.SYNC_LO: t.dbg_sync,
                   TileReg.EXCHANGE_LO: t.dbg_exchange, TileReg.RETIRED_LO: t.dbg_retired_tile,
                   TileReg.MACS_LO: t.dbg_macs, TileReg.HALTED_LO: t.dbg_halted}
            with m.If(ctx_ok):
                with m.Switch(creg):
                    with m.Case(ContextReg.STATE):
                        m.d.comb += w.eq(t.dbg_state)
                    with m.Case(ContextReg.PC):
                        m.d.comb += w.eq(t.dbg_pc)
                    with m.Case(ContextReg.RETIRED_LO):
                        m.d.comb += w.eq(t.dbg_retired[:32])
                    with m.Case(ContextReg.RETIRED_HI):
                        m.d.comb += w.eq(t.dbg_retired[32:])
                    with m.Default():
                        m.d.comb += w.eq(t.dbg_x)
            with m.Else():
                with m.Switch(reg):
                    for lo, sig in ctr.items():
                        with m.Case(int(lo)):
                            m.d.comb += w.eq(sig[:32])
                        with m.Case(int(lo) + 4):
                            m.d.comb += w.eq(sig[32:])
                    with m.Case(TileReg.FAULT_VALID):
                        m.d.comb += w.eq(t.rec_valid)
                    with m.Case(TileReg.FAULT_CONTEXT):
                        m.d.comb += w.eq(Mux(t.rec_valid & t.rec_xchg, 0xFFFFFFFF,
                                             t.rec_context))
                    with m.Case(TileReg.FAULT_CAUSE):
                        m.d.comb += w.eq(t.rec_cause)
                    with m.Case(TileReg.FAULT_PC):
                        m.d.comb += w.eq(t.rec_pc)
                    with m.Case(TileReg.FAULT_ADDR):
                        m.d.comb += w.eq(t.rec_addr)
                    with m.Case(TileReg.XPROG):
                        m.d.comb += w.eq(t.xprog)
            return w

        treg_words = Array(tile_word(t) for t in self.tiles)
        sram_words = Array(t.h_rdata for t in self.tiles)
        ctrl_word = Signal(32)
        regs = {Ctrl.MAGIC: MAGIC, Ctrl.TILES: n, Ctrl.CONTEXTS: T,
                Ctrl.SRAM_BYTES: cfg.sram_bytes, Ctrl.XLATENCY: cfg.exchange_latency,
                Ctrl.STATUS: self.status, Ctrl.ENTRY: self.entry,
                Ctrl.MAX_CYCLES_LO: self.max_cycles[:32], Ctrl.MAX_CYCLES_HI: self.max_cycles[32:],
                Ctrl.CYCLES_LO: self.cycles[:32], Ctrl.CYCLES_HI: self.cycles[32:],
                Ctrl.FAULT_TILES: self.fault_tiles, Ctrl.CONTROL: 0}
        with m.Switch(Cat(Const(0, 2), addr[2:20])):
            for a, v in regs.items():
                with m.Case(int(a)):
                    m.d.comb += ctrl_word.eq(v)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.s_axil_arvalid):
                    m.d.comb += self.s_axil_arready.eq(1)
                    m.d.sync += addr.eq(self.s_axil_araddr)
                    m.next = "RD_SEL"
                with m.Elif(self.s_axil_awvalid & self.s_axil_wvalid):
                    m.d.comb += [self.s_axil_awready.eq(1), self.s_axil_wready.eq(1)]
                    m.d.sync += [addr.eq(self.s_axil_awaddr), wdata.eq(self.s_axil_wdata),
                                 wstrb.eq(self.s_axil_wstrb)]
                    m.next = "WR"
            with m.State("RD_SEL"):
                # selects are stable now; SRAM read issued, debug outputs settle next cycle
                with m.If(is_sram & ~running):
                    for i, t in enumerate(self.tiles):
                        m.d.comb += t.h_re.eq(tsel == i)
                m.next = "RD_DATA"
            with m.State("RD_DATA"):
                m.d.sync += rvalid.eq(1)
                with m.If(ctrl_ok):
                    m.d.sync += [rdata.eq(ctrl_word), resp.eq(OKAY)]
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
                with m.If(self.s_axil_rready):
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
                        m.d.comb += t.h_we.eq(Mux(tsel == i, wstrb, 0))
                with m.Elif(is_sram):
                    m.d.sync += resp.eq(SLVERR)
                with m.Else():
                    m.d.sync += resp.eq(DECERR)
                m.next = "WR_RESP"
            with m.State("WR_RESP"):
                with m.If(self.s_axil_bready):
                    m.d.sync += bvalid.eq(0)
                    m.next = "IDLE"
        return m
