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
          "test_clip_default_int8_min", "test_relu", "test_flatten_axis2"]


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
    prog = import_model(str(cnn.int8_path), preset("small"), samples_per_tile=4)
    run = prog.run({"x": x}, backend="rtl")
    ref = reference_outputs(str(cnn.int8_path), {"x": x})
    assert compare_outputs(run.outputs, ref)["reference_mismatches"] == 0
    assert run.report["backend"] == "rtl" and run.report["cycles"] > 0
