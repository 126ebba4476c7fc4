"""Regression (found by the formal proof tests/formal/spec_host_port.py, property ``decerr``):
the low two address bits are ignored for every register (docs/rtl.md "Host port"), so the bytes
0x31..0x33 of the last control register, FAULT_TILES at 0x30, address that register. The port
answered DECERR there because it compared the whole offset with 0x30.

Expected values from the host map (tessera/hostmap.py): FAULT_TILES = 0x30 reads the number of
tiles with a fault record, 0 before any run; 0x34 is the first unmapped control offset.
"""

import pytest

from tessera.spec.config import ArrayConfig
from tessera.spec.hostmap import Ctrl

from helpers.hdl_sim import Axil, DbgStubCore, simulate, OKAY, SLVERR, DECERR
from tessera.hdl.array import Array

CFG = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)  # T >= 6 (v2)


@pytest.mark.parametrize("low", [1, 2, 3])
def test_fault_tiles_low_address_bits(low):
    dut = Array(CFG, core_factory=DbgStubCore)
    got = {}

    async def bench(ctx):
        ax = Axil(ctx, dut)
        got["read"] = await ax.read(Ctrl.FAULT_TILES + low)
        got["write"] = await ax.write(Ctrl.FAULT_TILES + low, 1)     # read-only register
        got["beyond"] = (await ax.read(Ctrl.FAULT_TILES + 4 + low))[1]
        got["tiles"] = await ax.read(Ctrl.TILES + low)

    simulate(dut, bench)
    assert got["read"] == (0, OKAY)
    assert got["write"] == SLVERR
    assert got["beyond"] == DECERR
    assert got["tiles"] == (2, OKAY)
