"""The top layer: the ``tessera`` command line, the demo and the benchmark suite.

This is the only layer that imports every other part of Tessera (spec, hdl, golden model,
tb, toolchain); nothing below it imports it.
"""

from .main import main

__all__ = ["main"]
