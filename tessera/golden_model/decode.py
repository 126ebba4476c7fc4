"""Instruction decode for the golden model: word → (op, rd, rs1, rs2, imm), cached per word.

Legality follows docs/architecture.md §3.1 (legal-encoding table) and §3.2 (an unlisted CSR or
a write to a read-only CSR is ``illegal_instruction``; both are properties of the word alone,
so they are decided here). Decoding is a pure function of the 32-bit word, so the cache stays
correct for self-modifying code and exchange writes into code: the model fetches the word from
SRAM every cycle and only the word → fields mapping is cached.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from tessera.spec.csr import READ_ONLY, Csr
from tessera.spec.isa import INSN_EBREAK, INSN_ECALL, CustomFunct3, Opcode, SyncZone, encode_sync

__all__ = ["Op", "Decoded", "decode", "OP_NAMES"]


class Op(enum.IntEnum):
    """Golden-model operation codes (one per distinct behaviour)."""
    ILLEGAL = 0
    LUI = 1
    AUIPC = 2
    JAL = 3
    JALR = 4
    BEQ = 5
    BNE = 6
    BLT = 7
    BGE = 8
    BLTU = 9
    BGEU = 10
    LB = 11
    LH = 12
    LW = 13
    LBU = 14
    LHU = 15
    SB = 16
    SH = 17
    SW = 18
    # ALU ops: register form (OP) and immediate form (OP_IMM) share the function; the
    # immediate form has ``imm_form`` set in Decoded.
    ADD = 19
    SUB = 20
    SLL = 21
    SLT = 22
    SLTU = 23
    XOR = 24
    SRL = 25
    SRA = 26
    OR = 27
    AND = 28
    MUL = 29
    MULH = 30
    MULHSU = 31
    MULHU = 32
    DIV = 33
    DIVU = 34
    REM = 35
    REMU = 36
    ADDI = 37
    SLTI = 38
    SLTIU = 39
    XORI = 40
    ORI = 41
    ANDI = 42
    SLLI = 43
    SRLI = 44
    SRAI = 45
    FENCE = 46
    ECALL = 47
    EBREAK = 48
    CSRRW = 49
    CSRRS = 50
    CSRRC = 51
    CSRRWI = 52
    CSRRSI = 53
    CSRRCI = 54
    DOT4 = 55
    DOT4SU = 56
    SYNC_TILE = 57
    SYNC_ARRAY = 58


OP_NAMES = {op: op.name.lower() for op in Op}


class Decoded(NamedTuple):
    """Fields of one decoded word. ``imm`` is the sign-extended immediate as a uint32 value
    (I/S/B/U/J as the op needs), the CSR number for CSR ops; for CSR*I ops ``rs1`` holds uimm."""
    op: Op
    rd: int
    rs1: int
    rs2: int
    imm: int


_M32 = 0xFFFFFFFF


def _sext(v: int, bits: int) -> int:
    return (v - (1 << bits) if v >> (bits - 1) & 1 else v) & _M32


_BR = {0: Op.BEQ, 1: Op.BNE, 4: Op.BLT, 5: Op.BGE, 6: Op.BLTU, 7: Op.BGEU}
_LD = {0: Op.LB, 1: Op.LH, 2: Op.LW, 4: Op.LBU, 5: Op.LHU}
_ST = {0: Op.SB, 1: Op.SH, 2: Op.SW}
_OPI = {0: Op.ADDI, 2: Op.SLTI, 3: Op.SLTIU, 4: Op.XORI, 6: Op.ORI, 7: Op.ANDI}
_OP0 = {0: Op.ADD, 1: Op.SLL, 2: Op.SLT, 3: Op.SLTU, 4: Op.XOR, 5: Op.SRL, 6: Op.OR, 7: Op.AND}
_OPM = {0: Op.MUL, 1: Op.MULH, 2: Op.MULHSU, 3: Op.MULHU, 4: Op.DIV, 5: Op.DIVU, 6: Op.REM,
        7: Op.REMU}
_CSR = {1: Op.CSRRW, 2: Op.CSRRS, 3: Op.CSRRC, 5: Op.CSRRWI, 6: Op.CSRRSI, 7: Op.CSRRCI}
_CSR_NUMBERS = frozenset(int(c) for c in Csr)
_CSR_RO = frozenset(int(c) for c in READ_ONLY)
_SYNC_TILE = encode_sync(SyncZone.TILE)
_SYNC_ARRAY = encode_sync(SyncZone.ARRAY)


def _decode(w: int) -> Decoded:
    opcode = w & 0x7F
    rd, f3, rs1, rs2, f7 = w >> 7 & 31, w >> 12 & 7, w >> 15 & 31, w >> 20 & 31, w >> 25
    imm_i = _sext(w >> 20, 12)
    bad = Decoded(Op.ILLEGAL, 0, 0, 0, w)
    if opcode == Opcode.LUI:
        return Decoded(Op.LUI, rd, 0, 0, w & 0xFFFFF000)
    if opcode == Opcode.AUIPC:
        return Decoded(Op.AUIPC, rd, 0, 0, w & 0xFFFFF000)
    if opcode == Opcode.JAL:
        imm = _sext((w >> 31 & 1) << 20 | (w >> 12 & 0xFF) << 12 | (w >> 20 & 1) << 11
                    | (w >> 21 & 0x3FF) << 1, 21)
        return Decoded(Op.JAL, rd, 0, 0, imm)
    if opcode == Opcode.JALR:
        return Decoded(Op.JALR, rd, rs1, 0, imm_i) if f3 == 0 else bad
    if opcode == Opcode.BRANCH:
        if f3 not in _BR:
            return bad
        imm = _sext((w >> 31 & 1) << 12 | (w >> 7 & 1) << 11 | (w >> 25 & 0x3F) << 5
                    | (w >> 8 & 0xF) << 1, 13)
        return Decoded(_BR[f3], 0, rs1, rs2, imm)
    if opcode == Opcode.LOAD:
        return Decoded(_LD[f3], rd, rs1, 0, imm_i) if f3 in _LD else bad
    if opcode == Opcode.STORE:
        if f3 not in _ST:
            return bad
        return Decoded(_ST[f3], 0, rs1, rs2, _sext((w >> 25) << 5 | (w >> 7 & 31), 12))
    if opcode == Opcode.OP_IMM:
        if f3 in _OPI:
            return Decoded(_OPI[f3], rd, rs1, 0, imm_i)
        if f3 == 1 and f7 == 0:
            return Decoded(Op.SLLI, rd, rs1, 0, rs2)
        if f3 == 5 and f7 == 0:
            return Decoded(Op.SRLI, rd, rs1, 0, rs2)
        if f3 == 5 and f7 == 0x20:
            return Decoded(Op.SRAI, rd, rs1, 0, rs2)
        return bad
    if opcode == Opcode.OP:
        if f7 == 0:
            return Decoded(_OP0[f3], rd, rs1, rs2, 0)
        if f7 == 0x20 and f3 == 0:
            return Decoded(Op.SUB, rd, rs1, rs2, 0)
        if f7 == 0x20 and f3 == 5:
            return Decoded(Op.SRA, rd, rs1, rs2, 0)
        if f7 == 1:
            return Decoded(_OPM[f3], rd, rs1, rs2, 0)
        return bad
    if opcode == Opcode.MISC_MEM:
        return Decoded(Op.FENCE, 0, 0, 0, 0) if f3 == 0 else bad
    if opcode == Opcode.SYSTEM:
        if w == INSN_ECALL:
            return Decoded(Op.ECALL, 0, 0, 0, 0)
        if w == INSN_EBREAK:
            return Decoded(Op.EBREAK, 0, 0, 0, 0)
        if f3 in _CSR:
            csr = w >> 20
            writes = f3 in (1, 5) or rs1 != 0
            if csr not in _CSR_NUMBERS or (writes and csr in _CSR_RO):
                return bad
            return Decoded(_CSR[f3], rd, rs1, 0, csr)
        return bad
    if opcode == Opcode.CUSTOM_0:
        if f7 == 0 and f3 == CustomFunct3.DOT4:
            return Decoded(Op.DOT4, rd, rs1, rs2, 0)
        if f7 == 0 and f3 == CustomFunct3.DOT4SU:
            return Decoded(Op.DOT4SU, rd, rs1, rs2, 0)
        return bad
    if opcode == Opcode.CUSTOM_1:
        if w == _SYNC_TILE:
            return Decoded(Op.SYNC_TILE, 0, 0, 0, 0)
        if w == _SYNC_ARRAY:
            return Decoded(Op.SYNC_ARRAY, 0, 0, 0, 0)
        return bad
    return bad


_CACHE: dict[int, Decoded] = {}


def decode(word: int) -> Decoded:
    """Decode one 32-bit instruction word (cached).

    Parameters
    ----------
    word : int
        Instruction word, 0..2^32-1.

    Returns
    -------
    Decoded
        ``op`` is :attr:`Op.ILLEGAL` for every encoding outside the legal table of
        docs/architecture.md §3.1/§3.2; then ``imm`` holds the word (the fault's addr).
    """
    d = _CACHE.get(word)
    if d is None:
        d = _decode(int(word))
        if len(_CACHE) > 1 << 16:
            _CACHE.clear()
        _CACHE[int(word)] = d
    return d
