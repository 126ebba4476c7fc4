"""Golden model: barrel timing, counters, TILE/ARRAY barriers and timeout (docs/architecture.md
§4, §5, §7, §8). Every expected cycle is derived by hand from the formulas in the comments."""

import pytest

from tessera.golden_model import Array
from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.result import ContextState

SRAM = 16 * 1024


def make(cfg, words, per_tile=None):
    arr = Array(cfg)
    arr.write_mem(None, 0, asm.program(words))
    for t, w in (per_tile or {}).items():
        arr.write_mem(t, 0, asm.program(w))
    return arr


def reg(arr, t, c, r):
    return int(arr.regs[t, c, r])


def check_counter_sum(res):
    for t in res.tiles:
        c = t.counters
        assert c["compute"] + c["sync"] + c["exchange"] + c["halted"] == res.cycles


@pytest.mark.parametrize("T", [4, 6, 16])
def test_cycle_csr_and_halt_cycles(T):
    cfg = ArrayConfig(tiles=2, contexts=T, sram_bytes=SRAM)
    # instruction i of context c issues at i*T + c
    arr = make(cfg, [asm.csrr(10, Csr.CYCLE), asm.nop(), asm.csrr(11, Csr.CYCLE),
                     asm.csrr(12, Csr.INSTRET), asm.ecall()])
    res = arr.run(10_000)
    assert res.status == "halted"
    assert res.cycles == 4 * T + (T - 1) + 1          # last ecall: i = 4, c = T-1
    for c in range(T):
        assert (reg(arr, 1, c, 10), reg(arr, 1, c, 11), reg(arr, 1, c, 12)) == (c, 2 * T + c, 3)
    for t in res.tiles:
        assert t.counters["compute"] == res.cycles
        assert t.counters["retired"] == 5 * T
    check_counter_sum(res)


def test_halted_counter_and_per_tile_retired():
    cfg = ArrayConfig(tiles=2, contexts=4, sram_bytes=SRAM)
    # tile 0: ecall at once (context c at cycle c, HALTED visible from c+3: all halted at 6)
    # tile 1: 10 nops then ecall: last ecall at 10*4 + 3 = 43 -> cycles 44
    arr = make(cfg, [asm.nop()] * 10 + [asm.ecall()], per_tile={0: [asm.ecall()]})
    res = arr.run(10_000)
    assert res.status == "halted" and res.cycles == 44
    c0 = res.tiles[0].counters
    assert (c0["compute"], c0["halted"], c0["sync"], c0["retired"]) == (6, 38, 0, 4)
    assert res.tiles[1].counters["compute"] == 44
    check_counter_sum(res)


def test_timeout_and_continue():
    cfg = ArrayConfig(tiles=1, contexts=4, sram_bytes=SRAM)
    arr = make(cfg, [asm.addi(5, 5, 1), asm.j(-4)])
    res = arr.run(100)
    assert res.status == "timeout" and res.cycles == 100 and res.not_arrived == []
    # context c issued at c, c+4, ..., c+96: 25 instructions, 13 of them addi (even i)
    assert [reg(arr, 0, c, 5) for c in range(4)] == [13] * 4
    res = arr.run(101)
    assert res.cycles == 101 and reg(arr, 0, 0, 5) == 13
    # cycle 100: context 0, i = 25 (odd: j); 101: context 1, i = 25 (j); 104: context 0, i = 26
    res = arr.run(104)
    assert res.cycles == 104 and [reg(arr, 0, c, 5) for c in range(4)] == [13] * 4
    res = arr.run(105)
    assert res.cycles == 105 and [reg(arr, 0, c, 5) for c in range(4)] == [14, 13, 13, 13]


def test_tile_barrier_timing():
    cfg = ArrayConfig(tiles=1, contexts=4, sram_bytes=SRAM)
    # context c issues sync TILE at c; last (c=3) at t=3 -> release at k=6, RUNNING from 7.
    # next slots: c3 at 7, c0 at 8, c1 at 9, c2 at 10 read the cycle CSR.
    # ecalls at 11, 12, 13, 14 -> cycles 15. WAIT_TILE visible c+3; all waiting only at 6.
    arr = make(cfg, [asm.sync_tile(), asm.csrr(10, Csr.CYCLE), asm.ecall()])
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 15
    assert [reg(arr, 0, c, 10) for c in range(4)] == [8, 9, 10, 7]
    cnt = res.tiles[0].counters
    assert (cnt["compute"], cnt["sync"]) == (14, 1)
    check_counter_sum(res)


def test_tile_barrier_with_skew_and_halted_context():
    cfg = ArrayConfig(tiles=1, contexts=4, sram_bytes=SRAM)
    # context 0 halts early; context 3 runs three nops more than 1 and 2 before sync TILE.
    prog = [
        asm.csrr(5, Csr.CONTEXT_ID),   # 0
        asm.bne(5, 0, 8),              # 4: c != 0 -> 12
        asm.ecall(),                   # 8: context 0 halts (issued at 4*2+0 = 8)
        asm.addi(6, 0, 3),             # 12
        asm.bne(5, 6, 16),             # 16: c != 3 -> 32
        asm.nop(),                     # 20
        asm.nop(),                     # 24
        asm.nop(),                     # 28
        asm.sync_tile(),               # 32
        asm.csrr(10, Csr.CYCLE),       # 36
        asm.ecall(),                   # 40
    ]
    # context c's i-th instruction issues at 4i + c (no stalls before the barrier):
    #   c0: ecall i=2 -> 8, HALTED visible 11
    #   c1: 0,4,12,16,32 -> i=4 sync at 17 ; c2: sync at 18
    #   c3: 0,4,12,16,20,24,28,32 -> sync i=7 at 31, visible 34 -> release k=34, RUNNING 35
    #   next slots: c3 at 35, c1 at 37, c2 at 38 -> csrr; ecalls c3 39, c1 41, c2 42 -> 43
    arr = make(cfg, prog)
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 43
    assert [reg(arr, 0, c, 10) for c in (1, 2, 3)] == [37, 38, 35]
    cnt = res.tiles[0].counters
    # sync only at cycle 34 (c1/c2 wait from 20/21, c3 runs until 34)
    assert (cnt["compute"], cnt["sync"], cnt["halted"]) == (42, 1, 0)


def array_prog():
    return [asm.sync_array(), asm.csrr(10, Csr.CYCLE), asm.ecall()]


@pytest.mark.parametrize("N", [1, 2, 4, 5, 16])
def test_array_barrier_timing(N):
    cfg = ArrayConfig(tiles=N, contexts=4, sram_bytes=SRAM)
    S = {1: 2, 2: 3, 4: 4, 5: 5, 16: 6}[N]        # ceil(log2 N) + 2
    assert cfg.sync_latency == S
    # last sync ARRAY at t=3: k* = 6, r = 6 + S, e = r (xprog = 0), RUNNING from r+1.
    # slots after: csrr at r+1..r+4, ecall at r+5..r+8 -> cycles = r + 9.
    arr = make(cfg, array_prog())
    res = arr.run(1000)
    r = 6 + S
    exp = {}
    for k in range(r + 1, r + 5):
        exp[k % 4] = k
    assert res.status == "halted" and res.cycles == r + 9
    for t in range(N):
        assert [reg(arr, t, c, 10) for c in range(4)] == [exp[c] for c in range(4)]
        cnt = res.tiles[t].counters
        # compute: 0..5 and r+1..cycles-1 ; sync 6..r-1 ; exchange r
        assert cnt["sync"] == S and cnt["exchange"] == 1
        assert cnt["compute"] == 6 + (res.cycles - r - 1)
    check_counter_sum(res)


def test_array_barrier_staggered_and_halted_tile():
    cfg = ArrayConfig(tiles=3, contexts=4, sram_bytes=SRAM)   # S = 4
    late = [asm.nop()] * 5 + array_prog()     # sync at i=5: c3 at 23, visible 26
    arr = make(cfg, array_prog(), per_tile={1: late, 2: [asm.ecall()]})
    res = arr.run(1000)
    # tile 2 all halted from 6; tile 0 waiting from 6; tile 1 arrives at 26 = k*
    # r = 30, RUNNING from 31: c3 at 31, c0 32, c1 33, c2 34; ecalls 35..38 -> 39
    assert res.status == "halted" and res.cycles == 39
    for t in (0, 1):
        assert [reg(arr, t, c, 10) for c in range(4)] == [32, 33, 34, 31]
    c0, c1, c2 = (res.tiles[i].counters for i in range(3))
    assert (c0["compute"], c0["sync"], c0["exchange"]) == (6 + 8, 30 - 6, 1)
    assert (c1["compute"], c1["sync"], c1["exchange"]) == (26 + 8, 4, 1)
    # halted tile: compute 0..5, halted 6..29 and 31..38, exchange at 30 (it runs its phase)
    assert (c2["compute"], c2["halted"], c2["exchange"], c2["sync"]) == (6, 24 + 8, 1, 0)
    check_counter_sum(res)


def test_two_consecutive_array_barriers():
    cfg = ArrayConfig(tiles=2, contexts=4, sram_bytes=SRAM)   # S = 3
    prog = [asm.sync_array(), asm.sync_array(), asm.csrr(10, Csr.CYCLE), asm.ecall()]
    # 1st: k* = 6, r = 9, RUNNING from 10: second syncs c2 at 10, c3 11, c0 12, c1 13
    # 2nd: last at 13 -> k* = 16, r = 19, RUNNING from 20: c0 20, c1 21, c2 22, c3 23
    arr = make(cfg, prog)
    res = arr.run(1000)
    assert [reg(arr, 0, c, 10) for c in range(4)] == [20, 21, 22, 23]
    assert res.cycles == 28
    assert res.tiles[0].counters["exchange"] == 2
    assert res.tiles[0].counters["sync"] == 3 + 3


def test_deadlock_timeout_states_and_not_arrived():
    cfg = ArrayConfig(tiles=3, contexts=4, sram_bytes=SRAM)
    # tile 0: all sync ARRAY (arrived); tile 1: context 0 sync TILE, others sync ARRAY
    # (deadlock); tile 2: spins.
    t1 = [asm.csrr(5, Csr.CONTEXT_ID), asm.beq(5, 0, 8), asm.sync_array(), asm.sync_tile()]
    arr = make(cfg, [asm.sync_array(), asm.ecall()], per_tile={1: t1, 2: [asm.j(0)]})
    res = arr.run(200)
    assert res.status == "timeout" and res.cycles == 200
    assert res.not_arrived == [1, 2]
    st = [[c.state for c in t.contexts] for t in res.tiles]
    assert st[0] == [ContextState.WAIT_ARRAY] * 4
    assert st[1][0] == ContextState.WAIT_TILE and st[1][1:] == [ContextState.WAIT_ARRAY] * 3
    assert st[2] == [ContextState.RUNNING] * 4
    check_counter_sum(res)
    assert res.tiles[0].counters["sync"] == 200 - 6


def test_timeout_without_arrivals_has_empty_not_arrived():
    cfg = ArrayConfig(tiles=2, contexts=4, sram_bytes=SRAM)
    arr = make(cfg, [asm.sync_tile(), asm.j(0)], per_tile={1: [asm.j(0)]})
    res = arr.run(50)
    assert res.status == "timeout" and res.not_arrived == []


def test_pending_state_is_in_final_state_at_timeout():
    # context 0 issues sync TILE at 0; the run stops after cycle 0: final state WAIT_TILE
    cfg = ArrayConfig(tiles=1, contexts=4, sram_bytes=SRAM)
    arr = make(cfg, [asm.sync_tile()])
    res = arr.run(1)
    assert res.tiles[0].contexts[0].state == ContextState.WAIT_TILE
    assert res.tiles[0].contexts[0].pc == 4
    assert res.tiles[0].contexts[1].state == ContextState.RUNNING
    assert res.tiles[0].counters["compute"] == 1
