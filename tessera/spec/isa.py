"""Instruction-set constants: re-exports of the instruction table plus division and MAC costs.

The encodings themselves (opcodes, funct fields, immediates, register names, the table of
every legal instruction) are defined once in :mod:`tessera.spec.instructions`; this module
re-exports the names that hdl, golden model, toolchain (``tessera.h``) and tb import from
here, and defines the execution costs of docs/architecture.md §3.3 and §4.
"""

from __future__ import annotations

from .instructions import (FUNCT3, FUNCT7, IMM_I, INSN_EBREAK, INSN_ECALL, INSN_NOP, OPCODE,
                           RD, RS1, RS2, Funct3, Funct7, Funct12, Opcode, SyncZone, encode_dot4,
                           encode_dot4su, encode_sync, is_division)

__all__ = [
    "Opcode", "Funct3", "Funct7", "Funct12", "SyncZone",
    "encode_r", "encode_i", "encode_dot4", "encode_dot4su", "encode_sync",
    "INSN_ECALL", "INSN_EBREAK", "INSN_NOP", "MACS_PER_DOT4",
    "DIV_BITS_PER_TURN", "DIV_TURNS", "is_division",
]

#: MACs counted per retired dot4 / dot4su.
MACS_PER_DOT4 = 4

#: Quotient bits a division (DIV/DIVU/REM/REMU) computes per issue slot of its context
#: (docs/architecture.md §4, "Division").
DIV_BITS_PER_TURN = 4

#: Issue slots (turns) of its context that one division occupies: a set-up turn,
#: 32 / DIV_BITS_PER_TURN iteration turns and a sign-fix turn in which it retires.
DIV_TURNS = 2 + 32 // DIV_BITS_PER_TURN


def _reg(name: str, r: int) -> int:
    if not isinstance(r, int) or not 0 <= r < 32:
        raise ValueError(f"{name} must be a register number 0..31, not {r!r}")
    return r


def encode_r(opcode: int, rd: int, funct3: int, rs1: int, rs2: int, funct7: int = 0) -> int:
    """Encode an R-type instruction word (RISC-V Unprivileged spec, section 2.2)."""
    return (FUNCT7.insert(funct7) | RS2.insert(_reg("rs2", rs2)) | RS1.insert(_reg("rs1", rs1))
            | FUNCT3.insert(funct3) | RD.insert(_reg("rd", rd)) | OPCODE.insert(opcode))


def encode_i(opcode: int, rd: int, funct3: int, rs1: int, imm: int) -> int:
    """Encode an I-type instruction word; ``imm`` must fit in 12 signed bits."""
    if not -2048 <= imm <= 2047:
        raise ValueError(f"I-type immediate {imm} does not fit in 12 signed bits")
    return (IMM_I.insert(imm) | RS1.insert(_reg("rs1", rs1)) | FUNCT3.insert(funct3)
            | RD.insert(_reg("rd", rd)) | OPCODE.insert(opcode))
