"""Differential test: the array RTL (real core, Amaranth simulator) against the golden model
(tessera.golden_model.Array, written independently from the same contract) on programs with ARRAY
barriers, exchange programs (relative sources, multicast), a tile whose contexts all halt before
the barrier, back-to-back barriers, an exchange fault and a timeout. Everything in the run result
must be equal: status, cycles, counters, fault records, context state/pc/retired/registers, and
the exchanged SRAM words (the runner and the comparison: tests/helpers/hdl_parity.py)."""

import struct

import pytest

from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.exchange import Step, encode_program

from helpers.hdl_parity import compare


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


@pytest.mark.parametrize("tiles,lat", [(3, 2), (2, 2), (4, 3)])
def test_spmd_barriers_exchange_vs_model(tiles, lat):
    cfg = ArrayConfig(tiles=tiles, contexts=6, sram_bytes=16 * 1024, exchange_latency=lat)
    code = asm.program(spmd_program())
    images = [[(0, code), (0x400, xprogram(lat))] for _ in range(tiles)]
    got = compare(cfg, images, 400, [(0x600, 0x610), (0x680, 0x690), (0x700, 0x704)])
    assert got["status"] == "halted"


def test_exchange_fault_vs_model():
    cfg = ArrayConfig(tiles=3, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
    code = asm.program(spmd_program())
    bad = encode_program([Step.send_recv(0x600), Step.send_recv(None, 7, 0x680)])  # src 7 >= N
    images = [[(0, code), (0x400, xprogram(2))], [(0, code), (0x400, bad)],
              [(0, code), (0x400, xprogram(2))]]
    got = compare(cfg, images, 400, [(0x600, 0x610), (0x680, 0x690)])
    assert got["status"] == "fault"


def test_timeout_vs_model():
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
    code = asm.program(spmd_program())
    images = [[(0, code), (0x400, xprogram(2))] for _ in range(2)]
    got = compare(cfg, images, 41, [(0x600, 0x610)])
    assert got["status"] == "timeout" and got["cycles"] == 41


@pytest.mark.parametrize("end", ["ebreak", "ecall"])
def test_run_ends_during_other_tiles_exchange(end):
    # Tile 0 (xprog = 0) resumes right after the release and ends the run (ebreak: fault;
    # ecall: the last context halts) while tile 1 is still receiving every cycle. The
    # exchange steps after the run's last cycle must leave no trace.
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
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


def test_fault_stops_an_array_without_matrix_engines():
    # Written for hdl mutant M0537d8 (tessera/hdl/tile/tile.py: in a tile without a matrix
    # engine, engine_macs = 0, the `faulted` output not driven, so a fault never reached the
    # stop controller), which survived: every other Amaranth array test uses tiles with an
    # engine. §7 "Stop": a fault stops the whole array D cycles after it becomes visible.
    # Tile 1's context 0 loads a word from address 1 (misaligned_load, addr 1); every other
    # context counts to 200 before its ecall, so without the stop the run would last about
    # 200 · 3 turns · 6 cycles, not the few dozen cycles of the fault.
    from tessera.spec.faults import FaultCause
    a = asm
    prog = [
        a.csrr(5, Csr.TILE_ID), a.csrr(6, Csr.CONTEXT_ID),
        a.addi(7, 0, 1),
        a.bne(5, 7, 12), a.bne(6, 0, 8),       # tile 1, context 0:
        a.lw(8, 1, 0),                          #   misaligned_load at address 1
        a.addi(9, 0, 200),                      # everyone else: 200 turns of a loop
        a.addi(10, 10, 1), a.bne(10, 9, -4),
        a.ecall(),
    ]
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2,
                      engine_macs=0)
    code = asm.program(prog)
    got = compare(cfg, [[(0, code)], [(0, code)]], 5000, [])
    assert got["status"] == "fault" and got["cycles"] < 100
    f = got["tiles"][1]["fault"]
    assert (f["context"], f["cause"], f["pc"], f["addr"]) == \
        (0, FaultCause.MISALIGNED_LOAD.label, 4 * prog.index(a.lw(8, 1, 0)), 1)
    assert got["tiles"][0]["fault"] is None


def test_a_kept_simulator_runs_like_a_new_one():
    """helpers.hdl_parity keeps a worker's simulators and starts each run with
    ``Simulator.reset()``: a run after another one that left state everywhere (a fault
    record, FAULT and HALTED contexts, registers, an SRAM word at 0x600) gives the same result
    as on a new simulator, and nothing of the first run shows (0x600 reads 0)."""
    from helpers.hdl_parity import rtl_run
    from tessera.spec.faults import FaultCause
    a = asm
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2,
                      engine_macs=0)
    faulting = asm.program([a.addi(5, 0, 0x55), a.sw(5, 0x600, 0), a.csrr(6, Csr.CONTEXT_ID),
                            a.bne(6, 0, 8), a.lw(8, 1, 0), a.ecall()])
    halting = asm.program([a.addi(5, 0, 7), a.sw(5, 0x608, 0), a.ecall()])
    region = [(0x600, 0x610)]
    first = rtl_run(cfg, [[(0, faulting)]] * 2, 400, region)           # kept after the run
    assert first["status"] == "fault" and first["mem"][0][0] == 0x55
    assert first["tiles"][0]["fault"]["cause"] == FaultCause.MISALIGNED_LOAD.label
    after = rtl_run(cfg, [[(0, halting)]] * 2, 400, region)            # the kept one, reset
    new = rtl_run(cfg, [[(0, halting)]] * 2, 400, region, fresh=True)
    assert after == new
    assert after["status"] == "halted" and after["mem"] == [[0, 0, 7, 0]] * 2
    assert all(t["fault"] is None for t in after["tiles"])
    assert rtl_run(cfg, [[(0, faulting)]] * 2, 400, region) == first
