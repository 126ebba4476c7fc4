"""Instruction decoder: legality (docs/architecture.md §3.1 table) and control fields.

Purely combinational, generated from the instruction table
(:data:`tessera.spec.instructions.INSTRUCTIONS`): the legal signal is the OR of the rows'
``word & mask == match`` (one case per opcode), the class outputs are the rows grouped by
:class:`~tessera.spec.instructions.Kind`, and the immediate of each opcode is the one of its
rows' format (:data:`~tessera.spec.instructions.FORMAT_IMM`).
"""

from amaranth import C, Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.instructions import (FORMAT_IMM, FUNCT3, FUNCT7_ALT_BIT, IMM_I,
                                       INSTRUCTIONS, OPCODE, RD, RS1, RS2, Format, Funct3, Kind,
                                       Opcode, SyncZone)

__all__ = ["Decoder", "field_value"]


def field_value(word, field):
    """Amaranth value of a :class:`~tessera.spec.instructions.Field` of ``word``.

    Value bits the field does not cover are 0; a signed field is sign-extended to 32 bits.
    """
    parts, pos = [], 0
    for w, v, n in sorted(field.pieces, key=lambda p: p[1]):
        if v > pos:
            parts.append(C(0, v - pos))
        parts.append(word[w:w + n])
        pos = v + n
    value = Cat(*parts)
    if field.signed and pos < 32:
        value = Cat(value, value[-1].replicate(32 - pos))
    return value


def _by_opcode(rows):
    out = {}
    for row in rows:
        out.setdefault(int(row.opcode), []).append(row)
    return out


class Decoder(wiring.Component):
    """Decode one 32-bit instruction word.

    Members
    -------
    insn : In(32)
        The instruction word.
    legal : Out(1)
        1 if the word is a legal encoding per docs/architecture.md §3.1 (the Zicsr CSR
        number/write check of §3.2 is *not* included: see :class:`tessera.hdl.tile.core.csr.CsrUnit`).
    rd, rs1, rs2 : Out(5)
        Register fields (bits [11:7], [19:15], [24:20]).
    funct3 : Out(3)
        Bits [14:12].
    imm : Out(32)
        The sign-extended immediate of the instruction's format (I, S, B, U or J;
        0 for R-type).
    lui, auipc, jal, jalr, branch, load, store, op_imm, op, muldiv, fence, ecall, ebreak, csr, dot4, sync, engine : Out(1)
        One-hot instruction class (only meaningful when ``legal``); ``op`` is a non-M
        register-register ALU op, ``muldiv`` an M-extension op, ``engine`` ``mrun``/``mwait``.
    alu_alt : Out(1)
        SUB (OP) or SRA/SRAI (bit 30) for the ALU.
    shift : Out(1)
        A shift (SLL, SRL, SRA and their immediate forms; only meaningful when ``legal``):
        the core runs it on the multiplier (:mod:`.shift`).
    dot4_su : Out(1)
        ``dot4su`` (rs2 bytes unsigned) rather than ``dot4``.
    mwait : Out(1)
        ``mwait`` rather than ``mrun`` (engine class).
    sync_array : Out(1)
        ``sync ARRAY`` rather than ``sync TILE``.
    writes_rd : Out(1)
        The class writes rd (the write is dropped at W when rd = x0).

    Parameters
    ----------
    engine : bool, keyword-only
        The configuration has a matrix engine (``engine_macs`` > 0, default True); without
        one the rows with ``needs_engine`` (``mrun``, ``mwait``) are illegal (§3.1).
    """

    def __init__(self, *, engine: bool = True):
        self.engine_present = bool(engine)
        super().__init__()

    insn: In(32)
    legal: Out(1)
    rd: Out(5)
    rs1: Out(5)
    rs2: Out(5)
    funct3: Out(3)
    imm: Out(32)
    lui: Out(1)
    auipc: Out(1)
    jal: Out(1)
    jalr: Out(1)
    branch: Out(1)
    load: Out(1)
    store: Out(1)
    op_imm: Out(1)
    op: Out(1)
    muldiv: Out(1)
    fence: Out(1)
    ecall: Out(1)
    ebreak: Out(1)
    csr: Out(1)
    dot4: Out(1)
    sync: Out(1)
    engine: Out(1)
    alu_alt: Out(1)
    shift: Out(1)
    dot4_su: Out(1)
    mwait: Out(1)
    sync_array: Out(1)
    writes_rd: Out(1)

    def elaborate(self, platform):
        m = Module()
        i = self.insn
        opcode = i[OPCODE.slice]
        f3 = i[FUNCT3.slice]
        m.d.comb += [
            self.rd.eq(i[RD.slice]),
            self.rs1.eq(i[RS1.slice]),
            self.rs2.eq(i[RS2.slice]),
            self.funct3.eq(f3),
        ]
        rows_of_opcode = _by_opcode(INSTRUCTIONS)

        def is_op(code):
            return opcode == int(code)

        def hit(row):
            """The word is ``row`` (all its fixed bits match)."""
            return (i & row.mask) == row.match

        # One-hot classes. A class whose opcodes no other class uses is decided by the opcode
        # alone (the outputs only matter for legal words); otherwise by its rows' full match.
        classes = {}
        for kind in Kind:
            rows = [row for row in INSTRUCTIONS if row.kind is kind]
            codes = sorted({int(row.opcode) for row in rows})
            shared = any(other.kind is not kind for c in codes for other in rows_of_opcode[c])
            terms = [hit(row) for row in rows] if shared else [is_op(c) for c in codes]
            classes[kind] = Cat(*terms).any()
            m.d.comb += getattr(self, kind.value).eq(classes[kind])

        # Selects within a class.
        assert (SyncZone.TILE, SyncZone.ARRAY) == (0, 1)   # the zone's bit 0 tells them apart
        m.d.comb += [
            self.dot4_su.eq(f3 == Funct3.DOT4SU),
            self.mwait.eq(f3 == Funct3.MWAIT),
            self.sync_array.eq(i[IMM_I.slice][0]),
            self.alu_alt.eq(i[FUNCT7_ALT_BIT] & (is_op(Opcode.OP)
                                                 | (is_op(Opcode.OP_IMM) & (f3 == Funct3.SRAI)))),
            self.shift.eq((classes[Kind.OP] | classes[Kind.OP_IMM])
                          & ((f3 == Funct3.SLL) | (f3 == Funct3.SRL))),
        ]
        writes = {row.kind for row in INSTRUCTIONS if row.writes_rd}
        assert not any(row.kind in writes and not row.writes_rd for row in INSTRUCTIONS)
        m.d.comb += self.writes_rd.eq(Cat(*(classes[k] for k in Kind if k in writes)).any())

        # Immediates (RISC-V Unprivileged spec, section 2.3): the format of the opcode's rows.
        fmt_of_opcode = {}
        for code, rows in rows_of_opcode.items():
            # a row whose immediate is entirely fixed (mwait: I-type with imm = 0 among the
            # R-type CUSTOM_0 rows) does not need its format's immediate
            fmts = {row.fmt for row in rows
                    if not any(fld is FORMAT_IMM[row.fmt] for fld, _ in row.fixed)}
            (fmt,) = fmts or {row.fmt for row in rows}
            fmt_of_opcode[code] = fmt
        with m.Switch(opcode):
            for fmt in Format:
                codes = [c for c, f in fmt_of_opcode.items() if f is fmt]
                if fmt is Format.I or not codes:
                    continue
                with m.Case(*codes):
                    imm = FORMAT_IMM[fmt]
                    m.d.comb += self.imm.eq(0 if imm is None else field_value(i, imm))
            with m.Default():
                m.d.comb += self.imm.eq(field_value(i, IMM_I))

        # Legal-encoding table, docs/architecture.md §3.1: some row of the opcode matches.
        with m.Switch(opcode):
            for code, rows in rows_of_opcode.items():
                with m.Case(code):
                    rest = ~OPCODE.word_mask & 0xFFFFFFFF
                    terms = [(i & (row.mask & rest)) == (row.match & rest) for row in rows
                             if self.engine_present or not row.needs_engine]
                    m.d.comb += self.legal.eq(Cat(*terms).any() if terms else 0)
            with m.Default():
                m.d.comb += self.legal.eq(0)
        return m
