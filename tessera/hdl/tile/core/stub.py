"""A core with the real ports and no logic, for unit tests of the tile and the array."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring

from tessera.spec.config import ArrayConfig

from .core import CoreSignature

__all__ = ["StubCore"]


class StubCore(wiring.Component):
    """A core with :class:`~.core.CoreSignature` that drives nothing (outputs stay 0 unless a
    testbench or a subclass drives them). Pass it as ``core_factory`` to
    :class:`tessera.hdl.tile.Tile` or :class:`tessera.hdl.array.Array`.

    Parameters
    ----------
    config : ArrayConfig
    tile_id : int

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig, tile_id: int):
        self.config = config
        self.tile_id = tile_id
        super().__init__(CoreSignature(config))

    def elaborate(self, platform):
        return Module()
