"""cocotb test module for ``tessera.hdl.array.sync_controller.SyncController`` alone (built as the Verilator
top by :func:`tessera.tb.runner.build_sync_controller`).

Closed loop with a Python model of N tiles that follow the tile protocol of
docs/architecture.md §5 / docs/rtl.md: a tile is *running* for a random number of cycles,
then *arrived* (``arrive`` = 1, ``waiting`` = 1) until the controller's ``prerelease`` pulse
(cycle r − 1); from r it is in its exchange phase for a random 1..X cycles (``arrive`` = 0),
then runs again, or — at random, never tile 0 — halts for good (``arrive`` = 1,
``waiting`` = 0). Delays of 0 make a tile arrive again in the very first cycle after its
one-cycle exchange phase (the tightest back-to-back case for the sense bit).

Reference (§5, §7 "Array decisions"): k* = the first cycle at which every tile is arrived and
some tile is waiting (and no release is pending); then ``prerelease`` must pulse exactly at
k* + D − 1 and ``release`` exactly at k* + D (D = ceil(log2 N) + 2, v1's S), on every tile's
bit of ``release`` at once, and never otherwise.

Payload: ``{"config", "seed", "barriers", "max_delay", "max_xchg", "p_halt"}``.
Results: ``{"barriers", "cycles", "errors": [...], "tight": n, "latencies": [...]}``.
"""

from __future__ import annotations

import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge

from tessera.spec.config import ArrayConfig


@cocotb.test()
async def sync_random(dut):
    """Random arrival orders and delays against the §5 reference."""
    p = json.loads(open(os.environ["TESSERA_TB_PAYLOAD"]).read())
    cfg = ArrayConfig.from_dict(p["config"])
    n, S = cfg.tiles, cfg.decision_latency
    rng = random.Random(int(p["seed"]))
    want = int(p["barriers"])
    max_delay, max_xchg = int(p.get("max_delay", 12)), int(p.get("max_xchg", 4))
    p_halt = float(p.get("p_halt", 0.002))

    Clock(dut.clk, 10, unit="ns").start(start_high=False)
    dut.rst.value = 1
    dut.arrive.value = 0
    dut.waiting.value = 0
    dut.enable.value = 0
    dut.clear.value = 0
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    dut.clear.value = 1
    await RisingEdge(dut.clk)
    dut.clear.value = 0
    dut.enable.value = 1

    # per tile: [mode, countdown]; mode in run / arr / xch / halt
    tiles = [["run", rng.randint(0, max_delay)] for _ in range(n)]
    pending_r = None
    kstar = None
    errors: list[str] = []
    latencies: list[int] = []
    barriers = tight = 0
    zero_run = 0          # consecutive cycles with not-all-arrived before the current k*
    k = 0
    limit = want * (S + 2 * max_delay + max_xchg + 8) + 1000
    while barriers < want and k < limit and len(errors) < 10:
        await RisingEdge(dut.clk)
        arrive = sum(1 << i for i, (m, _) in enumerate(tiles) if m in ("arr", "halt"))
        waiting = sum(1 << i for i, (m, _) in enumerate(tiles) if m == "arr")
        dut.arrive.value = arrive
        dut.waiting.value = waiting
        all_arr = arrive == (1 << n) - 1 and waiting != 0
        if pending_r is None and all_arr:
            kstar, pending_r = k, k + S
            if zero_run == 1:
                tight += 1
        zero_run = 0 if all_arr else zero_run + 1
        await FallingEdge(dut.clk)
        pre, rel_bits = int(dut.prerelease.value), int(dut.release.value)
        rel = int(rel_bits != 0)
        if rel_bits not in (0, (1 << n) - 1):
            errors.append(f"cycle {k}: release bits {rel_bits:#x}: not on every tile at once")
        exp_pre = pending_r is not None and k == pending_r - 1
        exp_rel = pending_r is not None and k == pending_r
        if pre != exp_pre or rel != exp_rel:
            errors.append(f"cycle {k}: prerelease {pre} release {rel}, expected {int(exp_pre)} "
                          f"{int(exp_rel)} (k* = {kstar}, S = {S}, arrive {arrive:#x}, "
                          f"waiting {waiting:#x})")
        if rel:
            latencies.append(k - kstar)
        if exp_rel:
            pending_r = None
            barriers += 1
        # tile state for cycle k + 1
        for i, t in enumerate(tiles):
            mode, cnt = t
            if pre and mode in ("arr", "halt"):
                t[0], t[1] = ("xch", rng.choice((1, 1, 1, rng.randint(1, max_xchg)))) \
                    if mode == "arr" else ("xch-h", rng.choice((1, rng.randint(1, max_xchg))))
            elif mode in ("xch", "xch-h"):
                if cnt > 1:
                    t[1] = cnt - 1
                elif mode == "xch-h" or (i != 0 and rng.random() < p_halt):
                    t[0], t[1] = "halt", 0
                else:
                    d = rng.choice((0, 0, rng.randint(0, max_delay)))
                    t[0], t[1] = ("arr", 0) if d == 0 else ("run", d)
            elif mode == "run":
                if cnt > 1:
                    t[1] = cnt - 1
                else:
                    t[0], t[1] = "arr", 0
        if all(m in ("halt", "xch-h") for m, _ in tiles):
            break
        k += 1
    out = {"barriers": barriers, "cycles": k, "errors": errors, "tight": tight,
           "latencies": sorted(set(latencies)),
           "halted_tiles": sum(m in ("halt", "xch-h") for m, _ in tiles)}
    with open(os.environ["TESSERA_TB_RESULTS"], "w") as fh:
        json.dump(out, fh)
