"""Shifts on the multiplier: the operand and mode that make the M-extension multiplier shift.

RISC-V Unprivileged ISA 20191213 §2.4 (SLL, SRL, SRA and SLLI, SRLI, SRAI: rs1 shifted by the
low five bits of rs2 or of the immediate) and §7.1 (MUL, MULHSU, MULHU). With s in 0..31:

* ``a << s`` is the low word of a · 2^s (MUL);
* ``a >> s`` (logical) is the high word of a · 2^(32 − s) with both unsigned (MULHU), for
  s ≥ 1: (a · 2^(32 − s)) / 2^32 = a / 2^s, rounded down;
* ``a >> s`` (arithmetic) is the high word of a · 2^(32 − s) with a signed and the power
  unsigned (MULHSU), for s ≥ 1: floor(a / 2^s), which is the arithmetic shift;
* s = 0 shifts nothing: the low word of a · 1 (MUL).

The power is 2^((−s) mod 32) for a right shift (1 when s = 0) and 2^s for a left one, so the
operand is a 32-bit one-hot decode of s and its mirror (bit k of 2^((−s) mod 32) is bit
(32 − k) mod 32 of 2^s: wiring, no negation), and the core needs no barrel
shifter: the X stage's ALU keeps only the adder and the logic operations (docs/synthesis.md:
the three 32-bit shifters took 557 of the ALU's 745 LUT4). The result comes from the
multiplier in M, like MUL's, and is written in W like every result (no program-visible
change, architecture §4).
"""

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.instructions import Funct3

__all__ = ["ShiftOperand"]

assert (Funct3.MUL, Funct3.MULHSU, Funct3.MULHU) == (0, 2, 3), "the multiplier's 2-bit modes"


class ShiftOperand(wiring.Component):
    """The multiplier's second operand and mode for a shift (combinational).

    Members
    -------
    shamt : In(5)
        The shift amount s (rs2's low five bits, or the immediate's).
    funct3 : In(3)
        ``Funct3.SLL`` (1) for a left shift, ``Funct3.SRL`` (5) for a right one; any other
        value is treated as a right shift (the core presents shifts only).
    alt : In(1)
        SRA / SRAI (instruction bit 30) rather than SRL / SRLI.
    b : Out(32)
        The power of two: 2^s (left), 2^((−s) mod 32) (right).
    mode : Out(2)
        The multiplier's ``funct3`` (low two bits of MUL 0, MULHSU 2, MULHU 3): MUL for a
        left shift and for s = 0, else MULHSU (arithmetic) or MULHU (logical).
    """

    shamt: In(5)
    funct3: In(3)
    alt: In(1)
    b: Out(32)
    mode: Out(2)

    def elaborate(self, platform):
        m = Module()
        left = self.funct3 == Funct3.SLL
        # 2^s is a one-hot decode of s; 2^((-s) mod 32) is the same decode mirrored (bit k
        # is bit (32 - k) mod 32 of 2^s), so no negation's carry chain comes between the
        # register file's rs2 and the multiplier's input register (docs/synthesis.md)
        onehot = Signal(32)
        m.d.comb += [
            onehot.eq(C(1, 32) << self.shamt),      # shamt <= 31: no bit is cut
            self.b.eq(Mux(left, onehot,
                          Cat(onehot[0], *[onehot[32 - k] for k in range(1, 32)]))),
        ]
        with m.If(left | (self.shamt == 0)):
            m.d.comb += self.mode.eq(int(Funct3.MUL))
        with m.Elif(self.alt):
            m.d.comb += self.mode.eq(int(Funct3.MULHSU))
        with m.Else():
            m.d.comb += self.mode.eq(int(Funct3.MULHU))
        return m
