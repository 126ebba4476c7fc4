"""``tessera_array``: the top level (docs/rtl.md "Top-level ports", architecture §4-§9).

Run control (contract v2, architecture §7 "Array decisions", "Stop", "Timeout"). ``t`` is the
global cycle counter: 0 in the first cycle after the start pulse reaches the tiles; it keeps
counting while the pipelines drain. Every signal between the array and a tile goes through a
register on the array's side:

* the start: the host port's ``start`` pulse goes through one register per tile (``start`` of
  every tile in the same cycle) and one for the array's own run control, so every tile and the
  counter share cycle 0;
* the stop: :class:`.stop_controller.StopController` — a fault visible on some tile, or every
  context HALTED, first at v: ``run`` of every tile is low from v + D (D = ceil(log2 N) + 2),
  C = v + D; the timeout ends ``run`` at max_cycles (C = max_cycles unless the stop is earlier);
* the ARRAY release: :class:`.sync_controller.SyncController`, r = k* + D;
* ``run`` (and ``xen``, the same register) of tile i is high exactly in the run's cycles 0 .. C − 1:
  the tile issues, steps and counts its cycle classes only then.

End of the run: the array's copy of ``run`` falls in cycle C (t = C). Everything issued or
stepped at ≤ C − 1 takes effect by C + COMMIT_DELAY − 1 (the W of an instruction issued at C − 1;
its fault is visible from C + COMMIT_DELAY − 1), and the fault tree's root reports cycle
C + COMMIT_DELAY − 1 in C + COMMIT_DELAY + D − 2. Then STATUS leaves RUNNING (``done`` rises in
the next cycle) with CYCLES = C: ``fault`` if a fault was visible on some tile by then, else
``halted`` if the stop condition (not the timeout) ended the run, else ``timeout``.

Wiring: the AXI4-Lite slave port goes to the host port, whose per-tile ports ``tiles[i]``
connect to the tiles' ``host``; each tile's ``exchange`` link connects to the fabric's
``tiles[i]``; ``arrive`` / ``waiting`` feed the sync controller, ``faulted`` / ``all_halted``
the stop controller; the tiles' retire traces are concatenated into ``trace``.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, Cat
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from tessera.spec.config import ArrayConfig
from tessera.spec.hostmap import Status
from tessera.spec.timing import COMMIT_DELAY

from ..interfaces import AXI4LiteSignature, TRACE_MEMBERS, TraceSignature
from ..tile import Tile
from ..variant import CONTRACT, Variant
from .exchange_fabric import ExchangeFabric
from .host_port import HostPort
from .stop_controller import StopController
from .sync_controller import SyncController
from ..interfaces import check_config

__all__ = ["Array"]


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
        n = cfg.tiles
        tiles = self.tiles
        for i, t in enumerate(tiles):
            m.submodules[f"tile{i}"] = t
        m.submodules.sync_ctl = sc = SyncController(cfg)
        m.submodules.stop_ctl = stc = StopController(cfg)
        m.submodules.fabric = fab = ExchangeFabric(cfg)
        m.submodules.host = host = HostPort(cfg)

        connect(m, flipped(self.s_axil), host.s_axil)
        for i, t in enumerate(tiles):
            connect(m, host.tiles[i], t.host)
            connect(m, t.exchange, fab.tiles[i])
        for name, _ in TRACE_MEMBERS(cfg.context_bits):
            m.d.comb += getattr(self.trace, name).eq(Cat(getattr(t.trace, name) for t in tiles))

        status = self.status
        running = status == Status.RUNNING

        # -- the start: one register to the run control, one to every tile
        start = Signal(name="start_q")
        tile_start = Signal(n, name="tile_start_q")
        m.d.sync += [start.eq(host.start), tile_start.eq(host.start.replicate(n))]

        t_cnt = Signal(64)
        maxc = Signal(64)            # MAX_CYCLES latched at start (0 = no limit)
        maxc_m1 = Signal(64)
        m.d.comb += stc.last.eq((maxc != 0) & (t_cnt == maxc_m1))
        m.d.comb += [stc.clear.eq(start), sc.clear.eq(start), fab.clear.eq(start),
                     sc.enable.eq(running & ~start)]

        for i, t in enumerate(tiles):
            m.d.comb += [
                t.start.eq(tile_start[i]), t.entry.eq(host.entry), t.run.eq(stc.run[i]),
                t.xen.eq(stc.run[i]), t.cycle.eq(t_cnt),
                t.prerelease.eq(sc.prerelease), t.release.eq(sc.release[i]),
                sc.arrive[i].eq(t.arrive), sc.waiting[i].eq(t.waiting),
                stc.fault[i].eq(t.faulted), stc.halted[i].eq(t.all_halted),
            ]

        # -- the end of the run: C = t when the array's run copy falls; the status after the
        # effects of cycle C - 1 are all done and the fault tree has reported them
        ended = Signal()
        by_stop = Signal()
        c_end = Signal(64)
        drain = Signal(range(COMMIT_DELAY + cfg.decision_latency))
        with m.If(start):
            m.d.sync += [status.eq(Status.RUNNING), t_cnt.eq(0), ended.eq(0),
                         maxc.eq(host.max_cycles), maxc_m1.eq(host.max_cycles - 1)]
        with m.Elif(host.start):
            m.d.sync += status.eq(Status.RUNNING)
        with m.Elif(running):
            m.d.sync += t_cnt.eq(t_cnt + 1)
            with m.If(~ended & ~stc.running):
                # t = C; the stop root was high in C - 1 = t_s unless the timeout ended the run
                m.d.sync += [ended.eq(1), c_end.eq(t_cnt), by_stop.eq(stc.stop), drain.eq(0)]
            with m.Elif(ended):
                m.d.sync += drain.eq(drain + 1)
                # t = C + 1 + drain; the root reports cycle C + COMMIT_DELAY - 1 at
                # t = C + COMMIT_DELAY + D - 2
                with m.If(drain == COMMIT_DELAY + cfg.decision_latency - 3):
                    m.d.sync += [t_cnt.eq(c_end),
                                 status.eq(Mux(stc.faulted, Status.FAULT,
                                               Mux(by_stop, Status.HALTED, Status.TIMEOUT)))]

        m.d.comb += [
            host.status.eq(status), host.cycles.eq(t_cnt),
            self.done.eq((status == Status.HALTED) | (status == Status.FAULT)
                         | (status == Status.TIMEOUT)),
        ]
        return m
