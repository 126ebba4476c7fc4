"""Context scheduler: issue slot, context states, TILE barrier, ARRAY arrive/resume,
and the cycle class for the tile counters (docs/architecture.md §4, §5, §8).

The state registers hold the **visible** state of each context: a state change decided
in X of an instruction issued at t is written at the end of cycle t+2 and is therefore
visible from t+3; a TILE release decided in cycle k (from the states visible at k) is
written at the end of k and visible from k+1; likewise a ``resume`` pulse in cycle e.

Run end: ``kill`` in cycle m means that the run's last cycle is m-2 (a fault issued at
m-2 is in X; or the array-wide last ``ecall``). Barrier decisions in cycles m-1 and m
must then not have happened: the release of cycle m is suppressed and the one of cycle
m-1 is undone (the released contexts get their waiting state back). Nothing else can
have changed those contexts in between (only RUNNING contexts issue).
"""

import enum

from amaranth import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.result import COUNTER_NAMES, ContextState

__all__ = ["Scheduler", "CycleClass"]


class CycleClass(enum.IntEnum):
    """Counter class of one cycle (docs/architecture.md §8), in ``COUNTER_NAMES`` order."""
    COMPUTE = COUNTER_NAMES.index("compute")
    SYNC = COUNTER_NAMES.index("sync")
    EXCHANGE = COUNTER_NAMES.index("exchange")
    HALTED = COUNTER_NAMES.index("halted")


class Scheduler(wiring.Component):
    """Barrel issue slot and per-context state machine of one tile.

    Parameters
    ----------
    config : ArrayConfig
        Gives T.

    Members
    -------
    start : In(1)
        Reset: every context RUNNING, slot 0 in the next cycle (cycle t = 0).
    run : In(1)
        Issue allowed this cycle; the slot advances in every cycle with ``run``
        (so the slot is ``t mod T`` when ``run`` is high in every cycle 0..t).
    kill : In(1)
        Run end (see module docstring): undo/suppress barrier releases of this and the
        previous cycle.
    resume : In(1)
        End of this tile's exchange phase (cycle e): WAIT_ARRAY → RUNNING from e+1.
    in_exchange : In(1)
        The tile is in its exchange phase this cycle (counter class).
    x_set : In(1)
        An instruction in X changes its context's state (visible next cycle).
    x_ctx : In(context_bits)
    x_state : In(ContextState)
        The new state.
    e_set : In(1)
    e_ctx : In(context_bits)
        A matrix-engine fault puts context ``e_ctx`` into FAULT (visible next cycle; wins over
        ``x_set`` for the same context).
    slot : Out(context_bits)
        Context owning the issue slot this cycle.
    issue : Out(1)
        ``run`` and the slot's context is RUNNING: it issues this cycle.
    states : Out(ArrayLayout(ContextState, T))
        Visible state of every context this cycle.
    arrive : Out(1)
        Every non-halted context is WAIT_ARRAY (at least one), or every context HALTED.
    all_halted : Out(1)
        Every context HALTED.
    halting : Out(1)
        Every context is HALTED or is the context halting in X this cycle (``x_set``
        with HALTED): the tile has no non-halted context from the next cycle on.
    cls : Out(CycleClass)
        Class of this cycle (from the visible states and ``in_exchange``).
    """

    def __init__(self, config: ArrayConfig):
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise TypeError(f"Scheduler: config must be an ArrayConfig, not {config!r}")
        self.config = config
        cb = config.context_bits
        super().__init__({
            "start": In(1), "run": In(1), "kill": In(1), "resume": In(1),
            "in_exchange": In(1),
            "x_set": In(1), "x_ctx": In(cb), "x_state": In(ContextState),
            "e_set": In(1), "e_ctx": In(cb),
            "slot": Out(cb), "issue": Out(1),
            "states": Out(data.ArrayLayout(ContextState, config.contexts)),
            "arrive": Out(1), "all_halted": Out(1), "halting": Out(1), "cls": Out(CycleClass),
        })

    def elaborate(self, platform):
        m = Module()
        T = self.config.contexts
        S = ContextState
        st = [Signal(ContextState, name=f"state{i}", init=S.HALTED) for i in range(T)]
        for i in range(T):
            m.d.comb += self.states[i].eq(st[i])

        # Issue slot.
        slot = Signal(self.config.context_bits)
        m.d.comb += self.slot.eq(slot)
        with m.If(self.start):
            m.d.sync += slot.eq(0)
        with m.Elif(self.run):
            m.d.sync += slot.eq(wrap_inc(slot, T))
        slot_running = Signal()
        with m.Switch(slot):
            for i in range(T):
                with m.Case(i):
                    m.d.comb += slot_running.eq(st[i] == int(S.RUNNING))
        m.d.comb += self.issue.eq(self.run & ~self.start & slot_running)

        def all_of(cond):
            out = 1
            for i in range(T):
                out = out & cond(i)
            return out

        def any_of(cond):
            out = 0
            for i in range(T):
                out = out | cond(i)
            return out

        halted = [st[i] == int(S.HALTED) for i in range(T)]
        m.d.comb += [
            self.all_halted.eq(all_of(lambda i: halted[i])),
            self.arrive.eq(
                (all_of(lambda i: halted[i] | (st[i] == int(S.WAIT_ARRAY)))
                 & any_of(lambda i: st[i] == int(S.WAIT_ARRAY)))
                | self.all_halted),
            self.halting.eq(all_of(lambda i: (halted[i] | (
                self.x_set & (self.x_ctx == i) & (self.x_state == int(S.HALTED))))
                & ~(self.e_set & (self.e_ctx == i)))),
        ]

        # Counter class of this cycle.
        with m.If(self.in_exchange):
            m.d.comb += self.cls.eq(CycleClass.EXCHANGE)
        with m.Elif(all_of(lambda i: halted[i] | (st[i] == int(S.FAULT)))):
            m.d.comb += self.cls.eq(CycleClass.HALTED)
        with m.Elif(any_of(lambda i: st[i] == int(S.RUNNING))):
            m.d.comb += self.cls.eq(CycleClass.COMPUTE)
        with m.Else():
            m.d.comb += self.cls.eq(CycleClass.SYNC)

        # Barrier releases decided this cycle.
        tile_release = Signal()
        m.d.comb += tile_release.eq(
            self.run & ~self.kill
            & all_of(lambda i: halted[i] | (st[i] == int(S.WAIT_TILE)))
            & any_of(lambda i: st[i] == int(S.WAIT_TILE)))
        array_release = Signal()
        m.d.comb += array_release.eq(self.run & ~self.kill & self.resume)
        rel = Signal(T)
        for i in range(T):
            m.d.comb += rel[i].eq((tile_release & (st[i] == int(S.WAIT_TILE)))
                                  | (array_release & (st[i] == int(S.WAIT_ARRAY))))
        prev_rel = Signal(T)
        prev_st = [Signal(ContextState, name=f"prev_state{i}") for i in range(T)]
        m.d.sync += prev_rel.eq(rel)
        for i in range(T):
            m.d.sync += prev_st[i].eq(st[i])

        with m.If(self.start):
            m.d.sync += prev_rel.eq(0)
            for i in range(T):
                m.d.sync += st[i].eq(int(S.RUNNING))
        with m.Else():
            for i in range(T):
                with m.If(self.e_set & (self.e_ctx == i)):
                    m.d.sync += st[i].eq(int(S.FAULT))
                with m.Elif(self.x_set & (self.x_ctx == i)):
                    m.d.sync += st[i].eq(self.x_state)
                with m.Elif(self.kill & prev_rel[i]):
                    m.d.sync += st[i].eq(prev_st[i])
                with m.Elif(rel[i]):
                    m.d.sync += st[i].eq(int(S.RUNNING))
        return m


def wrap_inc(value, modulus):
    """``(value + 1) mod modulus`` for a counter that stays below ``modulus``."""
    from amaranth import Mux
    return Mux(value == modulus - 1, 0, value + 1)
