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
from tessera.toolchain.onnx.lower import (add_chunked_vertices, chunk_fields, context_chunks,
                                          quant_fields, quant_params, rqf_params)


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
        qmin = -128 if dtype == "int8" else 0
        add_chunked_vertices(
            g, cs, codelet(g, "tso_quant"), 0, x.size,
            lambda i0, i1: dict(quant_fields(i0, i1, inner=inner, C=C, W=x.size, H=1, Cq=1,
                                             ys=x.size, yc=0, yh=0, yw=1), qmin=qmin),
            x=xv.tensor().flatten(), y=y.tensor().flatten(), tab=t.tensor().flatten())
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


@pytest.mark.parametrize("shape", [(2, 3, 2, 4), (1, 3, 3, 5)])
def test_quantize_writes_through_its_output_mapping(shape):
    """Element i = ((a·Cq + b)·H + h)·W + w lands on byte a·ys + b·yc + h·yh + w·yw: here
    NCHW into the interior of padded NHWC images (one pixel of padding, Cp = 8 channels), as
    the importer feeds a convolution; every other byte keeps its 0x55. With (1, 3, 3, 5) the
    45 elements split 8, 8, 8, 7, 7, 7 over the 6 contexts (context_chunks: m = ceil(46 / 6)
    = 8, the last context 7, the other 38 as 8, 8, 8, 7, 7), so the chunks start at elements
    8, 16, 24, 31, 38: mid-row (w = 3, 1, 4, 1, 3), and chunk 8..16 crosses the plane
    boundary at element 15."""
    rng = np.random.default_rng(4)
    x = rng.normal(0, 2, shape).astype(np.float32)
    s, zp = np.float32(0.03), 4
    N, Cq, H, W = shape
    Hp, Wp, Cp = H + 2, W + 2, 8
    img = Hp * Wp * Cp

    def build(g, cs):
        xv = g.add_variable("x", (x.size,), "int32", 0)
        y = g.add_variable("y", (N * img,), "uint8", 0)
        t = g.add_constant("tab", quant_params(s, zp, "int8"), 0, dtype="int32")
        add_chunked_vertices(
            g, cs, codelet(g, "tso_quant"), 0, x.size,
            lambda i0, i1: dict(quant_fields(i0, i1, inner=1, C=1, W=W, H=H, Cq=Cq, ys=img,
                                             yc=1, yh=Wp * Cp, yw=Cp), qmin=-128),
            x=xv.tensor(), y=y.tensor()[(Wp + 1) * Cp:], tab=t.tensor())
    got = _run(build, {"x": x.reshape(-1).view(np.int32), "y": np.full(N * img, 0x55, np.uint8)},
               ["y"])["y"].reshape(N, Hp, Wp, Cp)
    want = np.full((N, Hp, Wp, Cp), 0x55, np.uint8)
    want[:, 1:H + 1, 1:W + 1, :Cq] = quantize_linear(x, s, zp, dtype="int8").transpose(
        0, 2, 3, 1).view(np.uint8)
    assert np.array_equal(got, want)


def test_context_chunks_by_hand():
    """context_chunks(n, T, handicap): m = ceil((n + handicap) / T) is the largest chunk,
    the last context (the runtime's profiling context) gets m - handicap (at least 0), the
    others share the rest, the first ones one more. 64 pixels, T = 6, handicap 1:
    m = ceil(65 / 6) = 11, context 5 gets 10, the other 54 split 11, 11, 11, 11, 10.
    10 logits, handicap 2: m = ceil(12 / 6) = 2, context 5 gets 0 (no chunk), the others 2
    each. 3 elements, handicap 1: m = 1, context 5 gets 0, contexts 0..2 one each. One
    context takes everything."""
    assert context_chunks(64, 6, 1) == [(0, 0, 11), (1, 11, 22), (2, 22, 33), (3, 33, 44),
                                        (4, 44, 54), (5, 54, 64)]
    assert context_chunks(10, 6, 2) == [(0, 0, 2), (1, 2, 4), (2, 4, 6), (3, 6, 8), (4, 8, 10)]
    assert context_chunks(3, 6, 1) == [(0, 0, 1), (1, 1, 2), (2, 2, 3)]
    assert context_chunks(7, 1, 1) == [(0, 0, 7)]
    assert context_chunks(0, 6, 1) == []


def test_quant_fields_by_hand():
    """Element 13 of NCHW [2, 3, 2, 4] (W = 4, H = 2, Cq = 3): 13 = ((0·3 + 1)·2 + 1)·4 + 1,
    so a = 0, b = 1, h = 1, w = 1; with ys = 192, yc = 1, yh = 48, yw = 8 its byte is
    0·192 + 1·1 + 1·48 + 1·8 = 57; 4 - 1 = 3 elements left in its row, 2 - 1 = 1 row in its
    plane, 3 - 1 = 2 planes in its image; dh = 48 - 4·8 = 16, db = 1 - 2·48 = -95,
    da = 192 - 3·1 = 189. Channel with inner = 5, C = 3: (13 // 5) % 3 = 2, 13 % 5 = 3."""
    f = quant_fields(13, 20, inner=5, C=3, W=4, H=2, Cq=3, ys=192, yc=1, yh=48, yw=8)
    assert f == dict(i0=13, i1=20, inner=5, C=3, c0=2, in0=3, y0=57, yw=8, wl0=3, hl0=1,
                     bl0=2, W=4, H=2, Cq=3, dh=16, db=-95, da=189)


def test_quantize_per_axis():
    rng = np.random.default_rng(3)
    x = rng.normal(0, 2, (2, 3, 5)).astype(np.float32)
    s = np.array([0.01, 0.2, 0.05], np.float32)
    zp = np.array([0, 17, 250])
    got = _quant(x.reshape(-1), s, zp, "uint8", 5, 3).reshape(x.shape)
    assert np.array_equal(got, quantize_linear(x, s, zp, dtype="uint8", axis=1))


def test_quantize_per_axis_chunks_start_mid_channel():
    """[2, 4, 5] per axis 1 (inner = 5, C = 4): the 40 elements split 7, 7, 7, 7, 6, 6 over
    the contexts (m = ceil(41 / 6) = 7, the last context 6, the other 34 as 7, 7, 7, 7, 6), so
    the chunks start at elements 7, 14, 21, 28, 34: inside a channel block (in0 = 2, 4, 1, 3,
    4) and in channels 1, 2, 0, 1, 2 (quant_fields' c0, in0)."""
    rng = np.random.default_rng(5)
    x = rng.normal(0, 2, (2, 4, 5)).astype(np.float32)
    s = np.array([0.01, 0.2, 0.05, 0.033], np.float32)
    zp = np.array([0, 17, 250, 128])
    assert [c[1] for c in context_chunks(x.size, 6, 1)] == [0, 7, 14, 21, 28, 34]
    got = _quant(x.reshape(-1), s, zp, "uint8", 5, 4).reshape(x.shape)
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
        add_chunked_vertices(
            g, cs, codelet(g, "tso_dequant"), 0, x.size,
            lambda i0, i1: dict(chunk_fields(i0, i1, inner=1, C=1), kind=2),
            x=xv.tensor().flatten(), y=y.tensor().flatten(), params=p.tensor().flatten())
    got = _run(build, {"x": x}, ["y"])["y"].view(np.float32)
    ref = dequantize_linear(x, scale, 0)
    assert np.array_equal(got.view(np.int32), ref.view(np.int32))
