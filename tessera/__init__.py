"""Tessera: an open, IPU-style AI processor.

One package, in layers (``tests/test_layers.py`` checks the imports):

- :mod:`tessera.spec` — the contract of ``docs/architecture.md`` in Python (standard library only);
- :mod:`tessera.hdl` — the Amaranth RTL; :mod:`tessera.golden_model` — the numpy golden model;
- :mod:`tessera.toolchain` — C toolchain, assembler, graph compiler, kernels, models;
- :mod:`tessera.tb` — cocotb + Verilator testbenches and the ``rtl`` backend;
- :mod:`tessera.cli` — the ``tessera`` command, the demo and the benchmark suite (the top).

:mod:`tessera.backends` is the backend registry (providers found through entry points);
:mod:`tessera.paths` and :mod:`tessera.output` are small standard-library helpers.
"""

__version__ = "0.1.0"
