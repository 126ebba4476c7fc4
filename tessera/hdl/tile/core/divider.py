"""M-extension divider: DIV/DIVU/REM/REMU over ``DIV_TURNS`` issue slots of the context.

docs/architecture.md §4, "Division": a division occupies DIV_TURNS = 10 consecutive turns of
its context — a set-up turn, 32 / DIV_BITS_PER_TURN iteration turns and a sign-fix turn in
which it retires. Each context has private state: a turn counter n (flip-flops, cleared by
``start``) and a row {word, partial remainder R, quotient/dividend shift register Q} of a
T-entry memory. Contract v2 (docs/design/contract-v2.md §1): the row is read with the address
of the context in R (synchronous read, data in X), each iteration turn's DIV_BITS_PER_TURN
restoring steps are split over X (the first half) and M (the second half), and the row and
the turn counter are written in M. The datapath is a restoring divider on magnitudes; the
divisor's magnitude is never formed: for a negative signed divisor a step adds b instead of
subtracting |b|. Results follow RISC-V Unprivileged ISA 20191213 §7.2 and table 7.1 (division
by zero: quotient all ones, remainder = dividend; -2^31 / -1 = -2^31 with remainder 0).

Hazards: context c's row is written in M of its turn at t (t+4) and read in R of its next turn
(≥ t+T+2): T ≥ 1 suffices for the memory; the turn counter is read in X (t+T+3) after its write
in M (t+4): T ≥ 2.
"""

from amaranth import Array, C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.instructions import FUNCT3, FUNCT3_DIV_UNSIGNED_BIT, FUNCT3_REM_BIT
from tessera.spec.isa import DIV_BITS_PER_TURN, DIV_TURNS

__all__ = ["Divider", "NoDivider"]

#: Restoring steps of an iteration turn made in X; the rest are made in M.
X_STEPS = DIV_BITS_PER_TURN // 2


class Divider(wiring.Component):
    """Per-context multi-turn divider, pipelined over the core's R, X and M stages.

    Parameters
    ----------
    config : ArrayConfig
        Gives T (``contexts``).

    Members
    -------
    start : In(1)
        Host start: every context's turn counter becomes 0.
    r_ctx : In(context_bits)
        Context of the instruction in R (state row read address; the row is used in X).
    x_ctx : In(context_bits)
    x_insn : In(32)
        Context and instruction word in X (the word is compared with the word of the
        context's previous issue).
    x_is_div : In(1)
        That instruction is DIV/DIVU/REM/REMU.
    a, b : In(32)
        rs1 and rs2 values read in this turn (X).
    m_issue : In(1)
        The instruction that was in X in the previous cycle (now in M) takes effect (it was
        issued and does not fault): the divider writes its row and turn counter now. A
        non-division issue clears the context's counter.
    last : Out(1)
        X: this is the division's last turn: ``result`` is valid, the division retires.
    result : Out(32)
        X: the result of the last turn.
    """

    def __init__(self, config: ArrayConfig):
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True
            raise TypeError(f"Divider: config must be an ArrayConfig, not {config!r}")
        self.config = config
        cb = config.context_bits
        super().__init__({
            "start": In(1), "r_ctx": In(cb),
            "x_ctx": In(cb), "x_insn": In(32), "x_is_div": In(1), "a": In(32), "b": In(32),
            "m_issue": In(1),
            "last": Out(1), "result": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        T = self.config.contexts
        cb = self.config.context_bits
        final = DIV_TURNS - 1

        m.submodules.state = mem = Memory(shape=96, depth=T, init=[])
        rp = mem.read_port(transparent_for=())
        wp = mem.write_port()
        m.d.comb += [rp.addr.eq(self.r_ctx), rp.en.eq(1)]
        s_word, s_r, s_q = rp.data[0:32], rp.data[32:64], rp.data[64:96]

        # ---- X ----------------------------------------------------------------------------
        turns = Array(Signal(range(DIV_TURNS), name=f"turn{i}") for i in range(T))
        n = turns[self.x_ctx]
        j = Signal(range(DIV_TURNS))
        m.d.comb += [
            j.eq(Mux((s_word == self.x_insn) & (n != 0), n, 0)),
            self.last.eq(j == final),
        ]

        a, b = self.a, self.b
        f3 = self.x_insn[FUNCT3.slice]
        signed_op = ~f3[FUNCT3_DIV_UNSIGNED_BIT]   # DIV, REM
        rem_op = f3[FUNCT3_REM_BIT]                # REM, REMU
        a_neg = signed_op & a[31]
        b_neg = signed_op & b[31]

        # Set-up turn: R = 0, Q = |a|.
        a_mag = Signal(32)
        m.d.comb += a_mag.eq(Mux(a_neg, -a, a))

        def steps(r, q, operand, cin, count, tag):
            """``count`` restoring steps on {R, Q}: diff = 2R + q31 - |b| as a 34-bit two's
            complement sum, + sext(b) for a negative signed divisor, + ~zext(b) + 1 otherwise
            (one adder each, carry in through the low bit)."""
            for i in range(count):
                r2 = Cat(q[31], r)                          # 33 bits
                total = Signal(35, name=f"step_{tag}{i}")
                m.d.comb += total.eq(Cat(C(1, 1), r2) + Cat(cin, operand))
                ge = ~total[34]                             # bit 33 of the 34-bit difference
                r = Mux(ge, total[1:33], r2[0:32])
                q = Cat(ge, q[0:31])
            return r, q

        operand = Cat(Mux(b_neg, b, ~b), C(0b11, 2))
        cin = ~b_neg
        x_r, x_q = steps(s_r, s_q, operand, cin, X_STEPS, "x")

        # Sign-fix turn.
        quot = Mux(a_neg ^ b_neg, -s_q, s_q)[0:32]
        rem = Mux(a_neg, -s_r, s_r)[0:32]
        with m.If(b == 0):
            m.d.comb += self.result.eq(Mux(rem_op, a, 0xFFFFFFFF))
        with m.Else():
            m.d.comb += self.result.eq(Mux(rem_op, rem, quot))

        # ---- X -> M -----------------------------------------------------------------------
        m_ctx = Signal(cb)
        m_word = Signal(32)
        m_adv = Signal()      # a turn before the last: n <- j + 1 and the row is written
        m_setup = Signal()
        m_j = Signal(range(DIV_TURNS))
        m_amag = Signal(32)
        m_r = Signal(32)
        m_q = Signal(32)
        m_operand = Signal(34)
        m_cin = Signal()
        m.d.sync += [
            m_ctx.eq(self.x_ctx), m_word.eq(self.x_insn),
            m_adv.eq(self.x_is_div & (j != final)), m_setup.eq(j == 0), m_j.eq(j),
            m_amag.eq(a_mag), m_r.eq(x_r), m_q.eq(x_q), m_operand.eq(operand), m_cin.eq(cin),
        ]

        # ---- M ----------------------------------------------------------------------------
        r, q = steps(m_r, m_q, m_operand, m_cin, DIV_BITS_PER_TURN - X_STEPS, "m")
        m.d.comb += [
            wp.addr.eq(m_ctx),
            wp.en.eq(self.m_issue & m_adv),
            wp.data.eq(Cat(m_word, Mux(m_setup, 0, r), Mux(m_setup, m_amag, q))),
        ]
        with m.If(self.start):
            m.d.sync += [t.eq(0) for t in turns]
        with m.Elif(self.m_issue):
            m.d.sync += turns[m_ctx].eq(Mux(m_adv, m_j + 1, 0))
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
