"""Golden model: barrel timing, counters, TILE/ARRAY barriers and timeout (docs/architecture.md
§4, §5, §7, §8), contract v2. Every expected cycle is derived by hand from the formulas in the
comments: instruction i of context c issues at i*T + c; a state change of an instruction issued
at t is visible from t + 5; D = ceil(log2 N) + 2; a run whose stop condition (every context
HALTED, or a fault visible) first holds at v ends with cycles = v + D."""

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


@pytest.mark.parametrize("T", [6, 8, 16])
def test_cycle_csr_and_halt_cycles(T):
    cfg = ArrayConfig(tiles=2, contexts=T, sram_bytes=SRAM)     # D = 1 + 2 = 3
    # instruction i of context c issues at i*T + c
    arr = make(cfg, [asm.csrr(10, Csr.CYCLE), asm.nop(), asm.csrr(11, Csr.CYCLE),
                     asm.csrr(12, Csr.INSTRET), asm.ecall()])
    res = arr.run(10_000)
    assert res.status == "halted"
    # last ecall: i = 4, c = T-1 at t = 5T - 1; all HALTED visible from v = t + 5 = 5T + 4;
    # cycles = v + D = 5T + 7
    assert res.cycles == 5 * T + 7
    for c in range(T):
        assert (reg(arr, 1, c, 10), reg(arr, 1, c, 11), reg(arr, 1, c, 12)) == (c, 2 * T + c, 3)
    for t in res.tiles:
        # compute 0..v-1, halted v..v+D-1 (every context HALTED, state at k)
        assert t.counters["compute"] == 5 * T + 4 and t.counters["halted"] == 3
        assert t.counters["retired"] == 5 * T
    check_counter_sum(res)


@pytest.mark.parametrize("T", [4, 5])
def test_fewer_than_six_contexts_are_refused(T):
    # §1 (v2): T >= 6 because an instruction occupies 6 pipeline cycles
    with pytest.raises(ValueError, match=f"ArrayConfig.contexts must be in 6..16, not {T}"):
        ArrayConfig(tiles=1, contexts=T, sram_bytes=SRAM)


def test_exchange_latency_one_is_refused():
    # §1 (v2): L >= 2 (one register leaving the sender, one entering the receiver)
    with pytest.raises(ValueError, match="ArrayConfig.exchange_latency must be in 2..64, not 1"):
        ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM, exchange_latency=1)


def test_halted_counter_and_per_tile_retired():
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM)     # D = 3
    # tile 0: ecall at once (context c at cycle c, HALTED visible from c+5: all halted at 10)
    # tile 1: 10 nops then ecall: last ecall at 10*6 + 5 = 65, all HALTED from v = 70,
    # cycles = 70 + 3 = 73
    arr = make(cfg, [asm.nop()] * 10 + [asm.ecall()], per_tile={0: [asm.ecall()]})
    res = arr.run(10_000)
    assert res.status == "halted" and res.cycles == 73
    c0 = res.tiles[0].counters
    assert (c0["compute"], c0["halted"], c0["sync"], c0["retired"]) == (10, 63, 0, 6)
    c1 = res.tiles[1].counters
    assert (c1["compute"], c1["halted"]) == (70, 3)
    check_counter_sum(res)


def test_timeout_and_continue():
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM)
    arr = make(cfg, [asm.addi(5, 5, 1), asm.j(-4)])
    res = arr.run(100)
    assert res.status == "timeout" and res.cycles == 100 and res.not_arrived == []
    # context c issues its i-th instruction at c + 6i, addi for even i. Up to cycle 99:
    # c = 0..3: i = 0..16 (c + 96 <= 99), 9 addi; c = 4, 5: i = 0..15 (c + 90), 8 addi
    assert [reg(arr, 0, c, 5) for c in range(6)] == [9, 9, 9, 9, 8, 8]
    # cycle 100: context 4, i = 16 (addi); 101: context 5, i = 16 (addi)
    res = arr.run(102)
    assert res.cycles == 102 and [reg(arr, 0, c, 5) for c in range(6)] == [9] * 6
    # 102..107: i = 17 (j) for contexts 0..5; 108: context 0, i = 18 (addi)
    res = arr.run(108)
    assert res.cycles == 108 and [reg(arr, 0, c, 5) for c in range(6)] == [9] * 6
    res = arr.run(109)
    assert res.cycles == 109 and [reg(arr, 0, c, 5) for c in range(6)] == [10] + [9] * 5


def test_tile_barrier_timing():
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM)     # D = 2
    # context c issues sync TILE at c; WAIT_TILE visible from c+5; last (c=5) at t=5 -> all
    # waiting only at k = 10: release at 10, RUNNING from 11 (§5: k = t+5).
    # next slots: c5 at 11, c0 12, c1 13, c2 14, c3 15, c4 16 read the cycle CSR.
    # ecalls at 17..22; last at 22 -> all HALTED from 27 -> cycles 27 + 2 = 29.
    arr = make(cfg, [asm.sync_tile(), asm.csrr(10, Csr.CYCLE), asm.ecall()])
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 29
    assert [reg(arr, 0, c, 10) for c in range(6)] == [12, 13, 14, 15, 16, 11]
    cnt = res.tiles[0].counters
    # sync: cycle 10 only; halted: 27, 28; compute: the other 26 cycles
    assert (cnt["compute"], cnt["sync"], cnt["halted"]) == (26, 1, 2)
    check_counter_sum(res)


def test_tile_barrier_with_skew_and_halted_context():
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM)     # D = 2
    # context 0 halts early; context 3 runs three nops more than the others before sync TILE.
    prog = [
        asm.csrr(5, Csr.CONTEXT_ID),   # 0
        asm.bne(5, 0, 8),              # 4: c != 0 -> 12
        asm.ecall(),                   # 8: context 0 halts (issued at 6*2+0 = 12)
        asm.addi(6, 0, 3),             # 12
        asm.bne(5, 6, 16),             # 16: c != 3 -> 32
        asm.nop(),                     # 20
        asm.nop(),                     # 24
        asm.nop(),                     # 28
        asm.sync_tile(),               # 32
        asm.csrr(10, Csr.CYCLE),       # 36
        asm.ecall(),                   # 40
    ]
    # context c's i-th instruction issues at 6i + c (no stalls before the barrier):
    #   c0: ecall i=2 -> 12, HALTED visible 17
    #   c1, c2, c4, c5: pcs 0,4,12,16,32 -> sync at i=4: 25, 26, 28, 29 (visible 30..34)
    #   c3: pcs 0,4,12,16,20,24,28,32 -> sync i=7 at 45, visible 50 -> release k=50,
    #   RUNNING from 51; next slots: c3 51, c4 52, c5 53, c1 55, c2 56 -> csrr;
    #   ecalls c3 57, c4 58, c5 59, c1 61, c2 62 -> all HALTED from 67 -> cycles 67 + 2 = 69
    arr = make(cfg, prog)
    res = arr.run(1000)
    assert res.status == "halted" and res.cycles == 69
    assert [reg(arr, 0, c, 10) for c in (1, 2, 3, 4, 5)] == [55, 56, 51, 52, 53]
    cnt = res.tiles[0].counters
    # sync only at cycle 50 (the others wait from 30..34, c3 runs until 50); halted 67, 68
    assert (cnt["compute"], cnt["sync"], cnt["halted"]) == (66, 1, 2)


def array_prog():
    return [asm.sync_array(), asm.csrr(10, Csr.CYCLE), asm.ecall()]


@pytest.mark.parametrize("N", [1, 2, 4, 5, 16])
def test_array_barrier_timing(N):
    cfg = ArrayConfig(tiles=N, contexts=6, sram_bytes=SRAM)
    D = {1: 2, 2: 3, 4: 4, 5: 5, 16: 6}[N]        # ceil(log2 N) + 2
    assert cfg.sync_latency == cfg.decision_latency == D
    # last sync ARRAY at t=5: k* = t+5 = 10, r = 10 + D, e = r (xprog = 0), RUNNING from r+1.
    # slots after: csrr at r+1..r+6, ecall at r+7..r+12: all HALTED from v = r+17,
    # cycles = v + D = r + 17 + D.
    arr = make(cfg, array_prog())
    res = arr.run(1000)
    r = 10 + D
    exp = {}
    for k in range(r + 1, r + 7):
        exp[k % 6] = k
    assert res.status == "halted" and res.cycles == r + 17 + D
    for t in range(N):
        assert [reg(arr, t, c, 10) for c in range(6)] == [exp[c] for c in range(6)]
        cnt = res.tiles[t].counters
        # compute: 0..9 and r+1..r+16; sync 10..r-1; exchange r; halted r+17..cycles-1
        assert cnt["sync"] == D and cnt["exchange"] == 1 and cnt["halted"] == D
        assert cnt["compute"] == 10 + 16
    check_counter_sum(res)


def test_array_barrier_staggered_and_halted_tile():
    cfg = ArrayConfig(tiles=3, contexts=6, sram_bytes=SRAM)   # D = 2 + 2 = 4
    late = [asm.nop()] * 5 + array_prog()     # sync at i=5: c5 at 35, visible 40
    arr = make(cfg, array_prog(), per_tile={1: late, 2: [asm.ecall()]})
    res = arr.run(1000)
    # tile 2 all halted from 10; tile 0 waiting from 10; tile 1 arrives at 40 = k*
    # r = 44, RUNNING from 45: c3 at 45, c4 46, c5 47, c0 48, c1 49, c2 50; ecalls 51..56;
    # all HALTED from 61 -> cycles 61 + 4 = 65
    assert res.status == "halted" and res.cycles == 65
    for t in (0, 1):
        assert [reg(arr, t, c, 10) for c in range(6)] == [48, 49, 50, 45, 46, 47]
    c0, c1, c2 = (res.tiles[i].counters for i in range(3))
    # tile 0: compute 0..9 and 45..60, sync 10..43, exchange 44, halted 61..64
    assert (c0["compute"], c0["sync"], c0["exchange"], c0["halted"]) == (10 + 16, 34, 1, 4)
    # tile 1: compute 0..39 and 45..60, sync 40..43
    assert (c1["compute"], c1["sync"], c1["exchange"], c1["halted"]) == (40 + 16, 4, 1, 4)
    # halted tile: compute 0..9, halted 10..43 and 45..64, exchange at 44 (it runs its phase)
    assert (c2["compute"], c2["halted"], c2["exchange"], c2["sync"]) == (10, 34 + 20, 1, 0)
    check_counter_sum(res)


def test_two_consecutive_array_barriers():
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM)   # D = 3
    prog = [asm.sync_array(), asm.sync_array(), asm.csrr(10, Csr.CYCLE), asm.ecall()]
    # 1st: k* = 10, r = 13, RUNNING from 14: second syncs c2 at 14, c3 15, c4 16, c5 17,
    # c0 18, c1 19
    # 2nd: last at 19 -> k* = 24, r = 27, RUNNING from 28: c4 28, c5 29, c0 30, c1 31, c2 32,
    # c3 33; ecalls 34..39 -> all HALTED from 44 -> cycles 47
    arr = make(cfg, prog)
    res = arr.run(1000)
    assert [reg(arr, 0, c, 10) for c in range(6)] == [30, 31, 32, 33, 28, 29]
    assert res.cycles == 47
    assert res.tiles[0].counters["exchange"] == 2
    assert res.tiles[0].counters["sync"] == 3 + 3      # 10..12 and 24..26


def test_deadlock_timeout_states_and_not_arrived():
    cfg = ArrayConfig(tiles=3, contexts=6, sram_bytes=SRAM)
    # tile 0: all sync ARRAY (arrived); tile 1: context 0 sync TILE, others sync ARRAY
    # (deadlock); tile 2: spins.
    t1 = [asm.csrr(5, Csr.CONTEXT_ID), asm.beq(5, 0, 8), asm.sync_array(), asm.sync_tile()]
    arr = make(cfg, [asm.sync_array(), asm.ecall()], per_tile={1: t1, 2: [asm.j(0)]})
    res = arr.run(200)
    assert res.status == "timeout" and res.cycles == 200
    assert res.not_arrived == [1, 2]
    st = [[c.state for c in t.contexts] for t in res.tiles]
    assert st[0] == [ContextState.WAIT_ARRAY] * 6
    assert st[1][0] == ContextState.WAIT_TILE and st[1][1:] == [ContextState.WAIT_ARRAY] * 5
    assert st[2] == [ContextState.RUNNING] * 6
    check_counter_sum(res)
    # tile 0: the last sync ARRAY (context 5 at 5) is visible from 10: sync 10..199
    assert res.tiles[0].counters["sync"] == 200 - 10


def test_timeout_without_arrivals_has_empty_not_arrived():
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM)
    arr = make(cfg, [asm.sync_tile(), asm.j(0)], per_tile={1: [asm.j(0)]})
    res = arr.run(50)
    assert res.status == "timeout" and res.not_arrived == []


def test_pending_state_is_in_final_state_at_timeout():
    # context 0 issues sync TILE at 0 (visible from 5); the run stops after cycle 0: the
    # final state (§7: every already-decided change) is WAIT_TILE
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM)
    arr = make(cfg, [asm.sync_tile()])
    res = arr.run(1)
    assert res.tiles[0].contexts[0].state == ContextState.WAIT_TILE
    assert res.tiles[0].contexts[0].pc == 4
    assert res.tiles[0].contexts[1].state == ContextState.RUNNING
    assert res.tiles[0].counters["compute"] == 1


def test_halt_stop_window_cut_by_max_cycles_is_a_timeout():
    # 1 tile, T = 6, D = 2: ecall at once, context 5's at 5 -> all HALTED from v = 10,
    # t_s = v + D - 1 = 11. max_cycles = 11 <= t_s: §7 "Timeout" (no fault recorded):
    # status timeout, cycles 11, every context HALTED in the final state.
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM)
    arr = make(cfg, [asm.ecall()])
    res = arr.run(11)
    assert res.status == "timeout" and res.cycles == 11
    assert all(c.state == ContextState.HALTED for c in res.tiles[0].contexts)
    # continued: the stop decided at v = 10 acts at 12 -> halted, cycles = 12
    res = arr.run(100)
    assert res.status == "halted" and res.cycles == 12
    # max_cycles = t_s + 1 = 12 exactly: the stop, not a timeout
    arr = make(cfg, [asm.ecall()])
    res = arr.run(12)
    assert res.status == "halted" and res.cycles == 12
