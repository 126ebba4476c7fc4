"""Tessera RTL in Amaranth 0.5; this package imports only :mod:`tessera.spec` and Amaranth.

The folders follow the block diagram: :mod:`.tile` (core, SRAM, exchange engine, fault record)
and :mod:`.array` (tiles, exchange fabric, sync controller, host port; the top
:class:`tessera.hdl.array.Array`). :mod:`.interfaces` declares the signatures of the links
between blocks, :mod:`.variant` the implementation variants, :mod:`.gen` the one Verilog
generation path. Block structure and interfaces: ``docs/rtl.md``. Architectural behaviour:
``docs/architecture.md``.
"""
