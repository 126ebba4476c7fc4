"""Graph compiler: API, mapping, vertex, copy-lowering and memory errors (no simulator needed).

Expected values are derived by hand from the mapping rules and the layout rules in
docs/compiler.md, not from the code under test.
"""

import numpy as np
import pytest

from tessera.spec.config import ArrayConfig, preset
from tessera.toolchain.graph import (Copy, Execute, Graph, GraphError, GraphMemoryError, Repeat,
                             Sequence, compile_graph, map_linearly, map_to_tile, matmul)
from tessera.toolchain.graph.copy import exchange_transfers, plan_copy
from tessera.toolchain.graph.codelet import BUILTIN


@pytest.fixture
def g4():
    return Graph(preset("small"))


def spans(var):
    return [(iv.tile, iv.start, iv.stop) for iv in var.intervals]


def test_map_linearly_even_and_uneven(g4):
    v = g4.add_variable("v", (10, 3), "int32", map_linearly(grain=3))
    # 10 rows over 4 tiles: 3, 3, 2, 2 rows
    assert spans(v) == [(0, 0, 9), (1, 9, 18), (2, 18, 24), (3, 24, 30)]
    w = g4.add_variable("w", 2, "int8", map_linearly())
    assert spans(w) == [(0, 0, 1), (1, 1, 2)]
    x = g4.add_variable("x", 8, "uint8", map_linearly(tiles=[3, 1]))
    assert spans(x) == [(3, 0, 4), (1, 4, 8)]
    y = g4.add_variable("y", (2, 2), "int8", 2)
    assert spans(y) == [(2, 0, 4)]
    assert spans(g4.add_variable("z", 5, "int8", map_to_tile(1))) == [(1, 0, 5)]


@pytest.mark.parametrize("mapping, msg", [
    ([(0, 0, 4)], "covers elements 0..3 but the variable has 6"),
    ([(0, 0, 4), (1, 3, 6)], "overlaps"),
    ([(0, 0, 2), (1, 3, 6)], "elements 2..2 are not mapped"),
    ([(0, 0, 3), (4, 3, 6)], "tile 4 out of range 0..3"),
    (7, "tile 7 out of range"),
    ("tile0", "tile_mapping must be"),
    (map_linearly(grain=4), "not a multiple of the grain 4"),
])
def test_bad_mappings(g4, mapping, msg):
    with pytest.raises(GraphError, match=msg):
        g4.add_variable("v", (2, 3), "int8", mapping)


def test_bad_variables(g4):
    with pytest.raises(GraphError, match="dtype must be one of int8, uint8, int32"):
        g4.add_variable("f", 4, "float32", 0)
    with pytest.raises(GraphError, match="positive dimensions"):
        g4.add_variable("e", (3, 0), "int8", 0)
    with pytest.raises(GraphError, match="shape must be a tuple"):
        g4.add_variable("s", "abc", "int8", 0)
    g4.add_variable("dup", 4, "int8", 0)
    with pytest.raises(GraphError, match="already exists"):
        g4.add_variable("dup", 4, "int8", 0)
    with pytest.raises(GraphError, match="bad variable name"):
        g4.add_variable("has space", 4, "int8", 0)
    with pytest.raises(GraphError, match="grain must be a positive int"):
        map_linearly(grain=0)


def test_views_and_contiguity(g4):
    v = g4.add_variable("v", (4, 6), "int8", map_linearly(grain=6))
    row = v[2]
    assert row.shape == (6,)
    iv, off = row.contiguous_interval("t")
    assert (iv.tile, off) == (2, 0)
    assert v[1, 2:5].contiguous_interval("t")[1] == 2
    with pytest.raises(GraphError, match="not contiguous"):
        v[:, 0].contiguous_interval("field x")
    with pytest.raises(GraphError, match="spans tiles 0 and 1"):
        v[0:2].contiguous_interval("field x")
    with pytest.raises(GraphError, match="cannot reshape"):
        v.tensor().reshape(5, 5)
    with pytest.raises(GraphError, match="bad index"):
        v[9]
    assert v.tensor().reshape(24)[7:9].index.tolist() == [7, 8]


def test_vertex_errors(g4):
    a = g4.add_variable("a", (4, 8), "int8", map_linearly(grain=8))
    c = g4.add_variable("c", (4, 2), "int32", map_linearly(grain=2))
    cs = g4.add_compute_set("cs")
    with pytest.raises(GraphError, match="unknown codelet 'nope'"):
        g4.add_vertex(cs, "nope")
    with pytest.raises(GraphError, match="field 'bt_stride' of codelet 'tsr_matmul8' not bound"):
        g4.add_vertex(cs, "tsr_matmul8", a=a[0], bt=a[0], c=c[0], rows=1, cols=2, depth=8)
    with pytest.raises(GraphError, match="has no field"):
        g4.add_vertex(cs, "tsr_copy", dst=a[0], src=a[0], nbytes=8, bogus=1)
    with pytest.raises(GraphError, match="needs int32 data, but 'a' is int8"):
        g4.add_vertex(cs, "tsr_matmul8", a=a[0], bt=a[0], c=a[0], rows=1, cols=2, depth=8,
                      bt_stride=8)
    with pytest.raises(GraphError, match=r"lie on tiles \[0, 1\]"):
        g4.add_vertex(cs, "tsr_copy", dst=a[0], src=a[1], nbytes=8)
    with pytest.raises(GraphError, match="scalar field 'nbytes' needs a 32-bit int"):
        g4.add_vertex(cs, "tsr_copy", dst=a[0], src=a[0], nbytes=1.5)
    with pytest.raises(GraphError, match="not on tile 3"):
        g4.add_vertex(cs, "tsr_copy", tile=3, dst=a[0], src=a[0], nbytes=8)
    other = Graph(preset("small")).add_variable("a", (4, 8), "int8", 0)
    with pytest.raises(GraphError, match="another graph"):
        g4.add_vertex(cs, "tsr_copy", dst=other[0], src=other[0], nbytes=8)
    assert cs.vertices == []


def test_program_errors(g4):
    a = g4.add_variable("a", (4, 4), "int8", 0)
    b = g4.add_variable("b", (4, 4), "int32", 1)
    cc = g4.add_variable("cc", (2, 4), "int8", 1)
    with pytest.raises(GraphError, match="shape"):
        Copy(a, cc)
    with pytest.raises(GraphError, match="int8 but destination 'b' is int32"):
        Copy(a, b)
    with pytest.raises(GraphError, match="2 sources but 1 destinations"):
        Copy([a, a], [a])
    with pytest.raises(GraphError, match="not a Program"):
        Sequence(Execute(g4.add_compute_set("x")), 3)
    with pytest.raises(GraphError, match="count must be an int"):
        Repeat(-1, Sequence())
    with pytest.raises(GraphError, match="needs a ComputeSet"):
        Execute("cs")
    d = g4.add_variable("d", (2, 4), "int8", 2)
    with pytest.raises(GraphError, match="written more than once"):
        plan_copy(Copy([a[0:2], a[2:4]], [d, d]), "c", BUILTIN["tsr_copy"])
    with pytest.raises(GraphError, match="overlaps a source"):
        plan_copy(Copy(a[0:2], a[1:3]), "c", BUILTIN["tsr_copy"])


def test_copy_plan_local_and_remote(g4):
    s = g4.add_variable("s", 16, "int32", [(0, 0, 8), (1, 8, 16)])
    d = g4.add_variable("d", 16, "int32", [(0, 0, 4), (2, 4, 12), (1, 12, 16)])
    plan = plan_copy(Copy(s, d), "c", BUILTIN["tsr_copy"])
    # elements 0..3: tile 0 -> 0 (local), 4..7: 0 -> 2, 8..11: 1 -> 2, 12..15: 1 -> 1 (local)
    loc = sorted((v.tile, v.fields["src"].index.tolist(), v.fields["nbytes"])
                 for v in plan.local.vertices)
    assert loc == [(0, [0, 1, 2, 3], 16), (1, [12, 13, 14, 15], 16)]
    # with made-up addresses: s at 0x1000 (tile 0) / 0x2000 (tile 1); d intervals at
    # 0x3000 (t0), 0x4000 (t2), 0x5000 (t1)
    addr = {"s": np.array([0x1000, 0x2000]), "d": np.array([0x3000, 0x4000, 0x5000])}
    tr = exchange_transfers(plan, lambda v: addr[v.name])
    got = sorted((t.src_tile, t.src_addr, t.dsts) for t in tr)
    want = sorted([(0, 0x1000 + 4 * i, ((2, 0x4000 + 4 * (i - 4)),)) for i in range(4, 8)]
                  + [(1, 0x2000 + 4 * (i - 8), ((2, 0x4000 + 4 * (i - 4)),)) for i in range(8, 12)])
    assert got == want


def test_copy_broadcast_is_multicast_and_bytes_packed(g4):
    b = g4.add_variable("b", 8, "int8", 0)
    bb = g4.add_variable("bb", (3, 8), "int8", [(1, 0, 8), (2, 8, 16), (3, 16, 24)])
    plan = plan_copy(Copy([b, b, b], [bb[0], bb[1], bb[2]]), "c", BUILTIN["tsr_copy"])
    assert plan.local is None
    addr = {"b": np.array([0x100]), "bb": np.array([0x200, 0x300, 0x400])}
    tr = sorted(exchange_transfers(plan, lambda v: addr[v.name]), key=lambda t: t.src_addr)
    # 8 bytes = 2 words, each sent once to three tiles
    assert [(t.src_tile, t.src_addr, sorted(t.dsts)) for t in tr] == [
        (0, 0x100, [(1, 0x200), (2, 0x300), (3, 0x400)]),
        (0, 0x104, [(1, 0x204), (2, 0x304), (3, 0x404)])]


def test_copy_misaligned_bytes_rejected(g4):
    s = g4.add_variable("s", 8, "int8", 0)
    d = g4.add_variable("d", 8, "int8", 1)
    addr = {"s": np.array([0x100]), "d": np.array([0x200])}
    plan = plan_copy(Copy(s[1:5], d[0:4]), "c", BUILTIN["tsr_copy"])
    with pytest.raises(GraphError, match="different byte offset within a word"):
        exchange_transfers(plan, lambda v: addr[v.name])
    plan = plan_copy(Copy(s[0:2], d[0:2]), "c", BUILTIN["tsr_copy"])
    with pytest.raises(GraphError, match="only partly written"):
        exchange_transfers(plan, lambda v: addr[v.name])
    # the tail of an allocation is padding: copying elements 4..6 of a 7-element
    # variable writes a whole word whose 4th byte is padding, which is allowed
    s7 = g4.add_variable("s7", 7, "int8", 0)
    d7 = g4.add_variable("d7", 7, "int8", 1)
    addr.update({"s7": np.array([0x500]), "d7": np.array([0x600])})
    plan = plan_copy(Copy(s7[4:7], d7[4:7]), "c", BUILTIN["tsr_copy"])
    tr = exchange_transfers(plan, lambda v: addr[v.name])
    assert [(t.src_tile, t.src_addr, t.dsts) for t in tr] == [(0, 0x504, ((1, 0x604),))]


def test_out_of_memory_names_tile_and_items():
    cfg = preset("tiny")  # 1 tile, 6 contexts (§1, contract v2), 16 KiB
    g = Graph(cfg)
    big = g.add_variable("big", 14000, "int8", 0)
    small = g.add_variable("small", 100, "int32", 0)
    prog = Copy(big[0:4], big[4:8])  # any program using the tile
    with pytest.raises(GraphMemoryError) as ei:
        compile_graph(g, prog)
    e = ei.value
    assert e.tile == 0 and e.available == 16384
    # at least: 14000 + 400 tensor bytes + 6 stacks of 1 KiB
    assert e.used >= 14000 + 400 + 6144 > 16384
    assert e.largest[0] == ("tensor 'big' [0:14000]", 14000)
    assert ("stacks (6 x 1024 B)", 6144) in e.largest
    msg = str(e)
    assert f"tile 0 out of memory: needs {e.used} bytes but has 16384" in msg
    assert "tensor 'big' [0:14000] 14000 B" in msg


def test_out_of_memory_on_one_tile_of_many(g4):
    g4.add_variable("ok", (4, 1000), "int32", map_linearly(grain=1000))
    g4.add_variable("heavy", 60000, "uint8", map_to_tile(2))
    with pytest.raises(GraphMemoryError, match=r"tile 2 out of memory.*tensor 'heavy'"):
        compile_graph(g4, Sequence())


def test_out_of_memory_before_exchange_scheduling(g4):
    # Regression: a cross-tile Copy into a tensor placed beyond the SRAM used to fail inside the
    # exchange scheduler ("address outside the SRAM") instead of with the memory report.
    src = g4.add_variable("src", 256, "int32", map_to_tile(0))
    g4.add_variable("filler", 64000, "uint8", map_to_tile(1))
    dst = g4.add_variable("dst", 256, "int32", map_to_tile(1))
    with pytest.raises(GraphMemoryError, match=r"tile 1 out of memory.*tensor 'filler'"):
        compile_graph(g4, Copy(src, dst))


def test_compile_matmul_layout_report():
    g4 = Graph(preset("small").replace(engine_macs=0))      # the dot4 layout (no engine)
    a = g4.add_variable("a", (8, 16), "int8", map_linearly(grain=16))
    b = g4.add_variable("b", (16, 4), "int8", map_to_tile(0))
    c, prog = matmul(g4, a, b)
    assert spans(c) == [(0, 0, 8), (1, 8, 16), (2, 16, 24), (3, 24, 32)]
    cg = compile_graph(g4, prog)
    assert [op[0] for op in cg.ops] == ["exec", "exch", "exec", "exec"]
    assert cg.base % 8 == 0 and cg.base >= cg.image.end
    for t, m in enumerate(cg.memory):
        assert m["used"] + m["free"] == 65536
        assert m["stacks"] == 6 * 1024
        assert m["code"] == cg.base
    # tensors on tile 1: 2 rows of a (32 B), c (2x4 int32 = 32 B), b copy (64 B),
    # bt (4 x 16 = 64 B)
    assert cg.memory[1]["tensors"] == 32 + 32 + 64 + 64
    # tile 0 also holds b (64 B)
    assert cg.memory[0]["tensors"] == 32 + 32 + 64 + 64 + 64
    ex = cg.exchanges[0]
    # 64 bytes of b = 16 words, broadcast from tile 0 to tiles 1..3
    assert ex["words_sent"] == [16, 0, 0, 0] and ex["words_received"] == [0, 16, 16, 16]
    assert ex["bound_met"]
    assert "tile" in cg.memory_report().splitlines()[0]


def test_matmul_errors(g4):
    # 6 rows of 16 = 12 grains of 8 -> 3 grains (1.5 rows) per tile
    a = g4.add_variable("a", (6, 16), "int8", map_linearly(grain=8))
    b = g4.add_variable("b", (16, 4), "int8", 0)
    with pytest.raises(GraphError, match="splits a row of 16 elements"):
        matmul(g4, a, b)
    a2 = g4.add_variable("a2", (8, 12), "int8", map_linearly(grain=12))
    with pytest.raises(GraphError, match="inner dimensions differ"):
        matmul(g4, a2, b)
    c = g4.add_variable("c32", (16, 4), "int32", 0)
    with pytest.raises(GraphError, match="2-D int8"):
        matmul(g4, a2, c)


def test_compile_matmul_on_the_engine_layout(g4):
    """With an engine (the presets' default) the graph matmul is the kernel library's engine
    matmul: the same copy and transpose, then one engine descriptor table per tile."""
    a = g4.add_variable("a", (8, 16), "int8", map_linearly(grain=16))
    b = g4.add_variable("b", (16, 4), "int8", map_to_tile(0))
    c, prog = matmul(g4, a, b)
    cg = compile_graph(g4, prog)
    assert [op[0] for op in cg.ops] == ["exec", "exch", "exec", "exec"]
    tables = [v for v, _ in cg.tensors.values() if getattr(v, "engine_commands", None)]
    assert sorted(v.intervals[0].tile for v in tables) == [0, 1, 2, 3]
    for v, addrs in cg.tensors.values():
        if getattr(v, "align", 4) == 8:
            assert all(int(x) % 8 == 0 for x in addrs), v.name
