"""M-extension unit: MUL/MULH/MULHSU/MULHU/DIV/DIVU/REM/REMU, single-cycle combinational.

RISC-V Unprivileged ISA 20191213 chapter 7; division corner cases per table 7.1
(docs/architecture.md §3.1). The contract gives every instruction one X cycle, so
both the multiplier and the divider are combinational.
"""

from amaranth import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["MulDiv"]


class MulDiv(wiring.Component):
    """Combinational RV32M operation.

    Members
    -------
    a, b : In(32)
        rs1 and rs2 values (raw 32-bit words).
    funct3 : In(3)
        0 MUL, 1 MULH, 2 MULHSU, 3 MULHU, 4 DIV, 5 DIVU, 6 REM, 7 REMU.
    result : Out(32)
        The result word. Division by zero gives quotient 0xFFFFFFFF and remainder ``a``;
        DIV(-2^31, -1) = -2^31 and REM(-2^31, -1) = 0.
    """

    a: In(32)
    b: In(32)
    funct3: In(3)
    result: Out(32)

    def elaborate(self, platform):
        m = Module()
        a, b, f3 = self.a, self.b, self.funct3

        # Multiplier: extend both operands to 33-bit signed with the requested signedness
        # (MULH: s*s, MULHSU: s*u, MULHU: u*u; MUL's low word is signedness-independent).
        a_signed = (f3 == 1) | (f3 == 2)
        b_signed = f3 == 1
        a_ext = Signal(signed(33))
        b_ext = Signal(signed(33))
        m.d.comb += [
            a_ext.eq(Cat(a, a[31] & a_signed)),
            b_ext.eq(Cat(b, b[31] & b_signed)),
        ]
        product = Signal(signed(66))
        m.d.comb += product.eq(a_ext * b_ext)

        # Divider: one unsigned divider on magnitudes; signs fixed afterwards (truncation).
        div_signed = ~f3[0]  # DIV (4) and REM (6)
        neg_a = div_signed & a[31]
        neg_b = div_signed & b[31]
        ua = Signal(unsigned(32))
        ub = Signal(unsigned(32))
        m.d.comb += [
            ua.eq(Mux(neg_a, -a, a)),
            ub.eq(Mux(neg_b, -b, b)),
        ]
        q = Signal(32)
        r = Signal(32)
        # Guard the divisor so that no division by zero reaches the generated Verilog.
        ub_safe = Mux(ub == 0, 1, ub)
        m.d.comb += [
            q.eq(ua // ub_safe),
            r.eq(ua % ub_safe),
        ]
        quot = Signal(32)
        rem = Signal(32)
        with m.If(b == 0):
            m.d.comb += [quot.eq(0xFFFFFFFF), rem.eq(a)]
        with m.Else():
            m.d.comb += [
                quot.eq(Mux(neg_a ^ neg_b, -q, q)),
                rem.eq(Mux(neg_a, -r, r)),
            ]

        with m.Switch(f3):
            with m.Case(0):
                m.d.comb += self.result.eq(product[0:32])
            with m.Case(1, 2, 3):
                m.d.comb += self.result.eq(product[32:64])
            with m.Case(4, 5):
                m.d.comb += self.result.eq(quot)
            with m.Case(6, 7):
                m.d.comb += self.result.eq(rem)
        return m
