"""The register file alone (tessera/hdl/tile/core/regfile.py) against a dictionary model of
its documented behaviour: x0 reads 0, a register not written since ``clear`` reads 0, reads
are synchronous and see the writes of earlier cycles (not the write of their own cycle), and
``clear`` wins over a write of its cycle. The pipeline's valid-bit row is selected a cycle
ahead from ``r_ctx_next``, so the stimulus keeps r_ctx(t + 1) = r_ctx_next(t), as the core
does (its I-stage context is the F-stage context of the cycle before)."""

import random

import pytest

from helpers.hdl_sim import simulate
from tessera.hdl.tile.core.regfile import RegFile
from tessera.spec.config import PRESETS


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_reads_writes_clears_equal_a_dictionary_model(seed):
    cfg = PRESETS["tiny"]
    t = cfg.contexts
    dut = RegFile(cfg)
    rng = random.Random(seed)
    cycles = 600
    # a small register range makes hits on recent writes frequent
    plan = []
    for _ in range(cycles):
        plan.append(dict(
            clear=rng.random() < 0.02,
            w_en=rng.random() < 0.7, w_ctx=rng.randrange(t), w_addr=rng.choice([0, 1, 2, 3, 31]),
            w_data=rng.getrandbits(32),
            nxt=rng.randrange(t),
            addrs=[rng.choice([0, 1, 2, 3, 31]) for _ in range(3)],
            dbg_ctx=rng.randrange(t), dbg_addr=rng.choice([0, 1, 2, 3, 31])))
    # the first cycle's clear makes every register start invalid, as after ``start``
    plan[0]["clear"] = True
    # expected, by the rules in the module docstring: state after each cycle
    state = {}                       # (ctx, reg) -> value, only registers written since clear
    expect = []                      # per cycle k >= 1: the reads addressed in cycle k - 1
    r_ctx = 0
    for k, p in enumerate(plan):
        reads = [0 if p["clear"] else state.get((r_ctx, a), 0) for a in p["addrs"]]
        dbg = 0 if p["clear"] else state.get((p["dbg_ctx"], p["dbg_addr"]), 0)
        expect.append((reads, dbg))
        if p["clear"]:
            state = {}
        elif p["w_en"] and p["w_addr"] != 0:
            state[(p["w_ctx"], p["w_addr"])] = p["w_data"]
        r_ctx = p["nxt"]
    got = []

    def apply(ctx, k):
        p = plan[k]
        ctx.set(dut.r_ctx, plan[k - 1]["nxt"] if k else 0)
        ctx.set(dut.clear, p["clear"])
        ctx.set(dut.w_en, p["w_en"])
        ctx.set(dut.w_ctx, p["w_ctx"])
        ctx.set(dut.w_addr, p["w_addr"])
        ctx.set(dut.w_data, p["w_data"])
        ctx.set(dut.r_ctx_next, p["nxt"])
        for port, a in zip((dut.r_addr1, dut.r_addr2, dut.r_addr3), p["addrs"]):
            ctx.set(port, a)
        ctx.set(dut.dbg_ctx, p["dbg_ctx"])
        ctx.set(dut.dbg_addr, p["dbg_addr"])

    async def bench(ctx):
        apply(ctx, 0)
        for k in range(len(plan)):
            await ctx.tick()
            # the next cycle's inputs change before the data of this read is sampled, as in
            # the core (the data must not depend on them)
            if k + 1 < len(plan):
                apply(ctx, k + 1)
            got.append(([ctx.get(d) for d in (dut.r_data1, dut.r_data2, dut.r_data3)],
                         ctx.get(dut.dbg_data)))

    simulate(dut, bench)
    for k, (g, e) in enumerate(zip(got, expect)):
        assert g == e, f"cycle {k}: reads {g} != {e} ({plan[k]})"
