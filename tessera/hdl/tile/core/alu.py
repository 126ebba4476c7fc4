"""Integer ALU and branch comparator (RV32I OP/OP-IMM and BRANCH semantics).

Purely combinational. RISC-V Unprivileged ISA 20191213, chapter 2.
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.instructions import Funct3

__all__ = ["Alu", "BranchCmp"]


class Alu(wiring.Component):
    """RV32I integer operation selected by funct3 (and ``alt`` = instruction bit 30).

    Parameters
    ----------
    shifts : bool, keyword-only
        Build the shifts (funct3 1 and 5; default True). The core builds the ALU without
        them and shifts on its multiplier (:mod:`.shift`); ``result`` is then 0 for
        funct3 1 and 5.

    Members
    -------
    a, b : In(32)
        Operands (rs1; rs2 or the immediate).
    funct3 : In(3)
        0 ADD/SUB, 1 SLL, 2 SLT, 3 SLTU, 4 XOR, 5 SRL/SRA, 6 OR, 7 AND.
    alt : In(1)
        SUB when funct3 = 0, SRA when funct3 = 5 (callers must clear it for ADDI).
    result : Out(32)
        The result; shifts use ``b[4:0]``.
    """

    a: In(32)
    b: In(32)
    funct3: In(3)
    alt: In(1)
    result: Out(32)

    def __init__(self, *, shifts: bool = True):
        self.shifts = bool(shifts)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b
        shamt = b[0:5]
        with m.Switch(self.funct3):
            with m.Case(Funct3.ADD):
                with m.If(self.alt):
                    m.d.comb += self.result.eq(a - b)
                with m.Else():
                    m.d.comb += self.result.eq(a + b)
            if self.shifts:
                with m.Case(Funct3.SLL):
                    m.d.comb += self.result.eq(a << shamt)
            with m.Case(Funct3.SLT):
                m.d.comb += self.result.eq(a.as_signed() < b.as_signed())
            with m.Case(Funct3.SLTU):
                m.d.comb += self.result.eq(a < b)
            with m.Case(Funct3.XOR):
                m.d.comb += self.result.eq(a ^ b)
            if self.shifts:
                with m.Case(Funct3.SRL):
                    with m.If(self.alt):
                        m.d.comb += self.result.eq(a.as_signed() >> shamt)
                    with m.Else():
                        m.d.comb += self.result.eq(a >> shamt)
            with m.Case(Funct3.OR):
                m.d.comb += self.result.eq(a | b)
            with m.Case(Funct3.AND):
                m.d.comb += self.result.eq(a & b)
        return m


class BranchCmp(wiring.Component):
    """Branch condition of a BRANCH instruction.

    Members
    -------
    a, b : In(32)
        rs1 and rs2.
    funct3 : In(3)
        0 BEQ, 1 BNE, 4 BLT, 5 BGE, 6 BLTU, 7 BGEU (2 and 3 are illegal; ``taken`` = 0).
    taken : Out(1)
        The branch is taken.
    """

    a: In(32)
    b: In(32)
    funct3: In(3)
    taken: Out(1)

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b
        with m.Switch(self.funct3):
            with m.Case(Funct3.BEQ):
                m.d.comb += self.taken.eq(a == b)
            with m.Case(Funct3.BNE):
                m.d.comb += self.taken.eq(a != b)
            with m.Case(Funct3.BLT):
                m.d.comb += self.taken.eq(a.as_signed() < b.as_signed())
            with m.Case(Funct3.BGE):
                m.d.comb += self.taken.eq(a.as_signed() >= b.as_signed())
            with m.Case(Funct3.BLTU):
                m.d.comb += self.taken.eq(a < b)
            with m.Case(Funct3.BGEU):
                m.d.comb += self.taken.eq(a >= b)
        return m
