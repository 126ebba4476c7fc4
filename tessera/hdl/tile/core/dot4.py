"""The ``dot4`` / ``dot4su`` custom instructions (docs/architecture.md §3.3).

rd ← rd + Σ_{i<4} s8(rs1 byte i) · x8(rs2 byte i) mod 2^32, where x8 is s8 for ``dot4``
and u8 for ``dot4su``. Four 8×9-bit MACs, combinational.
"""

from amaranth import Cat, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Dot4"]


class Dot4(wiring.Component):
    """Combinational 4-way int8 dot product with accumulate.

    Members
    -------
    a : In(32)
        rs1: four signed bytes (byte i = bits [8i+7:8i]).
    b : In(32)
        rs2: four bytes, signed (``su`` = 0) or unsigned (``su`` = 1).
    acc : In(32)
        The old rd value (accumulator).
    su : In(1)
        0 for ``dot4``, 1 for ``dot4su``.
    result : Out(32)
        ``acc`` plus the dot product, modulo 2^32.
    """

    a: In(32)
    b: In(32)
    acc: In(32)
    su: In(1)
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
        total = Signal(signed(20))
        m.d.comb += total.eq(terms[0] + terms[1] + terms[2] + terms[3])
        m.d.comb += self.result.eq(self.acc + total)
        return m
