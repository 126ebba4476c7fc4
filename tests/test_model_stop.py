"""Golden model: the array-wide stop of contract v2 (docs/architecture.md §7 "Array decisions",
"Stop", "Timeout"). A fault is visible from t + 5 (instruction issued at t); if the stop
condition first holds at v the array stops at the end of t_s = v + D − 1 (D = ceil(log2 N) + 2)
and every instruction issued at cycles <= t_s on every tile takes effect; every fault of those
cycles is recorded, a tile keeping its first; cycles = v + D. Every expected value is derived by
hand in the comments."""

import struct

from tessera.golden_model import Array
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState
from tessera.toolchain import asm

SRAM = 16 * 1024
N, T = 4, 6          # D(4) = 2 + 2 = 4
OUT = 0x200


def programs():
    """Tile 0 faults at t_f = 18; tile 1 keeps storing; tile 2 faults inside the stop window;
    tile 3 would fault only after it."""
    return {
        # context c issues instruction i at 6i + c: ebreak (i = 3) of context 0 at 18
        0: [asm.nop()] * 3 + [asm.ebreak()],
        # loop: i = 3j: csrr t0, cycle; i = 3j + 1: sw t0, OUT(x0); i = 3j + 2: j 0
        1: [asm.csrr(5, Csr.CYCLE), asm.sw(5, OUT, 0), asm.j(-8)],
        # ebreak (i = 4) of context 0 at 24, 1 at 25, 2 at 26
        2: [asm.nop()] * 4 + [asm.ebreak()],
        # ebreak (i = 5) of context 0 at 30
        3: [asm.nop()] * 5 + [asm.ebreak()],
    }


def make():
    arr = Array(ArrayConfig(tiles=N, contexts=T, sram_bytes=SRAM))
    for t, words in programs().items():
        arr.write_mem(t, 0, asm.program(words))
    arr.start(0)
    return arr


def word(arr, t, addr):
    return struct.unpack("<I", arr.read_mem(t, addr, 4))[0]


def test_other_tiles_run_until_the_stop_and_their_stores_land():
    arr = make()
    res = arr.run(1000)
    # tile 0's ebreak issued at 18 is visible from v = 23: t_s = v + D - 1 = 26, cycles = 27
    assert res.status == "fault" and res.cycles == 27
    f0 = res.tiles[0].fault
    assert (f0.context, f0.cause, f0.pc, f0.addr) == (0, FaultCause.BREAKPOINT, 12, 12)
    # tile 1: the stores of the window land. Its sw (i = 3j + 1) issues at 6 + c (j = 0) and
    # 24 + c (j = 1); issued <= t_s = 26: contexts 0, 1, 2 of j = 1, each storing its cycle
    # CSR of i = 3 (18 + c). The last store is context 2's (issued 26, M at 30 > t_s: an
    # instruction issued <= t_s takes effect): OUT = 20. (v1's stop at the end of 18 gave 11.)
    assert word(arr, 1, OUT) == 20
    # tile 1 retired: context c issued c + 6i <= 26: c = 0..2: i = 0..4 (5), c = 3..5: 4
    assert res.tiles[1].counters["retired"] == 3 * 5 + 3 * 4
    assert all(c.state == ContextState.RUNNING for c in res.tiles[1].contexts)
    assert res.tiles[1].fault is None


def test_faults_inside_the_stop_window_are_recorded_first_kept():
    arr = make()
    res = arr.run(1000)
    # tile 0: contexts 1..5 issue the same ebreak at 19..23 <= t_s = 26: all FAULT; the tile
    # keeps its first record (context 0's, visible from 23; theirs from 24..28)
    assert [c.state for c in res.tiles[0].contexts] == [ContextState.FAULT] * 6
    assert [c.pc for c in res.tiles[0].contexts] == [12] * 6
    assert res.tiles[0].fault.context == 0
    # tile 2: ebreak of contexts 0, 1, 2 at 24, 25, 26 <= t_s: recorded (context 0, pc 16);
    # contexts 3..5 issued their 4th nop (pc 12) at 21..23 and nothing after: RUNNING, pc 16
    f2 = res.tiles[2].fault
    assert (f2.context, f2.cause, f2.pc, f2.addr) == (0, FaultCause.BREAKPOINT, 16, 16)
    assert [c.state for c in res.tiles[2].contexts] == [ContextState.FAULT] * 3 \
        + [ContextState.RUNNING] * 3
    assert [c.pc for c in res.tiles[2].contexts] == [16] * 6
    # tile 3: its ebreak would issue at 30 > t_s: no fault; context c's last issue: c + 6i <= 26
    # (c = 0..2: i = 4, the nop at 16 -> pc 20; c = 3..5: i = 3 -> pc 16)
    assert res.tiles[3].fault is None
    assert [c.pc for c in res.tiles[3].contexts] == [20, 20, 20, 16, 16, 16]
    assert all(c.state == ContextState.RUNNING for c in res.tiles[3].contexts)
    # counters: tile 0 has a RUNNING context until 27 (context 5's FAULT visible from 28):
    # compute for all 27 cycles
    assert res.tiles[0].counters["compute"] == 27


def test_timeout_inside_the_stop_window_has_status_fault():
    arr = make()
    # max_cycles = 25 <= t_s = 26: §7 "Timeout": cycles = max_cycles, status fault (a fault of
    # cycles < 25 is recorded: tile 0's at 18 and tile 2's at 24)
    res = arr.run(25)
    assert res.status == "fault" and res.cycles == 25
    assert res.tiles[0].fault.context == 0 and res.tiles[2].fault.pc == 16
    assert res.not_arrived == []
    # tile 1: sw issued <= 24: context 0's of j = 1 (issued 24, stores its csrr of 18)
    assert word(arr, 1, OUT) == 18
    # a faulted run is over: calling again returns the same result
    again = arr.run(1000)
    assert again.status == "fault" and again.cycles == 25


def test_halted_contexts_and_a_late_fault_give_status_fault():
    # 2 tiles (D = 3). Tile 1: every context ecalls at once. Tile 0: contexts 0..4 ecall,
    # context 5 branches into an illegal word. The halt condition (every context HALTED) never
    # holds; the fault decides the stop.
    cfg = ArrayConfig(tiles=2, contexts=T, sram_bytes=SRAM)
    arr = Array(cfg)
    t0 = [asm.csrr(5, Csr.CONTEXT_ID), asm.addi(6, 0, 5), asm.beq(5, 6, 8), asm.ecall(),
          0xFFFFFFFF]
    # context c < 5: csrr 0+c, addi 6+c, beq (not taken) 12+c, ecall 18+c -> HALTED from 23+c
    # context 5: csrr 5, addi 11, beq taken 17 -> pc 16, illegal word issued at 23, visible 28
    arr.write_mem(0, 0, asm.program(t0))
    arr.write_mem(1, 0, asm.program([asm.ecall()]))
    res = arr.run(1000)
    # no cycle with every context HALTED; the fault of 23 is visible from 28: cycles = 31
    assert res.status == "fault" and res.cycles == 28 + 3
    f = res.tiles[0].fault
    assert (f.context, f.cause, f.pc, f.addr) == (5, FaultCause.ILLEGAL_INSTRUCTION, 16,
                                                  0xFFFFFFFF)
    assert [c.state for c in res.tiles[0].contexts] == [ContextState.HALTED] * 5 \
        + [ContextState.FAULT]
