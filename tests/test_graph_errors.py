"""Graph API errors (each test names the case it covers; each failed on the code before these
checks existed): objects of another graph refused by name, and EngineError naming
codelet, vertex, compute set, tile, hex pc with function and file:line, and on a timeout
the tiles still running."""

import re
from pathlib import Path

import numpy as np
import pytest

from tessera.spec.config import preset
from tessera.toolchain.graph import (Copy, Engine, EngineError, Execute, Graph, GraphError,
                                     Sequence, compile_graph, map_linearly, map_to_tile)

CODELETS = """#include <stdint.h>
#include "tsr_graph.h"

typedef struct { TSR_FIELD(int32_t, out); } fields_t;

void bad_store(const fields_t *f, uint32_t part, uint32_t nparts)
{
    if (part == 1)
        f->out[100000] = 7;            /* BAD STORE */
    else
        f->out[0] = (int32_t)nparts;
}

void spin(const fields_t *f, uint32_t part, uint32_t nparts)
{
    volatile int32_t *p = f->out;
    while (part == 2)
        p[0] += 1;                     /* SPIN */
}
"""


@pytest.fixture(scope="module")
def codelet_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("cdl") / "faulty.c"
    p.write_text(CODELETS)
    return p


def _line(src: Path, marker: str) -> int:
    return next(i for i, ln in enumerate(src.read_text().splitlines(), 1) if marker in ln)


def _graph(name, codelet_file):
    g = Graph(preset("small"))
    x = g.add_variable("x", (4, 8), "int32", map_linearly(grain=8))
    c = g.add_codelet(name, codelet_file, [("out", "out", "int32")])
    cs = g.add_compute_set("work")
    for t in range(4):
        g.add_vertex(cs, c, out=x[t])
    return g, cs


def test_copy_and_execute_of_another_graph_are_named():
    """Case 8: Copy into / Execute of another graph's variable or compute set (bare
    KeyError before), and an empty compute set of another graph (accepted silently)."""
    g1, g2 = Graph(preset("small")), Graph(preset("small"))
    a = g1.add_variable("a", (4, 4), "int32", map_linearly(grain=4))
    other = g2.add_variable("theirs", (4, 4), "int32", map_to_tile(1))
    with pytest.raises(GraphError, match=r"Copy destination 'theirs' is a variable of another "
                                         r"graph"):
        compile_graph(g1, Copy(a, other))
    with pytest.raises(GraphError, match=r"Copy source 'theirs' is a variable of another graph"):
        compile_graph(g1, Copy(other, a))
    same_name = g2.add_variable("a", (4, 4), "int32", map_to_tile(2))
    b = g1.add_variable("b", (4, 4), "int32", map_to_tile(3))
    with pytest.raises(GraphError, match=r"'a' is a variable of another graph \(this graph has "
                                         r"another variable of that name\)"):
        compile_graph(g1, Copy(same_name, b))
    cs2 = g2.add_compute_set("their_cs")
    with pytest.raises(GraphError, match=r"Execute of compute set 'their_cs', which belongs to "
                                         r"another graph \(0 vertices\)"):
        compile_graph(g1, Sequence(Execute(cs2)))
    with pytest.raises(GraphError, match="compute set 'their_cs' belongs to another graph"):
        g1.add_vertex(cs2, "tsr_copy", dst=a[0], src=a[1], nbytes=16)
    own = g1.add_compute_set("mine")
    compile_graph(g1, Execute(own))                  # its own empty compute set is fine


def test_engine_error_on_fault_names_vertex_and_source(codelet_file):
    """Case 9 / (b): EngineError on a fault names codelet, vertex, compute set, tile, hex pc
    (was a raw dict with a decimal pc) and (c) the function and file:line."""
    g, cs = _graph("bad_store", codelet_file)
    eng = Engine(compile_graph(g, Execute(cs)))
    with pytest.raises(EngineError) as ei:
        eng.run(max_cycles=100_000)
    e = ei.value
    msg = str(e)
    line = _line(codelet_file, "BAD STORE")
    assert re.search(rf"tile 0 context \d+: access_fault_store at pc 0x[0-9a-f]+ in "
                     rf"bad_store\+0x[0-9a-f]+ \(\S*faulty.c:{line}\), addr 0x[0-9a-f]+",
                     msg), msg
    assert "running codelet 'bad_store', vertex 0 of compute set 'work', part 1 of 6" in msg
    assert "3 more tile(s) faulted" in msg
    assert "{" not in msg                           # no raw dict
    f = e.result.tiles[0].fault
    assert (e.tile, e.context, e.pc, e.cause) == (0, f.context, f.pc, "access_fault_store")
    assert e.addr == f.addr and f"at pc {f.pc:#x} in bad_store" in msg
    assert (e.entry.codelet, e.entry.vertex, e.entry.compute_set, e.entry.part,
            e.entry.nparts) == ("bad_store", 0, "work", 1, 6)
    # the entry word is per context: context 1 ran part 1 (worklist of 1 vertex on 6 ctxs)
    assert e.context == 1 and eng.running_entry(0, 1) == e.entry


def test_engine_error_on_timeout_names_running_tiles(codelet_file):
    """Case 9: a codelet that never returns timed out with 'not arrived at the ARRAY
    barrier: []'; now the contexts still running are named, with codelet and source line."""
    g, cs = _graph("spin", codelet_file)
    eng = Engine(compile_graph(g, Execute(cs)))
    with pytest.raises(EngineError) as ei:
        eng.run(max_cycles=20_000)
    msg = str(ei.value)
    assert "not arrived at the ARRAY barrier: []" not in msg
    assert "still running on tile(s) 0-3" in msg, msg
    line = _line(codelet_file, "SPIN")
    # the loop is the `while` line and its body (SPIN): the timeout may catch either
    for t in range(4):
        assert re.search(rf"tile {t} context 2 at pc 0x[0-9a-f]+ in spin\+0x[0-9a-f]+ "
                         rf"\(\S*faulty.c:({line - 1}|{line})\) running codelet 'spin', vertex {t} of "
                         rf"compute set 'work', part 2 of 6", msg), msg
    assert "wait tile: tile(s) 0-3" in msg
    assert ei.value.tiles_running == [0, 1, 2, 3]


def test_engine_still_runs_good_graphs(codelet_file):
    """Guard for the runtime change: the current-entry words do not disturb a clean run and
    are 0 again once every codelet has returned."""
    g = Graph(preset("small"))
    x = g.add_variable("x", (4, 8), "int32", map_linearly(grain=8))
    y = g.add_variable("y", (4, 8), "int32", map_linearly(grain=8))
    cs = g.add_compute_set("cp")
    for t in range(4):
        g.add_vertex(cs, "tsr_copy", dst=y[t], src=x[t], nbytes=32)
    eng = Engine(compile_graph(g, Execute(cs)))
    X = np.arange(32, dtype=np.int32).reshape(4, 8)
    eng.write_tensor("x", X)
    eng.run()
    assert (eng.read_tensor("y") == X).all()
    assert all(eng.running_entry(t, c) is None for t in range(4) for c in range(6))


def test_docs_variable_views_and_constants():
    """Case 11 (docs/compiler.md): 'Variable has no .reshape()/.flatten()' — now it has, as
    the guide says — and add_constant of int64 data says which dtype= to pass."""
    g = Graph(preset("small"))
    v = g.add_variable("v", (4, 6), "int8", map_linearly(grain=6))
    assert v.reshape(6, 4).shape == (6, 4) and v.flatten().shape == (24,)
    assert v.reshape(2, 12)[1].index.tolist() == list(range(12, 24))
    with pytest.raises(GraphError, match=r"data is int64; pass dtype='int8', 'uint8' or "
                                         r"'int32'"):
        g.add_constant("k", np.arange(8), map_to_tile(0))
    k = g.add_constant("k", np.arange(8), map_to_tile(0), dtype="int32")
    assert k.initial.dtype == np.int32
