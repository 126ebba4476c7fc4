"""Golden model: the tiles' matrix engines (docs/architecture.md §12, with §4, §7, §8).

Every expected cycle, counter and value below is derived by hand from the contract text (the
derivation is in the comments); output values are compared with formulas written here or with
the independent numpy references of ``tessera.golden_model.kernels`` (``matmul``, ``conv2d``,
``multiply_by_quantized_multiplier``, ``requantize``), never with recorded model output.

Program layout used throughout (:func:`image`): a 3-word dispatch at 0 (``csrr x6,
context_id``; ``slli x7, x6, 7``; ``jalr x0, 0x80(x7)``) sends context c to its own code at
0x80·(c+1). With T = 6 contexts and no retries, instruction j of context c's code issues at
t = (3 + j)·6 + c (§4: instruction i of context c issues at i·T + c). Descriptors live at
0x400.. (so ``li`` is one ``addi``), data at 0x800 and above.

Engine timing (§12, contract v2): an ``mrun`` issued at t is accepted in its M cycle
x = t + 4; step s is the s-th engine cycle after x (cycles x+1, x+2, … minus those where a
LOAD/STORE issued four cycles earlier is in M, or the tile is in its exchange phase); the
engine is busy from x through its last step; ``mwait``/``mrun`` whose M (issue + 4) is a busy
cycle retry in the next slot. A run whose last ecall issues at t ends with cycles = t + 5 + D
(D = 2 for one tile); an engine fault in step s at cycle k is visible from k + 1 and ends the
run with cycles = k + 1 + D (§7).
"""

import numpy as np
import pytest

from tessera.golden_model import Array
from tessera.golden_model.decode import Op, decode
from tessera.golden_model.engine import mbqm, mbqm_array
from tessera.golden_model.kernels import (conv2d, matmul, multiply_by_quantized_multiplier,
                                          requantize)
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.engine import Descriptor, Flag, Mode, command_steps
from tessera.spec.exchange import Step, encode_program
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState
from tessera.toolchain import asm

from isa_contract import legal as contract_legal
from helpers.model_engine import (  # noqa: F401 (model_engine: an autouse fixture)
    SRAM, CFG, D0, D1, XP, A, W, P, OUT, CODE, model_engine, image, issue, params, make, i32,
    fault, wrap32, issuer, PC_MRUN, SA, SW, SP, SOUT, SOUT2, X_ROWS, W_ROW, RAW_ACC, X_ROWS5,
    RAW_ACC5, raw_small, run_cmd, fault_case, good, STD_MEM, check_fault)

# ------------------------------------------------------------------------------ timing
@pytest.mark.parametrize("J,last,mwait_at,cycles", [
    # S = 8 + 2C + KB*C + (KB-1)*J + J*OW + WRITE_DELAY = 8 + 2 + 1 + 0 + J + 10 = 21 + J
    # (WRITE_DELAY = 10, §12 "Step schedule"; J*OW = J < 10: the writes of elements j (step
    # s_j + 10 = 11 + j + 10) come after the last stream step 10 + J).
    # J = 2: S = 23, steps at 29..51, busy 28..51. mwait M = 34 + 6r: r = 3 gives M = 52 > 51:
    # retires at issue 48. csrr at 54 -> x10 = 54, ecall at 60 -> HALTED 65 -> cycles 67.
    (2, 51, 48, 67),
    # J = 5: S = 26, last step at 54: the mwait with M = 52 (issue 48) is still busy; issue 54
    # (M = 58) retires; csrr at 60, ecall at 66 -> cycles 66 + 5 + 2 = 73.
    (5, 54, 54, 73),
])
def test_step_timing_and_mwait_retire_cycle(J, last, mwait_at, cycles):
    assert command_steps(Descriptor.unpack(raw_small(J)[D0])) == 21 + J
    arr = make({0: issuer()}, raw_small(J))
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == cycles
    assert arr.last_engine == arr.engine         # the fast engine runs mrun/mwait itself
    assert int(arr.regs[0, 0, 10]) == mwait_at + 6
    c = res.tiles[0].counters
    assert c["engine"] == last - 28 + 1          # busy from x = 28 through the last step
    assert c["macs"] == 8 * 1 * J                # one stream step per element, 8 C MACs each
    # retired: context 0 = 3 dispatch + li, mrun, mwait (once), csrr, ecall = 8; others 3 + 1
    assert c["retired"] == 8 + 5 * 4
    assert (c["compute"], c["halted"]) == (cycles - 2, 2)     # halted: the last D cycles
    assert list(i32(arr, SOUT, 2 * J)[::2]) == RAW_ACC5[:J]


def test_mwait_with_idle_engine_retires_at_once():
    # no command: mwait (j0, t = 18, M = 22) retires, csrr (t = 24) reads 24
    arr = make({0: [asm.mwait(), asm.csrr(10, Csr.CYCLE), asm.ecall()]}, {})
    res = arr.run(1000)
    assert res.status == "halted" and int(arr.regs[0, 0, 10]) == 24
    assert res.tiles[0].counters["engine"] == 0


def test_loads_and_stores_in_m_stall_the_engine():
    # J = 2 (S = 8 + 2 + 1 + 0 + 2 + 10 = 23). Context 1 runs lw, sw, lw, sw, lw, sw from j0:
    # issued at 19 + 6j, in M at 23, 29, 35, 41, 47, 53. Engine cycles after x = 28 without
    # those: 30..34, 36..40, 42..46, 48..52 (20 steps), 54, 55, 56 -> the 23rd (last) step at
    # 56, busy 28..56 = 29 cycles. mwait M = 34 + 6r >= 57: r = 4 (issue 54, M 58); csrr at
    # 60; ecall at 66 -> cycles 66 + 5 + 2 = 73.
    mem_ops = [asm.lw(7, 0x7F0, 0), asm.sw(0, 0x7F8, 0)] * 3
    arr = make({0: issuer(), 1: [*mem_ops, asm.ecall()]}, raw_small(2))
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 73
    assert int(arr.regs[0, 0, 10]) == 60
    assert res.tiles[0].counters["engine"] == 29
    assert list(i32(arr, SOUT, 4)[::2]) == RAW_ACC[:2]


def test_exchange_phase_stalls_the_engine():
    # Context 0: j0 li x5 (18), j1 li x8 = XP (24), j2 csrw xprog (30), j3 mrun (36: x = 40),
    # j4 sync ARRAY (42): WAIT_ARRAY visible at 47 = k* (contexts 1..5 halted by 28), release
    # r = k* + D = 47 + 2 = 49 (N = 1). Program IDLE 3 (49, 50, 51), END at 52 = e. Context 0
    # RUNNING from 53; its next slot 54: j5 mwait (M = 58).
    # Engine (J = 2, S = 23): steps 0..7 at 41..48 (the barrier wait is no exchange phase),
    # none at 49..52, steps 8..22 at 53..67. mwait M = 58, 64 busy; issue 66 (M = 70) retires;
    # csrr at 72; ecall at 78 -> cycles 78 + 5 + 2 = 85. engine = 40..67 = 28 cycles,
    # exchange = 4.
    code = [*asm.li(5, D0), *asm.li(8, XP), asm.csrw(Csr.XPROG, 8), asm.mrun(5),
            asm.sync("ARRAY"), asm.mwait(), asm.csrr(10, Csr.CYCLE), asm.ecall()]
    mem = raw_small(2)
    mem[XP] = encode_program([Step.idle(3), Step.end()])
    arr = make({0: code}, mem)
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 85
    assert int(arr.regs[0, 0, 10]) == 72
    c = res.tiles[0].counters
    assert (c["engine"], c["exchange"]) == (28, 4)
    assert list(i32(arr, SOUT, 4)[::2]) == RAW_ACC[:2]


def test_back_to_back_commands_from_two_contexts():
    # Context 0: command J = 3 (S = 8 + 2 + 1 + 0 + 3 + 10 = 24) issued at 24: x = 28, steps
    # 29..52.
    # Context 1: li (19), mrun at 25 + 6r, M = 29 + 6r: busy at 29, 35, 41, 47; M = 53 is idle
    # (last step 52): accepted at x = 53 (issue 49). Its command J = 2 (S = 23): steps 54..76.
    # Context 0's mwait M = 34 + 6r: 34, 40, 46, 52 busy (its own command); 58 .. 76 busy
    # (context 1's, accepted at 53): M = 82 retires (issue 78); csrr 84; ecall 90.
    # Context 1: mwait from 55 (M = 59 + 6r): 59, 65, 71 busy; M = 77 retires (issue 73); csrr
    # 79; ecall 85. The last ecall is context 0's -> cycles = 90 + 5 + 2 = 97; engine =
    # (52 - 28 + 1) + (76 - 53 + 1) = 25 + 24 = 49; macs = (3 + 2) * 8.
    mem = raw_small(3)
    d1 = Descriptor(a_base=SA + 8, a_s0=8, w_base=SW, w_sm=8, c_base=SOUT2, c_s0=8,
                    p_base=SP, J0=2, C=1, mode=Mode.RAW)
    mem[D1] = d1.pack()
    arr = make({0: issuer(D0), 1: issuer(D1)}, mem)
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 97
    assert (int(arr.regs[0, 0, 10]), int(arr.regs[0, 1, 10])) == (84, 79)
    c = res.tiles[0].counters
    assert (c["engine"], c["macs"]) == (49, 40)
    assert c["retired"] == 2 * 8 + 4 * 4          # the retried mrun/mwait issues do not count
    assert list(i32(arr, SOUT, 6)[::2]) == RAW_ACC
    assert list(i32(arr, SOUT2, 4)[::2]) == RAW_ACC[1:3]


def test_timeout_continue_and_start_reset_the_engine():
    # J = 3 (S = 24): steps 29..52, busy 28..52 = 25; mwait M = 52 is busy, M = 58 retires
    # (issue 54), csrr 60, ecall 66 -> cycles 73. Stop at 35: busy 28..34 = 7 cycles.
    arr = make({0: issuer()}, raw_small(3))
    res = arr.run(35)
    assert res.status == "timeout" and res.tiles[0].counters["engine"] == 7
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 73 and int(arr.regs[0, 0, 10]) == 60
    assert res.tiles[0].counters["engine"] == 25
    # Stop in the middle again, then start: the engine is idle, the rerun is a fresh run.
    arr.write_mem(0, SOUT, bytes(24))
    arr.start(0)
    arr.run(30)
    arr.start(0)
    assert arr.counters["engine"][0] == 0
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 73 and int(arr.regs[0, 0, 10]) == 60
    assert res.tiles[0].counters["engine"] == 25
    assert list(i32(arr, SOUT, 6)[::2]) == RAW_ACC


def test_timeout_inside_the_write_tail_and_continue():
    # J = 2 (S = 23): stream steps 11, 12 at cycles 40, 41; steps 13..22 at 42..51 have no
    # read, the writes are steps 11 + WRITE_DELAY = 21 and 22 (cycles 50, 51). A run cut at
    # 45 (cycles 0..44) leaves both writes pending: no output yet, busy 28..44 = 17 cycles.
    # Continued, it is the run of test_step_timing_and_mwait_retire_cycle (J = 2): cycles 67,
    # x10 = 54, engine busy 28..51 = 24 cycles, both outputs written.
    mem = raw_small(2)
    mem[SOUT] = (0x5A5A5A5A).to_bytes(4, "little") * 4
    arr = make({0: issuer()}, mem)
    res = arr.run(45)
    assert res.status == "timeout" and res.tiles[0].counters["engine"] == 17
    assert list(i32(arr, SOUT, 4)[::2]) == [0x5A5A5A5A] * 2
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 67 and int(arr.regs[0, 0, 10]) == 54
    assert res.tiles[0].counters["engine"] == 24
    assert list(i32(arr, SOUT, 4)[::2]) == RAW_ACC[:2]


def test_halt_with_a_busy_engine_steps_until_the_stop():
    # §7 "Stop" (contract v2): every context HALTED at v stops the array at the end of
    # t_s = v + D - 1, and a busy matrix engine steps until t_s. Context 0: j0 li (18), j1 mrun
    # (24: x = 28, steps 29 + s), j2, j3 nop (30, 36), j4 ecall (42) without mwait: HALTED
    # from 47. Context 2: j0..j3 nop (20, 26, 32, 38), j4 ecall (44): HALTED from 49; the
    # others ecall at 19, 21, 22, 23. All HALTED from v = 49, t_s = 49 + 2 - 1 = 50, cycles =
    # 51. J = 2 (S = 23): stream steps 11, 12 (cycles 40, 41), then steps without a read; the
    # write of element 0 is step 11 + WRITE_DELAY = 21 = cycle 50 <= t_s (it happens), element
    # 1's is step 22 = 51 (it does not: the run ends with the write tail pending). macs: the
    # two stream steps = 2 * 8; engine busy 28..50 = 23 cycles (still busy at the end).
    mem = raw_small(2)
    mem[SOUT] = (0x5A5A5A5A).to_bytes(4, "little") * 4
    arr = make({0: [*asm.li(5, D0), asm.mrun(5), asm.nop(), asm.nop(), asm.ecall()],
                2: [asm.nop()] * 4 + [asm.ecall()]}, mem)
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 51
    assert list(i32(arr, SOUT, 4)[::2]) == [RAW_ACC[0], 0x5A5A5A5A]
    c = res.tiles[0].counters
    assert (c["macs"], c["engine"], c["halted"]) == (16, 23, 2)


def test_halt_before_the_first_write_leaves_every_output():
    # As above with the ecall at 36 (j3): all HALTED from 41, t_s = 42, cycles = 43. The
    # stream steps 11, 12 (cycles 40, 41) happen, the first write (step 19 = cycle 48) is
    # after t_s: no output is written. engine busy 28..42 = 15 cycles.
    mem = raw_small(2)
    mem[SOUT] = (0x5A5A5A5A).to_bytes(4, "little") * 4
    arr = make({0: [*asm.li(5, D0), asm.mrun(5), asm.nop(), asm.ecall()]}, mem)
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 43
    assert list(i32(arr, SOUT, 4)[::2]) == [0x5A5A5A5A, 0x5A5A5A5A]
    c = res.tiles[0].counters
    assert (c["macs"], c["engine"], c["halted"]) == (16, 15, 2)


# ------------------------------------------------------------------------------ memory order
def test_engine_read_does_not_see_a_store_in_m_one_cycle_later():
    # J = 2, no stall before: X(1) is read in step 12 at cycle 41. Context 2 stores to X(1)'s
    # first word at issue 38 (j3: (3+3)*6+2), M = 42: the engine read at 41 sees the old bytes.
    # Cycle 42 is then no engine cycle: steps 13..22 (S = 23) at 43..52.
    new = int.from_bytes(np.array([100, 0, 0, 0], np.int8).tobytes(), "little")
    assert len(asm.li(9, new)) == 1
    code2 = [*asm.li(9, new), asm.nop(), asm.nop(), asm.sw(9, SA + 8, 0), asm.ecall()]
    arr = make({0: issuer(), 2: code2}, raw_small(2))
    res = arr.run(1000)
    assert res.status == "halted"
    assert list(i32(arr, SOUT, 4)[::2]) == RAW_ACC[:2]
    assert res.tiles[0].counters["engine"] == 52 - 28 + 1


def test_engine_read_sees_an_earlier_store():
    # li of this word is lui + addi (j0, j1), the sw is j2 of context 2: issued at
    # (3 + 2) * 6 + 2 = 32, M = 36. Steps 0..6 at 29..35, none at 36, step 12 (X(1)) at 42:
    # after the store. X(1) = [100, -2, -3, -4, -5, -6, -7, -8]:
    # acc(1) = 1000 + 100 * 1 - (2*2 + 3*3 + ... + 8*8) = 1000 + 100 - (204 - 1) = 897.
    new = int.from_bytes(np.array([100, -2, -3, -4], np.int8).tobytes(), "little")
    assert len(asm.li(9, new)) == 2
    code2 = [*asm.li(9, new), asm.sw(9, SA + 8, 0), asm.ecall()]
    arr = make({0: issuer(), 2: code2}, raw_small(2))
    res = arr.run(1000)
    assert list(i32(arr, SOUT, 4)[::2]) == [1204, 897]


def test_load_in_m_after_the_engine_write_sees_it():
    # Context 5 issues j at (3 + j) * 6 + 5. J = 2: element 0's write is step s_0 +
    # WRITE_DELAY = 11 + 10 = 21. Run 1: lw x8 (j3, issued 41, M = 45) and lw x7 (j4, issued
    # 47, M = 51): no engine step at 45 and 51, so steps 0..15 at 29..44, 16..20 at 46..50, 21
    # (the write of element 0) at 52: both loads are before it and read the old word. Run 2:
    # only the lw at 47 (M = 51): step 21 is at 29 + 21 = 50, the load (M = 51) sees it.
    code5 = [asm.nop(), asm.nop(), asm.nop(), asm.lw(8, SOUT, 0), asm.lw(7, SOUT, 0),
             asm.ecall()]
    mem = raw_small(2)
    mem[SOUT] = (0x11111111).to_bytes(4, "little")
    arr = make({0: issuer(), 5: code5}, mem)
    res = arr.run(1000)
    assert res.status == "halted"
    assert (int(arr.regs[0, 5, 8]), int(arr.regs[0, 5, 7])) == (0x11111111, 0x11111111)

    code5 = [asm.nop(), asm.nop(), asm.nop(), asm.nop(), asm.lw(7, SOUT, 0), asm.ecall()]
    arr = make({0: issuer(), 5: code5}, mem)
    res = arr.run(1000)
    assert res.status == "halted" and int(arr.regs[0, 5, 7]) == 1204
    # the same with the retire trace: the lw's record (its issue cycle) carries the value
    arr = Array(CFG, trace=True)
    arr.write_mem(None, 0, image({0: issuer(), 5: code5}))
    for addr, data in mem.items():
        arr.write_mem(None, addr, data)
    assert arr.run(1000).status == "halted"
    (rec,) = [r for r in arr.trace if r["cycle"] == 47]
    assert (rec["context"], rec["rd"], rec["value"]) == (5, 7, 1204)


def test_store_in_m_after_the_engine_write_keeps_its_byte():
    # Element 0's write in step 11 + WRITE_DELAY = 21 at cycle 29 + 21 = 50 (4 bytes at OUT);
    # context 5's sb issued at 47 (j4, M = 51) of 0xAB to OUT + 1 comes later: the word is
    # 1204 = 0x4B4 with byte 1 replaced: 0x0000AB B4.
    code5 = [*asm.li(9, 0xAB), asm.nop(), asm.nop(), asm.nop(), asm.sb(9, SOUT + 1, 0),
             asm.ecall()]
    arr = make({0: issuer(), 5: code5}, raw_small(2))
    res = arr.run(1000)
    assert res.status == "halted"
    assert arr.read_mem(0, SOUT, 4) == bytes([0xB4, 0xAB, 0, 0])


def test_fetch_sees_the_engine_write_from_the_next_cycle():
    # Context 0: j0 nop (18), j1 li x5 (24), j2, j3 nop (30, 36), j4 mrun (42: x = 46), j5..j7
    # nop, j8 at 0xA0 issued at 66. Command RAW, C = 1, J = 1 (S = 8 + 2 + 1 + 0 + 1 + 10 = 22:
    # steps 47..68), element 0 written in step s_0 + WRITE_DELAY = 11 + 10 = 21 = cycle 68 at
    # C(0) = 0xA0 (a multiple of 8, as RAW requires) with acc = bias = the word of
    # `addi x9, x0, 77` (X = 0). An engine write of cycle k behaves like a store whose M is k:
    # fetches see it from k + 1 (§12 "Memory order"). Contexts 1, 2, 3 (code at
    # CODE·(1 + c): j0 at 18 + c, ..., j7 = jal 0xA0) fetch 0xA0 as their j8 at 18 + 48 + c:
    # context 0 at 66, context 1 at 67 (before k: the old word, x9 = 1), context 2 at 68 = k
    # (the old word, x9 = 1), context 3 at 69 = k + 1 (the new word, x9 = 77).
    placeholder = asm.addi(9, 0, 1)
    code0 = [asm.nop(), *asm.li(5, D0), asm.nop(), asm.nop(), asm.mrun(5), asm.nop(),
             asm.nop(), asm.nop(), placeholder, asm.mwait(), asm.ecall()]
    assert CODE + 4 * 8 == 0xA0
    codes = {0: code0}
    for c in (1, 2, 3):
        codes[c] = [asm.nop()] * 7 + [asm.jal(0, 0xA0 - ((1 + c) * CODE + 4 * 7))]
    desc = Descriptor(a_base=A, w_base=W, c_base=0xA0, p_base=P, C=1, mode=Mode.RAW)
    mem = {D0: desc.pack(), A: bytes(8), W: W_ROW.tobytes(), P: params([asm.addi(9, 0, 77)])}
    arr = make(codes, mem)
    res = arr.run(1000)
    assert res.status == "halted"
    assert [int(arr.regs[0, c, 9]) for c in range(4)] == [1, 1, 1, 77]


# ------------------------------------------------------------------------------ arithmetic
@pytest.mark.parametrize("flags", [0, Flag.A_UNSIGNED])
def test_raw_matmul_against_kernels(flags):
    rng = np.random.default_rng(5)
    J, K, C = 12, 32, 4
    if flags & Flag.A_UNSIGNED:
        a = rng.integers(0, 256, (J, K)).astype(np.uint8)
    else:
        a = rng.integers(-128, 128, (J, K)).astype(np.int8)
    w = rng.integers(-128, 128, (C, K)).astype(np.int8)
    bias = rng.integers(-5000, 5000, C)
    if flags & Flag.A_UNSIGNED:       # uint8 a = int8 (a - 128) + 128: a_zero_point -128
        ref = matmul((a.astype(np.int64) - 128).astype(np.int8), w.T.copy(), a_zero_point=-128)
    else:
        ref = matmul(a, w.T.copy())
    ref = wrap32(ref.astype(np.int64) + bias)
    desc = Descriptor(a_base=A, a_s0=K, K0=K // 8, J0=J, w_base=W, w_sm=K, c_base=OUT,
                      c_s0=16, p_base=P, C=C, mode=Mode.RAW, flags=flags)
    arr, res = run_cmd(desc, {A: a.tobytes(), W: w.tobytes(), P: params(bias)})
    assert (i32(arr, OUT, 4 * J).reshape(J, 4) == ref).all()
    assert res.tiles[0].counters["macs"] == J * K * C          # 8 C per stream step, J·KB steps


@pytest.mark.parametrize("out_unsigned", [False, True])
def test_tflite_matmul_against_kernels(out_unsigned):
    rng = np.random.default_rng(6)
    J, K, C = 20, 48, 3                 # K0 = 2, K1 = 3 (ak_s1 = 16): b = k1 * 2 + k0
    a = rng.integers(-128, 128, (J, K)).astype(np.int8)
    w = rng.integers(-128, 128, (C, K)).astype(np.int8)
    bias = rng.integers(-20000, 20000, C)
    mult = rng.integers(1 << 30, (1 << 31) - 1, C)
    shift = np.array([-9, -8, -10])
    zp, qmin, qmax = (128, 128, 255) if out_unsigned else (-5, -5, 100)
    desc = Descriptor(a_base=A, a_s0=K, ak_s1=16, K0=2, K1=3, J0=J, w_base=W, w_sm=K,
                      c_base=OUT, c_s0=8, p_base=P, C=C, mode=Mode.TFLITE,
                      flags=Flag.OUT_UNSIGNED if out_unsigned else 0, zp=zp, qmin=qmin,
                      qmax=qmax)
    arr, _ = run_cmd(desc, {A: a.tobytes(), W: w.tobytes(), P: params(bias, mult, shift)})
    acc = wrap32(matmul(a, w.T.copy()).astype(np.int64) + bias)
    y = multiply_by_quantized_multiplier(acc, mult, shift).astype(np.int64)
    exp = np.clip(y + zp, qmin, qmax)
    got = np.frombuffer(arr.read_mem(0, OUT, 8 * J), np.uint8).reshape(J, 8)[:, :C]
    got = got.astype(np.int64) if out_unsigned else got.view(np.int8).astype(np.int64)
    assert (got == exp).all()
    if not out_unsigned:     # the same through kernels.requantize (zp -5, ReLU = qmin = zp)
        ref = requantize(matmul(a, w.T.copy()), mult, shift, zp, relu=True, bias=bias)
        assert (np.minimum(ref, 100) == got).all()
    # bytes C..7 of each output word are not written
    assert not np.frombuffer(arr.read_mem(0, OUT, 8 * J), np.uint8).reshape(J, 8)[:, C:].any()


def test_all_minus_128_operands_and_unsigned_128():
    # X all -128, W all -128, K = 16 (KB = 2): acc = bias + 16 * 16384 = bias + 262144.
    # With A_UNSIGNED the byte 0x80 is 128: acc = bias - 262144.
    J, C = 3, 4
    x = np.full((J, 16), -128, np.int8)
    w = np.full((C, 16), -128, np.int8)
    bias = [0, 1, -1, 7]
    for flags, delta in ((0, 262144), (Flag.A_UNSIGNED, -262144)):
        desc = Descriptor(a_base=A, a_s0=16, K0=2, J0=J, w_base=W, w_sm=16, c_base=OUT,
                          c_s0=16, p_base=P, C=C, mode=Mode.RAW, flags=flags)
        arr, _ = run_cmd(desc, {A: x.tobytes(), W: w.tobytes(), P: params(bias)})
        assert (i32(arr, OUT, 4 * J).reshape(J, C) == np.array(bias) + delta).all()


def test_accumulator_wraps_mod_2_32():
    # One block of -128 * -128 * 8 = 131072 per element.
    # channel 0: bias 0x7FFF0000 = 2147418112: + 131072 = 2147549184 -> -2147418112 (mod 2^32)
    # channel 1 (A_UNSIGNED, 128 * -128 * 8 = -131072): bias -2^31 -> -2147614720 -> 2147352576
    x = np.full((1, 8), -128, np.int8)
    w = np.full((2, 8), -128, np.int8)
    desc = Descriptor(a_base=A, w_base=W, w_sm=8, c_base=OUT, p_base=P, C=2, mode=Mode.RAW)
    arr, _ = run_cmd(desc, {A: x.tobytes(), W: w.tobytes(), P: params([0x7FFF0000, 0])})
    assert list(i32(arr, OUT, 2)) == [-2147418112, 131072 + 0 - 0]
    desc = Descriptor(a_base=A, w_base=W, w_sm=8, c_base=OUT, p_base=P, C=2, mode=Mode.RAW,
                      flags=Flag.A_UNSIGNED)
    arr, _ = run_cmd(desc, {A: x.tobytes(), W: w.tobytes(), P: params([0, -(1 << 31)])})
    assert list(i32(arr, OUT, 2)) == [-131072, 2147352576]


def test_requantize_ties_and_saturation():
    # C = 4 channels, J = 256 (the largest J), x_j = j - 128 in lane byte 0, W(m) = [1, 0..0]:
    # acc(j, m) = wrap32(bias[m] + x_j).
    J = 256
    xs = np.arange(J) - 128
    x = np.zeros((J, 8), np.int8)
    x[:, 0] = xs
    w = np.zeros((4, 8), np.int8)
    w[:, 0] = 1
    bias = [0, 0, 5, -(1 << 31)]
    mult = [1 << 30, 1 << 30, 1518500250, -(1 << 31)]
    shift = [0, -1, -3, 0]
    desc = Descriptor(a_base=A, a_s0=8, J0=16, J1=16, a_s1=128, w_base=W, w_sm=8,
                      c_base=OUT, c_s0=8, c_s1=128, p_base=P, C=4, mode=Mode.TFLITE, zp=0,
                      qmin=-128, qmax=127)
    arr, res = run_cmd(desc, {A: x.tobytes(), W: w.tobytes(), P: params(bias, mult, shift)})
    got = np.frombuffer(arr.read_mem(0, OUT, 8 * J), np.int8).reshape(J, 8)[:, :4]
    acc = wrap32(np.array(bias)[None, :] + xs[:, None])
    ref = np.clip(multiply_by_quantized_multiplier(acc, mult, shift), -128, 127)
    assert (got == ref).all()
    at = {int(v): j for j, v in enumerate(xs)}
    # channel 0: SRDHM(x, 2^30) = round(x / 2), ties toward +inf: 3 -> 2, -3 -> -1, -1 -> 0
    assert [int(got[at[v], 0]) for v in (3, -3, -1, 1)] == [2, -1, 0, 1]
    # channel 1: then RDBPOT(., 1), ties away from zero: 3 -> 2 -> 1; -6 -> -3 -> -2; 6 -> 2
    assert [int(got[at[v], 1]) for v in (3, -6, 6)] == [1, -2, 2]
    # channel 3: x = 0 gives acc = -2^31 and multiplier -2^31: SRDHM saturates to 2^31 - 1,
    # clamped to 127; x = 1: acc = -2^31 + 1, (-2^31 + 1)(-2^31) / 2^31 = 2^31 - 1 -> 127;
    # x = -1 wraps to 2^31 - 1: product / 2^31 = -(2^31 - 1) -> clamp -128
    assert [int(got[at[v], 3]) for v in (0, 1, -1)] == [127, 127, -128]
    # steps: 8 + 8 + 4 + 0 + 256 + 10 = 286 (WRITE_DELAY = 10; busy from x through the last
    # step, and the mwait retries until then: the run takes more than 18 + 286 cycles)
    assert res.tiles[0].counters["engine"] == 287
    assert command_steps(desc) == 286


def test_conv2d_3x3_zero_point_padding_against_kernels():
    # NHWC 1x5x5x8 input, 3x3 kernel, 4 output channels, 'same' padding with input zero point
    # izp = 3: software stores the 7x7x8 padded tensor filled with izp. j0 = output column
    # (a_s0 = 8 bytes = one pixel), j1 = output row (a_s1 = 7 * 8), k0 = kw (3 contiguous
    # blocks of 8 channels), k1 = kh (ak_s1 = 7 * 8). W row m = w[:, :, :, m] in (kh, kw, cin)
    # order (w_sm = 72). The zero point is folded into the bias: bias' = bias - izp * sum(w).
    rng = np.random.default_rng(9)
    izp = 3
    xin = rng.integers(-128, 128, (1, 5, 5, 8)).astype(np.int8)
    wk = rng.integers(-128, 128, (3, 3, 8, 4)).astype(np.int8)
    bias = rng.integers(-3000, 3000, 4)
    mult = np.array([1 << 30, 1300000000, 1700000000, 2000000000])
    shift = np.array([-8, -9, -7, -10])
    zp = -20
    pad = np.full((7, 7, 8), izp, np.int8)
    pad[1:6, 1:6] = xin[0]
    wrows = np.ascontiguousarray(wk.transpose(3, 0, 1, 2).reshape(4, 72))
    bias_e = bias - izp * wk.astype(np.int64).sum(axis=(0, 1, 2))
    desc = Descriptor(a_base=A, a_s0=8, a_s1=56, ak_s1=56, K0=3, K1=3, J0=5, J1=5,
                      w_base=W, w_sm=72, c_base=OUT, c_s0=8, c_s1=40, p_base=P, C=4,
                      mode=Mode.TFLITE, zp=zp, qmin=zp, qmax=127)
    arr, _ = run_cmd(desc, {A: pad.tobytes(), W: wrows.tobytes(),
                            P: params(bias_e, mult, shift)})
    acc = conv2d(xin, wk, padding=1, input_zero_point=izp)            # [1, 5, 5, 4]
    ref = requantize(acc, mult, shift, zp, relu=True, bias=bias)
    got = np.frombuffer(arr.read_mem(0, OUT, 8 * 25), np.int8).reshape(5, 5, 8)[:, :, :4]
    assert (got == ref[0]).all()


def test_raw_output_odd_channel_count():
    # RAW, C = 3: OW = ⌈3/4⌉ = 1 write step per element (§12 "Step schedule"): write 0 is
    # bytes 0 .. min(16, 12) − 1 = 0..11 at C(j): the word at C(j) and, since 4C = 12 > 8, 4
    # bytes of the next one; the bytes after 12 stay as they were (0xEE).
    rng = np.random.default_rng(2)
    J, C = 4, 3
    a = rng.integers(-128, 128, (J, 8)).astype(np.int8)
    w = rng.integers(-128, 128, (C, 8)).astype(np.int8)
    desc = Descriptor(a_base=A, a_s0=8, J0=J, w_base=W, w_sm=8, c_base=OUT, c_s0=16,
                      p_base=P, C=C, mode=Mode.RAW)
    arr, res = run_cmd(desc, {A: a.tobytes(), W: w.tobytes(), P: params([1, 2, 3]),
                              OUT: b"\xee" * 16 * J})
    got = i32(arr, OUT, 4 * J).reshape(J, 4)
    assert (got[:, :3] == matmul(a, w.T.copy()).astype(np.int64) + [1, 2, 3]).all()
    assert arr.read_mem(0, OUT + 12, 4) == b"\xee" * 4
    # steps 8 + 2C + KB·C + (KB − 1)·J + J·OW + 10 = 8 + 6 + 3 + 0 + 4·1 + 10 = 31 (steps
    # 0..30): s_j = 17 + j, the write of element 3 in step s_3 + 10 = 30 is the last step, at
    # cycle x + 1 + 30 (x = 28, no stalls): busy x .. x + 31 = 32 cycles
    assert command_steps(desc) == 31
    assert res.tiles[0].counters["engine"] == 32


@pytest.mark.parametrize("macs,C,c_base,c_s0,steps", [
    # §12 "Step schedule" (ENGINE_WRITE_WORDS = 2 since 2026-12-02): OW = ⌈C/4⌉ write steps
    # per element in RAW; write w is bytes 16w .. min(16w + 16, 4C) − 1 of the element's 4C
    # bytes at C(j) + 16w (the word at C(j) + 16w and, when 4C > 16w + 8, the next one).
    # J = 3, KB = 1: steps = 8 + 2C + KB·C + (KB − 1)·J + J·OW + 10 (WRITE_DELAY).
    # C = 4 (P = 32): OW = 1, write 0 = bytes 0..15 (two words); 8 + 8 + 4 + 0 + 3 + 10 = 33
    (32, 4, OUT, 16, 33),
    # C = 4 at C(j) = OUT + 8 + 24j: OUT + 8 and OUT + 56 are 8 mod 16: still one step of two
    # words (any 8-byte-aligned address, not an aligned 16-byte block); 33 steps
    (32, 4, OUT + 8, 24, 33),
    # C = 5 (P = 64): OW = 2, write 0 = bytes 0..15, write 1 = bytes 16..19 (4C = 20 is not
    # > 24: one word, 4 bytes of it); 8 + 10 + 5 + 0 + 3·2 + 10 = 39
    (64, 5, OUT, 24, 39),
    # C = 8 (P = 64): OW = 2, writes 0 and 1 = bytes 0..15 and 16..31 (two words each);
    # 8 + 16 + 8 + 0 + 3·2 + 10 = 48
    (64, 8, OUT, 32, 48),
])
def test_raw_write_steps_of_two_words(macs, C, c_base, c_s0, steps):
    cfg = CFG.replace(engine_macs=macs)
    rng = np.random.default_rng(100 + C)
    J = 3
    a = rng.integers(-128, 128, (J, 8)).astype(np.int8)
    w = rng.integers(-128, 128, (C, 8)).astype(np.int8)
    bias = rng.integers(-5000, 5000, C)
    desc = Descriptor(a_base=A, a_s0=8, J0=J, w_base=W, w_sm=8, c_base=c_base, c_s0=c_s0,
                      p_base=P, C=C, mode=Mode.RAW)
    assert command_steps(desc) == steps
    arr, res = run_cmd(desc, {A: a.tobytes(), W: w.tobytes(), P: params(bias),
                              OUT: b"\xee" * 160}, cfg=cfg)
    want = matmul(a, w.T.copy()).astype(np.int64) + bias                 # [J, C]
    for j in range(J):
        cj = c_base + j * c_s0
        assert list(i32(arr, cj, C)) == list(want[j]), f"element {j} at {cj:#x}"
        # the bytes between 4C and the next element (or the end of the filled region) stay
        gap = c_s0 - 4 * C
        assert arr.read_mem(0, cj + 4 * C, gap) == b"\xee" * gap
    assert arr.read_mem(0, OUT, c_base - OUT) == b"\xee" * (c_base - OUT)
    # no stalls (the other contexts ecall by 28, mwait is no LOAD/STORE): steps at x + 1 ..
    # x + steps, busy x .. x + steps (x = 28): steps + 1 cycles; macs = 8·C per stream step
    c = res.tiles[0].counters
    assert (c["engine"], c["macs"]) == (steps + 1, 8 * C * J)


def test_raw_last_write_of_one_word_at_the_end_of_the_sram():
    # P = 64, C = 5, J = 1 at C(0) = SRAM − 24: write 0 = bytes 0..15 at SRAM − 24 (words SRAM −
    # 24, SRAM − 16), write 1 = bytes 16..19 at SRAM − 8: 4C = 20 is not > 16·1 + 8, so write 1
    # has no second word and SRAM − 8 + 8 = SRAM is not checked (§12 check 4): no fault.
    cfg = CFG.replace(engine_macs=64)
    desc = Descriptor(a_base=A, a_s0=8, J0=1, w_base=W, w_sm=8, c_base=SRAM - 24, c_s0=0,
                      p_base=P, C=5, mode=Mode.RAW)
    arr, res = run_cmd(desc, {A: X_ROWS.tobytes(), W: np.tile(W_ROW, 8).tobytes(),
                              P: params([0, 1, 2, 3, 4]), SRAM - 24: b"\xee" * 24}, cfg=cfg)
    # acc(0, m) = m + X(0)·W = m + 204 (sum i^2, i = 1..8)
    assert list(i32(arr, SRAM - 24, 5)) == [204, 205, 206, 207, 208]
    assert arr.read_mem(0, SRAM - 4, 4) == b"\xee" * 4


def test_raw_fault_on_the_second_word_of_write_one():
    # P = 64, C = 8, J = 1 at C(0) = SRAM − 24. Steps: 0..7 descriptor, 8..23 parameters,
    # lanes 24..31, stream 32 (s_0), 33 without a read (OW = 2), write 0 in step s_0 + 10 =
    # 42 (bytes 0..15 at SRAM − 24: inside), write 1 in step 43 at SRAM − 8: its first word is
    # inside, its second C(0) + 16 + 8 = SRAM is not: engine fault, addr = SRAM (§12 check 4,
    # an address check: visible from the step's cycle + 1), and write 1 writes neither word.
    cfg = CFG.replace(engine_macs=64)
    desc = Descriptor(a_base=A, a_s0=8, J0=1, w_base=W, w_sm=8, c_base=SRAM - 24, c_s0=0,
                      p_base=P, C=8, mode=Mode.RAW)
    mem = dict(STD_MEM)
    mem[SRAM - 24] = b"\xee" * 24
    arr, res = fault_case(desc, mem, cfg=cfg)
    check_fault(res, arr, 43, SRAM)
    assert list(i32(arr, SRAM - 24, 4)) == [204] * 4          # write 0: acc(0, 0..3), bias 0
    assert arr.read_mem(0, SRAM - 8, 8) == b"\xee" * 8


@pytest.mark.parametrize("macs,C", [(16, 2), (64, 8)])
def test_lane_counts_of_other_configurations(macs, C):
    cfg = CFG.replace(engine_macs=macs)
    rng = np.random.default_rng(macs)
    a = rng.integers(-128, 128, (5, 8)).astype(np.int8)
    w = rng.integers(-128, 128, (C, 8)).astype(np.int8)
    desc = Descriptor(a_base=A, a_s0=8, J0=5, w_base=W, w_sm=8, c_base=OUT, c_s0=4 * C,
                      p_base=P, C=C, mode=Mode.RAW)
    arr, _ = run_cmd(desc, {A: a.tobytes(), W: w.tobytes(), P: params([0] * C)}, cfg=cfg)
    assert (i32(arr, OUT, 5 * C).reshape(5, C) == matmul(a, w.T.copy())).all()
    bad = Descriptor(a_base=A, a_s0=8, J0=5, w_base=W, w_sm=8, c_base=OUT, c_s0=4 * C,
                     p_base=P, C=C + 1, mode=Mode.RAW)       # C > M: step-7 fault
    arr = make({0: issuer()}, {D0: bad.pack()}, cfg=cfg)
    res = arr.run(1000)
    # step 7 at 29 + 7 = 36 faults (check 2, the fields: a data check), visible from
    # 36 + 2 = 38 (§7 "Stop"): cycles = 38 + D = 40
    assert fault(res) == (0, FaultCause.ENGINE_FAULT, PC_MRUN, D0) and res.cycles == 40


def test_several_tiles_run_their_own_commands():
    cfg = ArrayConfig(tiles=3, contexts=6, sram_bytes=SRAM)
    arr = make({0: issuer()}, raw_small(3), cfg=cfg)
    # tiles 0, 2: J = 3 (S = 24, steps 29..52): mwait M = 52 is busy, M = 58 retires (issue
    # 54), csrr at 60. tile 1: a longer command (J = 3 but with a second block: KB = 2 reads
    # X(j, 1) at +8): S = 8 + 2 + 2 + 3 + 3 + 10 = 28, steps 29..56; mwait M = 34 + 6r >= 57:
    # M = 58, issue 54; csrr at 60.
    d1 = Descriptor(a_base=SA, a_s0=8, K0=2, J0=3, w_base=SW, w_sm=8, c_base=SOUT, c_s0=8,
                    p_base=SP, C=1, mode=Mode.RAW)
    arr.write_mem(1, D0, d1.pack())
    arr.write_mem(1, SW, np.tile(W_ROW, 2).tobytes())
    res = arr.run(1000)
    assert res.status == "halted"
    assert [int(arr.regs[t, 0, 10]) for t in range(3)] == [60, 60, 60]
    # tile 1: acc(j) = 1000 + X(j)·W + X(j+1)·W for j = 0, 1 (X(3) = zeros beyond the rows)
    assert list(i32(arr, SOUT, 6, tile=1)[::2]) == [1204 + 796 - 1000, 796 + 5572 - 1000, 5572]
    assert [t.counters["engine"] for t in res.tiles] == [25, 29, 25]


# ------------------------------------------------------------------------------ faults
# (fault_case, good, STD_MEM and check_fault: tests/helpers/model_engine.py)

@pytest.mark.parametrize("d,step,addr", [
    (0x404, 0, 0x404),             # descriptor not a multiple of 8: step 0
    (SRAM, 0, SRAM),               # descriptor outside the SRAM
    (SRAM - 32, 4, SRAM),          # word 4 is the first outside
    (SRAM - 56, 7, SRAM),          # word 7 outside: check 1 precedes the step-7 field check
])
def test_fault_descriptor_read(d, step, addr):
    li = asm.li(5, d)
    # li is len(li) words: mrun at 18 + 6 len(li), x = mrun + 4
    t_mrun = 18 + 6 * len(li)
    mem = {} if d >= SRAM else {d: bytes(min(64, SRAM - d))}    # zero fields: C = 0 etc.
    arr = make({0: issuer(d)}, mem)
    res = arr.run(2000)
    check_fault(res, arr, step, addr, mrun_pc=CODE + 4 * len(li), x=t_mrun + 4)


@pytest.mark.parametrize("change", [
    dict(C=0), dict(C=5), dict(J0=0), dict(J1=0), dict(K0=0), dict(K1=0),
    dict(J0=17, J1=16),                                     # J = 272 > 256
    dict(mode=3), dict(mode=255), dict(flags=8), dict(flags=0x80),    # 2 = FLOAT32, 4 = K_GATHER valid
    dict(qmin=10, qmax=5), dict(zp=128), dict(qmin=-129), dict(qmax=128),
    dict(flags=Flag.OUT_UNSIGNED, qmin=-1, qmax=255), dict(flags=Flag.OUT_UNSIGNED, qmin=0,
                                                           qmax=256),
    dict(flags=Flag.OUT_UNSIGNED, zp=-1, qmin=0, qmax=255),
])
def test_fault_descriptor_fields(change):
    # all checked in step 7 (cycle 36): addr = d; check 2 (the data of the word read): visible
    # from 36 + 2 = 38 (§7 "Stop"), cycles = 38 + D = 40
    arr, res = fault_case(good(**change), STD_MEM)
    check_fault(res, arr, 7, D0, data=True)
    assert res.cycles == 40


@pytest.mark.parametrize("change", [
    dict(C=4), dict(J0=16, J1=16), dict(flags=3, zp=0, qmin=0, qmax=255),
    dict(mode=Mode.RAW, zp=1000, qmin=5, qmax=-5, flags=Flag.OUT_UNSIGNED, c_s0=16),
    dict(qmin=-128, qmax=-128), dict(zp=127, qmin=127, qmax=127),
    dict(mode=Mode.FLOAT32),       # multiplier words 2^30 = binary32 2.0 (exponent 128): finite
])
def test_valid_descriptor_fields_do_not_fault(change):
    mem = dict(STD_MEM)
    mem[A] = bytes(8 * 256)
    arr, res = fault_case(good(**change), mem)
    assert res.status == "halted", fault(res)


@pytest.mark.parametrize("desc,step,addr,data", [
    (good(p_base=P + 4), 8, P + 4, False),                    # parameter word misaligned
    (good(C=2, p_base=SRAM - 16), 10, SRAM, False),           # channel 1's first word outside
    # check 3 (the data of the word read): visible from the step's cycle + 2
    (good(C=2, p_base=P + 0x40), 11, P + 0x40 + 16 + 8, True),    # shift 31 of channel 1
    (good(C=2, p_base=P + 0x80), 9, P + 0x80 + 8, True),          # shift -32 of channel 0
    (good(w_base=W + 4), 10, W + 4, False),                   # W(0, 0) misaligned (C = 1)
    (good(C=2, w_sm=SRAM - W), 13, SRAM, False),              # W(1, 0) outside: step 8+4+1
    (good(a_base=A + 4), 11, A + 4, False),                   # X(0, 0) misaligned
])
def test_fault_parameter_and_operand_reads(desc, step, addr, data):
    mem = dict(STD_MEM)
    mem[P + 0x40] = params([0, 0], [1 << 30] * 2, [0, 31])
    mem[P + 0x80] = params([0, 0], [1 << 30] * 2, [-32, 0])
    arr, res = fault_case(desc, mem)
    check_fault(res, arr, step, addr, data=data)


def test_shift_is_not_checked_in_raw_mode():
    mem = dict(STD_MEM)
    mem[P] = params([0, 0], [0, 0], [31, -32])
    arr, res = fault_case(good(C=2, mode=Mode.RAW, c_s0=8), mem)
    assert res.status == "halted", fault(res)


def test_fault_in_the_middle_of_a_stream():
    # TFLITE, C = 1, J = 12, KB = 1, X(j) at SRAM - 88 + 8j: X(11) = SRAM is outside.
    # Steps: 0..7 descriptor, 8, 9 parameters, 10 lane W(0), stream X(j) in step 11 + j, the
    # write of element j in step 11 + j + WRITE_DELAY = 21 + j. X(11) in step 22 faults (cycle
    # 29 + 22 = 51, an address check: visible 52, cycles = 52 + D = 54); the write of element
    # 1 is the same step and does not happen (the faulting step has no effect, and the engine
    # makes no further step, §12: frozen at 52, 53); element 0 (step 21) is written. macs:
    # stream steps 11..21 = 11 * 8.
    mem = dict(STD_MEM)
    mem[SRAM - 88] = X_ROWS.tobytes()             # X(0..2); X(3..10) are zero bytes
    mem[OUT] = b"\xee" * 96
    arr, res = fault_case(good(J0=12, a_base=SRAM - 88, c_s0=8), mem)
    check_fault(res, arr, 22, SRAM)
    assert res.cycles == 54
    # element 0: acc = 204, multiplier 2^30 shift 0: round(204 / 2) = 102
    assert arr.read_mem(0, OUT, 96) == bytes([102]) + b"\xee" * 95
    assert res.tiles[0].counters["macs"] == 88


def test_read_check_precedes_write_check_in_one_step():
    # C = 1, J = 11: X(10) (step 11 + 10 = 21) is outside and element 0's write (step 11 +
    # WRITE_DELAY = 21) too (C(0) = SRAM + 8): the record is the read's address.
    mem = dict(STD_MEM)
    mem[SRAM - 80] = X_ROWS.tobytes()
    arr, res = fault_case(good(J0=11, a_base=SRAM - 80, c_base=SRAM + 8), mem)
    check_fault(res, arr, 21, SRAM)


@pytest.mark.parametrize("desc,step,addr", [
    # J = 1, C = 4: steps 0..7, 8..15 parameters, lanes 16..19, stream 20, the write
    # 20 + WRITE_DELAY = 30: after the last stream step (J·OW < 10; RAW OW = ⌈4/4⌉ = 1)
    (good(C=4, J0=1, c_base=OUT + 5), 30, OUT + 5),           # TFLITE: 5 + 4 > 8
    (good(C=4, J0=1, c_base=SRAM), 30, SRAM),                 # TFLITE: C(j) outside
    (good(C=4, J0=1, c_base=OUT + 4, mode=Mode.RAW), 30, OUT + 4),   # RAW: not a multiple of 8
    # RAW write 0 (16 bytes: 4C = 16 > 8, two words): C(j) = SRAM − 8 is inside, its second
    # word C(j) + 16·0 + 8 = SRAM is not: addr = SRAM (§12 check 4), neither word written
    (good(C=4, J0=1, c_base=SRAM - 8, mode=Mode.RAW), 30, SRAM),
])
def test_fault_writes(desc, step, addr):
    mem = dict(STD_MEM)
    mem[SRAM - 8] = b"\xee" * 8
    arr, res = fault_case(desc, mem)
    check_fault(res, arr, step, addr)
    assert arr.read_mem(0, SRAM - 8, 8) == b"\xee" * 8     # no write reached the last word


def test_tflite_write_that_ends_the_word_does_not_fault():
    arr, res = fault_case(good(C=3, J0=1, c_base=OUT + 5), STD_MEM)     # 5 + 3 = 8
    assert res.status == "halted"
    assert arr.read_mem(0, OUT + 5, 3) == bytes([102] * 3)


def test_instruction_fault_visible_in_the_same_cycle_wins():
    # Misaligned descriptor: engine fault in step 0 = cycle 29, visible from 30. Context 1's
    # j1 is issued at (3 + 1) * 6 + 1 = 25: an ebreak there is visible from 30 too: the
    # record is the breakpoint's and that engine fault is dropped (§12), so context 0 does
    # not enter FAULT through the engine. The stop condition holds at v = 30: t_s = 31,
    # cycles = 30 + D = 32. After the faulting step the engine makes no further steps and
    # stays busy until the stop (§12; docs/design/contract-v2.md §6 point 2, the lead's
    # decision): no later engine fault, so nothing else is recorded.
    # Context 0 (issuer): li at 18, mrun at 24 (M = 28: accepted, pc + 4), mwait at 30
    # (j2, pc = PC_MRUN + 4): issued <= t_s, its M = 34 is after t_s, so it sees the engine as
    # at the end of t_s (§7 "Stop"): busy, no effect, pc unchanged. Its next slot 36 > t_s.
    # Final: context 0 RUNNING at the mwait; the others: contexts 2..5 ecall at 20..23
    # (HALTED), context 1 FAULT at its ebreak.
    codes = {0: issuer(0x404), 1: [asm.nop(), asm.ebreak()]}
    arr, res = fault_case(codes=codes)
    assert res.status == "fault" and res.cycles == 32
    assert fault(res) == (1, FaultCause.BREAKPOINT, 2 * CODE + 4, 2 * CODE + 4)
    ctx = res.tiles[0].contexts
    assert ctx[0].state == ContextState.RUNNING and ctx[0].pc == PC_MRUN + 4
    assert ctx[1].state == ContextState.FAULT and ctx[1].pc == 2 * CODE + 4
    assert [ctx[c].state for c in range(2, 6)] == [ContextState.HALTED] * 4
    # context 0 retired the 3 dispatch words, li and mrun (the mwait did not retire)
    assert ctx[0].retired == 5
    # the engine is busy from x = 28 through the last cycle 31 of the run: 4 cycles
    assert res.tiles[0].counters["engine"] == 4


def test_engine_fault_dropped_behind_a_same_cycle_instruction_fault_of_a_faulted_tile():
    # §12: an engine fault is dropped if an instruction fault of the same tile becomes visible
    # in the same cycle, also when the tile's record is an earlier fault. Context 5's ebreak
    # (j0, issued at 18 + 5 = 23) is visible from 28 = v: t_s = 29, cycles = 28 + D = 30.
    # Context 0's mrun (24) is accepted at M = 28 (<= t_s); step 0 at 29 <= t_s reads the
    # misaligned descriptor: engine fault visible from 30. Context 1's ebreak (j1, issued at
    # 25 <= t_s) is visible from 30 too: the engine fault is dropped, context 0 does not enter
    # FAULT; its next slot 30 is after t_s, so it stays RUNNING after the retired mrun. The
    # record is the first visible one (context 5's); context 1 is FAULT as well.
    codes = {0: issuer(0x404), 1: [asm.nop(), asm.ebreak()], 5: [asm.ebreak()]}
    arr, res = fault_case(codes=codes)
    assert res.status == "fault" and res.cycles == 30
    assert fault(res) == (5, FaultCause.BREAKPOINT, 6 * CODE, 6 * CODE)
    ctx = res.tiles[0].contexts
    assert ctx[0].state == ContextState.RUNNING and ctx[0].pc == PC_MRUN + 4
    assert ctx[1].state == ContextState.FAULT and ctx[1].pc == 2 * CODE + 4
    assert ctx[5].state == ContextState.FAULT
    assert res.tiles[0].counters["engine"] == 2          # busy 28, 29


def test_engine_fault_visible_first_is_kept_over_an_earlier_issued_instruction_fault():
    # §7 "a tile keeps its first fault", read as the first *visible* one (contract v2):
    # misaligned descriptor: engine fault in step 0 at 29, visible from 30. Context 2's j1,
    # an ebreak issued at (3 + 1) * 6 + 2 = 26 (before the engine step), is visible only from
    # 31: the record is the engine's; both contexts end in FAULT; cycles = 30 + D = 32.
    codes = {0: issuer(0x404), 2: [asm.nop(), asm.ebreak()]}
    arr, res = fault_case(codes=codes)
    assert res.status == "fault" and res.cycles == 32
    assert fault(res) == (0, FaultCause.ENGINE_FAULT, PC_MRUN, 0x404)
    assert res.tiles[0].contexts[0].state == ContextState.FAULT
    assert res.tiles[0].contexts[2].state == ContextState.FAULT
    assert res.tiles[0].contexts[2].pc == 3 * CODE + 4


def test_engine_fault_and_instruction_fault_on_other_tiles_keep_both_records():
    # N = 2 (D = 3). Tile 0: engine fault in cycle 29, visible 30 (as above); context 1's
    # instruction at 25 on tile 0 is an addi that completes. Tile 1: ebreak at 25 (visible 30):
    # its record wins over its own engine fault of 29. cycles = 30 + 3 = 33.
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM)
    arr = Array(cfg)
    arr.write_mem(0, 0, image({0: issuer(0x404), 1: [asm.nop(), asm.addi(9, 0, 5)]}))
    arr.write_mem(1, 0, image({0: issuer(0x404), 1: [asm.nop(), asm.ebreak()]}))
    res = arr.run(2000)
    assert res.status == "fault" and res.cycles == 33
    assert fault(res, 0) == (0, FaultCause.ENGINE_FAULT, PC_MRUN, 0x404)
    assert fault(res, 1) == (1, FaultCause.BREAKPOINT, 2 * CODE + 4, 2 * CODE + 4)
    assert int(arr.regs[0, 1, 9]) == 5
    # tile 1's engine fault is dropped (the breakpoint is visible from the same cycle 30) and
    # its engine is frozen (no further steps, §12): context 0 of tile 1 does not enter FAULT.
    # Its mwait (issued at 30 <= t_s = 32, M = 34 after t_s) sees the engine busy at the end
    # of t_s: no effect, pc at the mwait. Tile 0's context 0 is FAULT (its engine fault).
    assert res.tiles[1].contexts[0].state == ContextState.RUNNING
    assert res.tiles[1].contexts[0].pc == PC_MRUN + 4
    assert res.tiles[0].contexts[0].state == ContextState.FAULT
    assert res.tiles[0].contexts[0].pc == PC_MRUN


def test_engine_fault_of_a_context_that_moved_on():
    # Context 0 issues mrun and then runs nops until the fault in step 14 of the stream case
    # (cycle 43); its pc is pc_e afterwards, not the nop's.
    mem = dict(STD_MEM)
    mem[SRAM - 24] = X_ROWS.tobytes()
    code = [*asm.li(5, D0), asm.mrun(5)] + [asm.nop()] * 10 + [asm.mwait(), asm.ecall()]
    arr, res = fault_case(good(J0=5, a_base=SRAM - 24, c_s0=8), mem, codes={0: code})
    check_fault(res, arr, 14, SRAM)


# ------------------------------------------------------------------------------ legality
@pytest.mark.parametrize("word", [asm.mrun(5), asm.mrun(0), asm.mwait()])
def test_mrun_mwait_illegal_without_engine(word):
    cfg = CFG.replace(engine_macs=0)
    assert word in (0x0000200B, 0x0002A00B, 0x0000300B)
    assert not contract_legal(word, engine=False) and contract_legal(word, engine=True)
    assert decode(word, engine=False).op == Op.ILLEGAL
    assert decode(word, engine=True).op in (Op.MRUN, Op.MWAIT)
    for engine in ("vector", "fast"):
        arr = make({0: [word, asm.ecall()]}, {}, cfg=cfg, engine=engine)
        res = arr.run(1000)
        # j0 of context 0 at 18: illegal_instruction, visible 23, addr = the word; cycles 25
        assert res.status == "fault" and res.cycles == 25
        assert fault(res) == (0, FaultCause.ILLEGAL_INSTRUCTION, CODE, word)
        assert res.tiles[0].counters["engine"] == 0


def test_fast_engine_used_for_programs_without_engine_words():
    arr = make({0: [asm.addi(10, 0, 1), asm.ecall()]}, {}, engine="fast")
    res = arr.run(1000)
    assert res.status == "halted" and arr.last_engine == "fast"
    assert res.tiles[0].counters["engine"] == 0


def test_engine_word_written_at_run_time(model_engine):
    # No mrun word in the SRAM at the start (the constant is built by lui + addi); context 0
    # stores it over its own j4 (issued at 42; the sw at 30 writes at M = 34) and runs it
    # (x5 = 0: descriptor at 0 = the dispatch code). Both engines run it (the fast engine
    # used to fall back to the vector engine, and to refuse words written at run time).
    code = [*asm.li(9, asm.mrun(5)), asm.sw(9, CODE + 16, 0), asm.nop(), asm.nop(),
            asm.ecall()]
    assert len(asm.li(9, asm.mrun(5))) == 2
    results = []
    for engine in ("fast", "vector"):
        arr = make({0: code}, {}, engine=engine)
        res = arr.run(1000)
        assert arr.last_engine == engine and res.tiles[0].counters["engine"] > 0
        results.append(res.to_json())
    assert results[0] == results[1]


def test_trace_records_retired_engine_instructions_once():
    # J = 2 command: mrun (issued 24) retires, mwait retries at 30, 36, 42 (no records) and
    # retires at 48 (test_step_timing_and_mwait_retire_cycle).
    arr = Array(CFG, trace=True)
    arr.write_mem(None, 0, image({0: issuer()}))
    for addr, data in raw_small(2).items():
        arr.write_mem(None, addr, data)
    res = arr.run(1000)
    assert res.status == "halted"
    recs = [(r["cycle"], r["insn"], r["rd"]) for r in arr.trace if r["context"] == 0]
    assert (24, asm.mrun(5), None) in recs and (48, asm.mwait(), None) in recs
    assert sum(r[1] in (asm.mrun(5), asm.mwait()) for r in recs) == 2


def test_engine_counter_in_the_run_result_json():
    arr = make({0: issuer()}, raw_small(2))
    res = arr.run(1000)
    data = res.to_json()                      # a dict (tessera.spec.result)
    # J = 2: S = 23 steps at 29..51, busy 28..51 = 24 cycles
    assert data["tiles"][0]["counters"]["engine"] == 24
    assert list(data["tiles"][0]["counters"]) == ["compute", "sync", "exchange", "halted",
                                                  "retired", "macs", "engine"]


# ------------------------------------------------------------------------------ tile groups
def _spmd(group: bool, out_unsigned: bool):
    """4 tiles, one TFLITE command each (same descriptor, different data per tile); tile 2's
    context 3 stores into X(0, 1) while it streams and tile 3's context 2 loads an output."""
    cfg = ArrayConfig(tiles=4, contexts=6, sram_bytes=SRAM)
    rng = np.random.default_rng(11)
    J, K, C = 9, 16, 4
    desc = Descriptor(a_base=SA, a_s0=K, K0=2, J0=J, w_base=W, w_sm=K, c_base=SOUT, c_s0=8,
                      p_base=P, C=C, mode=Mode.TFLITE,
                      flags=(Flag.OUT_UNSIGNED | Flag.A_UNSIGNED) if out_unsigned else 0,
                      zp=3, qmin=0 if out_unsigned else -100, qmax=200 if out_unsigned else 90)
    arr = Array(cfg, engine="vector")
    arr._mx.group = group
    arr.write_mem(None, 0, image({0: issuer()}))
    # tile 2, context 3: li (lui + addi: j0, j1), nops j2..j5, sw j6
    arr.write_mem(2, 0, image({0: issuer(), 3: [*asm.li(9, 0x7F7F7F7F)] + [asm.nop()] * 4
                               + [asm.sw(9, SA + 8, 0), asm.ecall()]}))
    arr.write_mem(3, 0, image({0: issuer(), 2: [asm.nop()] * 8 + [asm.lw(7, SOUT, 0),
                                                                    asm.ecall()]}))
    data = []
    for t in range(4):
        a = rng.integers(0 if out_unsigned else -128, 256 if out_unsigned else 128, (J, K))
        a = a.astype(np.uint8 if out_unsigned else np.int8)
        w = rng.integers(-128, 128, (C, K)).astype(np.int8)
        bias = rng.integers(-3000, 3000, C)
        mult = rng.integers(1 << 30, (1 << 31) - 1, C)
        shift = rng.integers(-9, -5, C)
        for addr, b in ((D0, desc.pack()), (SA, a.tobytes()), (W, w.tobytes()),
                        (P, params(bias, mult, shift))):
            arr.write_mem(t, addr, b)
        data.append((a, w, bias, mult, shift))
    res = arr.run(5000)
    assert res.status == "halted", [t.fault for t in res.tiles]
    return arr, res, data, desc


@pytest.mark.parametrize("out_unsigned", [False, True])
def test_tiles_in_step_are_grouped_with_the_same_result(out_unsigned):
    arr_g, res_g, data, desc = _spmd(True, out_unsigned)
    arr_s, res_s, _, _ = _spmd(False, out_unsigned)
    assert res_g.to_json() == res_s.to_json()
    assert (arr_g.sram.w32 == arr_s.sram.w32).all()
    for t, (a, w, bias, mult, shift) in enumerate(data):
        if t == 2:
            # context 3's sw (j6, issued at (3 + 6) * 6 + 3 = 57, M = 61) rewrites X(0, 1)'s
            # first 4 bytes; X(0, 1) is read in block 1 (stream steps from 8 + 8 + 4 + 9 + 4 = 33
            # on, cycle >= 29 + 33 = 62): after the store, so the engine sees 0x7F bytes
            a = a.copy()
            a[0, 8:12] = np.frombuffer(b"\x7f" * 4, a.dtype)
        acc = wrap32(a.astype(np.int64) @ w.astype(np.int64).T + bias)
        exp = np.clip(multiply_by_quantized_multiplier(acc, mult, shift).astype(np.int64)
                      + desc.zp, desc.qmin, desc.qmax)
        got = np.frombuffer(arr_g.read_mem(t, SOUT, 8 * len(a)), np.uint8).reshape(-1, 8)[:, :4]
        got = got.astype(np.int64) if out_unsigned else got.view(np.int8).astype(np.int64)
        assert (got == exp).all(), t


@pytest.mark.parametrize("group", [True, False])
def test_fault_in_a_stream_on_two_tiles_at_once(group):
    # test_fault_in_the_middle_of_a_stream on both tiles of a 2-tile array (tiles in step:
    # grouped or not): both records, same cycle (step 22 at 51, visible 52, cycles = 52 +
    # D(2) = 55), element 0 written (step 21) on both.
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM)
    arr = Array(cfg, engine="vector")
    arr._mx.group = group
    arr.write_mem(None, 0, image({0: issuer()}))
    mem = dict(STD_MEM)
    mem[SRAM - 88] = X_ROWS.tobytes()
    mem[OUT] = b"\xee" * 96
    mem[D0] = good(J0=12, a_base=SRAM - 88, c_s0=8).pack()
    for addr, data in mem.items():
        arr.write_mem(None, addr, data)
    res = arr.run(2000)
    assert res.status == "fault" and res.cycles == 55
    for t in range(2):
        assert fault(res, t) == (0, FaultCause.ENGINE_FAULT, PC_MRUN, SRAM)
        assert arr.read_mem(t, OUT, 96) == bytes([102]) + b"\xee" * 95
        assert res.tiles[t].counters["macs"] == 88


# ------------------------------------------------------------------------------ random
def _reference_sram(mem: np.ndarray, d: Descriptor) -> np.ndarray:
    """The SRAM after command ``d`` per the §12 "Semantics" formulas (no step machinery):
    acc(j, m) = bias[m] + sum_b sum_i X(j, b)[i] W(m, b)[i] mod 2^32, outputs written in
    element order."""
    out = mem.copy()
    prm = np.frombuffer(mem[d.p_base:d.p_base + 16 * d.C].tobytes(), "<i4").reshape(d.C, 4)
    sx = np.uint8 if d.flags & Flag.A_UNSIGNED else np.int8
    for j in range(d.J0 * d.J1):
        j1, j0 = divmod(j, d.J0)
        acc = prm[:, 0].astype(np.int64)
        for b in range(d.K0 * d.K1):
            k1, k0 = divmod(b, d.K0)
            xa = (d.a_base + j1 * d.a_s1 + j0 * d.a_s0 + k1 * d.ak_s1 + 8 * k0) % (1 << 32)
            x = mem[xa:xa + 8].view(sx).astype(np.int64)
            for m in range(d.C):
                wa = d.w_base + m * d.w_sm + 8 * b
                acc[m] += int(mem[wa:wa + 8].view(np.int8).astype(np.int64) @ x)
        acc = wrap32(acc)
        ca = d.c_base + j1 * d.c_s1 + j0 * d.c_s0
        if d.mode == Mode.RAW:
            out[ca:ca + 4 * d.C] = acc.astype("<i4").view(np.uint8)
        else:
            y = multiply_by_quantized_multiplier(acc, prm[:, 1], prm[:, 2]).astype(np.int64)
            out[ca:ca + d.C] = (np.clip(y + d.zp, d.qmin, d.qmax) & 0xFF).astype(np.uint8)
    return out


@pytest.mark.parametrize("seed", range(24))
def test_random_commands_against_the_semantics_formulas(seed):
    rng = np.random.default_rng(1000 + seed)
    r = lambda lo, hi: int(rng.integers(lo, hi + 1))        # noqa: E731
    C = r(1, 4)
    J0, J1, K0, K1 = r(1, 5), r(1, 4), r(1, 3), r(1, 3)
    mode = Mode.RAW if seed % 2 else Mode.TFLITE
    flags = r(0, 3)
    lo, hi = (0, 255) if flags & Flag.OUT_UNSIGNED else (-128, 127)
    qmin, qmax = sorted((r(lo, hi), r(lo, hi)))
    # streamed operand in 0x800..0x1800 (strides multiples of 8, possibly negative for j0),
    # stationary in 0x1800..0x2400, parameters at 0x2800, outputs from 0x3000 (disjoint)
    a_s0 = 8 * r(-2, 3)
    a_base = 0x800 + 8 * r(10, 20) + (0 if a_s0 >= 0 else -a_s0 * J0)
    desc = Descriptor(
        a_base=a_base, a_s0=a_s0, a_s1=8 * r(0, 12), ak_s1=8 * r(0, 6), w_base=W,
        w_sm=8 * K0 * K1 + 8 * r(0, 2), c_base=OUT + 8 * r(0, 4),
        c_s0=8 * (2 if mode == Mode.RAW else 1) + 8 * r(0, 1),
        c_s1=8 * (2 if mode == Mode.RAW else 1) * J0 + 8 * r(0, 2), p_base=P,
        J0=J0, J1=J1, K0=K0, K1=K1, C=C, mode=mode, flags=flags, zp=r(qmin, qmax),
        qmin=qmin, qmax=qmax)
    if mode == Mode.TFLITE:
        desc = Descriptor(**{**desc.__dict__, "c_base": OUT + 8 * r(0, 4) + r(0, 8 - C)})
    mem = {A: rng.integers(0, 256, 0x1000).astype(np.uint8).tobytes(),
           W: rng.integers(0, 256, 0xC00).astype(np.uint8).tobytes(),
           P: params(rng.integers(-(1 << 31), 1 << 31, C), rng.integers(1 << 29, 1 << 31, C),
                     rng.integers(-12, 3, C))}
    arr = make({0: issuer()}, {**mem, D0: desc.pack()})
    before = arr.sram.w8[0].copy()
    res = arr.run(20_000)
    assert res.status == "halted", fault(res)
    exp = _reference_sram(before, desc)
    diff = np.nonzero(arr.sram.w8[0] != exp)[0]
    assert len(diff) == 0, (hex(int(diff[0])), desc)
    # no stalls (only context 0 runs after cycle 23): busy from x = 28 for command_steps + 1
    # cycles; the mwait (M = 34 + 6r) retires at the first M after the last step 28 + S; the
    # csrr issues one slot (6) after that mwait (issued at M - 4)
    S = command_steps(desc)
    assert res.tiles[0].counters["engine"] == S + 1
    first_m = 34 + 6 * -(-(S + 29 - 34) // 6)         # smallest 34 + 6r >= 29 + S
    assert int(arr.regs[0, 0, 10]) == first_m - 4 + 6


@pytest.mark.parametrize("seed", range(30))
def test_random_loads_and_stores_around_a_command(seed):
    """Contexts 1..3 run random loads of the outputs and stores into the streamed operand
    while context 0's command runs; every stall, value and cycle derived from the §12 rules:

    * context c's op j issues at (3 + j)·6 + c and is in M four cycles later; those M cycles
      (loads and stores) are not engine cycles; step s is the s-th remaining cycle after x = 28;
    * command RAW, C = 1, KB = 1, J = 6 (S = 8 + 2 + 1 + 0 + 6 + 10 = 27): step 11 + j reads
      X(j), step 11 + j + WRITE_DELAY = 21 + j writes C(j); an engine read at k sees stores
      whose M < k, a load whose M > k sees a write at k.
    """
    rng = np.random.default_rng(seed)
    J = 6
    x_init = rng.integers(-128, 128, (J, 8)).astype(np.int8)
    desc = Descriptor(a_base=SA, a_s0=8, w_base=SW, w_sm=8, c_base=SOUT, c_s0=8, p_base=SP,
                      J0=J, C=1, mode=Mode.RAW)
    sentinel = 0x5A5A5A5A
    mem = {D0: desc.pack(), SA: x_init.tobytes(), SW: W_ROW.tobytes(), SP: params([1000]),
           SOUT: sentinel.to_bytes(4, "little") * (2 * J)}
    codes, ls = {0: issuer()}, []          # ls: (X cycle, context, kind, j, rd or value)
    for c in (1, 2, 3, 4, 5):
        value = int(rng.integers(-100, 100)) & 0xFFFFFFFF
        code = [asm.addi(9, 0, value - (1 << 32) if value >> 31 else value)]
        for j in range(1, 13):
            kind, e = rng.choice(["nop", "lw", "sw"]), int(rng.integers(J))
            y = issue(j, c) + 4
            if kind == "lw":
                code.append(asm.lw(10 + j, SOUT + 8 * e, 0))
                ls.append((y, c, "lw", e, 10 + j))
            elif kind == "sw":
                code.append(asm.sw(9, SA + 8 * e, 0))
                ls.append((y, c, "sw", e, value))
            else:
                code.append(asm.nop())
        codes[c] = code + [asm.ecall()]
    arr = make(codes, mem)
    res = arr.run(5000)
    assert res.status == "halted"
    # step cycles
    busy_x = {y for y, *_ in ls}
    cyc, k = [], 28
    while len(cyc) < 21 + J:                           # S = 21 + J steps
        k += 1
        if k not in busy_x:
            cyc.append(k)
    last = cyc[-1]
    assert res.tiles[0].counters["engine"] == last - 28 + 1
    mw = 34 + 6 * -(-(last + 1 - 34) // 6)              # first mwait M after the last step
    assert int(arr.regs[0, 0, 10]) == mw - 4 + 6
    # values: the streamed words as the engine read them, then acc(j)
    acc = []
    for j in range(J):
        word0 = int.from_bytes(x_init[j, :4].tobytes(), "little")
        for y, c, kind, e, v in sorted(ls):
            if kind == "sw" and e == j and y < cyc[11 + j]:
                word0 = v
        xj = np.concatenate([np.frombuffer(word0.to_bytes(4, "little"), np.int8), x_init[j, 4:]])
        acc.append(1000 + int(xj.astype(np.int64) @ W_ROW.astype(np.int64)))
    assert list(i32(arr, SOUT, 2 * J)[::2]) == acc
    for y, c, kind, e, rd in ls:
        if kind == "lw":
            exp = acc[e] & 0xFFFFFFFF if y > cyc[21 + e] else sentinel
            assert int(arr.regs[0, c, rd]) == exp, (y, c, e)


def test_exchange_phases_of_different_length_on_two_tiles():
    # As test_exchange_phase_stalls_the_engine on N = 2 (D = ceil(log2 2) + 2 = 3): k* = 47,
    # r = 50. J = 2: S = 23 steps. Tile 0: IDLE 3 (50..52), END at 53; context 0 RUNNING from
    # 54, mwait at 54 (M = 58). Engine: steps 0..8 at 41..49, none at 50..53, 9..22 at 54..67:
    # M = 58, 64 busy, issue 66 (M = 70) retires; csrr 72; engine 40..67 = 28; exchange 4.
    # Tile 1: xprog = 0, phase = the cycle 50 only; RUNNING from 51, mwait at 54 (M = 58).
    # Engine: steps 0..8 at 41..49, 9..22 at 51..64: M = 58, 64 busy, issue 66 (M = 70)
    # retires; csrr 72; engine 40..64 = 25; exchange 1. Last ecalls: both tiles' at 78:
    # cycles 78 + 5 + 3.
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM)

    def code(xp):
        return [*asm.li(5, D0), *asm.li(8, xp), asm.csrw(Csr.XPROG, 8), asm.mrun(5),
                asm.sync("ARRAY"), asm.mwait(), asm.csrr(10, Csr.CYCLE), asm.ecall()]
    arr = Array(cfg)
    arr.write_mem(0, 0, image({0: code(XP)}))
    arr.write_mem(1, 0, image({0: code(0)}))
    mem = raw_small(2)
    mem[XP] = encode_program([Step.idle(3), Step.end()])
    for addr, data in mem.items():
        arr.write_mem(None, addr, data)
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 86
    assert [int(arr.regs[t, 0, 10]) for t in range(2)] == [72, 72]
    assert [(t.counters["engine"], t.counters["exchange"]) for t in res.tiles] == \
        [(28, 4), (25, 1)]
    for t in range(2):
        assert list(i32(arr, SOUT, 4, tile=t)[::2]) == RAW_ACC[:2]


def test_mbqm_functions_saturating_case_by_hand_and_against_the_reference():
    # The engine's own MultiplyByQuantizedMultiplier (§11 rule 1, gemmlowp): SRDHM(a, b) =
    # (a·b + 2^30) >> 31 except for its one overflow a = b = −2^31, which saturates to
    # 2^31 − 1; then the rounding right shift (ties away from zero). By hand:
    # shift 0: 2^31 − 1; shift −1: (2^31 − 1) / 2 = 2^30 − 0.5 rounds away from zero to 2^30;
    # shift 0 with b = 2^31 − 1: (−2^31·(2^31 − 1) + 2^30) >> 31 = −2^31 + 1.
    # Through an mrun a saturated SRDHM is always clamped to qmax (zp and qmax are 8-bit,
    # §12), so the functions are checked directly. (Kills golden-model mutant M02f945:
    # the saturated value 2^31 − 2.)
    lo, hi = -(1 << 31), (1 << 31) - 1
    cases = [((lo, lo, 0), hi), ((lo, lo, -1), 1 << 30), ((lo, hi, 0), lo + 1)]
    for (x, m, s), want in cases:
        assert mbqm(x, m, s) == want, (x, m, s)
        assert int(mbqm_array(np.array([x]), np.array([m]), np.array([s]))[0]) == want
    # and against the independent numpy reference on random int32 values and shifts
    rng = np.random.default_rng(17)
    x = np.concatenate([rng.integers(lo, hi, 2000, endpoint=True), [lo, lo, hi, 0, -1]])
    m = np.concatenate([rng.integers(lo, hi, 2000, endpoint=True), [lo, hi, lo, lo, lo]])
    s = np.concatenate([rng.integers(-31, 31, 2000), [0, -5, 3, 0, -31]])
    ref = multiply_by_quantized_multiplier(x, m, s)
    assert (mbqm_array(x, m, s) == ref).all()
    assert [mbqm(int(a), int(b), int(c)) for a, b, c in zip(x, m, s)] == ref.tolist()


# ------------------------------------------------------------------ data faults: s + 2
# §7 "Stop", §12 "Engine faults" (since 2026-12-02): a fault of checks 2 and 3 (the data of the
# word the step at cycle s read) is visible from s + 2 (checks 1 and 4 from s + 1); c_e enters
# FAULT from s + 2, so it may still issue in its slot at s + 1 (that instruction takes effect);
# its final pc is pc_e; the step of s + 1 has no effect and no fault of its own; the tie rule
# applies at s + 2.
#
# Set-up: contexts 1..n run [nop (18 + c), lw (24 + c), ecall]: the lw's M = 28 + c steals
# engine cycles 29 .. 28 + n, so step 0 is at 29 + n and step s at 29 + n + s. With n + s = 12
# the faulting step is at cycle 41 and cycle 42 = 7·6 is context 0's slot (j4: the issuer's
# code below: li 18, mrun 24 (x = 28), addi x11 30, addi x12 36, sw x11 42, addi x13 48, ...).
# Visible from 43: t_s = 43 + D − 1 = 44, cycles = 45. The sw of 42 <= t_s is issued; its M
# (46) is after t_s and part of the final state (§7); the addi of 48 > t_s is not.
def _slot_issuer():
    return [*asm.li(5, D0), asm.mrun(5), asm.addi(11, 0, 0x55), asm.addi(12, 0, 0x66),
            asm.sw(11, 0x7F8, 0), asm.addi(13, 0, 1), asm.mwait(), asm.ecall()]


def _stall_codes(n, extra=None):
    codes = {c: [asm.nop(), asm.lw(7, 0x7F0, 0), asm.ecall()] for c in range(1, n + 1)}
    codes[0] = _slot_issuer()
    codes.update(extra or {})
    return codes


@pytest.mark.parametrize("desc,mem,n,addr", [
    # check 2 (fields, step 7): n = 5, step 7 at 29 + 5 + 7 = 41
    (good(qmin=10, qmax=5), {}, 5, D0),
    # check 3, TFLITE shift 31 of channel 0 (step 9 + 2·0): n = 3, step 9 at 29 + 3 + 9 = 41
    (good(C=1, p_base=P + 0x80), {P + 0x80: params([0], [1 << 30], [31])}, 3, P + 0x80 + 8),
    # check 3, FLOAT32 multiplier +inf of channel 0 (step 8 + 2·0): n = 4, step 8 at 41
    (good(C=1, mode=Mode.FLOAT32, p_base=P + 0xC0), {P + 0xC0: params([0], [0x7F800000], [0])},
     4, P + 0xC0),
])
def test_data_fault_visible_two_cycles_later_lets_c_e_issue_once(desc, mem, n, addr):
    m = dict(STD_MEM)
    m.update(mem)
    arr, res = fault_case(desc, m, codes=_stall_codes(n))
    assert res.status == "fault" and res.cycles == 45
    assert fault(res) == (0, FaultCause.ENGINE_FAULT, PC_MRUN, addr)
    ctx = res.tiles[0].contexts[0]
    assert ctx.state == ContextState.FAULT and ctx.pc == PC_MRUN          # pc = pc_e
    # the sw issued at 42 took effect (x11 = 0x55 from 30), so did the addis of 30 and 36;
    # the addi of 48 was not issued. Retired: 3 dispatch + li, mrun, addi, addi, sw = 8.
    assert (ctx.regs[11], ctx.regs[12], ctx.regs[13]) == (0x55, 0x66, 0)
    assert arr.read_mem(0, 0x7F8, 4) == bytes([0x55, 0, 0, 0])
    assert ctx.retired == 8
    # busy from x = 28 through the last cycle 44 of the run: 17 cycles
    assert res.tiles[0].counters["engine"] == 17


def test_data_fault_tie_with_an_instruction_fault_visible_at_s_plus_2():
    # The check-2 case above (step 7 at 41, visible from 43) and context 2 runs [nop (20),
    # lw (26), nop (32), ebreak (38)]: the ebreak is visible from 38 + 5 = 43 too: the record
    # is the instruction's and the engine fault is dropped (§7 "Stop", §12): context 0 does
    # not enter FAULT through the engine and keeps its pc (its sw of 42 retired: pc = j5 =
    # CODE + 20). v = 43: cycles = 45.
    codes = _stall_codes(5, {2: [asm.nop(), asm.lw(7, 0x7F0, 0), asm.nop(), asm.ebreak()]})
    arr, res = fault_case(good(qmin=10, qmax=5), STD_MEM, codes=codes)
    ebreak_pc = 3 * CODE + 12
    assert res.status == "fault" and res.cycles == 45
    assert fault(res) == (2, FaultCause.BREAKPOINT, ebreak_pc, ebreak_pc)
    ctx = res.tiles[0].contexts
    assert ctx[0].state == ContextState.RUNNING and ctx[0].pc == CODE + 20
    assert ctx[0].retired == 8
    assert ctx[2].state == ContextState.FAULT and ctx[2].pc == ebreak_pc
    assert arr.read_mem(0, 0x7F8, 4) == bytes([0x55, 0, 0, 0])


@pytest.mark.parametrize("desc,mem,step,addr", [
    # check 3 in step 9 (TFLITE shift 31, C = 1, cycle 38); step 10 (cycle 39) would load
    # W(0, 0) from the misaligned W + 4: no effect, no fault of its own
    (good(C=1, p_base=P + 0x80, w_base=W + 4), {P + 0x80: params([0], [1 << 30], [31])},
     9, P + 0x80 + 8),
    # check 2 in step 7 (qmin > qmax); step 8 would read the parameters at p_base = SRAM
    (good(qmin=10, qmax=5, p_base=SRAM), {}, 7, D0),
    # check 3 in step 9 (TFLITE, K_GATHER); step 10 would read the gather word at ak_s1 = SRAM
    (good(C=1, p_base=P + 0x80, flags=Flag.K_GATHER, ak_s1=SRAM, K1=2),
     {P + 0x80: params([0], [1 << 30], [31])}, 9, P + 0x80 + 8),
])
def test_step_after_a_data_fault_has_no_fault_of_its_own(desc, mem, step, addr):
    # the step of cycle s + 1 after a data fault of step s (a lane-load, parameter or gather
    # read) has no effect and no fault of its own: the record is the data fault's, visible
    # from s + 2 (check_fault with data: cycles = 28 + 1 + step + 2 + D)
    m = dict(STD_MEM)
    m.update(mem)
    arr, res = fault_case(desc, m)
    check_fault(res, arr, step, addr, data=True)


def test_data_fault_then_c_e_instruction_fault_at_s_plus_1():
    # The check-2 case above (n = 5: step 7 at 41, visible from 43, cycles 45) with context
    # 0's instruction of 42 an ebreak: it faults (visible from 47) and has no effect. The tile
    # keeps the record visible first, the engine's (43 < 47); c_e is FAULT from 43, the
    # earlier of the two (§12: "enters FAULT from the cycle the fault is visible"), with pc =
    # pc_e. Counters (§8): contexts 1..5 HALTED from 35 + c <= 40, so the tile is "compute"
    # while context 0 is RUNNING (cycles 0..42) and "halted" (every context HALTED or FAULT)
    # in 43 and 44: compute 43, halted 2. Context 0 retired 3 + li, mrun, addi, addi = 7.
    codes = _stall_codes(5)
    codes[0] = [*asm.li(5, D0), asm.mrun(5), asm.addi(11, 0, 0x55), asm.addi(12, 0, 0x66),
                asm.ebreak(), asm.mwait(), asm.ecall()]
    arr, res = fault_case(good(qmin=10, qmax=5), STD_MEM, codes=codes)
    assert res.status == "fault" and res.cycles == 45
    assert fault(res) == (0, FaultCause.ENGINE_FAULT, PC_MRUN, D0)
    ctx = res.tiles[0].contexts[0]
    assert ctx.state == ContextState.FAULT and ctx.pc == PC_MRUN and ctx.retired == 7
    c = res.tiles[0].counters
    assert (c["compute"], c["halted"]) == (43, 2)
