"""A tiny Python assembler for tests: one function per instruction, returning 32-bit words.

The instruction functions are generated from the instruction table
(:data:`tessera.spec.instructions.INSTRUCTIONS`): one per row, named after it (``or_`` and
``and_`` for the Python keywords; ``sync_tile`` / ``sync_array`` for the two ``sync`` rows),
taking the row's operands in its order. That covers RV32I + M (RISC-V Unprivileged ISA
20191213, chapters 2 and 7), Zicsr (chapter 9), ``ecall``/``ebreak``/``fence`` and Tessera's
custom instructions (``dot4``, ``dot4su``, ``sync``; docs/architecture.md §3.3). The
pseudo-instructions (``nop``, ``mv``, ``j``, ``ret``, ``li``, ``csrr``, ``csrw``) and
``sync(zone)`` are written below.

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

import inspect
import struct

from tessera.spec.csr import Csr
from tessera.spec.instructions import (INSTRUCTIONS, REG_NAMES, Instruction, Kind, OperandKind,
                                       SyncZone, register_number, sync_instruction)

__all__ = (["REG_NAMES", "reg", "program", "li"]
           + [row.py_name for row in INSTRUCTIONS]
           + ["csrr", "csrw", "sync", "nop", "mv", "j", "ret"])


def reg(r: int | str, *, insn: str = "?", operand: str = "register") -> int:
    """Return the register number of ``r`` (int 0..31 or a name such as ``"a0"``).

    Raises
    ------
    ValueError
        If ``r`` is not a register; the message names the instruction and operand.
    """
    if isinstance(r, str):
        n = register_number(r)
        if n is not None:
            return n
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


def _operand_value(row: Instruction, operand, v) -> int:
    """Check one operand value and return what its field holds."""
    insn, name, width = row.mnemonic, operand.name, operand.field.width
    kind = operand.kind
    if kind is OperandKind.REG:
        return reg(v, insn=insn, operand=name)
    if kind is OperandKind.SIMM:
        return _simm(insn, name, v, width)
    if kind is OperandKind.PCREL:
        off = _int(insn, name, v)
        if off % 2:
            what = "branch offset" if row.kind is Kind.BRANCH else name
            raise ValueError(f"{insn}: {what} {off} must be even")
        return _simm(insn, name, off, width)
    if kind is OperandKind.UPPER:
        v = _int(insn, name, v)
        if not -(1 << 19) <= v < (1 << 20):
            raise ValueError(f"{insn}: {name} {v} is outside -2^19..2^20-1")
        return v << 12
    if kind is OperandKind.CSR:
        return _uimm(insn, name, int(v) if isinstance(v, Csr) else v, width)
    return _uimm(insn, name, v, width)      # UIMM, FENCE_SET


_FORMS = {
    OperandKind.SIMM: "{name} {width}-bit signed",
    OperandKind.PCREL: "{name} in bytes from this instruction, even, {width}-bit signed",
    OperandKind.UPPER: "{name} in -2^19..2^20-1 (the upper 20 bits)",
    OperandKind.UIMM: "{name} 0..{max}",
    OperandKind.CSR: "{name} is a tessera.spec.csr.Csr or a {width}-bit number",
    OperandKind.FENCE_SET: "{name} a 4-bit iorw mask",
}


def _make(row: Instruction):
    """The assembler function of one table row."""
    defaults = dict(row.defaults)
    sig = inspect.Signature([
        inspect.Parameter(o.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          default=defaults.get(o.name, inspect.Parameter.empty))
        for o in row.operands])
    operands = row.operands

    def build(*args, **kwargs) -> int:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        word = row.match
        for o in operands:
            word |= o.field.insert(_operand_value(row, o, bound.arguments[o.name]))
        return word

    forms = [_FORMS[o.kind].format(name=o.name, width=o.field.width,
                                   max=(1 << o.field.width) - 1)
             for o in operands if o.kind in _FORMS]
    shown = row.syntax.format(**{o.name: o.name for o in operands})
    text = f"``{row.mnemonic} {shown}``" if shown else f"``{row.mnemonic}``"
    build.__name__ = build.__qualname__ = row.py_name
    build.__signature__ = sig
    build.__doc__ = (f"{text}: {row.doc}. Operands ({', '.join(o.name for o in operands)})"
                     + (f": {'; '.join(forms)}" if forms else "") + ".\n\n"
                     "Returns the 32-bit instruction word; raises ValueError on a bad operand.")
    return build


for _row in INSTRUCTIONS:
    globals()[_row.py_name] = _make(_row)
del _row


# -- written by hand ----------------------------------------------------------------------------

def csrr(rd, csr) -> int:
    """``csrr rd, csr`` = ``csrrs rd, csr, x0`` (read only, no write)."""
    return csrrs(rd, csr, 0)  # noqa: F821 (generated above)


def csrw(csr, rs1) -> int:
    """``csrw csr, rs1`` = ``csrrw x0, csr, rs1``."""
    return csrrw(0, csr, rs1)  # noqa: F821


def sync(zone: int | str = SyncZone.TILE) -> int:
    """``sync TILE`` / ``sync ARRAY``; ``zone`` is a :class:`~tessera.spec.isa.SyncZone`, 0/1, or a name."""
    if isinstance(zone, str):
        try:
            zone = SyncZone[zone.upper()]
        except KeyError:
            raise ValueError(f"sync: unknown zone {zone!r}; use TILE or ARRAY") from None
    try:
        return sync_instruction(zone).match
    except ValueError:
        raise ValueError(f"sync: unknown zone {zone!r}; use TILE (0) or ARRAY (1)") from None


# -- pseudo-instructions ----------------------------------------------------------------------

def nop() -> int:
    """``nop`` = ``addi x0, x0, 0``."""
    return addi(0, 0, 0)  # noqa: F821


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
