"""Measure the program-visible cost of contract v2 with the golden model, v1 and v2 in one run
(docs/design/contract-v2.md section 3).

Usage::

    git archive main | tar -x -C /tmp/v1src          # the v1 sources
    .venv/bin/python scripts/measure_contract_v2.py --v1-src /tmp/v1src [--images 450]

Each measurement runs in a subprocess with ``PYTHONPATH`` set to one source tree (v1: the given
directory, v2: this checkout) and the golden model's vectorized engine (the fast engine of this
branch still implements v1 and is refused). Printed as a markdown table (v1, v2, difference).

Measured:

* the digits demo (``tessera demo --backend model``): cycles per image and its exchange phases;
* ``tessera run matmul --m 128 --k 128 --n 128 --backend model``: MAC utilisation and cycles;
* ARRAY barrier latency on the small (4 tiles) and array16 presets: every context issues
  ``sync ARRAY`` in its first slot (the last at t = T - 1); with xprog = 0 the contexts run
  again from r + 1, so r = (first cycle-CSR read after the barrier) - 1; reported: r - t;
* the end of a run: ``cycles`` minus the issue cycle of the last ``ecall`` (1 tile, all
  contexts ``ecall`` at once).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]

PROBE = r'''
import json, sys
from tessera.golden_model import Array
from tessera.spec.config import PRESETS
from tessera.spec.csr import Csr
from tessera.toolchain import asm
out = {}
for name in ("small", "array16"):
    cfg = PRESETS[name]
    arr = Array(cfg, engine="vector")
    arr.write_mem(None, 0, asm.program([asm.sync_array(), asm.csrr(10, Csr.CYCLE), asm.ecall()]))
    res = arr.run(10_000)
    assert str(res.status.value) == "halted", res.status
    first = min(int(arr.regs[t, c, 10]) for t in range(cfg.tiles) for c in range(cfg.contexts))
    out["sync_" + name] = (first - 1) - (cfg.contexts - 1)
cfg = PRESETS["tiny"]
arr = Array(cfg, engine="vector")
arr.write_mem(None, 0, asm.program([asm.ecall()]))
res = arr.run(1000)
out["halt_tiny"] = res.cycles - (cfg.contexts - 1)
out["T_tiny"] = cfg.contexts
json.dump(out, sys.stdout)
'''


def _run(src: pathlib.Path, args: list[str], tmp: pathlib.Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(src), TESSERA_MODEL_ENGINE="vector")
    r = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                       cwd=tmp)
    if r.returncode not in (0,):
        raise RuntimeError(f"{args[:3]} with {src}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return r.stdout


def measure(src: pathlib.Path, images: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        cli = ["-c", "import sys; from tessera.cli import main; sys.exit(main())"]
        _run(src, cli + ["demo", "--backend", "model", "--images", str(images), "--json",
                         str(tmp / "demo.json"), "--no-progress"], tmp)
        demo = json.loads((tmp / "demo.json").read_text())
        _run(src, cli + ["run", "matmul", "--m", "128", "--k", "128", "--n", "128",
                         "--backend", "model", "--json", str(tmp / "mm.json")], tmp)
        mm = json.loads((tmp / "mm.json").read_text())
        probe = json.loads(_run(src, ["-c", PROBE], tmp))
    return {"demo": demo, "matmul": mm, "probe": probe}


def _mm_fields(mm: dict) -> tuple[float, int]:
    util = mm.get("mac_utilization", mm.get("utilization"))
    cycles = mm.get("cycles")
    return util, cycles


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--v1-src", required=True, type=pathlib.Path,
                    help="a checkout (or git archive) of the v1 sources (branch main)")
    ap.add_argument("--images", type=int, default=450)
    ap.add_argument("--json", type=pathlib.Path, help="also write the raw results here")
    a = ap.parse_args(argv)
    # the two trees are measured concurrently (independent subprocesses, one source tree each)
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as ex:
        f1 = ex.submit(measure, a.v1_src.resolve(), a.images)
        f2 = ex.submit(measure, ROOT, a.images)
        res = {"v1": f1.result(), "v2": f2.result()}
    if a.json:
        a.json.write_text(json.dumps(res, indent=1, default=str))
    rows = []
    d1, d2 = res["v1"]["demo"], res["v2"]["demo"]
    rows.append(("digits demo: cycles per image", d1["cycles_per_image"], d2["cycles_per_image"]))
    rows.append(("digits demo: cycles (all runs)", d1["cycles"], d2["cycles"]))
    for p1, p2 in zip(d1["exchange_phases"], d2["exchange_phases"]):
        label = p1.get("name", "phase") if isinstance(p1, dict) else "phase"
        c1 = p1.get("cycles") if isinstance(p1, dict) else p1
        c2 = p2.get("cycles") if isinstance(p2, dict) else p2
        rows.append((f"digits demo: exchange phase {label} cycles", c1, c2))
    (u1, c1), (u2, c2) = _mm_fields(res["v1"]["matmul"]), _mm_fields(res["v2"]["matmul"])
    rows.append(("matmul 128^3 (small): MAC utilisation", u1, u2))
    rows.append(("matmul 128^3 (small): cycles", c1, c2))
    q1, q2 = res["v1"]["probe"], res["v2"]["probe"]
    rows.append(("ARRAY barrier, last sync issue -> release, 4 tiles", q1["sync_small"],
                 q2["sync_small"]))
    rows.append(("ARRAY barrier, last sync issue -> release, 16 tiles", q1["sync_array16"],
                 q2["sync_array16"]))
    rows.append((f"end of run: cycles - last ecall issue (tiny, T = {q1['T_tiny']} / "
                 f"{q2['T_tiny']})", q1["halt_tiny"], q2["halt_tiny"]))
    print("| measurement | v1 | v2 | difference |")
    print("|---|---|---|---|")
    for name, v1, v2 in rows:
        if isinstance(v1, float) or isinstance(v2, float):
            diff = f"{v2 - v1:+.4g}" if None not in (v1, v2) else "?"
            print(f"| {name} | {v1:.4g} | {v2:.4g} | {diff} |")
        else:
            diff = f"{v2 - v1:+d}" if None not in (v1, v2) else "?"
            print(f"| {name} | {v1} | {v2} | {diff} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
