"""Vectorized RV32IM ALU and the dot4 MAC (docs/architecture.md §3.1, §3.3).

Every function takes uint32 numpy arrays (or a uint32-compatible scalar for ``b``) of equal
length and returns a new uint32 array: the operation applied elementwise, mod 2^32.
"""

from __future__ import annotations

import numpy as np

from .decode import Op

__all__ = ["ALU", "dot4", "branch_taken"]

_U32 = np.uint32
_I32 = np.int32
_I64 = np.int64
_M32 = np.int64(0xFFFFFFFF)


def _s(a):
    return np.asarray(a, dtype=_U32).view(_I32)


def _u(a):
    return np.asarray(a, dtype=_U32)


def _add(a, b): return (a + _u(b)).astype(_U32, copy=False)
def _sub(a, b): return (a - _u(b)).astype(_U32, copy=False)
def _sll(a, b): return (a << (_u(b) & _U32(31))).astype(_U32, copy=False)
def _srl(a, b): return (a >> (_u(b) & _U32(31))).astype(_U32, copy=False)
def _sra(a, b): return (_s(a) >> (_u(b) & _U32(31)).astype(_I32)).view(_U32)
def _slt(a, b): return (_s(a) < _s(b)).astype(_U32)
def _sltu(a, b): return (a < _u(b)).astype(_U32)
def _xor(a, b): return a ^ _u(b)
def _or(a, b): return a | _u(b)
def _and(a, b): return a & _u(b)
def _mul(a, b): return (a * _u(b)).astype(_U32, copy=False)


def _hi(p):
    return ((p >> 32) & _M32).astype(_U32)


def _mulh(a, b): return _hi(_s(a).astype(_I64) * _s(b).astype(_I64))
def _mulhsu(a, b): return _hi(_s(a).astype(_I64) * _u(b).astype(_I64))
def _mulhu(a, b): return ((a.astype(np.uint64) * _u(b).astype(np.uint64)) >> np.uint64(32)).astype(_U32)


def _divrem_signed(a, b):
    """Truncating signed division with the RISC-V table 7.1 corner cases."""
    x = _s(a).astype(_I64)
    y = np.broadcast_to(_s(b).astype(_I64), x.shape)
    zero = y == 0
    ys = np.where(zero, 1, y)
    q = np.abs(x) // np.abs(ys)
    q = np.where((x < 0) != (ys < 0), -q, q)
    r = x - q * ys
    q = np.where(zero, -1, q)             # x / 0 = -1
    r = np.where(zero, x, r)              # x % 0 = x
    # -2^31 / -1: q = 2^31 wraps to -2^31 and r = 0 naturally (mod 2^32).
    return (q & _M32).astype(_U32), (r & _M32).astype(_U32)


def _div(a, b): return _divrem_signed(a, b)[0]
def _rem(a, b): return _divrem_signed(a, b)[1]


def _divu(a, b):
    y = np.broadcast_to(_u(b), a.shape)
    zero = y == 0
    return np.where(zero, _U32(0xFFFFFFFF), a // np.where(zero, _U32(1), y)).astype(_U32)


def _remu(a, b):
    y = np.broadcast_to(_u(b), a.shape)
    zero = y == 0
    return np.where(zero, a, a % np.where(zero, _U32(1), y)).astype(_U32)


#: op → f(a, b) for every two-operand ALU op (register and immediate forms).
ALU = {
    Op.ADD: _add, Op.ADDI: _add, Op.SUB: _sub,
    Op.SLL: _sll, Op.SLLI: _sll, Op.SRL: _srl, Op.SRLI: _srl, Op.SRA: _sra, Op.SRAI: _sra,
    Op.SLT: _slt, Op.SLTI: _slt, Op.SLTU: _sltu, Op.SLTIU: _sltu,
    Op.XOR: _xor, Op.XORI: _xor, Op.OR: _or, Op.ORI: _or, Op.AND: _and, Op.ANDI: _and,
    Op.MUL: _mul, Op.MULH: _mulh, Op.MULHSU: _mulhsu, Op.MULHU: _mulhu,
    Op.DIV: _div, Op.DIVU: _divu, Op.REM: _rem, Op.REMU: _remu,
}


def branch_taken(op: Op, a, b):
    """Boolean array: is the branch ``op`` taken for operands ``a``, ``b`` (uint32 arrays)."""
    if op == Op.BEQ:
        return a == b
    if op == Op.BNE:
        return a != b
    if op == Op.BLT:
        return _s(a) < _s(b)
    if op == Op.BGE:
        return _s(a) >= _s(b)
    if op == Op.BLTU:
        return a < b
    if op == Op.BGEU:
        return a >= b
    raise ValueError(f"not a branch op: {op!r}")


def dot4(acc, a, b, b_signed: bool):
    """``acc + Σ_{i<4} s8(a.byte[i]) · (s8|u8)(b.byte[i])`` mod 2^32, elementwise.

    Parameters
    ----------
    acc, a, b : numpy.ndarray of uint32, shape (n,)
    b_signed : bool
        True for ``dot4`` (signed × signed), False for ``dot4su`` (signed × unsigned).
    """
    a8 = np.ascontiguousarray(a, dtype=_U32).view(np.int8).reshape(-1, 4).astype(_I32)
    bv = np.ascontiguousarray(b, dtype=_U32).view(np.int8 if b_signed else np.uint8)
    b8 = bv.reshape(-1, 4).astype(_I32)
    s = (a8 * b8).sum(axis=1, dtype=_I32)
    return (acc + s.view(_U32)).astype(_U32, copy=False)
