"""RTL simulation speed: Verilator (cocotb) tile-cycles/s and build time vs tiles, and the
Amaranth Python simulator on the same design and program.

Method (from ``scripts/bench_rtl.py``): every context of every tile runs ``j .`` (a jump to
itself) until MAX_CYCLES, so the whole array issues one instruction per tile per cycle for the
whole run. On Verilator the cocotb test only sleeps until ``done`` (one trigger, no Python per
cycle; :meth:`tessera.tb.host.TesseraHost.wait_done`), and the rate is ``wait_cycles / wait_s``; the run
must end with ``status = timeout`` and ``cycles = MAX_CYCLES``. The build time is measured in a
new empty build directory (Verilog generation + Verilator compile, ``make -j2``).

The Amaranth simulator (``amaranth.sim``) runs the same ``tessera.hdl.array.Array`` with the program
written into the SRAMs through the simulation backdoor, one AXI write to CONTROL (start), then
``ctx.tick().repeat(K)`` for a short run; its rate is K / wall time.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.hostmap import Ctrl, TileReg, tile_reg_addr

from .common import BenchError, Goal, Section, Timer, save_figure

__all__ = ["bench_config", "bench_cache", "build", "measure_verilator", "measure_pysim", "run",
           "plot"]

SPIN = [asm.jal(0, 0)]     # j .
#: Models built by :func:`build` in this process, so that later benchmarks of the same run
#: (``sync`` after ``rtl``) use the same RTL even if the sources change meanwhile.
_BUILT: dict = {}


def bench_config(n: int) -> ArrayConfig:
    """The benchmark array: ``n`` tiles × 6 contexts, 64 KiB SRAM, L = 3."""
    return ArrayConfig(tiles=n, contexts=6, sram_bytes=64 * 1024)


def bench_cache() -> Path:
    """Verilator build cache of the benchmarks: ``bench-rtl`` in the user cache
    (:func:`tessera.paths.cache_root`, default ``~/.cache/tessera/bench-rtl``), shared by
    every checkout of the user."""
    from tessera.paths import cache_root
    return cache_root() / "bench-rtl"


@contextlib.contextmanager
def _build_dir(path: Path):
    old = os.environ.get("TESSERA_BUILD_DIR")
    os.environ["TESSERA_BUILD_DIR"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TESSERA_BUILD_DIR", None)
        else:
            os.environ["TESSERA_BUILD_DIR"] = old


def build(cfg: ArrayConfig, *, cold: bool = False, cache: Path | None = None):
    """Build (or reuse) the Verilator model of ``tessera.hdl.array.Array(cfg)`` in :func:`bench_cache`.

    Parameters
    ----------
    cfg : ArrayConfig
    cold : bool
        Build from nothing, so the build time is measured: into a new private directory
        under the cache (removed when the process exits), never by deleting cached builds.
        The user cache is shared by every checkout and process of the user, and a build
        directory deleted under a running build or simulation breaks it (a full bench's
        64-tile build failed that way while another checkout measured a cold build).
    cache : path, optional
        Cache directory (default :func:`bench_cache`).

    Returns
    -------
    (tessera.tb.runner.RtlModel, float)
        The model and the wall seconds of the build (≈ 0 on a cache hit).

    Raises
    ------
    BenchError
        The build failed (message has the log tail).
    """
    from tessera.tb.runner import RtlRunError, build_array
    if not cold and cache is None and cfg in _BUILT:
        return _BUILT[cfg], 0.0           # built earlier in this process (RTL may have moved on)
    shared = cache is None
    cache = Path(cache) if cache is not None else bench_cache()
    if cold:
        cache.mkdir(parents=True, exist_ok=True)
        cache = Path(tempfile.mkdtemp(prefix=f"cold-{cfg.tiles}t{cfg.contexts}c-", dir=cache))
        atexit.register(shutil.rmtree, cache, ignore_errors=True)
    with _build_dir(cache):
        t0 = time.monotonic()
        try:
            model = build_array(cfg)
        except RtlRunError as e:
            raise BenchError(f"Verilator build of {cfg.tiles} tiles failed: {e}") from None
        if shared:
            _BUILT[cfg] = model
        return model, time.monotonic() - t0


def measure_verilator(model, cycles: int) -> dict:
    """Run the spin program for ``cycles`` cycles on a built model.

    Returns
    -------
    dict
        ``wait_cycles``, ``wait_s``, ``cycles_per_s``, ``tile_cycles_per_s``, ``total_s``
        (including simulator start and result read-back).

    Raises
    ------
    BenchError
        The job failed or the run did not end in timeout at exactly ``cycles``.
    """
    n = model.config.tiles
    code = asm.program(SPIN).hex()
    job = {"name": "spin", "segments": [[t, 0, code] for t in range(n)], "max_cycles": cycles}
    with Timer() as t:
        (res,) = model.run({"jobs": [job]})["jobs"]
    if res["error"]:
        raise BenchError(f"RTL spin run on {n} tiles failed:\n{res['error']}")
    r = res["result"]
    if r["status"] != "timeout" or r["cycles"] != cycles:
        raise BenchError(f"RTL spin run on {n} tiles ended {r['status']} after {r['cycles']} "
                         f"cycles, expected timeout after {cycles}")
    retired = sum(tt["counters"]["retired"] for tt in r["tiles"])
    rate = res["wait_cycles"] / res["wait_s"]
    return dict(wait_cycles=res["wait_cycles"], wait_s=res["wait_s"], cycles_per_s=rate,
                tile_cycles_per_s=rate * n, total_s=t.s, retired=retired)


def measure_pysim(cfg: ArrayConfig, cycles: int) -> dict:
    """Run the spin program for ``cycles`` cycles on the Amaranth simulator.

    Returns
    -------
    dict
        ``cycles``, ``seconds`` (simulation only), ``setup_s`` (elaboration + simulator
        construction), ``cycles_per_s``, ``tile_cycles_per_s``.

    Raises
    ------
    BenchError
        ``done`` rose during the run (the program faulted or halted: it must spin).
    """
    from amaranth.sim import Simulator

    from tessera.hdl.array import Array
    word = SPIN[0]
    with Timer() as setup:
        dut = Array(cfg)
        sim = Simulator(dut)
        sim.add_clock(1e-8)
    out = {}

    async def bench(ctx):
        for tile in dut.tiles:            # backdoor: word 0 of every SRAM (64-bit rows, lane 0)
            cell = tile.sram.word(0)
            ctx.set(cell, (ctx.get(cell) & ~0xFFFFFFFF) | word)
        # AXI4-Lite write of 1 to CONTROL (ENTRY = 0 and MAX_CYCLES = 0 after reset)
        ctx.set(dut.s_axil.awaddr, int(Ctrl.CONTROL))
        ctx.set(dut.s_axil.wdata, 1)
        ctx.set(dut.s_axil.wstrb, 0xF)
        ctx.set(dut.s_axil.awvalid, 1)
        ctx.set(dut.s_axil.wvalid, 1)
        ctx.set(dut.s_axil.bready, 1)
        for _ in range(50):
            if ctx.get(dut.s_axil.awready) and ctx.get(dut.s_axil.wready):
                await ctx.tick()
                break
            await ctx.tick()
        else:
            raise BenchError("Amaranth simulation: the AXI write to CONTROL was not accepted")
        ctx.set(dut.s_axil.awvalid, 0)
        ctx.set(dut.s_axil.wvalid, 0)
        t0 = time.perf_counter()
        await ctx.tick().repeat(cycles)
        out["seconds"] = time.perf_counter() - t0
        out["done"] = ctx.get(dut.done)
        # AXI4-Lite read of tile 0's RETIRED_LO: the cores must really have run
        ctx.set(dut.s_axil.araddr, tile_reg_addr(0, TileReg.RETIRED_LO))
        ctx.set(dut.s_axil.arvalid, 1)
        ctx.set(dut.s_axil.rready, 1)
        for _ in range(50):
            if ctx.get(dut.s_axil.arready):
                await ctx.tick()
                break
            await ctx.tick()
        ctx.set(dut.s_axil.arvalid, 0)
        for _ in range(50):
            if ctx.get(dut.s_axil.rvalid):
                out["retired"] = ctx.get(dut.s_axil.rdata)
                break
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    if out["done"]:
        raise BenchError("Amaranth simulation: done rose during the spin run")
    if not cycles // 2 <= out.get("retired", -1) <= cycles:
        raise BenchError(f"Amaranth simulation: tile 0 retired {out.get('retired')} "
                         f"instructions in {cycles} cycles (expected about {cycles})")
    rate = cycles / out["seconds"]
    return dict(cycles=cycles, seconds=out["seconds"], setup_s=setup.s, cycles_per_s=rate,
                tile_cycles_per_s=rate * cfg.tiles)


def run(quick: bool = True) -> Section:
    """Sweep N = 1, 4, 16 (and 64 in full mode): cold build, Verilator rate, pysim rate.

    Returns
    -------
    Section
    """
    sizes = (1, 4, 16) if quick else (1, 4, 16, 64)
    cyc = {1: 400_000, 4: 200_000, 16: 100_000, 64: 40_000}
    if not quick:
        cyc = {k: 2 * v for k, v in cyc.items()}
    pys = {1: 400, 4: 150} if quick else {1: 1500, 4: 500, 16: 150}
    sec = Section("rtl", "RTL simulation speed (Verilator via cocotb, and Amaranth pysim)",
                  "tessera bench --only rtl" + (" --quick" if quick else ""))
    sec.columns = [("tiles", "tiles"), ("build_s", "Verilator build (s, cold)"),
                   ("cycles", "simulated cycles"), ("wait_s", "wait (s)"),
                   ("cps", "cycles/s"), ("tcps", "tile-cycles/s"),
                   ("py_tcps", "Amaranth pysim tile-cycles/s"), ("ratio", "Verilator / pysim")]
    with Timer() as tt:
        for n in sizes:
            cfg = bench_config(n)
            cold = not (quick and n >= 16)     # quick: the 16-tile build is reused if cached
            model, bsecs = build(cfg, cold=cold)
            if not cold and bsecs < 5:
                bsecs = None                       # cache hit: no build time measured
            v = measure_verilator(model, cyc[n])
            row = dict(tiles=n, build_s=bsecs, cycles=v["wait_cycles"], wait_s=v["wait_s"],
                       cps=v["cycles_per_s"], tcps=v["tile_cycles_per_s"], py_tcps=None,
                       ratio=None)
            if n in pys:
                p = measure_pysim(cfg, pys[n])
                row.update(py_tcps=p["tile_cycles_per_s"], py_cycles=p["cycles"],
                           py_setup_s=p["setup_s"],
                           ratio=v["tile_cycles_per_s"] / p["tile_cycles_per_s"])
            sec.rows.append(row)
    sec.seconds = tt.s
    r16 = next((r for r in sec.rows if r["tiles"] == 16), None)
    if r16:
        sec.goals.append(Goal("RTL (Verilator) ≥ 1 M tile-cycles/s at 16 tiles",
                              f"{r16['tcps'] / 1e6:.2f} M tile-cycles/s",
                              r16["tcps"] >= 1e6,
                              "Wall-clock rates on this shared 2-core machine vary by about "
                              "2× with load (`tessera.tb.runner` builds expose only the top-level ports "
                              "to VPI); compare the load average in the header with the RTL "
                              "simulation section above, measured at a quieter moment."))
    sec.notes += [
        "Program: `j .` on every context of every tile, run until MAX_CYCLES (status timeout, "
        "cycles = MAX_CYCLES checked), so each tile issues one instruction per cycle. "
        "Verilator: `-O2`, built by `tessera.tb.runner.build_array` (cocotb 2.1 runner, `make -j2`) "
        "into a new empty directory (quick mode reuses a cached 16-tile build "
        "for the current RTL sources: its build time then shows as –); cocotb sleeps on `done` "
        "(no Python per cycle), the rate is simulated cycles over the wall time of that wait.",
        "Amaranth pysim: the same `tessera.hdl.array.Array`, SRAM written through the simulation "
        "backdoor, one AXI write to CONTROL, then `ctx.tick().repeat(K)` for a short K "
        f"({', '.join(f'{k} cycles at N={n}' for n, k in pys.items())}); elaboration and "
        "simulator construction are excluded.",
    ]
    return sec


def plot(sec: Section, outdir) -> list[str]:
    """tile-cycles/s (log) and build time vs tiles."""
    import matplotlib.pyplot as plt
    rows = sec.rows
    x = [r["tiles"] for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(7, 3), dpi=90)
    a1.plot(x, [r["tcps"] for r in rows], "o-", label="Verilator (cocotb waits on done)")
    px = [r["tiles"] for r in rows if r["py_tcps"]]
    a1.plot(px, [r["py_tcps"] for r in rows if r["py_tcps"]], "s-", label="Amaranth pysim")
    a1.axhline(1e6, color="gray", ls="--", lw=0.8, label="goal 1 M at 16 tiles")
    a1.set_xscale("log", base=2)
    a1.set_yscale("log")
    a1.set_xlabel("tiles")
    a1.set_ylabel("tile-cycles / s")
    a1.legend(fontsize=6)
    bx = [(r["tiles"], r["build_s"]) for r in rows if r["build_s"]]
    if bx:
        a2.plot(*zip(*bx), "o-")
    a2.set_xscale("log", base=2)
    a2.set_xlabel("tiles")
    a2.set_ylabel("Verilator build (s)")
    fig.suptitle("RTL simulation speed", fontsize=9)
    return [save_figure(fig, outdir, "bench_rtl.png")]
