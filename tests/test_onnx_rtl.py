"""The ONNX importer on the RTL (Verilator) backend: a representative subset of ONNX's
backend node tests (run on both backends: equal to the expected outputs and identical
model/RTL run results) and the digits CNN on 16 test images, equal to onnxruntime element for
element. The full 450-image run is `tessera demo --model cnn` (RTL by default)."""

import numpy as np
import pytest

from tessera.spec.config import preset
from tessera.toolchain.onnx import compare_outputs, import_model, reference_outputs
from tessera.toolchain.onnx.testing import node_cases, run_node_case

pytestmark = pytest.mark.rtl

SUBSET = ["test_qlinearconv", "test_qlinearmatmul_3D_uint8_float32", "test_quantizelinear_axis",
          "test_dequantizelinear", "test_maxpool_2d_uint8", "test_convinteger_with_padding",
          "test_matmulinteger", "test_transpose_all_permutations_3", "test_concat_3d_axis_1",
          "test_clip_default_int8_min", "test_relu", "test_flatten_axis2", "test_add_bcast",
          "test_mul"]


@pytest.fixture(scope="module")
def cases():
    return {t.name: t for t in node_cases()}


@pytest.mark.parametrize("name", SUBSET)
def test_node_case_on_rtl(name, cases):
    out, expected, report = run_node_case(cases[name], preset("tiny"), backend="both")
    assert report["backends_agree"]
    for k, e in expected.items():
        assert np.array_equal(out[k], e), (k, out[k], e)


def test_digits_cnn_on_rtl_equals_onnxruntime():
    from tessera.toolchain.models.digits import load_digits_split
    from tessera.toolchain.models.digits_cnn import load_digits_cnn, pixels_to_input
    cnn = load_digits_cnn()
    x = pixels_to_input(load_digits_split()[1][:16])
    prog = import_model(str(cnn.int8_path), preset("small"), samples_per_tile=2)
    run = prog.run({"x": x}, backend="rtl")
    ref = reference_outputs(str(cnn.int8_path), {"x": x})
    assert compare_outputs(run.outputs, ref)["reference_mismatches"] == 0
    assert run.report["backend"] == "rtl" and run.report["cycles"] > 0
    # 2 runs of 8 images in one RTL simulation (Engine.run_many: the second run writes only
    # its inputs; start resets everything but the SRAM, architecture §9): each run's result
    # equals the golden model's separate run of the same program and inputs
    assert run.report["runs"] == 2
    model = prog.run({"x": x}, backend="model")
    assert [r.to_json() for r in run.results] == [r.to_json() for r in model.results]


def test_qlinear_add_mul_avgpool_on_rtl_equal_onnxruntime():
    """com.microsoft QLinearAdd -> QLinearMul -> QLinearAveragePool -> QLinearSoftmax (the
    soft-float codelets) on
    both backends, equal to onnxruntime."""
    from onnx import TensorProto, helper, numpy_helper
    dt, et = np.uint8, TensorProto.UINT8
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(np.array(s, np.float32), n)
             for s, n in ((1 / 6, "s1"), (0.25, "s2"), (0.5, "s3"))]
    inits += [numpy_helper.from_array(np.array(z, dt), n)
              for z, n in ((36, "z1"), (36, "z2"), (41, "z3"), (0, "z4"))]
    inits.append(numpy_helper.from_array(np.array(1 / 256, np.float32), "s4"))
    inits.append(numpy_helper.from_array(rng.integers(0, 256, (1, 2, 1, 1)).astype(dt), "k"))
    nodes = [helper.make_node("QLinearAdd", ["x", "s1", "z1", "y", "s2", "z2", "s3", "z3"], ["a"],
                              domain="com.microsoft"),
             helper.make_node("QLinearMul", ["a", "s3", "z3", "k", "s2", "z2", "s3", "z3"], ["m"],
                              domain="com.microsoft"),
             helper.make_node("QLinearAveragePool", ["m", "s3", "z3", "s3", "z3"], ["p"],
                              domain="com.microsoft", kernel_shape=[2, 2], pads=[1, 1, 0, 0]),
             helper.make_node("QLinearSoftmax", ["p", "s3", "z3", "s4", "z4"], ["q"],
                              domain="com.microsoft", opset=13, axis=-1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, et, [1, 2, 4, 4]) for n in "xy"],
                          [helper.make_tensor_value_info("q", et, [1, 2, 4, 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    feed = {n: rng.integers(0, 256, (1, 2, 4, 4)).astype(dt) for n in "xy"}
    run = import_model(m, preset("small"), batch_mode="single").run(feed, backend="both")
    assert run.report["backends_agree"]
    assert np.array_equal(run.outputs["q"], reference_outputs(m, feed)["q"])
