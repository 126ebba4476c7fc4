"""Synthesis of the v2 core with the tile SRAM and fault record only (no exchange engine, no
matrix engine), to see the core's own worst path: the flow of ``tessera bench --only synth``
(``PinWrapper``, ``synth_ecp5`` ABC9, nextpnr-ecp5 ``--85k --freq 100``, router1, seed 1).

Usage: ``python scripts/synth_core_sram.py TAG SRAM_BYTES`` (prints the figures as JSON; the
work directory is under the bench-synth cache, keyed by TAG and the RTL digest)."""
import json, sys, time
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped
from tessera.spec.config import ArrayConfig
from tessera.hdl.tile.core import Core
from tessera.hdl.tile.sram import TileSram
from tessera.hdl.tile.fault_record import FaultRecord
from tessera.hdl.interfaces import TraceSignature, DebugSignature, FaultSignature
import tessera.cli.bench.synth as S

class CoreSram(wiring.Component):
    def __init__(self, cfg):
        self.cfg = cfg
        super().__init__({"start": In(1), "entry": In(32), "run": In(1), "cycle": In(64),
                          "resume": In(1), "in_exchange": In(1), "arrive": Out(1),
                          "all_halted": Out(1), "faulted": Out(1), "xprog": Out(32),
                          "dbg": In(DebugSignature(cfg)), "trace": Out(TraceSignature(cfg)),
                          "rec": Out(FaultSignature(cfg))})
    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = Core(self.cfg, 0)
        m.submodules.sram = sram = TileSram(self.cfg)
        m.submodules.fault = rec = FaultRecord(self.cfg)
        for n in ("start", "entry", "run", "cycle", "resume", "in_exchange"):
            m.d.comb += getattr(core, n).eq(getattr(self, n))
        m.d.comb += [self.arrive.eq(core.arrive), self.all_halted.eq(core.all_halted),
                     self.xprog.eq(core.xprog), self.faulted.eq(rec.record.valid),
                     sram.clear.eq(self.start), rec.clear.eq(self.start)]
        connect(m, core.fetch, sram.fetch)
        connect(m, core.mem, sram.data)
        connect(m, core.fault, rec.core)
        connect(m, rec.record, flipped(self.rec))
        connect(m, flipped(self.dbg), core.dbg)
        connect(m, core.trace, flipped(self.trace))
        return m

def _design(kind, tiles, sram_bytes=64 * 1024, variant="contract", engine_macs=0):
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=sram_bytes, engine_macs=0)
    return CoreSram(cfg), cfg
S._design = _design
tag = sys.argv[1]
S.FLOW_VERSION = f"2-coresram-{tag}"
t = time.time()
r = S.synthesize("tile", 1, sram_bytes=int(sys.argv[2]), engine_macs=0, timeout=3 * 3600)
r["wall_s"] = time.time() - t
print(json.dumps(r, indent=1, default=str))
