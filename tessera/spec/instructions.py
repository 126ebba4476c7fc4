"""The instruction table: every legal encoding of Tessera's ISA, one row per instruction.

docs/architecture.md §3 is the contract; this module is its machine-readable form and the one
place where opcodes, funct3/funct7/funct12 values, operand fields, immediate layouts and ABI
register names are written down. Everything else is derived from it: the golden-model decoder
(:mod:`tessera.golden_model.decode`), the HDL decoder (:mod:`tessera.hdl.tile.core.decoder`), the
assembler and disassembler (:mod:`tessera.toolchain.asm`, :mod:`tessera.toolchain.disasm`),
``tessera.h`` and the random-program generator (:mod:`tessera.tb.randprog`).

RV32I, M and Zicsr follow the RISC-V Unprivileged ISA, version 20191213 (chapters 2, 7 and 9);
``dot4``/``dot4su``/``sync`` are Tessera's custom instructions (architecture §3.3).

Structure (after coreblocks' ``Funct3(IntEnum)`` / ``Encoding`` lists):

* named encodings: :class:`Opcode`, :class:`Funct3`, :class:`Funct7`, :class:`Funct12`,
  :class:`SyncZone`;
* :class:`Field`: where a value lives in the 32-bit word (the immediate formulas of the
  I/S/B/U/J formats are :data:`IMM_I` ... :data:`IMM_J`; extraction and insertion are
  :meth:`Field.extract` and :meth:`Field.insert`);
* :class:`Operand`: an assembly operand (a field, how it is checked and printed, and which
  slot of the decoded instruction it fills);
* :class:`Instruction`: one row (name, class, format, fixed bits, operands, one-line
  semantics); :data:`INSTRUCTIONS` is the table.

A word is a legal encoding iff exactly one row matches it (``word & row.mask == row.match``)
and, for a Zicsr row, its CSR number and write satisfy §3.2 (:func:`csr_access_legal`).
"""

from __future__ import annotations

import dataclasses
import enum
import keyword

from .csr import READ_ONLY, Csr

__all__ = [
    "Opcode", "Funct3", "Funct7", "Funct12", "SyncZone", "Format", "Kind", "OperandKind",
    "Field", "Operand", "Instruction", "CsrWrite",
    "OPCODE", "RD", "FUNCT3", "RS1", "RS2", "FUNCT7", "FUNCT12",
    "IMM_I", "IMM_S", "IMM_B", "IMM_U", "IMM_J", "SHAMT", "CSR", "UIMM", "PRED", "SUCC",
    "FORMAT_IMM", "REG_NAMES", "REG_ALIASES", "register_number",
    "FUNCT3_MEM_UNSIGNED_BIT", "FUNCT3_DIV_BIT", "FUNCT3_DIV_UNSIGNED_BIT", "FUNCT3_REM_BIT",
    "FUNCT3_CSR_IMM_BIT", "FUNCT7_ALT_BIT", "MemWidth",
    "INSTRUCTIONS", "BY_NAME", "lookup", "csr_access_legal", "is_legal", "encode",
    "sync_instruction", "encode_sync", "encode_dot4", "encode_dot4su", "encode_mrun",
    "encode_mwait", "is_division",
    "INSN_ECALL", "INSN_EBREAK", "INSN_NOP",
]


# -- named encodings -------------------------------------------------------------------------

class Opcode(enum.IntEnum):
    """Major opcodes (bits [6:0]) used by Tessera."""
    LOAD = 0b0000011
    CUSTOM_0 = 0b0001011   # dot4 / dot4su
    MISC_MEM = 0b0001111   # FENCE (a no-op on Tessera)
    OP_IMM = 0b0010011
    AUIPC = 0b0010111
    STORE = 0b0100011
    CUSTOM_1 = 0b0101011   # sync
    OP = 0b0110011
    LUI = 0b0110111
    BRANCH = 0b1100011
    JALR = 0b1100111
    JAL = 0b1101111
    SYSTEM = 0b1110011


class Funct3(enum.IntEnum):
    """funct3 values (bits [14:12]); names alias within one value (coreblocks style)."""
    JALR = BEQ = LB = SB = ADD = SUB = ADDI = MUL = FENCE = PRIV = DOT4 = SYNC = 0b000
    BNE = LH = SH = SLL = SLLI = MULH = CSRRW = DOT4SU = 0b001
    LW = SW = SLT = SLTI = MULHSU = CSRRS = MRUN = 0b010
    SLTU = SLTIU = MULHU = CSRRC = MWAIT = 0b011
    BLT = LBU = XOR = XORI = DIV = 0b100
    BGE = LHU = SRL = SRLI = SRA = SRAI = DIVU = CSRRWI = 0b101
    BLTU = OR = ORI = REM = CSRRSI = 0b110
    BGEU = AND = ANDI = REMU = CSRRCI = 0b111


class Funct7(enum.IntEnum):
    """funct7 values (bits [31:25]; imm[11:5] of the shift-immediate instructions)."""
    BASE = ADD = SLL = SLT = SLTU = XOR = SRL = OR = AND = SLLI = SRLI = DOT4 = 0b0000000
    MULDIV = 0b0000001
    ALT = SUB = SRA = SRAI = 0b0100000


class Funct12(enum.IntEnum):
    """funct12 values (bits [31:20]) of the PRIV instructions of opcode SYSTEM."""
    ECALL = 0b000000000000
    EBREAK = 0b000000000001


class SyncZone(enum.IntEnum):
    """Zones of the ``sync`` instruction (its 12-bit immediate)."""
    TILE = 0       # all non-halted contexts of this tile
    ARRAY = 1      # all tiles of the array; the exchange phase follows the release
    # 2 is reserved for EXTERNAL (several arrays joined by links, roadmap); illegal today.


class MemWidth(enum.IntEnum):
    """funct3[1:0] of LOAD/STORE: log2 of the access size in bytes."""
    BYTE = 0
    HALF = 1
    WORD = 2


#: funct3 bit of LOAD that selects zero extension (LBU, LHU).
FUNCT3_MEM_UNSIGNED_BIT = 2
#: funct3 bit of an M instruction that makes it a division (DIV, DIVU, REM, REMU).
FUNCT3_DIV_BIT = 2
#: funct3 bit of a division that makes it unsigned (DIVU, REMU).
FUNCT3_DIV_UNSIGNED_BIT = 0
#: funct3 bit of a division that selects the remainder (REM, REMU).
FUNCT3_REM_BIT = 1
#: funct3 bit of a Zicsr instruction whose source is the 5-bit uimm (CSRRWI, CSRRSI, CSRRCI);
#: funct3[1:0] is then the operation: Funct3.CSRRW, CSRRS or CSRRC.
FUNCT3_CSR_IMM_BIT = 2


# -- fields: where values live in the word ---------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Field:
    """A value stored in (possibly scattered) bits of an instruction word.

    Parameters
    ----------
    name : str
    pieces : tuple of (int, int, int)
        ``(word_lsb, value_lsb, width)``: value bits ``value_lsb .. value_lsb + width - 1``
        are word bits ``word_lsb .. word_lsb + width - 1``. Value bits not covered are 0.
    signed : bool
        The value is two's complement in :attr:`width` bits (sign = its top bit).

    Members
    -------
    width : int
        Value bits (top covered bit + 1).
    word_mask : int
        The word bits the field occupies.
    """
    name: str
    pieces: tuple
    signed: bool = False

    @property
    def width(self) -> int:
        return max(v + n for _, v, n in self.pieces)

    @property
    def word_mask(self) -> int:
        return sum(((1 << n) - 1) << w for w, _, n in self.pieces)

    @property
    def slice(self) -> slice:
        """The word bits of a one-piece field, as a slice (``word[f.slice]`` in Amaranth)."""
        if len(self.pieces) != 1:
            raise ValueError(f"field {self.name} has {len(self.pieces)} pieces, not 1")
        w, _, n = self.pieces[0]
        return slice(w, w + n)

    def extract(self, word: int) -> int:
        """The field's value in ``word`` (negative for a signed field with its top bit set)."""
        v = 0
        for w, lsb, n in self.pieces:
            v |= (word >> w & ((1 << n) - 1)) << lsb
        if self.signed and v >> (self.width - 1) & 1:
            v -= 1 << self.width
        return v

    def insert(self, value: int) -> int:
        """The word bits holding ``value`` (taken modulo 2^width; uncovered bits dropped)."""
        out = 0
        for w, lsb, n in self.pieces:
            out |= (value >> lsb & ((1 << n) - 1)) << w
        return out


OPCODE = Field("opcode", ((0, 0, 7),))
RD = Field("rd", ((7, 0, 5),))
FUNCT3 = Field("funct3", ((12, 0, 3),))
RS1 = Field("rs1", ((15, 0, 5),))
RS2 = Field("rs2", ((20, 0, 5),))
FUNCT7 = Field("funct7", ((25, 0, 7),))
FUNCT12 = Field("funct12", ((20, 0, 12),))
# Immediates of the base formats (Unprivileged ISA §2.3, figure 2.4).
IMM_I = Field("imm_i", ((20, 0, 12),), signed=True)
IMM_S = Field("imm_s", ((7, 0, 5), (25, 5, 7)), signed=True)
IMM_B = Field("imm_b", ((8, 1, 4), (25, 5, 6), (7, 11, 1), (31, 12, 1)), signed=True)
IMM_U = Field("imm_u", ((12, 12, 20),), signed=True)
IMM_J = Field("imm_j", ((21, 1, 10), (20, 11, 1), (12, 12, 8), (31, 20, 1)), signed=True)
# Other operand fields.
SHAMT = Field("shamt", ((20, 0, 5),))
CSR = Field("csr", ((20, 0, 12),))
UIMM = Field("uimm", ((15, 0, 5),))
PRED = Field("pred", ((24, 0, 4),))
SUCC = Field("succ", ((20, 0, 4),))

#: Word bit that selects SUB/SRA/SRAI (bit 5 of funct7 = Funct7.ALT).
FUNCT7_ALT_BIT = FUNCT7.pieces[0][0] + Funct7.ALT.bit_length() - 1


class Format(enum.Enum):
    """Base instruction formats (Unprivileged ISA §2.2-2.3)."""
    R = "R"
    I = "I"  # noqa: E741
    S = "S"
    B = "B"
    U = "U"
    J = "J"


#: The immediate of each format (None: R-type has none).
FORMAT_IMM = {Format.R: None, Format.I: IMM_I, Format.S: IMM_S, Format.B: IMM_B,
              Format.U: IMM_U, Format.J: IMM_J}


# -- registers -------------------------------------------------------------------------------

#: ABI register names, index = register number (RISC-V psABI).
REG_NAMES = ("zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1",
             "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
             "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
             "t3", "t4", "t5", "t6")
#: Further accepted names: ``x0`` .. ``x31`` and ``fp`` (= s0).
REG_ALIASES = {**{f"x{i}": i for i in range(32)}, "fp": 8}
_NAME_TO_REG = {**{n: i for i, n in enumerate(REG_NAMES)}, **REG_ALIASES}


def register_number(name: str) -> int | None:
    """The register number of an ABI name or ``x<n>`` (case-insensitive), else None."""
    return _NAME_TO_REG.get(name.lower())


# -- operands --------------------------------------------------------------------------------

class OperandKind(enum.Enum):
    """How an assembly operand is checked (assembler) and printed (disassembler)."""
    REG = "register"            # 0..31 or an ABI name; printed as the ABI name
    SIMM = "signed"             # signed immediate of the field's width; printed in decimal
    PCREL = "pc-relative"       # even signed byte offset; printed as the target pc + offset
    UPPER = "upper"             # imm20 (the value >> 12); printed in hex
    UIMM = "unsigned"           # unsigned immediate; printed in decimal
    CSR = "csr"                 # 12-bit CSR number; printed by name (hex if unlisted)
    FENCE_SET = "fence set"     # 4-bit i/o/r/w mask; printed as letters


@dataclasses.dataclass(frozen=True)
class Operand:
    """One assembly operand of an instruction.

    Parameters
    ----------
    name : str
        Parameter name in the assembler and placeholder in :attr:`Instruction.syntax`.
    field : Field
    kind : OperandKind
    slot : str or None
        The slot of :class:`tessera.golden_model.decode.Decoded` it fills (``rd``, ``rs1``,
        ``rs2``, ``imm``) or None (not decoded, e.g. fence's pred/succ).
    """
    name: str
    field: Field
    kind: OperandKind
    slot: str | None


_RD = Operand("rd", RD, OperandKind.REG, "rd")
_RS1 = Operand("rs1", RS1, OperandKind.REG, "rs1")
_RS2 = Operand("rs2", RS2, OperandKind.REG, "rs2")
_IMM = Operand("imm", IMM_I, OperandKind.SIMM, "imm")
_OFFSET_S = Operand("offset", IMM_S, OperandKind.SIMM, "imm")
_OFFSET_B = Operand("offset", IMM_B, OperandKind.PCREL, "imm")
_OFFSET_J = Operand("offset", IMM_J, OperandKind.PCREL, "imm")
_IMM20 = Operand("imm20", IMM_U, OperandKind.UPPER, "imm")
_SHAMT = Operand("shamt", SHAMT, OperandKind.UIMM, "imm")
_CSR = Operand("csr", CSR, OperandKind.CSR, "imm")
_UIMM = Operand("uimm", UIMM, OperandKind.UIMM, "rs1")
_PRED = Operand("pred", PRED, OperandKind.FENCE_SET, None)
_SUCC = Operand("succ", SUCC, OperandKind.FENCE_SET, None)


# -- rows ------------------------------------------------------------------------------------

class Kind(enum.Enum):
    """Execution class of an instruction (the HDL decoder's one-hot class outputs)."""
    LUI = "lui"
    AUIPC = "auipc"
    JAL = "jal"
    JALR = "jalr"
    BRANCH = "branch"
    LOAD = "load"
    STORE = "store"
    OP_IMM = "op_imm"
    OP = "op"
    MULDIV = "muldiv"
    FENCE = "fence"
    ECALL = "ecall"
    EBREAK = "ebreak"
    CSR = "csr"
    DOT4 = "dot4"
    SYNC = "sync"
    ENGINE = "engine"   # mrun / mwait (architecture §12)


class CsrWrite(enum.Enum):
    """When a Zicsr instruction writes its CSR (Unprivileged ISA §9.1)."""
    ALWAYS = "always"                 # CSRRW, CSRRWI
    IF_SOURCE = "unless rs1/uimm = 0"  # CSRRS, CSRRC, CSRRSI, CSRRCI


@dataclasses.dataclass(frozen=True)
class Instruction:
    """One row of the instruction table.

    Parameters
    ----------
    name : str
        Unique lower-case name (the golden model's ``Op`` is its upper-case form).
    kind : Kind
    fmt : Format
        Base format (gives the immediate the HDL decoder extracts).
    opcode : Opcode
    funct3, funct7 : int or None
        Required funct3 / funct7 (None: the bits are operand bits).
    fixed : tuple of (Field, int)
        Further fields with a required value (e.g. ``ecall``'s funct12, ``sync``'s zone).
    operands : tuple of Operand
        In assembler parameter order.
    syntax : str
        Operand text of the disassembly, ``str.format`` placeholders named by the operands.
    doc : str
        One-line semantics.
    mnemonic : str
        Assembly mnemonic (default: ``name``).
    defaults : tuple of (str, int)
        Assembler defaults of trailing operands.
    csr_write : CsrWrite or None
        For Zicsr rows: when the CSR is written (for the §3.2 legality rule).
    needs_engine : bool
        Legal only in a configuration with a matrix engine (``engine_macs > 0``, §12).

    Members
    -------
    mask, match : int
        The word is this instruction iff ``word & mask == match``.
    """
    name: str
    kind: Kind
    fmt: Format
    opcode: Opcode
    funct3: int | None
    funct7: int | None
    operands: tuple
    syntax: str
    doc: str
    fixed: tuple = ()
    mnemonic: str = ""
    defaults: tuple = ()
    csr_write: CsrWrite | None = None
    needs_engine: bool = False

    def __post_init__(self):
        if not self.mnemonic:
            object.__setattr__(self, "mnemonic", self.name)
        fixed = [(OPCODE, int(self.opcode))]
        if self.funct3 is not None:
            fixed.append((FUNCT3, int(self.funct3)))
        if self.funct7 is not None:
            fixed.append((FUNCT7, int(self.funct7)))
        fixed += [(f, int(v)) for f, v in self.fixed]
        mask = match = 0
        for f, v in fixed:
            mask |= f.word_mask
            match |= f.insert(v)
        object.__setattr__(self, "mask", mask)
        object.__setattr__(self, "match", match)

    @property
    def py_name(self) -> str:
        """The assembler function's name (``or_`` and ``and_`` for Python keywords)."""
        return self.name + "_" if keyword.iskeyword(self.name) else self.name

    @property
    def writes_rd(self) -> bool:
        """The instruction writes rd (its rd operand is a destination)."""
        return any(o.slot == "rd" for o in self.operands)


def _r(name, kind, opcode, f3, f7, doc):
    return Instruction(name, kind, Format.R, opcode, f3, f7, (_RD, _RS1, _RS2),
                       "{rd},{rs1},{rs2}", doc)


def _op(name, f3, f7, doc):
    kind = Kind.MULDIV if f7 == Funct7.MULDIV else Kind.OP
    return _r(name, kind, Opcode.OP, f3, f7, doc)


def _opi(name, f3, doc):
    return Instruction(name, Kind.OP_IMM, Format.I, Opcode.OP_IMM, f3, None, (_RD, _RS1, _IMM),
                       "{rd},{rs1},{imm}", doc)


def _shift(name, f3, f7, doc):
    return Instruction(name, Kind.OP_IMM, Format.I, Opcode.OP_IMM, f3, f7, (_RD, _RS1, _SHAMT),
                       "{rd},{rs1},{shamt}", doc)


def _branch(name, f3, doc):
    return Instruction(name, Kind.BRANCH, Format.B, Opcode.BRANCH, f3, None,
                       (_RS1, _RS2, _OFFSET_B), "{rs1},{rs2},{offset}", doc)


def _load(name, f3, doc):
    return Instruction(name, Kind.LOAD, Format.I, Opcode.LOAD, f3, None, (_RD, _IMM, _RS1),
                       "{rd},{imm}({rs1})", doc)


def _store(name, f3, doc):
    return Instruction(name, Kind.STORE, Format.S, Opcode.STORE, f3, None,
                       (_RS2, _OFFSET_S, _RS1), "{rs2},{offset}({rs1})", doc)


def _csr(name, f3, write, doc):
    src = _UIMM if f3 >> FUNCT3_CSR_IMM_BIT & 1 else _RS1
    return Instruction(name, Kind.CSR, Format.I, Opcode.SYSTEM, f3, None, (_RD, _CSR, src),
                       "{rd},{csr},{%s}" % src.name, doc, csr_write=write)


def _sync(zone: SyncZone, doc):
    return Instruction(f"sync_{zone.name.lower()}", Kind.SYNC, Format.I, Opcode.CUSTOM_1,
                       Funct3.SYNC, None, (), zone.name, doc,
                       fixed=((RD, 0), (RS1, 0), (IMM_I, zone)), mnemonic="sync")


def _priv(name, kind, f12, doc):
    return Instruction(name, kind, Format.I, Opcode.SYSTEM, Funct3.PRIV, None, (), "", doc,
                       fixed=((RD, 0), (RS1, 0), (FUNCT12, f12)))


F3, F7, W = Funct3, Funct7, CsrWrite

#: The instruction table (order = the golden model's ``Op`` numbering, 1..).
INSTRUCTIONS: tuple = (
    Instruction("lui", Kind.LUI, Format.U, Opcode.LUI, None, None, (_RD, _IMM20),
                "{rd},{imm20}", "rd = imm20 << 12"),
    Instruction("auipc", Kind.AUIPC, Format.U, Opcode.AUIPC, None, None, (_RD, _IMM20),
                "{rd},{imm20}", "rd = pc + (imm20 << 12)"),
    Instruction("jal", Kind.JAL, Format.J, Opcode.JAL, None, None, (_RD, _OFFSET_J),
                "{rd},{offset}", "rd = pc + 4; pc += offset"),
    Instruction("jalr", Kind.JALR, Format.I, Opcode.JALR, F3.JALR, None, (_RD, _RS1, _IMM),
                "{rd},{imm}({rs1})", "rd = pc + 4; pc = (rs1 + imm) & ~1",
                defaults=(("imm", 0),)),
    _branch("beq", F3.BEQ, "branch if rs1 == rs2"),
    _branch("bne", F3.BNE, "branch if rs1 != rs2"),
    _branch("blt", F3.BLT, "branch if rs1 < rs2 (signed)"),
    _branch("bge", F3.BGE, "branch if rs1 >= rs2 (signed)"),
    _branch("bltu", F3.BLTU, "branch if rs1 < rs2 (unsigned)"),
    _branch("bgeu", F3.BGEU, "branch if rs1 >= rs2 (unsigned)"),
    _load("lb", F3.LB, "load byte, sign-extended"),
    _load("lh", F3.LH, "load half, sign-extended"),
    _load("lw", F3.LW, "load word"),
    _load("lbu", F3.LBU, "load byte, zero-extended"),
    _load("lhu", F3.LHU, "load half, zero-extended"),
    _store("sb", F3.SB, "store the low byte of rs2"),
    _store("sh", F3.SH, "store the low half of rs2"),
    _store("sw", F3.SW, "store rs2"),
    _op("add", F3.ADD, F7.ADD, "rd = rs1 + rs2"),
    _op("sub", F3.SUB, F7.SUB, "rd = rs1 - rs2"),
    _op("sll", F3.SLL, F7.SLL, "rd = rs1 << rs2[4:0]"),
    _op("slt", F3.SLT, F7.SLT, "rd = rs1 < rs2 (signed)"),
    _op("sltu", F3.SLTU, F7.SLTU, "rd = rs1 < rs2 (unsigned)"),
    _op("xor", F3.XOR, F7.XOR, "rd = rs1 ^ rs2"),
    _op("srl", F3.SRL, F7.SRL, "rd = rs1 >> rs2[4:0] (logical)"),
    _op("sra", F3.SRA, F7.SRA, "rd = rs1 >> rs2[4:0] (arithmetic)"),
    _op("or", F3.OR, F7.OR, "rd = rs1 | rs2"),
    _op("and", F3.AND, F7.AND, "rd = rs1 & rs2"),
    _op("mul", F3.MUL, F7.MULDIV, "rd = low word of rs1 * rs2"),
    _op("mulh", F3.MULH, F7.MULDIV, "rd = high word of signed * signed"),
    _op("mulhsu", F3.MULHSU, F7.MULDIV, "rd = high word of signed * unsigned"),
    _op("mulhu", F3.MULHU, F7.MULDIV, "rd = high word of unsigned * unsigned"),
    _op("div", F3.DIV, F7.MULDIV, "rd = rs1 / rs2 (signed)"),
    _op("divu", F3.DIVU, F7.MULDIV, "rd = rs1 / rs2 (unsigned)"),
    _op("rem", F3.REM, F7.MULDIV, "rd = rs1 % rs2 (signed)"),
    _op("remu", F3.REMU, F7.MULDIV, "rd = rs1 % rs2 (unsigned)"),
    _opi("addi", F3.ADDI, "rd = rs1 + imm"),
    _opi("slti", F3.SLTI, "rd = rs1 < imm (signed)"),
    _opi("sltiu", F3.SLTIU, "rd = rs1 < imm (unsigned, imm sign-extended)"),
    _opi("xori", F3.XORI, "rd = rs1 ^ imm"),
    _opi("ori", F3.ORI, "rd = rs1 | imm"),
    _opi("andi", F3.ANDI, "rd = rs1 & imm"),
    _shift("slli", F3.SLLI, F7.SLLI, "rd = rs1 << shamt"),
    _shift("srli", F3.SRLI, F7.SRLI, "rd = rs1 >> shamt (logical)"),
    _shift("srai", F3.SRAI, F7.SRAI, "rd = rs1 >> shamt (arithmetic)"),
    Instruction("fence", Kind.FENCE, Format.I, Opcode.MISC_MEM, F3.FENCE, None, (_PRED, _SUCC),
                "{pred},{succ}", "memory ordering; a no-op on Tessera",
                defaults=(("pred", 0xF), ("succ", 0xF))),
    _priv("ecall", Kind.ECALL, Funct12.ECALL, "halt this context (exit code a0)"),
    _priv("ebreak", Kind.EBREAK, Funct12.EBREAK, "raise the breakpoint fault"),
    _csr("csrrw", F3.CSRRW, W.ALWAYS, "rd = csr; csr = rs1"),
    _csr("csrrs", F3.CSRRS, W.IF_SOURCE, "rd = csr; csr |= rs1 (no write if rs1 = x0)"),
    _csr("csrrc", F3.CSRRC, W.IF_SOURCE, "rd = csr; csr &= ~rs1 (no write if rs1 = x0)"),
    _csr("csrrwi", F3.CSRRWI, W.ALWAYS, "rd = csr; csr = uimm"),
    _csr("csrrsi", F3.CSRRSI, W.IF_SOURCE, "rd = csr; csr |= uimm (no write if uimm = 0)"),
    _csr("csrrci", F3.CSRRCI, W.IF_SOURCE, "rd = csr; csr &= ~uimm (no write if uimm = 0)"),
    _r("dot4", Kind.DOT4, Opcode.CUSTOM_0, F3.DOT4, F7.DOT4,
       "rd += sum_i s8(rs1.byte[i]) * s8(rs2.byte[i]) (mod 2^32)"),
    _r("dot4su", Kind.DOT4, Opcode.CUSTOM_0, F3.DOT4SU, F7.DOT4,
       "rd += sum_i s8(rs1.byte[i]) * u8(rs2.byte[i]) (mod 2^32)"),
    _sync(SyncZone.TILE, "wait at this tile's barrier"),
    _sync(SyncZone.ARRAY, "wait at the array barrier; the exchange phase follows"),
    Instruction("mrun", Kind.ENGINE, Format.R, Opcode.CUSTOM_0, F3.MRUN, F7.DOT4, (_RS1,),
                "{rs1}", "start the matrix-engine command whose descriptor is at rs1 (§12)",
                fixed=((RD, 0), (RS2, 0)), needs_engine=True),
    Instruction("mwait", Kind.ENGINE, Format.I, Opcode.CUSTOM_0, F3.MWAIT, None, (), "",
                "wait until the tile's matrix engine is idle (§12)",
                fixed=((RD, 0), (RS1, 0), (IMM_I, 0)), needs_engine=True),
)
del F3, F7, W

#: Row by name.
BY_NAME = {row.name: row for row in INSTRUCTIONS}
_BY_OPCODE: dict = {}
for _row in INSTRUCTIONS:
    _BY_OPCODE.setdefault(int(_row.opcode), []).append(_row)
del _row
_CSR_NUMBERS = frozenset(int(c) for c in Csr)
_CSR_READ_ONLY = frozenset(int(c) for c in READ_ONLY)


def lookup(word: int) -> Instruction | None:
    """The row matching ``word`` (bits [6:0] pick the opcode's rows), or None.

    The Zicsr rule of §3.2 is not applied here (see :func:`csr_access_legal`).
    """
    for row in _BY_OPCODE.get(word & OPCODE.word_mask, ()):
        if word & row.mask == row.match:
            return row
    return None


def csr_access_legal(row: Instruction, word: int) -> bool:
    """§3.2: the CSR number of a Zicsr ``word`` is listed and a write goes to a writable CSR.

    True for every row that is not a Zicsr instruction.
    """
    if row.csr_write is None:
        return True
    csr = CSR.extract(word)
    writes = row.csr_write is CsrWrite.ALWAYS or RS1.extract(word) != 0
    return csr in _CSR_NUMBERS and not (writes and csr in _CSR_READ_ONLY)


def is_legal(word: int, *, engine: bool = True) -> bool:
    """``word`` is a legal encoding (architecture §3.1 table and the §3.2 CSR rule).

    ``engine`` says whether the configuration has a matrix engine (``engine_macs > 0``);
    without one, ``mrun``/``mwait`` are illegal (§3.1, §12).
    """
    row = lookup(word)
    return (row is not None and csr_access_legal(row, word)
            and (engine or not row.needs_engine))


def encode(name: str, **operands: int) -> int:
    """The word of instruction ``name`` with the given operand values (no range checks).

    Operand values are raw field values (registers as numbers, immediates as the value the
    field holds, e.g. a U-type immediate as ``imm20 << 12``); missing operands are 0. The
    checked, user-facing form is :mod:`tessera.toolchain.asm`.
    """
    row = BY_NAME[name]
    word = row.match
    for op in row.operands:
        word |= op.field.insert(int(operands.pop(op.name, 0)))
    if operands:
        raise TypeError(f"{name}: unknown operand(s) {sorted(operands)}")
    return word


def _reg(name: str, r: int) -> int:
    if not isinstance(r, int) or isinstance(r, bool) or not 0 <= r < 32:
        raise ValueError(f"{name} must be a register number 0..31, not {r!r}")
    return r


def sync_instruction(zone: int) -> Instruction:
    """The ``sync`` row of ``zone`` (a :class:`SyncZone` value).

    Raises
    ------
    ValueError
        If ``zone`` is not a :class:`SyncZone` (2 = EXTERNAL is reserved).
    """
    return BY_NAME[f"sync_{SyncZone(zone).name.lower()}"]


def encode_sync(zone: int) -> int:
    """``sync zone``: wait at the barrier of ``zone`` (a :class:`SyncZone`)."""
    return sync_instruction(zone).match


def encode_dot4(rd: int, rs1: int, rs2: int) -> int:
    """``dot4 rd, rs1, rs2``: rd ← rd + Σ_{i<4} s8(rs1[8i+7:8i]) · s8(rs2[8i+7:8i]) (mod 2^32)."""
    return encode("dot4", rd=_reg("rd", rd), rs1=_reg("rs1", rs1), rs2=_reg("rs2", rs2))


def encode_dot4su(rd: int, rs1: int, rs2: int) -> int:
    """``dot4su rd, rs1, rs2``: rd ← rd + Σ_{i<4} s8(rs1 byte i) · u8(rs2 byte i) (mod 2^32)."""
    return encode("dot4su", rd=_reg("rd", rd), rs1=_reg("rs1", rs1), rs2=_reg("rs2", rs2))


def encode_mrun(rs1: int) -> int:
    """``mrun rs1``: start the matrix-engine command whose descriptor is at rs1 (§12)."""
    return encode("mrun", rs1=_reg("rs1", rs1))


def encode_mwait() -> int:
    """``mwait``: retry until the tile's matrix engine is idle (§12)."""
    return BY_NAME["mwait"].match


_DIVISIONS = frozenset(BY_NAME[n] for n in ("div", "divu", "rem", "remu"))


def is_division(word: int) -> bool:
    """True if the 32-bit instruction ``word`` is DIV, DIVU, REM or REMU (architecture §4,
    "Division": the one multi-turn instruction)."""
    return lookup(word) in _DIVISIONS


INSN_ECALL = BY_NAME["ecall"].match
INSN_EBREAK = BY_NAME["ebreak"].match
INSN_NOP = encode("addi")  # addi x0, x0, 0
