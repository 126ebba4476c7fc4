"""Array with the real core (tessera/hdl/tile/core) on the Amaranth simulator: a sync ARRAY + exchange
program whose cycle numbers and counters are computed by hand from architecture §4-§8."""

import struct

from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.exchange import Step, encode_program
from tessera.spec.hostmap import Ctrl, Status, TileReg, ContextReg, tile_reg_addr, context_reg_addr
from tessera.spec.isa import Opcode, encode_i, encode_sync, SyncZone, INSN_ECALL
from tessera.spec.result import ContextState

from helpers.hdl_sim import Axil, sram_set, simulate, wait_done
from tessera.hdl.array import Array


def _csrrw(rd, csr, rs1):
    return (int(csr) << 20) | (rs1 << 15) | (1 << 12) | (rd << 7) | Opcode.SYSTEM


def test_barrier_exchange_with_core():
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
    code = [encode_i(Opcode.OP_IMM, 5, 0, 0, 0x100),      # 0:  x5 = 0x100
            _csrrw(0, Csr.XPROG, 5),                      # 4:  xprog = x5
            encode_sync(SyncZone.ARRAY),                  # 8
            encode_i(Opcode.LOAD, 10, 2, 0, 0x204),       # 12: lw a0, 0x204(x0)
            INSN_ECALL]                                   # 16
    xprog = encode_program([Step.send_recv(0x200), Step.idle(1),
                            Step.send_recv(None, 1, 0x204, relative=True), Step.end()])
    dut = Array(cfg)
    res = {}

    async def bench(ctx):
        ax = Axil(ctx, dut)
        for i, t in enumerate(dut.tiles):
            for k, w in enumerate(code):
                sram_set(ctx, t, 4 * k, w)
            for k in range(0, len(xprog), 4):
                sram_set(ctx, t, 0x100 + k, struct.unpack_from("<I", xprog, k)[0])
            sram_set(ctx, t, 0x200, 0x1000 + i)
        await ax.write(Ctrl.CONTROL, 1)
        await wait_done(ctx, dut)
        res["status"] = await ax.read_ok(Ctrl.STATUS)
        res["cycles"] = await ax.read_ok(Ctrl.CYCLES_LO)
        for i in range(2):
            res[i] = {
                "ctr": [await ax.read_ok(tile_reg_addr(i, r)) for r in
                        (TileReg.COMPUTE_LO, TileReg.SYNC_LO, TileReg.EXCHANGE_LO,
                         TileReg.HALTED_LO, TileReg.RETIRED_LO, TileReg.MACS_LO)],
                "ctx": [[await ax.read_ok(context_reg_addr(i, c, r)) for r in
                         (ContextReg.STATE, ContextReg.PC, ContextReg.RETIRED_LO,
                          ContextReg.REGS + 4 * 10)] for c in range(6)],
                "fault": await ax.read_ok(tile_reg_addr(i, TileReg.FAULT_VALID)),
            }

    simulate(dut, bench)
    # By hand, contract v2 (T = 6, N = 2: D = 3, L = 2). Context c issues its j-th instruction
    # at 6j + c: sync ARRAY (j = 2) at 12 + c, WAIT_ARRAY visible from 17 + c (§4: t + 5); the
    # last (c = 5) from 22 -> k* = 22 and r = k* + D = 25 (§5). Steps: 25 send (bus = 0x1000+i),
    # 26 idle, 27 receive the other tile's bus of 27 - L = 25 into 0x204, 28 END -> e = 28,
    # contexts RUNNING from 29. Next slots: lw at 29 (c = 5), 30..34 (c = 0..4); ecall at 35
    # (c = 5), 36..40 (c = 0..4). The last ecall (40) is visible from v = 45: the stop is at the
    # end of t_s = v + D - 1 = 47, cycles = v + D = 48 (§7 "Stop").
    # Counters over 0..47 (§8): compute 0..21 (a context RUNNING until 21) and 29..44 (context 4
    # RUNNING until its ecall is visible at 45): 22 + 16 = 38; sync 22..24 (3); exchange
    # 25..28 (4); halted 45..47 (3); 38 + 3 + 4 + 3 = 48 = C. Retired 5 per context, 30 per
    # tile; every context HALTED with pc = 16 + 4 and a0 = the other tile's 0x1000 + i.
    assert res["status"] == Status.HALTED
    assert res["cycles"] == 48
    for i in range(2):
        assert res[i]["ctr"] == [38, 3, 4, 3, 30, 0]
        assert res[i]["fault"] == 0
        for c in range(6):
            assert res[i]["ctx"][c] == [ContextState.HALTED, 20, 5, 0x1000 + (1 - i)]
