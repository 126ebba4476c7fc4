"""The importer's float32-rule codelets against tessera.golden_model.kernels: the float32
requantization (fast path, near-tie and large-accumulator slow paths, every multiplier range),
QuantizeLinear (ties, NaN, infinities, signed zeros, per axis) and DequantizeLinear of int32
(soft-float), each run on the golden model as a one-vertex graph."""

import numpy as np
import pytest

from tessera.golden_model.kernels import dequantize_linear, quantize_linear, requantize_float32
from tessera.spec.config import preset
from tessera.toolchain.graph import Engine, Execute, Graph, compile_graph
from tessera.toolchain.onnx.codelets import codelet
from tessera.toolchain.onnx.lower import quant_params, rqf_params


def _run(build, inputs, outputs):
    g = Graph(preset("small"))
    cs = g.add_compute_set("cs")
    names = build(g, cs)
    eng = Engine(compile_graph(g, Execute(cs)), backend="model")
    for k, v in inputs.items():
        eng.write_tensor(k, v)
    eng.run()
    return {k: eng.read_tensor(k) for k in outputs}


def _rqf(acc, mult, zp, dtype):
    n, M = acc.shape

    def build(g, cs):
        a = g.add_variable("acc", acc.shape, "int32", 0)
        o = g.add_variable("out", acc.shape, "uint8", 0)
        p = g.add_constant("params", rqf_params(mult), 0, dtype="int32")
        qmin, qmax = (-128, 127) if dtype == "int8" else (0, 255)
        g.add_vertex(cs, codelet(g, "tso_rqf"), acc=a.tensor().flatten(), out=o.tensor().flatten(),
                     params=p.tensor().flatten(), rows=n, P=n, M=M, os_s=n * M, os_p=M, os_m=1,
                     zp=zp, ylo=qmin - zp, yhi=qmax - zp)
    got = _run(build, {"acc": acc}, ["out"])["out"]
    return got.view(np.int8) if dtype == "int8" else got


def _near_ties(mult, rng, n):
    """Accumulators whose exact product with M lies within 2^-20 of a half-integer."""
    k = rng.integers(-300, 300, n) + 0.5
    acc = np.round(k / np.float64(mult)).astype(np.int64)
    acc += rng.integers(-2, 3, n)
    return np.clip(acc, -2**31, 2**31 - 1)


@pytest.mark.parametrize("mult", [np.float32(0.0123), np.float32(2.0**-16 * 1.37),
                                  np.float32(2.0**-20 * 1.9), np.float32(0.87),
                                  np.float32(1.5), np.float32(2.0**-26 * 1.1)])
def test_rqf_equals_float32_rule(mult):
    rng = np.random.default_rng(int(mult.view(np.int32)))
    cols = 3
    parts = [rng.integers(-2**31, 2**31, 24), rng.integers(-2**25, 2**25, 24),
             rng.integers(-40000, 40000, 24), _near_ties(mult, rng, 60),
             np.array([0, 1, -1, 2**24 - 1, 2**24, -2**24, 2**31 - 1, -2**31, 2**30, -2**30,
                       2**24 + 1, -(2**24 + 3)])]
    acc = np.concatenate(parts)
    acc = np.resize(acc, (acc.size // cols + 1) * cols).reshape(-1, cols).astype(np.int32)
    mults = np.array([mult, np.float32(mult * np.float32(1.01)), np.float32(mult * np.float32(0.5))],
                     np.float32)
    for dtype, zp in (("int8", -3), ("uint8", 131)):
        got = _rqf(acc, mults, zp, dtype)
        ref = requantize_float32(acc, mults, zp, dtype=dtype, axis=-1)
        assert np.array_equal(got, ref), np.argwhere(got != ref)[:5]


def test_rqf_fast_path_window_is_conservative():
    """Exact products close to k + 1/2 are the interesting ones: sweep a range densely."""
    mult = np.float32(1.0 / 97.0)
    acc = np.arange(-30_000, 30_000, 97, dtype=np.int64)
    acc = np.concatenate([acc, _near_ties(mult, np.random.default_rng(1), 600)]).astype(np.int32)
    acc = np.resize(acc, (acc.size // 2 + 1) * 2).reshape(-1, 2)
    got = _rqf(acc, np.array([mult, mult], np.float32), 0, "int8")
    assert np.array_equal(got, requantize_float32(acc, mult, 0, dtype="int8"))


def _quant(x, scale, zp, dtype, inner, C):
    def build(g, cs):
        xv = g.add_variable("x", x.shape, "int32", 0)
        y = g.add_variable("y", x.shape, "uint8", 0)
        tab = np.concatenate([quant_params(s, int(z), dtype) for s, z in zip(scale, zp)])
        t = g.add_constant("tab", tab, 0, dtype="int32")
        g.add_vertex(cs, codelet(g, "tso_quant"), x=xv.tensor().flatten(), y=y.tensor().flatten(),
                     tab=t.tensor().flatten(), n=x.size, inner=inner, C=C,
                     qmin=-128 if dtype == "int8" else 0, W=x.size, H=1, Cq=1, ys=x.size, yc=0,
                     yh=0, yw=1)
    got = _run(build, {"x": x.view(np.int32)}, ["y"])["y"]
    return got.view(np.int8) if dtype == "int8" else got


@pytest.mark.parametrize("dtype, zp", [("int8", 5), ("uint8", 128), ("uint8", 0)])
def test_quantize_equals_reference(dtype, zp):
    rng = np.random.default_rng(zp)
    s = np.float32(0.0371)
    ties = ((np.arange(-150, 150, 2) + 0.5) * np.float64(s)).astype(np.float32)
    near = np.nextafter(ties, np.float32(np.inf)), np.nextafter(ties, np.float32(-np.inf))
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38],
                       np.float32)
    x = np.concatenate([ties, *near, rng.normal(0, 3, 100).astype(np.float32), special])
    got = _quant(x, [s], [zp], dtype, 1, 1)
    assert np.array_equal(got, quantize_linear(x, s, zp, dtype=dtype))


@pytest.mark.parametrize("scale", [1e-30, 3.1e-5, 0.75, 1e5, 1e30])
def test_quantize_extreme_scales(scale):
    """The search's start estimate (tso_quant.c) saturates or underflows for these scales;
    the table walk still ends on the reference's code."""
    rng = np.random.default_rng(11)
    s = np.float32(scale)
    x = np.concatenate([(rng.normal(0, 80, 200) * np.float64(s)).astype(np.float32),
                        (np.arange(-130, 131) * np.float64(s)).astype(np.float32),
                        np.array([np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3e38, -3e38],
                                 np.float32)])
    for dtype, zp in (("int8", -3), ("uint8", 200)):
        got = _quant(x, [s], [zp], dtype, 1, 1)
        assert np.array_equal(got, quantize_linear(x, s, zp, dtype=dtype))


def test_quantize_writes_through_its_output_mapping():
    """Element i = ((a·Cq + b)·H + h)·W + w lands on byte a·ys + b·yc + h·yh + w·yw: here
    NCHW [2, 3, 2, 4] into the interior of padded NHWC images (Hp = 4, Wp = 6, Cp = 8, one
    pixel of padding), as the importer feeds a convolution; every other byte keeps its 0x55."""
    rng = np.random.default_rng(4)
    x = rng.normal(0, 2, (2, 3, 2, 4)).astype(np.float32)
    s, zp = np.float32(0.03), 4
    Hp, Wp, Cp = 4, 6, 8
    img = Hp * Wp * Cp

    def build(g, cs):
        xv = g.add_variable("x", (x.size,), "int32", 0)
        y = g.add_variable("y", (2 * img,), "uint8", 0)
        t = g.add_constant("tab", quant_params(s, zp, "int8"), 0, dtype="int32")
        g.add_vertex(cs, codelet(g, "tso_quant"), x=xv.tensor(), y=y.tensor()[(Wp + 1) * Cp:],
                     tab=t.tensor(), n=x.size, inner=1, C=1, qmin=-128, W=4, H=2, Cq=3, ys=img,
                     yc=1, yh=Wp * Cp, yw=Cp)
    got = _run(build, {"x": x.reshape(-1).view(np.int32), "y": np.full(2 * img, 0x55, np.uint8)},
               ["y"])["y"].reshape(2, Hp, Wp, Cp)
    want = np.full((2, Hp, Wp, Cp), 0x55, np.uint8)
    want[:, 1:3, 1:5, :3] = quantize_linear(x, s, zp, dtype="int8").transpose(0, 2, 3, 1).view(np.uint8)
    assert np.array_equal(got, want)


def test_quantize_per_axis():
    rng = np.random.default_rng(3)
    x = rng.normal(0, 2, (2, 3, 5)).astype(np.float32)
    s = np.array([0.01, 0.2, 0.05], np.float32)
    zp = np.array([0, 17, 250])
    got = _quant(x.reshape(-1), s, zp, "uint8", 5, 3).reshape(x.shape)
    assert np.array_equal(got, quantize_linear(x, s, zp, dtype="uint8", axis=1))


def test_dequantize_int32_soft_float():
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.integers(-2**31, 2**31, 100), rng.integers(-2**25, 2**25, 100),
                        [0, 1, -1, 2**24 + 1, -(2**24 + 1), 2**31 - 1, -2**31]]).astype(np.int32)
    scale = np.float32(0.000123)

    def build(g, cs):
        xv = g.add_variable("x", x.shape, "int32", 0)
        y = g.add_variable("y", x.shape, "int32", 0)
        p = g.add_constant("p", np.array([[0, int(scale.view(np.int32))]]), 0, dtype="int32")
        g.add_vertex(cs, codelet(g, "tso_dequant"), x=xv.tensor().flatten(), y=y.tensor().flatten(),
                     params=p.tensor().flatten(), n=x.size, inner=1, C=1, kind=2)
    got = _run(build, {"x": x}, ["y"])["y"].view(np.float32)
    ref = dequantize_linear(x, scale, 0)
    assert np.array_equal(got.view(np.int32), ref.view(np.int32))
