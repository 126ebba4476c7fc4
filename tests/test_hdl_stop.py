"""Stop controller (tessera/hdl/array/stop_controller.py) on the Amaranth simulator.

Expected cycles from docs/architecture.md §7 ("Array decisions", "Stop", "Timeout") by hand: a
stop condition (a fault visible on some tile, or every context of the array HALTED) that first
holds at v stops the array at the end of t_s = v + D − 1, so every tile's ``run`` is high in
cycles 0 .. v + D − 1 and low from C = v + D on, D = ceil(log2 N) + 2 (N = 1: 2, 2: 3, 3 and 4:
4, 5..8: 5, 16: 6, written out below, not computed by the code under test). A timeout at
max_cycles M ends ``run`` at M. Cycle 0 is the cycle after ``clear`` (the start pulse).
"""

import random

import pytest
from amaranth.sim import Simulator

from tessera.spec.config import ArrayConfig
from tessera.hdl.array.stop_controller import StopController

D_BY_HAND = {1: 2, 2: 3, 3: 4, 4: 4, 5: 5, 8: 5, 16: 6}


def run(n, fault_at=None, halt_at=None, last_at=None, horizon=40):
    """fault_at / halt_at: dict tile -> first cycle its fault is visible / it is all-halted
    (held from then on); last_at: the cycle driven as the timeout's last cycle. Returns the
    cycles in which run[i] was high per tile, the cycles with stop and faulted high."""
    dut = StopController(ArrayConfig(tiles=n))
    fault_at, halt_at = fault_at or {}, halt_at or {}
    out = {"run": [[] for _ in range(n)], "stop": [], "faulted": [], "running": []}

    async def tb(ctx):
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        for k in range(horizon):
            f = sum(1 << i for i, c in fault_at.items() if k >= c)
            h = sum(1 << i for i, c in halt_at.items() if k >= c)
            ctx.set(dut.fault, f)
            ctx.set(dut.halted, h)
            ctx.set(dut.last, int(k == last_at))
            for i in range(n):
                if (ctx.get(dut.run) >> i) & 1:
                    out["run"][i].append(k)
            for name in ("stop", "faulted", "running"):
                if ctx.get(getattr(dut, name)):
                    out[name].append(k)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    return out


@pytest.mark.parametrize("n", sorted(D_BY_HAND))
def test_fault_stops_every_tile_at_v_plus_d(n):
    D = D_BY_HAND[n]
    assert ArrayConfig(tiles=n).decision_latency == D
    for tile in {0, n - 1, n // 2}:
        v = 7
        got = run(n, fault_at={tile: v})
        C = v + D
        assert got["run"] == [list(range(C))] * n, (n, tile)
        assert got["running"] == list(range(C))
        assert got["stop"] == list(range(C - 1, 40))          # t_s = v + D - 1 and after
        assert got["faulted"] == list(range(C - 1, 40))


@pytest.mark.parametrize("n", sorted(D_BY_HAND))
def test_halt_needs_every_tile(n):
    D = D_BY_HAND[n]
    rng = random.Random(n)
    halt_at = {i: rng.randrange(0, 15) for i in range(n)}
    got = run(n, halt_at=halt_at)
    C = max(halt_at.values()) + D       # v = the cycle the last tile is all-halted
    assert got["run"] == [list(range(C))] * n
    assert got["stop"] == list(range(C - 1, 40))
    assert got["faulted"] == []


def test_the_first_condition_decides():
    # N = 4, D = 4: tile 2 halts from 3, the others from 9 (v_halt = 9); tile 1 faults at 5
    # (v_fault = 5): the stop condition first holds at 5 -> C = 9.
    got = run(4, fault_at={1: 5}, halt_at={0: 9, 1: 9, 2: 3, 3: 9})
    assert got["run"] == [list(range(9))] * 4
    assert got["faulted"] == list(range(8, 40))


def test_timeout_ends_run_at_max_cycles():
    # last in cycle M - 1 = 11: run in 0..11, low from 12; no stop
    got = run(3, last_at=11)
    assert got["run"] == [list(range(12))] * 3
    assert got["stop"] == [] and got["faulted"] == []


def test_stop_before_timeout_and_fault_after_it():
    # N = 2, D = 3: a fault at 4 stops at C = 7 although the timeout is later (last at 20)
    assert run(2, fault_at={0: 4}, last_at=20)["run"] == [list(range(7))] * 2
    # a fault visible at 10 with the timeout's last cycle 11 (M = 12): run ends at 12, but the
    # fault still reaches the root (faulted from 12 = v + D - 1) for the status (§7 "Timeout":
    # status fault, cycles = max_cycles)
    got = run(2, fault_at={1: 10}, last_at=11)
    assert got["run"] == [list(range(12))] * 2
    assert got["faulted"] == list(range(12, 40))
