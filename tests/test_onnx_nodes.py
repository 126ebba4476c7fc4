"""ONNX's own backend node tests (onnx.backend.test.case.node, shipped in the onnx wheel) for
the importer's operators, on the golden model.

Every single-node case of these operators runs: the supported ones must equal the generator's
expected outputs exactly (the oracle is numpy in the onnx package, independent of Tessera);
the cases outside Tessera's scope (float convolution / pooling / Softmax, other element types,
3-D pooling, ...)
are listed below with the reason, and must be rejected before anything runs with an error
that names the node and says why. All of them run in the default suite (the golden model's
fast engine takes well under a second for the largest, a 3x32x32 float MaxPool)."""

import numpy as np
import pytest

from tessera.toolchain.onnx import UnsupportedError
from tessera.toolchain.onnx.testing import node_cases, run_node_case

_SOFTMAX = "Softmax is float32 arithmetic with exp"
_NOT_TENSOR = "is not a tensor"
_AVG = "AveragePool on float32 data is not supported"
_GAP = "GlobalAveragePool on float32 data is not supported"
_CONV = "float32 Conv is not supported"
_GEMM = "float32 Gemm is not supported"
_MATMUL = "float32 MatMul is not supported"
_BLOCK = "blocked quantization (block_size) is not supported"
_3D = "Tessera supports 1-D and 2-D convolution and pooling"


def _etype(t):
    return f"has element type {t}; Tessera supports float32, uint8, int8 and int32"


#: name -> the text the rejection must contain (out of scope by design, see the module doc)
UNSUPPORTED = {
    **{n: _SOFTMAX for n in ("test_softmax_axis_0", "test_softmax_axis_1", "test_softmax_axis_2",
                             "test_softmax_default_axis", "test_softmax_example",
                             "test_softmax_large_number", "test_softmax_negative_axis")},
    "test_identity_opt": _NOT_TENSOR, "test_identity_sequence": _NOT_TENSOR,
    "test_constant": "is a constant or not produced",
    **{n: _etype("INT16") for n in ("test_add_int16", "test_dequantizelinear_int16",
                                    "test_mul_int16", "test_quantizelinear_blocked_symmetric",
                                    "test_quantizelinear_int16")},
    **{n: _etype("UINT16") for n in ("test_add_uint16", "test_dequantizelinear_uint16",
                                     "test_mul_uint16", "test_quantizelinear_uint16")},
    **{n: _etype("UINT32") for n in ("test_add_uint32", "test_mul_uint32")},
    **{n: _etype("UINT64") for n in ("test_add_uint64", "test_mul_uint64")},
    **{n: _etype("FLOAT8E4M3FN") for n in ("test_dequantizelinear_e4m3fn",
                                           "test_dequantizelinear_e4m3fn_float16",
                                           "test_dequantizelinear_e4m3fn_zero_point",
                                           "test_quantizelinear_e4m3fn")},
    **{n: _etype("FLOAT8E5M2") for n in ("test_dequantizelinear_e5m2", "test_quantizelinear_e5m2")},
    **{n: _etype("FLOAT4E2M1") for n in ("test_dequantizelinear_float4e2m1",
                                         "test_quantizelinear_float4e2m1")},
    **{n: _etype(t) for t in ("INT2", "INT4", "UINT2", "UINT4")
       for n in (f"test_dequantizelinear_{t.lower()}", f"test_quantizelinear_{t.lower()}")},
    "test_dequantizelinear_blocked": _BLOCK, "test_quantizelinear_blocked_asymmetric": _BLOCK,
    **{n: _AVG for n in (
        "test_averagepool_1d_default", "test_averagepool_2d_ceil",
        "test_averagepool_2d_ceil_last_window_starts_on_pad", "test_averagepool_2d_default",
        "test_averagepool_2d_dilations", "test_averagepool_2d_pads",
        "test_averagepool_2d_pads_count_include_pad", "test_averagepool_2d_precomputed_pads",
        "test_averagepool_2d_precomputed_pads_count_include_pad",
        "test_averagepool_2d_precomputed_same_upper", "test_averagepool_2d_precomputed_strides",
        "test_averagepool_2d_same_lower", "test_averagepool_2d_same_upper",
        "test_averagepool_2d_strides", "test_averagepool_3d_default",
        "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_False",
        "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_True",
        "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_False",
        "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True",
        "test_averagepool_3d_dilations_small")},
    **{n: _CONV for n in ("test_basic_conv_with_padding", "test_basic_conv_without_padding",
                          "test_conv_with_autopad_same", "test_conv_with_strides_and_asymmetric_padding",
                          "test_conv_with_strides_no_padding", "test_conv_with_strides_padding")},
    **{n: _GEMM for n in ("test_gemm_all_attributes", "test_gemm_alpha", "test_gemm_beta",
                          "test_gemm_default_matrix_bias", "test_gemm_default_no_bias",
                          "test_gemm_default_scalar_bias", "test_gemm_default_single_elem_vector_bias",
                          "test_gemm_default_vector_bias", "test_gemm_default_zero_bias",
                          "test_gemm_transposeA", "test_gemm_transposeB")},
    "test_globalaveragepool": _GAP, "test_globalaveragepool_precomputed": _GAP,
    **{n: _MATMUL for n in ("test_matmul_1d_1d", "test_matmul_1d_3d", "test_matmul_2d",
                            "test_matmul_3d", "test_matmul_4d", "test_matmul_4d_1d",
                            "test_matmul_bcast")},
    **{n: _3D for n in ("test_maxpool_3d_default", "test_maxpool_3d_dilations",
                        "test_maxpool_3d_dilations_use_ref_impl",
                        "test_maxpool_3d_dilations_use_ref_impl_large")},
    "test_maxpool_with_argmax_2d_precomputed_pads": "the Indices output of MaxPool is not supported",
    "test_maxpool_with_argmax_2d_precomputed_strides": "the Indices output of MaxPool is not supported",
    "test_reshape_allowzero_reordered": "empty tensors are not supported",
}
CASES = {t.name: t for t in node_cases()}
SUPPORTED = sorted(set(CASES) - set(UNSUPPORTED))


def test_case_inventory():
    """The onnx wheel's cases of these operators: 91 in scope, 94 out of scope (listed)."""
    assert set(UNSUPPORTED) <= set(CASES), sorted(set(UNSUPPORTED) - set(CASES))
    assert (len(SUPPORTED), len(UNSUPPORTED)) == (91, 94)
    ops = {CASES[n].model.graph.node[0].op_type for n in SUPPORTED}
    assert ops == {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
                   "ConvInteger", "MatMulInteger", "Relu", "Clip", "MaxPool", "Add", "Mul",
                   "Reshape", "Flatten", "Transpose", "Concat", "Identity"}


@pytest.mark.parametrize("name", SUPPORTED)
def test_node_case_matches_expected(name):
    out, expected, report = run_node_case(CASES[name])
    for k, e in expected.items():
        assert out[k].dtype == e.dtype, (k, out[k].dtype, e.dtype)
        assert out[k].shape == e.shape, (k, out[k].shape, e.shape)
        assert np.array_equal(out[k], e), (k, out[k], e)
    assert report["cycles"] > 0


MATMUL_OPS = {"QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"}


@pytest.mark.parametrize("name", [n for n in SUPPORTED
                                  if CASES[n].model.graph.node[0].op_type in MATMUL_OPS])
def test_node_case_matches_expected_on_dot4(name):
    """The convolution / matmul cases again with the dot4 kernels (an array without a matrix
    engine): the default preset runs them on the engine (docs/compiler.md, "ONNX importer")."""
    from tessera.spec.config import preset
    out, expected, report = run_node_case(CASES[name], preset("small").replace(engine_macs=0))
    for k, e in expected.items():
        assert out[k].dtype == e.dtype and out[k].shape == e.shape, (k, out[k], e)
        assert np.array_equal(out[k], e), (k, out[k], e)


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_node_case_out_of_scope_is_rejected_clearly(name):
    with pytest.raises(UnsupportedError) as ei:
        run_node_case(CASES[name])
    msg = str(ei.value)
    assert UNSUPPORTED[name] in msg
    op = CASES[name].model.graph.node[0].op_type
    assert f"({op})" in msg or "graph input" in msg or "graph output" in msg or "tensor" in msg
    assert not isinstance(ei.value.__cause__, (IndexError, KeyError, TypeError))
