"""Golden model: every fault cause with its pc/addr, stop timing and final state
(docs/architecture.md §2, §3.1, §7), contract v2: a fault of an instruction issued at t is
visible from v = t + 5 and the run ends with cycles = v + D (D = ceil(log2 N) + 2); every
instruction issued up to t_s = v + D - 1 on every tile takes effect."""

import json

import pytest

from tessera.golden_model import Array
from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState

SRAM = 16 * 1024
CFG = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM)     # D = 2


def run(words, cfg=CFG, entry=0, per_tile=None):
    arr = Array(cfg)
    arr.write_mem(None, 0, asm.program(words))
    for t, w in (per_tile or {}).items():
        arr.write_mem(t, 0, asm.program(w))
    arr.start(entry)
    return arr, arr.run(10_000)


def fault_of(res, tile=0):
    f = res.tiles[tile].fault
    return (f.context, FaultCause(f.cause), f.pc, f.addr)


@pytest.mark.parametrize("words,exp", [
    # misaligned jal target: pc = jal, addr = target; no link write (checked below)
    ([asm.nop(), asm.jal(1, 6)], (0, FaultCause.MISALIGNED_FETCH, 4, 10)),
    ([asm.addi(5, 0, 2), asm.beq(0, 0, 10)], (0, FaultCause.MISALIGNED_FETCH, 4, 14)),
    # jalr: bit 0 cleared, bit 1 set -> misaligned
    ([asm.addi(5, 0, 0x33), asm.jalr(1, 5, 0)], (0, FaultCause.MISALIGNED_FETCH, 4, 0x32)),
    # aligned target outside the SRAM: the jump retires, the fetch faults
    ([*asm.li(5, SRAM), asm.jalr(2, 5, 0)], (0, FaultCause.ACCESS_FAULT_FETCH, SRAM, SRAM)),
    ([asm.ebreak()], (0, FaultCause.BREAKPOINT, 0, 0)),
    ([asm.nop(), asm.ebreak()], (0, FaultCause.BREAKPOINT, 4, 4)),
    ([asm.lw(1, 2, 0)], (0, FaultCause.MISALIGNED_LOAD, 0, 2)),
    ([asm.lh(1, 1, 0)], (0, FaultCause.MISALIGNED_LOAD, 0, 1)),
    ([*asm.li(5, SRAM), asm.lb(1, 0, 5)], (0, FaultCause.ACCESS_FAULT_LOAD, 4, SRAM)),  # li = lui only
    ([*asm.li(5, SRAM + 2), asm.lw(1, 0, 5)], (0, FaultCause.MISALIGNED_LOAD, 8, SRAM + 2)),
    ([asm.addi(5, 0, -4), asm.lw(1, 0, 5)], (0, FaultCause.ACCESS_FAULT_LOAD, 4, 0xFFFFFFFC)),
    ([asm.sw(1, 6, 0)], (0, FaultCause.MISALIGNED_STORE, 0, 6)),
    ([asm.sh(1, 3, 0)], (0, FaultCause.MISALIGNED_STORE, 0, 3)),
    ([*asm.li(5, SRAM), asm.sb(1, 5, 5)], (0, FaultCause.ACCESS_FAULT_STORE, 4, SRAM + 5)),
    ([*asm.li(5, SRAM), asm.sh(1, 1, 5)], (0, FaultCause.MISALIGNED_STORE, 4, SRAM + 1)),
])
def test_fault_causes(words, exp):
    arr, res = run(words + [asm.ecall()])
    assert res.status == "fault"
    assert fault_of(res) == exp
    assert res.tiles[0].contexts[0].state == ContextState.FAULT
    assert res.tiles[0].contexts[0].pc == exp[2]
    assert int(arr.regs[0, 0, 1]) == 0       # faulting instruction had no effect


def test_fault_stop_timing_and_other_contexts():
    # context 0 faults on its 2nd instruction (issued at T = 6): visible from v = 11, the array
    # stops at the end of t_s = v + D - 1 = 12, cycles = 13. Contexts 1..5 issue the same
    # faulting lw at 7..11 <= t_s: they fault too (the tile keeps context 0's record, the
    # first visible); context 0 is FAULT from 11 and does not issue at 12.
    arr, res = run([asm.addi(6, 0, 1), asm.lw(1, 2, 0), asm.addi(7, 0, 1)])
    assert res.status == "fault" and res.cycles == 13
    assert fault_of(res) == (0, FaultCause.MISALIGNED_LOAD, 4, 2)
    for c in range(6):
        ctx = res.tiles[0].contexts[c]
        assert ctx.state == ContextState.FAULT and ctx.regs[6] == 1 and ctx.pc == 4
        assert ctx.regs[7] == 0 and ctx.retired == 1
    assert res.tiles[0].counters["retired"] == 6
    # every context FAULT only from 16 (context 5's fault of 11): compute in all 13 cycles
    assert res.tiles[0].counters["compute"] == 13


def test_misaligned_entry_faults_at_cycle_0():
    arr, res = run([asm.nop()], entry=2)
    # the fetch fault of cycle 0 is visible from 5: cycles = 5 + D = 7
    assert res.status == "fault" and res.cycles == 7
    assert fault_of(res) == (0, FaultCause.MISALIGNED_FETCH, 2, 2)


def test_entry_outside_sram():
    arr, res = run([asm.nop()], entry=SRAM)
    assert fault_of(res) == (0, FaultCause.ACCESS_FAULT_FETCH, SRAM, SRAM)


def test_faults_on_several_tiles_same_cycle_and_others_complete():
    cfg = ArrayConfig(tiles=3, contexts=6, sram_bytes=SRAM)       # D = 4
    # tile 0 and 2 fault at cycle 6 (context 0, 2nd insn): visible from 11, t_s = 14,
    # cycles = 15. Tile 1 keeps running: addi x7 of context c at 6 + c, ecall at 12 + c
    # (contexts 0..2 at 12..14 <= t_s: HALTED; contexts 3..5 still RUNNING).
    ok = [asm.addi(6, 0, 1), asm.addi(7, 0, 5), asm.ecall()]
    arr, res = run([asm.addi(6, 0, 1), asm.ebreak(), asm.ecall()], cfg=cfg,
                   per_tile={1: ok, 2: [asm.addi(6, 0, 1), 0xFFFFFFFF]})
    assert res.status == "fault" and res.cycles == 15
    assert fault_of(res, 0) == (0, FaultCause.BREAKPOINT, 4, 4)
    assert fault_of(res, 2) == (0, FaultCause.ILLEGAL_INSTRUCTION, 4, 0xFFFFFFFF)
    assert res.tiles[1].fault is None
    assert [c.regs[7] for c in res.tiles[1].contexts] == [5] * 6
    assert [c.state for c in res.tiles[1].contexts] == [ContextState.HALTED] * 3 \
        + [ContextState.RUNNING] * 3
    d = json.loads(res.dumps())
    assert d["status"] == "fault"
    assert d["tiles"][0]["fault"] == {"context": 0, "cause": "breakpoint", "pc": 4, "addr": 4}
    assert d["tiles"][2]["fault"]["cause"] == "illegal_instruction"
    assert d["tiles"][1]["fault"] is None


def test_run_after_fault_returns_same_result():
    arr, res = run([asm.ebreak()])
    res2 = arr.run(100)
    assert res2.to_json() == res.to_json()


def test_bad_host_arguments():
    arr = Array(CFG)
    with pytest.raises(ValueError, match="tile 1"):
        arr.write_mem(1, 0, b"x")
    with pytest.raises(ValueError, match="addr 0x3fff len 2"):
        arr.write_mem(0, SRAM - 1, b"xy")
    with pytest.raises(ValueError, match="addr"):
        arr.read_mem(0, -1, 4)
    with pytest.raises(ValueError, match="entry"):
        arr.start(-4)
    with pytest.raises(ValueError, match="max_cycles"):
        arr.run(-1)
    with pytest.raises(TypeError, match="ArrayConfig"):
        Array({"tiles": 1})
