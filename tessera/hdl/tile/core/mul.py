"""M-extension multiplier: MUL/MULH/MULHSU/MULHU, single-cycle combinational.

RISC-V Unprivileged ISA 20191213 §7.1. The contract (docs/architecture.md §4) gives a
multiplication one X cycle; division has its own multi-turn unit, :mod:`.divider`.
"""

from amaranth import Cat, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.instructions import Funct3

__all__ = ["Multiplier"]


class Multiplier(wiring.Component):
    """Combinational RV32M multiplication.

    Members
    -------
    a, b : In(32)
        rs1 and rs2 values (raw 32-bit words).
    funct3 : In(2)
        Low two bits of funct3: 0 MUL, 1 MULH, 2 MULHSU, 3 MULHU.
    result : Out(32)
        MUL: low word of the product; MULH/MULHSU/MULHU: high word of the 64-bit product
        with the stated signedness (s×s, s×u, u×u).
    """

    a: In(32)
    b: In(32)
    funct3: In(2)
    result: Out(32)

    def elaborate(self, platform):
        m = Module()
        a, b, f3 = self.a, self.b, self.funct3
        # Extend both operands to 33-bit signed with the requested signedness
        # (MUL's low word is signedness-independent).
        a_signed = (f3 == Funct3.MULH) | (f3 == Funct3.MULHSU)
        b_signed = f3 == Funct3.MULH
        a_ext = Signal(signed(33))
        b_ext = Signal(signed(33))
        m.d.comb += [
            a_ext.eq(Cat(a, a[31] & a_signed)),
            b_ext.eq(Cat(b, b[31] & b_signed)),
        ]
        product = Signal(signed(66))
        m.d.comb += product.eq(a_ext * b_ext)
        with m.If(f3 == Funct3.MUL):
            m.d.comb += self.result.eq(product[0:32])
        with m.Else():
            m.d.comb += self.result.eq(product[32:64])
        return m
