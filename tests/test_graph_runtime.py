"""The graph runtime's control-table interpretation (docs/compiler.md, "Execution model";
tessera/toolchain/codelets/runtime.c): deep REPEAT nesting, the exit codes of a corrupt
table, single codelets in the worklists, and the EXEC op's engine start (word 2).

Expected values come from the text of docs/compiler.md and docs/architecture.md §12 and
from hand arithmetic, never from a run of the code under test.
"""

import struct

import numpy as np
import pytest

from tessera.spec.config import ArrayConfig, preset
from tessera.spec.engine import DESC_BYTES, Descriptor
from tessera.toolchain.graph import (Engine, EngineError, Execute, Graph, GraphError, Repeat,
                                     compile_graph, map_linearly)
from tessera.toolchain.graph.codelet import Codelet, Field
from tessera.toolchain.graph.compile import _worklists
from tessera.toolchain.graph.control import CTRL_HEADER_WORDS, OP_EXEC, OP_WORDS
from tessera.toolchain.graph.graph import Vertex

INC = ('#include "tsr_graph.h"\n'
       "typedef struct { TSR_FIELD(int32_t, x); } f_t;\n"
       "void inc1(const f_t *f, uint32_t part, uint32_t nparts) {\n"
       "  for (uint32_t i = part; i < f->x_n; i += nparts) f->x[i] += 1;\n"
       "}\n")


def _inc_graph(tmp_path, cfg):
    src = tmp_path / "inc.c"
    src.write_text(INC)
    g = Graph(cfg)
    g.add_codelet("inc1", src, [("x", "inout", "int32")])
    x = g.add_variable("x", (cfg.tiles, 3), "int32", map_linearly(grain=3))
    cs = g.add_compute_set("inc")
    for t in range(cfg.tiles):
        g.add_vertex(cs, "inc1", x=x[t])
    return g, cs


def _ctrl_words(cg, tile, n):
    return struct.unpack(f"<{n}I", cg.regions[tile][:4 * n])


def test_repeat_nested_ten_deep(tmp_path):
    """Ten nested Repeats (counts 3, 1, 1, 1, 1, 1, 1, 1, 1, 2 from the inside out) around
    one +1 compute set: 3 · 2 = 6 increments. The runtime keeps one 16-byte record per open
    REPEAT on the stack (docs/compiler.md), so ten levels are 160 bytes of a 512-byte
    stack."""
    g, cs = _inc_graph(tmp_path, preset("small"))
    prog = Execute(cs)
    for count in (3, 1, 1, 1, 1, 1, 1, 1, 1, 2):
        prog = Repeat(count, prog)
    cg = compile_graph(g, prog, stack_bytes=512)
    assert [op[0] for op in cg.ops] == ["repeat"] * 10 + ["exec"]
    eng = Engine(cg)
    v = np.arange(12, dtype=np.int32).reshape(4, 3)
    eng.write_tensor("x", v)
    eng.run()
    np.testing.assert_array_equal(eng.read_tensor("x"), v + 6)


def test_repeat_sequence_counts(tmp_path):
    """Repeat(3, Repeat(0, X)) is dropped by the compiler; Repeat(1, X) runs X once;
    Repeat(4, Repeat(5, X)) runs it 20 times: 1 + 20 = 21 increments."""
    from tessera.toolchain.graph import Sequence
    g, cs = _inc_graph(tmp_path, preset("small"))
    prog = Sequence(Repeat(3, Repeat(0, Execute(cs))), Repeat(1, Execute(cs)),
                    Repeat(4, Repeat(5, Execute(cs))))
    eng = Engine(compile_graph(g, prog))
    v = np.zeros((4, 3), np.int32)
    eng.write_tensor("x", v)
    eng.run()
    np.testing.assert_array_equal(eng.read_tensor("x"), v + 21)


@pytest.mark.parametrize("word, value, code", [(0, 0x12345678, 101),     # bad magic
                                               (CTRL_HEADER_WORDS, 9, 102)])  # bad op code
def test_corrupt_control_table_exit_codes(tmp_path, word, value, code):
    """docs/compiler.md: a bad table gives exit code 101 (magic) / 102 (op) and Engine.run
    raises; every context of every tile reads the same table and exits with that code."""
    g, cs = _inc_graph(tmp_path, preset("small"))
    eng = Engine(compile_graph(g, Execute(cs)))
    for r in eng._regions:
        r[4 * word:4 * word + 4] = struct.pack("<I", value)
    with pytest.raises(EngineError, match="non-zero exit codes"):
        eng.run()
    res = eng.last_result
    assert {c.exit_code for t in res.tiles for c in t.contexts} == {code}


def _vertex(name, single):
    c = Codelet(name, "x.c", (Field("n", "scalar"),), single=single)
    return Vertex(c, 0, {"n": 1})


def test_worklists_pinned_context():
    """A single codelet's vertex with Vertex.context set goes to that context's list; the
    unpinned single vertices take the lowest free contexts and the splittable ones share
    the rest (docs/compiler.md, "Execution model"). T = 6: engine vertices pinned to 0 and
    3, one splittable vertex: free contexts 1, 2, 4, 5, so 4 parts on them; with another
    unpinned single vertex it takes context 1 and the splittable one has 3 parts on 2, 4,
    5. A context outside 0..T-1, or one given to a splittable vertex, is an error."""
    T = 6
    e0, e3, a = _vertex("e", True), _vertex("e", True), _vertex("a", False)
    e0.context, e3.context = 0, 3
    assert _worklists([e0, e3, a], T) == [[(0, 0, 1)], [(2, 0, 4)], [(2, 1, 4)], [(1, 0, 1)],
                                          [(2, 2, 4)], [(2, 3, 4)]]
    b = _vertex("b", True)
    assert _worklists([a, e3, b, e0], T) == [[(3, 0, 1)], [(2, 0, 1)], [(0, 0, 3)],
                                             [(1, 0, 1)], [(0, 1, 3)], [(0, 2, 3)]]
    # with V >= T: pinned vertices on their contexts, the rest longest-first
    many = [_vertex("x", False) for _ in range(6)]
    lists = _worklists([e3] + many, T)
    assert lists[3][0] == (0, 0, 1) and sorted(e for lst in lists for e in lst) == \
        [(i, 0, 1) for i in range(7)]
    bad = _vertex("e", True)
    bad.context = 6
    with pytest.raises(GraphError, match="context 6 is not in 0..5"):
        _worklists([bad], T)
    a.context = 1
    with pytest.raises(GraphError, match="only given to vertices of single codelets"):
        _worklists([a], T)


def test_worklists_single_codelet():
    """A single codelet's vertex is one entry (part 0 of 1) on the first free context; the
    other vertices share the remaining contexts (docs/compiler.md, "Execution model")."""
    T = 6
    # one single vertex alone: context 0 only
    assert _worklists([_vertex("e", True)], T) == [[(0, 0, 1)]] + [[]] * 5
    # single + two splittable: 5 free contexts, split 3 + 2
    lists = _worklists([_vertex("a", False), _vertex("e", True), _vertex("b", False)], T)
    assert lists == [[(1, 0, 1)], [(0, 0, 3)], [(0, 1, 3)], [(0, 2, 3)], [(2, 0, 2)],
                     [(2, 1, 2)]]
    # without single codelets the split is as before: 6 // 2 = 3 parts each
    lists = _worklists([_vertex("a", False), _vertex("b", False)], T)
    assert lists == [[(0, 0, 3)], [(0, 1, 3)], [(0, 2, 3)], [(1, 0, 3)], [(1, 1, 3)],
                     [(1, 2, 3)]]


def _engine_matmul(tiles=2, m=16, k=16, n=16, requant=None):
    from tessera.toolchain.kernels.matmul import matmul_cols
    cfg = ArrayConfig(tiles=tiles, contexts=6, sram_bytes=64 * 1024, engine_macs=32)
    g = Graph(cfg)
    a = g.add_variable("a", (tiles, m, k), "int8", map_linearly(grain=m * k))
    bt = g.add_variable("bt", (n, k), "int8", map_linearly(grain=k))
    c, prog = matmul_cols(g, a, bt, name="mm", requant=requant)
    return g, c, prog


def _engine_vertex(cg, t):
    """(EXEC word 2, table address, the T list counts, (part, nparts), the record's words
    codelet / desc address / desc elements / count) of tile ``t``'s only compute set."""
    (table,) = [v for v, _ in cg.tensors.values() if getattr(v, "engine_commands", None)
                and v.intervals[0].tile == t]
    taddr = int(cg.tensors[table.name][1][0])
    _, nops, code, wl, start = _ctrl_words(cg, t, CTRL_HEADER_WORDS + OP_WORDS)
    assert (nops, code) == (1, OP_EXEC)
    region = cg.regions[t]

    def word(addr):
        return struct.unpack_from("<I", region, addr - cg.base)[0]

    lists = [word(wl + 4 * ctx) for ctx in range(cg.config.contexts)]
    rec = word(lists[0] + 4)
    return (start, taddr, [word(lst) for lst in lists],
            (word(lists[0] + 8), word(lists[0] + 12)),
            tuple(word(rec + 4 * i) for i in range(4)))


def test_engine_start_in_the_control_table():
    """EXEC word 2 is the address of the tile's descriptor table (its first descriptor);
    the tsk_engine vertex record then points 64 bytes further with count n - 1, and only
    context 0 has a worklist entry (docs/compiler.md, "Matrix engine"). Per tile 8 output
    channels in lanes of M = 32 / 8 = 4: n = 2 commands."""
    g, c, prog = _engine_matmul()
    cg = compile_graph(g, prog)
    T = cg.config.contexts
    for t in range(2):
        start, taddr, counts, parts, rec = _engine_vertex(cg, t)
        assert start == taddr and taddr % 8 == 0
        assert counts == [1] + [0] * (T - 1) and parts == (0, 1)
        # record: codelet, desc (address, element count), count
        assert rec == (cg.image.symbols["tsk_engine"], taddr + DESC_BYTES, DESC_BYTES, 1)
        # the first descriptor is a real command: C = 4 lanes, J = 16 rows, K0 = 16 / 8
        off = taddr - cg.base
        d = Descriptor.unpack(bytes(cg.regions[t][off:off + DESC_BYTES]))
        assert (d.C, d.J0, d.K0) == (4, 16, 2)


@pytest.mark.parametrize("n", [8, 16])
def test_engine_start_results(n):
    """n = 8: 4 output channels per tile, one command, all of it issued by the runtime
    (the vertex has count 0: only its mwait); n = 16: two commands. The outputs equal
    numpy's A·B, and the macs counter is 8·C per stream step (§12): J = 16 rows × KB = 2
    blocks × 8·4 per command = 1024 per command, n / 8 commands per tile."""
    rng = np.random.default_rng(5)
    g, c, prog = _engine_matmul(n=n)
    cg = compile_graph(g, prog)
    start, taddr, counts, parts, rec = _engine_vertex(cg, 0)
    assert start == taddr
    assert rec[3] == n // 8 - 1
    A = rng.integers(-128, 128, (16, 16), dtype=np.int8)
    B = rng.integers(-128, 128, (16, n), dtype=np.int8)
    eng = Engine(cg)
    eng.write_tensor("a", np.broadcast_to(A, (2, 16, 16)))
    eng.write_tensor("bt", np.ascontiguousarray(B.T))
    res = eng.run()
    got = eng.read_tensor(c.name).transpose(1, 0, 2).reshape(16, n)
    want = (A.astype(np.int64) @ B.astype(np.int64)).astype(np.int32)
    np.testing.assert_array_equal(got, want)
    assert [t.counters["macs"] for t in res.tiles] == [1024 * (n // 8)] * 2


def test_engine_start_bad_tensor():
    """ComputeSet.engine_start must name one 64-byte descriptor on that tile."""
    g, c, prog = _engine_matmul()
    (cs,) = [x for x in g.compute_sets if x.engine_start]
    (table,) = [v for v in g.variables.values() if getattr(v, "engine_commands", None)
                and v.intervals[0].tile == 0]
    cs.engine_start[0] = table[:32]
    with pytest.raises(GraphError, match="engine_start of tile 0 must be a 64-byte"):
        compile_graph(g, prog)
    cs.engine_start[0] = table[:DESC_BYTES]
    (other,) = [v for v in g.variables.values() if getattr(v, "engine_commands", None)
                and v.intervals[0].tile == 1]
    cs.engine_start[0] = other[:DESC_BYTES]
    with pytest.raises(GraphError, match="engine_start of tile 0 lies on tile 1"):
        compile_graph(g, prog)


def test_engine_start_fault_names_the_compute_set():
    """A first descriptor with mode 7 faults engine_fault in its check step 7 (§12, fault 2:
    addr = d, the descriptor's address), while context 0 is still in the runtime's dispatch
    (the check comes 8 engine cycles after the accept; context 0 reaches its codelet about
    15 instructions later). The error names the engine start of the compute set."""
    from tessera.spec.engine import DESC_FORMAT
    g, c, prog = _engine_matmul(tiles=1, n=8)
    (table,) = [v for v in g.variables.values() if getattr(v, "engine_commands", None)]
    build = table.late

    def bad(addr):
        b = bytearray(build(addr))
        assert struct.calcsize(DESC_FORMAT) == DESC_BYTES
        b[49] = 7                        # mode (offset 49, §12 descriptor table): reserved
        return bytes(b)

    table.late = bad
    cg = compile_graph(g, prog)
    taddr = int(cg.tensors[table.name][1][0])
    assert cg.engine_starts == {0: [("mm.mm", taddr)]}
    with pytest.raises(EngineError) as e:
        Engine(cg).run()
    err = e.value
    assert (err.cause, err.tile, err.context, err.addr) == ("engine_fault", 0, 0, taddr)
    assert err.entry is None and err.engine_start == [("mm.mm", taddr)]
    assert f"engine start (first descriptor) of compute set 'mm.mm' (descriptor at {taddr:#x})" \
        in str(err)


def test_engine_start_fast_path_cycle():
    """Context 0 issues the first compute set's engine start right after main's magic check
    (runtime.c, the fast path). By hand, T = 6 (context 0 issues at cycles 0, 6, 12, ...):
    crt0.S has context 0 run 14 instructions (csrr, csrr, lui, addi, mul, sub, sub, csrw,
    bnez, lui, addi, lui, addi, bgeu: taken, the runtime has no .bss) in cycles 0..78 and
    `sync TILE` at 84; contexts 1..5 reach theirs after 9 instructions (≤ 59), so the barrier
    sees every context waiting at 84 + 5 = 89 (§4: state changes visible from t + 5) and
    context 0 is RUNNING from 90 (§5): `jal main` at 90, then main's lui, addi (the control
    table address), lw, lui, addi, bne (the magic), csrr (context id), li, bnez, lw, bne (op 0
    is EXEC), lw, beqz (its engine start) at 96..168 and the `mrun` at 174 (accepted at
    178, §12). The ordinary path (op 0 not an EXEC, e.g. the profile buffer's PROF op) has
    no mrun there."""
    from tessera.golden_model import Array
    from tessera.toolchain.disasm import disasm

    def first_mrun(cg):
        arr = Array(cg.config, trace=True)
        for seg in cg.image.segments:
            if seg.data:
                arr.write_mem(None, seg.addr, bytes(seg.data))
        eng = Engine(cg)
        for t, r in enumerate(eng._regions):
            arr.write_mem(t, cg.base, bytes(r))
        arr.start(entry=cg.image.entry)
        arr.run(1_000_000)
        return [next(r for r in arr.trace if r["tile"] == t and r["context"] == 0
                     and disasm(r["insn"], r["pc"]).startswith("mrun"))
                for t in range(cg.config.tiles)]

    g, c, prog = _engine_matmul()
    assert g.config.contexts == 6
    cg = compile_graph(g, prog)
    main = cg.image.symbols["main"]
    recs = first_mrun(cg)
    assert [r["cycle"] for r in recs] == [174] * g.config.tiles
    assert [r["pc"] for r in recs] == [main + 4 * 13] * g.config.tiles
    # profiled: op 0 is PROF, so the EXEC's own mrun (later, at another pc) issues it
    g, c, prog = _engine_matmul()
    pv = g.add_variable("prof", (g.config.tiles, 17), "int32",
                        [(t, t * 17, (t + 1) * 17) for t in range(g.config.tiles)])
    recs = first_mrun(compile_graph(g, prog, profile=pv))
    assert all(r["cycle"] > 174 and r["pc"] != main + 4 * 13 for r in recs)
