"""Pooling on tiles (tessera.toolchain.kernels.pool) vs tessera.golden_model.kernels, golden-model backend.

Expected values come from the numpy references (tessera.golden_model.kernels.maxpool2d/avgpool2d/
global_avgpool, an independent vectorised formulation) or are worked out by hand below."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tessera.golden_model import kernels as ref
from tessera.spec.config import ArrayConfig, preset
from tessera.toolchain.graph import Engine, Graph, compile_graph, map_linearly, map_to_tile
from tessera.toolchain.kernels import KernelError, avgpool2d, global_avgpool, maxpool2d


def _run(cfg, X, build, mapping=None, **kw):
    g = Graph(cfg)
    n, h, w, c = X.shape
    x = g.add_variable("x", X.shape, "int8", mapping or map_linearly(grain=w * c))
    y, prog = build(g, x, **kw)
    cg = compile_graph(g, prog)
    for e in cg.exchanges:
        assert e["bound_met"] and e["cycles"] == e["cycle_bound"], e
    eng = Engine(cg, backend="model")
    eng.write_tensor("x", X)
    eng.run(5_000_000)
    return eng.read_tensor(y.name), cg


GEOMS = [  # (shape, pool, stride, padding)
    ((1, 8, 8, 4), 2, None, "valid"),
    ((2, 7, 5, 4), 3, 2, "same"),               # halos across tiles, padding on both sides
    ((1, 9, 6, 8), (3, 2), (1, 2), "valid"),    # rectangular window, overlapping rows
    ((1, 6, 6, 4), 3, 1, 1),                    # explicit padding
    ((1, 5, 7, 3), 2, 2, "same"),               # W*C odd, but every window stays on one tile
]


@pytest.mark.parametrize("shape, pool, stride, padding", GEOMS)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_bit_exact(kind, shape, pool, stride, padding):
    rng = np.random.default_rng(sum(shape) + (kind == "max"))
    X = rng.integers(-128, 128, shape, dtype=np.int8)
    cfg = preset("tiny") if shape[3] == 3 else preset("small")
    build, reference = (maxpool2d, ref.maxpool2d) if kind == "max" else (avgpool2d, ref.avgpool2d)
    got, _ = _run(cfg, X, build, pool_size=pool, stride=stride, padding=padding)
    np.testing.assert_array_equal(got, reference(X, pool, stride=stride, padding=padding))


def test_avgpool_ties_away_from_zero_by_hand():
    # 1x2 windows (stride 2) over one row: pairs (1,2) (-1,-2) (-1,2) (1,-2) (3,4) (-128,-127)
    row = [1, 2, -1, -2, -1, 2, 1, -2, 3, 4, -128, -127]
    X = np.array(row, dtype=np.int8).reshape(1, 1, 12, 1)
    X = np.repeat(X, 4, axis=3)          # 4 channels: W*C multiple of 4
    got, _ = _run(preset("tiny"), X, avgpool2d, pool_size=(1, 2))
    # 1.5 -> 2, -1.5 -> -2, 0.5 -> 1, -0.5 -> -1, 3.5 -> 4, -127.5 -> -128
    want = np.array([2, -2, 1, -1, 4, -128], dtype=np.int8)
    np.testing.assert_array_equal(got[0, 0, :, 0], want)
    np.testing.assert_array_equal(got[..., 3], got[..., 0])


def test_padding_taps_ignored_by_hand():
    # 3x3 image of -100 with a 99 in the centre... all taps negative except the centre
    X = np.full((1, 3, 3, 4), -100, dtype=np.int8)
    X[0, 0, 0, :] = -7
    gmax, _ = _run(preset("tiny"), X, maxpool2d, pool_size=3, stride=1, padding="same")
    # windows containing (0,0): outputs (0,0),(0,1),(1,0),(1,1); zero padding would give 0
    want = np.full((3, 3), -100)
    want[:2, :2] = -7
    np.testing.assert_array_equal(gmax[0, :, :, 2], want)
    gavg, _ = _run(preset("tiny"), X, avgpool2d, pool_size=3, stride=1, padding="same")
    # corner (0,0): 4 real taps (-7 -100*3) / 4 = -76.75 -> -77; edge (0,1): 6 taps
    # (-7 - 500) / 6 = -84.5 -> -85 (tie away from zero); centre: (-7 - 800) / 9 = -89.67 -> -90
    assert gavg[0, 0, 0, 0] == -77
    assert gavg[0, 0, 1, 0] == -85
    assert gavg[0, 1, 1, 0] == -90
    assert gavg[0, 2, 2, 0] == -100


@pytest.mark.parametrize("shape, pname", [((2, 4, 3, 4), "small"), ((3, 5, 2, 8), "small"),
                                          ((1, 2, 2, 4), "tiny")])
def test_global_avgpool(shape, pname):
    rng = np.random.default_rng(7)
    X = rng.integers(-128, 128, shape, dtype=np.int8)
    got, _ = _run(preset(pname), X, global_avgpool)
    want = np.sign(X.astype(np.int64).sum((1, 2))) * \
        ((np.abs(X.astype(np.int64).sum((1, 2))) + shape[1] * shape[2] // 2)
         // (shape[1] * shape[2]))                           # independent: ties away from 0
    np.testing.assert_array_equal(got.reshape(shape[0], shape[3]), want)
    np.testing.assert_array_equal(got, ref.global_avgpool(X, keepdims=True))


def test_pool_work_spread_over_tiles():
    X = np.random.default_rng(3).integers(-128, 128, (1, 16, 4, 4), dtype=np.int8)
    g = Graph(preset("small"))
    x = g.add_variable("x", X.shape, "int8", map_linearly(grain=16))
    y, _ = maxpool2d(g, x, 2)
    # output rows follow their input rows: 2 output rows on each of the 4 tiles
    assert [(iv.tile, iv.size) for iv in y.intervals] == [(t, 2 * 2 * 4) for t in range(4)]


def test_pool_input_on_other_tile():
    # x entirely on tile 3: the output lives there too, no exchange needed
    X = np.random.default_rng(4).integers(-128, 128, (1, 4, 4, 4), dtype=np.int8)
    got, cg = _run(preset("small"), X, avgpool2d, mapping=map_to_tile(3), pool_size=2)
    np.testing.assert_array_equal(got, ref.avgpool2d(X, 2))
    assert cg.exchanges == []


def test_pool_errors():
    g = Graph(preset("small"))
    x = g.add_variable("x", (1, 6, 3, 1), "int8", map_linearly(grain=3))
    x32 = g.add_variable("x32", (1, 4, 4, 4), "int32", 0)
    with pytest.raises(KernelError, match="int8"):
        maxpool2d(g, x32, 2)
    x3 = g.add_variable("x3", (4, 4, 4), "int8", 0)
    with pytest.raises(KernelError, match="4-D"):
        avgpool2d(g, x3, 2)
    with pytest.raises(KernelError, match="pool_size"):
        maxpool2d(g, x, 0)
    with pytest.raises(KernelError, match="padding"):
        maxpool2d(g, x, 2, padding="full")
    with pytest.raises(KernelError, match="exceeds"):
        avgpool2d(g, x, (7, 1))
    with pytest.raises(KernelError, match=r"W·C = 3·1 = 3 to be a multiple of 4"):
        avgpool2d(g, x, 3, stride=1)   # windows cross tiles, rows of 3 bytes


def test_cli_run_pool_json(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "tessera.cli", "run", "avgpool2d", "--preset",
                        "small", "--height", "6", "--width", "6", "--cin", "4",
                        "--kernel-size", "3", "--stride", "2", "--json", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["match"] and r["kernel"] == "avgpool2d" and r["macs"] == 0
    assert r["exchange_bound_met"]
    assert set(r["phase_cycles"]) == {"compute", "sync", "exchange"}


@pytest.mark.parametrize("kernel, extra", [("maxpool2d", ["--padding", "valid"]),
                                           ("global_avgpool", ["--batch", "2"]),
                                           ("requantize", ["--relu", "--zero-point", "-3"])])
def test_run_kernel_api(kernel, extra):
    from tessera.toolchain.kernels.run import run_kernel
    kw = dict(padding="valid") if kernel == "maxpool2d" else \
        dict(batch=2) if kernel == "global_avgpool" else dict(relu=True, zero_point=-3)
    r = run_kernel(kernel, ArrayConfig(tiles=4), height=6, width=4, cin=4, kernel_size=2,
                   stride=2, m=6, n=10, **kw)
    assert r["match"] and r["exchange_bound_met"]
