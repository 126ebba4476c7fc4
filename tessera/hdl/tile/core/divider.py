"""M-extension divider: DIV/DIVU/REM/REMU over ``DIV_TURNS`` issue slots of the context.

docs/architecture.md §4, "Division": a division occupies DIV_TURNS = 10 consecutive turns of
its context — a set-up turn, 32 / DIV_BITS_PER_TURN iteration turns and a sign-fix turn in
which it retires. Each context has private state: a turn counter n (flip-flops, cleared by
``start``) and a row {word, partial remainder R, quotient/dividend shift register Q} of a
T-entry memory read in D and written in X, like the register file. The datapath is a
restoring divider on magnitudes (DIV_BITS_PER_TURN steps per turn); the divisor's magnitude
is never formed: for a negative signed divisor the step adds b instead of subtracting |b|.
Results follow RISC-V Unprivileged ISA 20191213 §7.2 and table 7.1 (division by zero:
quotient all ones, remainder = dividend; -2^31 / -1 = -2^31 with remainder 0).
"""

from amaranth import Array, C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.instructions import FUNCT3, FUNCT3_DIV_UNSIGNED_BIT, FUNCT3_REM_BIT
from tessera.spec.isa import DIV_BITS_PER_TURN, DIV_TURNS

__all__ = ["Divider", "NoDivider"]


class Divider(wiring.Component):
    """Per-context multi-turn divider.

    Parameters
    ----------
    config : ArrayConfig
        Gives T (``contexts``).

    Members
    -------
    start : In(1)
        Host start: every context's turn counter becomes 0.
    r_ctx : In(context_bits)
        Context of the instruction in D (state read address; data used in X).
    issue : In(1)
        An instruction of context ``ctx`` issues in X without fault.
    is_div : In(1)
        That instruction is DIV/DIVU/REM/REMU (a non-division issue clears the counter).
    ctx : In(context_bits)
    insn : In(32)
        The instruction word in X (compared with the word of the context's previous issue).
    a, b : In(32)
        rs1 and rs2 values read in this turn.
    last : Out(1)
        This is the division's last turn: ``result`` is valid, the division retires.
    result : Out(32)
    """

    def __init__(self, config: ArrayConfig):
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True
            raise TypeError(f"Divider: config must be an ArrayConfig, not {config!r}")
        self.config = config
        cb = config.context_bits
        super().__init__({
            "start": In(1), "r_ctx": In(cb),
            "issue": In(1), "is_div": In(1), "ctx": In(cb), "insn": In(32),
            "a": In(32), "b": In(32),
            "last": Out(1), "result": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        T = self.config.contexts
        final = DIV_TURNS - 1

        m.submodules.state = mem = Memory(shape=96, depth=T, init=[])
        rp = mem.read_port(transparent_for=())
        wp = mem.write_port()
        m.d.comb += [rp.addr.eq(self.r_ctx), rp.en.eq(1)]
        s_word, s_r, s_q = rp.data[0:32], rp.data[32:64], rp.data[64:96]

        turns = Array(Signal(range(DIV_TURNS), name=f"turn{i}") for i in range(T))
        n = turns[self.ctx]
        j = Signal(range(DIV_TURNS))
        m.d.comb += [
            j.eq(Mux((s_word == self.insn) & (n != 0), n, 0)),
            self.last.eq(j == final),
        ]

        a, b = self.a, self.b
        f3 = self.insn[FUNCT3.slice]
        signed_op = ~f3[FUNCT3_DIV_UNSIGNED_BIT]   # DIV, REM
        rem_op = f3[FUNCT3_REM_BIT]                # REM, REMU
        a_neg = signed_op & a[31]
        b_neg = signed_op & b[31]

        # Set-up turn: R = 0, Q = |a|.
        a_mag = Signal(32)
        m.d.comb += a_mag.eq(Mux(a_neg, -a, a))

        # Iteration turn: DIV_BITS_PER_TURN restoring steps on {R, Q}. diff = 2R + q31 - |b|
        # as a 34-bit two's-complement sum: + sext(b) for a negative signed divisor,
        # + ~zext(b) + 1 otherwise (one adder, carry in through the low bit).
        operand = Cat(Mux(b_neg, b, ~b), C(0b11, 2))
        cin = ~b_neg
        r, q = s_r, s_q
        for i in range(DIV_BITS_PER_TURN):
            r2 = Cat(q[31], r)                          # 33 bits
            total = Signal(35, name=f"step{i}")
            m.d.comb += total.eq(Cat(C(1, 1), r2) + Cat(cin, operand))
            ge = ~total[34]                             # bit 33 of the 34-bit difference
            r = Mux(ge, total[1:33], r2[0:32])
            q = Cat(ge, q[0:31])

        # Sign-fix turn.
        quot = Mux(a_neg ^ b_neg, -s_q, s_q)[0:32]
        rem = Mux(a_neg, -s_r, s_r)[0:32]
        with m.If(b == 0):
            m.d.comb += self.result.eq(Mux(rem_op, a, 0xFFFFFFFF))
        with m.Else():
            m.d.comb += self.result.eq(Mux(rem_op, rem, quot))

        advance = self.is_div & (j != final)       # a turn before the last: n <- j + 1
        setup = j == 0
        m.d.comb += [
            wp.addr.eq(self.ctx),
            wp.en.eq(self.issue & advance),
            wp.data.eq(Cat(self.insn, Mux(setup, 0, r), Mux(setup, a_mag, q))),
        ]
        with m.If(self.start):
            m.d.sync += [t.eq(0) for t in turns]
        with m.Elif(self.issue):
            m.d.sync += n.eq(Mux(advance, j + 1, 0))
        return m


class NoDivider(Divider):
    """Synthesis what-if, **not** the contract design: a :class:`Divider` with the same ports
    and no division hardware. Every division is in its last turn (``last`` = 1) with
    ``result`` = 0, so DIV/DIVU/REM/REMU retire in one turn with 0. Chosen by
    ``Variant(divider=False)`` (:mod:`tessera.hdl.variant`), to measure what the multi-turn
    divider costs (docs/synthesis.md).
    """

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.last.eq(1), self.result.eq(0)]
        return m
