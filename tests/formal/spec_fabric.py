"""Formal spec of the exchange fabric (tessera/hdl/array/exchange_fabric.py) against docs/architecture.md §6
and the tile ↔ array interface of docs/rtl.md.

Contract: a word sent by tile s at cycle c arrives at cycle c + L; every receiver that selects s
in that cycle gets it (multicast); a tile that does not send drives 0, so a receiver that
selects it gets 0. At the fabric's ports (docs/rtl.md "Tile ↔ array", since ``d59ed2b``):
``send[s]`` in cycle c + 2 carries the bus of cycle c (the tile reads the SRAM on a synchronous
port and registers the word, so that no SRAM output leaves the tile), ``data[j]`` in cycle k is
the bus of ``src[j]`` at k − L: the fabric's own delay is D = L − 2 cycles (none for L = 2).
``clear`` is the start pulse: the fabric's stages then hold 0, so a receiver reads 0 in the
cycles 0 .. D − 1 of the new run (the tile's own registers, cleared by the same pulse, give the
contract's 0 in cycles 0 .. L − 2).

Technique: *tracked* words. A free input ``mark`` picks any cycle m; the word w_s on every
``send[s]`` at m is remembered, and at m + D every receiver j with ``src[j] == s`` must
present w_s. Since m and all other inputs are free, this is the property for every word of every
sender. Whether the receiver *writes* the word (only a STEP with
``recv_en`` does, and only if the step belongs to the run) is the tile's and exchange engine's
business (tessera/hdl/tile/tile.py, tessera/hdl/tile/exchange_engine.py; covered by the array parity and exchange tests).

Environment: ``src[j] < N`` (an absolute source ≥ N is an exchange fault and the step has no
effect; relative sources are reduced mod N).
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, Signal

from tessera.hdl.array.exchange_fabric import ExchangeFabric

from common import Spec, all_of, any_of, no_reset

PROPS = {
    "deliver": "the word on sender s's send port at c (its bus of c - 2) reaches, at c + L - 2, "
               "every receiver selecting s (0 if s did not send)",
    "start_zero": "after the start pulse, receivers read 0 until the first word on a send port "
                  "in the run can arrive (cycles 0 .. L - 3)",
}


class FabricSpec(Elaboratable):
    def __init__(self, config, prop):
        assert prop in PROPS, prop
        self.config, self.prop = config, prop
        n, tb = config.tiles, config.tile_bits
        self.send = Signal(32 * n)
        self.src = Signal(tb * n)
        self.clear = Signal()
        self.mark = Signal()

    @property
    def ports(self):
        return [self.send, self.src, self.clear, self.mark]

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        n, tb, L = cfg.tiles, cfg.tile_bits, cfg.exchange_latency
        m.submodules.dut = dut = ExchangeFabric(cfg)
        srcs = [self.src[tb * j:tb * (j + 1)] for j in range(n)]
        m.d.comb += dut.clear.eq(self.clear)
        for j in range(n):
            m.d.comb += [dut.tiles[j].send.eq(self.send[32 * j:32 * (j + 1)]),
                         dut.tiles[j].src.eq(srcs[j])]
        no_reset(m)
        datas = [dut.tiles[j].data for j in range(n)]
        sends = [self.send[32 * i:32 * (i + 1)] for i in range(n)]
        for j in range(n):
            m.d.comb += Assume(srcs[j] < n)

        if self.prop == "deliver":
            # every sender's word of the marked cycle is tracked (a symbolic sender index
            # selecting one of them made both yices and z3 stall on a 4-tile base case)
            check = Signal()
            ws = [Signal(32, name=f"w{i}") for i in range(n)]
            D = L - 2                       # the fabric's own stages
            if D == 0:
                m.d.comb += check.eq(self.mark)
                m.d.comb += [ws[i].eq(sends[i]) for i in range(n)]
            else:
                trk = Signal()
                cnt = Signal(range(D + 1))
                with m.If(self.clear):
                    m.d.sync += trk.eq(0)
                with m.Elif(trk):
                    with m.If(cnt == D):
                        m.d.sync += trk.eq(0)
                    with m.Else():
                        m.d.sync += cnt.eq(cnt + 1)
                with m.Elif(self.mark):
                    m.d.sync += [trk.eq(1), cnt.eq(1)] + [ws[i].eq(sends[i]) for i in range(n)]
                m.d.comb += check.eq(trk & (cnt == D))
            for j in range(n):
                for i in range(n):
                    with m.If(check & (srcs[j] == i)):
                        m.d.comb += Assert(datas[j] == ws[i])
            # non-vacuity: a multicast of a nonzero word, and a receiver of an idle sender (0)
            multi = any_of(all_of([srcs[a] == i, srcs[b] == i, ws[i] != 0])
                           for i in range(n) for a in range(n) for b in range(a + 1, n))
            m.d.comb += Cover(check & (multi if n > 1 else (ws[0] != 0)))
            m.d.comb += Cover(check & any_of((srcs[0] == i) & (ws[i] == 0) for i in range(n))
                              & ((self.send != 0) if n > 1 else 1))
        else:
            assert L >= 3                   # L = 2: no stage of the fabric's own
            zvalid = Signal()
            zc = Signal(range(L + 1))
            flushed = Signal()     # a nonzero word was in flight when the start pulse came
            inflight = Signal()
            with m.If(self.mark & (self.send != 0)):
                m.d.sync += inflight.eq(1)
            with m.If(self.clear):
                m.d.sync += [zvalid.eq(1), zc.eq(0), flushed.eq(inflight),
                             inflight.eq(0)]
            with m.Elif(zvalid & (zc < L)):
                m.d.sync += zc.eq(zc + 1)
            zcheck = zvalid & (zc < L - 2)
            with m.If(zcheck):
                m.d.comb += Assert(all_of(d == 0 for d in datas))
            m.d.comb += Cover(zvalid & (zc == L - 3) & flushed)
        return m


def build(config, prop):
    spec = FabricSpec(config, prop)
    return spec, spec.ports


def specs(configs):
    lat = lambda c: c.exchange_latency   # noqa: E731
    return [
        Spec("fabric", "deliver", PROPS["deliver"], build,
             prove_depth=lambda c: lat(c) + 2, cover_depth=lambda c: lat(c) + 4,
             configs=configs),
        Spec("fabric", "start_zero", PROPS["start_zero"], build,
             prove_depth=lambda c: lat(c) + 2, cover_depth=lambda c: 2 * lat(c) + 4,
             configs=[(lb, c) for lb, c in configs if c.exchange_latency >= 3]),
    ]
