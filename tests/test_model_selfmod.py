"""Golden model: self-modifying code across contexts (docs/architecture.md §4: the fetch of an
instruction issued at t sees stores issued at <= t-2, not a store issued at t-1)."""

from tessera.golden_model import Array
from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr


def test_fetch_does_not_see_store_of_previous_cycle():
    new = asm.addi(6, 0, 7)
    prog = [
        asm.csrr(7, Csr.CONTEXT_ID),    # 0
        *asm.li(5, new),                # 4, 8 (lui + addi)
        asm.bne(7, 0, 8),               # 12: contexts 1..3 -> 20
        asm.sw(5, 20, 0),               # 16: context 0, 5th instruction: issue cycle 16
        asm.addi(6, 0, 1),              # 20: replaced by `new`
        asm.ecall(),                    # 24
    ]
    assert len(asm.li(5, new)) == 2
    arr = Array(ArrayConfig(tiles=2, contexts=4, sram_bytes=16 * 1024), trace=True)
    arr.write_mem(None, 0, asm.program(prog))
    res = arr.run(1000)
    assert res.status == "halted"
    # address 20 is fetched by context 1 at 17 (store at 16 = t-1: old word), context 2 at 18,
    # context 3 at 19 (store at t-2, t-3: new word), context 0 at 20.
    for t in range(2):
        assert [int(arr.regs[t, c, 6]) for c in range(4)] == [7, 1, 7, 7]
    at20 = {r["context"]: r["insn"] for r in arr.trace if r["pc"] == 20 and r["tile"] == 0}
    assert at20 == {0: new, 1: asm.addi(6, 0, 1), 2: new, 3: new}


def test_own_store_then_fetch_next_slot_sees_it():
    # a context's store at t is visible to its own next fetch at t+T (>= t+4)
    T = 4
    prog = [*asm.li(5, asm.addi(6, 0, 9)), asm.sw(5, 12, 0), asm.addi(6, 0, 2), asm.ecall()]
    arr = Array(ArrayConfig(tiles=1, contexts=T, sram_bytes=16 * 1024))
    arr.write_mem(None, 0, asm.program(prog))
    assert arr.run(1000).status == "halted"
    assert [int(arr.regs[0, c, 6]) for c in range(T)] == [9] * T
