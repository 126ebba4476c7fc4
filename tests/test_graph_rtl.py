"""Graph compiler on the RTL backend (Verilator): same results and same RunResult JSON as the
golden model. Slow (Verilator build + cocotb run), so only in `make test-all`."""

import numpy as np
import pytest

from tessera.spec.config import preset
from tessera.toolchain.graph import Engine, Graph, compile_graph, map_linearly, map_to_tile, matmul

pytestmark = [pytest.mark.slow, pytest.mark.rtl]


@pytest.mark.parametrize("preset_name, m, k, n", [("tiny", 2, 8, 2), ("small", 4, 8, 3)])
def test_matmul_rtl_matches_model(preset_name, m, k, n):
    g = Graph(preset(preset_name))
    a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
    b = g.add_variable("b", (k, n), "int8", map_to_tile(0))
    c, prog = matmul(g, a, b)
    cg = compile_graph(g, prog)
    rng = np.random.default_rng(3)
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    B = rng.integers(-128, 128, (k, n), dtype=np.int8)
    want = (A.astype(np.int64) @ B.astype(np.int64)).astype(np.int32)
    out = {}
    for backend in ("model", "rtl"):
        eng = Engine(cg, backend=backend)
        eng.write_tensor("a", A)
        eng.write_tensor("b", B)
        out[backend] = (eng.run(500_000), eng.read_tensor(c.name))
        np.testing.assert_array_equal(out[backend][1], want)
    assert out["rtl"][0].to_json() == out["model"][0].to_json()
