"""Disassembler: one 32-bit word to standard RISC-V assembly text (objdump style).

Knows RV32IM, Zicsr (CSR names from :mod:`tessera.spec.csr`), ``fence``, ``ecall``/``ebreak`` and
Tessera's custom instructions (``dot4``, ``dot4su``, ``sync TILE|ARRAY``). A word that is not a
legal encoding per docs/architecture.md §3.1 prints as ``.word 0x????????``. (An unlisted CSR
number is printed in hex: the encoding itself is well-formed; it faults at run time.)

Examples
--------
>>> disasm(0x00150513)
'addi a0,a0,1'
>>> disasm(0x0000006F, pc=0x40)
'jal zero,0x40'
"""

from __future__ import annotations

from tessera.spec.csr import Csr
from tessera.spec.isa import INSN_EBREAK, INSN_ECALL, Opcode, SyncZone

__all__ = ["disasm", "disasm_program"]

_REG = ("zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1",
        "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
        "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
        "t3", "t4", "t5", "t6")

_BRANCH = {0: "beq", 1: "bne", 4: "blt", 5: "bge", 6: "bltu", 7: "bgeu"}
_LOAD = {0: "lb", 1: "lh", 2: "lw", 4: "lbu", 5: "lhu"}
_STORE = {0: "sb", 1: "sh", 2: "sw"}
_OPIMM = {0: "addi", 2: "slti", 3: "sltiu", 4: "xori", 6: "ori", 7: "andi"}
_OP0 = {0: "add", 1: "sll", 2: "slt", 3: "sltu", 4: "xor", 5: "srl", 6: "or", 7: "and"}
_OPM = {0: "mul", 1: "mulh", 2: "mulhsu", 3: "mulhu", 4: "div", 5: "divu", 6: "rem", 7: "remu"}
_CSRI = {1: "csrrw", 2: "csrrs", 3: "csrrc", 5: "csrrwi", 6: "csrrsi", 7: "csrrci"}


def _sext(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) & 1 else v


def _csr_name(n: int) -> str:
    try:
        return Csr(n).name.lower()
    except ValueError:
        return f"{n:#x}"


def _fence_set(v: int) -> str:
    s = "".join(ch for bit, ch in zip((8, 4, 2, 1), "iorw") if v & bit)
    return s or "0"


def disasm(word: int, pc: int = 0) -> str:
    """Disassemble one instruction word.

    Parameters
    ----------
    word : int
        The 32-bit instruction word (0..2^32-1).
    pc : int
        Byte address of the instruction; branch/jump targets are printed as ``pc + offset``
        (mod 2^32, hex).

    Returns
    -------
    str
        E.g. ``"addi a0,a0,1"``, ``"lw a1,8(sp)"``, ``"csrrs a0,tile_id,zero"``,
        ``"sync ARRAY"``; ``".word 0x..."`` for an illegal encoding.

    Raises
    ------
    ValueError
        If ``word`` is not a 32-bit unsigned int.
    """
    if not isinstance(word, int) or not 0 <= word <= 0xFFFFFFFF:
        raise ValueError(f"disasm: word must be a 32-bit unsigned int, not {word!r}")
    w = int(word)
    opcode = w & 0x7F
    rd, f3, rs1, rs2, f7 = w >> 7 & 31, w >> 12 & 7, w >> 15 & 31, w >> 20 & 31, w >> 25
    R = _REG
    imm_i = _sext(w >> 20, 12)
    word_str = f".word {w:#010x}"

    if opcode == Opcode.LUI:
        return f"lui {R[rd]},{w >> 12:#x}"
    if opcode == Opcode.AUIPC:
        return f"auipc {R[rd]},{w >> 12:#x}"
    if opcode == Opcode.JAL:
        off = _sext((w >> 31 & 1) << 20 | (w >> 12 & 0xFF) << 12 | (w >> 20 & 1) << 11
                    | (w >> 21 & 0x3FF) << 1, 21)
        return f"jal {R[rd]},{(pc + off) & 0xFFFFFFFF:#x}"
    if opcode == Opcode.JALR:
        return f"jalr {R[rd]},{imm_i}({R[rs1]})" if f3 == 0 else word_str
    if opcode == Opcode.BRANCH:
        if f3 not in _BRANCH:
            return word_str
        off = _sext((w >> 31 & 1) << 12 | (w >> 7 & 1) << 11 | (w >> 25 & 0x3F) << 5
                    | (w >> 8 & 0xF) << 1, 13)
        return f"{_BRANCH[f3]} {R[rs1]},{R[rs2]},{(pc + off) & 0xFFFFFFFF:#x}"
    if opcode == Opcode.LOAD:
        return f"{_LOAD[f3]} {R[rd]},{imm_i}({R[rs1]})" if f3 in _LOAD else word_str
    if opcode == Opcode.STORE:
        if f3 not in _STORE:
            return word_str
        imm_s = _sext((w >> 25) << 5 | (w >> 7 & 31), 12)
        return f"{_STORE[f3]} {R[rs2]},{imm_s}({R[rs1]})"
    if opcode == Opcode.OP_IMM:
        if f3 in _OPIMM:
            return f"{_OPIMM[f3]} {R[rd]},{R[rs1]},{imm_i}"
        if f3 == 1 and f7 == 0:
            return f"slli {R[rd]},{R[rs1]},{rs2}"
        if f3 == 5 and f7 in (0, 0x20):
            return f"{'srai' if f7 else 'srli'} {R[rd]},{R[rs1]},{rs2}"
        return word_str
    if opcode == Opcode.OP:
        if f7 == 0:
            name = _OP0[f3]
        elif f7 == 0x20 and f3 in (0, 5):
            name = "sub" if f3 == 0 else "sra"
        elif f7 == 1:
            name = _OPM[f3]
        else:
            return word_str
        return f"{name} {R[rd]},{R[rs1]},{R[rs2]}"
    if opcode == Opcode.MISC_MEM:
        if f3 != 0:
            return word_str
        return f"fence {_fence_set(w >> 24 & 0xF)},{_fence_set(w >> 20 & 0xF)}"
    if opcode == Opcode.SYSTEM:
        if w == INSN_ECALL:
            return "ecall"
        if w == INSN_EBREAK:
            return "ebreak"
        if f3 in _CSRI:
            csr = _csr_name(w >> 20)
            src = str(rs1) if f3 >= 5 else R[rs1]
            return f"{_CSRI[f3]} {R[rd]},{csr},{src}"
        return word_str
    if opcode == Opcode.CUSTOM_0:
        if f7 == 0 and f3 in (0, 1):
            return f"{'dot4' if f3 == 0 else 'dot4su'} {R[rd]},{R[rs1]},{R[rs2]}"
        return word_str
    if opcode == Opcode.CUSTOM_1:
        for zone in (SyncZone.TILE, SyncZone.ARRAY):
            if w == (int(zone) << 20 | Opcode.CUSTOM_1):
                return f"sync {zone.name}"
        return word_str
    return word_str


def disasm_program(data: bytes, base: int = 0) -> list[str]:
    """Disassemble little-endian code bytes; returns ``"addr: word  text"`` lines."""
    out = []
    for off in range(0, len(data) - len(data) % 4, 4):
        w = int.from_bytes(data[off:off + 4], "little")
        out.append(f"{base + off:08x}: {w:08x}  {disasm(w, base + off)}")
    return out
