"""Golden model: division turns (docs/architecture.md §4, "Division").

A division occupies DIV_TURNS = 10 issue slots of its context; only the last one has an effect.
Every expected cycle below is derived by hand: instruction slot i of context c issues at
i*T + c, and a division first issued in slot i retires in slot i + 9. Contract v2: a run whose
last ecall issues at t (slot i of context T-1: t = iT + T - 1) has every context HALTED from
t + 5 and ends with cycles = t + 5 + D, D = ceil(log2 N) + 2; the fetch at t sees the stores
issued at <= t-5.
"""

import pytest

from tessera.golden_model import Array
from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.isa import DIV_BITS_PER_TURN, DIV_TURNS

SRAM = 16 * 1024
M32 = 0xFFFFFFFF


def make(cfg, words, per_tile=None, trace=False):
    arr = Array(cfg, trace=trace)
    arr.write_mem(None, 0, asm.program(words))
    for t, w in (per_tile or {}).items():
        arr.write_mem(t, 0, asm.program(w))
    return arr


def test_turn_constants():
    # one set-up turn, 32 / bits-per-turn iteration turns, one sign-fix turn (§4)
    assert DIV_BITS_PER_TURN == 4 and DIV_TURNS == 10


@pytest.mark.parametrize("T", [6, 8, 16])
def test_division_retires_nine_slots_later(T):
    cfg = ArrayConfig(tiles=2, contexts=T, sram_bytes=SRAM)
    arr = make(cfg, [
        asm.addi(11, 0, -7),           # slot 0
        asm.addi(12, 0, 2),            # slot 1
        asm.div(10, 11, 12),           # slots 2..11, retires in slot 11
        asm.csrr(13, Csr.CYCLE),       # slot 12
        asm.csrr(14, Csr.INSTRET),     # slot 13
        asm.ecall(),                   # slot 14
    ], trace=True)
    res = arr.run(100_000)
    # ecall slot 14 of context T-1 at 15T - 1; D(2) = 3: cycles = 15T - 1 + 5 + 3
    assert res.status == "halted" and res.cycles == 15 * T + 7
    for t in range(2):
        for c in range(T):
            assert int(arr.regs[t, c, 10]) == (-3) & M32        # truncation toward zero
            assert int(arr.regs[t, c, 13]) == 12 * T + c
            assert int(arr.regs[t, c, 14]) == 4                 # addi, addi, div, csrr
    for t in res.tiles:
        assert t.counters["retired"] == 6 * T                   # 6 instructions, 15 slots
        # division turns are compute; halted from 15T + 4 (the last HALTED visible)
        assert t.counters["compute"] == 15 * T + 4 and t.counters["halted"] == 3
    divs = [r for r in arr.trace if r["pc"] == 8]
    assert len(divs) == 2 * T                                   # one record per division
    assert sorted({r["cycle"] - r["context"] for r in divs}) == [11 * T]


def test_timeout_during_division_has_no_effect_and_continues():
    T = 6
    cfg = ArrayConfig(tiles=1, contexts=T, sram_bytes=SRAM)
    prog = [asm.addi(11, 0, 100), asm.addi(12, 0, 7), asm.remu(10, 11, 12), asm.ecall()]
    arr = make(cfg, prog)
    res = arr.run(20)              # context 0: division turns at 12, 18 (turns 0, 1)
    assert res.status == "timeout" and res.cycles == 20
    ctx = res.tiles[0].contexts[0]
    assert ctx.pc == 8 and ctx.regs[10] == 0 and ctx.retired == 2
    res = arr.run(100_000)         # the run continues where it stopped
    # ecall in slot 12: context 5 at 12T + 5 = 77; D(1) = 2: cycles = 77 + 5 + 2 = 13T + 6
    assert res.status == "halted" and res.cycles == 13 * T + 6
    assert [int(arr.regs[0, c, 10]) for c in range(T)] == [2] * T


def test_same_word_twice_takes_twenty_turns():
    # a finished division resets the turn counter: an identical next word starts at turn 0
    T = 6
    cfg = ArrayConfig(tiles=1, contexts=T, sram_bytes=SRAM)
    arr = make(cfg, [asm.addi(11, 0, 81), asm.addi(12, 0, 3), asm.divu(11, 11, 12),
                     asm.divu(11, 11, 12), asm.ecall()])
    res = arr.run(100_000)
    # slots: 0, 1, 2..11, 12..21, ecall in slot 22: 22T + 5, + 5 + D(1) = 2 -> 23T + 6
    assert res.status == "halted" and res.cycles == 23 * T + 6
    assert [int(arr.regs[0, c, 11]) for c in range(T)] == [9] * T


def test_division_word_rewritten_by_another_context_restarts():
    # T = 6. Context 0 divides at address 8 (DIVU 0/0 = 0xFFFFFFFF); contexts 1..5 overwrite
    # that word with REMU (0 rem 0 = 0) in slot 4, issued at 25..29. Context 0's division
    # turns are at 12, 18, 24 (DIVU, turns 0..2: the fetch at 24 sees stores issued <= 19,
    # none) and at 30 it fetches REMU (stores issued <= 25 are visible: context 1's): a
    # different word, so turn 0 again: turns at 30 + 6j, retire at 30 + 54 = 84, ecall at 90
    # (the last one; the others ecall at 30 + c): cycles = 90 + 5 + D(1) = 97.
    T = 6
    new = asm.remu(10, 11, 12)
    prog = [
        asm.csrr(7, Csr.CONTEXT_ID),    # 0
        asm.bne(7, 0, 12),              # 4: contexts 1..5 -> 16
        asm.divu(10, 11, 12),           # 8
        asm.ecall(),                    # 12
        *asm.li(5, new),                # 16, 20 (lui + addi)
        asm.sw(5, 8, 0),                # 24: issue cycles 25..29 (slot 4)
        asm.ecall(),                    # 28
    ]
    assert len(asm.li(5, new)) == 2
    arr = make(ArrayConfig(tiles=1, contexts=T, sram_bytes=SRAM), prog, trace=True)
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 97
    assert int(arr.regs[0, 0, 10]) == 0                 # REMU executed, not DIVU
    rec = [r for r in arr.trace if r["context"] == 0 and r["pc"] == 8]
    assert len(rec) == 1 and rec[0]["insn"] == new and rec[0]["cycle"] == 84
    assert res.tiles[0].contexts[0].retired == 4


def test_divergent_tiles_and_words_in_one_slot():
    # tile 0 divides, tile 1 runs two nops then the same code without division: the slot's
    # tiles are in different turns and words; each tile keeps its own counter.
    T = 6
    cfg = ArrayConfig(tiles=3, contexts=T, sram_bytes=SRAM)
    base = [asm.addi(11, 0, 50), asm.addi(12, 0, -6)]
    arr = make(cfg, base + [asm.rem(10, 11, 12), asm.ecall()], per_tile={
        1: base + [asm.nop(), asm.ecall()],
        2: base + [asm.nop(), asm.div(10, 11, 12), asm.ecall()],
    })
    res = arr.run(100_000)
    assert res.status == "halted"
    # tile 2: the last ecall in slot 13, 13T + 5; D(3) = 4: cycles = 13T + 5 + 5 + 4 = 14T + 8
    assert res.cycles == 14 * T + 8
    assert [int(arr.regs[0, c, 10]) for c in range(T)] == [2] * T           # 50 rem -6
    assert [int(arr.regs[1, c, 10]) for c in range(T)] == [0] * T
    assert [int(arr.regs[2, c, 10]) for c in range(T)] == [(-8) & M32] * T  # 50 / -6
    # halted from the tile's last ecall (slot i of context 5: iT + 5) + 5
    assert res.tiles[0].counters["halted"] == res.cycles - (12 * T + 5 + 5)  # ecall slot 12
    assert res.tiles[1].counters["halted"] == res.cycles - (3 * T + 5 + 5)   # ecall slot 3


def test_interleaved_divisions_of_all_contexts_are_independent():
    # every context divides its own operands at the same time (private division state)
    T = 6
    cfg = ArrayConfig(tiles=1, contexts=T, sram_bytes=SRAM)
    arr = make(cfg, [asm.csrr(11, Csr.CONTEXT_ID), asm.addi(12, 11, 1),
                     asm.addi(11, 11, 100), asm.div(10, 11, 12), asm.rem(13, 11, 12),
                     asm.ecall()])
    res = arr.run(100_000)
    # slots 0,1,2, 3..12, 13..22, ecall 23: 23T + 5, + 5 + D(1) = 2
    assert res.status == "halted" and res.cycles == 24 * T + 6
    for c in range(T):
        assert int(arr.regs[0, c, 10]) == (100 + c) // (c + 1)
        assert int(arr.regs[0, c, 13]) == (100 + c) % (c + 1)


def test_division_word_replaced_by_a_non_division():
    # as above, but the new word is `addi a0, x0, 5`: context 0 executes it at 30 (the
    # division's turns at 12..24 had no effect), then its ecall at 36 (the last): C = 36 + 5 + 2
    T = 6
    new = asm.addi(10, 0, 5)
    prog = [asm.csrr(7, Csr.CONTEXT_ID), asm.bne(7, 0, 12), asm.divu(10, 11, 12), asm.ecall(),
            *asm.li(5, new), asm.sw(5, 8, 0), asm.ecall()]
    arr = make(ArrayConfig(tiles=1, contexts=T, sram_bytes=SRAM), prog)
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 43
    assert int(arr.regs[0, 0, 10]) == 5 and res.tiles[0].contexts[0].retired == 4


def test_host_start_during_division_resets_the_turn_counter():
    T = 6
    cfg = ArrayConfig(tiles=1, contexts=T, sram_bytes=SRAM)
    prog = [asm.addi(11, 0, 100), asm.addi(12, 0, 7), asm.remu(10, 11, 12), asm.ecall()]
    arr = make(cfg, prog)
    assert arr.run(20).status == "timeout"      # context 0 in turn 2 of its division
    arr.start(0)
    res = arr.run(100_000)                      # a fresh run: division from turn 0 again
    assert res.status == "halted" and res.cycles == 13 * T + 6     # as in the timeout test
    assert [int(arr.regs[0, c, 10]) for c in range(T)] == [2] * T
