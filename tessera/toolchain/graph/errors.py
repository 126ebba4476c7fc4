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

    Attributes
    ----------
    result : tessera.spec.result.RunResult
        The run (status fault or timeout, or halted with a non-zero exit code).
    tile, context, pc, addr, cause
        The first fault record (context None for an exchange fault); None otherwise.
    entry : VertexEntry or None
        The vertex (codelet, vertex index, compute set, part) the faulting context — or,
        on a timeout, the first context still running — was in; None outside codelets.
    exchange_phase : str or None
        The exchange phase of an exchange fault.
    engine_start : list of (str, int) or None
        For an engine fault outside codelets: the engine-start commands the runtime issued
        on that tile (compute set name, descriptor address; ``CompiledGraph.engine_starts``).
    tiles_running : list of int
        On a timeout, the tiles with a context still running.
    """

    def __init__(self, message: str, result=None, *, tile=None, context=None, pc=None,
                 addr=None, cause=None, entry=None, exchange_phase=None, tiles_running=(),
                 engine_start=None):
        super().__init__(message)
        self.engine_start = engine_start
        self.result = result
        self.tile, self.context, self.pc, self.addr, self.cause = tile, context, pc, addr, cause
        self.entry, self.exchange_phase = entry, exchange_phase
        self.tiles_running = list(tiles_running)
