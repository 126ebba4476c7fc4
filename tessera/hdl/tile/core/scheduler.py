"""Context scheduler: issue slot, context states, TILE barrier, ARRAY arrive/resume,
and the cycle class for the tile counters (docs/architecture.md §4, §5, §8; contract v2).

The state registers hold the **visible** state of each context: a state change decided
in M of an instruction issued at t (cycle t + ``Stage.M``) is written at the end of that cycle
and is therefore visible from t + ``STATE_VISIBLE_DELAY`` (t+5); a TILE release decided in
cycle k (from the states visible at k) is written at the end of k and visible from k+1;
likewise a ``resume`` pulse in cycle e.

Run end (v2, §7 "Stop"): ``run`` is high exactly in the run's cycles 0..C-1 (C - 1 = t_s).
Barrier decisions are made only in those cycles; state changes of instructions issued at
cycles <= t_s still happen after t_s (their M is up to t_s + 4). A context that is FAULT stays
FAULT (a later-decided state change of an instruction issued before an engine fault does not
override it, docs/design/contract-v2.md §6 point 6).
"""

import enum

from amaranth import Module, Mux, Signal
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
    resume : In(1)
        End of this tile's exchange phase (cycle e): WAIT_ARRAY → RUNNING from e+1.
    in_exchange : In(1)
        The tile is in its exchange phase this cycle (counter class).
    m_set : In(1)
        An instruction in M changes its context's state (visible next cycle).
    m_ctx : In(context_bits)
    m_state : In(ContextState)
        The new state.
    e_set : In(1)
    e_ctx : In(context_bits)
        A matrix-engine fault puts context ``e_ctx`` into FAULT (visible next cycle; wins over
        ``m_set`` for the same context).
    e_now : In(1)
        A registered matrix-engine fault (data check of step s, in s + 2) puts context
        ``e_ctx`` into FAULT visible in **this** cycle: ``states[e_ctx]`` reads FAULT now
        (a Mux on this input, so issue, barriers and the cycle class see it) and the state
        register is FAULT from the next cycle (wins over ``m_set``). Never with ``e_set``.
    slot : Out(context_bits)
        Context owning the issue slot this cycle.
    next_slot : Out(context_bits)
        The slot of the next cycle (0 after ``start``), so that the core can read that
        context's pc one cycle ahead.
    issue : Out(1)
        ``run`` and the slot's context is RUNNING: it issues this cycle.
    states : Out(ArrayLayout(ContextState, T))
        Visible state of every context this cycle.
    arrive : Out(1)
        Every non-halted context is WAIT_ARRAY (at least one), or every context HALTED.
    all_halted : Out(1)
        Every context HALTED.
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
            "start": In(1), "run": In(1), "resume": In(1),
            "in_exchange": In(1),
            "m_set": In(1), "m_ctx": In(cb), "m_state": In(ContextState),
            "e_set": In(1), "e_now": In(1), "e_ctx": In(cb),
            "slot": Out(cb), "next_slot": Out(cb), "issue": Out(1),
            "states": Out(data.ArrayLayout(ContextState, config.contexts)),
            "arrive": Out(1), "all_halted": Out(1), "cls": Out(CycleClass),
        })

    def elaborate(self, platform):
        m = Module()
        T = self.config.contexts
        S = ContextState
        # the visible states: the registers (every change is visible from the next cycle),
        # except that ``e_now`` (a registered engine fault, visible in this cycle) shows
        # context ``e_ctx`` FAULT already in this cycle (its register follows at the end)
        reg = [Signal(ContextState, name=f"state{i}", init=S.HALTED) for i in range(T)]
        st = [Signal(ContextState, name=f"vis{i}") for i in range(T)]
        for i in range(T):
            m.d.comb += [st[i].eq(Mux(self.e_now & (self.e_ctx == i), int(S.FAULT), reg[i])),
                         self.states[i].eq(st[i])]

        # Issue slot.
        slot = Signal(self.config.context_bits)
        m.d.comb += self.slot.eq(slot)
        with m.If(self.start):
            m.d.comb += self.next_slot.eq(0)
        with m.Elif(self.run):
            m.d.comb += self.next_slot.eq(wrap_inc(slot, T))
        with m.Else():
            m.d.comb += self.next_slot.eq(slot)
        m.d.sync += slot.eq(self.next_slot)
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

        # Barrier releases decided this cycle (only in the run's cycles, §7 "Final state").
        tile_release = Signal()
        m.d.comb += tile_release.eq(
            self.run
            & all_of(lambda i: halted[i] | (st[i] == int(S.WAIT_TILE)))
            & any_of(lambda i: st[i] == int(S.WAIT_TILE)))
        array_release = Signal()
        m.d.comb += array_release.eq(self.run & self.resume)

        with m.If(self.start):
            for i in range(T):
                m.d.sync += reg[i].eq(int(S.RUNNING))
        with m.Else():
            for i in range(T):
                with m.If((self.e_set | self.e_now) & (self.e_ctx == i)):
                    m.d.sync += reg[i].eq(int(S.FAULT))
                with m.Elif(self.m_set & (self.m_ctx == i) & (st[i] != int(S.FAULT))):
                    m.d.sync += reg[i].eq(self.m_state)
                with m.Elif((tile_release & (st[i] == int(S.WAIT_TILE)))
                            | (array_release & (st[i] == int(S.WAIT_ARRAY)))):
                    m.d.sync += reg[i].eq(int(S.RUNNING))
        return m


def wrap_inc(value, modulus):
    """``(value + 1) mod modulus`` for a counter that stays below ``modulus``."""
    from amaranth import Mux
    return Mux(value == modulus - 1, 0, value + 1)
