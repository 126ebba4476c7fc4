"""Kernel library on tiles (tessera/toolchain/kernels) vs the numpy references, golden-model backend.

Expected values come from tessera.golden_model.kernels (independent numpy formulations) or are
computed by hand below; never from the code under test."""

import json

import numpy as np
import pytest

from tessera.golden_model import kernels as ref
from tessera.spec.config import preset
from tessera.toolchain.graph import Engine, Graph, compile_graph, map_linearly, map_to_tile
from tessera.toolchain.kernels import KernelError, requantize
from tessera.toolchain.kernels.block_sparse import block_sparse_matmul
from tessera.toolchain.kernels.conv2d import conv2d_dense, conv_patches
from tessera.toolchain.kernels.matmul import matmul, matmul_requantize

from helpers.cli import run_cli

#: engine_macs of the configurations the kernels are tested on: 0 = the dot4 kernels,
#: 32 = the presets' matrix engine (docs/architecture.md §12).
ENGINES = (0, 32)


def cfg(pname, engine_macs=32):
    return preset(pname).replace(engine_macs=engine_macs)


def _run(g, prog, inputs, out):
    cg = compile_graph(g, prog)
    eng = Engine(cg, backend="model")
    for k, v in inputs.items():
        eng.write_tensor(k, v)
    res = eng.run(5_000_000)
    for e in cg.exchanges:
        assert e["bound_met"] and e["cycles"] == e["cycle_bound"], e
    return eng.read_tensor(out.name), res, cg


# ---------------------------------------------------------------- requantize
def _rq_graph(shape, tiles_preset="small", grain=None):
    g = Graph(preset(tiles_preset))
    grain = grain or shape[-1]
    acc = g.add_variable("acc", shape, "int32", map_linearly(grain=grain))
    out = g.add_variable("out", shape, "int8", map_linearly(grain=grain))
    return g, acc, out


@pytest.mark.parametrize("seed", [0, 1])
def test_requantize_per_channel_random(seed):
    rng = np.random.default_rng(seed)
    C = 5
    g, acc, out = _rq_graph((12, C), grain=1)   # pieces start mid-row: c0 != 0
    m = rng.integers(2**30, 2**31, C)
    s = rng.integers(-20, 4, C)
    b = rng.integers(-5000, 5000, C)
    prog = requantize(g, acc, out, m, s, -7, relu=bool(seed), bias=b)
    A = rng.integers(-2**22, 2**22, (12, C)).astype(np.int32)
    A[0, :] = [2**31 - 1, -2**31, 0, 1, -1]
    got, _, _ = _run(g, prog, {"acc": A}, out)
    np.testing.assert_array_equal(got, ref.requantize(A, m, s, -7, relu=bool(seed), bias=b))


def test_requantize_rounding_ties_by_hand():
    # multiplier 2^30 is 0.5: SRDHM(x, 2^30) = round(x/2) with ties toward +inf,
    # then shift -1: RDBPOT(., 1) rounds half away from zero.
    g, acc, out = _rq_graph((1, 8), tiles_preset="tiny")
    prog = requantize(g, acc, out, 2**30, -1, 0)
    x = np.array([[1, 3, -1, -3, 5, -5, 6, -6]], dtype=np.int32)
    got, _, _ = _run(g, prog, {"acc": x}, out)
    # by hand: SRDHM: 1/2=.5->1, 3/2=1.5->2, -.5->0, -1.5->-1, 2.5->3, -2.5->-2, 3, -3
    # RDBPOT(1): 1/2->1, 2/2=1, 0, -1/2->-1, 3/2->2, -2/2=-1, 3/2->2, -3/2->-2
    np.testing.assert_array_equal(got, [[1, 1, 0, -1, 2, -1, 2, -2]])


def test_requantize_left_shift_wrap_and_saturation():
    g, acc, out = _rq_graph((1, 4), tiles_preset="tiny")
    prog = requantize(g, acc, out, [2**31 - 1, 2**30, 2**30, 1 << 30], [3, 0, 0, 30], 10,
                      relu=True, bias=[0, 100, -100, 0])
    x = np.array([[2**29, 1000, -1000, 3]], dtype=np.int32)
    got, _, _ = _run(g, prog, {"acc": x}, out)
    np.testing.assert_array_equal(got, ref.requantize(
        x, [2**31 - 1, 2**30, 2**30, 1 << 30], [3, 0, 0, 30], 10, relu=True,
        bias=[0, 100, -100, 0]))


def test_requantize_bad_arguments():
    g, acc, out = _rq_graph((2, 4), tiles_preset="tiny")
    with pytest.raises(KernelError, match="shift must be in -31..30"):
        requantize(g, acc, out, 2**30, 31, 0)
    with pytest.raises(KernelError, match=r"shape \[C\] = \[4\]"):
        requantize(g, acc, out, [2**30] * 3, 0, 0)
    with pytest.raises(KernelError, match="out_zero_point"):
        requantize(g, acc, out, 2**30, 0, 200)
    with pytest.raises(KernelError, match="must be int8"):
        requantize(g, acc, acc, 2**30, 0, 0)


# ---------------------------------------------------------------- matmul
@pytest.mark.parametrize("engine_macs", ENGINES)
@pytest.mark.parametrize("pname, m, k, n, layout, seed", [
    ("tiny", 4, 16, 4, "nk", 0),
    ("small", 13, 24, 10, "nk", 1),     # edge blocks in both dimensions
    ("small", 8, 32, 7, "kn", 2),       # B [K, N] transposed on tiles (odd N: dot4)
    ("small", 16, 8, 16, "nk", 3),
])
def test_matmul_bit_exact(pname, m, k, n, layout, seed, engine_macs):
    rng = np.random.default_rng(seed)
    g = Graph(cfg(pname, engine_macs))
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    B = rng.integers(-128, 128, (k, n), dtype=np.int8)
    A[0, :] = -128
    B[:, 0] = -128                      # -128 * -128 products: widened, not wrapped
    init = rng.integers(-2**31, 2**31, n)
    a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
    if layout == "nk":
        b = g.add_variable("b", (n, k), "int8", map_linearly(grain=k))
        host_b = B.T.copy()
    else:
        b = g.add_variable("b", (k, n), "int8", map_to_tile(0))
        host_b = B
    c, prog = matmul(g, a, b, b_layout=layout, init=init)
    got, res, _ = _run(g, prog, {"a": A, "b": host_b}, c)
    want = ((ref.matmul(A, B).astype(np.int64) + init + 2**31) % 2**32 - 2**31).astype(np.int32)
    np.testing.assert_array_equal(got, want)
    assert sum(t.counters["macs"] for t in res.tiles) == m * n * k


@pytest.mark.parametrize("engine_macs", ENGINES)
def test_matmul_requantize_chain(engine_macs):
    rng = np.random.default_rng(7)
    g = Graph(cfg("small", engine_macs))
    m, k, n = 8, 64, 10
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    W = rng.integers(-30, 30, (k, n), dtype=np.int8)
    mult, shift = ref.quantize_multiplier(rng.uniform(1e-4, 1e-2, n))
    bias = rng.integers(-3000, 3000, n)
    a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
    b = g.add_variable("w", (n, k), "int8", map_to_tile(1))
    out, prog = matmul_requantize(g, a, b, mult, shift, -5, relu=True, bias=bias,
                                  b_layout="nk")
    got, _, _ = _run(g, prog, {"a": A, "w": W.T.copy()}, out)
    np.testing.assert_array_equal(
        got[:, :n], ref.requantize(ref.matmul(A, W), mult, shift, -5, relu=True, bias=bias))
    assert got.shape == (m, n if engine_macs == 0 else 16)


def test_matmul_errors():
    g = Graph(preset("small"))
    a = g.add_variable("a", (4, 6), "int8", map_linearly(grain=6))
    b = g.add_variable("b", (6, 4), "int8", 0)
    with pytest.raises(KernelError, match="multiple of 4"):
        matmul(g, a, b)
    a2 = g.add_variable("a2", (3, 8), "int8", map_linearly(grain=4))
    b2 = g.add_variable("b2", (8, 4), "int8", 0)
    with pytest.raises(KernelError, match="splits a row"):
        matmul(g, a2, b2)


# ---------------------------------------------------------------- block sparse
@pytest.mark.parametrize("bs, m, k, n, sparsity, seed", [
    (4, 9, 32, 16, 0.5, 0), (8, 8, 32, 32, 0.75, 1), (16, 12, 64, 32, 0.3, 2),
    (4, 4, 16, 8, 0.99, 3),   # all blocks of some columns dropped
])
@pytest.mark.parametrize("engine_macs", ENGINES)
def test_block_sparse_matmul_bit_exact(bs, m, k, n, sparsity, seed, engine_macs):
    rng = np.random.default_rng(seed)
    g = Graph(cfg("small", engine_macs))
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    W = rng.integers(-128, 128, (k, n), dtype=np.int8)
    mask = rng.random((k // bs, n // bs)) >= sparsity
    w = ref.BlockSparseMatrix.from_dense(W, bs, mask=mask)
    a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
    c, prog = block_sparse_matmul(g, a, w)
    got, res, _ = _run(g, prog, {"a": A}, c)
    np.testing.assert_array_equal(got, ref.matmul(A, w.to_dense()))
    np.testing.assert_array_equal(got, ref.block_sparse_matmul(A, w))
    if engine_macs == 0:
        assert sum(t.counters["macs"] for t in res.tiles) == m * w.nnzb * bs * bs
    else:      # the engine also multiplies the zero blocks of a column's progression
        assert sum(t.counters["macs"] for t in res.tiles) >= m * w.nnzb * bs * bs


def test_block_sparse_balanced_over_tiles():
    rng = np.random.default_rng(5)
    g = Graph(cfg("small", 0))
    W = rng.integers(-128, 128, (32, 32), dtype=np.int8)
    w = ref.BlockSparseMatrix.from_dense(W, 8, mask=rng.random((4, 4)) >= 0.5)
    a = g.add_variable("a", (16, 32), "int8", map_linearly(grain=32))
    c, prog = block_sparse_matmul(g, a, w)
    A = rng.integers(-128, 128, (16, 32), dtype=np.int8)
    got, res, _ = _run(g, prog, {"a": A}, c)
    macs = [t.counters["macs"] for t in res.tiles]
    assert macs == [4 * w.nnzb * 64] * 4         # same work on every tile


# ---------------------------------------------------------------- conv2d
@pytest.mark.parametrize("shape, ks, stride, padding, zp, seed", [
    ((1, 6, 6, 3), 3, 1, "same", 5, 0),      # K = 27 padded to 28; zero-point padding
    ((2, 7, 5, 4), 3, 2, "valid", -3, 1),
    ((1, 5, 5, 8), 1, 1, "valid", 0, 2),
])
@pytest.mark.parametrize("engine_macs", ENGINES)
def test_conv2d_bit_exact(shape, ks, stride, padding, zp, seed, engine_macs):
    rng = np.random.default_rng(seed)
    X = rng.integers(-128, 128, shape, dtype=np.int8)
    Wt = rng.integers(-128, 128, (ks, ks, shape[3], 8), dtype=np.int8)
    cols = conv_patches(X, ks, stride, padding, zp)
    g = Graph(cfg("small", engine_macs))
    a = g.add_variable("p", cols.shape, "int8", map_linearly(grain=cols.shape[1]))
    c, prog = conv2d_dense(g, a, Wt, zp)
    got, _, _ = _run(g, prog, {"p": cols}, c)
    want = ref.conv2d(X, Wt, stride=stride, padding=padding, input_zero_point=zp)
    np.testing.assert_array_equal(got.reshape(want.shape), want)


# ---------------------------------------------------------------- tessera run CLI
KEYS = {"match", "cycles", "phase_cycles", "macs", "mac_utilization", "compute_utilization",
        "exchange_cycles", "exchange_bound", "exchange_bound_met"}


def _cli(*args):
    return run_cli("run", *args)


@pytest.mark.parametrize("args", [
    ["matmul", "--m", "8", "--k", "16", "--n", "8"],
    ["conv2d", "--height", "5", "--width", "5", "--zero-point", "4"],
    ["conv2d", "--depthwise", "--cin", "8", "--stride", "2", "--zero-point", "-2"],
    ["block_sparse_matmul", "--m", "8", "--k", "32", "--n", "16", "--block-size", "8",
     "--sparsity", "0.5"],
    ["block_sparse_conv2d", "--height", "4", "--width", "4", "--cin", "4", "--cout", "8",
     "--block-size", "4"],
])
@pytest.mark.parametrize("engine_macs", ENGINES)
def test_cli_run_json(tmp_path, args, engine_macs):
    out = tmp_path / "r.json"
    p = _cli(*args, "--json", str(out), "--seed", "3", "--engine-macs", str(engine_macs))
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert KEYS <= set(r)
    assert set(r["phase_cycles"]) == {"compute", "sync", "exchange"}
    assert r["match"] is True and r["exchange_bound_met"] is True
    if r["matrix_engine"]:     # padded channels / progression zero blocks are multiplied too
        assert r["macs"] >= r["macs_expected"]
    else:
        assert r["macs"] == r["macs_expected"]
    assert r["exchange_cycles"] == r["exchange_bound"]
    t = r["tiles"]
    peak = r["peak_macs_per_cycle_per_tile"]
    assert peak == (engine_macs or 4)
    assert r["mac_utilization"] == pytest.approx(r["macs"] / (r["cycles"] * peak * t))
    assert r["compute_utilization"] == pytest.approx(
        r["macs"] / (r["phase_cycles"]["compute"] * peak * t))
    assert r["phase_cycles"]["compute"] <= r["cycles"]


@pytest.mark.parametrize("args, msg", [
    (["matmul", "--k", "6"], "multiple of 4"),
    (["block_sparse_matmul", "--sparsity", "1.0"], "sparsity"),
    (["block_sparse_matmul", "--block-size", "5"], "block-size"),
    (["block_sparse_matmul", "--k", "20", "--block-size", "8"], "multiples of --block-size"),
    (["matmul", "--preset", "tiny", "--m", "64", "--k", "200", "--n", "8"], "out of memory"),
    (["conv2d", "--height", "2", "--width", "2", "--kernel-size", "3", "--padding", "valid"],
     "conv"),
])
def test_cli_run_bad_usage(args, msg):
    p = _cli(*args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert msg in p.stderr and "Traceback" not in p.stderr


def test_cli_run_mismatch_exit_3(monkeypatch, capsys):
    from tessera import cli
    from tessera.toolchain.kernels import run as krun
    real = krun._report

    def broken(result, compiled, macs, got, want):
        return real(result, compiled, macs, got, want + 1)   # corrupt the reference
    monkeypatch.setattr(krun, "_report", broken)
    assert cli.main(["run", "matmul", "--m", "4", "--k", "8", "--n", "4"]) == 3
    assert "MISMATCH" in capsys.readouterr().out
