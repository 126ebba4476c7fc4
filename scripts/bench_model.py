#!/usr/bin/env python3
"""Golden-model speed: tile-instructions/s for 1216 tiles x 6 contexts on an ALU + dot4 loop,
and the speed-up over the plain per-tile Python interpreter (golden_model/scalar.py) running
the same program (measured on a prefix of the run, its rate is constant).

Usage: .venv/bin/python scripts/bench_model.py [--iters N] [--tiles N] [--scalar-cycles N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from golden_model import Array
from golden_model.scalar import ScalarArray
from tessera import asm
from tessera.config import ArrayConfig
from tessera.csr import Csr


def program(iters: int) -> list[int]:
    """Per context: a loop of 8 ALU/dot4 instructions, ``iters`` times, then ecall."""
    return [
        asm.csrr(11, Csr.TILE_ID),          # a1 = tile id (data differ per tile)
        asm.csrr(12, Csr.CONTEXT_ID),       # a2 = context id
        *asm.li(5, iters),                  # t0 = loop counter
        # loop:
        asm.dot4(10, 11, 12),               # a0 += a1 . a2
        asm.addi(11, 11, 0x13),
        asm.xor(12, 12, 11),
        asm.dot4su(13, 11, 12),             # a3 += a1 .su a2
        asm.add(14, 14, 10),
        asm.slli(15, 14, 3),
        asm.addi(5, 5, -1),
        asm.bne(5, 0, -7 * 4),
        asm.ecall(),
    ]


def divergent_program(iters: int) -> list[int]:
    """Odd tiles run a different loop body (other registers), so every cycle mixes two
    distinct instruction words: exercises the grouped (non-uniform) decode path."""
    body_even = [asm.dot4(10, 11, 12), asm.addi(11, 11, 0x13), asm.xor(12, 12, 11),
                 asm.dot4su(13, 11, 12), asm.add(14, 14, 10), asm.slli(15, 14, 3)]
    body_odd = [asm.dot4su(16, 11, 12), asm.addi(11, 11, 0x7), asm.or_(12, 12, 11),
                asm.dot4(17, 11, 12), asm.sub(18, 18, 16), asm.srli(19, 18, 2)]
    n = len(body_even) + 2
    return [
        asm.csrr(11, Csr.TILE_ID), asm.csrr(12, Csr.CONTEXT_ID), *asm.li(5, iters),
        asm.andi(6, 11, 1),
        asm.bne(6, 0, (n + 2) * 4),                     # odd tiles -> odd loop
        *body_even, asm.addi(5, 5, -1), asm.bne(5, 0, -(n - 1) * 4), asm.ecall(),
        *body_odd, asm.addi(5, 5, -1), asm.bne(5, 0, -(n - 1) * 4), asm.ecall(),
    ]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=1216)
    ap.add_argument("--contexts", type=int, default=6)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--scalar-cycles", type=int, default=300,
                    help="cycles run by the scalar interpreter to measure its rate")
    args = ap.parse_args(argv)
    cfg = ArrayConfig(tiles=args.tiles, contexts=args.contexts, sram_bytes=64 * 1024)
    code = asm.program(program(args.iters))

    arr = Array(cfg)
    arr.write_mem(None, 0, code)
    t0 = time.perf_counter()
    res = arr.run(10 ** 9)
    dt = time.perf_counter() - t0
    assert res.status == "halted", res.status
    insns = int(arr.counters["retired"].sum())
    rate = insns / dt
    print(f"vectorized model: {cfg.tiles} tiles x {cfg.contexts} contexts, {res.cycles} cycles, "
          f"{insns} tile-instructions in {dt:.2f} s = {rate / 1e6:.2f} M tile-instructions/s")

    arr = Array(cfg)
    arr.write_mem(None, 0, asm.program(divergent_program(args.iters)))
    t0 = time.perf_counter()
    res = arr.run(10 ** 9)
    ddt = time.perf_counter() - t0
    assert res.status == "halted", res.status
    dins = int(arr.counters["retired"].sum())
    print(f"vectorized model, divergent (odd/even tiles run different code): {dins} "
          f"tile-instructions in {ddt:.2f} s = {dins / ddt / 1e6:.2f} M tile-instructions/s")

    sc = ScalarArray(cfg)
    sc.write_mem(None, 0, code)
    t0 = time.perf_counter()
    sc.run(args.scalar_cycles)
    sdt = time.perf_counter() - t0
    srate = sc.retired / sdt
    # same state after the same number of cycles (independent formulation check)
    check = Array(cfg)
    check.write_mem(None, 0, code)
    check.run(args.scalar_cycles)
    same = np.array_equal(check.regs, sc.regs_array())
    print(f"scalar interpreter: {sc.retired} tile-instructions in {sdt:.2f} s = "
          f"{srate / 1e3:.1f} k tile-instructions/s (registers equal to the model after "
          f"{args.scalar_cycles} cycles: {same})")
    print(f"speed-up: {rate / srate:.0f}x")


if __name__ == "__main__":
    main()
