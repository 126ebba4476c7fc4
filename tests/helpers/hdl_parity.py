"""Whole-array parity on the Amaranth simulator: run the same images on
:class:`tessera.hdl.array.Array` (real cores, AXI4-Lite host port, simulation backdoor for the
SRAM image) and on :class:`tessera.golden_model.Array` (written independently from the same
contract, docs/architecture.md) and compare everything the host can read: status, cycles,
counters, fault records, context state / pc / retired / registers, and SRAM words.

No Verilator build: cheap enough to run per mutant (``scripts/mutants.py``). A worker process
keeps the simulators of its last few configurations and starts a new run on one with
``Simulator.reset()`` (every signal and memory back to its initial value, the testbench
restarted): the same run as on a fresh simulator (test_hdl_fabric_model checks it), without
elaborating and compiling the array again."""

import struct
from collections import OrderedDict

from amaranth.sim import Simulator

from tessera import golden_model
from tessera.hdl.array import Array
from tessera.spec.faults import FaultCause
from tessera.spec.hostmap import (ContextReg, Ctrl, Status, TileReg, context_reg_addr, sram_addr,
                                  tile_reg_addr)
from tessera.spec.result import ContextState

from helpers.hdl_sim import Axil, sram_set, wait_done

_STATUS = {Status.HALTED: "halted", Status.FAULT: "fault", Status.TIMEOUT: "timeout"}


#: Simulators kept per worker process: config -> (Simulator, Array, the current run's bench)
_SIMS: OrderedDict = OrderedDict()
_KEEP = 3


def _simulate(cfg, make_bench, keep=True):
    """Run ``make_bench(dut)`` (an async testbench) on a simulator of ``Array(cfg)``: a kept
    one, reset, or a new one (kept after the run if ``keep``). A run that raises drops its
    simulator."""
    if keep and cfg in _SIMS:
        sim, dut, slot = _SIMS.pop(cfg)
        sim.reset()
    else:
        dut, slot = Array(cfg), {}
        sim = Simulator(dut)
        sim.add_clock(1e-8)

        async def bench(ctx):
            await slot["bench"](ctx)
        sim.add_testbench(bench)
    slot["bench"] = make_bench(dut)
    sim.run()                                  # raises: the simulator is not kept
    if not keep:
        return
    _SIMS[cfg] = (sim, dut, slot)
    while len(_SIMS) > _KEEP:
        _SIMS.popitem(last=False)


def rtl_run(cfg, images, max_cycles, mem_ranges, *, fresh=False):
    """The run of ``images`` on the Amaranth-simulated array, read back over the host port.
    ``fresh``: on a new simulator, neither a kept one nor kept after the run (for a test that
    patched the HDL classes, or one that checks the reuse)."""
    res = {}
    _simulate(cfg, lambda dut: _bench(dut, cfg, images, max_cycles, mem_ranges, res),
              keep=not fresh)
    return res


def _bench(dut, cfg, images, max_cycles, mem_ranges, res):
    async def bench(ctx):
        ax = Axil(ctx, dut)
        for i, t in enumerate(dut.tiles):
            for addr, data in images[i]:
                for k in range(0, len(data), 4):
                    sram_set(ctx, t, addr + k, struct.unpack_from("<I", data, k)[0])
        await ax.write(Ctrl.MAX_CYCLES_LO, max_cycles)
        await ax.write(Ctrl.CONTROL, 1)
        await wait_done(ctx, dut, limit=max_cycles + 100)
        res["status"] = _STATUS[await ax.read_ok(Ctrl.STATUS)]
        res["cycles"] = await ax.read_ok(Ctrl.CYCLES_LO)
        tiles = []
        for i in range(cfg.tiles):
            w = [await ax.read_ok(tile_reg_addr(i, 4 * k)) for k in range(14)]
            c64 = lambda k: w[k] | w[k + 1] << 32  # noqa: E731
            counters = {"compute": c64(0), "sync": c64(2), "exchange": c64(4),
                        "retired": c64(6), "macs": c64(8), "halted": c64(10),
                        "engine": c64(12)}
            f = [await ax.read_ok(tile_reg_addr(i, r)) for r in
                 (TileReg.FAULT_VALID, TileReg.FAULT_CONTEXT, TileReg.FAULT_CAUSE,
                  TileReg.FAULT_PC, TileReg.FAULT_ADDR)]
            fault = None if not f[0] else {
                "context": None if f[1] == 0xFFFFFFFF else f[1],
                "cause": FaultCause(f[2]).label, "pc": f[3], "addr": f[4]}
            ctxs = []
            for c in range(cfg.contexts):
                hd = [await ax.read_ok(context_reg_addr(i, c, r)) for r in
                      (ContextReg.STATE, ContextReg.PC, ContextReg.RETIRED_LO,
                       ContextReg.RETIRED_HI)]
                regs = [await ax.read_ok(context_reg_addr(i, c, ContextReg.REGS + 4 * r))
                        for r in range(32)]
                st = ContextState(hd[0])
                ctxs.append({"context": c, "state": st.label, "pc": hd[1],
                             "exit_code": regs[10] if st == ContextState.HALTED else None,
                             "retired": hd[2] | hd[3] << 32, "regs": regs})
            tiles.append({"tile": i, "counters": counters, "fault": fault, "contexts": ctxs})
        res["tiles"] = tiles
        res["mem"] = [[await ax.read_ok(sram_addr(i, a))
                       for lo, hi in mem_ranges for a in range(lo, hi, 4)]
                      for i in range(cfg.tiles)]

    return bench


def model_run(cfg, images, max_cycles, mem_ranges):
    m = golden_model.Array(cfg)
    for i in range(cfg.tiles):
        for addr, data in images[i]:
            m.write_mem(i, addr, data)
    m.start(0)
    r = m.run(max_cycles).to_json()
    r["mem"] = [[int.from_bytes(m.read_mem(i, a, 4), "little")
                 for lo, hi in mem_ranges for a in range(lo, hi, 4)] for i in range(cfg.tiles)]
    return r


def compare(cfg, images, max_cycles, mem_ranges):
    got = rtl_run(cfg, images, max_cycles, mem_ranges)
    assert_parity(cfg, got, model_run(cfg, images, max_cycles, mem_ranges))
    return got


def assert_parity(cfg, got, exp):
    """Assert that the RTL run ``got`` (:func:`rtl_run`) equals the golden model's run ``exp``
    (:func:`model_run`) of the same images in everything the host reads."""
    assert (got["status"], got["cycles"]) == (exp["status"], exp["cycles"])
    for i in range(cfg.tiles):
        g, e = got["tiles"][i], exp["tiles"][i]
        assert g["counters"] == e["counters"], f"tile {i} counters"
        assert g["fault"] == e["fault"], f"tile {i} fault"
        for c in range(cfg.contexts):
            assert g["contexts"][c] == e["contexts"][c], f"tile {i} context {c}"
    assert got["mem"] == exp["mem"]
