"""ARRAY-barrier sync controller (docs/architecture.md §5 and §7 "Array decisions", docs/rtl.md).

The release is an array decision: its condition (every tile arrived and some context of the
array in WAIT_ARRAY) first holds at k*, and it acts on every tile at r = k* + D, D = ceil(log2 N)
+ 2 (:attr:`ArrayConfig.decision_latency`). Two registered trees (:mod:`.reduction_tree`): an
AND over the tiles' ``arrive`` and an OR over their ``waiting``, each with one leaving register
per tile and ceil(log2 N) − 1 levels; the root register combines them and detects the rising
edge (``prerelease``, a register, in cycle r − 1 = k* + D − 1); one entering register per tile
gives ``release[i]`` in cycle r. No gate joins two tiles' signals or sits between a register and
a tile input.

Why every barrier is released exactly once: the architecture guarantees that nothing changes
between k* and r (all tiles stay arrived), and at r every tile enters its exchange phase, during
which it is not arrived (the tile masks ``arrive`` with ``in_exchange``). So the root's
condition is a run of exactly D ones per barrier followed by at least one zero; the edge detector
(the root's "previous value" register is the sense bit) turns each run into one pulse. Arrivals of
the next barrier cannot be lost or merged: they form the next run of ones, which can only start
after the zero at r. If the array stops before r the tiles ignore the release (their ``run`` is
low, architecture §5: no release after the stop).
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from ..interfaces import check_config
from .reduction_tree import reduce_tree, tree_levels

__all__ = ["SyncController"]


class SyncController(wiring.Component):
    """Registered AND tree over tile arrivals producing the ARRAY release pulse.

    Parameters
    ----------
    config : ArrayConfig
        Array configuration; N = ``config.tiles`` inputs, latency D =
        ``config.decision_latency``.

    Members
    -------
    arrive : In(N)
        Bit i: tile i is arrived at cycle k (architecture §5, visible states; already masked by
        its exchange phase).
    waiting : In(N)
        Bit i: tile i has at least one context in WAIT_ARRAY at cycle k.
    enable : In(1)
        The array is running; when low the inputs are taken as 0 (at the leaving registers).
    clear : In(1)
        Synchronous clear of every register (the start pulse).
    prerelease : Out(1)
        Pulse in cycle r − 1 (the root register).
    release : Out(N)
        Bit i: pulse in cycle r = k* + D on tile i (its entering register), where k* is the first
        cycle with every tile arrived and some context of the array in WAIT_ARRAY.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("SyncController", config)
        n = config.tiles
        super().__init__({
            "arrive": In(n), "waiting": In(n), "enable": In(1), "clear": In(1),
            "prerelease": Out(1), "release": Out(n),
        })

    @property
    def depth(self) -> int:
        """Tree register levels, the root included: ceil(log2 N) = D − 2."""
        return tree_levels(self.config.tiles)

    def elaborate(self, platform):
        m = Module()
        n = self.config.tiles
        assert self.depth + 2 == self.config.decision_latency
        en, clr = self.enable, self.clear
        # with N = 1 the root register below is the tile's leaving register
        a = reduce_tree(m, [self.arrive[i] & en for i in range(n)], "and", name="arr",
                        clear=clr)
        w = reduce_tree(m, [self.waiting[i] & en for i in range(n)], "or", name="wait",
                        clear=clr)
        cond = a & w
        prev = Signal()       # the root's condition one cycle before (the sense bit)
        pre = Signal()
        rel = Signal(n)
        with m.If(clr):
            m.d.sync += [prev.eq(0), pre.eq(0), rel.eq(0)]
        with m.Else():
            m.d.sync += [prev.eq(cond), pre.eq(cond & ~prev), rel.eq(pre.replicate(n))]
        m.d.comb += [self.prerelease.eq(pre), self.release.eq(rel)]
        return m
