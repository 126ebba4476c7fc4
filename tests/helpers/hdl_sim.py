"""Amaranth-simulator helpers shared by the HDL tests: an AXI4-Lite master, a barrier stub
core, SRAM backdoor access and the simulation runner."""

from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from tessera.hdl.tile.core import StubCore

__all__ = ["Axil", "BarrierStubCore", "DbgStubCore", "sram_set", "sram_get", "simulate", "wait_done",
           "OKAY", "SLVERR", "DECERR"]

#: AXI4-Lite response codes (AXI spec A3.4.4).
OKAY, SLVERR, DECERR = 0, 2, 3


#: clocks an Axil transfer waits for the port's ready before the test fails (a mutant or a
#: bug that never accepts must fail the test, not hang it)
_READY_GUARD = 1000


class Axil:
    """Minimal AXI4-Lite master for Amaranth testbenches."""

    def __init__(self, ctx, dut):
        self.ctx, self.d = ctx, dut

    async def read(self, addr):
        ctx, d = self.ctx, self.d
        ctx.set(d.s_axil.araddr, addr)
        ctx.set(d.s_axil.arvalid, 1)
        for _ in range(_READY_GUARD):         # a hang guard, not a timing check
            rdy = ctx.get(d.s_axil.arready)
            await ctx.tick()
            if rdy:
                break
        else:
            raise AssertionError(f"arready never rose for a read of {addr:#x} "
                                 f"({_READY_GUARD} clocks)")
        ctx.set(d.s_axil.arvalid, 0)
        ctx.set(d.s_axil.rready, 1)
        for _ in range(20):
            if ctx.get(d.s_axil.rvalid):
                data, resp = ctx.get(d.s_axil.rdata), ctx.get(d.s_axil.rresp)
                await ctx.tick()
                ctx.set(d.s_axil.rready, 0)
                return data, resp
            await ctx.tick()
        raise AssertionError(f"no read response for {addr:#x}")

    async def write(self, addr, data, strb=0xF):
        ctx, d = self.ctx, self.d
        ctx.set(d.s_axil.awaddr, addr)
        ctx.set(d.s_axil.wdata, data)
        ctx.set(d.s_axil.wstrb, strb)
        ctx.set(d.s_axil.awvalid, 1)
        ctx.set(d.s_axil.wvalid, 1)
        for _ in range(_READY_GUARD):         # a hang guard, not a timing check
            rdy = ctx.get(d.s_axil.awready) and ctx.get(d.s_axil.wready)
            await ctx.tick()
            if rdy:
                break
        else:
            raise AssertionError(f"awready and wready never rose together for a write of "
                                 f"{addr:#x} ({_READY_GUARD} clocks)")
        ctx.set(d.s_axil.awvalid, 0)
        ctx.set(d.s_axil.wvalid, 0)
        ctx.set(d.s_axil.bready, 1)
        for _ in range(20):
            if ctx.get(d.s_axil.bvalid):
                resp = ctx.get(d.s_axil.bresp)
                await ctx.tick()
                ctx.set(d.s_axil.bready, 0)
                return resp
            await ctx.tick()
        raise AssertionError(f"no write response for {addr:#x}")

    async def read_ok(self, addr):
        data, resp = await self.read(addr)
        assert resp == OKAY, f"read {addr:#x} got resp {resp}"
        return data


class BarrierStubCore(StubCore):
    """Stub core whose contexts all wait at the ARRAY barrier from the start until the first
    resume (``arrive`` register); ``xprog``, ``all_halted`` and ``fault`` are left for the
    testbench to drive. ``commits`` counts the cycles with ``run`` (the run's cycles the counters see),
    ``resumes`` resume pulses."""

    def elaborate(self, platform):
        m = Module()
        self.commits = Signal(32, name="commits")
        self.resumes = Signal(8, name="resumes")
        arrive = Signal()
        with m.If(self.start):
            m.d.sync += [arrive.eq(1), self.commits.eq(0), self.resumes.eq(0)]
        with m.Else():
            with m.If(self.resume):
                m.d.sync += [arrive.eq(0), self.resumes.eq(self.resumes + 1)]
            with m.If(self.run):
                m.d.sync += self.commits.eq(self.commits + 1)
        m.d.comb += self.arrive.eq(arrive)
        return m


def sram_set(ctx, tile, byte_addr, word):
    """Write a 32-bit word into a tile's SRAM directly (simulation backdoor)."""
    cell = tile.sram.word(byte_addr // 8)
    lane = (byte_addr // 4) % 2
    old = ctx.get(cell)
    mask = 0xFFFFFFFF << (32 * lane)
    ctx.set(cell, (old & ~mask) | (word << (32 * lane)))


def sram_get(ctx, tile, byte_addr):
    return (ctx.get(tile.sram.word(byte_addr // 8)) >> (32 * ((byte_addr // 4) % 2))) & 0xFFFFFFFF


def simulate(dut, bench, vcd=None):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()


async def wait_done(ctx, dut, limit=5000):
    for k in range(limit):
        if ctx.get(dut.done):
            return k
        await ctx.tick()
    raise AssertionError("done never rose")


class DbgStubCore(StubCore):
    """Debug outputs are registered functions of (tile, dbg_ctx, dbg_reg)."""

    def elaborate(self, platform):
        m = Module()
        tid = self.tile_id
        dbg = self.dbg
        m.d.sync += [
            dbg.state.eq(dbg.ctx % 5),
            dbg.pc.eq(0x1000 * (tid + 1) + 4 * dbg.ctx),
            dbg.retired.eq((dbg.ctx + 1) * 0x1_0000_0003),
            dbg.x.eq((tid << 24) | (dbg.ctx << 8) | dbg.reg),
        ]
        for k, name in enumerate(("compute", "sync", "exchange", "halted", "retired",
                                  "macs", "engine")):
            m.d.comb += getattr(dbg.counters, name).eq(((tid + 1) << 40) | (k << 32) | (k + 7))
        m.d.comb += self.xprog.eq(0x200 + tid * 8)
        return m
