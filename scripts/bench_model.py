#!/usr/bin/env python3
"""Golden-model speed: tile-instructions/s for 1216 tiles x 6 contexts on an ALU + dot4 loop,
and the speed-up over the plain per-tile Python interpreter (tessera/golden_model/scalar.py) running
the same program (measured on a prefix of the run, its rate is constant).

Thin wrapper: the programs and timing functions live in tessera/cli/bench/model.py (also used by
``tessera bench --only model``, which adds the tile sweep and unicorn).

Usage: .venv/bin/python scripts/bench_model.py [--iters N] [--tiles N] [--scalar-cycles N]
       [--engine fast|vector]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from tessera.golden_model import Array  # noqa: E402
from tessera.toolchain import asm  # noqa: E402
from tessera.cli.bench.model import (divergent_program, program, time_model,  # noqa: E402
                                 time_scalar)
from tessera.spec.config import ArrayConfig  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=1216)
    ap.add_argument("--contexts", type=int, default=6)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--scalar-cycles", type=int, default=300,
                    help="cycles run by the scalar interpreter to measure its rate")
    ap.add_argument("--engine", choices=("fast", "vector"), default="fast",
                    help="golden-model engine (default fast)")
    args = ap.parse_args(argv)
    cfg = ArrayConfig(tiles=args.tiles, contexts=args.contexts, sram_bytes=64 * 1024)
    words = program(args.iters)

    name = {"fast": "fast engine", "vector": "vectorized engine"}[args.engine]
    rate, dt, insns, arr = time_model(cfg, words, engine=args.engine)
    print(f"{name}: {cfg.tiles} tiles x {cfg.contexts} contexts, {arr.cycle} cycles, "
          f"{insns} tile-instructions in {dt:.2f} s = {rate / 1e6:.2f} M tile-instructions/s")
    drate, ddt, dins, _ = time_model(cfg, divergent_program(args.iters), engine=args.engine)
    print(f"{name}, divergent (odd/even tiles run different code): {dins} "
          f"tile-instructions in {ddt:.2f} s = {drate / 1e6:.2f} M tile-instructions/s")

    srate, sdt, sins, sc = time_scalar(cfg, words, args.scalar_cycles)
    # same state after the same number of cycles (independent formulation check)
    check = Array(cfg, engine=args.engine)
    check.write_mem(None, 0, asm.program(words))
    check.run(args.scalar_cycles)
    same = np.array_equal(check.regs, sc.regs_array())
    print(f"scalar interpreter: {sins} tile-instructions in {sdt:.2f} s = "
          f"{srate / 1e3:.1f} k tile-instructions/s (registers equal to the model after "
          f"{args.scalar_cycles} cycles: {same})")
    print(f"speed-up: {rate / srate:.0f}x")


if __name__ == "__main__":
    main()
