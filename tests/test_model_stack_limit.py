"""Golden model (both engines) and RTL: the stack_limit CSR and the stack_overflow fault
(docs/architecture.md §3.2 and §7 "Stack limit"). Every expected value is derived by hand
from the contract text in the comments; T = 6 contexts on one tile, so context c issues at
cycles t ≡ c (mod 6) and its n-th instruction (n = 0, 1, ...) at t = 6n + c. Contract v2: a
fault of an instruction issued at t is visible from v = t + 5; the run ends with cycles =
v + D, D(1 tile) = 2, and every instruction issued at <= t_s = v + 1 takes effect (faults
among them are recorded; the tile keeps the first visible)."""

from types import SimpleNamespace

import pytest

from tessera.golden_model import Array
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState, RunStatus
from tessera.toolchain import asm

CFG = ArrayConfig(tiles=1, contexts=6, sram_bytes=16 * 1024)
SP, T5, T6 = 2, 5, 6
LIMIT = 0x3000

ENGINES = ("vector", "fast")


PROGRAMS = {}   # test name -> words, for the RTL test at the end


def run(words, engine, max_cycles=10_000):
    arr = Array(CFG, engine=engine)
    arr.write_mem(None, 0, asm.program(words))
    arr.start(0)
    return arr, arr.run(max_cycles)


def fault_of(res):
    f = res.tiles[0].fault
    return None if f is None else (f.context, FaultCause(f.cause), f.pc, f.addr)


def prologue(limit=LIMIT, sp=0x4000):
    """pc 0: lui t5, limit>>12; pc 4: csrw stack_limit, t5; pc 8: lui sp, sp>>12."""
    return [asm.lui(T5, limit >> 12), asm.csrw(Csr.STACK_LIMIT, T5), asm.lui(SP, sp >> 12)]


@pytest.mark.parametrize("engine", ENGINES)
def test_addi_below_the_limit_faults(engine):
    # pc 12: sp = 0x4000 - 0x800 = 0x3800 (allowed); pc 16: sp - 0x800 = 0x3000 = limit
    # (allowed: only a value *below* the limit faults); pc 20: 0x3000 - 16 = 0x2FF0 < 0x3000.
    # Context 0 issues pc 20 (its 6th instruction, n = 5) at t = 30: visible from 35,
    # t_s = 36, cycles = 37; contexts 1..5 issue the same pc 20 at 31..35 <= t_s and fault
    # too (the record stays context 0's, visible first); context 0 is FAULT from 35.
    words = prologue() + [asm.addi(SP, SP, -0x800), asm.addi(SP, SP, -0x800),
                          asm.addi(SP, SP, -16), asm.ecall()]
    arr, res = run(words, engine)
    assert res.status == RunStatus.FAULT and res.cycles == 37
    assert fault_of(res) == (0, FaultCause.STACK_OVERFLOW, 20, 0x2FF0)
    c0 = res.tiles[0].contexts[0]
    assert (c0.state, c0.pc, c0.regs[SP]) == (ContextState.FAULT, 20, 0x3000)
    assert c0.retired == 5                               # pc 0..16 retired, pc 20 did not
    for c in range(1, 6):
        ctx = res.tiles[0].contexts[c]
        assert (ctx.state, ctx.pc, ctx.regs[SP]) == (ContextState.FAULT, 20, 0x3000)
        assert ctx.retired == 5


@pytest.mark.parametrize("engine", ENGINES)
def test_limit_is_per_context(engine):
    # Every context sets its own limit, context_id << 11 (pc 0: csrr t6, context_id; pc 4:
    # slli t6, t6, 11; pc 8: csrw stack_limit, t6): limits 0, 0x800, 0x1000, 0x1800, 0x2000,
    # 0x2800 (per context, §3.2). pc 12 (n = 3, t = 18 + c): lui sp, 2 (0x2000): below
    # context 5's limit: it faults at 23 (visible 28). pc 16 (n = 4, t = 24 + c): addi sp, sp,
    # -0x7FF (0x1801): below context 4's limit 0x2000: it faults at 28 (<= t_s, recorded
    # behind context 5's). Stop: v = 28, t_s = 29, cycles = 30. pc 20 (n = 5) would issue at
    # 30 + c > t_s: contexts 0..3 end with sp = 0x1801, pc 20 (context 3's fault of v1, at
    # pc 20, is never reached).
    words = [asm.csrr(T6, Csr.CONTEXT_ID), asm.slli(T6, T6, 11), asm.csrw(Csr.STACK_LIMIT, T6),
             asm.lui(SP, 2), asm.addi(SP, SP, -0x7FF), asm.addi(SP, SP, -2), asm.ecall()]
    arr, res = run(words, engine)
    assert res.cycles == 30
    assert fault_of(res) == (5, FaultCause.STACK_OVERFLOW, 12, 0x2000)
    ctxs = res.tiles[0].contexts
    assert [c.regs[SP] for c in ctxs] == [0x1801] * 4 + [0x2000, 0]
    assert [c.pc for c in ctxs] == [20] * 4 + [16, 12]
    assert [c.state for c in ctxs] == [ContextState.RUNNING] * 4 + [ContextState.FAULT] * 2


@pytest.mark.parametrize("engine", ENGINES)
def test_csr_read_jal_and_loads(engine):
    # pc 12: csrrw sp, stack_limit, t6 with t6 = 0 (x6 is 0): sp gets the old limit 0x3000,
    # compared with the limit *before* the instruction (0x3000): allowed; the limit is now 0.
    # pc 16: lui t5, 3 again; pc 20: csrw stack_limit, t5 (0x3000 again).
    # pc 24: sw t5, 0x100(x0) (stores 0x3000 at 0x100); pc 28: lui t6, 2 (0x2000);
    # pc 32: sw t6, 0x104(x0); pc 36: lw sp, 0x104(x0): a load: not checked, sp = 0x2000.
    # pc 40: jal sp, 8: link value pc + 4 = 44 < 0x3000: faults, addr = 44, the jump is not
    # taken. Context 0's 11th instruction (n = 10): t = 60, visible 65, cycles = 65 + 2 = 67
    # (contexts 1..5 fault on the same jal at 61..65 <= t_s = 66; the record is context 0's).
    words = prologue() + [asm.csrrw(SP, Csr.STACK_LIMIT, T6), asm.lui(T5, LIMIT >> 12),
                          asm.csrw(Csr.STACK_LIMIT, T5), asm.sw(T5, 0x100, 0),
                          asm.lui(T6, 2), asm.sw(T6, 0x104, 0), asm.lw(SP, 0x104, 0),
                          asm.jal(SP, 8), asm.ecall(), asm.ecall()]
    arr, res = run(words, engine)
    assert fault_of(res) == (0, FaultCause.STACK_OVERFLOW, 40, 44)
    assert res.cycles == 67
    c0 = res.tiles[0].contexts[0]
    assert (c0.pc, c0.regs[SP]) == (40, 0x2000)


@pytest.mark.parametrize("engine", ENGINES)
def test_other_checks_come_first(engine):
    # pc 12: jal sp, 6: misaligned target 18 (§3.1) is checked before the stack limit.
    words = prologue() + [asm.jal(SP, 6), asm.ecall()]
    arr, res = run(words, engine)
    assert fault_of(res) == (0, FaultCause.MISALIGNED_FETCH, 12, 18)


@pytest.mark.parametrize("engine", ENGINES)
def test_division_faults_in_its_last_turn(engine):
    # pc 12: addi t6, x0, 2; pc 16: lui t5, 4 (0x4000); pc 20: divu sp, t5, t6 = 0x2000 <
    # 0x3000. Context 0 issues the division first at t = 30 (n = 5); it executes in its
    # DIV_TURNS = 10th turn, at t = 30 + 9·6 = 84, and faults there: visible 89,
    # cycles = 89 + 2 = 91.
    words = prologue() + [asm.addi(T6, 0, 2), asm.lui(T5, 4), asm.divu(SP, T5, T6), asm.ecall()]
    arr, res = run(words, engine)
    assert fault_of(res) == (0, FaultCause.STACK_OVERFLOW, 20, 0x2000)
    assert res.cycles == 91
    assert res.tiles[0].contexts[0].regs[SP] == 0x4000


PROGRAMS.update({
    "per_context": [asm.csrr(T6, Csr.CONTEXT_ID), asm.slli(T6, T6, 11),
                    asm.csrw(Csr.STACK_LIMIT, T6), asm.lui(SP, 2), asm.addi(SP, SP, -0x7FF),
                    asm.addi(SP, SP, -2), asm.ecall()],
    "addi": prologue() + [asm.addi(SP, SP, -0x800), asm.addi(SP, SP, -0x800),
                          asm.addi(SP, SP, -16), asm.ecall()],
    "csr_jal_load": prologue() + [asm.csrrw(SP, Csr.STACK_LIMIT, T6), asm.lui(T5, LIMIT >> 12),
                                  asm.csrw(Csr.STACK_LIMIT, T5), asm.sw(T5, 0x100, 0),
                                  asm.lui(T6, 2), asm.sw(T6, 0x104, 0), asm.lw(SP, 0x104, 0),
                                  asm.jal(SP, 8), asm.ecall(), asm.ecall()],
    "order": prologue() + [asm.jal(SP, 6), asm.ecall()],
    "division": prologue() + [asm.addi(T6, 0, 2), asm.lui(T5, 4), asm.divu(SP, T5, T6),
                              asm.ecall()],
    # no fault: the limit allows every value (a limit of 0 after start, and sp = limit)
    "clean": prologue(limit=0x1000) + [asm.lui(SP, 1), asm.addi(SP, SP, 16), asm.ecall()],
})


@pytest.mark.rtl
def test_rtl_equals_the_model():
    """The RTL gives the same JSON result as both model engines for every program above
    (whose model results the tests above check against hand-derived values)."""
    from tessera.backends import run_program
    for name, words in PROGRAMS.items():
        image = SimpleNamespace(entry=0, segments=[SimpleNamespace(addr=0,
                                                                   data=asm.program(words))])
        rtl = run_program("rtl", CFG, image, 10_000).to_json()
        rtl.pop("backend", None)
        for engine in ENGINES:
            model = run(words, engine)[1].to_json()
            model.pop("backend", None)
            assert rtl == model, (name, engine)


def test_amaranth_sim_equals_the_model():
    """The same programs on the array RTL in the Amaranth simulator (no Verilator build: cheap
    enough per RTL mutant of the core, scripts/mutants.py), compared with the golden model
    field by field (tests/helpers/hdl_parity.py: status, cycles, counters, fault record,
    every context's state / pc / retired / registers)."""
    from helpers.hdl_parity import compare
    for name, words in PROGRAMS.items():
        compare(CFG, [[(0, asm.program(words))]], 10_000, [(0x100, 0x108)])


@pytest.mark.parametrize("engine", ENGINES)
def test_overflow_on_one_tile_of_an_issue_group(engine):
    # test_addi_below_the_limit_faults on tile 0 of a 2-tile array (D = ceil(log2 2) + 2 = 3)
    # while tile 1 has the limit 0x1000: both tiles issue the same words in the same cycles
    # (one issue group), and only tile 0's addi at pc 20 (0x2FF0 < 0x3000) faults. Tile 0:
    # context 0's fault visible from 35, cycles = 35 + 3 = 38. Tile 1: every context issues
    # pc 20 at 30..35 <= t_s = 36 and keeps sp = 0x2FF0 (>= 0x1000: no fault).
    # (Kills golden-model mutant M012328: the pcs of the group were not filtered.)
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024)
    body = [asm.addi(SP, SP, -0x800), asm.addi(SP, SP, -0x800), asm.addi(SP, SP, -16),
            asm.ecall()]
    arr = Array(cfg, engine=engine)
    arr.write_mem(0, 0, asm.program(prologue() + body))
    arr.write_mem(1, 0, asm.program(prologue(limit=0x1000) + body))
    arr.start(0)
    res = arr.run(10_000)
    assert res.status == RunStatus.FAULT and res.cycles == 38
    assert fault_of(res) == (0, FaultCause.STACK_OVERFLOW, 20, 0x2FF0)
    assert res.tiles[0].contexts[0].regs[SP] == 0x3000
    assert res.tiles[1].fault is None
    assert [res.tiles[1].contexts[c].regs[SP] for c in range(6)] == [0x2FF0] * 6
