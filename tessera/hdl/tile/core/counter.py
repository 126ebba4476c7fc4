"""A wide event counter with a registered carry between its halves (docs/design/contract-v2.md
§4 "Area"; architecture §8 counters, §3.2 instret).

The low half adds the increment; its carry out is registered and added to the high half in the
next cycle, so the longest carry chain is half the width. The value is therefore torn for one
cycle after the low half wraps: readers must not look in that cycle. The core's readers never
do: the host reads the counters only while the array is stopped (after the pipeline has
drained), and an ``instret`` read of context c happens in X of c's next issue, at least 4
cycles after the increment of c's previous instruction (in W).
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SplitCounter"]


class SplitCounter(wiring.Component):
    """Counter of ``width`` bits: low ``split`` bits plus a registered carry into the rest.

    Parameters
    ----------
    width : int
        Total width (64 for the §8 counters).
    split : int
        Width of the low half (0 < split < width).
    inc_width : int
        Width of the increment input (at most ``split``).

    Members
    -------
    clear : In(1)
        Reset to 0 (takes precedence; the pending carry is dropped).
    inc : In(inc_width)
        Added in this cycle.
    value : Out(width)
        The count (the high half one cycle late after a carry, see the module docstring).

    Raises
    ------
    ValueError
        ``split`` not in 1..width-1 or ``inc_width`` not in 1..split.
    """

    def __init__(self, width: int = 64, split: int = 32, inc_width: int = 1):
        if not (isinstance(width, int) and isinstance(split, int) and 0 < split < width):
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise ValueError(f"SplitCounter: split must be an int in 1..width-1 "
                             f"(width {width!r}), not {split!r}")
        if not (isinstance(inc_width, int) and 0 < inc_width <= split):
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise ValueError(f"SplitCounter: inc_width must be an int in 1..{split}, "
                             f"not {inc_width!r}")
        self.width, self.split, self.inc_width = width, split, inc_width
        super().__init__({"clear": In(1), "inc": In(inc_width), "value": Out(width)})

    def elaborate(self, platform):
        m = Module()
        lo = Signal(self.split)
        hi = Signal(self.width - self.split)
        carry = Signal()
        total = Signal(self.split + 1)
        m.d.comb += [total.eq(lo + self.inc), self.value.eq(Cat(lo, hi))]
        with m.If(self.clear):
            m.d.sync += [lo.eq(0), hi.eq(0), carry.eq(0)]
        with m.Else():
            m.d.sync += [lo.eq(total[:self.split]), carry.eq(total[self.split]),
                         hi.eq(hi + carry)]
        return m
