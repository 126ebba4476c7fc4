"""Optional cross-checks against third-party frameworks, run only if they are importable.

Neither torch nor onnxruntime is a Tessera dependency; these tests skip (with the reason shown
by ``pytest -ra``) when the package is missing.
"""

import numpy as np
import pytest

from tessera.golden_model.kernels import conv2d, matmul


def test_conv2d_vs_torch_float64():
    torch = pytest.importorskip("torch", reason="torch is not installed (optional cross-check)")
    F = torch.nn.functional
    rng = np.random.default_rng(12)
    x = rng.integers(-128, 128, (2, 7, 6, 3), dtype=np.int8)
    w = rng.integers(-128, 128, (3, 3, 3, 5), dtype=np.int8)
    izp = 11
    got = conv2d(x, w, stride=2, padding="same", input_zero_point=izp)
    # TF 'same' for H=7,W=6,k=3,s=2: pads H (1,1), W (0,1); torch pads (left, right, top, bottom)
    xt = torch.from_numpy(x.astype(np.float64) - izp).permute(0, 3, 1, 2)
    xt = F.pad(xt, (0, 1, 1, 1))                     # padding real 0 = code izp
    wt = torch.from_numpy(w.astype(np.float64)).permute(3, 2, 0, 1)
    ref = F.conv2d(xt, wt, stride=2).permute(0, 2, 3, 1).numpy()
    np.testing.assert_array_equal(got, ref.astype(np.int64))


def test_matmul_vs_onnxruntime_matmulinteger():
    pytest.importorskip("onnx", reason="onnx is not installed (optional cross-check)")
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (optional cross-check)")
    import onnx
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
