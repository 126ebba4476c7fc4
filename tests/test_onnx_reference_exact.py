"""The onnxruntime oracle computes the ONNX operators' exact int32 accumulation on every CPU
(tessera/toolchain/onnx/reference.py): int8 weights are re-expressed as uint8 with the zero
point + 128 (``exact_weights``), so onnxruntime's u8·s8 kernels, which saturate pair sums in
int16 on x86-64 processors without VNNI, are not used.

Expected values are worked out in numpy int64 from the operator specs (``MatMulInteger``:
Σ (a − a_zp)(b − b_zp) in int32; ``DequantizeLinear``: (x − zp) · scale), never taken from
onnxruntime. On a processor without VNNI (this workplace's AMD EPYC, AVX2 only) the first case
gave −1,048,576 without ``exact_weights``.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tessera.toolchain.onnx import reference_outputs
from tessera.toolchain.onnx.reference import exact_weights

K, N = 64, 16


def _matmul_integer(b, b_zp=None):
    a = helper.make_tensor_value_info("A", TensorProto.UINT8, [4, K])
    y = helper.make_tensor_value_info("Y", TensorProto.INT32, [4, N])
    inits = [numpy_helper.from_array(b.astype(np.int8), "B")]
    ins = ["A", "B"]
    if b_zp is not None:
        inits.append(numpy_helper.from_array(np.array(b_zp, np.int8), "B_zp"))
        ins = ["A", "B", "", "B_zp"]
    g = helper.make_graph([helper.make_node("MatMulInteger", ins, ["Y"])], "g", [a], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("b_zp", [None, 5])
def test_matmul_integer_u8_by_s8_is_exact(b_zp):
    b = np.full((K, N), -128)
    b[::3, 1] = 127                       # column 1 mixes the extremes
    model = _matmul_integer(b, b_zp)
    a = np.full((4, K), 255, np.uint8)
    a[1, ::2] = 0
    exp = (a.astype(np.int64) @ (b - (b_zp or 0)).astype(np.int64))
    assert exp[0, 0] == 255 * (-128 - (b_zp or 0)) * K   # beyond int16 pair sums
    got = reference_outputs(model, {"A": a})["Y"]
    assert got.dtype == np.int32 and np.array_equal(got.astype(np.int64), exp)


def test_qdq_matmul_dequantized_weight_is_exact():
    # x (float) -> QuantizeLinear (uint8, scale 1, zp 0) -> DequantizeLinear -> MatMul with
    # DequantizeLinear(w int8, scale 1, no zero point): y = Σ x·w, exact in float32 (< 2^24)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, K])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, N])
    w = np.full((K, N), -128, np.int8)
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(0, np.uint8), "zp_u8")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "one", "zp_u8"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "one", "zp_u8"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "one"], ["wd"]),
             helper.make_node("MatMul", ["xd", "wd"], ["y"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    xv = np.full((2, K), 255.0, np.float32)
    xv[1, :10] = 3.0
    exp = np.clip(np.rint(xv), 0, 255).astype(np.int64) @ w.astype(np.int64)
    got = reference_outputs(model, {"x": xv})["y"]
    assert np.array_equal(got.astype(np.int64), exp)


def test_exact_weights_keeps_the_dequantized_values_and_the_input_model():
    b = np.arange(-128, -128 + K * N).reshape(K, N) % 256 - 128
    model = _matmul_integer(b, b_zp=-7)
    before = model.SerializeToString()
    out = exact_weights(model)
    assert model.SerializeToString() == before            # the caller's model is untouched
    inits = {t.name: numpy_helper.to_array(t) for t in out.graph.initializer}
    node = out.graph.node[0]
    wq, zq = inits[node.input[1]], inits[node.input[3]]
    assert wq.dtype == np.uint8 and zq.dtype == np.uint8
    assert np.array_equal(wq.astype(np.int64) - int(zq), b - (-7))
    assert set(inits) == {node.input[1], node.input[3]}   # the int8 originals are dropped
    onnx.checker.check_model(out)
