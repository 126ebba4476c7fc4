"""Formal spec of the barrel scheduler (tessera/hdl/tile/core/scheduler.py) against docs/architecture.md §4.

Contract: at cycle t, context c = t mod T of every tile owns the issue slot; if that context is
RUNNING it issues, otherwise (waiting, halted, faulted) the slot stays empty; there is no other
issue. t is the array cycle counter, 0 in the first cycle after the start pulse.

Environment (docs/rtl.md "Core port details"): ``start`` is a pulse in the cycle before cycle 0
(``run`` is low during it); ``run`` is high in every cycle 0..C−1 of a run and low afterwards
until the next start. Everything else — which instruction in M changes which context's state to
what (``m_set``/``m_ctx``/``m_state``), which context a matrix-engine fault puts into FAULT
(``e_set``/``e_ctx``, visible from the next cycle; ``e_now``, a registered engine fault
visible in the same cycle), ``resume``,
``in_exchange`` — is left free, so the property holds whatever the core and the engines do. The
states compared are the scheduler's visible ones (``states``, contract v2 §4).

The spec keeps its own t mod T (from the start pulse, counting every cycle).
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, Signal

from tessera.hdl.tile.core.scheduler import Scheduler
from tessera.spec.result import ContextState

from common import Spec, any_of, no_reset, past

PROPS = {
    "slot": "the issuing context is t mod T (the slot follows the array cycle counter)",
    "issue": "a context issues iff it owns the slot, run is high and it is RUNNING "
             "(waiting, halted or faulted contexts never issue)",
}


class SchedulerSpec(Elaboratable):
    def __init__(self, config, prop):
        assert prop in PROPS, prop
        self.config, self.prop = config, prop
        cb = config.context_bits
        self.start = Signal()
        self.run = Signal()
        self.resume = Signal()
        self.in_exchange = Signal()
        self.m_set = Signal()
        self.m_ctx = Signal(cb)
        self.m_state = Signal(3)
        self.e_set = Signal()
        self.e_now = Signal()
        self.e_ctx = Signal(cb)

    @property
    def ports(self):
        return [self.start, self.run, self.resume, self.in_exchange, self.m_set, self.m_ctx,
                self.m_state, self.e_set, self.e_now, self.e_ctx]

    def elaborate(self, platform):
        m = Module()
        T = self.config.contexts
        m.submodules.dut = dut = Scheduler(self.config)
        for name in ("start", "run", "resume", "in_exchange", "m_set", "m_ctx", "m_state",
                     "e_set", "e_now", "e_ctx"):
            m.d.comb += getattr(dut, name).eq(getattr(self, name))
        no_reset(m)

        # -- environment: run is high from cycle 0 of a run until it ends, then low until start
        p_run = past(m, self.run, "p_run")
        p_start = past(m, self.start, "p_start")
        m.d.comb += [Assume(~(self.start & self.run)), Assume(~self.run | p_run | p_start)]

        # -- spec: t mod T since the last start pulse
        tm = Signal(range(T))
        with m.If(self.start):
            m.d.sync += tm.eq(0)
        with m.Elif(tm == T - 1):
            m.d.sync += tm.eq(0)
        with m.Else():
            m.d.sync += tm.eq(tm + 1)
        st = [dut.states[i] for i in range(T)]
        owner_running = any_of((tm == i) & (st[i] == ContextState.RUNNING) for i in range(T))
        owner_state = Signal(3)
        for i in range(T):
            with m.If(tm == i):
                m.d.comb += owner_state.eq(st[i])

        if self.prop == "slot":
            with m.If(self.run):
                m.d.comb += Assert(dut.slot == tm)
            with m.If(dut.issue):
                m.d.comb += Assert(dut.slot == tm)
            m.d.comb += Cover(dut.issue & (tm == T - 1))
            # a whole round: every context issues in consecutive slots
            streak = Signal(range(2 * T + 1))
            with m.If(dut.issue):
                m.d.sync += streak.eq(streak + 1)
            with m.Else():
                m.d.sync += streak.eq(0)
            m.d.comb += Cover(dut.issue & (streak == T))
        else:
            # lemma (the "slot" property, proved with it): k-induction needs it to rule out
            # unreachable states where the slot register and t mod T disagree
            with m.If(self.run):
                m.d.comb += Assert(dut.slot == tm)
            m.d.comb += Assert(dut.issue == (self.run & ~self.start & owner_running))
            for s in (ContextState.WAIT_TILE, ContextState.WAIT_ARRAY, ContextState.HALTED,
                      ContextState.FAULT):
                m.d.comb += Cover(self.run & (owner_state == s))
            m.d.comb += Cover(dut.issue)
        return m


def build(config, prop):
    spec = SchedulerSpec(config, prop)
    return spec, spec.ports


def specs(configs):
    return [Spec("scheduler", p, t, build, prove_depth=lambda c: 3,
                 cover_depth=lambda c: 2 * c.contexts + 8, configs=configs)
            for p, t in PROPS.items()]
