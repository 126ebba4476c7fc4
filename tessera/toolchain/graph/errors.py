"""Exceptions raised by the graph compiler (docs/compiler.md, "Graph compiler guide")."""

from __future__ import annotations

__all__ = ["GraphError", "GraphMemoryError", "EngineError"]


class GraphError(ValueError):
    """A graph, tensor, mapping, vertex or program is invalid; the message names what and where."""


class GraphMemoryError(GraphError):
    """A tile's image does not fit its SRAM. Raised by :func:`compile_graph` before anything runs.

    Attributes
    ----------
    tile : int
        The first tile that does not fit.
    used : int
        Bytes that tile needs (image, tensors, records, tables, exchange programs, stacks).
    available : int
        ``config.sram_bytes``.
    largest : list of (str, int)
        The largest items on that tile, ``(description, bytes)``, largest first.
    """

    def __init__(self, tile: int, used: int, available: int, largest):
        self.tile, self.used, self.available = tile, used, available
        self.largest = list(largest)
        items = ", ".join(f"{name} {nbytes} B" for name, nbytes in self.largest)
        super().__init__(
            f"tile {tile} out of memory: needs {used} bytes but has {available} "
            f"({used - available} bytes over); largest items: {items}")


class EngineError(RuntimeError):
    """A run on an :class:`~tessera.toolchain.graph.engine.Engine` did not halt cleanly.

    ``result`` holds the :class:`tessera.spec.result.RunResult` (status fault or timeout).
    """

    def __init__(self, message: str, result=None):
        super().__init__(message)
        self.result = result
