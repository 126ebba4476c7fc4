"""Sync controller (tessera/hdl/array/sync_controller.py) on the Amaranth simulator.

Expected release cycles are computed from architecture §5 directly: r = k* + D with k* the first
cycle in which every tile is arrived (and some context waits), D = ceil(log2 N) + 2 (§7 "Array
decisions"; the same number as v1's S). ``release`` has one entering register per tile: every
bit pulses in the same cycle r; ``prerelease`` (the root register) in r − 1.
"""

import math
import random

import pytest
from amaranth.sim import Simulator

from tessera.spec.config import ArrayConfig
from tessera.hdl.array.sync_controller import SyncController


def _s(n):
    return math.ceil(math.log2(n)) + 2 if n > 1 else 2


def run_env(n, seed, barriers=6, halted=()):
    """Drive a reactive environment: after each release at r, tile i (not halted) is away for
    gap_i cycles (in exchange and computing) and arrives again at r + gap_i. Returns the release
    and prerelease cycles seen and the ones expected."""
    rng = random.Random(seed)
    cfg = ArrayConfig(tiles=n)
    dut = SyncController(cfg)
    S = cfg.sync_latency
    assert S == _s(n)
    first = {i: rng.randrange(0, 12) for i in range(n)}
    gaps = [[rng.choice([1, 2, 4, 5, 9]) for _ in range(n)] for _ in range(barriers)]
    expected = []
    r = None
    for b in range(barriers):
        arr = ([first[i] for i in range(n) if i not in halted] if b == 0 else
               [r + gaps[b][i] for i in range(n) if i not in halted])
        if not arr:
            break
        r = max(arr) + S
        expected.append(r)
    horizon = (expected[-1] if expected else 40) + 15
    seen, seen_pre = [], []

    async def tb(ctx):
        arrive_at = dict(first)
        b = 0
        for k in range(horizon):
            rel = ctx.get(dut.release)
            assert rel in (0, (1 << n) - 1), f"release bits {rel:#x} not simultaneous"
            if rel:
                seen.append(k)
                b += 1
                if b < barriers:
                    for i in range(n):
                        arrive_at[i] = k + gaps[b][i]
            if ctx.get(dut.prerelease):
                seen_pre.append(k)
            av = wv = 0
            for i in range(n):
                if i in halted:
                    arrived = not rel           # in its (empty) exchange phase at r
                    wait = False
                else:
                    arrived = (not rel) and k >= arrive_at[i] and b < barriers
                    wait = arrived
                av |= arrived << i
                wv |= wait << i
            ctx.set(dut.arrive, av)
            ctx.set(dut.waiting, wv)
            await ctx.tick()

    async def init(ctx):
        ctx.set(dut.enable, 1)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(init)
    sim.add_testbench(tb)
    sim.run()
    return seen, seen_pre, expected


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 16])
def test_release_latency_random(n):
    for seed in range(3):
        seen, pre, exp = run_env(n, seed + 100 * n)
        assert seen == exp, f"N={n} seed={seed}"
        assert pre == [r - 1 for r in exp]


def test_back_to_back_min_gap():
    # every tile back after one cycle (all-halted-like tiles with xprog = 0): never merged/lost
    n = 4
    seen, _, exp = run_env(n, 7, barriers=8)
    assert seen == exp
    assert len(seen) == 8


def test_halted_tiles_do_not_block():
    seen, _, exp = run_env(5, 3, halted=(1, 3))
    assert seen == exp and len(exp) == 6


def test_all_halted_never_releases():
    seen, pre, exp = run_env(3, 1, halted=(0, 1, 2))
    assert exp == [] and seen == [] and pre == []


def test_exact_s_by_hand():
    # N = 4: S = 4; all tiles arrive at cycle 3 -> release at 7 (hand computed)
    dut = SyncController(ArrayConfig(tiles=4))
    got = []

    async def tb(ctx):
        ctx.set(dut.enable, 1)
        for k in range(14):
            if ctx.get(dut.release):
                got.append(k)
            on = 3 <= k and not got
            ctx.set(dut.arrive, 0xF if on else 0)
            ctx.set(dut.waiting, 0xF if on else 0)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    assert got == [7]
