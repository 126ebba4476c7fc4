"""A Tessera tile: its core (:mod:`.core`), SRAM, exchange engine, composed in :mod:`.tile`."""

from .tile import StubCore, Tile

__all__ = ["Tile", "StubCore"]
