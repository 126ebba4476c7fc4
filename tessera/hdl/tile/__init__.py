"""A Tessera tile: its core (:mod:`.core`), SRAM (:mod:`.sram`), exchange engine
(:mod:`.exchange_engine`) and fault record (:mod:`.fault_record`), composed in :mod:`.tile`."""

from .tile import Tile

__all__ = ["Tile"]
