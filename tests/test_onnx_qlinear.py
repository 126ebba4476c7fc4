"""com.microsoft QLinearAdd, QLinearMul and QLinearAveragePool, float32 Add / Mul, and the
Softmax refusal.

The expected values come from onnxruntime's CPU provider (default session, the independent
reference) or from numpy's IEEE-754 float32 arithmetic; Tessera runs on the golden model. The
QLinearAdd / QLinearMul cases cover every pair of 8-bit codes for scales chosen so that many
exact results lie on or next to rounding ties, where the order of float32 roundings (onnxruntime's
fused multiply-adds) decides the code: each such test also checks that a formula with the other
rounding order would have disagreed with onnxruntime, so the test can tell them apart."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from tessera.golden_model.kernels.qlinear import (
    cvt_rne_int32, fma_float32, qlinear_add, qlinear_average_pool, qlinear_mul,
)
from tessera.spec.config import preset
from tessera.toolchain.graph import Engine, Execute, Graph, compile_graph
from tessera.toolchain.onnx import (UnsupportedError, compare_outputs, import_model,
                                    reference_outputs)
from tessera.toolchain.onnx.codelets import codelet

_ET = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}

_OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]


def _model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=_OPSETS)
    m.ir_version = 8
    return m


def _binary_model(op, dt, shape_a, shape_b, scales, zps, const_b=None, const_a=None):
    """A one-node com.microsoft QLinearAdd/QLinearMul model (A and B inputs or constants)."""
    et = _ET[dt]
    inits = [numpy_helper.from_array(np.array(s, np.float32), n)
             for s, n in zip(scales, ("as", "bs", "cs"))]
    inits += [numpy_helper.from_array(np.array(z, dt), n) for z, n in zip(zps, ("az", "bz", "cz"))]
    ins = []
    for name, shape, c in (("a", shape_a, const_a), ("b", shape_b, const_b)):
        if c is None:
            ins.append(helper.make_tensor_value_info(name, et, shape))
        else:
            inits.append(numpy_helper.from_array(c, name))
    try:
        out_shape = list(np.broadcast_shapes(tuple(d if isinstance(d, int) else 2 for d in shape_a),
                                             tuple(d if isinstance(d, int) else 2 for d in shape_b)))
    except ValueError:                       # for the refusal tests
        out_shape = list(shape_a)
    if any(not isinstance(d, int) for d in list(shape_a) + list(shape_b)):
        out_shape[0] = "N"
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"],
                            domain="com.microsoft", name="the_qnode")
    return _model([node], ins, [helper.make_tensor_value_info("c", et, out_shape)], inits)


def _codes(dt):
    return np.arange(-128, 128) if dt == np.int8 else np.arange(256)


# scale sets (a_scale, b_scale, c_scale, zero points for int8): many exact ties
# (power-of-two ratios, thirds) next to plain ones; the uint8 zero points are these + 128
_ADD_SCALES = [((1 / 6, 0.25, 0.5), (-92, -92, -87)),
               ((0.0078125, 0.01171875, 0.0234375), (25, -123, -68)),
               ((0.0007031250279396772, 0.0011718750465661287, 0.0023437500931322575),
                (-124, -73, -87)),
               ((0.0123, 0.0371, 0.0456), (3, -5, 7))]
_MUL_SCALES = [((2.5, 1 / 6, 20.0), (-64, -115, -62)),
               ((0.625, 0.025, 0.375), (-70, 41, 51)),
               ((0.0078125, 1 / 24, 0.00390625), (-108, -4, -55)),
               ((0.0123, 0.0371, 0.0456), (3, -5, 7))]


def _zps(zps, dt):
    return tuple(z + 128 for z in zps) if dt == np.uint8 else zps


def _other_rounding(op, a, b, scales, zps):
    """The same formula with the other rounding order (unfused for QLinearAdd, fused for
    QLinearMul): what a careless emulation would compute."""
    f32 = np.float32
    sa, sb, sc = (f32(s) for s in scales)
    za, zb, zc = zps
    a, b = a.astype(f32), b.astype(f32)
    if op == "QLinearAdd":
        ra, rb = f32(sa / sc), f32(sb / sc)
        fixed = f32(f32(zc) - f32(f32(ra * f32(za)) + f32(rb * f32(zb))))
        v = f32(f32(a * ra) + f32(f32(b * rb) + fixed))
    else:
        r = f32(f32(sa * sb) / sc)
        v = fma_float32(((a - za) * (b - zb)).astype(f32), r, f32(zc))
    return cvt_rne_int32(v)


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
@pytest.mark.parametrize("op, k", [("QLinearAdd", k) for k in range(len(_ADD_SCALES))] +
                                  [("QLinearMul", k) for k in range(len(_MUL_SCALES))])
def test_qlinear_binary_every_code_pair_equals_onnxruntime(op, k, dt):
    """All 65536 (a, b) code pairs, eight runs of one compiled program, against onnxruntime;
    the golden reference agrees too."""
    scales, zps = (_ADD_SCALES if op == "QLinearAdd" else _MUL_SCALES)[k]
    zps = _zps(zps, dt)
    codes = _codes(dt)
    A, B = (g.astype(dt) for g in np.meshgrid(codes, codes, indexing="ij"))
    m = _binary_model(op, dt, [32, 256], [32, 256], scales, zps)
    prog = import_model(m, batch_mode="single")
    got, ref = [], []
    for r in range(8):
        feed = {"a": A[32 * r:32 * (r + 1)], "b": B[32 * r:32 * (r + 1)]}
        got.append(prog.run(feed).outputs["c"])
        ref.append(reference_outputs(m, feed)["c"])
    got, ref = np.concatenate(got), np.concatenate(ref)
    assert got.dtype == dt and np.array_equal(got, ref), np.argwhere(got != ref)[:5]
    fn = qlinear_add if op == "QLinearAdd" else qlinear_mul
    assert np.array_equal(fn(A, scales[0], zps[0], B, scales[1], zps[1], scales[2], zps[2]), ref)
    if op == "QLinearAdd" and k < 3:
        # near-tie elements exist, so tso_qlbin's soft-float path (not only its fixed-point
        # fast path) decided some of the codes compared above
        from tessera.golden_model.kernels.qlinear import qlinear_add_fixed
        from tessera.toolchain.onnx.convert import _qlbin_fast_table
        ra, rb = np.float32(np.float32(scales[0]) / np.float32(scales[2])), \
            np.float32(np.float32(scales[1]) / np.float32(scales[2]))
        fixed = qlinear_add_fixed(ra, zps[0], rb, zps[1], zps[2])
        byte_codes = np.arange(256, dtype=np.uint8).view(dt).astype(np.float32)
        fx = _qlbin_fast_table("QLinearAdd", byte_codes, ra,
                               fma_float32(byte_codes, rb, fixed).view(np.int32), zps[2])
        fx = fx.view(np.int64)
        sx = fx[A.view(np.uint8).astype(np.int64)] + fx[256 + B.view(np.uint8).astype(np.int64)]
        near = np.abs((sx & 0xFFFFFF) - 0x800000) <= 1 << 10
        assert np.any(near & (np.abs(sx) < 512 << 24))
    if k < 3 and dt == np.int8:   # tie-rich scales: the other rounding order differs somewhere
        lo, hi = (-128, 127) if dt == np.int8 else (0, 255)
        other = np.clip(_other_rounding(op, A, B, scales, zps), lo, hi)
        assert np.any(other != ref)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("shape_a, shape_b, const", [
    ([2, 3, 4], [1], None), ([1], [2, 3, 4], None), ([2, 3, 4], [3, 1], None),
    ([2, 3, 4], [3, 4], "b"), ([4], [2, 3, 4], "a"), ([2, 3, 4], [1, 3, 1], "b"),
    ([1, 1], [1, 1], None), ([3, 1, 4], [2, 1], "a")])
def test_qlinear_binary_broadcasting_equals_onnxruntime(op, shape_a, shape_b, const):
    """onnxruntime swaps the kernel's inputs when A is constant over its innermost span; the
    importer follows its broadcast loop (ort_broadcast_kind)."""
    rng = np.random.default_rng(len(shape_a) * 10 + len(shape_b))
    scales, zps = (_ADD_SCALES if op == "QLinearAdd" else _MUL_SCALES)[0]
    dt = np.int8
    a = rng.integers(-128, 128, shape_a).astype(dt)
    b = rng.integers(-128, 128, shape_b).astype(dt)
    m = _binary_model(op, dt, shape_a, shape_b, scales, zps,
                      const_b=b if const == "b" else None, const_a=a if const == "a" else None)
    feed = {k: v for k, v in (("a", a), ("b", b)) if k != const}
    run = import_model(m, batch_mode="single").run(feed)
    ref = reference_outputs(m, feed)["c"]
    assert run.outputs["c"].shape == ref.shape and np.array_equal(run.outputs["c"], ref)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_binary_batched_with_constants_equals_onnxruntime(op):
    """Batched mode (symbolic batch, samples over all tiles): a per-channel constant and a
    second computed operand of the same shape."""
    rng = np.random.default_rng(3)
    et, dt = TensorProto.UINT8, np.uint8
    inits = [numpy_helper.from_array(np.array(s, np.float32), n)
             for s, n in ((0.02, "s1"), (0.05, "s2"), (0.03, "s3"), (0.07, "s4"))]
    inits += [numpy_helper.from_array(np.array(z, dt), n)
              for z, n in ((128, "z1"), (100, "z2"), (131, "z3"), (140, "z4"))]
    inits.append(numpy_helper.from_array(rng.integers(0, 256, (1, 3, 1, 1)).astype(dt), "k"))
    nodes = [helper.make_node(op, ["x", "s1", "z1", "k", "s2", "z2", "s3", "z3"], ["t"],
                              domain="com.microsoft"),
             helper.make_node(op, ["t", "s3", "z3", "x", "s1", "z1", "s4", "z4"], ["y"],
                              domain="com.microsoft")]
    m = _model(nodes, [helper.make_tensor_value_info("x", et, ["N", 3, 4, 5])],
               [helper.make_tensor_value_info("y", et, ["N", 3, 4, 5])], inits)
    x = rng.integers(0, 256, (7, 3, 4, 5)).astype(dt)
    prog = import_model(m, preset("small"), samples_per_tile=1)
    run = prog.run({"x": x})
    assert compare_outputs(run.outputs, reference_outputs(m, {"x": x}))["reference_mismatches"] == 0
    assert run.report["samples_per_run"] > 1


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("scales, seen", [((40.0, 30.0, 0.01), "lo hi"),
                                          ((2.0 ** 20, 3.0, 2.0 ** -12), "lo"),
                                          ((1e-4, 1e-4, 50.0), "zp")])
def test_qlinear_binary_saturation_equals_onnxruntime(op, scales, seen):
    """Results far outside the 8-bit range saturate, including values beyond int32, where x86's
    conversion gives INT32_MIN (so onnxruntime returns qmin even for large positive values);
    tiny results round to the zero point."""
    for dt in (np.int8, np.uint8):
        codes = _codes(dt)
        A, B = (g.astype(dt) for g in np.meshgrid(codes[::5], codes[::3], indexing="ij"))
        zps = _zps((0, 7, -3), dt)
        m = _binary_model(op, dt, list(A.shape), list(B.shape), scales, zps)
        feed = {"a": A, "b": B}
        got = import_model(m, batch_mode="single").run(feed).outputs["c"]
        ref = reference_outputs(m, feed)["c"]
        assert np.array_equal(got, ref)
        lo, hi = (-128, 127) if dt == np.int8 else (0, 255)
        if seen == "lo hi":
            assert np.any(ref == lo) and np.any(ref == hi)
        elif seen == "lo":       # |value| >= 2^31: INT32_MIN, also for positive values
            a64, b64 = A.astype(np.float64) - zps[0], B.astype(np.float64) - zps[1]
            exact = (scales[0] * a64 + scales[1] * b64 if op == "QLinearAdd"
                     else scales[0] * scales[1] * a64 * b64) / scales[2]
            assert np.any(exact > 2.0 ** 32) and np.all(ref[exact > 2.0 ** 32] == lo)
        else:
            assert np.all(ref == zps[2])


def _avgpool_model(dt, shape, attrs, scales=(0.05, 0.05), zps=(3, -2)):
    et = _ET[dt]
    zps = _zps(zps, dt)
    inits = [numpy_helper.from_array(np.array(scales[0], np.float32), "xs"),
             numpy_helper.from_array(np.array(zps[0], dt), "xz"),
             numpy_helper.from_array(np.array(scales[1], np.float32), "ys"),
             numpy_helper.from_array(np.array(zps[1], dt), "yz")]
    node = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                            domain="com.microsoft", name="the_pool", **attrs)
    return _model([node], [helper.make_tensor_value_info("x", et, shape)],
                  [helper.make_tensor_value_info("y", et, [f"d{i}" for i in range(len(shape))])],
                  inits)


_POOLS = [
    ({"kernel_shape": [2, 2], "strides": [2, 2]}, [1, 3, 6, 6]),
    ({"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]}, [2, 2, 5, 5]),
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1},
     [1, 2, 7, 7]),
    ({"kernel_shape": [3, 2], "strides": [2, 1], "pads": [0, 1, 2, 0]}, [1, 2, 6, 5]),
    ({"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, [1, 2, 6, 6]),
    ({"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"}, [1, 2, 5, 5]),
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1,
      "count_include_pad": 1}, [1, 2, 6, 6]),
    ({"kernel_shape": [2, 3], "auto_pad": "SAME_LOWER", "strides": [2, 2]}, [1, 2, 5, 7]),
    ({"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, [2, 3, 9]),
    ({"kernel_shape": [4, 4]}, [2, 3, 4, 4]),            # onnxruntime's global path
]


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
@pytest.mark.parametrize("k", range(len(_POOLS)))
def test_qlinear_average_pool_equals_onnxruntime(k, dt):
    """Equal x and y scales make window averages land on exact halves (ties); random data and
    the full code range (saturation with the zero points)."""
    attrs, shape = _POOLS[k]
    rng = np.random.default_rng(k)
    lo, hi = (-128, 128) if dt == np.int8 else (0, 256)
    for scales in ((0.05, 0.05), (0.0123, 0.0371), (0.2, 0.01)):
        m = _avgpool_model(dt, shape, attrs, scales)
        x = rng.integers(lo, hi, shape).astype(dt)
        x.reshape(-1)[:4] = [lo, hi - 1, lo, hi - 1]
        got = import_model(m, batch_mode="single").run({"x": x}).outputs["y"]
        ref = reference_outputs(m, {"x": x})["y"]
        assert got.dtype == dt and got.shape == ref.shape and np.array_equal(got, ref)
    if "auto_pad" not in attrs and "ceil_mode" not in attrs:
        zps = _zps((3, -2), dt)
        nd = len(attrs["kernel_shape"])
        mine = qlinear_average_pool(x, scales[0], zps[0], scales[1], zps[1], attrs["kernel_shape"],
                                    attrs.get("strides"), attrs.get("pads"),
                                    attrs.get("count_include_pad", 0))
        assert np.array_equal(mine, ref) and mine.ndim == nd + 2


def test_qlinear_average_pool_refusals_name_the_node():
    for attrs, text in (({"kernel_shape": [2, 2], "channels_last": 1}, "channels_last=1"),
                        ({"kernel_shape": [2, 2, 2]}, "does not match the input shape"),
                        ({"kernel_shape": [2, 2], "strides": [3, 3], "pads": [0, 0, 4, 4]},
                         "no input element")):
        m = _avgpool_model(np.int8, [1, 2, 4, 4], attrs)
        with pytest.raises(UnsupportedError) as ei:
            import_model(m, batch_mode="single")
        assert "'the_pool' (QLinearAveragePool)" in str(ei.value) and text in str(ei.value)
        assert ei.value.node == "the_pool" and ei.value.op_type == "QLinearAveragePool"


def test_qlinear_binary_refusals_name_the_node():
    m = _binary_model("QLinearAdd", np.int8, [2, 3], [2, 3], (0.1, 0.1, 0.1), (0, 0, 0))
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array([0.1, 0.2], np.float32), "as"))
    with pytest.raises(UnsupportedError) as ei:
        import_model(m, batch_mode="single")
    assert "'the_qnode' (QLinearAdd)" in str(ei.value) and "A_scale" in str(ei.value)
    m = _binary_model("QLinearMul", np.int8, [2, 3, 4], [2, 1, 4], (0.1, 0.1, 0.1), (0, 0, 0))
    with pytest.raises(UnsupportedError) as ei:
        import_model(m, batch_mode="single")
    assert "'the_qnode' (QLinearMul)" in str(ei.value) and "broadcasts" in str(ei.value)
    m = _binary_model("QLinearAdd", np.int8, [2, 3], [2, 3], (0.1, 0.1, 0.1), (0, 0, 0),
                      const_b=np.zeros((2, 3), np.uint8))
    with pytest.raises(UnsupportedError) as ei:
        import_model(m, batch_mode="single")
    assert "'the_qnode' (QLinearAdd)" in str(ei.value) and "int8" in str(ei.value)
    m = _binary_model("QLinearAdd", np.int8, [2, 3], [4, 3], (0.1, 0.1, 0.1), (0, 0, 0))
    with pytest.raises(UnsupportedError) as ei:
        import_model(m, batch_mode="single")
    assert "'the_qnode' (QLinearAdd)" in str(ei.value) and "do not broadcast" in str(ei.value)


def _run_binop(a, b, op):
    n = a.size
    g = Graph(preset("small"))
    cs = g.add_compute_set("cs")
    va, vb, vy = (g.add_variable(k, (n,), "int32", 0) for k in "aby")
    g.add_vertex(cs, codelet(g, "tso_binop"), a=va.tensor().flatten(), b=vb.tensor().flatten(),
                 y=vy.tensor().flatten(), n=n, bn=n, op=op)
    eng = Engine(compile_graph(g, Execute(cs)), backend="model")
    eng.write_tensor("a", a.view(np.int32))
    eng.write_tensor("b", b.view(np.int32))
    eng.run()
    return eng.read_tensor("y").view(np.float32)


@pytest.mark.slow     # 30 s; the QLinear operators that use it are compared with onnxruntime
def test_soft_float_add_mul_equal_ieee_float32():
    """tso_binop's float32 Add / Mul (integer instructions only) against numpy's IEEE-754
    single precision: random magnitudes, cancellation, exact ties, subnormals, overflow."""
    rng = np.random.default_rng(0)
    n = 900
    a = (rng.standard_normal(n) * np.exp(rng.uniform(-60, 60, n))).astype(np.float32)
    b = (rng.standard_normal(n) * np.exp(rng.uniform(-60, 60, n))).astype(np.float32)
    b[:100] = -a[:100] * np.float32(1 + 2 ** -20)                      # cancellation
    a[100:200] = np.float32(1.0) + np.arange(100, dtype=np.float32) * np.float32(2 ** -23)
    b[100:200] = np.float32(2 ** -24)                                  # exact ties (add)
    a[200:300] = rng.uniform(-1e-38, 1e-38, 100).astype(np.float32)    # subnormal results
    b[200:300] = rng.uniform(-1e-38, 1e-38, 100).astype(np.float32)
    a[300:320] = np.float32(3e38)
    b[300:320] = np.float32(3e38)                                      # overflow to inf
    a[320:330] = 0.0
    b[330:340] = np.float32(-0.0)
    a[340:400] = (np.float32(1.0) + np.arange(60, dtype=np.float32) * np.float32(2 ** -12))
    b[340:400] = (np.float32(1.0) + np.float32(2 ** -12))              # product ties
    with np.errstate(all="ignore"):
        for op, ref in ((2, a + b), (3, a * b)):
            got = _run_binop(a, b, op)
            assert np.array_equal(got, ref), np.argwhere(got != ref)[:5]


def test_float_add_mul_nodes_equal_onnxruntime():
    """float32 Add and Mul nodes (with a trailing-dimension broadcast) equal onnxruntime."""
    rng = np.random.default_rng(4)
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Mul", ["s", "y"], ["p"]),
             helper.make_node("Mul", ["p", "c"], ["out"])]
    m = _model(nodes, [helper.make_tensor_value_info("x", f, [3, 4, 5]),
                       helper.make_tensor_value_info("y", f, [5])],
               [helper.make_tensor_value_info("out", f, [3, 4, 5])],
               [numpy_helper.from_array(rng.standard_normal((4, 1)).astype(np.float32), "c")])
    feed = {"x": rng.standard_normal((3, 4, 5)).astype(np.float32) * 1e3,
            "y": rng.standard_normal(5).astype(np.float32)}
    got = import_model(m, batch_mode="single").run(feed).outputs["out"]
    assert np.array_equal(got, reference_outputs(m, feed)["out"])


def test_softmax_is_refused_with_the_reason():
    f = TensorProto.FLOAT
    m = _model([helper.make_node("Softmax", ["x"], ["y"], name="probs")],
               [helper.make_tensor_value_info("x", f, [2, 10])],
               [helper.make_tensor_value_info("y", f, [2, 10])])
    with pytest.raises(UnsupportedError) as ei:
        import_model(m, batch_mode="single")
    msg = str(ei.value)
    assert "'probs' (Softmax)" in msg and "integer-only" in msg and "on the host" in msg
    assert ei.value.node == "probs" and ei.value.op_type == "Softmax"


def _residual_model():
    """Conv -> Relu -> (Conv -> Relu) + skip -> Mul by a constant -> AveragePool -> Gemm: what
    quantize_static turns into QLinearAdd / QLinearMul / QLinearAveragePool (QOperator) or
    DQ/Q pairs around Add, Mul and AveragePool (QDQ)."""
    rng = np.random.default_rng(11)
    w = {"w1": rng.normal(0, .4, (4, 1, 3, 3)), "b1": rng.normal(0, .1, 4),
         "w2": rng.normal(0, .3, (4, 4, 3, 3)), "b2": rng.normal(0, .1, 4),
         "k": rng.uniform(0.5, 1.5, (1, 4, 1, 1)), "w3": rng.normal(0, .3, (36, 10)),
         "b3": rng.normal(0, .1, 10)}
    init = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in w.items()]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Add", ["r1", "r2"], ["s"]),
        helper.make_node("Mul", ["s", "k"], ["m"]),
        helper.make_node("AveragePool", ["m"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"]),
    ]
    g = helper.make_graph(nodes, "res", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                       ["N", 1, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("fmt, act", [("QOperator", "uint8"), ("QDQ", "uint8"),
                                      ("QOperator", "int8")])
def test_quantize_static_residual_model_equals_onnxruntime(fmt, act, tmp_path):
    from tessera.toolchain.models.digits_cnn import quantize_onnx
    calib = np.random.default_rng(1).uniform(0, 1, (32, 1, 6, 6)).astype(np.float32)
    q = quantize_onnx(_residual_model(), calib, quant_format=fmt, activation=act,
                      workdir=tmp_path)
    prog = import_model(q, preset("small"), samples_per_tile=1)
    x = np.random.default_rng(2).uniform(0, 1, (6, 1, 6, 6)).astype(np.float32)
    run = prog.run({"x": x})
    cmp = compare_outputs(run.outputs, reference_outputs(q, {"x": x}))
    assert cmp["reference_mismatches"] == 0 and cmp["reference_max_abs_diff"] == 0.0
    kinds = {"/".join(l["onnx_ops"]) for l in run.report["layers"]}
    for op in ("Add", "Mul", "AveragePool"):
        assert any(op in k for k in kinds), (op, kinds)


def test_int8_qdq_residual_model_is_refused_where_onnxruntime_runs_float(tmp_path):
    """int8 QDQ on x86: onnxruntime turns int8 Q -> DQ pairs into uint8 only where the DQ has
    one consumer, so around the skip connection the types differ, it does not fuse the Conv
    and runs it in float32; Tessera says so instead of computing a QLinearConv."""
    from tessera.toolchain.models.digits_cnn import quantize_onnx
    from tessera.toolchain.onnx.convert import QDQ_INT8_ALLOWED
    if QDQ_INT8_ALLOWED:
        pytest.skip("onnxruntime keeps int8 QDQ on ARM")
    calib = np.random.default_rng(1).uniform(0, 1, (32, 1, 6, 6)).astype(np.float32)
    q = quantize_onnx(_residual_model(), calib, quant_format="QDQ", activation="int8",
                      workdir=tmp_path)
    with pytest.raises(UnsupportedError) as ei:
        import_model(q, preset("small"), samples_per_tile=1)
    assert "(Conv)" in str(ei.value) and "does not fuse" in str(ei.value)


def _quantize_two_inputs(m, calib, tmp_path, act):
    import logging
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{k: v[i:i + 1] for k, v in calib.items()} for i in range(16)])

        def get_next(self):
            return next(self.it, None)

    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    src.write_bytes(m.SerializeToString())
    logging.getLogger().setLevel(logging.ERROR)
    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8 if act == "int8" else QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
    return dst.read_bytes()


@pytest.mark.parametrize("act", ["int8", "uint8"])
@pytest.mark.parametrize("op", ["Add", "Mul"])
def test_qdq_add_mul_avgpool_follow_onnxruntime_fusion(op, act, tmp_path):
    """Two inputs, no shared tensor: int8 QDQ pairs all become uint8 in onnxruntime, so Add and
    AveragePool are fused and computed on codes + 128 (the float32 rounding differs from
    computing on the int8 codes), the Mul by an int8 constant stays float32 (its DQ is not a
    pair); with uint8 activations everything is fused. Tessera follows both."""
    rng = np.random.default_rng(12)
    f = TensorProto.FLOAT
    init = [numpy_helper.from_array(rng.normal(0, .4, (4, 1, 3, 3)).astype(np.float32), "w1"),
            numpy_helper.from_array(rng.normal(0, .1, 4).astype(np.float32), "b1"),
            numpy_helper.from_array(rng.uniform(0.5, 1.5, (1, 4, 1, 1)).astype(np.float32), "k"),
            numpy_helper.from_array(rng.normal(0, .3, (36, 10)).astype(np.float32), "w3"),
            numpy_helper.from_array(rng.normal(0, .1, 10).astype(np.float32), "b3")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1],
                              kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node(op, ["r1", "z"], ["s"]),
             helper.make_node("Mul", ["s", "k"], ["m"]),
             helper.make_node("AveragePool", ["m"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["fl"]),
             helper.make_node("Gemm", ["fl", "w3", "b3"], ["y"])]
    m = _model(nodes, [helper.make_tensor_value_info("x", f, ["N", 1, 6, 6]),
                       helper.make_tensor_value_info("z", f, ["N", 4, 6, 6])],
               [helper.make_tensor_value_info("y", f, ["N", 10])], init)
    m.opset_import.pop()                      # default domain only
    calib = {"x": rng.uniform(0, 1, (16, 1, 6, 6)).astype(np.float32),
             "z": rng.uniform(-1, 1, (16, 4, 6, 6)).astype(np.float32)}
    q = _quantize_two_inputs(m, calib, tmp_path, act)
    feed = {"x": rng.uniform(0, 1, (5, 1, 6, 6)).astype(np.float32),
            "z": rng.uniform(-1, 1, (5, 4, 6, 6)).astype(np.float32)}
    run = import_model(q, preset("small"), samples_per_tile=1).run(feed)
    cmp = compare_outputs(run.outputs, reference_outputs(q, feed))
    assert cmp["reference_mismatches"] == 0
    kinds = {l["kind"] for l in run.report["layers"]}
    assert "qlbin" in kinds and "qlavgpool" in kinds


def test_qlinear_mul_by_pooled_channels_batched_equals_onnxruntime():
    """A squeeze-and-excitation-like gate: x * QLinearGlobalAveragePool(x), the [N, C, 1, 1]
    operand computed per sample and broadcast over each channel's plane, many samples per
    tile."""
    rng = np.random.default_rng(21)
    et, dt = TensorProto.INT8, np.int8
    inits = [numpy_helper.from_array(np.array(s, np.float32), n)
             for s, n in ((0.03, "s1"), (0.01, "s2"), (0.02, "s3"))]
    inits += [numpy_helper.from_array(np.array(z, dt), n) for z, n in ((-3, "z1"), (5, "z2"), (1, "z3"))]
    nodes = [helper.make_node("QLinearGlobalAveragePool", ["x", "s1", "z1", "s2", "z2"], ["g"],
                              domain="com.microsoft"),
             helper.make_node("QLinearMul", ["x", "s1", "z1", "g", "s2", "z2", "s3", "z3"], ["y"],
                              domain="com.microsoft")]
    m = _model(nodes, [helper.make_tensor_value_info("x", et, ["N", 3, 4, 4])],
               [helper.make_tensor_value_info("y", et, ["N", 3, 4, 4])], inits)
    x = rng.integers(-128, 128, (9, 3, 4, 4)).astype(dt)
    run = import_model(m, preset("small"), samples_per_tile=2).run({"x": x})
    assert compare_outputs(run.outputs, reference_outputs(m, {"x": x}))["reference_mismatches"] == 0


#: scales where QLinearMul on int8 codes and on codes + 128 differ (29 of the 65536 pairs)
_MUL_U8_SCALES = ((0.01785714365541935, 1 / 6, 0.025), (107, -125, -122))


@pytest.mark.parametrize("op, k", [("Add", 0), ("Add", 1), ("Mul", None)])
def test_qdq_int8_binary_runs_on_uint8_codes_like_onnxruntime(op, k):
    """float -> Q -> DQ -> Add/Mul -> Q -> DQ with int8 pairs over every code pair: onnxruntime
    (x86) converts the pairs to uint8 and runs QLinearAdd/QLinearMul on codes + 128, which
    differs from the same operator on the int8 codes somewhere; Tessera equals onnxruntime."""
    from tessera.toolchain.onnx.convert import QDQ_INT8_ALLOWED
    if QDQ_INT8_ALLOWED:
        pytest.skip("onnxruntime keeps int8 QDQ on ARM")
    scales, zps = _ADD_SCALES[k] if op == "Add" else _MUL_U8_SCALES
    f, dt = TensorProto.FLOAT, np.int8
    inits = [numpy_helper.from_array(np.array(sv, np.float32), n) for sv, n in zip(scales, ("sa", "sb", "sc"))]
    inits += [numpy_helper.from_array(np.array(z, dt), n) for z, n in zip(zps, ("za", "zb", "zc"))]
    nodes = [helper.make_node("QuantizeLinear", ["fa", "sa", "za"], ["qa"]),
             helper.make_node("DequantizeLinear", ["qa", "sa", "za"], ["da"]),
             helper.make_node("QuantizeLinear", ["fb", "sb", "zb"], ["qb"]),
             helper.make_node("DequantizeLinear", ["qb", "sb", "zb"], ["db"]),
             helper.make_node(op, ["da", "db"], ["s"], name="the_op"),
             helper.make_node("QuantizeLinear", ["s", "sc", "zc"], ["qs"]),
             helper.make_node("DequantizeLinear", ["qs", "sc", "zc"], ["y"])]
    m = _model(nodes, [helper.make_tensor_value_info("fa", f, [8, 256]),
                       helper.make_tensor_value_info("fb", f, [8, 256])],
               [helper.make_tensor_value_info("y", f, [8, 256])], inits)
    m.opset_import.pop()
    codes = np.arange(-128, 128)
    A, B = np.meshgrid(codes, codes, indexing="ij")
    fa = ((A - zps[0]) * np.float64(np.float32(scales[0]))).astype(np.float32)
    fb = ((B - zps[1]) * np.float64(np.float32(scales[1]))).astype(np.float32)
    prog = import_model(m, batch_mode="single")
    assert any(l["kind"] == "qlbin" for l in prog.run({"fa": fa[:8], "fb": fb[:8]}).report["layers"])
    got, ref = [], []
    for r in range(32):
        feed = {"fa": fa[8 * r:8 * (r + 1)], "fb": fb[8 * r:8 * (r + 1)]}
        got.append(prog.run(feed).outputs["y"])
        ref.append(reference_outputs(m, feed)["y"])
    got, ref = np.concatenate(got), np.concatenate(ref)
    assert np.array_equal(got, ref)
    fn = qlinear_add if op == "Add" else qlinear_mul
    q_int8 = fn(A.astype(dt), scales[0], zps[0], B.astype(dt), scales[1], zps[1], scales[2], zps[2])
    q_u8 = fn((A + 128).astype(np.uint8), scales[0], zps[0] + 128, (B + 128).astype(np.uint8),
              scales[1], zps[1] + 128, scales[2], zps[2] + 128).astype(np.int64) - 128
    deq = lambda q: ((q.astype(np.int64) - zps[2]).astype(np.float32) * np.float32(scales[2])).astype(np.float32)
    assert np.array_equal(deq(q_u8), ref) and not np.array_equal(deq(q_int8), ref)


_SOFTMAX_CASES = [([4, 10], -1, 13), ([2, 3, 5], 1, 13), ([2, 3, 5], 0, 13), ([3, 4, 6], 1, 12),
                  ([1, 300], -1, 13), ([5, 2, 2], 2, 12)]


@pytest.mark.parametrize("dt, yz", [(np.uint8, 0), (np.int8, -128), (np.uint8, 9), (np.int8, -90)])
@pytest.mark.parametrize("k", range(len(_SOFTMAX_CASES)))
def test_qlinear_softmax_equals_onnxruntime(k, dt, yz):
    """com.microsoft QLinearSoftmax (onnxruntime's exp table, float32 sum and division) for
    axes, old and new opset semantics, row lengths up to 300, several scales."""
    from tessera.golden_model.kernels.qlinear import qlinear_softmax
    shape, axis, opset = _SOFTMAX_CASES[k]
    rng = np.random.default_rng(k)
    et = _ET[dt]
    lo, hi = (-128, 128) if dt == np.int8 else (0, 256)
    for xs, ys in ((0.1, 1 / 256), (0.0371, 1 / 255), (0.5, 0.01), (0.003, 1 / 256)):
        inits = [numpy_helper.from_array(np.array(xs, np.float32), "xs"),
                 numpy_helper.from_array(np.array(3, dt), "xz"),
                 numpy_helper.from_array(np.array(ys, np.float32), "ys"),
                 numpy_helper.from_array(np.array(yz, dt), "yz")]
        node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"],
                                domain="com.microsoft", name="sm", opset=opset, axis=axis)
        m = _model([node], [helper.make_tensor_value_info("x", et, shape)],
                   [helper.make_tensor_value_info("y", et, shape)], inits)
        m.opset_import[0].version = opset
        x = rng.integers(lo, hi, shape).astype(dt)
        got = import_model(m, batch_mode="single").run({"x": x}).outputs["y"]
        ref = reference_outputs(m, {"x": x})["y"]
        assert got.dtype == dt and np.array_equal(got, ref)
        assert np.array_equal(qlinear_softmax(x, xs, ys, yz, axis, opset), ref)


def test_qlinear_softmax_overflow_is_refused():
    """One element per row and y_scale 1/256: onnxruntime's exp table times 256 overflows
    float32 (its outputs are then meaningless); Tessera refuses, naming the node."""
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "xs"),
             numpy_helper.from_array(np.array(0, np.uint8), "xz"),
             numpy_helper.from_array(np.array(1 / 256, np.float32), "ys"),
             numpy_helper.from_array(np.array(0, np.uint8), "yz")]
    node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"],
                            domain="com.microsoft", name="sm", opset=13, axis=-1)
    m = _model([node], [helper.make_tensor_value_info("x", TensorProto.UINT8, [4, 1])],
               [helper.make_tensor_value_info("y", TensorProto.UINT8, [4, 1])], inits)
    with pytest.raises(UnsupportedError) as ei:
        import_model(m, batch_mode="single")
    assert "'sm' (QLinearSoftmax)" in str(ei.value) and "overflow" in str(ei.value)


@pytest.mark.parametrize("fmt, act", [("QDQ", "uint8"), ("QDQ", "int8"), ("QOperator", "uint8")])
def test_quantize_static_model_ending_in_softmax_equals_onnxruntime(fmt, act, tmp_path):
    """Conv -> Relu -> Flatten -> Gemm -> Softmax quantized by onnxruntime: the Softmax between
    DQ and Q (QDQ; onnxruntime fuses it into QLinearSoftmax) or QLinearSoftmax (QOperator)."""
    from tessera.toolchain.models.digits_cnn import quantize_onnx
    rng = np.random.default_rng(13)
    init = [numpy_helper.from_array(rng.normal(0, .4, (4, 1, 3, 3)).astype(np.float32), "w1"),
            numpy_helper.from_array(rng.normal(0, .1, 4).astype(np.float32), "b1"),
            numpy_helper.from_array(rng.normal(0, .5, (144, 10)).astype(np.float32), "w2"),
            numpy_helper.from_array(rng.normal(0, .1, 10).astype(np.float32), "b2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("Gemm", ["f", "w2", "b2"], ["g"]),
             helper.make_node("Softmax", ["g"], ["y"], axis=-1)]
    g = helper.make_graph(nodes, "sm", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                      ["N", 1, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    calib = rng.uniform(0, 1, (32, 1, 6, 6)).astype(np.float32)
    q = quantize_onnx(m, calib, quant_format=fmt, activation=act, workdir=tmp_path)
    x = rng.uniform(0, 1, (6, 1, 6, 6)).astype(np.float32)
    run = import_model(q, preset("small"), samples_per_tile=1).run({"x": x})
    cmp = compare_outputs(run.outputs, reference_outputs(q, {"x": x}))
    assert cmp["reference_mismatches"] == 0
    assert any(l["kind"] == "qlsoftmax" for l in run.report["layers"])
