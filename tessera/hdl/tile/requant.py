"""The matrix engine's pipelined output requantization (docs/architecture.md §12 "Semantics" and
"Why WRITE_DELAY = 10").

Two per-lane chains, each :data:`REQUANT_STAGES` register stages long, every register loading
when the caller's enable is high (the engine passes ``adv``, its step enable, so the chain
advances by engine steps, not clocks; all inputs are taken in the first stage, so a new value
can enter in every enabled clock):

* :func:`tflite_stages`: ``MultiplyByQuantizedMultiplier`` (§11 rule 1), cut into the shift left,
  the four 16 × 16 partial products (one MULT18X18D each on an ECP5), their middle sum, the
  64-bit sum with the rounding nudge (the SRDHM high half), and the rounding shift right
  (decided by guard / sticky bits, no carry chain) with the final 12-bit increment and clip;
* :func:`f32_stages`: ``rne(fl32(fl32(acc) · M))`` (§12 ``FLOAT32``) in integer logic, cut into
  |acc|, the normalisation of |acc| to 24 bits with its round-to-nearest-even increment (and of
  M, so subnormal multipliers need no special path), the 24 × 25-bit multiply, the binary32
  rounding of the product and the final rne to an integer.

The chains have 5 stages since the engine's MAC step became two stages (products, then the
adder tree and accumulate; issue #13): the 7 register stages between an element's last read
and its write step with §12's ``WRITE_DELAY`` = 8 (2026-12-01 to 2026-12-07) are 2 MAC stages
and these 5; the contract's 10 has 9: 3 MAC stages (the stream word registered first), these
5 and the engine's output stage (``OUT_Q``: zero point, clamp, byte placement). To fit, the TFLITE
rounding shift and its increment share a stage (a shift by multiplexers, then one 12-bit carry
chain), and the FLOAT32 rounding increment of |acc| sits in the normalisation stage (only the
shift-right branch, whose shift is at most 8, rounds).

Both return the signed result clipped to ±2^:data:`SAT_LOG2` (every byte output saturates
beyond: ``zp``, ``qmin``, ``qmax`` are within −128..255), so the engine's write step only adds the
zero point, clamps and places the bytes. Each stage holds about one carry chain or one multiply
(the docstrings name them); the stage registers carry a ``<prefix>_<stage>_`` name prefix.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal, signed

__all__ = ["REQUANT_STAGES", "SAT_LOG2", "Stages", "tflite_stages", "f32_stages"]

#: Register stages of each chain (the result is the value of the inputs REQUANT_STAGES enabled
#: clocks earlier).
REQUANT_STAGES = 5
#: Results are clipped to ±2^SAT_LOG2 (every TFLITE / FLOAT32 byte output saturates there).
SAT_LOG2 = 10
_Y = signed(SAT_LOG2 + 2)


class Stages:
    """Builds the registers of one pipelined chain.

    Parameters
    ----------
    m : amaranth.hdl.Module
        The module the registers go into (``sync`` domain).
    en : amaranth value, 1 bit
        The registers load when it is high.
    prefix : str
        Name prefix of the registers.
    """

    def __init__(self, m, en, prefix):
        self.m, self.en, self.prefix = m, en, prefix
        self.stage = 0

    def next(self):
        """Start the next stage (the registers made after this belong to it)."""
        self.stage += 1

    def wire(self, value, name, shape=None):
        """A combinational signal of ``value`` (so a value used twice is one net, not two
        copies of its expression in the netlist)."""
        sig = Signal(shape if shape is not None else value.shape(),
                     name=f"{self.prefix}_{self.stage}_{name}")
        self.m.d.comb += sig.eq(value)
        return sig

    def reg(self, value, name, shape=None):
        """A register loading ``value`` when ``en`` is high; shape of ``value`` unless given."""
        sig = Signal(shape if shape is not None else value.shape(),
                     name=f"{self.prefix}_{self.stage}_{name}")
        with self.m.If(self.en):
            self.m.d.sync += sig.eq(value)
        return sig


def _bit_length(p, v, name):
    """The bit length of unsigned ``v`` (0 for 0): a log-depth priority encoder (the position
    of the top set bit, by halves, + 1), its nodes wires of ``p``."""
    n = 1 << max(len(v) - 1, 0).bit_length()
    bits = Cat(v, Const(0, n - len(v)))

    def enc(b, tag):                  # (any bit set, position of the top set bit)
        if len(b) == 2:               # (no zero-width position: Verilog has no [-1:0])
            return p.wire(b[0] | b[1], f"{name}_a{tag}"), b[1]
        h = len(b) // 2
        a_lo, p_lo = enc(b[:h], tag + "l")
        a_hi, p_hi = enc(b[h:], tag + "h")
        a = p.wire(a_lo | a_hi, f"{name}_a{tag}")
        pos = p.wire(Cat(Mux(a_hi, p_hi, p_lo), a_hi), f"{name}_p{tag}")
        return a, pos

    anyb, pos = enc(bits, "")
    return p.wire(Mux(anyb, pos + 1, 0), name, range(len(v) + 1))


def _s(v):
    """``v`` (unsigned) zero-extended by one bit, as a signed value."""
    return Cat(v, Const(0, 1)).as_signed()


def _round_bits(v, sh):
    """(guard, sticky) of dropping the low ``sh`` bits of unsigned ``v`` (guard = bit sh−1,
    sticky = any bit below it; both 0 for sh = 0): per-bit compares with constants and OR
    trees, no carry chain."""
    top = (1 << len(sh)) - 1          # sh's largest value (no compare that is constant)
    guard = Cat(*(v[i] & (sh == i + 1) for i in range(min(len(v), top)))).any()
    sticky = Cat(*(v[i] & (sh > i + 1) for i in range(min(len(v), top - 1)))).any()
    return guard, sticky


def tflite_stages(p: Stages, x, mult, shift):
    """``MultiplyByQuantizedMultiplier(x, mult, shift)`` clipped to ±2^SAT_LOG2, in
    :data:`REQUANT_STAGES` stages of ``p``.

    Parameters
    ----------
    p : Stages
        The chain's registers (stage 0 on entry).
    x, mult : amaranth value, 32 bits
        The accumulator (int32) and the channel's quantized multiplier (int32).
    shift : amaranth value, signed 6 bits
        −31..30 (checked by the engine in step 9+2m): positive = ``x · 2^left`` wrapping mod
        2^32, negative = rounding divide by 2^right after the doubling high multiply.

    Returns
    -------
    Signal, signed(SAT_LOG2 + 2)
        The last stage's register: SRDHM rounds ties toward +∞ and saturates only at
        (−2^31)·(−2^31); the divide rounds ties away from zero (§11 rule 1, as
        ``tessera.golden_model.kernels.multiply_by_quantized_multiplier``).
    """
    neg = shift[-1]
    # 1: x · 2^left (a barrel shift)
    p.next()
    left = Mux(neg, 0, shift[:5])
    xs = p.reg((x.as_unsigned() << left)[:32], "xs")
    mult = p.reg(mult, "mult", 32)
    right = p.reg(Mux(neg, -shift, 0).as_unsigned()[:5], "right", 5)
    # 2: four 16 × 16 partial products (one DSP multiply each) and the saturation case
    p.next()
    xl, xh = xs[:16], xs[16:].as_signed()
    ml, mh = mult[:16], mult[16:].as_signed()
    pp_ll = p.reg(xl * ml, "ll", 32)
    pp_lh = p.reg(xl * mh, "lh", signed(33))
    pp_hl = p.reg(xh * ml, "hl", signed(33))
    pp_hh = p.reg(xh * mh, "hh", signed(32))
    sat = p.reg((xs == 0x8000_0000) & (mult == 0x8000_0000), "sat")
    right = p.reg(right, "right")
    # 3: the middle sum, with the nudge 2^30 = 2^14 · 2^16 of SRDHM
    p.next()
    mid = p.reg(pp_lh + pp_hl + (1 << 14), "mid", signed(35))
    ll3, hh3, sat3 = p.reg(pp_ll, "ll"), p.reg(pp_hh, "hh"), p.reg(sat, "sat")
    right = p.reg(right, "right")
    # 4: x·mult + 2^30 (one 64-bit carry chain); its bits 31..62 are the SRDHM high half
    p.next()
    prod = Signal(64, name=f"{p.prefix}_4_prodc")
    p.m.d.comb += prod.eq(Cat(ll3, hh3) + (mid.as_signed() << 16))
    hi = p.reg(Mux(sat3, 0x7FFF_FFFF, prod[31:63]), "hi", 32)
    right = p.reg(right, "right")
    # 5: the rounding divide by 2^right (ties away from zero: up = guard & (sticky | x >= 0)),
    #    + up (a 12-bit increment) and the clip to ±2^SAT_LOG2
    p.next()
    his = hi.as_signed()
    guard, sticky = _round_bits(hi, right)
    q = p.wire(his >> right, "q", signed(32))
    up = p.wire(guard & (sticky | ~his[-1]), "up")
    big = (~q[-1]) & q[SAT_LOG2:].any()                    # q >= 2^SAT_LOG2
    small = q[-1] & ~q[SAT_LOG2:].all()                    # q < -2^SAT_LOG2
    inc = p.wire(q[:SAT_LOG2 + 2].as_signed() + up, "inc", _Y)
    return p.reg(Mux(big, 1 << SAT_LOG2, Mux(small, -(1 << SAT_LOG2), inc)), "y", _Y)


def f32_stages(p: Stages, acc, mbits):
    """``rne(fl32(fl32(acc) · M))`` clipped to ±2^SAT_LOG2 (§12 ``FLOAT32``), integer logic, in
    :data:`REQUANT_STAGES` stages of ``p``.

    Parameters
    ----------
    p : Stages
        The chain's registers (stage 0 on entry).
    acc : amaranth value, 32 bits
        The accumulator (int32).
    mbits : amaranth value, 32 bits
        The binary32 bit pattern of a finite M (the engine faults on exponent 255 in step
        8+2m); ±0 and subnormals included.

    Returns
    -------
    Signal, signed(SAT_LOG2 + 2)
        The last stage's register. fl32 and rne round to nearest, ties to even:

        1. |acc| = u (≤ 2^31); M = mm · 2^(max(ex, 1) − 150), mm = fraction | (ex ≠ 0) << 23.
        2. fl32(u) = ma · 2^ea with ma normalised to [2^23, 2^24]: u ≥ 2^24 is rounded (ties
           to even) to its top 24 bits (the shift right is by at most 8, then the rounding
           increment), u < 2^24 shifted left (exact); mm is shifted left to [2^23, 2^24)
           likewise (exact, so a subnormal M is an ordinary one here); e = ea + em.
        3. prod = ma · mm (exact, [2^46, 2^48)), the value is prod · 2^e.
        4. fl32 of it: prod rounded (ties to even) to its top 24 bits, rp (≤ 2^24) · 2^(t−24),
           t = e + bit length of prod; |value| is in [2^(t−1), 2^t).
        5. rne(rp · 2^(t−24)): t ≤ −1 (or a zero factor) gives 0 (|value| < 1/2, and its fl32
           rounding cannot pass 1/2, whose rne is 0); t ≥ SAT_LOG2 + 1 saturates (a binary32
           overflow to ±∞ included); else a rounded right shift by 24 − t (14..24), the sign
           applied as (q ^ s) + (up ^ s) (one adder: −(q + up) = ~q + 1 − up).
    """
    # 1: |acc| (a carry chain) and the multiplier's fields, its leading zeros and em (the
    #    multiplier's part of the exponent: mbits is the channel's parameter, fixed in a command)
    p.next()
    sa = acc[31]
    u = p.reg(Mux(sa, -acc.as_signed(), acc)[:32], "u", 32)
    ex = mbits[23:31]
    mm0 = Cat(mbits[:23], ex != 0)
    mm = p.reg(mm0, "mm", 24)
    mm0 = p.wire(mm0, "mm0")
    lzm0 = p.wire(24 - _bit_length(p, mm0, "blm"), "lzm0", range(25))
    lzm = p.reg(lzm0, "lzm", range(25))
    exb = Mux(ex == 0, 1, ex)
    em = p.reg(_s(exb) - 150 - _s(lzm0), "em", signed(10))
    sgn = p.reg(sa ^ mbits[31], "sgn")
    # 2: normalise |acc| to 24 bits (guard / sticky of the dropped bits) with its rounding
    #    increment (ma = 2^24 is fine: prod stays below 2^48), mm to [2^23, 2^24); e = ea + em
    p.next()
    eh = _bit_length(p, u[24:], "eh")                      # u >> 24 has eh bits: ea = eh
    lz = Signal(5, name=f"{p.prefix}_2_lz")                # eh = 0: shift left by lz
    p.m.d.comb += lz.eq(24 - _bit_length(p, u[:24], "bla"))
    g_a, st_a = _round_bits(u, eh)
    q_big = p.wire((u >> eh)[:24], "qbig")
    up_a = p.wire(g_a & (st_a | q_big[0]), "up")
    r_big = p.wire(q_big + up_a, "rbig", 25)
    ma = p.reg(Mux(eh != 0, r_big, (u[:24] << lz)[:24]), "ma", 25)
    ea = p.wire(Mux(eh != 0, _s(eh), -_s(lz)), "ea", signed(7))
    e = p.reg(ea + em, "e", signed(10))
    zero = p.reg((u == 0) | (mm == 0), "zero")
    mmn = p.reg((mm << lzm)[:24], "mmn", 24)
    sgn = p.reg(sgn, "sgn")
    # 3: the exact product (a 25 × 24-bit multiply, DSP slices)
    p.next()
    prod = p.reg(ma * mmn, "prod", 48)
    e, zero, sgn = p.reg(e, "e"), p.reg(zero, "zero"), p.reg(sgn, "sgn")
    # 4: fl32 of the product: round to its top 24 bits (ties to even), an increment
    p.next()
    top = prod[47]
    q1 = Mux(top, prod[24:48], prod[23:47])
    g1 = Mux(top, prod[23], prod[22])
    st1 = Mux(top, prod[:23].any(), prod[:22].any())
    rp = p.reg(q1 + (g1 & (st1 | q1[0])), "rp", 25)
    t = p.reg(e + Mux(top, 48, 47), "t", signed(10))
    zero, sgn = p.reg(zero, "zero"), p.reg(sgn, "sgn")
    # 5: rne(rp · 2^(t−24)): a shift right by s2 = 24 − t in 14..24, guard / sticky, one adder
    p.next()
    s2 = Signal(5, name=f"{p.prefix}_5_s2")
    p.m.d.comb += s2.eq((24 - t)[:5])
    g2, st2 = _round_bits(rp, s2)
    q2 = (rp >> s2)[:SAT_LOG2 + 1]
    up2 = g2 & (st2 | q2[0])
    is0 = zero | (t < 0)
    sat = ~zero & (t > SAT_LOG2)
    qm = Signal(SAT_LOG2 + 2, name=f"{p.prefix}_5_qm")
    um = Signal(1, name=f"{p.prefix}_5_um")
    p.m.d.comb += [qm.eq(Mux(is0, 0, Mux(sat, 1 << SAT_LOG2, q2))),
                   um.eq(Mux(is0 | sat, 0, up2))]
    sgn12 = Cat(*([sgn] * (SAT_LOG2 + 2)))
    y = Signal(_Y, name=f"{p.prefix}_5_ys")
    p.m.d.comb += y.eq((qm ^ sgn12) + (um ^ sgn))
    return p.reg(y, "y", _Y)
