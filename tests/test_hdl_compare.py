"""tessera.hdl.compare: ``at_least`` equal to ``value >= bound`` and ``in_signed_range`` equal to
``lo <= value <= hi`` for every value of small widths."""

import pytest
from amaranth import Module, Signal, signed
from amaranth.sim import Simulator

from tessera.hdl.compare import at_least, in_signed_range


@pytest.mark.parametrize("width,bound", [(4, 0), (4, 1), (4, 8), (4, 16), (4, 32), (5, 3),
                                         (5, 12), (6, 32), (3, 5)])
def test_at_least_is_the_unsigned_comparison(width, bound):
    v = Signal(width)
    out = Signal()
    m = Module()
    m.d.comb += out.eq(at_least(v, bound))
    sim = Simulator(m)
    seen = []

    async def bench(ctx):
        for x in range(2 ** width):
            ctx.set(v, x)
            seen.append((x, ctx.get(out)))

    sim.add_testbench(bench)
    sim.run()
    assert seen == [(x, int(x >= bound)) for x in range(2 ** width)]


def test_at_least_refuses_a_bad_bound_or_a_signed_value():
    with pytest.raises(ValueError, match="bound must be an int >= 0"):
        at_least(Signal(4), -1)
    with pytest.raises(ValueError, match="bound must be an int >= 0"):
        at_least(Signal(4), 2.0)
    with pytest.raises(ValueError, match="unsigned"):
        at_least(Signal(range(-4, 4)), 2)


def _truth(value, out, width):
    """(x, out) for every ``width``-bit pattern x of ``value`` (as the signed integer)."""
    m = Module()
    m.d.comb += out[0].eq(out[1])
    sim = Simulator(m)
    seen = []

    async def bench(ctx):
        for x in range(2 ** width):
            ctx.set(value, x)
            xs = x - 2 ** width if x >= 2 ** (width - 1) else x
            seen.append((xs, ctx.get(out[0])))

    sim.add_testbench(bench)
    sim.run()
    return seen


# the engine's bounds (the int8 / uint8 output types, the TFLITE shift range -31..30) on values
# wider and narrower than the bounds' own type, and bounds at a type's limits
@pytest.mark.parametrize("width,lo,hi", [(10, -128, 127), (10, 0, 255), (12, -31, 30),
                                         (7, -31, 30), (6, -31, 30), (5, -31, 30),
                                         (8, -3, -1), (8, 1, 1), (9, -64, 63), (9, -64, 62)])
def test_in_signed_range_is_the_signed_comparison(width, lo, hi):
    v = Signal(signed(width))
    out = Signal()
    seen = _truth(v, (out, in_signed_range(v, lo, hi)), width)
    assert seen == [(x, int(lo <= x <= hi)) for x, _ in seen]
    assert sorted(x for x, _ in seen) == list(range(-2 ** (width - 1), 2 ** (width - 1)))


def test_in_signed_range_refuses_bad_bounds_or_an_unsigned_value():
    with pytest.raises(ValueError, match="lo must be <= hi"):
        in_signed_range(Signal(signed(8)), 3, 2)
    with pytest.raises(ValueError, match="lo must be an int"):
        in_signed_range(Signal(signed(8)), 1.0, 2)
    with pytest.raises(ValueError, match="must be signed"):
        in_signed_range(Signal(8), 0, 2)
