"""Disassembler: one 32-bit word to standard RISC-V assembly text (objdump style).

Derived from the instruction table (:mod:`tessera.spec.instructions`): the row matching the
word gives the mnemonic and the operand syntax; each operand is printed by its kind (ABI
register name, decimal immediate, branch/jump target, CSR name from :mod:`tessera.spec.csr`,
fence set). That covers RV32IM, Zicsr, ``fence``, ``ecall``/``ebreak`` and Tessera's custom
instructions (``dot4``, ``dot4su``, ``sync TILE|ARRAY``). A word that matches no row (not a
legal encoding per docs/architecture.md §3.1) prints as ``.word 0x????????``. (An unlisted
CSR number is printed in hex: the encoding itself is well-formed; it faults at run time.)

Examples
--------
>>> disasm(0x00150513)
'addi a0,a0,1'
>>> disasm(0x0000006F, pc=0x40)
'jal zero,0x40'
"""

from __future__ import annotations

from tessera.spec.csr import Csr
from tessera.spec.instructions import REG_NAMES, OperandKind, lookup

__all__ = ["disasm", "disasm_program"]


def _csr_name(n: int) -> str:
    try:
        return Csr(n).name.lower()
    except ValueError:
        return f"{n:#x}"


def _fence_set(v: int) -> str:
    s = "".join(ch for bit, ch in zip((8, 4, 2, 1), "iorw") if v & bit)
    return s or "0"


def _text(kind: OperandKind, v: int, pc: int) -> str:
    if kind is OperandKind.REG:
        return REG_NAMES[v]
    if kind is OperandKind.PCREL:
        return f"{(pc + v) & 0xFFFFFFFF:#x}"
    if kind is OperandKind.UPPER:
        return f"{(v >> 12) & 0xFFFFF:#x}"
    if kind is OperandKind.CSR:
        return _csr_name(v)
    if kind is OperandKind.FENCE_SET:
        return _fence_set(v)
    return str(v)                            # SIMM, UIMM


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
    row = lookup(w)
    if row is None:
        return f".word {w:#010x}"
    if not row.syntax:
        return row.mnemonic
    values = {o.name: _text(o.kind, o.field.extract(w), pc) for o in row.operands}
    return f"{row.mnemonic} {row.syntax.format(**values)}"


def disasm_program(data: bytes, base: int = 0) -> list[str]:
    """Disassemble little-endian code bytes; returns ``"addr: word  text"`` lines."""
    out = []
    for off in range(0, len(data) - len(data) % 4, 4):
        w = int.from_bytes(data[off:off + 4], "little")
        out.append(f"{base + off:08x}: {w:08x}  {disasm(w, base + off)}")
    return out
