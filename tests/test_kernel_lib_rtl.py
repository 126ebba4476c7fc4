"""Kernel library on the RTL backend (Verilator): bit-exact with the numpy references and the
same RunResult JSON as the golden model. In the default suite: with the Verilator build of the
`tiny`/`small` configs cached (shared with the other rtl tests) each case takes 1-2 s; the
first, cold build of a config costs about 15-40 s once."""


import pytest

from tessera.spec.config import preset
from tessera.toolchain.kernels.run import run_kernel

pytestmark = pytest.mark.rtl

@pytest.mark.parametrize("kernel, pname, opts", [
    ("matmul", "tiny", dict(m=4, k=16, n=4)),
    ("conv2d", "tiny", dict(height=3, width=3, cin=4, cout=4, zero_point=3)),
    ("block_sparse_matmul", "tiny", dict(m=4, k=16, n=8, block_size=4, sparsity=0.5)),
    ("matmul", "small", dict(m=8, k=16, n=8)),            # with an exchange phase
    ("maxpool2d", "tiny", dict(height=4, width=4, cin=4, kernel_size=3, stride=1,
                               padding="same")),
    ("avgpool2d", "small", dict(height=6, width=3, cin=4, kernel_size=3, stride=2,
                                padding="same")),          # halo rows through the exchange
])
def test_kernel_rtl_matches_model_and_reference(kernel, pname, opts):
    # the dot4 kernels (engine_macs = 0); the engine kernels are in the slow test below
    r = run_kernel(kernel, preset(pname).replace(engine_macs=0), backend="both", seed=1, **opts)
    assert r["backends"]["model"]["match"] and r["backends"]["rtl"]["match"]
    assert r["backends_agree"] and r["match"]
    assert r["exchange_bound_met"]


@pytest.mark.parametrize("kernel, pname, opts", [
    ("matmul", "tiny", dict(m=4, k=16, n=4)),
    ("conv2d", "tiny", dict(height=3, width=3, cin=8, cout=4, zero_point=3)),
    ("block_sparse_matmul", "small", dict(m=8, k=32, n=16, block_size=8, sparsity=0.5)),
])
def test_engine_kernel_rtl_matches_model(kernel, pname, opts):
    """Matrix-engine kernels (docs/architecture.md §12) on the RTL: skipped until the RTL
    engine (branch engine-rtl) is merged (with it merged, 3 passed in 61 s cold)."""
    r = run_kernel(kernel, preset(pname), backend="both", seed=1, **opts)
    assert r["matrix_engine"]
    assert r["backends"]["model"]["match"] and r["backends"]["rtl"]["match"]
    assert r["backends_agree"] and r["match"]


def test_engine_block_sparse_two_contexts_rtl_matches_model():
    """Block-sparse commands issued from contexts 0 and 3 (issue_plan; §4: each context's
    mrun is accepted only in its own slots, §12: the engine takes whichever comes first after
    a command ends): the RTL run equals the model's (cycles and every counter) and both equal
    the numpy reference. 4 tiles × 8 rows, K = 64, N = 32, 16×16 blocks: block column 0
    stores block row 1, column 1 rows 0 and 2 (a progression: k1 stride 32 bytes), so 8
    commands per tile of 2 block-row lengths."""
    import numpy as np
    from tessera.golden_model import kernels as ref
    from tessera.toolchain.graph import Engine, Graph, compile_graph, map_linearly
    from tessera.toolchain.kernels import block_sparse_matmul
    cfg = preset("small")
    m, k, n, bs = 8 * cfg.tiles, 64, 32, 16
    mask = np.zeros((k // bs, n // bs), bool)
    mask[1, 0] = True
    mask[[0, 2], 1] = True
    rng = np.random.default_rng(7)
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    W = rng.integers(-128, 128, (k, n), dtype=np.int8)
    w = ref.BlockSparseMatrix.from_dense(W, bs, mask=mask)
    g = Graph(cfg)
    a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
    c, prog = block_sparse_matmul(g, a, w)
    (cs,) = [x for x in g.compute_sets if x.engine_start]
    assert sorted({v.context for v in cs.vertices}) == [0, 3]
    cg = compile_graph(g, prog)
    runs = {}
    for backend in ("model", "rtl"):
        eng = Engine(cg, backend=backend)
        eng.write_tensor("a", A)
        res = eng.run()
        runs[backend] = (eng.read_tensor(c.name), res.cycles, [t.counters for t in res.tiles])
        np.testing.assert_array_equal(runs[backend][0], ref.block_sparse_matmul(A, w))
    assert runs["model"][1:] == runs["rtl"][1:]
