"""Golden model: every fault cause with its pc/addr, stop timing and final state
(docs/architecture.md §2, §3.1, §7)."""

import json

import pytest

from tessera.golden_model import Array
from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState

SRAM = 16 * 1024
CFG = ArrayConfig(tiles=1, contexts=4, sram_bytes=SRAM)


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
    # context 0 faults on its 2nd instruction (cycle 4); contexts 1..3 executed their first
    # instruction at 1..3 and nothing after cycle 4 happens.
    arr, res = run([asm.addi(6, 0, 1), asm.lw(1, 2, 0), asm.addi(7, 0, 1)])
    assert res.status == "fault" and res.cycles == 5
    for c in range(1, 4):
        ctx = res.tiles[0].contexts[c]
        assert ctx.state == ContextState.RUNNING and ctx.regs[6] == 1 and ctx.pc == 4
        assert ctx.retired == 1
    assert res.tiles[0].contexts[0].retired == 1
    assert res.tiles[0].counters["retired"] == 4
    assert res.tiles[0].counters["compute"] == 5


def test_misaligned_entry_faults_at_cycle_0():
    arr, res = run([asm.nop()], entry=2)
    assert res.status == "fault" and res.cycles == 1
    assert fault_of(res) == (0, FaultCause.MISALIGNED_FETCH, 2, 2)


def test_entry_outside_sram():
    arr, res = run([asm.nop()], entry=SRAM)
    assert fault_of(res) == (0, FaultCause.ACCESS_FAULT_FETCH, SRAM, SRAM)


def test_faults_on_several_tiles_same_cycle_and_others_complete():
    cfg = ArrayConfig(tiles=3, contexts=4, sram_bytes=SRAM)
    # tile 0 and 2 fault at cycle 4 (context 0, 2nd insn); tile 1 writes a register then.
    ok = [asm.addi(6, 0, 1), asm.addi(7, 0, 5), asm.ecall()]
    arr, res = run([asm.addi(6, 0, 1), asm.ebreak(), asm.ecall()], cfg=cfg,
                   per_tile={1: ok, 2: [asm.addi(6, 0, 1), 0xFFFFFFFF]})
    assert res.status == "fault" and res.cycles == 5
    assert fault_of(res, 0) == (0, FaultCause.BREAKPOINT, 4, 4)
    assert fault_of(res, 2) == (0, FaultCause.ILLEGAL_INSTRUCTION, 4, 0xFFFFFFFF)
    assert res.tiles[1].fault is None
    assert res.tiles[1].contexts[0].regs[7] == 5
    assert res.tiles[1].contexts[1].regs[7] == 0
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
