"""Host port (tessera/hdl/array/host_port.py) and run control (tessera/hdl/array/array.py) on the Amaranth simulator.

The cores are stubs with the real ports (docs/rtl.md): their debug outputs are fixed functions
of the selects, so every expected value below is computed from the host map
(tessera/spec/hostmap.py) and those functions, not from the RTL.
"""


from tessera.spec.config import ArrayConfig
from tessera.spec.faults import FaultCause
from tessera.spec.hostmap import (MAGIC, Ctrl, Status, TileReg, ContextReg, tile_reg_addr,
                             context_reg_addr, sram_addr)
from tessera.hdl.array import Array

from helpers.hdl_sim import OKAY, SLVERR, DECERR  # noqa: E402


from helpers.hdl_sim import Axil, BarrierStubCore, DbgStubCore, sram_get, simulate, wait_done


# ---------------------------------------------------------------- host-port tests
CFG = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)  # T >= 6 (v2)


def test_host_port_map():
    dut = Array(CFG, core_factory=DbgStubCore)

    async def bench(ctx):
        ax = Axil(ctx, dut)
        # geometry / control
        assert await ax.read_ok(Ctrl.MAGIC) == MAGIC
        assert await ax.read_ok(Ctrl.TILES) == 2
        assert await ax.read_ok(Ctrl.CONTEXTS) == 6
        assert await ax.read_ok(Ctrl.SRAM_BYTES) == 16384
        assert await ax.read_ok(Ctrl.XLATENCY) == 2
        assert await ax.read_ok(Ctrl.STATUS) == Status.IDLE
        assert await ax.write(Ctrl.ENTRY, 0x40) == OKAY
        assert await ax.read_ok(Ctrl.ENTRY) == 0x40
        assert await ax.write(Ctrl.MAX_CYCLES_HI, 5) == OKAY
        assert await ax.read_ok(Ctrl.MAX_CYCLES_HI) == 5
        assert await ax.write(Ctrl.MAGIC, 1) == SLVERR
        assert (await ax.read(0x34))[1] == DECERR
        assert (await ax.read(0x0008_0000))[1] == DECERR
        # SRAM read/write while stopped, byte strobes
        a = sram_addr(1, 0x100)
        assert await ax.write(a, 0x11223344) == OKAY
        assert await ax.write(a + 4, 0xAABBCCDD) == OKAY
        assert await ax.write(a, 0x99887766, strb=0b0101) == OKAY
        assert await ax.read_ok(a) == 0x11883366
        assert await ax.read_ok(a + 4) == 0xAABBCCDD
        assert sram_get(ctx, dut.tiles[1], 0x100) == 0x11883366
        assert sram_get(ctx, dut.tiles[0], 0x100) == 0           # other tile untouched
        assert await ax.read_ok(sram_addr(0, 16380)) == 0
        assert (await ax.read(sram_addr(0, 16384)))[1] == DECERR  # beyond sram_bytes
        assert (await ax.read(sram_addr(2, 0)))[1] == DECERR      # no tile 2
        assert await ax.write(sram_addr(2, 0), 1) == DECERR
        # tile registers
        for t in range(2):
            for k, lo in enumerate((TileReg.COMPUTE_LO, TileReg.SYNC_LO, TileReg.EXCHANGE_LO,
                                    TileReg.HALTED_LO, TileReg.RETIRED_LO, TileReg.MACS_LO,
                                    TileReg.ENGINE_LO)):
                assert await ax.read_ok(tile_reg_addr(t, lo)) == k + 7
                assert await ax.read_ok(tile_reg_addr(t, lo + 4)) == ((t + 1) << 8) | k
            assert await ax.read_ok(tile_reg_addr(t, TileReg.XPROG)) == 0x200 + 8 * t
            assert await ax.read_ok(tile_reg_addr(t, TileReg.FAULT_VALID)) == 0
            for c in (0, 3):
                assert await ax.read_ok(context_reg_addr(t, c, ContextReg.STATE)) == c % 5
                assert await ax.read_ok(context_reg_addr(t, c, ContextReg.PC)) == \
                    0x1000 * (t + 1) + 4 * c
                ret = (c + 1) * 0x1_0000_0003
                assert await ax.read_ok(context_reg_addr(t, c, ContextReg.RETIRED_LO)) == \
                    ret & 0xFFFFFFFF
                assert await ax.read_ok(context_reg_addr(t, c, ContextReg.RETIRED_HI)) == ret >> 32
                for r in (0, 5, 31):
                    assert await ax.read_ok(context_reg_addr(t, c, ContextReg.REGS + 4 * r)) == \
                        (t << 24) | (c << 8) | r
        assert (await ax.read(context_reg_addr(0, 6, ContextReg.STATE)))[1] == DECERR  # T = 6
        assert (await ax.read(context_reg_addr(0, 0, 0x10)))[1] == DECERR
        assert (await ax.read(tile_reg_addr(0, 0x38)))[1] == DECERR   # after ENGINE_HI (0x34)
        assert (await ax.read(tile_reg_addr(2, 0)))[1] == DECERR
        assert await ax.write(tile_reg_addr(0, TileReg.XPROG), 0) == SLVERR
        # while running: SRAM access refused, nothing changed
        assert await ax.write(Ctrl.MAX_CYCLES_LO, 0) == OKAY
        assert await ax.write(Ctrl.MAX_CYCLES_HI, 0) == OKAY
        assert await ax.write(Ctrl.CONTROL, 1) == OKAY
        assert await ax.read_ok(Ctrl.STATUS) == Status.RUNNING
        assert await ax.write(a, 0xDEADBEEF) == SLVERR
        assert (await ax.read(a))[1] == SLVERR
        assert await ax.write(Ctrl.CONTROL, 1) == SLVERR
        assert sram_get(ctx, dut.tiles[1], 0x100) == 0x11883366
        # while running, a context's pc, retired and registers are refused (docs/rtl.md:
        # the core reads them out through its pipeline); its state and the tile registers
        # are readable
        for off in (ContextReg.PC, ContextReg.RETIRED_LO, ContextReg.RETIRED_HI,
                    ContextReg.REGS, ContextReg.REGS + 4 * 31):
            assert await ax.read(context_reg_addr(1, 3, off)) == (0, SLVERR)
        assert await ax.read_ok(context_reg_addr(1, 3, ContextReg.STATE)) == 3
        assert await ax.read_ok(tile_reg_addr(1, TileReg.XPROG)) == 0x208
        assert (await ax.read(context_reg_addr(1, 6, ContextReg.PC)))[1] == DECERR

    simulate(dut, bench)


def _run_control(event, at, maxc=0):
    """Start a 2-tile stub array, inject one event at counter value ``at`` and return
    (status, cycles, commits per tile, fault records)."""
    dut = Array(CFG, core_factory=BarrierStubCore)
    out = {}

    async def bench(ctx):
        ax = Axil(ctx, dut)
        for t in dut.tiles:
            ctx.set(t.core.xprog, 0)
        await ax.write(Ctrl.MAX_CYCLES_LO, maxc)
        await ax.write(Ctrl.CONTROL, 1)
        # the start pulse was in the WR cycle; find the counter and inject
        core = dut.tiles[1].core
        for _ in range(4000):
            if ctx.get(dut.done):
                break
            cyc = ctx.get(core.cycle)
            running = ctx.get(dut.status) == Status.RUNNING
            if running and cyc == at:
                if event == "fault":
                    ctx.set(core.fault.valid, 1)
                    ctx.set(core.fault.cause, FaultCause.ILLEGAL_INSTRUCTION)
                    ctx.set(core.fault.context, 2)
                    ctx.set(core.fault.pc, 0x44)
                    ctx.set(core.fault.addr, 0xFFFF)
                elif event == "halt":           # held: HALTED stays visible
                    for t in dut.tiles:
                        ctx.set(t.core.all_halted, 1)
            elif event == "fault":
                ctx.set(core.fault.valid, 0)
            await ctx.tick()
        await wait_done(ctx, dut)
        out["status"] = await ax.read_ok(Ctrl.STATUS)
        out["cycles"] = await ax.read_ok(Ctrl.CYCLES_LO)
        out["fault_tiles"] = await ax.read_ok(Ctrl.FAULT_TILES)
        out["commits"] = [ctx.get(t.core.commits) for t in dut.tiles]
        out["rec"] = [[await ax.read_ok(tile_reg_addr(t, r)) for r in
                       (TileReg.FAULT_VALID, TileReg.FAULT_CONTEXT, TileReg.FAULT_CAUSE,
                        TileReg.FAULT_PC, TileReg.FAULT_ADDR)] for t in range(2)]

    simulate(dut, bench)
    return out


def test_timeout_cycles_and_commit():
    o = _run_control(None, None, maxc=37)
    assert o["status"] == Status.TIMEOUT and o["cycles"] == 37
    assert o["commits"] == [37, 37]          # counters see exactly cycles 0..36
    assert o["fault_tiles"] == 0


def test_core_fault_stops_at_v_plus_d():
    # v2 (architecture §4, §7 "Stop"): the core presents its fault in M at counter 20, so the
    # instruction was issued at t = 16 and its fault is visible from v = t + 5 = 21; N = 2 gives
    # D = ceil(log2 2) + 2 = 3, so the array stops at the end of t_s = v + D - 1 = 23 and
    # cycles = v + D = 24; the counters see exactly cycles 0..23.
    o = _run_control("fault", 20)
    assert o["status"] == Status.FAULT and o["cycles"] == 24
    assert o["commits"] == [24, 24]
    assert o["fault_tiles"] == 1
    assert o["rec"][1] == [1, 2, FaultCause.ILLEGAL_INSTRUCTION, 0x44, 0xFFFF]
    assert o["rec"][0] == [0, 0, 0, 0, 0]


def test_fault_in_drain_beats_timeout():
    # v2 (§7 "Timeout"): limit 30; the fault presented in M at 33 is the one of an instruction
    # issued at 29 < 30 (visible from 34, after max_cycles): status fault, cycles = 30
    o = _run_control("fault", 33, maxc=30)
    assert o["status"] == Status.FAULT and o["cycles"] == 30
    assert o["commits"] == [30, 30]


def test_halt_cycles():
    # v2 (§7 "Stop"): every context of both tiles HALTED from v = 25 (the last ecall issued at
    # 20, visible from 20 + 5) -> stop at the end of v + D - 1 = 27, cycles = v + D = 28 (D = 3)
    o = _run_control("halt", 25)
    assert o["status"] == Status.HALTED and o["cycles"] == 28
    assert o["commits"] == [28, 28]
