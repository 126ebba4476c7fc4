"""Golden model: per-instruction semantics against hand-computed values (RISC-V Unprivileged
ISA 20191213 ch. 2/7/9, docs/architecture.md §3)."""

import pytest

from tessera.golden_model import Array
from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.faults import FaultCause

CFG = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024)
DATA = 0x2000


def run(words, cfg=CFG, data=None, max_cycles=10_000):
    arr = Array(cfg)
    arr.write_mem(None, 0, asm.program(list(words) + [asm.ecall()]))
    if data is not None:
        arr.write_mem(None, DATA, data)
    res = arr.run(max_cycles)
    return arr, res


def regs_after(words, **kw):
    arr, res = run(words, **kw)
    assert res.status == "halted", [t.fault for t in res.tiles]
    return [int(x) for x in arr.regs[0, 0]]


def binop(op, a, b):
    """rd = op(a, b) via li a0/a1 and op a2, a0, a1."""
    r = regs_after([*asm.li(10, a), *asm.li(11, b), getattr(asm, op)(12, 10, 11)])
    return r[12]


M = 0xFFFFFFFF


@pytest.mark.parametrize("op,a,b,exp", [
    # table 7.1
    ("div", 7, 0, M), ("divu", 7, 0, M), ("rem", 7, 0, 7), ("remu", 7, 0, 7),
    ("div", 0x80000000, M, 0x80000000), ("rem", 0x80000000, M, 0),
    ("divu", 0x80000000, M, 0), ("remu", 0x80000000, M, 0x80000000),
    # truncation toward zero, remainder sign = dividend sign
    ("div", (-7) & M, 2, (-3) & M), ("rem", (-7) & M, 2, (-1) & M),
    ("div", 7, (-2) & M, (-3) & M), ("rem", 7, (-2) & M, 1),
    ("divu", 100, 7, 14), ("remu", 100, 7, 2),
    # multiplies
    ("mul", 0x10000, 0x10000, 0), ("mul", M, M, 1), ("mul", 12345, 678, 8369910),
    ("mulh", 0x80000000, 0x80000000, 0x40000000), ("mulh", M, M, 0), ("mulh", M, 1, M),
    ("mulhu", M, M, 0xFFFFFFFE), ("mulhu", 0x80000000, 2, 1),
    ("mulhsu", M, M, M),                    # -1 * (2^32-1) = -(2^32-1): high word -1
    ("mulhsu", 0x80000000, 2, M),           # -2^31 * 2 = -2^32
    ("mulhsu", 2, M, 1),                    # 2 * (2^32-1)
    # shifts use the low 5 bits of rs2
    ("sll", 1, 33, 2), ("srl", 0x80000000, 31, 1), ("sra", 0x80000000, 31, M),
    ("sra", 0x80000000, 32, 0x80000000), ("srl", 0xF0, 36, 0xF),
    # compares, logic, add/sub wrap
    ("slt", M, 1, 1), ("sltu", M, 1, 0), ("slt", 1, M, 0), ("sltu", 1, M, 1),
    ("add", M, 2, 1), ("sub", 0, 1, M), ("xor", 0xF0F0, 0xFF00, 0x0FF0),
    ("or_", 0xF0, 0x0F, 0xFF), ("and_", 0xF0, 0x3C, 0x30),
])
def test_rv32im_binops(op, a, b, exp):
    assert binop(op, a, b) == exp


@pytest.mark.parametrize("op,a,imm,exp", [
    ("addi", 5, -6, M), ("slti", M, 0, 1), ("sltiu", 5, -1, 1), ("sltiu", M, -1, 0),
    ("xori", 0xFF, -1, 0xFFFFFF00), ("ori", 0x100, 0x7FF, 0x7FF), ("andi", M, -2048, 0xFFFFF800),
    ("slli", 3, 31, 0x80000000), ("srli", 0x80000000, 4, 0x08000000),
    ("srai", 0x80000000, 4, 0xF8000000),
])
def test_rv32i_imm_ops(op, a, imm, exp):
    r = regs_after([*asm.li(10, a), getattr(asm, op)(12, 10, imm)])
    assert r[12] == exp


def test_x0_hardwired():
    r = regs_after([asm.addi(0, 0, 5), asm.lui(0, 1), asm.add(5, 0, 0), asm.jal(0, 4),
                    asm.addi(6, 0, 7)])
    assert r[0] == 0 and r[5] == 0 and r[6] == 7


def test_lui_auipc():
    # auipc at address 8 (after two words)
    r = regs_after([asm.nop(), asm.lui(5, 0xABCDE), asm.auipc(6, 1), asm.auipc(7, 0xFFFFF)])
    assert r[5] == 0xABCDE000
    assert r[6] == 8 + 0x1000
    assert r[7] == (12 + 0xFFFFF000) & M


def test_loads_sign_and_zero_extension():
    data = bytes([0x01, 0x7F, 0xFF, 0x80])  # word 0x80FF7F01
    r = regs_after([*asm.li(5, DATA), asm.lb(10, 1, 5), asm.lb(11, 2, 5), asm.lbu(12, 2, 5),
                    asm.lh(13, 2, 5), asm.lhu(14, 2, 5), asm.lh(15, 0, 5), asm.lw(16, 0, 5),
                    asm.lb(17, 3, 5)], data=data)
    assert r[10:18] == [0x7F, M, 0xFF, 0xFFFF80FF, 0x80FF, 0x7F01, 0x80FF7F01, 0xFFFFFF80]


def test_stores_write_only_their_bytes():
    arr, res = run([*asm.li(5, DATA), *asm.li(6, 0xAABBCCDD), asm.sb(6, 1, 5), asm.sh(6, 6, 5),
                    asm.sw(6, 8, 5), asm.sb(6, -1, 5)],
                   data=bytes(range(0x10, 0x20)))
    assert res.status == "halted"
    got = arr.read_mem(1, DATA - 1, 17)
    exp = bytearray([0xDD]) + bytearray(range(0x10, 0x20))
    exp[1 + 1] = 0xDD                      # sb at +1
    exp[1 + 6:1 + 8] = bytes([0xDD, 0xCC])  # sh at +6
    exp[1 + 8:1 + 12] = bytes([0xDD, 0xCC, 0xBB, 0xAA])
    assert got == bytes(exp)


def test_jal_jalr_link_and_bit0():
    # 0: jal ra, 8 -> 8: li t0, 21 ; 12: jalr a0, 0(t0): target 20 (bit 0 cleared), a0 = 16
    # 16: addi a1, x0, 1 (skipped) ; 20: addi a2, x0, 2
    r = regs_after([asm.jal(1, 8), asm.addi(13, 0, 99), asm.addi(5, 0, 21), asm.jalr(10, 5, 0),
                    asm.addi(11, 0, 1), asm.addi(12, 0, 2)])
    assert r[1] == 4 and r[13] == 0
    assert r[10] == 16 and r[11] == 0 and r[12] == 2


def test_jalr_rd_equals_rs1():
    # jalr t0, 0(t0): target read before the link write
    r = regs_after([asm.addi(5, 0, 12), asm.jalr(5, 5, 0), asm.addi(6, 0, 1), asm.addi(7, 0, 2)])
    assert r[5] == 8 and r[6] == 0 and r[7] == 2


@pytest.mark.parametrize("op,a,b,taken", [
    ("beq", 3, 3, True), ("beq", 3, 4, False), ("bne", 3, 4, True), ("bne", 3, 3, False),
    ("blt", M, 0, True), ("blt", 0, M, False), ("bge", 0, M, True), ("bge", M, 0, False),
    ("bge", 5, 5, True), ("bltu", 0, M, True), ("bltu", M, 0, False), ("bgeu", M, 0, True),
    ("bgeu", 4, 4, True), ("bgeu", 3, 4, False),
])
def test_branches(op, a, b, taken):
    r = regs_after([*asm.li(10, a), *asm.li(11, b), getattr(asm, op)(10, 11, 8),
                    asm.addi(12, 0, 1), asm.addi(13, 0, 1)])
    assert r[12] == (0 if taken else 1) and r[13] == 1


def test_backward_branch_loop():
    # sum 1..10 with a backward bne
    r = regs_after([asm.addi(5, 0, 10), asm.addi(6, 0, 0), asm.add(6, 6, 5), asm.addi(5, 5, -1),
                    asm.bne(5, 0, -8)])
    assert r[6] == 55 and r[5] == 0


def test_dot4_and_dot4su():
    a = 0x0102FF80   # bytes (LSB first): -128, -1, 2, 1
    b = 0x80FF0302   # bytes: 2, 3, 0xFF, 0x80
    arr, res = run([*asm.li(10, a), *asm.li(11, b), asm.addi(12, 0, 10), asm.addi(13, 0, 10),
                    asm.dot4(12, 10, 11), asm.dot4su(13, 10, 11), asm.dot4(12, 10, 11)])
    r = [int(x) for x in arr.regs[0, 0]]
    # signed: -128*2 + -1*3 + 2*-1 + 1*-128 = -389 ; twice + 10
    assert r[12] == (10 - 389 - 389) & M
    # signed x unsigned: -128*2 + -1*3 + 2*255 + 1*128 = 379
    assert r[13] == 10 + 379
    assert res.tiles[0].counters["macs"] == 3 * 4 * CFG.contexts


def test_fence_is_nop():
    r = regs_after([asm.fence(), asm.addi(5, 0, 3)])
    assert r[5] == 3


def test_csr_read_only_values():
    cfg = ArrayConfig(tiles=3, contexts=7, sram_bytes=32 * 1024)
    arr, res = run([asm.csrr(10, Csr.TILE_ID), asm.csrr(11, Csr.CONTEXT_ID),
                    asm.csrr(12, Csr.TILE_COUNT), asm.csrr(13, Csr.CONTEXT_COUNT),
                    asm.csrr(14, Csr.SRAM_BYTES), asm.csrr(15, Csr.CYCLEH),
                    asm.csrr(16, Csr.INSTRET), asm.csrr(17, Csr.INSTRETH),
                    asm.csrrsi(18, Csr.CYCLE, 0), asm.csrrc(19, Csr.TILE_ID, 0)], cfg=cfg)
    assert res.status == "halted"
    for t in range(3):
        for c in range(7):
            r = [int(x) for x in arr.regs[t, c]]
            assert r[10:15] == [t, c, 3, 7, 32 * 1024]
            assert r[15] == 0 and r[16] == 6 and r[17] == 0
            assert r[18] == 8 * 7 + c       # 9th instruction: issue cycle 8*T + c (T = 7)
            assert r[19] == t


def test_xprog_csr_rw_set_clear():
    r = regs_after([*asm.li(5, 0xF0F0), asm.csrrw(10, Csr.XPROG, 5), asm.csrrsi(11, Csr.XPROG, 3),
                    asm.csrrci(12, Csr.XPROG, 0x10), asm.csrrs(13, Csr.XPROG, 0),
                    asm.csrrwi(14, Csr.XPROG, 8), asm.csrr(15, Csr.XPROG),
                    *asm.li(6, 0xFFFFFFF0), asm.csrrc(16, Csr.XPROG, 6), asm.csrr(17, Csr.XPROG)],
                   cfg=ArrayConfig(tiles=1, contexts=6, sram_bytes=16384))
    # context 0 runs first; the other contexts run the same code later, but xprog is per tile
    # and every context writes the same idempotent values (context 0's instruction i issues
    # at 6i, T = 6), so context 0 reads only the values it wrote itself.
    assert r[10] == 0 and r[11] == 0xF0F0 and r[12] == 0xF0F3 and r[13] == 0xF0E3
    assert r[14] == 0xF0E3 and r[15] == 8 and r[16] == 8 and r[17] == 8


def test_xprog_shared_by_contexts():
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=16384)
    arr, res = run([asm.csrr(10, Csr.CONTEXT_ID), asm.slli(10, 10, 3), asm.addi(10, 10, 8),
                    asm.csrrw(11, Csr.XPROG, 10)], cfg=cfg)
    # csrrw at instruction 3: context c at cycle 3T + c = 18 + c, its CSR access in M at
    # 22 + c (§4: in issue order); each sees the previous one's value (8c), context 5 writes 48.
    assert [int(arr.regs[0, c, 11]) for c in range(6)] == [0, 8, 16, 24, 32, 40]
    assert int(arr.xprog[0]) == 48


@pytest.mark.parametrize("word", [
    asm.csrrw(10, Csr.CYCLE, 5),        # write to RO
    asm.csrrwi(0, Csr.TILE_ID, 0),      # CSRRWI always writes
    asm.csrrs(10, Csr.INSTRET, 5),      # set with rs1 != 0
    asm.csrrci(10, Csr.SRAM_BYTES, 1),
    asm.csrrs(10, 0x123, 0),            # unlisted CSR
    asm.csrrs(10, 0x301, 0),            # misa: unlisted
])
def test_csr_illegal(word):
    arr, res = run([asm.addi(10, 0, 7), word, asm.addi(10, 0, 9)],
                   cfg=ArrayConfig(tiles=1, contexts=6, sram_bytes=16384))
    assert res.status == "fault"
    f = res.tiles[0].fault
    assert (f.context, f.cause, f.pc, f.addr) == (0, FaultCause.ILLEGAL_INSTRUCTION, 4, word)
    assert int(arr.regs[0, 0, 10]) == 7     # no effect
    # §7 (v2): the fault of context 0's 2nd instruction, issued at t = T = 6, is visible from
    # v = t + 5 = 11; D(1 tile) = 2: cycles = v + D = 13 (contexts 1..5 fault on the same word
    # at 7..11 <= t_s = 12, the tile keeps context 0's record, the first visible)
    assert res.cycles == 6 + 5 + 2


@pytest.mark.parametrize("word", [
    0x00000000, 0xFFFFFFFF, 0x00000001, 0x0000100F, 0x00001067, 0x00002063, 0x00003003,
    0x00006003, 0x00003023, 0x02001013, 0x40001013, 0x60005013, 0x40001033, 0x40002033,
    0x80000033, 0x00200073, 0x00004073, 0x10500073, 0x0020002B, 0x0010202B, 0x0000102B,
    0x0200000B, 0x0000007F, 0x00000057,
    # CUSTOM_0 words that stay illegal with a matrix engine (§3.1): mrun with rd/rs2/funct7
    # set, mwait with another field set, funct3 4..7 (0x0000200B = mrun x0 is legal with an
    # engine; it is illegal without one, tests/test_model_engine.py)
    0x0000208B, 0x0010200B, 0x0200200B, 0x0000308B, 0x0008300B, 0x0010300B, 0x0000400B,
    0x0000700B,
])
def test_illegal_encodings(word):
    arr, res = run([word], cfg=ArrayConfig(tiles=1, contexts=6, sram_bytes=16384))
    f = res.tiles[0].fault
    # issued at 0, visible from v = 5, D(1) = 2: cycles = 7 (§7 v2)
    assert res.status == "fault" and res.cycles == 0 + 5 + 2
    assert (f.context, f.cause, f.pc, f.addr) == (0, FaultCause.ILLEGAL_INSTRUCTION, 0, word)


@pytest.mark.parametrize("word", [
    0x0000000F,  # fence with all fields zero
    0x8330000F,  # fence with other fields set (ignored)
    asm.slli(1, 1, 31), asm.srai(1, 1, 31), asm.sub(1, 2, 3), asm.sra(1, 2, 3), asm.remu(1, 2, 3),
    asm.csrrs(1, Csr.CYCLE, 0), asm.csrrsi(1, Csr.TILE_ID, 0), asm.csrrwi(1, Csr.XPROG, 0),
])
def test_legal_encodings_retire(word):
    arr, res = run([word], cfg=ArrayConfig(tiles=1, contexts=6, sram_bytes=16384))
    assert res.status == "halted"
    assert res.tiles[0].counters["retired"] == 2 * 6    # 2 instructions x T = 6 contexts


def test_ecall_exit_code_and_pc():
    arr, res = run([asm.csrr(10, Csr.CONTEXT_ID), asm.addi(10, 10, 40)])
    assert res.status == "halted"
    for c, ctx in enumerate(res.tiles[1].contexts):
        assert ctx.state.label == "halted"
        assert ctx.exit_code == 40 + c
        assert ctx.pc == 12            # ecall at 8, pc + 4
        assert ctx.retired == 3
