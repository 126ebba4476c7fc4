"""The numpy int8 reference kernels against onnxruntime (an independent implementation;
onnx and onnxruntime are dependencies, for the ONNX importer)."""

import numpy as np

from tessera.golden_model.kernels import dequantize_linear, matmul


def test_matmul_vs_onnxruntime_matmulinteger():
    import onnxruntime as ort
    from onnx import TensorProto, helper

    rng = np.random.default_rng(13)
    a = rng.integers(-128, 128, (4, 9), dtype=np.int8)
    b = rng.integers(-128, 128, (9, 5), dtype=np.int8)
    node = helper.make_node("MatMulInteger", ["A", "B", "az", "bz"], ["Y"])
    graph = helper.make_graph(
        [node], "mm",
        [helper.make_tensor_value_info("A", TensorProto.INT8, [4, 9]),
         helper.make_tensor_value_info("B", TensorProto.INT8, [9, 5])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, [4, 5])],
        initializer=[helper.make_tensor("az", TensorProto.INT8, [], [3]),
                     helper.make_tensor("bz", TensorProto.INT8, [], [0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, {"A": a, "B": b})
    np.testing.assert_array_equal(matmul(a, b, a_zero_point=3), ref)


def test_dequantize_linear_by_hand_and_vs_onnxruntime():
    # ONNX DequantizeLinear: y = (x - zp) · scale, per tensor or per axis (opset 13). By hand:
    # (5 - 3) · 0.5 = 1.0, (-128 - 3) · 0.5 = -65.5, (127 - 3) · 0.5 = 62.0.
    # (Kills golden-model mutant M02db85, the `ax = ...` line dropped: no selected test called
    # dequantize_linear before.)
    import onnxruntime as ort
    from onnx import TensorProto, helper

    x = np.array([5, -128, 127], np.int8)
    assert dequantize_linear(x, np.float32(0.5), 3).tolist() == [1.0, -65.5, 62.0]
    rng = np.random.default_rng(14)
    x = rng.integers(-128, 128, (2, 3, 4), dtype=np.int8)
    scale = rng.uniform(0.01, 2.0, 3).astype(np.float32)
    zp = rng.integers(-20, 20, 3).astype(np.int8)
    node = helper.make_node("DequantizeLinear", ["X", "s", "z"], ["Y"], axis=1)
    graph = helper.make_graph(
        [node], "dq", [helper.make_tensor_value_info("X", TensorProto.INT8, [2, 3, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3, 4])],
        initializer=[helper.make_tensor("s", TensorProto.FLOAT, [3], scale.tolist()),
                     helper.make_tensor("z", TensorProto.INT8, [3], zp.tolist())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, {"X": x})
    np.testing.assert_array_equal(dequantize_linear(x, scale, zp, axis=1), ref)
