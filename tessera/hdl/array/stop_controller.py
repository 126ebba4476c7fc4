"""The stop of a run (docs/architecture.md §7 "Array decisions", "Stop", "Timeout"; docs/rtl.md
"Run control").

The stop is an array decision: its condition — a fault visible on some tile, or every context of
the array HALTED (visible states) — first holds at v, the array stops at the end of
t_s = v + D − 1 and ``cycles`` = v + D (D = ceil(log2 N) + 2). Two registered trees
(:mod:`.reduction_tree`): an OR over the tiles' ``fault`` and an AND over their ``halted``, each
with one leaving register per tile and ceil(log2 N) − 1 levels; the root registers hold the OR
(``faulted``) and the stop condition (``stop``, sticky) of cycle k in k + D − 1; one entering
register per tile, ``run[i]``, is low from v + D on. So tile i issues and steps in exactly the
cycles 0 .. C − 1 with C = v + D, and no gate joins two tiles' signals.

The timeout needs no tree (§7 "Timeout": every tile compares its own copy of the cycle counter):
``last`` (the array's cycle counter is at max_cycles − 1) clears every entering register at once,
so ``run`` is low from max_cycles on.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from ..interfaces import check_config
from .reduction_tree import reduce_tree, tree_levels

__all__ = ["StopController"]


class StopController(wiring.Component):
    """Registered fault-OR and halt-AND trees and the tiles' ``run`` registers.

    Parameters
    ----------
    config : ArrayConfig
        N = ``config.tiles`` inputs, latency D = ``config.decision_latency``.

    Members
    -------
    fault : In(N)
        Bit i: a fault is visible on tile i in this cycle (architecture §7 "Stop").
    halted : In(N)
        Bit i: every context of tile i is HALTED in this cycle (visible states).
    clear : In(1)
        The start pulse (the cycle before cycle 0): every tree register cleared, every ``run``
        register set (cycle 0 always runs).
    last : In(1)
        This cycle is the run's last by the timeout (cycle max_cycles − 1): ``run`` low from the
        next cycle.
    run : Out(N)
        Bit i: tile i's entering register, high in the cycles 0 .. C − 1 of the run.
    running : Out(1)
        The array's own copy of ``run`` (same next-state logic, for the run control).
    stop : Out(1)
        The root register: the stop condition held at some cycle ≤ k − D + 1 (sticky); high in
        t_s = v + D − 1 and after.
    faulted : Out(1)
        A root register: a fault was visible on some tile in cycle k − D + 1.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("StopController", config)
        n = config.tiles
        super().__init__({
            "fault": In(n), "halted": In(n), "clear": In(1), "last": In(1),
            "run": Out(n), "running": Out(1), "stop": Out(1), "faulted": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.config.tiles
        assert tree_levels(n) + 2 == self.config.decision_latency
        clr = self.clear
        # with N = 1 the root registers below are the tile's leaving registers
        f = reduce_tree(m, [self.fault[i] for i in range(n)], "or", name="flt", clear=clr)
        h = reduce_tree(m, [self.halted[i] for i in range(n)], "and", name="hlt", clear=clr)
        stop, faulted = self.stop, self.faulted
        run = Signal(n, name="run_q")
        running = Signal(name="running_q")
        with m.If(clr):
            m.d.sync += [stop.eq(0), faulted.eq(0), run.eq(-1), running.eq(1)]
        with m.Else():
            m.d.sync += [stop.eq(stop | f | h), faulted.eq(f)]
            with m.If(stop | self.last):
                m.d.sync += [run.eq(0), running.eq(0)]
        m.d.comb += [self.run.eq(run), self.running.eq(running)]
        return m
