"""tessera.toolchain.asm and tessera.toolchain.disasm against hand encodings from the RISC-V spec (chapters 2, 7, 9)
and the custom encodings of docs/architecture.md §3.3."""

import random

import pytest

from tessera.toolchain import asm
from tessera.spec.csr import Csr
from tessera.spec.instructions import INSTRUCTIONS, Format, Kind
from tessera.toolchain.disasm import disasm, disasm_program


def _names(kind=None, fmt=None, shift=None):
    """Assembler function names of the table rows of a kind / format (so a new row of an
    enumerated group is round-tripped without editing this file)."""
    return [r.py_name for r in INSTRUCTIONS
            if (kind is None or r.kind in kind) and (fmt is None or r.fmt is fmt)
            and (shift is None or any(o.name == "shamt" for o in r.operands) == shift)]


R_TYPE = [r.py_name for r in INSTRUCTIONS if r.fmt is Format.R
          and [o.name for o in r.operands] == ["rd", "rs1", "rs2"]]
I_ALU = _names(kind=(Kind.OP_IMM,), shift=False)
SHIFTS = _names(kind=(Kind.OP_IMM,), shift=True)
LOADS, STORES, BRANCHES = _names(kind=(Kind.LOAD,)), _names(kind=(Kind.STORE,)), \
    _names(kind=(Kind.BRANCH,))
CSR_REG = [n for n in _names(kind=(Kind.CSR,)) if not n.endswith("i")]
CSR_IMM = [n for n in _names(kind=(Kind.CSR,)) if n.endswith("i")]

# (word built by asm, expected word computed by hand from the spec field layout, disassembly)
KNOWN = [
    (lambda: asm.addi("a0", "a0", 1), 0x00150513, "addi a0,a0,1"),
    (lambda: asm.addi(2, 2, -16), 0xFF010113, "addi sp,sp,-16"),
    (lambda: asm.nop(), 0x00000013, "addi zero,zero,0"),
    (lambda: asm.ecall(), 0x00000073, "ecall"),
    (lambda: asm.ebreak(), 0x00100073, "ebreak"),
    (lambda: asm.ret(), 0x00008067, "jalr zero,0(ra)"),
    (lambda: asm.lw("a0", 0, "a0"), 0x00052503, "lw a0,0(a0)"),
    (lambda: asm.sw("ra", 12, "sp"), 0x00112623, "sw ra,12(sp)"),
    (lambda: asm.sb("a1", -1, "a0"), 0xFEB50FA3, "sb a1,-1(a0)"),
    (lambda: asm.lui("a0", 0x12345), 0x12345537, "lui a0,0x12345"),
    (lambda: asm.jal("ra", 0), 0x000000EF, "jal ra,0x0"),
    (lambda: asm.j(-4), 0xFFDFF06F, "jal zero,0xfffffffc"),
    (lambda: asm.beq("a0", "a1", 8), 0x00B50463, "beq a0,a1,0x8"),
    (lambda: asm.beq(0, 0, -4), 0xFE000EE3, "beq zero,zero,0xfffffffc"),
    (lambda: asm.mul("a0", "a0", "a1"), 0x02B50533, "mul a0,a0,a1"),
    (lambda: asm.div("a0", "a0", "a1"), 0x02B54533, "div a0,a0,a1"),
    (lambda: asm.sub("a0", "a0", "a1"), 0x40B50533, "sub a0,a0,a1"),
    (lambda: asm.srai("a0", "a0", 3), 0x40355513, "srai a0,a0,3"),
    (lambda: asm.csrr("a0", Csr.CYCLE), 0xC0002573, "csrrs a0,cycle,zero"),
    (lambda: asm.csrrwi(0, Csr.XPROG, 5), 0x8002D073, "csrrwi zero,xprog,5"),
    (lambda: asm.dot4("a0", "a1", "a2"), 0x00C5850B, "dot4 a0,a1,a2"),
    (lambda: asm.dot4su("a0", "a1", "a2"), 0x00C5950B, "dot4su a0,a1,a2"),
    (lambda: asm.sync_tile(), 0x0000002B, "sync TILE"),
    (lambda: asm.sync_array(), 0x0010002B, "sync ARRAY"),
    (lambda: asm.fence(), 0x0FF0000F, "fence iorw,iorw"),
]


@pytest.mark.parametrize("build,word,text", KNOWN, ids=[k[2] for k in KNOWN])
def test_known_encodings(build, word, text):
    assert build() == word
    assert disasm(word) == text


def test_branch_target_uses_pc():
    assert disasm(0x00B50463, pc=0x100) == "beq a0,a1,0x108"
    assert disasm(asm.jal(0, -8), pc=0x100) == "jal zero,0xf8"


def test_program_little_endian():
    assert asm.program([0x00150513, [0x00000073]]) == bytes([0x13, 0x05, 0x15, 0, 0x73, 0, 0, 0])
    with pytest.raises(ValueError, match="word #1"):
        asm.program([1, -1])


def _li_value(words):
    """Evaluate lui/addi words by their spec semantics (independent of asm.li)."""
    v = 0
    for w in words:
        op = w & 0x7F
        if op == 0x37:
            v = w & 0xFFFFF000
        elif op == 0x13:
            imm = (w >> 20) - (4096 if w >> 31 else 0)
            src = 0 if (w >> 15 & 31) == 0 else v
            v = (src + imm) & 0xFFFFFFFF
        else:
            raise AssertionError(hex(w))
    return v


@pytest.mark.parametrize("value", [0, 1, -1, 2047, -2048, 2048, 0x12345678, 0x12345FFF,
                                   0x80000000, 0x7FFFFFFF, 0xFFFFF800, 0xFFFFFFFF, 0x800])
def test_li_values(value):
    words = asm.li("a0", value)
    assert 1 <= len(words) <= 2
    assert _li_value(words) == value & 0xFFFFFFFF
    assert all((w >> 7 & 31) == 10 for w in words)


def test_li_random():
    rng = random.Random(1)
    for _ in range(500):
        v = rng.randrange(0, 1 << 32)
        assert _li_value(asm.li(5, v)) == v


@pytest.mark.parametrize("call,match", [
    (lambda: asm.addi(0, 0, 2048), "addi: imm 2048"),
    (lambda: asm.addi(32, 0, 0), "addi: rd"),
    (lambda: asm.addi("q7", 0, 0), "addi: rd"),
    (lambda: asm.lw(1, -2049, 2), "lw: imm"),
    (lambda: asm.sw(1, 4096, 2), "sw: offset"),
    (lambda: asm.beq(1, 2, 3), "beq: branch offset 3 must be even"),
    (lambda: asm.beq(1, 2, 4096), "beq: offset 4096"),
    (lambda: asm.jal(1, 1 << 20), "jal: offset"),
    (lambda: asm.lui(1, 1 << 20), "lui: imm20"),
    (lambda: asm.slli(1, 1, 32), "slli: shamt 32"),
    (lambda: asm.csrrw(1, 0x1000, 1), "csrrw: csr"),
    (lambda: asm.csrrwi(1, 0x800, 32), "csrrwi: uimm 32"),
    (lambda: asm.sync(2), "sync: unknown zone"),
    (lambda: asm.li(1, 1 << 32), "li: value"),
])
def test_range_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_groups_cover_rv32im_and_the_custom_instructions():
    """The groups round-tripped below contain at least RV32IM, Zicsr and dot4/dot4su."""
    for group, names in [
            (R_TYPE, "add sub sll slt sltu xor srl sra or_ and_ mul mulh mulhsu mulhu div divu "
                     "rem remu dot4 dot4su"),
            (I_ALU, "addi slti sltiu xori ori andi"), (SHIFTS, "slli srli srai"),
            (LOADS, "lb lh lw lbu lhu"), (STORES, "sb sh sw"),
            (BRANCHES, "beq bne blt bge bltu bgeu"),
            (CSR_REG, "csrrw csrrs csrrc"), (CSR_IMM, "csrrwi csrrsi csrrci")]:
        assert set(names.split()) <= set(group), (names, group)


def test_all_instruction_fields_roundtrip():
    """Every asm function's output disassembles back to the same mnemonic and operands."""
    rng = random.Random(7)
    regs = asm.REG_NAMES
    for _ in range(300):
        rd, r1, r2 = (rng.randrange(32) for _ in range(3))
        imm = rng.randrange(-2048, 2048)
        sh = rng.randrange(32)
        for name in R_TYPE:
            w = getattr(asm, name)(rd, r1, r2)
            assert disasm(w) == f"{name.rstrip('_')} {regs[rd]},{regs[r1]},{regs[r2]}"
        for name in I_ALU:
            assert disasm(getattr(asm, name)(rd, r1, imm)) == f"{name} {regs[rd]},{regs[r1]},{imm}"
        for name in SHIFTS:
            assert disasm(getattr(asm, name)(rd, r1, sh)) == f"{name} {regs[rd]},{regs[r1]},{sh}"
        for name in LOADS:
            assert disasm(getattr(asm, name)(rd, imm, r1)) == f"{name} {regs[rd]},{imm}({regs[r1]})"
        for name in STORES:
            assert disasm(getattr(asm, name)(r2, imm, r1)) == f"{name} {regs[r2]},{imm}({regs[r1]})"
        boff = rng.randrange(-2048, 2048) * 2
        for name in BRANCHES:
            w = getattr(asm, name)(r1, r2, boff)
            assert disasm(w, pc=0x1000) == f"{name} {regs[r1]},{regs[r2]},{0x1000 + boff:#x}"
        joff = rng.randrange(-(1 << 19), 1 << 19) * 2
        assert disasm(asm.jal(rd, joff), pc=1 << 21) == f"jal {regs[rd]},{(1 << 21) + joff:#x}"
        assert disasm(asm.jalr(rd, r1, imm)) == f"jalr {regs[rd]},{imm}({regs[r1]})"
        assert disasm(asm.mrun(r1)) == f"mrun {regs[r1]}"          # §3.3, §12
        assert disasm(asm.mwait()) == "mwait"
        u = rng.randrange(1 << 20)
        assert disasm(asm.lui(rd, u)) == f"lui {regs[rd]},{u:#x}"
        assert disasm(asm.auipc(rd, u)) == f"auipc {regs[rd]},{u:#x}"
        csr = rng.choice(list(Csr))
        for name in CSR_REG:
            w = getattr(asm, name)(rd, csr, r1)
            assert disasm(w) == f"{name} {regs[rd]},{csr.name.lower()},{regs[r1]}"
        for name in CSR_IMM:
            w = getattr(asm, name)(rd, csr, sh)
            assert disasm(w) == f"{name} {regs[rd]},{csr.name.lower()},{sh}"


@pytest.mark.parametrize("word", [
    0x00000000,             # all zero
    0x00000001,             # compressed (bits [1:0] != 11)
    0x0000100F,             # fence.i
    0x00001067,             # jalr funct3=1
    0x00002063,             # branch funct3=2
    0x00003003,             # load funct3=3 (ld)
    0x00003023,             # store funct3=3
    0x02001013,             # slli with imm[11:5]=1
    0x60005013,             # srai-like with imm[11:5]=0x30
    0x40001033,             # funct7=0x20 funct3=1
    0x0010202B,             # sync with funct3 != 0
    0x0020002B,             # sync zone 2 (reserved)
    0x0000102B,             # custom_1 funct3=1
    0x0000208B,             # custom_0 funct3=2 with rd != 0 (mrun needs rd = rs2 = 0)
    0x0010300B,             # custom_0 funct3=3 with rs2 != 0 (mwait is exactly 0x0000300B)
    0x0000400B,             # custom_0 funct3=4
    0x0200000B,             # custom_0 funct7=1
    0x00200073,             # system funct3=0, not ecall/ebreak
    0x00004073,             # system funct3=4
    0x0000007F,             # unknown opcode
])
def test_illegal_words(word):
    assert disasm(word) == f".word {word:#010x}"


def test_unknown_csr_printed_in_hex():
    assert disasm(asm.csrrs(10, 0x123, 0)) == "csrrs a0,0x123,zero"


def test_disasm_program_and_errors():
    lines = disasm_program(asm.program([asm.addi(10, 10, 1), asm.ecall()]), base=0x40)
    assert lines == ["00000040: 00150513  addi a0,a0,1", "00000044: 00000073  ecall"]
    with pytest.raises(ValueError, match="32-bit"):
        disasm(1 << 32)
