#!/usr/bin/env python3
"""Verilator speed of two cached array builds side by side, per CPU-second (A/B under load).

Usage::

    .venv/bin/python scripts/compare_rtl_builds.py --tiles 16 BUILD_DIR_A BUILD_DIR_B \
        [--cycles 20000 220000] [--rounds 3]

Each ``BUILD_DIR`` is a finished build of ``tessera.hdl.array.Array`` (a directory of
``tessera.tb.runner.build_array`` with ``build_ok.json``; e.g. an older RTL's build left in
``~/.cache/tessera/bench-rtl``) for ``N`` tiles × 6 contexts, 64 KiB. Both run the program of
``tessera bench --only rtl`` (``j .`` on every context; :func:`tessera.cli.bench.rtl.measure_verilator`)
for a short and a long run, alternating A and B for ``--rounds`` rounds. Reported per run: the
wall seconds of the wait on ``done`` and the CPU seconds of the simulator process
(``RUSAGE_CHILDREN``); the rate is the difference of the two runs' cycles over the difference
of their CPU seconds (the simulator's start-up, image load and read-back cancel), in
tile-cycles per CPU-second. On a shared machine this compares two RTL versions at the same
moment, where wall-clock rates move by 2-10x with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def measure(model, cycles: int) -> tuple[float, float]:
    """``(wait_s, child_cpu_s)`` of one spin run of ``cycles`` cycles."""
    from tessera.cli.bench.rtl import measure_verilator
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = measure_verilator(model, cycles)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r["wait_s"], (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("builds", nargs=2, type=Path, help="two build directories (A, B)")
    ap.add_argument("--tiles", type=int, required=True)
    ap.add_argument("--cycles", type=int, nargs=2, default=[20_000, 220_000],
                    metavar=("SHORT", "LONG"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    from cocotb_tools.runner import get_runner

    from tessera.cli.bench.rtl import bench_config
    from tessera.tb.runner import RtlModel
    short, long_ = args.cycles
    if not 0 < short < long_:
        ap.error(f"--cycles needs 0 < SHORT < LONG, not {short} {long_}")
    cfg = bench_config(args.tiles)
    models = []
    for d in args.builds:
        stamp = d / "build_ok.json"
        if not stamp.exists():
            ap.error(f"{d} is not a finished build (no build_ok.json)")
        got = json.loads(stamp.read_text())["config"]
        # each build runs with its own engine_macs (A/B of the tile with and without the
        # matrix engine); everything else must be the bench's array
        bcfg = cfg.replace(engine_macs=got.get("engine_macs", cfg.engine_macs))
        want = {k: v for k, v in bcfg.to_dict().items() if k != "name"}
        if any(got.get(k) != v for k, v in want.items() if k in got):
            ap.error(f"{d} was built for {got}, not for {want}")
        models.append(RtlModel(bcfg, d, None, 0.0, get_runner("verilator")))
    print("build | round | short wait s | long wait s | CPU s (long - short) | "
          "tile-cycles / CPU-s | load")
    for rnd in range(args.rounds):
        for name, model in zip("AB", models):
            ws, cs = measure(model, short)
            wl, cl = measure(model, long_)
            rate = (long_ - short) * args.tiles / (cl - cs)
            print(f"{name} {model.build_dir.name} | {rnd} | {ws:.2f} | {wl:.2f} | "
                  f"{cl - cs:.2f} | {rate / 1e6:.3f} M | {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
