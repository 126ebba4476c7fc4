"""The matrix engine in the whole array on the Amaranth simulator (no Verilator build) against
the golden model (docs/architecture.md §12; the model is written independently from the same
contract): seeded random RV32IM streams mixed with random engine commands
(``tessera.tb.randprog.generate(..., engine=True)``: mrun of valid random descriptors of every
mode / flag / stride sign, mwait, loads of the engine's outputs while it runs; with
``fault="engine"`` a faulting command), on the ``tiny`` preset (1 tile, T = 4, P = 32).

Compared: status, cycles, every counter (engine and macs included), the fault record, every
context's state / pc / retired / registers, and the whole engine area of the SRAM
(``engine_region``). The Verilator version with more seeds and sizes is
``tests/test_rtl_engine_parity.py``; this one is cheap enough to run per RTL mutant of
``tessera/hdl/tile/matrix_engine.py`` (``scripts/mutants.py``)."""

import pytest

from tessera.spec.config import PRESETS
from tessera.spec.faults import FaultCause
from tessera.tb.randprog import engine_region, generate

from helpers.hdl_parity import compare

CFG = PRESETS["tiny"]


@pytest.mark.parametrize("seed, fault", [(1, None), (3, "engine")])
def test_random_engine_stream_equals_the_model(seed, fault):
    p = generate(CFG, seed, total=300, engine=True, fault=fault)
    images = [[(a, d) for t, a, d in p.segments if t == i] for i in range(CFG.tiles)]
    base, n = engine_region(CFG)
    got = compare(CFG, images, p.max_cycles, [(base, base + n)])
    # the stream really used the engine (else the comparison says little about it)
    counters = got["tiles"][0]["counters"]
    assert counters["engine"] > 100 and counters["macs"] > 0, counters
    if fault is None:
        assert got["status"] == "halted"
    else:
        assert got["status"] == "fault"
        assert got["tiles"][0]["fault"]["cause"] == FaultCause.ENGINE_FAULT.label
