"""Unit tests of the core's combinational units (tessera/hdl/tile/core/*), Amaranth simulator.

Expected values come from small independent Python formulations of the RISC-V
Unprivileged spec / docs/architecture.md, written here (not from the RTL).
"""

import random

import pytest
from amaranth.sim import Simulator
from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from helpers.hdl_sim import simulate
from isa_contract import legal as contract_legal

from tessera.toolchain import asm
from tessera.spec.config import PRESETS, ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.isa import DIV_TURNS, Opcode, is_division

from tessera.hdl.tile.core.alu import Alu, BranchCmp
from tessera.hdl.tile.core.counter import SplitCounter
from tessera.hdl.tile.core.csr import CsrUnit
from tessera.hdl.tile.core.decoder import Decoder
from tessera.hdl.tile.core.dot4 import Dot4
from tessera.hdl.tile.core.lsu import LoadAlign, LsuAddr
from tessera.hdl.tile.core.divider import Divider
from tessera.hdl.tile.core.mul import Multiplier
from tessera.hdl.tile.core.shift import ShiftOperand

M32 = 0xFFFFFFFF


def s32(x):
    x &= M32
    return x - (1 << 32) if x >> 31 else x


def run_comb(dut, vectors, outputs):
    """Apply each input dict of ``vectors`` to ``dut``; return the list of output dicts."""
    results = []

    async def bench(ctx):
        for vec in vectors:
            for name, value in vec.items():
                ctx.set(getattr(dut, name), value)
            results.append({name: ctx.get(getattr(dut, name)) for name in outputs})

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return results


EDGE = [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0x12345678, 31, 32, 0x80000001]


def operand_pairs(n_random, seed):
    rng = random.Random(seed)
    pairs = [(a, b) for a in EDGE for b in EDGE]
    pairs += [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(n_random)]
    return pairs


# -- decoder ------------------------------------------------------------------------------

def ref_legal(w):
    """docs/architecture.md §3.1 legal-encoding table, written independently
    (tests/isa_contract.py; the Zicsr CSR check of §3.2 is the CSR unit's)."""
    return contract_legal(w, csr_rule=False)


def decoder_words():
    rng = random.Random(1)
    words = [0, 0xFFFFFFFF, 0x73, 0x100073, 0x200073, 0x10500073, 0x2B, 0x10002B, 0x20002B,
             0x12B, 0x8002B, 0x0000100F, 0x0FF0000F, asm.nop(), asm.ecall(), asm.ebreak()]
    interesting_f7 = [0, 1, 0x20, 0x21, 0x40, 0x7F]
    for op in list(Opcode) + [0x7B, 0x5B, 0x07, 0x27, 0x2F, 0x53]:
        for f3 in range(8):
            for f7 in interesting_f7:
                w = (f7 << 25 | rng.getrandbits(10) << 15 | f3 << 12
                     | rng.getrandbits(5) << 7 | int(op))
                words.append(w)
    # compressed-like words and random words
    words += [rng.getrandbits(32) & ~3 | rng.choice((0, 1, 2)) for _ in range(20)]
    words += [rng.getrandbits(32) for _ in range(100)]
    return words


def test_decoder_legal_table():
    words = decoder_words()
    out = run_comb(Decoder(), [{"insn": w} for w in words], ["legal"])
    bad = [(hex(w), o["legal"]) for w, o in zip(words, out) if bool(o["legal"]) != ref_legal(w)]
    assert not bad, f"legality mismatches: {bad[:10]}"
    assert sum(o["legal"] for o in out) > 200  # the sweep covers many legal words too


def ref_imm(w):
    op = w & 0x7F

    def sx(v, bits):
        return v - (1 << bits) if v >> (bits - 1) & 1 else v
    if op in (0x37, 0x17):
        return w & 0xFFFFF000
    if op == 0x6F:
        v = (w >> 31 & 1) << 20 | (w >> 12 & 0xFF) << 12 | (w >> 20 & 1) << 11 | (w >> 21 & 0x3FF) << 1
        return sx(v, 21) & M32
    if op == 0x63:
        v = (w >> 31 & 1) << 12 | (w >> 7 & 1) << 11 | (w >> 25 & 0x3F) << 5 | (w >> 8 & 0xF) << 1
        return sx(v, 13) & M32
    if op == 0x23:
        return sx((w >> 25) << 5 | (w >> 7 & 0x1F), 12) & M32
    return sx(w >> 20, 12) & M32


def test_decoder_immediates_and_classes():
    cases = [
        (asm.lui(5, 0xABCDE), "lui", 0xABCDE000),
        (asm.auipc(5, 0x80000), "auipc", 0x80000000),
        (asm.jal(1, -2048), "jal", s32(-2048) & M32),
        (asm.jal(1, 0xFFFFE), "jal", 0xFFFFE),
        (asm.jalr(1, 2, -1), "jalr", M32),
        (asm.beq(1, 2, -4096), "branch", (-4096) & M32),
        (asm.bgeu(1, 2, 4094), "branch", 4094),
        (asm.sw(3, -2048, 4), "store", (-2048) & M32),
        (asm.sb(3, 2047, 4), "store", 2047),
        (asm.lw(3, -1, 4), "load", M32),
        (asm.addi(1, 2, 0x7FF), "op_imm", 0x7FF),
        (asm.srai(1, 2, 31), "op_imm", 0x41F),
        (asm.add(1, 2, 3), "op", None),
        (asm.mulhsu(1, 2, 3), "muldiv", None),
        (asm.fence(), "fence", None),
        (asm.ecall(), "ecall", None),
        (asm.ebreak(), "ebreak", None),
        (asm.csrrwi(1, Csr.XPROG, 5), "csr", None),
        (asm.dot4su(1, 2, 3), "dot4", None),
        (asm.sync_array(), "sync", None),
    ]
    classes = ["lui", "auipc", "jal", "jalr", "branch", "load", "store", "op_imm", "op",
               "muldiv", "fence", "ecall", "ebreak", "csr", "dot4", "sync"]
    out = run_comb(Decoder(), [{"insn": w} for w, _, _ in cases],
                   ["imm", "legal", "rd", "rs1", "rs2", "alu_alt", "dot4_su", "sync_array"] + classes)
    for (w, cls, imm), o in zip(cases, out):
        assert o["legal"] == 1, hex(w)
        assert [c for c in classes if o[c]] == [cls], (hex(w), cls)
        if imm is not None:
            assert o["imm"] == imm, (hex(w), hex(o["imm"]), hex(imm))
            assert o["imm"] == ref_imm(w)
    assert out[11]["alu_alt"] == 1 and out[10]["alu_alt"] == 0      # srai / addi
    assert out[18]["dot4_su"] == 1 and out[19]["sync_array"] == 1
    assert (out[0]["rd"], out[12]["rs1"], out[12]["rs2"]) == (5, 2, 3)


def test_decoder_shift_flag():
    """``shift`` is set for the six RV32I shifts (§2.4) and for no other word of OP / OP-IMM
    with funct3 1 or 5 (MULH and DIVU share OP and those funct3 values)."""
    shifts = [asm.sll(1, 2, 3), asm.srl(1, 2, 3), asm.sra(1, 2, 3), asm.slli(1, 2, 0),
              asm.srli(1, 2, 31), asm.srai(1, 2, 7)]
    others = [asm.add(1, 2, 3), asm.sub(1, 2, 3), asm.xor(1, 2, 3), asm.addi(1, 2, 1),
              asm.mulh(1, 2, 3), asm.divu(1, 2, 3), asm.slt(1, 2, 3), asm.ori(1, 2, 5),
              asm.lw(1, 0, 2), asm.beq(1, 2, 8)]
    out = run_comb(Decoder(), [{"insn": w} for w in shifts + others], ["shift", "legal"])
    assert [o["shift"] for o in out] == [1] * len(shifts) + [0] * len(others)
    assert all(o["legal"] for o in out)


# -- ALU and branch compare -------------------------------------------------------------------

def ref_alu(f3, alt, a, b):
    sh = b & 31
    if f3 == 0:
        return (a - b if alt else a + b) & M32
    if f3 == 1:
        return (a << sh) & M32
    if f3 == 2:
        return int(s32(a) < s32(b))
    if f3 == 3:
        return int(a < b)
    if f3 == 4:
        return a ^ b
    if f3 == 5:
        return (s32(a) >> sh) & M32 if alt else a >> sh
    if f3 == 6:
        return a | b
    return a & b


def alu_vectors(n_random, seed):
    """ALU inputs: every operand pair with each funct3 in turn, bit 30 alternating for
    funct3 0 and 5."""
    vecs = []
    for i, (a, b) in enumerate(operand_pairs(n_random, seed)):
        f3 = i % 8
        alt = (i // 8) % 2 if f3 in (0, 5) else 0
        vecs.append({"a": a, "b": b, "funct3": f3, "alt": alt})
    return vecs


def test_alu():
    vecs = alu_vectors(60, 2)
    out = run_comb(Alu(), vecs, ["result"])
    for v, o in zip(vecs, out):
        assert o["result"] == ref_alu(v["funct3"], v["alt"], v["a"], v["b"]), v
    # hand-computed spot checks
    spot = [
        ({"a": 5, "b": 7, "funct3": 0, "alt": 1}, 0xFFFFFFFE),
        ({"a": 0x80000000, "b": 4, "funct3": 5, "alt": 1}, 0xF8000000),
        ({"a": 0x80000000, "b": 36, "funct3": 5, "alt": 0}, 0x08000000),  # shamt = 36 & 31 = 4
        ({"a": 0xFFFFFFFF, "b": 1, "funct3": 2, "alt": 0}, 1),           # -1 < 1
        ({"a": 0xFFFFFFFF, "b": 1, "funct3": 3, "alt": 0}, 0),
    ]
    out = run_comb(Alu(), [v for v, _ in spot], ["result"])
    assert [o["result"] for o in out] == [e for _, e in spot]


def test_alu_without_shifts():
    """``Alu(shifts=False)``: the same results for every funct3 but 1 and 5, which give 0."""
    vecs = alu_vectors(40, 5)
    out = run_comb(Alu(shifts=False), vecs, ["result"])
    for v, o in zip(vecs, out):
        f3 = v["funct3"]
        want = 0 if f3 in (1, 5) else ref_alu(f3, v["alt"], v["a"], v["b"])
        assert o["result"] == want, v


def test_shifts_on_the_multiplier():
    """:class:`ShiftOperand` feeding the :class:`Multiplier` computes SLL, SRL and SRA (RISC-V
    §2.4, ``ref_alu``) for every shift amount 0..31 and operands with either sign."""
    class Pair(wiring.Component):
        a: In(32)
        shamt: In(5)
        funct3: In(3)
        alt: In(1)
        result: Out(32)

        def elaborate(self, platform):
            m = Module()
            m.submodules.op = op = ShiftOperand()
            m.submodules.mul = mul = Multiplier()
            m.d.comb += [op.shamt.eq(self.shamt), op.funct3.eq(self.funct3),
                         op.alt.eq(self.alt), mul.a.eq(self.a), mul.b.eq(op.b),
                         mul.funct3.eq(op.mode), self.result.eq(mul.result)]
            return m

    rng = random.Random(7)
    operands = [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x80000001, 0x12345678, 0xFFFFFFF8] + \
        [rng.getrandbits(32) for _ in range(3)]
    ops = [(1, 0), (5, 0), (5, 1)]                 # SLL, SRL, SRA (funct3, bit 30)
    vecs = [{"a": a, "shamt": s, "funct3": f3, "alt": alt}
            for a in operands for s in range(32) for f3, alt in ops]
    got = [o["result"] for o in run_mul(vecs, Pair())]   # the result is in the next cycle (M)
    for v, g in zip(vecs, got):
        assert g == ref_alu(v["funct3"], v["alt"], v["a"], v["shamt"]), (v, hex(g))
    # hand-computed spot checks
    spot = {(0x80000000, 4, 5, 1): 0xF8000000, (0x80000000, 4, 5, 0): 0x08000000,
            (0xFFFFFFFF, 31, 1, 0): 0x80000000, (0xFFFFFFF8, 1, 5, 1): 0xFFFFFFFC,
            (0x12345678, 0, 5, 1): 0x12345678}
    for (a, sh, f3, alt), want in spot.items():
        assert got[vecs.index({"a": a, "shamt": sh, "funct3": f3, "alt": alt})] == want


def test_branch_compare():
    ref = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 4: lambda a, b: s32(a) < s32(b),
           5: lambda a, b: s32(a) >= s32(b), 6: lambda a, b: a < b, 7: lambda a, b: a >= b}
    vecs = []
    for i, (a, b) in enumerate(operand_pairs(30, 3)):
        vecs.append({"a": a, "b": b, "funct3": (0, 1, 4, 5, 6, 7)[i % 6]})
    out = run_comb(BranchCmp(), vecs, ["taken"])
    for v, o in zip(vecs, out):
        assert o["taken"] == int(ref[v["funct3"]](v["a"], v["b"])), v


# -- M extension --------------------------------------------------------------------------

def ref_muldiv(f3, a, b):
    sa, sb = s32(a), s32(b)
    if f3 == 0:
        return (a * b) & M32
    if f3 == 1:
        return ((sa * sb) >> 32) & M32
    if f3 == 2:
        return ((sa * b) >> 32) & M32
    if f3 == 3:
        return ((a * b) >> 32) & M32
    if f3 == 4:
        if b == 0:
            return M32
        if sa == -2**31 and sb == -1:
            return a
        q = abs(sa) // abs(sb)
        return (q if (sa < 0) == (sb < 0) else -q) & M32
    if f3 == 5:
        return M32 if b == 0 else a // b
    if f3 == 6:
        if b == 0:
            return a
        if sa == -2**31 and sb == -1:
            return 0
        r = abs(sa) % abs(sb)
        return (r if sa >= 0 else -r) & M32
    return a if b == 0 else a % b


def run_mul(vectors, dut=None):
    """The multiplier over X and M (contract v2, docs/design/contract-v2.md §1): operands
    applied in one cycle, ``result`` read in the next (``dut``: a :class:`Multiplier`, or
    another component with the inputs named in ``vectors`` and a ``result``)."""
    dut = Multiplier() if dut is None else dut
    results = []

    async def bench(ctx):
        for vec in vectors:
            for name, value in vec.items():
                ctx.set(getattr(dut, name), value)
            await ctx.tick()
            results.append({"result": ctx.get(dut.result)})

    simulate(dut, bench)
    return results


def test_multiplier_random_and_edges():
    vecs = []
    for a, b in operand_pairs(40, 4):
        for f3 in range(4):
            vecs.append({"a": a, "b": b, "funct3": f3})
    out = run_mul(vecs)
    bad = [(v, hex(o["result"])) for v, o in zip(vecs, out)
           if o["result"] != ref_muldiv(v["funct3"], v["a"], v["b"])]
    assert not bad, bad[:5]


def test_multiplier_by_hand():
    cases = [
        (0, 0xFFFFFFFF, 0xFFFFFFFF, 1), (1, 0xFFFFFFFF, 0xFFFFFFFF, 0),
        (3, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFE), (2, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
        (1, 0x80000000, 0x80000000, 0x40000000), (2, 0x80000000, 0x80000000, 0xC0000000),
    ]
    out = run_mul([{"funct3": f, "a": a, "b": b} for f, a, b, _ in cases])
    assert [o["result"] for o in out] == [e for *_, e in cases]


_DIV_ASM = {4: asm.div, 5: asm.divu, 6: asm.rem, 7: asm.remu}


def run_divider(T, streams):
    """Drive a Divider the way the v2 core does (docs/design/contract-v2.md §1): at cycle k
    context k mod T is in X (operands, word, ``last``/``result``), context (k+1) mod T in R
    (row read address) and the instruction that was in X at k-1 is in M (``m_issue``: it
    takes effect). ``streams[c]`` is a list of (word, a, b) that context c issues in order;
    an entry is issued again in each following turn until ``last`` (divisions) or once
    (other words). Returns per context the list of (word, turns, result)."""
    dut = Divider(ArrayConfig(tiles=1, contexts=T, sram_bytes=16 * 1024))
    out = [[] for _ in range(T)]

    async def bench(ctx):
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        ctx.set(dut.r_ctx, 0)
        await ctx.tick()
        pos = [0] * T
        turns = [0] * T
        k = 0
        issued = False          # an instruction was in X in the previous cycle
        while any(pos[c] < len(streams[c]) for c in range(T)) or issued:
            c = k % T
            ctx.set(dut.r_ctx, (k + 1) % T)
            ctx.set(dut.m_issue, issued)
            issued = False
            ctx.set(dut.x_ctx, c)
            if pos[c] < len(streams[c]):
                word, a, b = streams[c][pos[c]]
                is_div = is_division(word)
                issued = True
                ctx.set(dut.x_is_div, is_div)
                ctx.set(dut.x_insn, word)
                ctx.set(dut.a, a)
                ctx.set(dut.b, b)
                turns[c] += 1
                if not is_div or ctx.get(dut.last):
                    out[c].append((word, turns[c], ctx.get(dut.result) if is_div else None))
                    pos[c] += 1
                    turns[c] = 0
                assert turns[c] <= DIV_TURNS, f"context {c}: no last turn after {DIV_TURNS}"
            else:
                ctx.set(dut.x_is_div, 0)
            await ctx.tick()
            k += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return out


@pytest.mark.parametrize("T", [6, 8])
def test_divider_turns_and_results_interleaved(T):
    # every context runs its own mix of divisions; each takes exactly DIV_TURNS turns and
    # gives the RISC-V result (ref_muldiv: spec §7.2 and table 7.1, written independently)
    rng = random.Random(T)
    pairs = operand_pairs(12, T)
    streams = []
    for c in range(T):
        s = []
        for i, (a, b) in enumerate(pairs[c::T]):
            f3 = 4 + (i + c) % 4
            s.append((_DIV_ASM[f3](10, 11, 12), a, b))
            if rng.random() < 0.3:
                s.append((asm.addi(1, 1, 1), 0, 0))     # a non-division in between
        streams.append(s)
    out = run_divider(T, streams)
    for c in range(T):
        for (word, a, b), (w2, turns, result) in zip(streams[c], out[c]):
            assert w2 == word
            if is_division(word):
                f3 = (word >> 12) & 7
                assert turns == DIV_TURNS, (c, hex(word))
                assert result == ref_muldiv(f3, a, b), (c, f3, hex(a), hex(b), hex(result))


def test_divider_all_operations_on_edge_pairs_and_table_7_1():
    # every DIV/DIVU/REM/REMU on every pair of edge values (incl. -2^31 / -1, x / 0, divisor
    # and dividend -2^31), spread over 6 contexts; plus hand values of RISC-V table 7.1
    T = 6
    jobs = [(_DIV_ASM[f3](10, 11, 12), a, b) for a in EDGE for b in EDGE for f3 in range(4, 8)]
    streams = [jobs[c::T] for c in range(T)]
    out = run_divider(T, streams)
    for c in range(T):
        for (word, a, b), (_w, turns, result) in zip(streams[c], out[c]):
            f3 = (word >> 12) & 7
            assert turns == DIV_TURNS
            assert result == ref_muldiv(f3, a, b), (f3, hex(a), hex(b), hex(result))
    hand = [(4, 1234, 0, M32), (5, 1234, 0, M32), (6, 1234, 0, 1234), (7, 1234, 0, 1234),
            (4, 0x80000000, M32, 0x80000000), (6, 0x80000000, M32, 0),
            (5, 0x80000000, M32, 0), (7, 0x80000000, M32, 0x80000000),
            (4, (-7) & M32, 2, (-3) & M32), (6, (-7) & M32, 2, (-1) & M32),
            (4, 7, (-2) & M32, (-3) & M32), (6, 7, (-2) & M32, 1),
            (4, 5, 0x80000000, 0), (6, 5, 0x80000000, 5),
            (4, 0x80000000, 0x80000000, 1), (6, 0x80000000, 0x80000000, 0)]
    out = run_divider(6, [[(_DIV_ASM[f](10, 11, 12), a, b) for f, a, b, _ in hand]] + [[]] * 5)
    assert [r for _w, _t, r in out[0]] == [e for *_, e in hand]


def test_divider_restarts_when_the_word_changes():
    # turns 0..2 of DIVU, then the word becomes REMU (another context rewrote the code):
    # the REMU starts at turn 0 and needs its own DIV_TURNS turns (§4, "Division").
    T = 6
    dut = Divider(ArrayConfig(tiles=1, contexts=T, sram_bytes=16 * 1024))
    seen = []

    async def bench(ctx):
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        turn = 0
        for k in range(T * 20):
            c = k % T
            ctx.set(dut.r_ctx, (k + 1) % T)
            ctx.set(dut.m_issue, c == 1)        # context 0's turn of k-1 takes effect now
            ctx.set(dut.x_is_div, 1)
            ctx.set(dut.x_ctx, c)
            ctx.set(dut.a, 100)
            ctx.set(dut.b, 7)
            if c == 0:
                word = asm.divu(10, 11, 12) if turn < 3 else asm.remu(10, 11, 12)
                ctx.set(dut.x_insn, word)
                turn += 1
                if ctx.get(dut.last):
                    seen.append((turn, ctx.get(dut.result)))
                    break
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [(3 + DIV_TURNS, 100 % 7)]


# -- dot4 ------------------------------------------------------------------------------------

def ref_dot4(a, b, acc, su):
    total = acc
    for i in range(4):
        x = (a >> 8 * i) & 0xFF
        y = (b >> 8 * i) & 0xFF
        x = x - 256 if x >= 128 else x
        if not su:
            y = y - 256 if y >= 128 else y
        total += x * y
    return total & M32


def run_dot4(vectors):
    """dot4 over X and M (docs/rtl.md "Core pipeline"): ``a``, ``b``, ``su`` applied in one
    cycle, ``acc`` (the old rd, M) and ``result`` in the next; the next vector's X operands
    are applied in that same cycle, as in the pipeline."""
    dut = Dot4()
    results = []

    async def bench(ctx):
        prev = None
        for vec in vectors + [None]:
            if prev is not None:
                ctx.set(dut.acc, prev["acc"])
            if vec is not None:
                for name in ("a", "b", "su"):
                    ctx.set(getattr(dut, name), vec[name])
            if prev is not None:
                results.append({"result": ctx.get(dut.result)})
            prev = vec
            await ctx.tick()

    simulate(dut, bench)
    return results


def test_dot4():
    rng = random.Random(5)
    vecs = [
        {"a": 0x80808080, "b": 0x80808080, "acc": 0, "su": 0},   # 4 * 16384 = 65536
        {"a": 0x80808080, "b": 0xFFFFFFFF, "acc": 0, "su": 1},   # 4 * -128*255
        {"a": 0x01020304, "b": 0x05060708, "acc": 100, "su": 0}, # 4*8+3*7+2*6+1*5 + 100 = 170
        {"a": 0xFFFFFFFF, "b": 0x01010101, "acc": 0, "su": 0},   # -4
        {"a": 0x7F7F7F7F, "b": 0x7F7F7F7F, "acc": 0xFFFFFFFF, "su": 0},
    ]
    vecs += [{"a": rng.getrandbits(32), "b": rng.getrandbits(32), "acc": rng.getrandbits(32),
              "su": rng.getrandbits(1)} for _ in range(150)]
    out = run_dot4(vecs)
    assert out[0]["result"] == 65536
    assert out[1]["result"] == (4 * -128 * 255) & M32
    assert out[2]["result"] == 170
    assert out[3]["result"] == (-4) & M32
    for v, o in zip(vecs, out):
        assert o["result"] == ref_dot4(v["a"], v["b"], v["acc"], v["su"]), v


# -- LSU ---------------------------------------------------------------------------------------

def test_lsu_address_checks_and_store_lanes():
    cfg = PRESETS["tiny"]  # 16 KiB
    n = cfg.sram_bytes
    cases = [
        # base, offset, funct3, data -> addr, misaligned, out_of_range, mask, wdata
        (0x100, 3, 0, 0xAABBCCDD, 0x103, 0, 0, 0b1000, 0xDDDDDDDD),
        (0x100, 2, 1, 0xAABBCCDD, 0x102, 0, 0, 0b1100, 0xCCDDCCDD),
        (0x100, 1, 1, 0xAABBCCDD, 0x101, 1, 0, None, None),
        (0x100, 3, 1, 0xAABBCCDD, 0x103, 1, 0, None, None),
        (0x100, 2, 2, 0xAABBCCDD, 0x102, 1, 0, None, None),
        (0x100, 0, 2, 0xAABBCCDD, 0x100, 0, 0, 0b1111, 0xAABBCCDD),
        (n - 4, 0, 2, 1, n - 4, 0, 0, 0b1111, 1),
        (n - 4, 4, 2, 1, n, 0, 1, None, None),
        (n - 1, 0, 0, 1, n - 1, 0, 0, 0b1000, 0x01010101),
        (0, M32, 0, 1, M32, 0, 1, None, None),          # 0 + (-1) wraps to 0xFFFFFFFF
        (0, M32, 1, 1, M32, 1, 1, None, None),          # misaligned and out of range
        (0x10, (-0x10) & M32, 0, 7, 0, 0, 0, 0b0001, 0x07070707),
    ]
    vecs = [{"base": b, "offset": o, "funct3": f, "wdata_in": d} for b, o, f, d, *_ in cases]
    out = run_comb(LsuAddr(cfg), vecs, ["addr", "misaligned", "out_of_range", "mask", "wdata"])
    for c, o in zip(cases, out):
        _, _, _, _, addr, mis, oor, mask, wdata = c
        assert (o["addr"], o["misaligned"], o["out_of_range"]) == (addr, mis, oor), c
        if mask is not None:
            assert (o["mask"], o["wdata"]) == (mask, wdata), c


def test_load_align_extend():
    word = 0x8091A2F3  # bytes (lsb first): F3 A2 91 80
    cases = [
        (0, 0, 0xFFFFFFF3), (1, 0, 0xFFFFFFA2), (2, 0, 0xFFFFFF91), (3, 0, 0xFFFFFF80),
        (0, 4, 0xF3), (3, 4, 0x80),
        (0, 1, 0xFFFFA2F3), (2, 1, 0xFFFF8091), (0, 5, 0xA2F3), (2, 5, 0x8091),
        (0, 2, 0x8091A2F3),
    ]
    vecs = [{"word": word, "addr_lo": lo, "funct3": f} for lo, f, _ in cases]
    out = run_comb(LoadAlign(), vecs, ["value"])
    assert [o["value"] for o in out] == [e for *_, e in cases]
    out = run_comb(LoadAlign(), [{"word": 0x7F6F5F4F, "addr_lo": 1, "funct3": 0},
                                 {"word": 0x7F6F5F4F, "addr_lo": 2, "funct3": 1}], ["value"])
    assert [o["value"] for o in out] == [0x5F, 0x7F6F]


# -- CSR unit ------------------------------------------------------------------------------------

def test_csr_unit():
    cfg = PRESETS["small"]
    dut = CsrUnit(cfg, tile_id=3)
    base = {"cycle": 0x1_2345_6789, "instret": 0x2_0000_0007, "context": 5, "xprog": 0x40,
            "rs1_value": 0xF0, "slimit": 0x3000}
    cases = [
        # csr, funct3, rs1 field -> legal, rdata, xprog_we, wdata (slimit_we = 0)
        (Csr.CYCLE, 2, 0, 1, 0x23456789, 0, None),
        (Csr.CYCLEH, 2, 0, 1, 1, 0, None),
        (Csr.INSTRET, 6, 0, 1, 7, 0, None),       # csrrsi uimm = 0: read only
        (Csr.INSTRETH, 2, 0, 1, 2, 0, None),
        (Csr.TILE_ID, 2, 0, 1, 3, 0, None),
        (Csr.CONTEXT_ID, 2, 0, 1, 5, 0, None),
        (Csr.TILE_COUNT, 2, 0, 1, 4, 0, None),
        (Csr.CONTEXT_COUNT, 2, 0, 1, 6, 0, None),
        (Csr.SRAM_BYTES, 2, 0, 1, 65536, 0, None),
        (Csr.CYCLE, 1, 0, 0, None, 0, None),      # csrrw to RO (even rs1 = x0) -> illegal
        (Csr.CYCLE, 2, 1, 0, None, 0, None),      # csrrs with rs1 != x0 -> illegal
        (Csr.CYCLE, 7, 3, 0, None, 0, None),      # csrrci uimm != 0 -> illegal
        (Csr.CYCLE, 5, 0, 0, None, 0, None),      # csrrwi always writes -> illegal
        (0x123, 2, 0, 0, None, 0, None),          # unknown CSR
        (0xC01, 2, 0, 0, None, 0, None),          # time: not in Tessera's subset
        (Csr.XPROG, 1, 9, 1, 0x40, 1, 0xF0),      # csrrw  -> rs1 value
        (Csr.XPROG, 2, 9, 1, 0x40, 1, 0xF0 | 0x40),
        (Csr.XPROG, 3, 9, 1, 0x40, 1, 0x40 & ~0xF0 & M32),
        (Csr.XPROG, 5, 0x18, 1, 0x40, 1, 0x18),   # csrrwi
        (Csr.XPROG, 6, 0x3, 1, 0x40, 1, 0x43),
        (Csr.XPROG, 7, 0x0, 1, 0x40, 0, None),    # csrrci uimm 0: no write
        (Csr.XPROG, 3, 0, 1, 0x40, 0, None),      # csrrc rs1 = x0: no write
    ]
    vecs = [dict(base, csr=int(c), funct3=f, rs1=r) for c, f, r, *_ in cases]
    out = run_comb(dut, vecs, ["legal", "rdata", "xprog_we", "slimit_we", "wdata"])
    for c, o in zip(cases, out):
        _, _, _, legal, rdata, we, wdata = c
        assert o["legal"] == legal, c
        if rdata is not None:
            assert o["rdata"] == rdata, c
        assert o["xprog_we"] == we and o["slimit_we"] == 0, c
        if wdata is not None:
            assert o["wdata"] == wdata, c
    # stack_limit (0x801, per context, RW): the old value is the slimit input (0x3000)
    slim = [  # funct3, rs1 field -> slimit_we, wdata
        (1, 9, 1, 0xF0),                 # csrrw: rs1 value
        (2, 9, 1, 0x3000 | 0xF0),        # csrrs
        (3, 9, 1, 0x3000 & ~0xF0 & M32),  # csrrc
        (5, 0x10, 1, 0x10),              # csrrwi
        (2, 0, 0, None),                 # csrr (rs1 = x0): no write
    ]
    vecs = [dict(base, csr=int(Csr.STACK_LIMIT), funct3=f, rs1=r) for f, r, *_ in slim]
    out = run_comb(dut, vecs, ["legal", "rdata", "xprog_we", "slimit_we", "wdata"])
    for c, o in zip(slim, out):
        _, _, we, wdata = c
        assert (o["legal"], o["rdata"], o["xprog_we"], o["slimit_we"]) == (1, 0x3000, 0, we), c
        if wdata is not None:
            assert o["wdata"] == wdata, c


def test_unit_constructor_errors():
    with pytest.raises(TypeError, match="config"):
        LsuAddr("tiny")
    with pytest.raises(ValueError, match="tile_id"):
        CsrUnit(PRESETS["small"], tile_id=4)


# -- split counter (registered carry into the high half) ----------------------------------

def test_split_counter_counts_across_the_carry():
    # width 8, split 4, increments of 0..15: after each cycle's registered carry has settled
    # (one idle cycle), the value is the exact sum mod 256; with back-to-back increments the
    # high half lags by at most the one carry in flight.
    dut = SplitCounter(width=8, split=4, inc_width=4)
    rng = random.Random(5)
    incs = [rng.randrange(16) for _ in range(200)]
    seen = []

    async def bench(ctx):
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        total = 0
        for k, inc in enumerate(incs):
            ctx.set(dut.inc, inc)
            await ctx.tick()
            total += inc
            if k % 3 == 2:                      # every third cycle: one idle cycle
                ctx.set(dut.inc, 0)
                await ctx.tick()
                seen.append((ctx.get(dut.value), total % 256))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen and all(got == exp for got, exp in seen), seen[:5]


def test_split_counter_rejects_bad_widths():
    with pytest.raises(ValueError, match="split"):
        SplitCounter(width=8, split=8)
    with pytest.raises(ValueError, match="inc_width"):
        SplitCounter(width=8, split=4, inc_width=5)
