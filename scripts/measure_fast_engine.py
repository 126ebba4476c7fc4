"""Measure the golden model's fast engine in tile-cycles per second, v1 against v2.

Usage::

    git archive main | tar -x -C /tmp/v1src          # a source tree of another version
    .venv/bin/python scripts/measure_fast_engine.py --v1-src /tmp/v1src [--tiles 16,1216]

Each measurement runs in a subprocess with ``PYTHONPATH`` set to one source tree (v1: the given
directory, v2: this checkout), one after the other (interleaved, so that both see the same
machine load), with ``Array(engine="fast")`` on two SPMD programs of 6 contexts per tile:

* ``alu``: :func:`tessera.cli.bench.model.rv32im_program` (8 RV32IM ALU instructions per loop);
* ``mem``: an 8-instruction loop with two loads and two stores per iteration (the M-stage path).

16 tiles: a 64 KiB SRAM configuration with the default matrix engine (P = 32), 100 000
iterations; 1216 tiles: the ``gc2_like`` preset, 2 000 iterations. Reported: N · cycles / CPU
seconds of the run (``time.process_time``, best of 3), in M tile-cycles/s, as a markdown table.
The run must halt (the cycle counts differ between the contracts by the end of the run).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

PROBE = r'''
import json, sys, time
from tessera.golden_model import Array
from tessera.spec.config import ArrayConfig, preset
from tessera.spec.csr import Csr
from tessera.toolchain import asm
from tessera.cli.bench.model import rv32im_program

def mem_program(iters):
    return [asm.csrr(11, Csr.TILE_ID), asm.csrr(12, Csr.CONTEXT_ID), *asm.li(5, iters),
            *asm.li(21, 0x8000), asm.slli(6, 12, 6), asm.add(21, 21, 6),
            asm.lw(10, 0, 21), asm.add(10, 10, 11), asm.sw(10, 4, 21), asm.lw(13, 4, 21),
            asm.xor(14, 14, 13), asm.sw(14, 8, 21), asm.addi(5, 5, -1), asm.bne(5, 0, -7 * 4),
            asm.ecall()]

prog, n = sys.argv[1], int(sys.argv[2])
cfg = preset("gc2_like") if n == 1216 else ArrayConfig(tiles=n, contexts=6, sram_bytes=64 * 1024)
words = (rv32im_program if prog == "alu" else mem_program)(2000 if n == 1216 else 100_000)
best = None
for _ in range(3):
    arr = Array(cfg, engine="fast")
    arr.write_mem(None, 0, asm.program(words))
    t0 = time.process_time()
    res = arr.run(10**9)
    dt = time.process_time() - t0
    assert res.status == "halted", res.status
    best = dt if best is None else min(best, dt)
print(json.dumps({"cycles": res.cycles, "cpu_s": best, "rate": n * res.cycles / best / 1e6}))
'''


def _probe(src: pathlib.Path, prog: str, n: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    # cwd = the tree too: "python -c" puts the working directory first on sys.path
    r = subprocess.run([sys.executable, "-c", PROBE, prog, str(n)], env=env, cwd=src,
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"measure_fast_engine: {src} {prog} N={n} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--v1-src", required=True, type=pathlib.Path,
                    help="source tree of the version to compare with (git archive)")
    ap.add_argument("--tiles", default="16,1216", help="comma-separated N (16 and/or 1216)")
    args = ap.parse_args()
    if not (args.v1_src / "tessera" / "golden_model").is_dir():
        raise SystemExit(f"measure_fast_engine: {args.v1_src} has no tessera/golden_model")
    print("| program | tiles | v1 M tile-cycles/s | v2 M tile-cycles/s | v2 / v1 |")
    print("|---|---|---|---|---|")
    for n in (int(x) for x in args.tiles.split(",")):
        if n not in (16, 1216):
            raise SystemExit(f"measure_fast_engine: --tiles takes 16 and 1216, not {n}")
        for prog in ("alu", "mem"):
            a = _probe(args.v1_src, prog, n)
            b = _probe(ROOT, prog, n)
            print(f"| {prog} | {n} | {a['rate']:.1f} | {b['rate']:.1f} | "
                  f"{b['rate'] / a['rate']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
