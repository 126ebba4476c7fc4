"""M-extension multiplier: MUL/MULH/MULHSU/MULHU over the X and M stages.

RISC-V Unprivileged ISA 20191213 §7.1. Contract v2 (docs/architecture.md §4,
docs/design/contract-v2.md §1 "Multiplier"): the operands are registered at the end of R (the
core's X-stage operand registers, the MULT18X18D input registers), X forms four partial
products of 17×17 bits (the DSP multipliers) and the sum of the two middle ones (registered at
the end of X), and M adds that to the outer two (one adder) and selects the word; the core
writes the result in W.
Division has its own multi-turn unit, :mod:`.divider`.
"""

from amaranth import Cat, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.instructions import Funct3

__all__ = ["Multiplier"]

#: Width of the low half of each operand in the partial-product split (unsigned part).
_LO = 16


class Multiplier(wiring.Component):
    """Two-stage RV32M multiplication: operands in one cycle (X), result in the next (M).

    Members
    -------
    a, b : In(32)
        rs1 and rs2 values (raw 32-bit words), in X.
    funct3 : In(2)
        Low two bits of funct3 (0 MUL, 1 MULH, 2 MULHSU, 3 MULHU), in X.
    result : Out(32)
        In the cycle after the operands (M): MUL: low word of the product; MULH/MULHSU/MULHU:
        high word of the 64-bit product with the stated signedness (s×s, s×u, u×u).
    """

    a: In(32)
    b: In(32)
    funct3: In(2)
    result: Out(32)

    def elaborate(self, platform):
        m = Module()
        a, b, f3 = self.a, self.b, self.funct3
        # Each operand as 33-bit signed with the requested signedness (MUL's low word does
        # not depend on it), split into an unsigned low part and a signed high part:
        # x = x_hi · 2^16 + x_lo, x_lo in 0..2^16-1, x_hi a 17-bit signed value.
        a_signed = (f3 == Funct3.MULH) | (f3 == Funct3.MULHSU)
        b_signed = f3 == Funct3.MULH
        a_hi = Signal(signed(33 - _LO))
        b_hi = Signal(signed(33 - _LO))
        a_lo = Signal(signed(_LO + 1))      # zero-extended: non-negative
        b_lo = Signal(signed(_LO + 1))
        m.d.comb += [
            a_hi.eq(Cat(a[_LO:32], a[31] & a_signed)), b_hi.eq(Cat(b[_LO:32], b[31] & b_signed)),
            a_lo.eq(Cat(a[0:_LO], 0)), b_lo.eq(Cat(b[0:_LO], 0)),
        ]
        # X: four partial products (the DSPs, inputs registered at the end of R), and the sum
        # of the two middle ones; registered at the end of X. al·bl < 2^32 and the high
        # product starts at bit 32, so {hh, ll} is their sum without an adder.
        ll = Signal(2 * _LO)
        hh = Signal(signed(2 * (33 - _LO)))
        mid = Signal(signed(2 * (33 - _LO) + 1))
        m.d.sync += [ll.eq(a_lo * b_lo), hh.eq(a_hi * b_hi), mid.eq(a_lo * b_hi + a_hi * b_lo)]
        high = Signal()
        m.d.sync += high.eq(f3 != Funct3.MUL)
        # M: one adder and the word.
        product = Signal(signed(66))
        m.d.comb += product.eq(Cat(ll, hh).as_signed() + (mid << _LO))
        with m.If(high):
            m.d.comb += self.result.eq(product[32:64])
        with m.Else():
            m.d.comb += self.result.eq(product[0:32])
        return m
