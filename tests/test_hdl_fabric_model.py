"""Differential test: the array RTL (real core, Amaranth simulator) against the golden model
(tessera.golden_model.Array, written independently from the same contract) on programs with ARRAY
barriers, exchange programs (relative sources, multicast), a tile whose contexts all halt before
the barrier, back-to-back barriers, an exchange fault and a timeout. Everything in the run result
must be equal: status, cycles, counters, fault records, context state/pc/retired/registers, and
the exchanged SRAM words."""

import struct

import pytest

from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.exchange import Step, encode_program
from tessera.spec.faults import FaultCause
from tessera.spec.hostmap import (Ctrl, Status, TileReg, ContextReg, tile_reg_addr,
                             context_reg_addr, sram_addr)
from tessera.spec.result import ContextState

from helpers.hdl_sim import Axil, sram_set, simulate, wait_done
from tessera.hdl.array import Array

from tessera import golden_model  # noqa: E402

_STATUS = {Status.HALTED: "halted", Status.FAULT: "fault", Status.TIMEOUT: "timeout"}


def spmd_program(xprog_addr=0x400):
    a = asm
    return [
        a.csrr(5, Csr.TILE_ID), a.csrr(6, Csr.CONTEXT_ID),
        a.slli(7, 6, 2),                       # x7 = 4 * context
        a.slli(8, 5, 4), a.add(8, 8, 6), a.addi(8, 8, 100),   # v = 16 * tile + ctx + 100
        a.sw(8, 0x600, 7),                     # data[ctx] = v
        a.addi(9, 0, xprog_addr), a.csrw(Csr.XPROG, 9),
        a.addi(11, 0, 2),
        a.bne(5, 11, 8),                       # tile 2: every context halts before the barrier
        a.ecall(),
        a.sync_array(),                        # barrier 1 (exchange program)
        a.lw(10, 0x680, 7), a.lw(12, 0x700, 0),
        a.add(10, 10, 12),
        a.csrw(Csr.XPROG, 0),
        a.sync_array(),                        # barrier 2, back to back, no program
        a.sync_array(),                        # barrier 3
        a.ecall(),
    ]


def xprogram(L):
    steps = []
    # send data[0..3] at r..r+3, receive them from tile (i+1) mod N at r+L.., then a multicast
    # of tile 0's data[0] (sent at r+4) into 0x700 by every tile
    sched = {}
    for c in range(4):
        sched.setdefault(c, {})["send"] = 0x600 + 4 * c
        sched.setdefault(c + L, {})["recv"] = (1, 0x680 + 4 * c, True)
    sched.setdefault(4, {})["send"] = 0x600
    sched.setdefault(4 + L, {})["recv"] = (0, 0x700, False)
    for j in range(max(sched) + 1):
        s = sched.get(j, {})
        if "recv" in s:
            src, addr, rel = s["recv"]
            steps.append(Step.send_recv(s.get("send"), src, addr, rel))
        elif "send" in s:
            steps.append(Step.send_recv(s["send"]))
        else:
            steps.append(Step.idle(1))
    steps.append(Step.end())
    return encode_program(steps)


def rtl_run(cfg, images, max_cycles, mem_ranges):
    dut = Array(cfg)
    res = {}

    async def bench(ctx):
        ax = Axil(ctx, dut)
        for i, t in enumerate(dut.tiles):
            for addr, data in images[i]:
                for k in range(0, len(data), 4):
                    sram_set(ctx, t, addr + k, struct.unpack_from("<I", data, k)[0])
        await ax.write(Ctrl.MAX_CYCLES_LO, max_cycles)
        await ax.write(Ctrl.CONTROL, 1)
        await wait_done(ctx, dut, limit=max_cycles + 100)
        res["status"] = _STATUS[await ax.read_ok(Ctrl.STATUS)]
        res["cycles"] = await ax.read_ok(Ctrl.CYCLES_LO)
        tiles = []
        for i in range(cfg.tiles):
            w = [await ax.read_ok(tile_reg_addr(i, 4 * k)) for k in range(14)]
            c64 = lambda k: w[k] | w[k + 1] << 32  # noqa: E731
            counters = {"compute": c64(0), "sync": c64(2), "exchange": c64(4),
                        "retired": c64(6), "macs": c64(8), "halted": c64(10),
                        "engine": c64(12)}
            f = [await ax.read_ok(tile_reg_addr(i, r)) for r in
                 (TileReg.FAULT_VALID, TileReg.FAULT_CONTEXT, TileReg.FAULT_CAUSE,
                  TileReg.FAULT_PC, TileReg.FAULT_ADDR)]
            fault = None if not f[0] else {
                "context": None if f[1] == 0xFFFFFFFF else f[1],
                "cause": FaultCause(f[2]).label, "pc": f[3], "addr": f[4]}
            ctxs = []
            for c in range(cfg.contexts):
                hd = [await ax.read_ok(context_reg_addr(i, c, r)) for r in
                      (ContextReg.STATE, ContextReg.PC, ContextReg.RETIRED_LO,
                       ContextReg.RETIRED_HI)]
                regs = [await ax.read_ok(context_reg_addr(i, c, ContextReg.REGS + 4 * r))
                        for r in range(32)]
                st = ContextState(hd[0])
                ctxs.append({"context": c, "state": st.label, "pc": hd[1],
                             "exit_code": regs[10] if st == ContextState.HALTED else None,
                             "retired": hd[2] | hd[3] << 32, "regs": regs})
            tiles.append({"tile": i, "counters": counters, "fault": fault, "contexts": ctxs})
        res["tiles"] = tiles
        res["mem"] = [[await ax.read_ok(sram_addr(i, a))
                       for lo, hi in mem_ranges for a in range(lo, hi, 4)]
                      for i in range(cfg.tiles)]

    simulate(dut, bench)
    return res


def model_run(cfg, images, max_cycles, mem_ranges):
    m = golden_model.Array(cfg)
    for i in range(cfg.tiles):
        for addr, data in images[i]:
            m.write_mem(i, addr, data)
    m.start(0)
    r = m.run(max_cycles).to_json()
    r["mem"] = [[int.from_bytes(m.read_mem(i, a, 4), "little")
                 for lo, hi in mem_ranges for a in range(lo, hi, 4)] for i in range(cfg.tiles)]
    return r


def compare(cfg, images, max_cycles, mem_ranges):
    got = rtl_run(cfg, images, max_cycles, mem_ranges)
    exp = model_run(cfg, images, max_cycles, mem_ranges)
    assert (got["status"], got["cycles"]) == (exp["status"], exp["cycles"])
    for i in range(cfg.tiles):
        g, e = got["tiles"][i], exp["tiles"][i]
        assert g["counters"] == e["counters"], f"tile {i} counters"
        assert g["fault"] == e["fault"], f"tile {i} fault"
        for c in range(cfg.contexts):
            assert g["contexts"][c] == e["contexts"][c], f"tile {i} context {c}"
    assert got["mem"] == exp["mem"]
    return got


@pytest.mark.parametrize("tiles,lat", [(3, 2), (2, 1), (4, 3)])
def test_spmd_barriers_exchange_vs_model(tiles, lat):
    cfg = ArrayConfig(tiles=tiles, contexts=4, sram_bytes=16 * 1024, exchange_latency=lat)
    code = asm.program(spmd_program())
    images = [[(0, code), (0x400, xprogram(lat))] for _ in range(tiles)]
    got = compare(cfg, images, 400, [(0x600, 0x610), (0x680, 0x690), (0x700, 0x704)])
    assert got["status"] == "halted"


def test_exchange_fault_vs_model():
    cfg = ArrayConfig(tiles=3, contexts=4, sram_bytes=16 * 1024, exchange_latency=2)
    code = asm.program(spmd_program())
    bad = encode_program([Step.send_recv(0x600), Step.send_recv(None, 7, 0x680)])  # src 7 >= N
    images = [[(0, code), (0x400, xprogram(2))], [(0, code), (0x400, bad)],
              [(0, code), (0x400, xprogram(2))]]
    got = compare(cfg, images, 400, [(0x600, 0x610), (0x680, 0x690)])
    assert got["status"] == "fault"


def test_timeout_vs_model():
    cfg = ArrayConfig(tiles=2, contexts=4, sram_bytes=16 * 1024, exchange_latency=2)
    code = asm.program(spmd_program())
    images = [[(0, code), (0x400, xprogram(2))] for _ in range(2)]
    got = compare(cfg, images, 41, [(0x600, 0x610)])
    assert got["status"] == "timeout" and got["cycles"] == 41


@pytest.mark.parametrize("end", ["ebreak", "ecall"])
def test_run_ends_during_other_tiles_exchange(end):
    # Tile 0 (xprog = 0) resumes right after the release and ends the run (ebreak: fault;
    # ecall: the last context halts) while tile 1 is still receiving every cycle. The
    # exchange steps after the run's last cycle must leave no trace.
    cfg = ArrayConfig(tiles=2, contexts=4, sram_bytes=16 * 1024, exchange_latency=1)
    a = asm
    code0 = asm.program([a.sync_array(), a.ebreak() if end == "ebreak" else a.ecall()])
    if end == "ebreak":
        code1 = asm.program([a.addi(9, 0, 0x400), a.csrw(Csr.XPROG, 9), a.sync_array(),
                             a.ecall()])
    else:   # tile 1: every context halts before the barrier, its program still runs
        code1 = asm.program([a.addi(9, 0, 0x400), a.csrw(Csr.XPROG, 9), a.ecall()])
    steps = [Step.send_recv(0x600 + 4 * j, 0, 0x680 + 4 * (j - 1), relative=True) if j else
             Step.send_recv(0x600) for j in range(24)]
    data = b"".join(struct.pack("<I", 0x1000 + j) for j in range(24))
    images = [[(0, code0)], [(0, code1), (0x400, encode_program(steps)), (0x600, data)]]
    got = compare(cfg, images, 300, [(0x680, 0x6E0)])
    assert got["status"] == ("fault" if end == "ebreak" else "halted")
