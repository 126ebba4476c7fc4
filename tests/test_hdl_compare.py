"""tessera.hdl.compare.at_least: equal to ``value >= bound`` for every value of small widths."""

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator

from tessera.hdl.compare import at_least


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
