"""Checked graph runs (tessera.toolchain.graph.checked): a vertex store outside the tensors the
vertex may write is reported with vertex, codelet, compute set, tile, context, pc with
file:line, address and the tensor it hit. Before the checked mode these stores went
unnoticed (the runs below halt normally when unchecked)."""

from pathlib import Path

import numpy as np
import pytest

from tessera.spec.config import preset
from tessera.spec.result import RunStatus
from tessera.toolchain.graph import (Engine, Execute, Graph, GraphError, TensorBoundsError,
                                     compile_graph, map_linearly)

CODELETS = """#include <stdint.h>
#include "tsr_graph.h"

typedef struct { TSR_FIELD(const int32_t, src); TSR_FIELD(int32_t, dst); uint32_t over; } fields_t;

/* dst[i] = src[i] + 1 for i < dst_n + over: `over` elements past the end of dst. */
void over_copy(const fields_t *f, uint32_t part, uint32_t nparts)
{
    for (uint32_t i = part; i < f->dst_n + f->over; i += nparts)
        f->dst[i] = f->src[i % f->src_n] + 1;          /* OVER STORE */
}

/* Uses a stack buffer (allowed) and, with over = 1, writes its own vertex record. */
void stack_then_record(const fields_t *f, uint32_t part, uint32_t nparts)
{
    volatile int32_t buf[8];
    for (uint32_t i = 0; i < 8; i++)
        buf[i] = (int32_t)(i + part);
    for (uint32_t i = part; i < f->dst_n; i += nparts)
        f->dst[i] = f->src[i] + buf[i & 7] - (int32_t)part;
    if (f->over && part == 0)
        *(volatile uint32_t *)&f->over = 0;            /* RECORD STORE */
}
"""


@pytest.fixture(scope="module")
def codelet_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("chk") / "checked.c"
    p.write_text(CODELETS)
    return p


def _line(src: Path, marker: str) -> int:
    return next(i for i, ln in enumerate(src.read_text().splitlines(), 1) if marker in ln)


def _engine(codelet_file, name, over_tile):
    """4 tiles, variables x, y, z of [4, 16] int32 (row t on tile t, allocated in that order),
    one vertex per tile: name(src=x[t], dst=y[t], over=1 on over_tile)."""
    g = Graph(preset("small"))
    x = g.add_variable("x", (4, 16), "int32", map_linearly(grain=16))
    y = g.add_variable("y", (4, 16), "int32", map_linearly(grain=16))
    g.add_variable("z", (4, 16), "int32", map_linearly(grain=16))
    c = g.add_codelet(name, codelet_file, [("src", "in", "int32"), ("dst", "out", "int32"),
                                           ("over", "scalar")])
    cs = g.add_compute_set("cp")
    for t in range(4):
        g.add_vertex(cs, c, src=x[t], dst=y[t], over=1 if t == over_tile else 0)
    eng = Engine(compile_graph(g, Execute(cs)), backend="model")
    eng.write_tensor("x", np.arange(64, dtype=np.int32).reshape(4, 16))
    return eng


def test_store_past_a_tensor_is_reported(codelet_file):
    eng = _engine(codelet_file, "over_copy", over_tile=2)
    plain = eng.run(checked=False)
    assert plain.status == RunStatus.HALTED          # unchecked: nobody notices
    eng = _engine(codelet_file, "over_copy", over_tile=2)
    with pytest.raises(TensorBoundsError) as ei:
        eng.run(checked=True)
    e = ei.value
    # The one bad store writes dst[16] on tile 2, the word right after y's row 2. One vertex
    # per tile with T = 6 contexts: the compiler splits it into 6 parts, part p on context p
    # (docs/compiler.md); index 16 belongs to part 16 mod 6 = 4.
    y_row2 = int(eng.compiled.tensors["y"][1][2])
    assert (e.tile, e.context, e.addr) == (2, 4, y_row2 + 64)
    assert (e.entry.codelet, e.entry.compute_set, e.entry.vertex) == ("over_copy", "cp", 2)
    assert len(e.violations) == 1
    # x, y, z rows of tile 2 are allocated back to back: the word after y[2] is z[2][0],
    # elements 32..48 of z.
    assert e.violation.hit == "tensor 'z' [32:48]"
    msg = str(e)
    line = _line(codelet_file, "OVER STORE")
    for part in ("tile 2 context 4", "codelet 'over_copy', vertex 2 of compute set 'cp'",
                 f"at {y_row2 + 64:#x}", "tensor 'z' [32:48]", f"checked.c:{line}",
                 "field 'dst' (tensor 'y')"):
        assert part in msg, (part, msg)
    # the tensors are read back even though the run raised
    assert (eng.read_tensor("y")[2] == np.arange(32, 48) + 1).all()


def test_clean_run_matches_unchecked_and_allows_the_stack(codelet_file):
    a = _engine(codelet_file, "stack_then_record", over_tile=-1)
    b = _engine(codelet_file, "stack_then_record", over_tile=-1)
    ra, rb = a.run(checked=True), b.run(checked=False)
    assert ra.to_json() == rb.to_json()
    # dst[i] = src[i] + buf[i & 7] - part with buf[k] = k + part: src[i] + (i & 7)
    want = np.arange(64).reshape(4, 16) + (np.arange(16) & 7)
    assert (a.read_tensor("y") == want).all() and (b.read_tensor("y") == want).all()


def test_store_into_the_vertex_record_names_it(codelet_file):
    eng = _engine(codelet_file, "stack_then_record", over_tile=1)
    with pytest.raises(TensorBoundsError) as ei:
        eng.run(checked=True)
    e = ei.value
    assert (e.tile, e.context) == (1, 0)
    assert e.violation.hit == "vertex records of 'cp'"
    assert f"checked.c:{_line(codelet_file, 'RECORD STORE')}" in str(e)


def test_checked_is_the_default_on_the_model_in_tests(codelet_file, monkeypatch):
    monkeypatch.setenv("TESSERA_CHECKED", "1")
    with pytest.raises(TensorBoundsError):
        _engine(codelet_file, "over_copy", over_tile=0).run()
    monkeypatch.setenv("TESSERA_CHECKED", "0")
    assert _engine(codelet_file, "over_copy", over_tile=0).run().status == RunStatus.HALTED


def test_checked_needs_the_model_backend(codelet_file):
    eng = _engine(codelet_file, "over_copy", over_tile=-1)
    eng.backend = "rtl"
    with pytest.raises(GraphError, match="needs the 'model' backend, not 'rtl'"):
        eng.run(checked=True)


@pytest.mark.parametrize("how", ["log-overflow", "vector-trace"])
def test_both_store_sources_find_the_same_violation(codelet_file, monkeypatch, how):
    """A checked run replays the fast engine's store log; a log too small for the run's
    stores (8 entries here) is run again at the size it needed, and without a fast engine
    the vectorized engine's retire trace gives the stores: the same violation either way
    (the expected one is worked out in test_store_past_a_tensor_is_reported)."""
    import tessera.golden_model.fast as fast
    import tessera.toolchain.graph.checked as checked
    if how == "log-overflow":
        monkeypatch.setattr(checked, "STORE_LOG_ENTRIES", 8)
    else:
        monkeypatch.setattr(fast, "available", lambda: False)
    eng = _engine(codelet_file, "over_copy", over_tile=2)
    with pytest.raises(TensorBoundsError) as ei:
        eng.run(checked=True)
    e = ei.value
    y_row2 = int(eng.compiled.tensors["y"][1][2])
    assert (e.tile, e.context, e.addr, e.violation.hit) == (2, 4, y_row2 + 64,
                                                           "tensor 'z' [32:48]")
    assert len(e.violations) == 1
    assert (eng.read_tensor("y")[2] == np.arange(32, 48) + 1).all()
