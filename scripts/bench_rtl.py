#!/usr/bin/env python3
"""RTL simulation speed: Verilator build time and tile-cycles/s for several array sizes.

Usage::

    .venv/bin/python scripts/bench_rtl.py [--tiles 1 4 16] [--cycles 200000] [--fresh]

For each N the Verilator model of ``hdl.array.Array`` (N tiles, 6 contexts, 64 KiB) is built
(``--fresh``: into a temporary cache so the build time is measured), then every context of
every tile runs ``j .`` until MAX_CYCLES. cocotb only waits on ``done`` (no Python per cycle),
so the rate is Verilator + VPI overhead. Reported: build seconds, simulated cycles, wall
seconds of the wait, cycles/s and tile-cycles/s (= N x cycles/s).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--contexts", type=int, default=6)
    ap.add_argument("--cycles", type=int, default=200_000)
    ap.add_argument("--fresh", action="store_true", help="build in an empty cache (timed)")
    args = ap.parse_args(argv)
    if args.fresh:
        os.environ["TESSERA_BUILD_DIR"] = tempfile.mkdtemp(prefix="tessera-bench-")
    from tessera import asm
    from tessera.config import ArrayConfig
    from tb.runner import build_array

    print(f"{'tiles':>5} {'build_s':>8} {'cycles':>9} {'wall_s':>7} {'cycles/s':>10} "
          f"{'tile-cycles/s':>14}")
    code = asm.program([asm.jal(0, 0)]).hex()
    for n in args.tiles:
        cfg = ArrayConfig(name=f"bench{n}", tiles=n, contexts=args.contexts,
                          sram_bytes=64 * 1024)
        t0 = time.monotonic()
        model = build_array(cfg)
        build_s = time.monotonic() - t0
        job = {"name": "spin", "segments": [[t, 0, code] for t in range(n)],
               "max_cycles": args.cycles}
        (res,) = model.run({"jobs": [job]})["jobs"]
        if res["error"]:
            print(res["error"], file=sys.stderr)
            return 1
        assert res["result"]["status"] == "timeout" and res["result"]["cycles"] == args.cycles
        rate = res["wait_cycles"] / res["wait_s"]
        print(f"{n:>5} {build_s:>8.1f} {res['wait_cycles']:>9} {res['wait_s']:>7.2f} "
              f"{rate:>10.0f} {rate * n:>14.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
