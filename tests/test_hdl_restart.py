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


def test_start_clears_a_division_cut_by_a_timeout():
    # Written for mutant M05e910 (tessera/hdl/tile/core/divider.py: the divider's `start` port
    # zero bits wide, so a start no longer clears the turn counters), which survived the fast
    # suite: no test started a run after one that ended during a division.
    #
    # architecture §4 "Division": each context's turn counter n is "reset only by start,
    # n = 0"; a division word issued with n > 0 and equal to the context's previous issue word
    # is in turn j = n, and only turn DIV_TURNS - 1 = 9 retires (9T after the first turn).
    # Program (every context, registers 0 after start): divu x5, x6, x7 (0 / 0: all ones,
    # RISC-V §7.2 table 7.1); sw x5, 0x200(x0) (every context stores the same word); ecall.
    # Run 1, max_cycles = 30: context c issues at c, c + 6, ..., c + 24 < 30: five turns each
    # (n = 5), no retire; timeout, cycles = 30 (§7 "Timeout").
    # Run 2 (start): n = 0 again, so context c's division retires at c + 9·6 = c + 54, the sw
    # issues at c + 60, the ecall at c + 66; the last ecall (c = 5) at 71: HALTED from
    # 71 + STATE_VISIBLE_DELAY, cycles = 71 + STATE_VISIBLE_DELAY + D (§7 "Stop"). With the
    # counters kept (n = 5), each first division issue would be turn 5: the divisions retire
    # 5 turns = 30 cycles earlier (cycles 48; checked with the mutant).
    from tessera.spec.isa import DIV_TURNS
    from tessera.spec.timing import STATE_VISIBLE_DELAY
    from helpers.hdl_sim import sram_get
    a = asm
    prog = [a.divu(5, 6, 7), a.sw(5, 0x200, 0), a.ecall()]
    dut = Array(CFG)
    got = []

    async def bench(ctx):
        ax = Axil(ctx, dut)
        for k, w in enumerate(prog):
            sram_set(ctx, dut.tiles[0], 4 * k, w)
        for maxc in (30, 1000):
            await ax.write(Ctrl.MAX_CYCLES_LO, maxc)
            await ax.write(Ctrl.CONTROL, 1)
            await wait_done(ctx, dut, limit=2000)
            got.append((await ax.read_ok(Ctrl.STATUS), await ax.read_ok(Ctrl.CYCLES_LO),
                        await ax.read_ok(tile_reg_addr(0, TileReg.RETIRED_LO)),
                        sram_get(ctx, dut.tiles[0], 0x200)))

    simulate(dut, bench)
    T = CFG.contexts
    assert DIV_TURNS == 10 and T == 6
    assert got[0] == (Status.TIMEOUT, 30, 0, 0)
    last_ecall = 5 + (DIV_TURNS - 1) * T + 2 * T          # 71
    assert got[1] == (Status.HALTED, last_ecall + STATE_VISIBLE_DELAY + CFG.decision_latency,
                      3 * T, 0xFFFFFFFF)
