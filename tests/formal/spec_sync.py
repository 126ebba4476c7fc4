"""Formal spec of the ARRAY-barrier sync controller (tessera/hdl/array/sync_controller.py) against
docs/architecture.md §5.

Contract: let k* be the first cycle in which every tile is arrived and some context of the
array is WAIT_ARRAY; the release happens at r = k* + D, D = ceil(log2 N) + 2 (architecture §7
"Array decisions"; v1 called the same number S), simultaneously on every tile; each barrier
releases exactly once; arrivals of the next barrier are never lost or merged. docs/rtl.md adds
``prerelease`` at r − 1.

Environment (assumptions), all taken from the contract and the array's wiring:

* the run: ``enable`` (array running) rises only in the cycle after ``clear`` (the start pulse),
  is low during ``clear``, and once it falls it stays low until the next ``clear``;
* ``waiting[i]`` implies ``arrive[i]`` (the tile drives waiting = arrive & ~all_halted);
* between k* and r nothing changes (every ``arrive``/``waiting`` bit keeps its value), and at r
  every tile is in its exchange phase, so not arrived. From r + 1 on the tiles are free again:
  any later pattern is allowed, including the earliest re-arrival at r + 1 (an exchange phase of
  one cycle) and tiles that toggle before the next k* (a superset of what tiles can do).

The spec monitor below knows only these contract events (k*, r); the property compares the
controller's outputs with it in every cycle of the run (``enable`` high; after the run the
tiles' ``run`` is low and they ignore the release, architecture §5). ``release`` has one bit
(one entering register) per tile, and the property requires every bit to equal the monitor's
r, so "simultaneously on every tile" is checked bit by bit.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, Signal

from tessera.hdl.array.sync_controller import SyncController

from common import Spec, no_reset, past

PROPS = {
    "release_exact": "release in exactly the cycles r = k* + S of every barrier, never otherwise "
                     "(exactly once per barrier, no arrival lost or merged, re-arrival at r + 1)",
    "prerelease": "prerelease in exactly the cycles r - 1",
}


class SyncSpec(Elaboratable):
    def __init__(self, config, prop):
        # one property, or several proved jointly in one wrapper (tests/formal/run.py)
        self.props = (prop,) if isinstance(prop, str) else tuple(prop)
        assert self.props and set(self.props) <= set(PROPS), prop
        self.config = config
        n = config.tiles
        self.arrive = Signal(n)
        self.waiting = Signal(n)
        self.enable = Signal()
        self.clear = Signal()

    @property
    def ports(self):
        return [self.arrive, self.waiting, self.enable, self.clear]

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        S = cfg.decision_latency
        m.submodules.dut = dut = SyncController(cfg)
        m.d.comb += [dut.arrive.eq(self.arrive), dut.waiting.eq(self.waiting),
                     dut.enable.eq(self.enable), dut.clear.eq(self.clear)]
        no_reset(m)
        en, clr, arr, wt = self.enable, self.clear, self.arrive, self.waiting

        # -- environment: the run
        p_en = past(m, en, "p_enable")
        p_clr = past(m, clr, "p_clear")
        m.d.comb += [Assume(~(clr & en)), Assume(~en | p_en | p_clr),
                     Assume(~en | ((wt & ~arr) == 0))]

        # -- spec monitor: k* and r
        allarr = Signal()
        m.d.comb += allarr.eq(en & arr.all() & wt.any())
        busy = Signal()                  # in k*+1 .. r
        cnt = Signal(range(S + 1))       # cycles since k*
        with m.If(clr | ~en):
            m.d.sync += busy.eq(0)
        with m.Elif(busy):
            with m.If(cnt == S):
                m.d.sync += busy.eq(0)
            with m.Else():
                m.d.sync += cnt.eq(cnt + 1)
        with m.Elif(allarr):
            m.d.sync += [busy.eq(1), cnt.eq(1)]
        at_r = Signal()
        at_pre = Signal()
        m.d.comb += [at_r.eq(en & busy & (cnt == S)), at_pre.eq(en & busy & (cnt == S - 1))]

        # -- environment: nothing changes between k* and r; nobody is arrived at r
        p_arr = past(m, arr, "p_arrive")
        p_wt = past(m, wt, "p_waiting")
        with m.If(en & busy & (cnt < S)):
            m.d.comb += Assume((arr == p_arr) & (wt == p_wt))
        with m.If(at_r):
            m.d.comb += Assume((arr == 0) & (wt == 0))

        # -- properties
        since = Signal(range(4 * S + 8))     # cycles since the last release (saturating)
        seen = Signal()
        with m.If(clr):
            m.d.sync += [seen.eq(0), since.eq(0)]
        with m.Elif(dut.release[0]):
            m.d.sync += [seen.eq(1), since.eq(1)]
        with m.Elif(since < 4 * S + 7):
            m.d.sync += since.eq(since + 1)
        if "release_exact" in self.props:
            m.d.comb += Assert(~en | (dut.release == at_r.replicate(cfg.tiles)))
            # non-vacuity: a barrier; the tightest back-to-back pair (re-arrival at r + 1);
            # a barrier where a tile takes part with all contexts halted (arrived, not waiting)
            m.d.comb += Cover(en & dut.release[0])
            m.d.comb += Cover(en & dut.release[0] & seen & (since == S + 1))
            if cfg.tiles > 1:
                p_halted_tile = past(m, en & allarr & (arr & ~wt).any(), "p_halted_tile")
                hseen = Signal()
                with m.If(p_halted_tile):
                    m.d.sync += hseen.eq(1)
                m.d.comb += Cover(en & dut.release[0] & hseen)
        if "prerelease" in self.props:
            m.d.comb += Assert(~en | (dut.prerelease == at_pre))
            m.d.comb += Cover(dut.prerelease)
            m.d.comb += Cover(dut.prerelease & seen & (since == S))
        return m


def build(config, prop):
    spec = SyncSpec(config, prop)
    return spec, spec.ports


def specs(configs):
    S = lambda c: c.decision_latency   # noqa: E731
    return [Spec("sync", p, t, build, prove_depth=lambda c: 2 * S(c) + 4,
                 cover_depth=lambda c: 2 * S(c) + 6, configs=configs) for p, t in PROPS.items()]
