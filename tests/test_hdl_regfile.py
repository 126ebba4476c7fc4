"""The register file alone (tessera/hdl/tile/core/regfile.py) against a dictionary model of
its documented behaviour: x0 reads 0, a register not written since ``clear`` reads 0, reads
are synchronous and see the writes of earlier cycles (not the write of their own cycle), and
``clear`` wins over a write of its cycle. The pipeline's valid-bit row is selected a cycle
ahead from ``r_ctx_next``, so the stimulus keeps r_ctx(t + 1) = r_ctx_next(t), as the core
does (its I-stage context is the F-stage context of the cycle before). The debug read shares
port 3: with ``dbg_en`` high in cycle k - 1 and the same ``dbg_ctx`` in k - 1 and k, port 3
reads x[``dbg_addr`` of k] of ``dbg_ctx`` (data in k + 1), and ports 1 and 2 are not
defined in k."""

import random

import pytest

from helpers.hdl_sim import simulate
from tessera.hdl.tile.core.regfile import RegFile
from tessera.spec.config import PRESETS


def _plan(rng, t, cycles):
    """Random stimulus: pipeline stretches (``dbg_en`` low) and debug stretches of 1-6 cycles
    (``dbg_en`` high) whose debug context changes only between stretches, or, with a small
    probability, inside one (a read the module does not define)."""
    plan = []
    dbg_en, dbg_ctx, left = False, 0, 0
    for _ in range(cycles):
        if left == 0:
            dbg_en = not dbg_en if rng.random() < 0.5 else dbg_en
            dbg_ctx = rng.randrange(t)
            left = rng.randrange(1, 7)
        left -= 1
        if rng.random() < 0.03:
            dbg_ctx = rng.randrange(t)
        plan.append(dict(
            clear=rng.random() < 0.02,
            w_en=rng.random() < 0.7, w_ctx=rng.randrange(t), w_addr=rng.choice([0, 1, 2, 3, 31]),
            w_data=rng.getrandbits(32),
            nxt=rng.randrange(t),
            addrs=[rng.choice([0, 1, 2, 3, 31]) for _ in range(3)],
            dbg_en=dbg_en, dbg_ctx=dbg_ctx, dbg_addr=rng.choice([0, 1, 2, 3, 31])))
    # the first cycle's clear makes every register start invalid, as after ``start``
    plan[0]["clear"] = True
    plan[0]["dbg_en"] = False
    return plan


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_reads_writes_clears_equal_a_dictionary_model(seed):
    cfg = PRESETS["tiny"]
    t = cfg.contexts
    dut = RegFile(cfg)
    rng = random.Random(seed)
    plan = _plan(rng, t, 800)
    # expected, by the rules in the module docstring: state after each cycle; per cycle k the
    # reads addressed in k (None: not defined)
    state = {}                       # (ctx, reg) -> value, only registers written since clear
    expect = []
    r_ctx = 0
    checked = {"pipeline": 0, "debug": 0}
    for k, p in enumerate(plan):
        def val(c, a):
            return 0 if p["clear"] else state.get((c, a), 0)
        prev = plan[k - 1] if k else None
        if prev is None or not prev["dbg_en"]:
            reads = [val(r_ctx, a) for a in p["addrs"]]
            checked["pipeline"] += 1
        elif prev["dbg_ctx"] == p["dbg_ctx"]:
            reads = [None, None, val(p["dbg_ctx"], p["dbg_addr"])]
            checked["debug"] += 1
        else:
            reads = [None, None, None]
        expect.append(reads)
        if p["clear"]:
            state = {}
        elif p["w_en"] and p["w_addr"] != 0:
            state[(p["w_ctx"], p["w_addr"])] = p["w_data"]
        r_ctx = p["nxt"]
    assert checked["pipeline"] > 300 and checked["debug"] > 150, checked
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
        ctx.set(dut.dbg_en, p["dbg_en"])
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
            d3 = ctx.get(dut.r_data3)
            assert ctx.get(dut.dbg_data) == d3
            got.append([ctx.get(dut.r_data1), ctx.get(dut.r_data2), d3])

    simulate(dut, bench)
    for k, (g, e) in enumerate(zip(got, expect)):
        for port, (gv, ev) in enumerate(zip(g, e)):
            if ev is not None:
                assert gv == ev, f"cycle {k}, port {port + 1}: {gv:#x} != {ev:#x} ({plan[k]})"
