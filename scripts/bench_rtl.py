#!/usr/bin/env python3
"""RTL simulation speed: Verilator build time and tile-cycles/s for several array sizes.

Usage::

    .venv/bin/python scripts/bench_rtl.py [--tiles 1 4 16] [--cycles 200000] [--fresh]

For each N the Verilator model of ``tessera.hdl.array.Array`` (N tiles, 6 contexts, 64 KiB) is built
(``--fresh``: into a temporary cache so the build time is measured), then every context of
every tile runs ``j .`` until MAX_CYCLES. cocotb only waits on ``done`` (no Python per cycle),
so the rate is Verilator + VPI overhead. Reported: build seconds, simulated cycles, wall
seconds of the wait, cycles/s and tile-cycles/s (= N x cycles/s).

Thin wrapper around tessera/cli/bench/rtl.py (``tessera bench --only rtl`` adds the Amaranth
simulator comparison).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--contexts", type=int, default=6)
    ap.add_argument("--cycles", type=int, default=200_000)
    ap.add_argument("--fresh", action="store_true", help="build in an empty cache (timed)")
    args = ap.parse_args(argv)
    from tessera.cli.bench import BenchError
    from tessera.cli.bench.rtl import build, measure_verilator
    from tessera.spec.config import ArrayConfig

    cache = Path(tempfile.mkdtemp(prefix="tessera-bench-")) if args.fresh else None
    print(f"{'tiles':>5} {'build_s':>8} {'cycles':>9} {'wall_s':>7} {'cycles/s':>10} "
          f"{'tile-cycles/s':>14}")
    for n in args.tiles:
        cfg = ArrayConfig(name=f"bench{n}", tiles=n, contexts=args.contexts,
                          sram_bytes=64 * 1024)
        try:
            model, build_s = build(cfg, cache=cache)
            r = measure_verilator(model, args.cycles)
        except BenchError as e:
            print(e, file=sys.stderr)
            return 1
        print(f"{n:>5} {build_s:>8.1f} {r['wait_cycles']:>9} {r['wait_s']:>7.2f} "
              f"{r['cycles_per_s']:>10.0f} {r['tile_cycles_per_s']:>14.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
