"""The instruction table (tessera/spec/instructions.py) and what is derived from it.

* the table itself: rows are disjoint, every row is legal per an independent transcription of
  docs/architecture.md §3.1 (tests/isa_contract.py), the named funct3/funct7 bits used by
  the HDL units agree with the rows, the immediate layouts against hand-placed bits;
* the HDL decoder (+ CSR unit) against the golden-model decoder, Amaranth simulator, over every
  row and 100k seeded random words: same legality, same operation, same fields;
* the random-program generator covers every row of the kinds it generates;
* the other single-source constants: timing, retire-trace record, tsr_graph.h
  (that tessera.spec loads only the standard library: tests/test_layers.py).
"""

import random

import pytest
from amaranth import Elaboratable, Module, Shape
from amaranth.sim import Simulator

from isa_contract import legal as contract_legal

from tessera.golden_model.decode import ROW_OF, Op, decode
from tessera.hdl.tile.core.csr import CsrUnit
from tessera.hdl.tile.core.decoder import Decoder
from tessera.spec import instructions as I
from tessera.spec.config import MIN_CONTEXTS, ArrayConfig, preset
from tessera.spec.instructions import BY_NAME, INSTRUCTIONS, Kind
from tessera.spec.timing import (COMMIT_DELAY, FETCH_STORE_DELAY, PIPELINE_STAGES,
                                 STATE_VISIBLE_DELAY, STEP_FAULT_VISIBLE_DELAY, Stage,
                                 ENGINE_DATA_FAULT_VISIBLE_DELAY)
from tessera.spec.trace import RECORD_KEYS, trace_ports

M32 = 0xFFFFFFFF


# -- the table ----------------------------------------------------------------------------

def test_rows_are_disjoint_and_names_unique():
    assert len(BY_NAME) == len(INSTRUCTIONS)
    for i, a in enumerate(INSTRUCTIONS):
        for b in INSTRUCTIONS[i + 1:]:
            assert (a.match ^ b.match) & a.mask & b.mask, f"{a.name} and {b.name} overlap"


def test_every_row_is_legal_per_the_contract():
    rng = random.Random(21)
    for row in INSTRUCTIONS:
        for _ in range(50):
            w = row.match | (rng.getrandbits(32) & ~row.mask)
            if row.kind is Kind.CSR:   # a listed, writable CSR keeps §3.2 out of the way
                w = (w & 0x000FFFFF) | 0x800 << 20
            assert I.lookup(w) is row, (row.name, hex(w))
            assert contract_legal(w), (row.name, hex(w))


# Hand-encoded from the RISC-V Unprivileged ISA (chapters 2, 7, 9) and architecture §3.3.
HAND = {
    "lui": 0x37, "auipc": 0x17, "jal": 0x6F, "jalr": 0x67, "beq": 0x63, "bgeu": 0x7063,
    "lbu": 0x4003, "sw": 0x2023, "add": 0x33, "sub": 0x40000033, "sra": 0x40005033,
    "and": 0x7033, "mul": 0x02000033, "remu": 0x02007033, "addi": 0x13, "srai": 0x40005013,
    "fence": 0x0F, "ecall": 0x73, "ebreak": 0x00100073, "csrrw": 0x1073, "csrrci": 0x7073,
    "dot4": 0x0B, "dot4su": 0x100B, "sync_tile": 0x2B, "sync_array": 0x0010002B,
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_row_fixed_bits_by_hand(name):
    assert BY_NAME[name].match == HAND[name]


def test_named_funct_bits_agree_with_the_rows():
    muldiv = [r for r in INSTRUCTIONS if r.kind is Kind.MULDIV]
    for r in muldiv:
        is_div = r.name in ("div", "divu", "rem", "remu")
        assert (r.funct3 >> I.FUNCT3_DIV_BIT & 1) == is_div, r.name
        assert I.is_division(r.match) == is_div, r.name
        if is_div:
            assert (r.funct3 >> I.FUNCT3_DIV_UNSIGNED_BIT & 1) == r.name.endswith("u"), r.name
            assert (r.funct3 >> I.FUNCT3_REM_BIT & 1) == r.name.startswith("rem"), r.name
    assert [r.name for r in sorted(muldiv, key=lambda r: r.funct3)][:4] == \
        ["mul", "mulh", "mulhsu", "mulhu"]                      # mul.py: funct3[1:0]
    for r in INSTRUCTIONS:
        if r.kind in (Kind.LOAD, Kind.STORE):
            size = {"b": 1, "h": 2, "w": 4}[r.name[1]]
            assert 1 << I.MemWidth(r.funct3 & 3) == size, r.name
            assert (r.funct3 >> I.FUNCT3_MEM_UNSIGNED_BIT & 1) == r.name.endswith("u"), r.name
        if r.kind is Kind.CSR:
            imm_form = r.name.endswith("i")
            assert (r.funct3 >> I.FUNCT3_CSR_IMM_BIT & 1) == imm_form, r.name
            base = BY_NAME[r.name[:5]]
            assert r.funct3 & 3 == base.funct3 and base.funct3 >> I.FUNCT3_CSR_IMM_BIT == 0
        if r.kind in (Kind.OP, Kind.OP_IMM) and r.mask >> I.FUNCT7_ALT_BIT & 1:
            assert (r.match >> I.FUNCT7_ALT_BIT & 1) == (r.name in ("sub", "sra", "srai")), r.name
    assert I.FUNCT7_ALT_BIT == 30


@pytest.mark.parametrize("field,value,word", [
    # (field, value, word bits placed by hand from figure 2.4 of the Unprivileged ISA)
    (I.IMM_I, -1, 0xFFF00000), (I.IMM_I, 0x7FF, 0x7FF00000),
    (I.IMM_S, -2048, 0x80000000), (I.IMM_S, 0x1F, 0xF80), (I.IMM_S, 0x7E0, 0x7E000000),
    (I.IMM_B, -4096, 0x80000000), (I.IMM_B, 0x800, 0x80), (I.IMM_B, 0x1E, 0xF00),
    (I.IMM_B, 0x7E0, 0x7E000000),
    (I.IMM_U, 0x12345 << 12, 0x12345000),
    (I.IMM_J, -(1 << 20), 0x80000000), (I.IMM_J, 0x7FE, 0x7FE00000), (I.IMM_J, 0x800, 0x100000),
    (I.IMM_J, 0xFF000, 0xFF000),
])
def test_immediate_layouts_by_hand(field, value, word):
    assert field.insert(value) == word
    assert field.extract(word) == value


def test_immediate_roundtrip_random():
    rng = random.Random(4)
    for f in (I.IMM_I, I.IMM_S, I.IMM_B, I.IMM_U, I.IMM_J):
        align = min(v for _, v, _ in f.pieces)
        for _ in range(2000):
            v = rng.randrange(-(1 << (f.width - 1)), 1 << (f.width - 1)) >> align << align
            w = f.insert(v)
            assert w & ~f.word_mask == 0 and f.extract(w) == v, (f.name, v)


def test_register_names():
    assert I.REG_NAMES[10] == "a0" and I.REG_NAMES[2] == "sp" and len(I.REG_NAMES) == 32
    assert I.register_number("FP") == 8 and I.register_number("x31") == 31
    assert I.register_number("t6") == 31 and I.register_number("q1") is None


# -- HDL decoder == golden-model decoder -----------------------------------------------------

class _DecodeUnit(Elaboratable):
    """Decoder + CSR unit wired as in core.py (legality = dec.legal & (~csr | csr.legal))."""

    def __init__(self):
        self.dec = Decoder()
        self.csr = CsrUnit(ArrayConfig(tiles=1, contexts=6), 0)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dec, m.submodules.csr = self.dec, self.csr
        m.d.comb += [self.csr.csr.eq(self.dec.insn[20:32]), self.csr.funct3.eq(self.dec.funct3),
                     self.csr.rs1.eq(self.dec.rs1)]
        return m


CLASSES = [k.value for k in Kind]
OUTPUTS = ["legal", "rd", "rs1", "rs2", "funct3", "imm", "alu_alt", "dot4_su", "sync_array",
           "writes_rd"] + CLASSES


def _hdl_decode(words):
    top = _DecodeUnit()
    dec, csr = top.dec, top.csr
    out = []

    async def bench(ctx):
        for w in words:
            ctx.set(dec.insn, w)
            o = {name: ctx.get(getattr(dec, name)) for name in OUTPUTS}
            o["csr_legal"] = ctx.get(csr.legal)
            out.append(o)

    sim = Simulator(top)
    sim.add_testbench(bench)
    sim.run()
    return out


def _words(n, seed):
    """Every row (fixed bits, random operands), then ``n`` random words: half uniform, half
    with a used opcode and often small funct7 / listed CSR numbers / the exact special words."""
    rng = random.Random(seed)
    words = []
    for row in INSTRUCTIONS:
        words.append(row.match)
        words += [row.match | (rng.getrandbits(32) & ~row.mask) for _ in range(20)]
    opcodes = sorted({int(r.opcode) for r in INSTRUCTIONS})
    specials = [r.match for r in INSTRUCTIONS if r.mask == M32]
    csrs = [0xC00, 0xC80, 0xC02, 0xC82, 0xCC0, 0xCC1, 0xCC2, 0xCC3, 0xCC4, 0x800, 0x123]
    for _ in range(n):
        w = rng.getrandbits(32)
        r = rng.random()
        if r >= 0.5:
            w = (w & ~0x7F) | rng.choice(opcodes)
            if r < 0.7:
                w = (w & 0x01FFFFFF) | rng.choice([0, 1, 0x20, 0x40]) << 25
            elif r < 0.8:
                w = (w & 0x000FFFFF) | rng.choice(csrs) << 20
            elif r < 0.82:
                w = rng.choice(specials) ^ (rng.choice([0, 1 << rng.randrange(32)]))
        words.append(w)
    return words


def test_hdl_decoder_equals_golden_decoder():
    words = _words(100_000, seed=2024)
    hdl = _hdl_decode(words)
    n_legal = 0
    for w, o in zip(words, hdl):
        d = decode(w)
        legal = bool(o["legal"]) and (not o["csr"] or bool(o["csr_legal"]))
        assert legal == (d.op != Op.ILLEGAL), hex(w)
        if not legal:
            continue
        n_legal += 1
        row = ROW_OF[d.op]
        # same operation: class, and the selects that pick the row within it
        assert [c for c in CLASSES if o[c]] == [row.kind.value], (hex(w), row.name)
        assert o["funct3"] == w >> 12 & 7
        if row.funct3 is not None:
            assert o["funct3"] == row.funct3, (hex(w), row.name)
        if row.kind in (Kind.OP, Kind.OP_IMM):
            assert o["alu_alt"] == (row.name in ("sub", "sra", "srai")), (hex(w), row.name)
        if row.kind is Kind.DOT4:
            assert o["dot4_su"] == (row.name == "dot4su"), hex(w)
        if row.kind is Kind.SYNC:
            assert o["sync_array"] == (row.name == "sync_array"), hex(w)
        assert o["writes_rd"] == row.writes_rd, (hex(w), row.name)
        # same fields
        slots = {op.slot: op for op in row.operands if op.slot}
        for reg in ("rd", "rs1", "rs2"):
            if reg in slots:
                assert o[reg] == getattr(d, reg), (hex(w), row.name, reg)
        imm_op = slots.get("imm")
        if imm_op is None:
            if row.fmt is I.Format.R:
                assert o["imm"] == 0, hex(w)
        elif imm_op.name == "shamt":
            assert o["imm"] & 31 == d.imm, hex(w)
        elif imm_op.name == "csr":
            assert o["imm"] & 0xFFF == d.imm, hex(w)
        else:
            assert o["imm"] == d.imm, (hex(w), row.name)
    assert 20_000 < n_legal < len(words) - 20_000   # both sides well covered


# -- generators and the other single-source constants ----------------------------------------

#: Rows the random-program generator does not emit (a new row of a generated kind is covered
#: without a change to it; a new kind shows up here until randprog generates it).
NOT_GENERATED = {"csrrc", "csrrwi", "csrrci", "ebreak", "sync_tile", "sync_array", "mrun", "mwait"}


def test_randprog_covers_the_table():
    from tessera.tb import randprog
    seen = set()
    for seed in range(3):
        prog = randprog.generate(preset("small"), seed, total=3000)
        for _tile, addr, data in prog.segments:
            if addr == 0:
                for i in range(0, len(data), 4):
                    row = I.lookup(int.from_bytes(data[i:i + 4], "little"))
                    if row is not None:
                        seen.add(row.name)
    assert set(BY_NAME) - seen == NOT_GENERATED
    for w in randprog._ILLEGAL_WORDS:
        assert not I.is_legal(w) and not contract_legal(w), hex(w)


def test_timing_constants_match_the_contract():
    # architecture §4 (contract v2): F t, I t+1, R t+2, X t+3, M t+4, W t+5; state changes
    # visible from t+5; T >= 6 (§1); the fetch at t sees stores issued at <= t-5; an exchange
    # or engine step's fault is visible one cycle after the step, a fault of §12 checks 2
    # and 3 (the data of the word a step at s read) from s + 2 (§7 "Stop")
    assert [(s.name, int(s)) for s in Stage] == [("F", 0), ("I", 1), ("R", 2), ("X", 3),
                                                ("M", 4), ("W", 5)]
    assert STATE_VISIBLE_DELAY == 5 and COMMIT_DELAY == 5
    assert FETCH_STORE_DELAY == 5 and STEP_FAULT_VISIBLE_DELAY == 1
    assert ENGINE_DATA_FAULT_VISIBLE_DELAY == 2
    assert PIPELINE_STAGES == MIN_CONTEXTS == 6
    # docs/rtl.md: the RTL's register write and trace record in V, the cycle after W
    from tessera.spec.trace import TRACE_DELAY
    assert TRACE_DELAY == 6


def test_trace_record_is_one_definition():
    from tessera.golden_model import Array
    from tessera.hdl.tile.core.core import CoreSignature
    from tessera.tb.trace_monitor import TRACE_FIELDS as MONITOR_FIELDS
    from tessera.toolchain import asm
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=16384)
    arr = Array(cfg, trace=True)
    arr.write_mem(0, 0, asm.program([asm.addi(5, 0, 7), asm.sw(5, 0x100, 0), asm.ecall()]))
    arr.run(100)
    assert len(arr.trace) == 3 * cfg.contexts
    assert all(set(r) == set(RECORD_KEYS) for r in arr.trace)
    members = CoreSignature(cfg).members["trace"].signature.members
    ports = [(f"trace_{n}", Shape.cast(members[n].shape).width) for n in members]
    assert ports == trace_ports(cfg)
    # T = 6 contexts: a context index needs ceil(log2 6) = 3 bits
    assert ports[0] == ("trace_valid", 1) and ("trace_context", 3) in ports
    assert [k for _, k in MONITOR_FIELDS] == list(RECORD_KEYS[2:])


def test_tsr_graph_header_is_what_the_compiler_and_c_see(tmp_path):
    from tessera.toolchain.cc import compile_program
    from tessera.toolchain.graph import compile as gc
    from tessera.toolchain.graph import control
    from tessera.toolchain.graph.codelet import CODELET_DIR
    from tessera.toolchain.profile import collect
    text = control.generate_header()
    defines = {}
    for line in text.splitlines():
        parts = line.split()
        if line.startswith("#define TSR_") and len(parts) >= 3 and "(" not in parts[1]:
            defines[parts[1]] = int(parts[2].rstrip("u"), 0)
    # the Python users take the same objects
    assert (gc.CTRL_MAGIC, gc.OP_EXEC, gc.OP_EXCH, gc.OP_REPEAT, gc.OP_PROF) == \
        (0x43475354, 1, 2, 3, 4)
    assert defines["TSR_CTRL_MAGIC"] == gc.CTRL_MAGIC == int.from_bytes(b"TSGC", "little")
    assert {defines[f"TSR_OP_{n}"] for n in ("EXEC", "EXCH", "REPEAT", "PROF")} == \
        {gc.OP_EXEC, gc.OP_EXCH, gc.OP_REPEAT, gc.OP_PROF}
    assert defines["TSR_PROF_KIND_END"] == collect.KIND_END
    # no stale hand-written copy next to the codelets; the C compiler sees the same values
    assert not (CODELET_DIR / "tsr_graph.h").exists()
    src = tmp_path / "check.c"
    src.write_text('#include "tsr_graph.h"\n' + "".join(
        f"_Static_assert({name} == {value}u, \"{name}\");\n" for name, value in defines.items())
        + "int main(void) { return 0; }\n")
    compile_program([src], tmp_path / "check.elf", include_dirs=[control.include_dir()])
