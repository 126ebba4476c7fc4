"""Synthesis of the matrix engine alone (``MatrixEngine``, P = 32, 64 KiB address space; no
SRAM, core or exchange), to see the engine's own worst path cheaply: the flow of ``tessera
bench --only synth`` (``PinWrapper``, ``synth_ecp5`` ABC9, nextpnr-ecp5 ``--85k --freq 100``,
router1, seed 1). The port-B read word comes from the wrapper's input registers here, not from
a DP16KD (5.83 ns clock-to-out and the bank mux in the tile), so MAC stage 1 looks shorter than
in the tile.

Usage: ``python scripts/synth_engine.py TAG`` (prints the figures as JSON; the work directory
is under the bench-synth cache, keyed by TAG and the RTL digest)."""
import json
import sys
import time

import tessera.cli.bench.synth as S
from tessera.hdl.tile.matrix_engine import MatrixEngine
from tessera.spec.config import ArrayConfig


def _design(kind, tiles, sram_bytes=64 * 1024, variant="contract", engine_macs=32):
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=sram_bytes, engine_macs=engine_macs)
    return MatrixEngine(cfg), cfg


S._design = _design
tag = sys.argv[1]
S.FLOW_VERSION = f"2-engine-{tag}"
t = time.time()
r = S.synthesize("tile", 1, engine_macs=32, timeout=3 * 3600)
r["wall_s"] = time.time() - t
print(json.dumps(r, indent=1, default=str))
