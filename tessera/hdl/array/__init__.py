"""The Tessera array: tiles plus the exchange fabric, the sync controller and the host port,
composed in :mod:`.array` (the top, ``tessera_array``)."""

from .array import Array

__all__ = ["Array"]
