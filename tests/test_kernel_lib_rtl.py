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
