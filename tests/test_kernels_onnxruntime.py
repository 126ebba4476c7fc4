"""The numpy int8 reference kernels against onnxruntime (an independent implementation;
onnx and onnxruntime are dependencies, for the ONNX importer)."""

import numpy as np

from tessera.golden_model.kernels import matmul


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
