"""Tessera kernel library: graph builders for int8 AI kernels on tiles (docs/compiler.md,
"Kernel library"), each bit-exact with its numpy reference in ``tessera.golden_model.kernels``."""

from ._common import KernelError
from .block_sparse import block_sparse_matmul
from .conv2d import (conv2d_block_sparse, conv2d_dense, conv2d_nhwc, conv_patches,
                     depthwise_as_dense, pad_input)
from .matmul import matmul, matmul_cols, matmul_requantize
from .pool import avgpool2d, global_avgpool, maxpool2d
from .requantize import requantize

__all__ = ["KernelError", "requantize", "matmul", "matmul_cols", "matmul_requantize", "block_sparse_matmul",
           "conv2d_dense", "conv2d_block_sparse", "conv_patches", "depthwise_as_dense",
           "conv2d_nhwc", "pad_input",
           "maxpool2d", "avgpool2d", "global_avgpool"]
