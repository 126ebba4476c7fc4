"""Golden model: self-modifying code across contexts (docs/architecture.md §4, contract v2: the
fetch of an instruction issued at t sees the stores issued at <= t-5 (their M is at <= t-1),
not a store issued at t-4 or later)."""

from tessera.golden_model import Array
from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr


def test_fetch_sees_stores_issued_five_cycles_before_not_four():
    new = asm.addi(6, 0, 7)
    prog = [
        asm.csrr(7, Csr.CONTEXT_ID),    # 0
        *asm.li(5, new),                # 4, 8 (lui + addi)
        asm.bne(7, 0, 8),               # 12: contexts 1..5 -> 20
        asm.sw(5, 20, 0),               # 16: context 0, 5th instruction: issue cycle 4T = 24
        asm.addi(6, 0, 1),              # 20: replaced by `new`
        asm.ecall(),                    # 24
    ]
    assert len(asm.li(5, new)) == 2
    arr = Array(ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024), trace=True)
    arr.write_mem(None, 0, asm.program(prog))
    res = arr.run(1000)
    assert res.status == "halted"
    # T = 6: contexts 1..5 skip the store and fetch address 20 as their 5th instruction at
    # 4T + c = 24 + c; context 0 stores at 24 (M at 28) and fetches 20 at 5T = 30.
    # Fetch at t sees stores issued <= t-5: context c (fetch at 24 + c) sees the store
    # issued at 24 iff 24 <= 24 + c - 5, i.e. c >= 5. So contexts 1..4 (the store issued
    # 1..4 cycles before their fetch) run the old word, context 5 (5 cycles) and context 0 the
    # new one.
    for t in range(2):
        assert [int(arr.regs[t, c, 6]) for c in range(6)] == [7, 1, 1, 1, 1, 7]
    at20 = {r["context"]: r["insn"] for r in arr.trace if r["pc"] == 20 and r["tile"] == 0}
    old = asm.addi(6, 0, 1)
    assert at20 == {0: new, 1: old, 2: old, 3: old, 4: old, 5: new}


def test_own_store_then_fetch_next_slot_sees_it():
    # a context's store at t is visible to its own next fetch at t+T (>= t+6 > t+5)
    T = 6
    prog = [*asm.li(5, asm.addi(6, 0, 9)), asm.sw(5, 12, 0), asm.addi(6, 0, 2), asm.ecall()]
    arr = Array(ArrayConfig(tiles=1, contexts=T, sram_bytes=16 * 1024))
    arr.write_mem(None, 0, asm.program(prog))
    assert arr.run(1000).status == "halted"
    assert [int(arr.regs[0, c, 6]) for c in range(T)] == [9] * T
