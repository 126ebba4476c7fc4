"""Exchange schedules run on the golden model.

The programs produced by :mod:`tessera.toolchain.exchange_scheduler` are written into the model's SRAM
and executed by the golden model's exchange engine (``tessera.golden_model.exchange.ExchangeEngine``,
docs/architecture.md §6) from release cycle r = 0; the received words are compared with the
source words written beforehand. Skipped (with the reason shown) only if the golden model's
exchange engine is not importable.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tessera.spec.config import ArrayConfig
from helpers.exchange import make_transfers, random_unicast
from tessera.toolchain.exchange_scheduler import schedule_exchange

from tessera.golden_model import exchange as engine_mod  # noqa: E402
from tessera.golden_model import memory as memory_mod  # noqa: E402

PROG_BASE = 0xC000       # programs live above the data (sources < 0x8000, destinations >= 0x8000)


def run_on_model(transfers, cfg, seed=0):
    sched = schedule_exchange(transfers, cfg)
    n = cfg.tiles
    sram = memory_mod.Sram(n, cfg.sram_bytes)
    rng = np.random.default_rng(seed)
    init = {}
    for t in transfers:
        v = int(rng.integers(1, 1 << 32))
        sram.write(t.src_tile, t.src_addr, v.to_bytes(4, "little"))
        init[(t.src_tile, t.src_addr)] = v
    blobs = sched.encoded()
    for tile, blob in enumerate(blobs):
        assert PROG_BASE + len(blob) <= cfg.sram_bytes
        sram.write(tile, PROG_BASE, blob)
    eng = engine_mod.ExchangeEngine(n, cfg.exchange_latency, sram)
    no_prog = eng.start(0, np.full(n, PROG_BASE, dtype=np.int64))
    assert len(no_prog) == 0
    end = {}
    k = eng.next_cycle
    while len(end) < n:
        assert k <= sched.cycles, "exchange did not end"
        ended, faults, _ = eng.step(k)
        assert faults == []
        for t in ended.tolist():
            end[t] = k
        k = eng.next_cycle
    assert set(end.values()) == {sched.cycles - 1}          # e = r + cycles - 1 on every tile
    for t in transfers:
        for d, a in t.dsts:
            got = int.from_bytes(sram.read(d, a, 4), "little")
            assert got == init[(t.src_tile, t.src_addr)], (t, d, a)
    return sched


@pytest.mark.parametrize("seed", range(6))
def test_unicast_schedule_on_model(seed):
    rng = random.Random(seed)
    n = rng.choice([2, 4, 16])
    cfg = ArrayConfig(tiles=n, exchange_latency=rng.choice([2, 3, 8]))
    sched = run_on_model(make_transfers(random_unicast(rng, n, rng.randrange(1, 300)), cfg), cfg,
                         seed)
    assert sched.bound_met


def test_multicast_schedules_on_model():
    cfg = ArrayConfig(tiles=9, exchange_latency=2)
    A, B, C, D, E, F, G, H, I = range(9)
    triangle = [(A, [B, C]), (D, [C, E]), (F, [E, B])]
    run_on_model(make_transfers(triangle, cfg), cfg)
    run_on_model(make_transfers(triangle + [(A, [G]), (D, [H]), (F, [I])], cfg), cfg)
    cfg16 = ArrayConfig(tiles=16)
    bcast = [(3, [t for t in range(16) if t != 3]) for _ in range(12)]
    assert run_on_model(make_transfers(bcast, cfg16), cfg16).slots == 12


# ---------------------------------------------------------------------------------------------
# whole array: SPMD program writes xprog, runs `sync ARRAY`, records its resume cycle


def run_on_array(transfers, cfg, seed=0):
    """Every tile: context 0 sets xprog = PROG_BASE, `sync ARRAY`, then exits with the issue
    cycle of its first instruction after the exchange; the other contexts exit at once."""
    from tessera.golden_model import Array
    from tessera.toolchain import asm
    from tessera.spec.csr import Csr
    sched = schedule_exchange(transfers, cfg)
    T = cfg.contexts
    code = asm.program([
        asm.csrr("t0", Csr.CONTEXT_ID),     # 0T
        asm.bne("t0", "zero", 24),          # 1T  other contexts -> halt (at byte 28)
        asm.lui("t1", PROG_BASE >> 12),     # 2T
        asm.csrw(Csr.XPROG, "t1"),          # 3T
        asm.sync_array(),                   # 4T
        asm.csrr("a0", Csr.CYCLE),          # first issue after the exchange
        asm.ecall(),
        asm.addi("a0", "zero", 0),          # halt: other contexts
        asm.ecall(),
    ])
    arr = Array(cfg)
    arr.write_mem(None, 0, code)
    rng = np.random.default_rng(seed)
    init = {}
    for t in transfers:
        assert t.src_addr >= len(code)
        v = int(rng.integers(1, 1 << 32))
        arr.write_mem(t.src_tile, t.src_addr, v.to_bytes(4, "little"))
        init[(t.src_tile, t.src_addr)] = v
    for tile, blob in enumerate(sched.encoded()):
        arr.write_mem(tile, PROG_BASE, blob)
    arr.start(0)
    res = arr.run(100_000)
    assert res.status.value == "halted", res.status
    # timing from the contract (v2), computed by hand: the sync issues at 4T (context 0's 5th
    # slot); it is visible at 4T+5, when the other contexts have halted (their ecalls issue at
    # 3T+c, visible by 3T+(T-1)+5 = 4T+4), so k* = 4T+5 and r = k* + D; END at
    # e = r + cycles - 1; context 0 issues next at the first multiple of T after e.
    r = 4 * T + 5 + cfg.decision_latency
    e = r + sched.cycles - 1
    resume = -(-(e + 1) // T) * T
    for tr in res.tiles:
        assert tr.fault is None
        assert tr.contexts[0].exit_code == resume, (tr.tile, tr.contexts[0].exit_code, resume)
        assert tr.counters["exchange"] == sched.cycles          # r..e inclusive (§8)
    for t in transfers:
        for d, a in t.dsts:
            got = int.from_bytes(arr.read_mem(d, a, 4), "little")
            assert got == init[(t.src_tile, t.src_addr)], (t, d, a)
    return sched


@pytest.mark.parametrize("seed", range(3))
def test_unicast_schedule_on_array(seed):
    rng = random.Random(50 + seed)
    n = rng.choice([2, 4, 16])
    cfg = ArrayConfig(tiles=n, exchange_latency=rng.choice([2, 3, 8]))
    pairs = random_unicast(rng, n, rng.randrange(1, 200))
    sched = run_on_array(make_transfers(pairs, cfg, src_base=0x1000), cfg, seed)
    assert sched.bound_met


def test_multicast_and_empty_schedules_on_array():
    cfg = ArrayConfig(tiles=9, exchange_latency=2)
    A, B, C, D, E, F, G, H, I = range(9)
    pairs = [(A, [B, C]), (D, [C, E]), (F, [E, B]), (A, [G]), (D, [H]), (F, [I])]
    sched = run_on_array(make_transfers(pairs, cfg, src_base=0x1000), cfg)
    assert not sched.bound_met and sched.slots == 3
    bcast = [(3, [t for t in range(9) if t != 3]) for _ in range(12)]
    assert run_on_array(make_transfers(bcast, cfg, src_base=0x1000), cfg).slots == 12
    assert run_on_array([], cfg).cycles == 1
