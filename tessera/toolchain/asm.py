"""A tiny Python assembler for tests: one function per instruction, returning 32-bit words.

Covers RV32I + M (RISC-V Unprivileged ISA 20191213, chapters 2 and 7), Zicsr (chapter 9),
``ecall``/``ebreak``/``fence`` and Tessera's custom instructions (``dot4``, ``dot4su``,
``sync``; encodings imported from :mod:`tessera.spec.isa`, see docs/architecture.md §3.3).

Operand order follows the assembly syntax::

    asm.addi(rd, rs1, imm)      asm.lw(rd, imm, rs1)     asm.sw(rs2, imm, rs1)
    asm.beq(rs1, rs2, offset)   asm.jal(rd, offset)      asm.lui(rd, imm20)
    asm.csrrw(rd, csr, rs1)     asm.csrrwi(rd, csr, uimm)

Registers are ints 0..31 or names (``"x5"``, ``"a0"``, ``"zero"``, ``"sp"``, ``"fp"``...).
Branch and jump offsets are byte offsets relative to the instruction. Every function checks
its operands and raises :class:`ValueError` naming the instruction, operand and value.

Examples
--------
>>> hex(addi("a0", "a0", 1))
'0x150513'
>>> program([ecall()])
b's\\x00\\x00\\x00'
"""

from __future__ import annotations

import struct

from tessera.spec.csr import Csr
from tessera.spec.isa import INSN_EBREAK, INSN_ECALL, CustomFunct3, Opcode, SyncZone, encode_sync

__all__ = [
    "REG_NAMES", "reg", "program", "li",
    "lui", "auipc", "jal", "jalr",
    "beq", "bne", "blt", "bge", "bltu", "bgeu",
    "lb", "lh", "lw", "lbu", "lhu", "sb", "sh", "sw",
    "addi", "slti", "sltiu", "xori", "ori", "andi", "slli", "srli", "srai",
    "add", "sub", "sll", "slt", "sltu", "xor", "srl", "sra", "or_", "and_",
    "mul", "mulh", "mulhsu", "mulhu", "div", "divu", "rem", "remu",
    "fence", "ecall", "ebreak",
    "csrrw", "csrrs", "csrrc", "csrrwi", "csrrsi", "csrrci", "csrr", "csrw",
    "dot4", "dot4su", "sync", "sync_tile", "sync_array",
    "nop", "mv", "j", "ret",
]

#: ABI register names, index = register number (RISC-V psABI).
REG_NAMES = ("zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1",
             "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
             "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
             "t3", "t4", "t5", "t6")
_NAME_TO_REG = {n: i for i, n in enumerate(REG_NAMES)}
_NAME_TO_REG.update({f"x{i}": i for i in range(32)})
_NAME_TO_REG["fp"] = 8


def reg(r: int | str, *, insn: str = "?", operand: str = "register") -> int:
    """Return the register number of ``r`` (int 0..31 or a name such as ``"a0"``).

    Raises
    ------
    ValueError
        If ``r`` is not a register; the message names the instruction and operand.
    """
    if isinstance(r, str):
        if r.lower() in _NAME_TO_REG:
            return _NAME_TO_REG[r.lower()]
    elif isinstance(r, int) and not isinstance(r, bool) and 0 <= r < 32:
        return r
    raise ValueError(f"{insn}: {operand} must be a register 0..31 or an ABI name, not {r!r}")


def _int(insn: str, operand: str, v) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(f"{insn}: {operand} must be an int, not {v!r}")
    return int(v)


def _simm(insn: str, operand: str, v, bits: int) -> int:
    v = _int(insn, operand, v)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not lo <= v <= hi:
        raise ValueError(f"{insn}: {operand} {v} does not fit in {bits} signed bits ({lo}..{hi})")
    return v & ((1 << bits) - 1)


def _uimm(insn: str, operand: str, v, bits: int) -> int:
    v = _int(insn, operand, v)
    if not 0 <= v < (1 << bits):
        raise ValueError(f"{insn}: {operand} {v} is outside 0..{(1 << bits) - 1}")
    return v


def _r(insn, opcode, f3, f7, rd, rs1, rs2) -> int:
    return (f7 << 25 | reg(rs2, insn=insn, operand="rs2") << 20
            | reg(rs1, insn=insn, operand="rs1") << 15 | f3 << 12
            | reg(rd, insn=insn, operand="rd") << 7 | opcode)


def _i(insn, opcode, f3, rd, rs1, imm) -> int:
    return (_simm(insn, "imm", imm, 12) << 20 | reg(rs1, insn=insn, operand="rs1") << 15
            | f3 << 12 | reg(rd, insn=insn, operand="rd") << 7 | opcode)


def _s(insn, f3, rs2, imm, rs1) -> int:
    v = _simm(insn, "offset", imm, 12)
    return ((v >> 5) << 25 | reg(rs2, insn=insn, operand="rs2") << 20
            | reg(rs1, insn=insn, operand="rs1") << 15 | f3 << 12 | (v & 0x1F) << 7
            | Opcode.STORE)


def _b(insn, f3, rs1, rs2, offset) -> int:
    off = _int(insn, "offset", offset)
    if off % 2:
        raise ValueError(f"{insn}: branch offset {off} must be even")
    v = _simm(insn, "offset", off, 13)
    return ((v >> 12 & 1) << 31 | (v >> 5 & 0x3F) << 25 | reg(rs2, insn=insn, operand="rs2") << 20
            | reg(rs1, insn=insn, operand="rs1") << 15 | f3 << 12
            | (v >> 1 & 0xF) << 8 | (v >> 11 & 1) << 7 | Opcode.BRANCH)


def _csr_num(insn, csr) -> int:
    return _uimm(insn, "csr", int(csr) if isinstance(csr, Csr) else csr, 12)


# -- U / J --------------------------------------------------------------------------------

def lui(rd, imm20: int) -> int:
    """``lui rd, imm20``: rd ← imm20 << 12. ``imm20`` in 0..0xFFFFF (or -2^19..-1)."""
    v = _int("lui", "imm20", imm20)
    if not -(1 << 19) <= v < (1 << 20):
        raise ValueError(f"lui: imm20 {v} is outside -2^19..2^20-1")
    return (v & 0xFFFFF) << 12 | reg(rd, insn="lui", operand="rd") << 7 | Opcode.LUI


def auipc(rd, imm20: int) -> int:
    """``auipc rd, imm20``: rd ← pc + (imm20 << 12)."""
    v = _int("auipc", "imm20", imm20)
    if not -(1 << 19) <= v < (1 << 20):
        raise ValueError(f"auipc: imm20 {v} is outside -2^19..2^20-1")
    return (v & 0xFFFFF) << 12 | reg(rd, insn="auipc", operand="rd") << 7 | Opcode.AUIPC


def jal(rd, offset: int) -> int:
    """``jal rd, offset``: byte offset, even, in -2^20..2^20-2."""
    off = _int("jal", "offset", offset)
    if off % 2:
        raise ValueError(f"jal: offset {off} must be even")
    v = _simm("jal", "offset", off, 21)
    return ((v >> 20 & 1) << 31 | (v >> 1 & 0x3FF) << 21 | (v >> 11 & 1) << 20
            | (v >> 12 & 0xFF) << 12 | reg(rd, insn="jal", operand="rd") << 7 | Opcode.JAL)


def jalr(rd, rs1, imm: int = 0) -> int:
    """``jalr rd, imm(rs1)`` (operands in the order rd, rs1, imm)."""
    return _i("jalr", Opcode.JALR, 0, rd, rs1, imm)


# -- branches -----------------------------------------------------------------------------

def beq(rs1, rs2, offset): return _b("beq", 0, rs1, rs2, offset)
def bne(rs1, rs2, offset): return _b("bne", 1, rs1, rs2, offset)
def blt(rs1, rs2, offset): return _b("blt", 4, rs1, rs2, offset)
def bge(rs1, rs2, offset): return _b("bge", 5, rs1, rs2, offset)
def bltu(rs1, rs2, offset): return _b("bltu", 6, rs1, rs2, offset)
def bgeu(rs1, rs2, offset): return _b("bgeu", 7, rs1, rs2, offset)


# -- loads / stores -------------------------------------------------------------------------

def lb(rd, imm, rs1): return _i("lb", Opcode.LOAD, 0, rd, rs1, imm)
def lh(rd, imm, rs1): return _i("lh", Opcode.LOAD, 1, rd, rs1, imm)
def lw(rd, imm, rs1): return _i("lw", Opcode.LOAD, 2, rd, rs1, imm)
def lbu(rd, imm, rs1): return _i("lbu", Opcode.LOAD, 4, rd, rs1, imm)
def lhu(rd, imm, rs1): return _i("lhu", Opcode.LOAD, 5, rd, rs1, imm)
def sb(rs2, imm, rs1): return _s("sb", 0, rs2, imm, rs1)
def sh(rs2, imm, rs1): return _s("sh", 1, rs2, imm, rs1)
def sw(rs2, imm, rs1): return _s("sw", 2, rs2, imm, rs1)


# -- OP-IMM ---------------------------------------------------------------------------------

def addi(rd, rs1, imm): return _i("addi", Opcode.OP_IMM, 0, rd, rs1, imm)
def slti(rd, rs1, imm): return _i("slti", Opcode.OP_IMM, 2, rd, rs1, imm)
def sltiu(rd, rs1, imm): return _i("sltiu", Opcode.OP_IMM, 3, rd, rs1, imm)
def xori(rd, rs1, imm): return _i("xori", Opcode.OP_IMM, 4, rd, rs1, imm)
def ori(rd, rs1, imm): return _i("ori", Opcode.OP_IMM, 6, rd, rs1, imm)
def andi(rd, rs1, imm): return _i("andi", Opcode.OP_IMM, 7, rd, rs1, imm)


def _shift_imm(insn, f3, f7, rd, rs1, shamt) -> int:
    sh = _uimm(insn, "shamt", shamt, 5)
    return _r(insn, Opcode.OP_IMM, f3, f7, rd, rs1, 0) | sh << 20


def slli(rd, rs1, shamt): return _shift_imm("slli", 1, 0x00, rd, rs1, shamt)
def srli(rd, rs1, shamt): return _shift_imm("srli", 5, 0x00, rd, rs1, shamt)
def srai(rd, rs1, shamt): return _shift_imm("srai", 5, 0x20, rd, rs1, shamt)


# -- OP -------------------------------------------------------------------------------------

def add(rd, rs1, rs2): return _r("add", Opcode.OP, 0, 0x00, rd, rs1, rs2)
def sub(rd, rs1, rs2): return _r("sub", Opcode.OP, 0, 0x20, rd, rs1, rs2)
def sll(rd, rs1, rs2): return _r("sll", Opcode.OP, 1, 0x00, rd, rs1, rs2)
def slt(rd, rs1, rs2): return _r("slt", Opcode.OP, 2, 0x00, rd, rs1, rs2)
def sltu(rd, rs1, rs2): return _r("sltu", Opcode.OP, 3, 0x00, rd, rs1, rs2)
def xor(rd, rs1, rs2): return _r("xor", Opcode.OP, 4, 0x00, rd, rs1, rs2)
def srl(rd, rs1, rs2): return _r("srl", Opcode.OP, 5, 0x00, rd, rs1, rs2)
def sra(rd, rs1, rs2): return _r("sra", Opcode.OP, 5, 0x20, rd, rs1, rs2)
def or_(rd, rs1, rs2): return _r("or", Opcode.OP, 6, 0x00, rd, rs1, rs2)
def and_(rd, rs1, rs2): return _r("and", Opcode.OP, 7, 0x00, rd, rs1, rs2)
def mul(rd, rs1, rs2): return _r("mul", Opcode.OP, 0, 0x01, rd, rs1, rs2)
def mulh(rd, rs1, rs2): return _r("mulh", Opcode.OP, 1, 0x01, rd, rs1, rs2)
def mulhsu(rd, rs1, rs2): return _r("mulhsu", Opcode.OP, 2, 0x01, rd, rs1, rs2)
def mulhu(rd, rs1, rs2): return _r("mulhu", Opcode.OP, 3, 0x01, rd, rs1, rs2)
def div(rd, rs1, rs2): return _r("div", Opcode.OP, 4, 0x01, rd, rs1, rs2)
def divu(rd, rs1, rs2): return _r("divu", Opcode.OP, 5, 0x01, rd, rs1, rs2)
def rem(rd, rs1, rs2): return _r("rem", Opcode.OP, 6, 0x01, rd, rs1, rs2)
def remu(rd, rs1, rs2): return _r("remu", Opcode.OP, 7, 0x01, rd, rs1, rs2)


# -- system ---------------------------------------------------------------------------------

def fence(pred: int = 0xF, succ: int = 0xF) -> int:
    """``fence pred, succ`` (a no-op on Tessera). pred/succ are 4-bit iorw masks."""
    p = _uimm("fence", "pred", pred, 4)
    s = _uimm("fence", "succ", succ, 4)
    return p << 24 | s << 20 | Opcode.MISC_MEM


def ecall() -> int:
    """``ecall``: halt this context (exit code a0)."""
    return INSN_ECALL


def ebreak() -> int:
    """``ebreak``: raises the ``breakpoint`` fault."""
    return INSN_EBREAK


def _csr(insn, f3, rd, csr, rs1) -> int:
    return (_csr_num(insn, csr) << 20 | reg(rs1, insn=insn, operand="rs1") << 15 | f3 << 12
            | reg(rd, insn=insn, operand="rd") << 7 | Opcode.SYSTEM)


def _csri(insn, f3, rd, csr, uimm) -> int:
    return (_csr_num(insn, csr) << 20 | _uimm(insn, "uimm", uimm, 5) << 15 | f3 << 12
            | reg(rd, insn=insn, operand="rd") << 7 | Opcode.SYSTEM)


def csrrw(rd, csr, rs1): return _csr("csrrw", 1, rd, csr, rs1)
def csrrs(rd, csr, rs1): return _csr("csrrs", 2, rd, csr, rs1)
def csrrc(rd, csr, rs1): return _csr("csrrc", 3, rd, csr, rs1)
def csrrwi(rd, csr, uimm): return _csri("csrrwi", 5, rd, csr, uimm)
def csrrsi(rd, csr, uimm): return _csri("csrrsi", 6, rd, csr, uimm)
def csrrci(rd, csr, uimm): return _csri("csrrci", 7, rd, csr, uimm)


def csrr(rd, csr) -> int:
    """``csrr rd, csr`` = ``csrrs rd, csr, x0`` (read only, no write)."""
    return csrrs(rd, csr, 0)


def csrw(csr, rs1) -> int:
    """``csrw csr, rs1`` = ``csrrw x0, csr, rs1``."""
    return csrrw(0, csr, rs1)


# -- custom ---------------------------------------------------------------------------------

def dot4(rd, rs1, rs2) -> int:
    """``dot4 rd, rs1, rs2`` (docs/architecture.md §3.3)."""
    return _r("dot4", Opcode.CUSTOM_0, CustomFunct3.DOT4, 0, rd, rs1, rs2)


def dot4su(rd, rs1, rs2) -> int:
    """``dot4su rd, rs1, rs2`` (docs/architecture.md §3.3)."""
    return _r("dot4su", Opcode.CUSTOM_0, CustomFunct3.DOT4SU, 0, rd, rs1, rs2)


def sync(zone: int | str = SyncZone.TILE) -> int:
    """``sync TILE`` / ``sync ARRAY``; ``zone`` is a :class:`~tessera.spec.isa.SyncZone`, 0/1, or a name."""
    if isinstance(zone, str):
        try:
            zone = SyncZone[zone.upper()]
        except KeyError:
            raise ValueError(f"sync: unknown zone {zone!r}; use TILE or ARRAY") from None
    try:
        return encode_sync(zone)
    except ValueError:
        raise ValueError(f"sync: unknown zone {zone!r}; use TILE (0) or ARRAY (1)") from None


def sync_tile() -> int:
    """``sync TILE`` (0x0000002B)."""
    return sync(SyncZone.TILE)


def sync_array() -> int:
    """``sync ARRAY`` (0x0010002B)."""
    return sync(SyncZone.ARRAY)


# -- pseudo-instructions ----------------------------------------------------------------------

def nop() -> int:
    """``nop`` = ``addi x0, x0, 0``."""
    return addi(0, 0, 0)


def mv(rd, rs1) -> int:
    """``mv rd, rs1`` = ``addi rd, rs1, 0``."""
    return addi(rd, rs1, 0)


def j(offset) -> int:
    """``j offset`` = ``jal x0, offset``."""
    return jal(0, offset)


def ret() -> int:
    """``ret`` = ``jalr x0, 0(ra)``."""
    return jalr(0, 1, 0)


def li(rd, value: int) -> list[int]:
    """``li rd, value``: load a 32-bit constant.

    Parameters
    ----------
    rd : int or str
        Destination register.
    value : int
        Any value in -2^31..2^32-1 (taken mod 2^32).

    Returns
    -------
    list of int
        One word (``addi``) if the value fits 12 signed bits, else ``lui`` (+ ``addi`` if the
        low 12 bits are non-zero).

    Raises
    ------
    ValueError
        If ``value`` is out of range or ``rd`` is not a register.
    """
    v = _int("li", "value", value)
    if not -(1 << 31) <= v < (1 << 32):
        raise ValueError(f"li: value {v} is outside -2^31..2^32-1")
    v &= 0xFFFFFFFF
    sv = v - (1 << 32) if v >> 31 else v
    if -2048 <= sv <= 2047:
        return [addi(rd, 0, sv)]
    lo = v & 0xFFF
    if lo >= 0x800:
        lo -= 0x1000
    hi = ((v - lo) >> 12) & 0xFFFFF
    out = [lui(rd, hi)]
    if lo:
        out.append(addi(rd, rd, lo))
    return out


def program(words) -> bytes:
    """Pack instruction words (ints or nested lists, e.g. from :func:`li`) little-endian.

    Raises
    ------
    ValueError
        If an item is not a 32-bit unsigned int; the message gives its index.
    """
    flat: list[int] = []

    def add_item(w):
        if isinstance(w, (list, tuple)):
            for x in w:
                add_item(x)
            return
        if not isinstance(w, int) or isinstance(w, bool) or not 0 <= w <= 0xFFFFFFFF:
            raise ValueError(f"program: word #{len(flat)} is not a 32-bit unsigned int: {w!r}")
        flat.append(int(w))

    add_item(list(words))
    return struct.pack(f"<{len(flat)}I", *flat)


# -- one-line docstrings for the table-like functions above ------------------------------------
_DOCS = {
    "beq": "branch if rs1 == rs2", "bne": "branch if rs1 != rs2",
    "blt": "branch if rs1 < rs2 (signed)", "bge": "branch if rs1 >= rs2 (signed)",
    "bltu": "branch if rs1 < rs2 (unsigned)", "bgeu": "branch if rs1 >= rs2 (unsigned)",
    "lb": "load byte, sign-extended", "lh": "load half, sign-extended", "lw": "load word",
    "lbu": "load byte, zero-extended", "lhu": "load half, zero-extended",
    "sb": "store the low byte of rs2", "sh": "store the low half of rs2", "sw": "store rs2",
    "addi": "rd = rs1 + imm", "slti": "rd = rs1 < imm (signed)",
    "sltiu": "rd = rs1 < imm (unsigned, imm sign-extended)", "xori": "rd = rs1 ^ imm",
    "ori": "rd = rs1 | imm", "andi": "rd = rs1 & imm", "slli": "rd = rs1 << shamt",
    "srli": "rd = rs1 >> shamt (logical)", "srai": "rd = rs1 >> shamt (arithmetic)",
    "add": "rd = rs1 + rs2", "sub": "rd = rs1 - rs2", "sll": "rd = rs1 << rs2[4:0]",
    "slt": "rd = rs1 < rs2 (signed)", "sltu": "rd = rs1 < rs2 (unsigned)",
    "xor": "rd = rs1 ^ rs2", "srl": "rd = rs1 >> rs2[4:0] (logical)",
    "sra": "rd = rs1 >> rs2[4:0] (arithmetic)", "or_": "rd = rs1 | rs2 (``or``)",
    "and_": "rd = rs1 & rs2 (``and``)", "mul": "rd = low word of rs1 * rs2",
    "mulh": "rd = high word of signed * signed", "mulhsu": "rd = high word of signed * unsigned",
    "mulhu": "rd = high word of unsigned * unsigned", "div": "rd = rs1 / rs2 (signed)",
    "divu": "rd = rs1 / rs2 (unsigned)", "rem": "rd = rs1 % rs2 (signed)",
    "remu": "rd = rs1 % rs2 (unsigned)",
    "csrrw": "rd = csr; csr = rs1", "csrrs": "rd = csr; csr |= rs1 (no write if rs1 = x0)",
    "csrrc": "rd = csr; csr &= ~rs1 (no write if rs1 = x0)", "csrrwi": "rd = csr; csr = uimm",
    "csrrsi": "rd = csr; csr |= uimm (no write if uimm = 0)",
    "csrrci": "rd = csr; csr &= ~uimm (no write if uimm = 0)",
}
_FORMS = {
    **{n: "(rs1, rs2, offset): offset in bytes from this instruction, even, 13-bit signed"
       for n in ("beq", "bne", "blt", "bge", "bltu", "bgeu")},
    **{n: "(rd, imm, rs1): address rs1 + imm, imm 12-bit signed"
       for n in ("lb", "lh", "lw", "lbu", "lhu")},
    **{n: "(rs2, imm, rs1): address rs1 + imm, imm 12-bit signed" for n in ("sb", "sh", "sw")},
    **{n: "(rd, rs1, imm): imm 12-bit signed"
       for n in ("addi", "slti", "sltiu", "xori", "ori", "andi")},
    **{n: "(rd, rs1, shamt): shamt 0..31" for n in ("slli", "srli", "srai")},
    **{n: "(rd, rs1, rs2)" for n in ("add", "sub", "sll", "slt", "sltu", "xor", "srl", "sra",
                                     "or_", "and_", "mul", "mulh", "mulhsu", "mulhu", "div",
                                     "divu", "rem", "remu")},
    **{n: "(rd, csr, rs1): csr is a tessera.spec.csr.Csr or a 12-bit number"
       for n in ("csrrw", "csrrs", "csrrc")},
    **{n: "(rd, csr, uimm): uimm 0..31" for n in ("csrrwi", "csrrsi", "csrrci")},
}
for _name, _text in _DOCS.items():
    globals()[_name].__doc__ = (
        f"``{_name.rstrip('_')}``: {_text}. Operands {_FORMS[_name]}.\n\n"
        "Returns the 32-bit instruction word; raises ValueError on a bad operand.")
del _name, _text
