"""``tessera_array``: the top level (docs/rtl.md "Top-level ports", architecture §4-§9).

Run control. ``t`` is the global cycle counter: the issue cycle of the instruction in F, 0 in the
first cycle after the start pulse; it keeps counting while the pipelines drain. A run ends by the
first of these events (C = the run's ``cycles``):

* core fault seen in X at counter value t (issued at t_f = t − 2): C = t − 1; ``kill`` (any
  core's ``fault_valid``) squashes F and D on every tile in that cycle;
* exchange fault in the step of cycle c: C = c + 1 (issue stops from c + 1; the instructions
  issued up to c still complete, and a core fault of an instruction issued at c is also recorded;
  one issued at c − 1, seen at c + 1, wins and the exchange record is dropped);
* every tile ``halting`` at counter t (the run's last ``ecall`` is in X: issued at t − 2):
  C = t − 1;
* MAX_CYCLES = M ≠ 0 reached (t = M, nothing issues or steps at ≥ M): C = M, status timeout
  unless a fault or halt with C ≤ M shows up while draining.

The array keeps ``cbound`` = the smallest C known so far and ends the run (``done``) when
t = cbound + 3: by then every event with a smaller C would have been seen and every instruction
issued before C has left W. ``count_commit`` (docs/rtl.md) is high exactly while t − 3 < cbound.

Wiring: the AXI4-Lite slave port goes to the host port, whose per-tile ports ``tiles[i]``
connect to the tiles' ``host``; each tile's ``exchange`` link connects to the fabric's
``tiles[i]``; ``arrive`` / ``waiting`` feed the sync controller, whose ``prerelease`` /
``release`` go to every tile; the tiles' retire traces are concatenated into ``trace``.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Cat
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from tessera.spec.config import ArrayConfig
from tessera.spec.hostmap import Status
from tessera.spec.timing import COMMIT_DELAY, Stage

from ..interfaces import AXI4LiteSignature, TRACE_MEMBERS, TraceSignature
from ..tile import Tile
from ..variant import CONTRACT, Variant
from .exchange_fabric import ExchangeFabric
from .host_port import HostPort
from .sync_controller import SyncController
from ..interfaces import check_config

__all__ = ["Array"]

_NEVER = (1 << 64) - 1


class Array(wiring.Component):
    """The Tessera array top, Verilog module ``tessera_array``.

    Parameters
    ----------
    config : ArrayConfig
        Array configuration.
    variant : Variant, keyword-only
        The cores' variant (default :data:`tessera.hdl.variant.CONTRACT`).
    core_factory : callable, keyword-only, optional
        ``core_factory(config, tile_id)`` builds each tile's core instead (tests pass
        :class:`~tessera.hdl.tile.core.StubCore` subclasses).

    Members
    -------
    s_axil : In(AXI4LiteSignature())
        AXI4-Lite slave port (32-bit address and data), host map of
        :mod:`tessera.spec.hostmap`; ports ``s_axil_awaddr`` … in the Verilog.
    done : Out(1)
        STATUS is halted, fault or timeout.
    trace : Out(TraceSignature(config, lanes=N))
        Every tile's retire trace (W stage), concatenated, tile 0 in the low bits; ports
        ``trace_valid`` … ``trace_st_data`` in the Verilog.

    Attributes
    ----------
    tiles : list of Tile
    status : Signal(Status)
        Run status, readable by testbenches.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig, *, variant: Variant = CONTRACT,
                 core_factory=None):
        self.config = check_config("Array", config)
        self.variant = variant
        self.tiles = [Tile(config, i, variant=variant, core_factory=core_factory)
                      for i in range(config.tiles)]
        super().__init__({
            "s_axil": In(AXI4LiteSignature()),
            "done": Out(1),
            "trace": Out(TraceSignature(config, lanes=config.tiles)),
        })
        self.status = Signal(Status, init=Status.IDLE)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        tiles = self.tiles
        for i, t in enumerate(tiles):
            m.submodules[f"tile{i}"] = t
        m.submodules.sync_ctl = sc = SyncController(cfg)
        m.submodules.fabric = fab = ExchangeFabric(cfg)
        m.submodules.host = host = HostPort(cfg)

        connect(m, flipped(self.s_axil), host.s_axil)
        for i, t in enumerate(tiles):
            connect(m, host.tiles[i], t.host)
            connect(m, t.exchange, fab.tiles[i])
        for name, _ in TRACE_MEMBERS(cfg.context_bits):
            m.d.comb += getattr(self.trace, name).eq(Cat(getattr(t.trace, name) for t in tiles))

        status = self.status
        t_cnt = Signal(64)
        cbound = Signal(64, init=_NEVER)
        pend = Signal(Status, init=Status.TIMEOUT)
        stopping = Signal()
        start = host.start
        running = status == Status.RUNNING
        maxc = Signal(64)           # MAX_CYCLES latched at start

        kill = Signal()
        halt_now = Signal()
        xf_now = Signal()
        m.d.comb += [
            kill.eq(running & Cat(t.core_fault for t in tiles).any()),
            halt_now.eq(running & Cat(t.halting for t in tiles).all()),
            xf_now.eq(running & Cat(t.xfault for t in tiles).any()),
        ]
        time_ok = (maxc == 0) | (t_cnt < maxc)
        issue = Signal()
        xen = Signal()
        commit = Signal()
        m.d.comb += [
            issue.eq(running & ~stopping & time_ok & ~kill & ~halt_now),
            xen.eq(issue),
            commit.eq(running & (t_cnt >= COMMIT_DELAY) & (t_cnt - COMMIT_DELAY < cbound)),
            sc.enable.eq(running & ~stopping), sc.clear.eq(start), fab.clear.eq(start),
        ]

        for i, t in enumerate(tiles):
            m.d.comb += [
                t.start.eq(start), t.entry.eq(host.entry), t.run.eq(issue), t.kill.eq(kill),
                t.cycle.eq(t_cnt), t.count_commit.eq(commit), t.xen.eq(xen),
                t.xcommit.eq(~kill & ~halt_now),
                t.prerelease.eq(sc.prerelease), t.release.eq(sc.release),
                sc.arrive[i].eq(t.arrive), sc.waiting[i].eq(t.waiting),
            ]

        # -- end-of-run events: candidate C values, smallest wins (ties: not timeout).
        # The candidates of one cycle are ordered by construction: a core fault (kill) or the
        # last ecall (halt_now) ends the run with C = t-1, a timeout (only possible when
        # t_cnt = maxc) with C = t, an exchange fault with C = t+1. So each is compared with
        # the pending bound in parallel (no dependency on the events), and the events only
        # select: the tile fault -> stop path stays short (docs/synthesis.md, "The clock").
        timeout_now = running & ~stopping & ~time_ok
        cand = [kill, xf_now, halt_now, timeout_now]
        c_lo = t_cnt - (Stage.X - 1)     # seen in X at t: issued at t - X, C = that + 1
        c_hi = t_cnt + 1

        def better(c):
            return (c < cbound) | ((c == cbound) & (pend == Status.TIMEOUT))

        b_lo, b_t, b_hi = better(c_lo), better(maxc), better(c_hi)
        nb = Signal(64)
        ns = Signal(Status)
        with m.If(b_lo & halt_now):
            m.d.comb += [nb.eq(c_lo), ns.eq(Status.HALTED)]
        with m.Elif(b_lo & kill):
            m.d.comb += [nb.eq(c_lo), ns.eq(Status.FAULT)]
        with m.Elif(b_t & timeout_now):
            m.d.comb += [nb.eq(maxc), ns.eq(Status.TIMEOUT)]
        with m.Elif(b_hi & xf_now):
            m.d.comb += [nb.eq(c_hi), ns.eq(Status.FAULT)]
        with m.Else():
            m.d.comb += [nb.eq(cbound), ns.eq(pend)]
        any_event = Cat(*cand).any()

        with m.If(start):
            m.d.sync += [status.eq(Status.RUNNING), t_cnt.eq(0), cbound.eq(_NEVER),
                         pend.eq(Status.TIMEOUT), stopping.eq(0), maxc.eq(host.max_cycles)]
        with m.Elif(running):
            m.d.sync += [t_cnt.eq(t_cnt + 1), cbound.eq(nb), pend.eq(ns)]
            with m.If(any_event):
                m.d.sync += stopping.eq(1)
            with m.If(stopping & (t_cnt >= cbound + COMMIT_DELAY)):
                m.d.sync += [status.eq(pend), t_cnt.eq(cbound)]

        m.d.comb += [
            host.status.eq(status), host.cycles.eq(t_cnt),
            self.done.eq((status == Status.HALTED) | (status == Status.FAULT)
                         | (status == Status.TIMEOUT)),
        ]
        return m
