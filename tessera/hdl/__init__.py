"""Tessera RTL in Amaranth 0.5.

Block structure and internal interfaces: ``docs/rtl.md``. Architectural behaviour:
``docs/architecture.md``. The tile's core is :class:`tessera.hdl.tile.core.Core`.
"""
