"""ARRAY-barrier sync controller (docs/architecture.md §5, docs/rtl.md).

A registered AND tree over the tiles' ``arrive`` bits (and, in parallel, a registered OR tree over
"this tile has a context in WAIT_ARRAY") followed by a rising-edge detector and two register
stages. With D = ceil(log2 N) tree levels the release pulse comes exactly
``S = D + 2 = config.sync_latency`` cycles after the first cycle k* in which every tile is arrived.

Why every barrier is released exactly once: the architecture guarantees that nothing changes
between k* and r (all tiles stay arrived), and at r every tile enters its exchange phase, during
which it is not arrived (the tile masks ``arrive`` with ``in_exchange``). So the AND of the arrivals
is a run of exactly S ones per barrier followed by at least one zero; the edge detector (its
"previous value" register is the sense bit) turns each run into one pulse. Arrivals of the next
barrier cannot be lost or merged: they form the next run of ones, which can only start after the
zero at r.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Cat
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from ..interfaces import check_config

__all__ = ["SyncController"]


class SyncController(wiring.Component):
    """Registered AND tree over tile arrivals producing the ARRAY release pulse.

    Parameters
    ----------
    config : ArrayConfig
        Array configuration; N = ``config.tiles`` inputs, latency ``config.sync_latency``.

    Members
    -------
    arrive : In(N)
        Bit i: tile i is arrived at cycle k (architecture §5; already masked by its exchange phase).
    waiting : In(N)
        Bit i: tile i has at least one context in WAIT_ARRAY at cycle k.
    enable : In(1)
        The array is running; when low the inputs are treated as 0.
    clear : In(1)
        Synchronous clear of every pipeline register (the start pulse).
    prerelease : Out(1)
        Pulse in cycle r − 1.
    release : Out(1)
        Pulse in cycle r = k* + S, where k* is the first cycle with every tile arrived and some
        context of the array in WAIT_ARRAY.

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
            "prerelease": Out(1), "release": Out(1),
        })

    @property
    def depth(self) -> int:
        """Registered tree levels D = S − 2."""
        return self.config.sync_latency - 2

    def elaborate(self, platform):
        m = Module()
        n = self.config.tiles
        ands = [self.arrive[i] & self.enable for i in range(n)]
        ors = [self.waiting[i] & self.enable for i in range(n)]
        level = 0
        for _ in range(self.depth):
            nxt_a, nxt_o = [], []
            for j in range(0, len(ands), 2):
                a = Signal(name=f"and_l{level}_{j // 2}")
                o = Signal(name=f"or_l{level}_{j // 2}")
                pair_a = ands[j:j + 2]
                pair_o = ors[j:j + 2]
                with m.If(self.clear):
                    m.d.sync += [a.eq(0), o.eq(0)]
                with m.Else():
                    m.d.sync += [a.eq(Cat(*pair_a).all()), o.eq(Cat(*pair_o).any())]
                nxt_a.append(a)
                nxt_o.append(o)
            ands, ors = nxt_a, nxt_o
            level += 1
        assert len(ands) == 1 and len(ors) == 1
        all_arrived = Signal()
        m.d.comb += all_arrived.eq(ands[0] & ors[0])
        prev = Signal()       # sense bit: value of all_arrived one cycle before
        pre = Signal()
        rel = Signal()
        with m.If(self.clear):
            m.d.sync += [prev.eq(0), pre.eq(0), rel.eq(0)]
        with m.Else():
            m.d.sync += [prev.eq(all_arrived), pre.eq(all_arrived & ~prev), rel.eq(pre)]
        m.d.comb += [self.prerelease.eq(pre & self.enable), self.release.eq(rel & self.enable)]
        return m
