"""A second start resets the tile counters and xprog (architecture §9: "Start: counters, cycle
counter, registers, xprog (0), contexts and fault records reset; SRAM keeps its content").

Written for the mutant that dropped the core's start reset of ``xprog``, the tile's
``retired`` and ``macs`` counters (tessera/hdl/tile/core/core.py), which survived the fast
suite (docs/verification.md, "Mutation score"): every other test starts the array once.

Real core, one tile, T = 6 (contract v2: T >= 6), Amaranth simulator. Expected values by hand:

* run 1: every context runs ``dot4 x5, x0, x0; addi x9, x0, 0x400; csrw xprog, x9; ecall``:
  4 retired instructions per context (24 in all), one dot4 each (4 MACs: 24), xprog = 0x400;
* run 2, after the host rewrites word 0 with ``ecall``: one retired instruction per context (6),
  no MACs, xprog 0 (never written in run 2).
"""

from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.hostmap import Ctrl, Status, TileReg, tile_reg_addr
from tessera.toolchain import asm

from helpers.hdl_sim import Axil, sram_set, simulate, wait_done
from tessera.hdl.array import Array

CFG = ArrayConfig(tiles=1, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)  # v2: T >= 6, L >= 2


def test_second_start_resets_counters_and_xprog():
    a = asm
    prog = [a.dot4(5, 0, 0), a.addi(9, 0, 0x400), a.csrw(Csr.XPROG, 9), a.ecall()]
    dut = Array(CFG)
    got = []

    async def bench(ctx):
        ax = Axil(ctx, dut)
        for k, w in enumerate(prog):
            sram_set(ctx, dut.tiles[0], 4 * k, w)
        for run in range(2):
            if run == 1:
                sram_set(ctx, dut.tiles[0], 0, a.ecall())
            await ax.write(Ctrl.CONTROL, 1)
            await wait_done(ctx, dut, limit=500)
            got.append((await ax.read_ok(Ctrl.STATUS),
                        await ax.read_ok(tile_reg_addr(0, TileReg.RETIRED_LO)),
                        await ax.read_ok(tile_reg_addr(0, TileReg.MACS_LO)),
                        await ax.read_ok(tile_reg_addr(0, TileReg.XPROG))))

    simulate(dut, bench)
    assert got[0] == (Status.HALTED, 24, 24, 0x400)
    assert got[1] == (Status.HALTED, 6, 0, 0)
