"""The ``dot4`` / ``dot4su`` custom instructions (docs/architecture.md §3.3) over the X and M
stages.

rd ← rd + Σ_{i<4} s8(rs1 byte i) · x8(rs2 byte i) mod 2^32, where x8 is s8 for ``dot4``
and u8 for ``dot4su``. Like the multiplier (:mod:`.mul`): X forms the four 8×9-bit products
(the DSP multipliers) and the two pairwise sums, registered at the end of X; M adds them to
the old rd (one three-input adder) and the core writes the result in W. The split is inside
the pipeline (the result is needed only in W), so it is invisible to programs.
"""

from amaranth import Cat, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Dot4"]


class Dot4(wiring.Component):
    """Two-stage 4-way int8 dot product with accumulate: operands in one cycle (X), result in
    the next (M).

    Members
    -------
    a : In(32)
        rs1 in X: four signed bytes (byte i = bits [8i+7:8i]).
    b : In(32)
        rs2 in X: four bytes, signed (``su`` = 0) or unsigned (``su`` = 1).
    su : In(1)
        In X: 0 for ``dot4``, 1 for ``dot4su``.
    acc : In(32)
        In M (the cycle after ``a``/``b``): the old rd value (the accumulator).
    result : Out(32)
        In M: ``acc`` plus the dot product of the previous cycle's ``a``, ``b``, ``su``,
        modulo 2^32.
    """

    a: In(32)
    b: In(32)
    su: In(1)
    acc: In(32)
    result: Out(32)

    def elaborate(self, platform):
        m = Module()
        terms = []
        for i in range(4):
            ai = Signal(signed(9), name=f"a{i}")
            bi = Signal(signed(9), name=f"b{i}")
            pi = Signal(signed(18), name=f"p{i}")
            byte_a = self.a[8 * i:8 * i + 8]
            byte_b = self.b[8 * i:8 * i + 8]
            m.d.comb += [
                ai.eq(byte_a.as_signed()),
                bi.eq(Cat(byte_b, byte_b[7] & ~self.su)),
                pi.eq(ai * bi),
            ]
            terms.append(pi)
        s01 = Signal(signed(19))       # registered at the end of X
        s23 = Signal(signed(19))
        m.d.sync += [s01.eq(terms[0] + terms[1]), s23.eq(terms[2] + terms[3])]
        m.d.comb += self.result.eq(self.acc + s01 + s23)
        return m
