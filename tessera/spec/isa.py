"""Instruction encodings: RV32IM opcodes and Tessera's custom instructions.

Defined once here and imported by hdl, golden model, toolchain (``tessera.h``) and tb.
RV32IM semantics follow the RISC-V Unprivileged ISA, version 20191213 (chapters 2, 7, 9);
the custom instructions follow docs/architecture.md, "Custom instructions".
"""

from __future__ import annotations

import enum

__all__ = [
    "Opcode", "SyncZone", "CustomFunct3",
    "encode_r", "encode_i", "encode_dot4", "encode_dot4su", "encode_sync",
    "INSN_ECALL", "INSN_EBREAK", "INSN_NOP", "MACS_PER_DOT4",
    "DIV_BITS_PER_TURN", "DIV_TURNS", "is_division",
]


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


class CustomFunct3(enum.IntEnum):
    """funct3 values inside the custom opcodes."""
    DOT4 = 0b000     # CUSTOM_0, funct7 = 0: rd += sum_i s8(rs1.b[i]) * s8(rs2.b[i])
    DOT4SU = 0b001   # CUSTOM_0, funct7 = 0: rd += sum_i s8(rs1.b[i]) * u8(rs2.b[i])
    SYNC = 0b000     # CUSTOM_1, rd = rs1 = 0, imm[11:0] = zone


class SyncZone(enum.IntEnum):
    """Zones of the ``sync`` instruction (its 12-bit immediate)."""
    TILE = 0       # all non-halted contexts of this tile
    ARRAY = 1      # all tiles of the array; the exchange phase follows the release
    # 2 is reserved for EXTERNAL (several arrays joined by links, roadmap); illegal today.


#: MACs counted per retired dot4 / dot4su.
MACS_PER_DOT4 = 4

#: Quotient bits a division (DIV/DIVU/REM/REMU) computes per issue slot of its context
#: (docs/architecture.md §4, "Division").
DIV_BITS_PER_TURN = 4

#: Issue slots (turns) of its context that one division occupies: a set-up turn,
#: 32 / DIV_BITS_PER_TURN iteration turns and a sign-fix turn in which it retires.
DIV_TURNS = 2 + 32 // DIV_BITS_PER_TURN


def is_division(word: int) -> bool:
    """True if the 32-bit instruction ``word`` is DIV, DIVU, REM or REMU (RISC-V Unprivileged
    ISA 20191213 §7.2: opcode OP, funct7 = 1, funct3 = 4..7)."""
    return (word & 0x7F == Opcode.OP and (word >> 25) == 1 and (word >> 14) & 1 == 1)


def _reg(name: str, r: int) -> int:
    if not isinstance(r, int) or not 0 <= r < 32:
        raise ValueError(f"{name} must be a register number 0..31, not {r!r}")
    return r


def encode_r(opcode: int, rd: int, funct3: int, rs1: int, rs2: int, funct7: int = 0) -> int:
    """Encode an R-type instruction word (RISC-V Unprivileged spec, section 2.2)."""
    return ((funct7 & 0x7F) << 25 | _reg("rs2", rs2) << 20 | _reg("rs1", rs1) << 15
            | (funct3 & 7) << 12 | _reg("rd", rd) << 7 | (opcode & 0x7F))


def encode_i(opcode: int, rd: int, funct3: int, rs1: int, imm: int) -> int:
    """Encode an I-type instruction word; ``imm`` must fit in 12 signed bits."""
    if not -2048 <= imm <= 2047:
        raise ValueError(f"I-type immediate {imm} does not fit in 12 signed bits")
    return ((imm & 0xFFF) << 20 | _reg("rs1", rs1) << 15 | (funct3 & 7) << 12
            | _reg("rd", rd) << 7 | (opcode & 0x7F))


def encode_dot4(rd: int, rs1: int, rs2: int) -> int:
    """``dot4 rd, rs1, rs2``: rd ← rd + Σ_{i<4} s8(rs1[8i+7:8i]) · s8(rs2[8i+7:8i]) (mod 2^32)."""
    return encode_r(Opcode.CUSTOM_0, rd, CustomFunct3.DOT4, rs1, rs2, 0)


def encode_dot4su(rd: int, rs1: int, rs2: int) -> int:
    """``dot4su rd, rs1, rs2``: rd ← rd + Σ_{i<4} s8(rs1 byte i) · u8(rs2 byte i) (mod 2^32)."""
    return encode_r(Opcode.CUSTOM_0, rd, CustomFunct3.DOT4SU, rs1, rs2, 0)


def encode_sync(zone: int) -> int:
    """``sync zone``: wait at the barrier of ``zone`` (a :class:`SyncZone`)."""
    zone = SyncZone(zone)
    return encode_i(Opcode.CUSTOM_1, 0, CustomFunct3.SYNC, 0, int(zone))


INSN_ECALL = 0x00000073
INSN_EBREAK = 0x00100073
INSN_NOP = 0x00000013  # addi x0, x0, 0
