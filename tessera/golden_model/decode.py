"""Instruction decode for the golden model: word → (op, rd, rs1, rs2, imm), cached per word.

Derived from the instruction table (:mod:`tessera.spec.instructions`): ``Op`` has one member
per row (plus ``ILLEGAL``), a word decodes to the row that matches it, and each operand fills
the slot its table entry names. Legality follows docs/architecture.md §3.1 (legal-encoding
table) and §3.2 (an unlisted CSR or a write to a read-only CSR is ``illegal_instruction``;
both are properties of the word alone, so they are decided here). One property of the
configuration takes part: without a matrix engine (``engine_macs`` = 0, §12) ``mrun`` and
``mwait`` are ``illegal_instruction`` (the ``engine`` argument; rows with
``needs_engine``). Decoding is a pure function of the 32-bit word and that flag, so the cache
stays correct for self-modifying code and exchange writes
into code: the model fetches the word from SRAM every cycle and only the word → fields
mapping is cached.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from tessera.spec.instructions import INSTRUCTIONS, csr_access_legal, lookup

__all__ = ["Op", "Decoded", "decode", "OP_NAMES", "ROW_OF", "OP_OF"]

#: Golden-model operation codes: ``ILLEGAL`` = 0, then one per table row, in table order.
Op = enum.IntEnum("Op", [("ILLEGAL", 0)] + [(row.name.upper(), i + 1)
                                             for i, row in enumerate(INSTRUCTIONS)],
                  module=__name__)
Op.__doc__ = "Golden-model operation codes (one per row of the instruction table)."

OP_NAMES = {op: op.name.lower() for op in Op}
#: Table row of each op (not ILLEGAL), and the op of each row.
ROW_OF = {Op[row.name.upper()]: row for row in INSTRUCTIONS}
OP_OF = {row: op for op, row in ROW_OF.items()}


class Decoded(NamedTuple):
    """Fields of one decoded word. ``imm`` is the sign-extended immediate as a uint32 value
    (I/S/B/U/J as the op needs), the shift amount for shift-immediates, the CSR number for
    CSR ops; for CSR*I ops ``rs1`` holds uimm. Slots the instruction does not use are 0."""
    op: Op
    rd: int
    rs1: int
    rs2: int
    imm: int


_M32 = 0xFFFFFFFF


def _decode(w: int, engine: bool) -> Decoded:
    row = lookup(w)
    if row is None or not csr_access_legal(row, w) or (row.needs_engine and not engine):
        return Decoded(Op.ILLEGAL, 0, 0, 0, w)
    slots = {"rd": 0, "rs1": 0, "rs2": 0, "imm": 0}
    for operand in row.operands:
        if operand.slot is not None:
            slots[operand.slot] = operand.field.extract(w) & _M32
    return Decoded(OP_OF[row], slots["rd"], slots["rs1"], slots["rs2"], slots["imm"])


#: One cache per value of ``engine`` (index 0: no matrix engine, 1: with one).
_CACHES: tuple[dict[int, Decoded], dict[int, Decoded]] = ({}, {})


def decode(word: int, engine: bool = True) -> Decoded:
    """Decode one 32-bit instruction word (cached).

    Parameters
    ----------
    word : int
        Instruction word, 0..2^32-1.
    engine : bool
        The configuration has a matrix engine (``ArrayConfig.engine_macs > 0``, §12); without
        one, ``mrun``/``mwait`` decode as :attr:`Op.ILLEGAL`.

    Returns
    -------
    Decoded
        ``op`` is :attr:`Op.ILLEGAL` for every encoding outside the legal table of
        docs/architecture.md §3.1/§3.2; then ``imm`` holds the word (the fault's addr).
    """
    cache = _CACHES[bool(engine)]
    d = cache.get(word)
    if d is None:
        d = _decode(int(word), bool(engine))
        if len(cache) > 1 << 16:
            cache.clear()
        cache[int(word)] = d
    return d
