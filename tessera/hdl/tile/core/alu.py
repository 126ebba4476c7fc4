"""Integer ALU and branch comparator (RV32I OP/OP-IMM and BRANCH semantics).

Purely combinational. RISC-V Unprivileged ISA 20191213, chapter 2. The ALU has one adder
(ADD/SUB/SLT/SLTU: the comparisons are a subtraction's borrow and sign) and one right shifter
(SLL shifts the bit-reversed operand).
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.instructions import Funct3

__all__ = ["Alu", "BranchCmp"]


class Alu(wiring.Component):
    """RV32I integer operation selected by funct3 (and ``alt`` = instruction bit 30).

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

    def elaborate(self, platform):
        m = Module()
        a, b, f3 = self.a, self.b, self.funct3
        shamt = b[0:5]
        # One 33-bit adder for ADD, SUB, SLT and SLTU: a + ~b + 1 when subtracting; the
        # carry out is "a >= b" unsigned.
        sub = Signal()
        m.d.comb += sub.eq((self.alt & (f3 == Funct3.ADD)) | (f3 == Funct3.SLT)
                           | (f3 == Funct3.SLTU))
        total = Signal(34)    # bit 0 only feeds the carry in: total[1:33] = a ± b
        m.d.comb += total.eq(Cat(sub, a) + Cat(sub, Mux(sub, ~b, b)))
        addsub = total[1:33]
        ltu = ~total[33]                                   # a < b unsigned (borrow)
        lt = Mux(a[31] == b[31], addsub[31], a[31])        # a < b signed
        # One right shifter for SRL, SRA and (on the bit-reversed operand) SLL.
        right = f3 == Funct3.SRL
        fill = right & self.alt & a[31]                    # SRA: sign fill
        a_in = Mux(right, a, a[::-1])
        shifted = Signal(32)
        m.d.comb += shifted.eq((Cat(a_in, fill).as_signed() >> shamt)[0:32])
        with m.Switch(f3):
            with m.Case(Funct3.ADD):
                m.d.comb += self.result.eq(addsub)
            with m.Case(Funct3.SLL):
                m.d.comb += self.result.eq(shifted[::-1])
            with m.Case(Funct3.SLT):
                m.d.comb += self.result.eq(lt)
            with m.Case(Funct3.SLTU):
                m.d.comb += self.result.eq(ltu)
            with m.Case(Funct3.XOR):
                m.d.comb += self.result.eq(a ^ b)
            with m.Case(Funct3.SRL):
                m.d.comb += self.result.eq(shifted)
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
