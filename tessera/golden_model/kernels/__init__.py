"""Reference int8 kernels: pure, vectorized numpy, independent of RTL and simulator.

int8 operands, exact products, int32 accumulators that wrap modulo 2^32 like the tiles' 32-bit
adds (``dot4``, docs/architecture.md section 3.3), and TFLite/gemmlowp requantization. One
concept per module:

========================  =========================================================
``matmul``                dense ``[M,K] @ [K,N]``
``requantize``            int32 → int8 (``MultiplyByQuantizedMultiplier``), ``quantize_multiplier``
``conv2d``                NHWC convolution (regular, depthwise) and ``im2col``
``pool``                  ``maxpool2d``, ``avgpool2d``, ``global_avgpool``
``block_sparse``          BSR weights, ``block_sparse_matmul``, ``block_sparse_conv2d``
``float_quant``           ONNX/onnxruntime float32 rules: ``requantize_float32``, ``quantize_linear``, ...
========================  =========================================================
"""

from .block_sparse import BLOCK_SIZES, BlockSparseMatrix, block_sparse_conv2d, block_sparse_matmul
from .conv2d import conv2d, im2col
from .float_quant import (
    dequantize_linear, float32_multiplier, qrange, quantize_linear, requantize_float32,
)
from .matmul import matmul
from .pool import avgpool2d, global_avgpool, maxpool2d, rounded_div
from .requantize import (
    multiply_by_quantized_multiplier, quantize_multiplier, requantize,
    rounding_divide_by_pot, saturating_rounding_doubling_high_mul,
)

__all__ = [
    "matmul", "requantize", "quantize_multiplier", "multiply_by_quantized_multiplier",
    "saturating_rounding_doubling_high_mul", "rounding_divide_by_pot",
    "conv2d", "im2col", "maxpool2d", "avgpool2d", "global_avgpool", "rounded_div",
    "BLOCK_SIZES", "BlockSparseMatrix", "block_sparse_matmul", "block_sparse_conv2d",
    "float32_multiplier", "requantize_float32", "quantize_linear", "dequantize_linear", "qrange",
]
