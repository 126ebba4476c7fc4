"""Tessera kernel library: graph builders for int8 AI kernels on tiles (docs/compiler.md,
"Kernel library"), each bit-exact with its numpy reference in ``golden_model.kernels``."""

from ._common import KernelError
from .requantize import requantize

__all__ = ["KernelError", "requantize"]
