"""Formal spec of the AXI4-Lite host port (tessera/hdl/array/host_port.py) against docs/architecture.md §9,
the map in tessera/spec/hostmap.py and the AXI4-Lite handshake rules (AMBA AXI, A3.2 / B1).

Every input of the port is a free input of the proof: the AXI master, ``status`` (any run
state, changing at any time), ``cycles`` and everything a tile returns on its ``tiles[i]`` port
(SRAM read word, counters, fault record, debug values). Its outputs to the tiles (``tiles[i].sram``
strobes, address, data, debug selects) are observed. A tile writes its SRAM from the host only
when ``tiles[i].sram.we`` ≠ 0 (tessera/hdl/tile/, write port W), so "the SRAM is left
unchanged" is "no ``we`` strobe".

Environment: the AXI master rules (a VALID stays high until its READY, with the address / data
stable meanwhile); no reset.

Spec bookkeeping (independent of the port's FSM): outstanding requests per channel, the address,
data and strobes latched at each handshake, whether the array was RUNNING in every cycle of a
transaction or in none, and the strobes the port gave the tiles during it. The address map is
enumerated from tessera.hostmap (control registers, each tile's register offsets, SRAM windows
of ``sram_bytes``), not computed the way the port decodes it.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Elaboratable, Module, Signal
from amaranth.lib.wiring import In

from tessera.hdl.array.host_port import HostPort, OKAY, SLVERR, DECERR
from tessera.spec.hostmap import (Ctrl, ContextReg, Status, TileReg, CONTEXT_STRIDE, SRAM_BASE,
                             SRAM_STRIDE, TILE_REG_BASE, TILE_REG_STRIDE)

from common import Spec, all_of, any_of, no_reset, past

PROPS = {
    "axi_valid_held": "RVALID/BVALID stay high with stable RDATA/RRESP/BRESP until RREADY/BREADY",
    "axi_responses": "one response per request, none without a request, a read's within 5 "
                     "cycles of its handshake and a write's within 2; a write (and any effect "
                     "of it) needs both AW and W",
    "sram_running": "while RUNNING no SRAM strobe reaches a tile; an SRAM write (or read) during "
                    "a run is answered SLVERR (read data 0)",
    "sram_stopped": "while stopped an SRAM write is answered OKAY and strobes exactly the "
                    "addressed tile once with the written word and byte strobes; a read returns "
                    "the addressed tile's word",
    "decerr": "an unmapped address is answered DECERR, a mapped one never",
    "ctx_running": "a read of a context's PC, RETIRED or register x0..x31 during a run is "
                   "answered SLVERR (data 0), a read of its STATE never",
}


def tile_reg_offsets(contexts):
    """Byte offsets of the registers inside one tile's register block (hostmap)."""
    offs = {int(r) for r in TileReg if r != TileReg.CONTEXT_BASE}
    ctx = [int(r) for r in ContextReg if r != ContextReg.REGS] + \
          [int(ContextReg.REGS) + 4 * i for i in range(32)]
    for c in range(contexts):
        offs |= {int(TileReg.CONTEXT_BASE) + c * CONTEXT_STRIDE + o for o in ctx}
    return sorted(offs)


class HostPortSpec(Elaboratable):
    def __init__(self, config, prop):
        # one property, or several proved jointly in one wrapper (tests/formal/run.py)
        self.props = (prop,) if isinstance(prop, str) else tuple(prop)
        assert self.props and set(self.props) <= set(PROPS), prop
        self.config = config
        self.dut = HostPort(config)
        self.dut._MustUse__silence = True     # elaborated by hand in elaborate()
        self.tiles = list(self.dut.tiles)
        # one free signal per input member of the port (AXI master side, tile returns, ...)
        self.free = []
        self.m_in = {}
        for path, member, value in self.dut.signature.flatten(self.dut):
            if member.flow != In:
                continue
            name = "_".join(str(x) for x in path)
            sig = Signal(value.shape(), name=f"free_{name}")
            self.free.append((sig, value))
            if path[0] == "s_axil":
                self.m_in[path[1]] = sig
            if path == ("status",):
                self.status = sig

    @property
    def ports(self):
        return [sig for sig, _ in self.free]

    # -- the address map, enumerated from tessera.hostmap
    def mapped(self, a):
        cfg = self.config
        ctrl = (a < TILE_REG_BASE) & any_of(a[2:20] == (int(r) >> 2) for r in Ctrl)
        offs = tile_reg_offsets(cfg.contexts)
        treg_off = any_of(a[2:13] == (o >> 2) for o in offs)
        treg = any_of((a >= TILE_REG_BASE + t * TILE_REG_STRIDE)
                      & (a < TILE_REG_BASE + (t + 1) * TILE_REG_STRIDE)
                      for t in range(cfg.tiles)) & treg_off
        return ctrl | treg | self.sram_any(a)

    def sram_hit(self, a, t):
        base = SRAM_BASE + t * SRAM_STRIDE
        return (a >= base) & (a < base + self.config.sram_bytes)

    def sram_any(self, a):
        return any_of(self.sram_hit(a, t) for t in range(self.config.tiles))

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        n, ab = cfg.tiles, cfg.sram_addr_bits
        dut = self.dut
        # elaborated here (not by the toolchain) to reach the port's FSM state for the
        # induction lemmas below; the netlist is the same
        m.submodules.dut = dm = dut.elaborate(platform)
        fsm = dm._generated["fsm"]
        in_state = {name: fsm.state == code for name, code in fsm.encoding.items()}
        no_reset(m)
        mi = self.m_in
        for sig, value in self.free:
            m.d.comb += value.eq(sig)
        ax = lambda k: getattr(dut.s_axil, k)   # noqa: E731
        running = self.status == Status.RUNNING

        # -- environment: AXI master rules
        for valid, ready, payload in (("arvalid", "arready", ("araddr", "arprot")),
                                      ("awvalid", "awready", ("awaddr", "awprot")),
                                      ("wvalid", "wready", ("wdata", "wstrb"))):
            pend = past(m, mi[valid] & ~ax(ready), f"p_{valid}_pending")
            prev = {p: past(m, mi[p], f"p_{p}") for p in payload}   # outside the If
            with m.If(pend):
                m.d.comb += Assume(mi[valid])
                for p in payload:
                    m.d.comb += Assume(mi[p] == prev[p])

        # -- bookkeeping
        ar_hs = mi["arvalid"] & ax("arready")
        r_hs = ax("rvalid") & mi["rready"]
        aw_hs = mi["awvalid"] & ax("awready")
        w_hs = mi["wvalid"] & ax("wready")
        b_hs = ax("bvalid") & mi["bready"]
        r_out, aw_out, w_out = Signal(2, name="r_out"), Signal(2, name="aw_out"), \
            Signal(2, name="w_out")
        m.d.sync += [r_out.eq(r_out + ar_hs - r_hs), aw_out.eq(aw_out + aw_hs - b_hs),
                     w_out.eq(w_out + w_hs - b_hs)]
        r_wait, b_wait = Signal(3, name="r_wait"), Signal(3, name="b_wait")
        with m.If(ar_hs):
            m.d.sync += r_wait.eq(0)
        with m.Elif((r_out == 1) & ~ax("rvalid") & (r_wait != 7)):
            m.d.sync += r_wait.eq(r_wait + 1)
        both = (aw_out == 1) & (w_out == 1)
        with m.If(aw_hs | w_hs):
            m.d.sync += b_wait.eq(0)
        with m.Elif(both & ~ax("bvalid") & (b_wait != 7)):
            m.d.sync += b_wait.eq(b_wait + 1)
        raddr, waddr = Signal(32, name="raddr"), Signal(32, name="waddr")
        wdata, wstrb = Signal(32, name="wdata_q"), Signal(4, name="wstrb_q")
        with m.If(ar_hs):
            m.d.sync += raddr.eq(mi["araddr"])
        with m.If(aw_hs):
            m.d.sync += waddr.eq(mi["awaddr"])
        with m.If(w_hs):
            m.d.sync += [wdata.eq(mi["wdata"]), wstrb.eq(mi["wstrb"])]
        # RUNNING in every / in no cycle of the transaction (from its first handshake on)
        r_all, r_none = Signal(name="r_all"), Signal(name="r_none")
        w_all, w_none = Signal(name="w_all"), Signal(name="w_none")
        with m.If(ar_hs):
            m.d.sync += [r_all.eq(running), r_none.eq(~running)]
        with m.Else():
            m.d.sync += [r_all.eq(r_all & running), r_none.eq(r_none & ~running)]
        w_first = (aw_hs | w_hs) & (aw_out == 0) & (w_out == 0)
        with m.If(w_first):
            m.d.sync += [w_all.eq(running), w_none.eq(~running)]
        with m.Else():
            m.d.sync += [w_all.eq(w_all & running), w_none.eq(w_none & ~running)]
        r_now_all = r_all & running
        r_now_none = r_none & ~running
        w_now_all = w_all & running
        w_now_none = w_none & ~running
        # strobes given to the tiles during the current transaction
        we_any = any_of(t.sram.we != 0 for t in self.tiles)
        re_any = any_of(t.sram.re for t in self.tiles)
        effect = we_any | dut.start
        n_we = Signal(2)
        n_re = Signal(2)
        with m.If(w_first):
            m.d.sync += n_we.eq(0)
        with m.Elif(we_any & (n_we != 3)):
            m.d.sync += n_we.eq(n_we + 1)
        with m.If(ar_hs):
            m.d.sync += n_re.eq(0)
        with m.Elif(re_any & (n_re != 3)):
            m.d.sync += n_re.eq(n_re + 1)
        # the word the addressed tile delivered two cycles after its read strobe (the tile
        # registers its SRAM word, HostTileSignature)
        p_re = [past(m, t.sram.re, f"p_t{i}_sram_re") for i, t in enumerate(self.tiles)]
        pp_re = [past(m, pr, f"pp_t{i}_sram_re") for i, pr in enumerate(p_re)]
        got = Signal(32)
        with m.If(any_of(pp_re)):
            for t, pr in zip(self.tiles, pp_re):
                with m.If(pr):
                    m.d.sync += got.eq(t.sram.rdata)

        # -- lemmas used by every property (k-induction needs the request bookkeeping to be
        # consistent with the port): these are the "axi_responses" assertions
        def responses():
            m.d.comb += [
                Assert(r_out <= 1), Assert(aw_out <= 1), Assert(w_out <= 1),
                Assert(~ax("rvalid") | (r_out == 1)),
                Assert(~ax("bvalid") | both),
                Assert(~((r_out == 1) & ~ax("rvalid")) | (r_wait <= 3)),
                Assert(~(both & ~ax("bvalid")) | (b_wait <= 0)),
                Assert(~effect | (both & ~ax("bvalid"))),
                Assert(~(we_any & (n_we != 0))),
                Assert(~(re_any & ((r_out != 1) | ax("rvalid") | (n_re != 0)))),
                # one transaction at a time: nothing is accepted while a response is pending
                Assert(~((r_out != 0) & ((aw_out != 0) | (w_out != 0)))),
                Assert(~((ax("rvalid") | ax("bvalid"))
                         & (ax("arready") | ax("awready") | ax("wready")))),
            ]
        responses()

        # -- induction lemmas: the spec's bookkeeping matches the port's FSM state
        idle_ch = (r_out == 0) & (aw_out == 0) & (w_out == 0)
        rd = (r_out == 1) & (aw_out == 0) & (w_out == 0)
        wr = (r_out == 0) & both
        rv, bv = ax("rvalid"), ax("bvalid")
        lemma = {"IDLE": idle_ch & ~rv & ~bv,
                 "RD_SEL": rd & ~rv & ~bv & (r_wait == 0) & (n_re == 0),
                 "RD_WAIT": rd & ~rv & ~bv & (r_wait == 1) & (n_re == 0),
                 "RD_WAIT2": rd & ~rv & ~bv & (r_wait == 2) & (n_re <= 1),
                 "RD_DATA": rd & ~rv & ~bv & (r_wait == 3) & (n_re <= 1),
                 "RD_RESP": rd & rv & ~bv,
                 "WR": wr & ~rv & ~bv & (b_wait == 0) & (n_we == 0),
                 "WR_RESP": wr & ~rv & bv}
        assert set(lemma) == set(in_state), in_state
        m.d.comb += Assert(any_of(in_state.values()))     # no unused state encoding
        for name, cond in lemma.items():
            with m.If(in_state[name]):
                m.d.comb += Assert(cond)

        props = self.props
        if "axi_valid_held" in props:
            for valid, ready, payload in (("rvalid", "rready", ("rdata", "rresp")),
                                          ("bvalid", "bready", ("bresp",))):
                pend = past(m, ax(valid) & ~mi[ready], f"p_{valid}_held")
                prev = {p: past(m, ax(p), f"p_{p}") for p in payload}
                with m.If(pend):
                    m.d.comb += Assert(ax(valid))
                    for p in payload:
                        m.d.comb += Assert(ax(p) == prev[p])
                m.d.comb += Cover(pend & ax(valid) & ~mi[ready]
                                  & past(m, pend, f"pp_{valid}_held"))
        if "axi_responses" in props:
            m.d.comb += [Cover(r_hs), Cover(b_hs),
                         Cover(b_hs & past(m, mi["awvalid"] & ~mi["wvalid"], "p_aw_only"))]
        if "sram_running" in props:
            for t in self.tiles:
                with m.If(running):
                    m.d.comb += [Assert(t.sram.we == 0), Assert(~t.sram.re)]
            with m.If(ax("bvalid") & w_now_all & self.sram_any(waddr)):
                m.d.comb += Assert(ax("bresp") == SLVERR)
            with m.If(ax("rvalid") & r_now_all & self.sram_any(raddr)):
                m.d.comb += [Assert(ax("rresp") == SLVERR), Assert(ax("rdata") == 0)]
            m.d.comb += [Cover(b_hs & w_now_all & self.sram_hit(waddr, n - 1)),
                         Cover(r_hs & r_now_all & self.sram_hit(raddr, n - 1))]
        if "sram_stopped" in props:
            # the strobe of a write while stopped: the addressed tile only, the word's address
            # inside the SRAM (low two bits ignored), the written data and byte strobes
            for i, t in enumerate(self.tiles):
                with m.If(t.sram.we != 0):
                    m.d.comb += [
                        Assert(self.sram_hit(waddr, i)), Assert(t.sram.we == wstrb),
                        Assert(t.sram.addr == Cat(Const(0, 2), waddr[2:ab])),
                        Assert(t.sram.wdata == wdata)]
                with m.If(t.sram.re):
                    m.d.comb += [Assert(self.sram_hit(raddr, i)),
                                 Assert(t.sram.addr == Cat(Const(0, 2), raddr[2:ab]))]
            with m.If(ax("bvalid") & w_now_none & self.sram_any(waddr)):
                m.d.comb += [Assert(ax("bresp") == OKAY), Assert(n_we == (wstrb != 0))]
            with m.If(ax("rvalid") & r_now_none & self.sram_any(raddr)):
                m.d.comb += [Assert(ax("rresp") == OKAY), Assert(n_re == 1),
                             Assert(ax("rdata") == got)]
            m.d.comb += [Cover(b_hs & w_now_none & self.sram_hit(waddr, n - 1) & (wstrb == 0xF)),
                         Cover(r_hs & r_now_none & self.sram_hit(raddr, n - 1)
                               & (ax("rdata") != 0))]
        if "ctx_running" in props:
            def ctx_reg(a, offsets):
                """``a`` is one of ``offsets`` of a context c < T of a tile t < N (hostmap)."""
                # one flat OR (a chain of |s this long exceeds Python's recursion limit)
                return Cat(*(
                    a == TILE_REG_BASE + t * TILE_REG_STRIDE + int(TileReg.CONTEXT_BASE)
                    + c * CONTEXT_STRIDE + o
                    for t in range(cfg.tiles) for c in range(cfg.contexts)
                    for o in offsets)).any()
            read_out = [int(ContextReg.PC), int(ContextReg.RETIRED_LO),
                        int(ContextReg.RETIRED_HI)] + \
                [int(ContextReg.REGS) + 4 * i for i in range(32)]
            word = Cat(Const(0, 2), raddr[2:])            # the low two bits are ignored
            with m.If(ax("rvalid") & r_now_all & ctx_reg(word, read_out)):
                m.d.comb += [Assert(ax("rresp") == SLVERR), Assert(ax("rdata") == 0)]
            with m.If(ax("rvalid") & ctx_reg(word, [int(ContextReg.STATE)])):
                m.d.comb += Assert(ax("rresp") == OKAY)
            m.d.comb += [Cover(r_hs & r_now_all & ctx_reg(word, read_out)),
                         Cover(r_hs & r_now_all & ctx_reg(word, [int(ContextReg.STATE)]))]
        if "decerr" in props:
            # checked in every cycle the response is offered (not only at the handshake), which
            # makes the property inductive while the master stalls
            with m.If(ax("bvalid")):
                m.d.comb += Assert((ax("bresp") == DECERR) == ~self.mapped(waddr))
            with m.If(ax("rvalid")):
                m.d.comb += Assert((ax("rresp") == DECERR) == ~self.mapped(raddr))
            m.d.comb += [Cover(b_hs & (ax("bresp") == DECERR)),
                         Cover(r_hs & (ax("rresp") == DECERR) & (raddr >= TILE_REG_BASE)),
                         Cover(r_hs & (ax("rresp") == OKAY) & (raddr >= TILE_REG_BASE)
                               & (raddr < SRAM_BASE))]
        return m


def build(config, prop):
    spec = HostPortSpec(config, prop)
    return spec, spec.ports


def specs(configs):
    return [Spec("host_port", p, t, build, prove_depth=lambda c: 6, cover_depth=lambda c: 10,
                 configs=configs) for p, t in PROPS.items()]
