"""Graph compiler end to end on the golden model: matmul, Copy exchange, Repeat, codelets.

Expected values come from plain numpy (int64 products wrapped to int32), np.roll and
hand arithmetic, and for matmul also tessera.golden_model.kernels.matmul.
"""

import numpy as np
import pytest

from tessera import backends
from tessera.spec.config import ArrayConfig, preset
from tessera.spec.result import RunStatus
from tessera.toolchain.graph import (Copy, Engine, EngineError, Execute, Graph, GraphError,
                             GraphMemoryError, Repeat, Sequence, compile_graph, map_linearly,
                             map_to_tile, matmul)



def np_matmul(a, b):
    return (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)  # wraps mod 2^32


def run_matmul(cfg, m, k, n, seed, b_tile=0):
    rng = np.random.default_rng(seed)
    g = Graph(cfg)
    a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
    b = g.add_variable("b", (k, n), "int8", map_to_tile(b_tile))
    c, prog = matmul(g, a, b)
    eng = Engine(compile_graph(g, prog), backend="model")
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    B = rng.integers(-128, 128, (k, n), dtype=np.int8)
    eng.write_tensor("a", A)
    eng.write_tensor("b", B)
    res = eng.run(2_000_000)
    return A, B, eng.read_tensor(c.name), res


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("m, k, n", [(4, 16, 4), (5, 12, 3)])
def test_matmul_one_tile(seed, m, k, n):
    A, B, C, res = run_matmul(preset("tiny"), m, k, n, seed)
    assert res.status == RunStatus.HALTED
    assert C.dtype == np.int32 and C.shape == (m, n)
    np.testing.assert_array_equal(C, np_matmul(A, B))
    # every MAC is one dot4 lane: K/4 dot4 per output element
    assert sum(t.counters["macs"] for t in res.tiles) == m * n * k


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("m, k, n, b_tile", [(8, 16, 4, 0), (10, 20, 7, 2), (4, 8, 16, 3)])
def test_matmul_four_tiles(seed, m, k, n, b_tile):
    A, B, C, res = run_matmul(preset("small"), m, k, n, seed, b_tile)
    assert res.status == RunStatus.HALTED
    np.testing.assert_array_equal(C, np_matmul(A, B))
    from tessera.golden_model.kernels import matmul as ref
    np.testing.assert_array_equal(C, ref(A, B))
    # rows split 4 ways, each row costs n * k MACs
    rows = [len(r) for r in np.array_split(np.arange(m), 4)]
    assert [t.counters["macs"] for t in res.tiles] == [r * n * k for r in rows]
    # exactly one exchange phase: every tile spent the same cycles exchanging
    ex = {t.counters["exchange"] for t in res.tiles}
    assert len(ex) == 1 and ex.pop() > 0


def test_matmul_odd_depth_scalar_path():
    """K not a multiple of 4: the codelet's scalar loop (no dot4, macs counter 0)."""
    A, B, C, res = run_matmul(preset("small"), 6, 7, 5, seed=7)
    np.testing.assert_array_equal(C, np_matmul(A, B))
    assert sum(t.counters["macs"] for t in res.tiles) == 0


def test_matmul_extreme_values_wrap():
    cfg = preset("tiny")
    g = Graph(cfg)
    a = g.add_variable("a", (2, 8), "int8", 0)
    b = g.add_variable("b", (8, 2), "int8", 0)
    c, prog = matmul(g, a, b)
    eng = Engine(compile_graph(g, prog))
    A = np.full((2, 8), -128, dtype=np.int8)
    B = np.array([[-128, 127]] * 8, dtype=np.int8)
    eng.write_tensor("a", A)
    eng.write_tensor("b", B)
    eng.run()
    # by hand: 8 * (-128 * -128) = 131072, 8 * (-128 * 127) = -130048
    np.testing.assert_array_equal(eng.read_tensor(c.name), [[131072, -130048]] * 2)


def test_copy_exchange_int32_with_local_part():
    g = Graph(preset("small"))
    s = g.add_variable("s", 24, "int32", map_linearly())          # 6 per tile
    d = g.add_variable("d", 24, "int32", [(3, 0, 10), (0, 10, 12), (1, 12, 24)])
    eng = Engine(compile_graph(g, Copy(s, d)))
    x = np.arange(24, dtype=np.int32) * 1000 - 7
    eng.write_tensor("s", x)
    res = eng.run()
    np.testing.assert_array_equal(eng.read_tensor("d"), x)
    np.testing.assert_array_equal(eng.read_tensor("s"), x)  # source unchanged
    assert res.status == RunStatus.HALTED


def test_copy_ring_shift_repeat():
    """Repeat(n, Copy-ring + Copy-back) rotates by n; each Copy is an exchange phase."""
    g = Graph(preset("small"))
    x = g.add_variable("x", (4, 8), "int32", map_linearly(grain=8))
    y = g.add_variable("y", (4, 8), "int32", map_linearly(grain=8))
    shift = Copy([x[i] for i in range(4)], [y[(i + 1) % 4] for i in range(4)])
    back = Copy(y, x)  # all local: memcpy vertices, no exchange
    cg = compile_graph(g, Repeat(3, Sequence(shift, back)))
    assert [op[0] for op in cg.ops] == ["repeat", "exch", "exec"]
    eng = Engine(cg)
    v = np.arange(32, dtype=np.int32).reshape(4, 8) * -3
    eng.write_tensor("x", v)
    res = eng.run()
    np.testing.assert_array_equal(eng.read_tensor("x"), np.roll(v, 3, axis=0))
    # three exchange phases per tile, each of the same length
    assert len({t.counters["exchange"] for t in res.tiles}) == 1
    # running again continues from the kept state
    eng.run()
    np.testing.assert_array_equal(eng.read_tensor("x"), np.roll(v, 6, axis=0))


def test_copy_int8_slices():
    g = Graph(preset("small"))
    s = g.add_variable("s", (4, 12), "int8", map_linearly(grain=12))
    d = g.add_variable("d", (3, 12), "int8", 3)
    # rows 0, 1 and part of row 2 of s (tiles 0, 1, 2) gathered on tile 3 by exchange;
    # part of row 3 (already on tile 3) by a local copy vertex
    prog = Copy([s[0], s[1], s[2, 4:12], s[3, 0:2]], [d[2], d[0], d[1, 0:8], d[1, 9:11]])
    eng = Engine(compile_graph(g, prog))
    v = (np.arange(48).reshape(4, 12) - 20).astype(np.int8)
    eng.write_tensor("s", v)
    eng.run()
    out = eng.read_tensor("d")
    np.testing.assert_array_equal(out[2], v[0])
    np.testing.assert_array_equal(out[0], v[1])
    np.testing.assert_array_equal(out[1, 0:8], v[2, 4:12])
    np.testing.assert_array_equal(out[1, 9:11], v[3, 0:2])
    np.testing.assert_array_equal(out[1, [8, 11]], 0)


def test_user_codelet_many_vertices_and_repeat(tmp_path):
    src = tmp_path / "addk.c"
    src.write_text(
        '#include "tsr_graph.h"\n'
        "typedef struct { TSR_FIELD(int32_t, x); uint32_t k; } f_t;\n"
        "void add_k(const f_t *f, uint32_t part, uint32_t nparts) {\n"
        "  for (uint32_t i = part; i < f->x_n; i += nparts) f->x[i] += (int32_t)f->k;\n"
        "}\n")
    cfg = preset("small")
    g = Graph(cfg)
    g.add_codelet("add_k", src, [("x", "inout", "int32"), ("k", "scalar")])
    x = g.add_variable("x", (4, 20), "int32", map_linearly(grain=20))
    cs = g.add_compute_set("inc")
    # tile 0: 10 vertices (more than the 6 contexts), other tiles: one vertex split 6 ways
    for j in range(10):
        g.add_vertex(cs, "add_k", x=x[0, 2 * j:2 * j + 2], k=j)
    for t in range(1, 4):
        g.add_vertex(cs, "add_k", x=x[t], k=-t)
    eng = Engine(compile_graph(g, Repeat(5, Execute(cs))))
    eng.write_tensor("x", np.zeros((4, 20), dtype=np.int32))
    eng.run()
    want = np.zeros((4, 20), dtype=np.int64)
    want[0] = np.repeat(np.arange(10), 2) * 5
    for t in range(1, 4):
        want[t] = -t * 5
    np.testing.assert_array_equal(eng.read_tensor("x"), want)


def test_engine_errors():
    g = Graph(preset("tiny"))
    g.add_variable("v", (2, 3), "int8", 0)
    cg = compile_graph(g, Sequence())
    eng = Engine(cg)
    with pytest.raises(GraphError, match="unknown tensor 'w'"):
        eng.write_tensor("w", np.zeros(6))
    with pytest.raises(GraphError, match=r"data has shape \(6,\), the variable has shape \(2, 3\)"):
        eng.write_tensor("v", np.zeros(6, dtype=np.int8))
    with pytest.raises(GraphError, match=r"values 0..200 do not fit int8"):
        eng.write_tensor("v", np.array([[0, 1, 2], [3, 4, 200]]))
    with pytest.raises(GraphError, match="must be integers"):
        eng.write_tensor("v", np.zeros((2, 3)))
    with pytest.raises(NotImplementedError, match="backend 'nosuch'"):
        Engine(cg, backend="nosuch")
    with pytest.raises(GraphError, match="needs a CompiledGraph"):
        Engine(g)
    # an empty program halts at once and leaves data alone
    eng.write_tensor("v", np.array([[1, 2, 3], [4, 5, 6]]))
    assert eng.run().status == RunStatus.HALTED
    np.testing.assert_array_equal(eng.read_tensor("v"), [[1, 2, 3], [4, 5, 6]])


def test_engine_timeout_raises():
    g = Graph(preset("small"))
    a = g.add_variable("a", (8, 16), "int8", map_linearly(grain=16))
    b = g.add_variable("b", (16, 4), "int8", 0)
    _, prog = matmul(g, a, b)
    eng = Engine(compile_graph(g, prog))
    with pytest.raises(EngineError, match="timed out after 50 cycles") as ei:
        eng.run(max_cycles=50)
    assert ei.value.result.status == RunStatus.TIMEOUT


def test_out_of_memory_runs_nothing():
    calls = []

    @backends.register("spy_h8")
    def spy(config, image, max_cycles, *, preload=(), readback=()):
        calls.append(1)
        raise AssertionError("must not run")

    g = Graph(preset("tiny"))
    a = g.add_variable("a", (64, 200), "int8", 0)   # 12800 B + 4 KiB stacks > 16 KiB
    b = g.add_variable("b", (200, 4), "int8", 0)
    with pytest.raises(GraphMemoryError, match=r"tile 0 out of memory.*tensor 'a' \[0:12800\] 12800 B"):
        _, prog = matmul(g, a, b)
        Engine(compile_graph(g, prog), backend="spy_h8").run()
    assert calls == []


def test_nested_repeat_small_stacks(tmp_path):
    """Repeat(2, [Repeat(3, +1 on every element), ring shift]) with 512-byte stacks."""
    src = tmp_path / "inc.c"
    src.write_text(
        '#include "tsr_graph.h"\n'
        "typedef struct { TSR_FIELD(int32_t, x); } f_t;\n"
        "void inc1(const f_t *f, uint32_t part, uint32_t nparts) {\n"
        "  for (uint32_t i = part; i < f->x_n; i += nparts) f->x[i] += 1;\n"
        "}\n")
    g = Graph(preset("small"))
    g.add_codelet("inc1", src, [("x", "inout", "int32")])
    x = g.add_variable("x", (4, 3), "int32", map_linearly(grain=3))
    y = g.add_variable("y", (4, 3), "int32", map_linearly(grain=3))
    cs = g.add_compute_set("inc")
    for t in range(4):
        g.add_vertex(cs, "inc1", x=x[t])
    ring = Sequence(Copy([x[i] for i in range(4)], [y[(i + 1) % 4] for i in range(4)]),
                    Copy(y, x))
    cg = compile_graph(g, Repeat(2, Sequence(Repeat(3, Execute(cs)), ring)), stack_bytes=512)
    assert cg.memory[0]["stacks"] == 6 * 512
    assert cg.image.symbols["__stack_bytes"] == 512  # crt0 uses it for sp
    assert [op[0] for op in cg.ops] == ["repeat", "repeat", "exec", "exch", "exec"]
    eng = Engine(cg)
    v = np.arange(12, dtype=np.int32).reshape(4, 3) * 10
    eng.write_tensor("x", v)
    eng.run()
    want = v.copy()
    for _ in range(2):
        want = np.roll(want + 3, 1, axis=0)
    np.testing.assert_array_equal(eng.read_tensor("x"), want)
