"""A one-tile harness for :class:`tessera.hdl.tile.core.Core` on the Amaranth simulator: the core,
an SRAM (sync read ports, not write-transparent, byte-enable write port), the tile's fault
record, and a Python testbench playing the array controller of docs/architecture.md (contract
v2) for a single tile with decision latency D = ``config.decision_latency``:

* the stop condition holds at cycle k if a fault is visible at k (the fault record is set) or
  every context is HALTED at k (the core's ``all_halted``, visible states); if it first holds
  at v, ``run`` is high in cycles 0..t_s = v + D - 1 and C = v + D (§7 "Stop"), or C =
  ``max_cycles`` if that comes first (§7 "Timeout");
* the ARRAY-barrier release is r = k* + D after the first cycle k* with ``arrive`` and some
  context WAIT_ARRAY, if r <= t_s (§5), followed by an exchange phase r..e of a chosen length
  (``in_exchange`` during it, ``resume`` at e; default e = r);
* after C the clock runs on until the instructions issued at <= C - 1 have left W (C + 4).
"""

from dataclasses import dataclass, field

from amaranth import Elaboratable, Module
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import connect
from amaranth.sim import Simulator

from tessera.spec.config import PRESETS
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState as CS
from tessera.spec.trace import TRACE_DELAY

from tessera.hdl.tile.core import Core
from tessera.hdl.tile.fault_record import FaultRecord

__all__ = ["Harness", "Run", "run_program", "flatten"]

TINY = PRESETS["tiny"]      # 1 tile, T = 6, 16 KiB, D = 2


def flatten(words):
    out = []
    for w in words:
        if isinstance(w, list):
            out.extend(flatten(w))
        else:
            out.append(w)
    return out


class Harness(Elaboratable):
    def __init__(self, config, image):
        self.config = config
        self.core = Core(config, 0)
        self.fault = FaultRecord(config)
        init = [0] * config.sram_words
        for addr, word in image.items():
            init[addr // 4] = word
        self.mem = Memory(shape=32, depth=config.sram_words, init=init)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        m.submodules.mem = mem = self.mem
        m.submodules.fault = rec = self.fault
        connect(m, core.fault, rec.insn)
        connect(m, core.efault, rec.eng)
        m.d.comb += rec.eng_now.eq(core.fault_now)
        m.d.comb += rec.clear.eq(core.start)
        aw = self.config.sram_addr_bits
        wp = mem.write_port(granularity=8)
        # As in tessera/hdl/tile/sram.py: neither read port is write-transparent (§4: a fetch
        # at t sees the stores whose M is <= t - 1).
        fp = mem.read_port(transparent_for=())
        dp = mem.read_port(transparent_for=())
        f, d = core.fetch, core.mem
        m.d.comb += [
            fp.addr.eq(f.addr[2:aw]), fp.en.eq(f.en), f.data.eq(fp.data),
            dp.addr.eq(d.addr[2:aw]), dp.en.eq(d.re), d.rdata.eq(dp.data),
            wp.addr.eq(d.addr[2:aw]), wp.en.eq(d.we), wp.data.eq(d.wdata),
        ]
        return m


@dataclass
class Run:
    status: str
    cycles: int
    states: list
    pcs: list
    retired: list
    regs: list
    counters: dict
    fault: tuple | None
    trace: list
    arrive_cycles: list = field(default_factory=list)
    mem: dict = field(default_factory=dict)
    xprog: int = 0
    fault_visible: int | None = None     # first cycle with the fault record set
    accepts: list = field(default_factory=list)   # (cycle, desc, ctx, pc) of eng.accept
    m_mem: list = field(default_factory=list)     # cycles with eng.m_mem
    engine: int = 0                                # the engine counter


def run_program(words, *, config=TINY, entry=0, max_cycles=400, data=None, other_stop=None,
                read_mem=(), end_on_halt=True, exchange_cycles=1, eng_busy=(), eng_fault=None):
    """Run ``words`` (placed at address 0) on one tile; return a :class:`Run`.

    ``other_stop``: the stop condition holds from that cycle v because of another tile (its
    fault), so t_s = v + D - 1. ``end_on_halt=False`` plays an array whose other tiles keep
    running: this tile's halting does not stop the run. ``exchange_cycles``: length of each
    exchange phase r..e (1: no exchange program, e = r). ``eng_busy``: the cycles in which
    the core's ``eng.busy`` (and ``eng.active``) is high; ``eng_fault``: {cycle: (context, pc,
    addr)} matrix-engine step faults presented on ``eng.fault`` (a stand-in for the matrix
    engine of architecture §12).
    """
    eng_busy = set(eng_busy)
    eng_fault = eng_fault or {}
    image = {4 * i: w for i, w in enumerate(flatten(words))}
    image.update(data or {})
    h = Harness(config, image)
    core = h.core
    T = config.contexts
    D = config.decision_latency
    res = {}

    async def bench(ctx):
        ctx.set(core.entry, entry)
        ctx.set(core.start, 1)
        await ctx.tick()
        ctx.set(core.start, 0)
        v = None            # first cycle of the stop condition
        trace, arrive_cycles = [], []
        kstar = None        # first arrival cycle of the current ARRAY barrier
        exch_end = None     # e of the current exchange phase
        fault_visible = None
        accepts, m_mem = [], []
        t = 0
        eng = core.eng

        def end():
            return min(v + D, max_cycles) if v is not None else max_cycles

        while True:
            # the visible states of cycle t (registers)
            faulted = ctx.get(h.fault.valid)
            if faulted and fault_visible is None:
                fault_visible = t
            if v is None and t < max_cycles and (
                    faulted or (end_on_halt and ctx.get(core.all_halted))
                    or (other_stop is not None and t >= other_stop)):
                v = t
            running = t < end()
            ctx.set(core.run, running)
            ctx.set(core.cycle, t)
            # ARRAY barrier controller (one tile): r = k* + D, exchange phase r..e.
            if running and kstar is not None and t == kstar + D:
                exch_end = t + exchange_cycles - 1
            in_exch = running and exch_end is not None and t <= exch_end
            ctx.set(core.in_exchange, in_exch)
            ctx.set(core.resume, in_exch and t == exch_end)
            if running and ctx.get(core.arrive) and not ctx.get(core.all_halted) \
                    and kstar is None and not in_exch:
                kstar = t
                arrive_cycles.append(t)
            if in_exch:
                kstar = None
                if t == exch_end:
                    exch_end = None
            ctx.set(eng.busy, t in eng_busy)
            ctx.set(eng.active, t in eng_busy)
            ef = eng_fault.get(t)
            ctx.set(eng.fault.valid, ef is not None)
            if ef is not None:
                ctx.set(eng.fault.context, ef[0])
                ctx.set(eng.fault.cause, FaultCause.ENGINE_FAULT)
                ctx.set(eng.fault.pc, ef[1])
                ctx.set(eng.fault.addr, ef[2])
            if ctx.get(eng.accept):
                accepts.append((t, ctx.get(eng.desc), ctx.get(eng.ctx), ctx.get(eng.pc)))
            if ctx.get(eng.m_mem):
                m_mem.append(t)
            tr = core.trace
            if ctx.get(tr.valid):
                trace.append(dict(
                    cycle=t, ctx=ctx.get(tr.context), pc=ctx.get(tr.pc),
                    insn=ctx.get(tr.insn), rd=ctx.get(tr.rd),
                    value=ctx.get(tr.value), st_mask=ctx.get(tr.st_mask),
                    st_addr=ctx.get(tr.st_addr), st_data=ctx.get(tr.st_data)))
            await ctx.tick()
            t += 1
            # the instruction issued at C - 1 writes its register and leaves the trace at
            # C - 1 + TRACE_DELAY
            if t >= end() + TRACE_DELAY:
                break
        C = end()
        ctx.set(core.run, 0)
        ctx.set(eng.fault.valid, 0)
        states, pcs, retired, regs = [], [], [], []
        dbg = core.dbg
        for c in range(T):
            ctx.set(dbg.ctx, c)
            states.append(CS(ctx.get(dbg.state)))
            pcs.append(ctx.get(dbg.pc))
            retired.append(ctx.get(dbg.retired))
            rv = []
            for r in range(32):
                ctx.set(dbg.reg, r)
                # x is on dbg.x two cycles after its selects (docs/rtl.md "Debug ports")
                await ctx.tick()
                await ctx.tick()
                rv.append(ctx.get(dbg.x))
            regs.append(rv)
        cnt = dbg.counters
        counters = dict(compute=ctx.get(cnt.compute), sync=ctx.get(cnt.sync),
                        exchange=ctx.get(cnt.exchange), halted=ctx.get(cnt.halted),
                        retired_tile=ctx.get(cnt.retired), macs=ctx.get(cnt.macs))
        fault = None
        rec = h.fault.record
        if ctx.get(rec.valid):
            fault = (ctx.get(rec.context), FaultCause(ctx.get(rec.cause)),
                     ctx.get(rec.pc), ctx.get(rec.addr))
        if fault is not None:
            status = "fault"
        elif v is not None and v + D <= max_cycles and other_stop is None:
            status = "halted"
        elif v is not None and v + D <= max_cycles:
            status = "stopped"
        else:
            status = "timeout"
        mem = {a: ctx.get(h.mem.data[a // 4]) for a in read_mem}
        res["run"] = Run(status, C, states, pcs, retired, regs, counters, fault, trace,
                         arrive_cycles, mem, ctx.get(core.xprog), fault_visible, accepts, m_mem,
                         ctx.get(cnt.engine))

    sim = Simulator(h)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return res["run"]


