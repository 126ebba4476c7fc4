"""The v2 core against the v2 golden model, one tile: seeded random programs
(tessera/tb/randprog.py: every RV32IM class, loads/stores, branches, CSRs, dot4, divisions,
planted faults) run on the core harness of tests/helpers/core_harness.py (the array controller
of docs/architecture.md for N = 1) and on :class:`tessera.golden_model.Array`, written
independently from the same contract text. Everything the host can read is compared: status,
cycles, the tile counters, the fault record, every context's state / pc / retired / registers,
and the data windows of the SRAM.
"""

import pytest

from tessera import golden_model
from tessera.spec.config import ArrayConfig
from tessera.spec.faults import FaultCause
from tessera.tb import randprog

from helpers.core_harness import run_program

#: one tile without a matrix engine (the harness has none), T = 6 and 8, 16 KiB
CONFIGS = {"T6": ArrayConfig(tiles=1, contexts=6, sram_bytes=16384, engine_macs=0),
           "T8": ArrayConfig(tiles=1, contexts=8, sram_bytes=16384, engine_macs=0)}


def _image(prog):
    data = {}
    for tile, addr, blob in prog.segments:
        assert tile in (0, None)
        blob = bytes(blob) + b"\0" * (-len(blob) % 4)
        for k in range(0, len(blob), 4):
            data[addr + k] = int.from_bytes(blob[k:k + 4], "little")
    return data


def _compare(cfg, prog, max_cycles):
    data = _image(prog)
    words = range(0, cfg.sram_bytes, 4)
    got = run_program([], config=cfg, data=data, max_cycles=max_cycles, read_mem=words)
    m = golden_model.Array(cfg)
    for addr, word in data.items():
        m.write_mem(0, addr, word.to_bytes(4, "little"))
    m.start(prog.entry)
    exp = m.run(max_cycles).to_json()
    t = exp["tiles"][0]
    assert (got.status, got.cycles) == (exp["status"], exp["cycles"])
    c = got.counters
    assert {"compute": c["compute"], "sync": c["sync"], "exchange": c["exchange"],
            "halted": c["halted"], "retired": c["retired_tile"], "macs": c["macs"]} == \
        {k: t["counters"][k] for k in ("compute", "sync", "exchange", "halted", "retired",
                                       "macs")}
    fault = None if got.fault is None else {
        "context": got.fault[0], "cause": FaultCause(got.fault[1]).label, "pc": got.fault[2],
        "addr": got.fault[3]}
    assert fault == t["fault"]
    for ctx, e in enumerate(t["contexts"]):
        assert (got.states[ctx].label, got.pcs[ctx], got.retired[ctx], got.regs[ctx]) == \
            (e["state"], e["pc"], e["retired"], e["regs"]), f"context {ctx}"
    mem = [int.from_bytes(m.read_mem(0, a, 4), "little") for a in words]
    assert [got.mem[a] for a in words] == mem
    return got


@pytest.mark.parametrize("cfg", list(CONFIGS.values()), ids=list(CONFIGS))
@pytest.mark.parametrize("seed", [1, 2])
def test_random_programs_match_the_golden_model(cfg, seed):
    prog = randprog.generate(cfg, seed, total=600)
    got = _compare(cfg, prog, prog.max_cycles)
    assert got.status == "halted"


@pytest.mark.parametrize("kind", sorted(randprog.FAULT_KINDS))
def test_planted_faults_match_the_golden_model(kind):
    cfg = CONFIGS["T6"]
    prog = randprog.generate(cfg, 7, total=300, fault=kind)
    got = _compare(cfg, prog, prog.max_cycles)
    assert got.status == "fault" and got.fault[1] == randprog.FAULT_KINDS[kind]


@pytest.mark.parametrize("cut", [97, 240])
def test_timeout_cut_matches_the_golden_model(cut):
    # a run cut by max_cycles in the middle (instructions in flight complete, §7 "Timeout")
    cfg = CONFIGS["T6"]
    prog = randprog.generate(cfg, 3, total=600)
    got = _compare(cfg, prog, cut)
    assert got.status == "timeout" and got.cycles == cut


def _hand_programs():
    from tessera.spec.csr import Csr
    from tessera.toolchain import asm
    sync_tile = [asm.csrr("a1", Csr.CONTEXT_ID), asm.bne("a1", "zero", 8),
                 asm.addi("a2", "zero", 5), asm.sync_tile(), asm.csrr("a0", Csr.CYCLE),
                 asm.ecall()]
    two_barriers = [asm.sync_array(), asm.sync_array(), asm.csrr("a0", Csr.CYCLE), asm.ecall()]
    tile_and_array = [asm.csrr("a1", Csr.CONTEXT_ID), asm.bne("a1", "zero", 12),
                      asm.sync_array(), asm.ecall(), asm.sync_tile(), asm.ecall()]
    selfmod = [asm.csrr("a1", Csr.CONTEXT_ID), asm.bne("a1", "zero", 12),
               asm.lw("a2", 0x100, "zero"), asm.sw("a2", 20, "zero"), asm.nop(),
               asm.addi("a0", "zero", 1), asm.ecall()]
    stack = [asm.csrr("a1", Csr.CONTEXT_ID), asm.addi("a2", "zero", 0x400),
             asm.csrrw("zero", Csr.STACK_LIMIT, "a2"), asm.addi("sp", "zero", 0x500),
             asm.slli("a3", "a1", 7), asm.sub("sp", "sp", "a3"), asm.ecall()]
    division = [asm.addi(11, 0, -7), asm.addi(12, 0, 2), asm.div(10, 11, 12),
                asm.rem(13, 11, 12), asm.ecall()]
    return {"sync_tile": (sync_tile, {}), "two_array_barriers": (two_barriers, {}),
            "tile_and_array_deadlock": (tile_and_array, {}),
            "fetch_sees_stores_5_earlier": (selfmod, {0x100: asm.addi("a0", "zero", 42)}),
            "stack_limit": (stack, {}), "division": (division, {})}


@pytest.mark.parametrize("name", list(_hand_programs()))
def test_hand_programs_match_the_golden_model(name):
    # the programs of tests/test_hdl_core.py's hand derivations (and a stack-limit case: ctx
    # c moves sp to 0x500 - 128c, below the limit 0x400 for c >= 3), run against the model
    from types import SimpleNamespace
    from helpers.core_harness import flatten
    words, data = _hand_programs()[name]
    image = {4 * i: w for i, w in enumerate(flatten(words))}
    image.update(data)
    prog = SimpleNamespace(entry=0, segments=[(0, a, w.to_bytes(4, "little"))
                                              for a, w in sorted(image.items())])
    _compare(CONFIGS["T6"], prog, 200)


def _stack_limit_source_programs():
    """A stack-limit check (§7) of each result source the core selects in M: sp written by
    MUL, by DIV in its last turn, by dot4 and by a read of xprog, in every context, with
    ctx-dependent values so that the first contexts pass and a later one faults.

    Expected fault records, by hand (stack_limit L, the value v written to sp; the run stops
    at the first fault in issue order, §7):

    * MUL: L = 0x400, v = (5 − c) · 0x100: 0x500, 0x400 pass (not below), c = 2 faults with
      v = 0x300; pc of the MUL = 6 · 4.
    * DIV: L = 0x400, v = 0x1000 / (c + 1): 4096, 2048, 1365, 1024 pass, c = 4 faults with
      v = 819 = 0x333 (all divisions run side by side, their last turns in context order);
      pc = 6 · 4.
    * dot4: sp = 0x3F0 before the limit is set, L = 0x400, v = 0x3F0 + (5 − c) · 8: 0x418,
      0x410, 0x408, 0x400 pass, c = 4 faults with 0x3F8; pc = 7 · 4.
    * xprog: xprog = 0x300 (every context writes it), L = 0x200 + 0x40 · c, then
      ``csrrw sp, xprog, a5`` with a5 = (c + 1) · 0x100: context c reads xprog in M (§3.2),
      the value context c − 1 wrote in the cycle before (its M); context 0 reads 0x300 and
      passes (L = 0x200), context 1 reads 0x100 < 0x240 and faults; pc = 8 · 4. (A check of
      the value read in X, 0x300, would let context 1 pass.)
    """
    from tessera.spec.csr import Csr
    from tessera.toolchain import asm
    ctx = asm.csrr("a1", Csr.CONTEXT_ID)
    limit = [asm.addi("a2", "zero", 0x400), asm.csrrw("zero", Csr.STACK_LIMIT, "a2")]
    mul = [ctx, *limit, asm.addi("a3", "zero", 5), asm.sub("a3", "a3", "a1"),
           asm.addi("a4", "zero", 0x100), asm.mul("sp", "a3", "a4"), asm.ecall()]
    div = [ctx, *limit, asm.addi("a3", "a1", 1), asm.addi("a5", "zero", 1),
           asm.slli("a5", "a5", 12), asm.div("sp", "a5", "a3"), asm.ecall()]
    dot4 = [ctx, asm.addi("sp", "zero", 0x3F0), *limit, asm.addi("a3", "zero", 5),
            asm.sub("a3", "a3", "a1"), asm.addi("a4", "zero", 8), asm.dot4("sp", "a3", "a4"),
            asm.ecall()]
    xprog = [ctx, asm.addi("a5", "zero", 0x300), asm.csrrw("zero", Csr.XPROG, "a5"),
             asm.slli("a3", "a1", 6), asm.addi("a2", "a3", 0x200),
             asm.csrrw("zero", Csr.STACK_LIMIT, "a2"), asm.addi("a5", "a1", 1),
             asm.slli("a5", "a5", 8), asm.csrrw("sp", Csr.XPROG, "a5"), asm.ecall()]
    return {"mul": (mul, (2, 6 * 4, 0x300)), "div": (div, (4, 6 * 4, 0x333)),
            "dot4": (dot4, (4, 7 * 4, 0x3F8)), "xprog": (xprog, (1, 8 * 4, 0x100))}


@pytest.mark.parametrize("source", list(_stack_limit_source_programs()))
def test_stack_limit_of_every_result_source(source):
    from types import SimpleNamespace
    from helpers.core_harness import flatten
    words, (ctx, pc, addr) = _stack_limit_source_programs()[source]
    image = {4 * i: w for i, w in enumerate(flatten(words))}
    prog = SimpleNamespace(entry=0, segments=[(0, a, w.to_bytes(4, "little"))
                                              for a, w in sorted(image.items())])
    got = _compare(CONFIGS["T6"], prog, 400)
    assert got.status == "fault"
    assert (got.fault[0], FaultCause(got.fault[1]), got.fault[2], got.fault[3]) == \
        (ctx, FaultCause.STACK_OVERFLOW, pc, addr)
