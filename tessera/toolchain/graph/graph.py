"""The graph: variables, compute sets and vertices (docs/compiler.md, "Graph compiler guide").

Poplar's model, trimmed: a :class:`Graph` holds variables (placed on tiles) and compute
sets (groups of vertices; a vertex runs a C codelet on one tile with fields bound to tensor
slices on that tile). Programs (:mod:`tessera.toolchain.graph.program`) sequence compute sets and
copies; :func:`tessera.toolchain.graph.compile_graph` lowers them to per-tile images.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tessera.spec.config import ArrayConfig

from .codelet import BUILTIN, Codelet, Field
from .errors import GraphError
from .tensor import Tensor, Variable, _dtype, resolve_mapping

__all__ = ["Graph", "ComputeSet", "Vertex"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-\[\]/]*$")


@dataclass
class Vertex:
    """One codelet instance on one tile: ``fields`` maps field name -> Tensor or int.

    ``context``: None (the compiler chooses), or the context whose worklist gets this vertex
    of a ``single`` codelet (docs/compiler.md, "Execution model"; set by
    :func:`tessera.toolchain.kernels.engine.add_engine_vertex` for engine commands issued
    from several contexts)."""
    codelet: Codelet
    tile: int
    fields: dict
    context: int | None = None


@dataclass
class ComputeSet:
    """A named group of vertices that run in one compute phase (all tiles in parallel).

    ``engine_start`` maps a tile to a 64-byte, 8-byte aligned matrix-engine descriptor
    (a Tensor on that tile) that the runtime's context 0 issues with ``mrun`` before the
    tile's vertices run (control table ``EXEC`` word b; docs/compiler.md, "Matrix engine");
    set by :func:`tessera.toolchain.kernels.engine.add_engine_vertex`.
    """
    name: str
    vertices: list = field(default_factory=list)
    engine_start: dict = field(default_factory=dict)

    def tiles(self) -> set:
        return {v.tile for v in self.vertices}


class Graph:
    """A Tessera program under construction.

    Parameters
    ----------
    config : tessera.spec.config.ArrayConfig
        The target array (tiles, contexts, SRAM).

    Raises
    ------
    TypeError
        If ``config`` is not an ArrayConfig.
    """

    def __init__(self, config: ArrayConfig):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"Graph needs a tessera.spec.config.ArrayConfig, not {config!r}")
        self.config = config
        self.variables: dict[str, Variable] = {}
        self._tile_bytes: dict[int, int] = {}   # bytes of variables placed on each tile so far
        self.compute_sets: list[ComputeSet] = []
        self.codelets: dict[str, Codelet] = dict(BUILTIN)

    # -- variables -------------------------------------------------------------------
    def add_variable(self, name: str, shape, dtype, tile_mapping) -> Variable:
        """Create a variable and place its elements on tiles.

        Parameters
        ----------
        name : str
            Unique name (used by ``Engine.write_tensor`` / ``read_tensor`` and reports).
        shape : int or tuple of int
            Positive dimensions.
        dtype : str or numpy dtype
            ``int8``, ``uint8`` or ``int32``.
        tile_mapping : TileMapping, int, or list of (tile, start, stop)
            Where the row-major flat elements live: :func:`map_linearly`,
            :func:`map_to_tile`, a tile index, or explicit intervals that must cover
            ``0 .. size-1`` exactly once.

        Returns
        -------
        Variable

        Raises
        ------
        GraphError
            Duplicate or bad name, bad shape, unsupported dtype, or a mapping that leaves
            elements unmapped, maps some twice, or names a tile outside the array; or
            the variable can never fit: its bytes exceed the whole array's SRAM, or the
            variables placed on one tile so far exceed that tile's SRAM (checked here,
            before any compiling, so impossible sizes fail at once).
        """
        if not isinstance(name, str) or not _NAME.match(name):
            raise GraphError(f"add_variable: bad variable name {name!r} (letters, digits, _ . - / [])")
        if name in self.variables:
            raise GraphError(f"add_variable: a variable named {name!r} already exists")
        where = f"add_variable({name!r})"
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        try:
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise GraphError(f"{where}: shape must be a tuple of ints, not {shape!r}") from None
        if not shape or any(d < 1 for d in shape):
            raise GraphError(f"{where}: shape {shape} must have positive dimensions")
        dt = _dtype(dtype, where)
        size = int(np.prod(shape, dtype=np.int64))
        cfg = self.config
        nbytes, capacity = size * dt.itemsize, cfg.tiles * cfg.sram_bytes
        if nbytes > capacity:   # before mapping or compiling anything: it can never fit
            raise GraphError(
                f"{where}: out of memory: tensor {name!r} {shape} {dt.name} needs {nbytes} bytes but the whole "
                f"array has {capacity} bytes of SRAM ({cfg.tiles} tiles x {cfg.sram_bytes}); "
                "use smaller shapes or a bigger array")
        intervals = resolve_mapping(tile_mapping, size, cfg.tiles, where)
        added: dict[int, int] = {}
        for iv in intervals:
            added[iv.tile] = added.get(iv.tile, 0) + iv.size * dt.itemsize
        for tile, b in added.items():
            total = self._tile_bytes.get(tile, 0) + b
            if total > cfg.sram_bytes:
                raise GraphError(
                    f"{where}: out of memory: tensor {name!r} puts {b} bytes on tile {tile}, which brings the "
                    f"variables there to {total} bytes, more than its {cfg.sram_bytes} bytes "
                    "of SRAM; use smaller shapes, more tiles or a bigger --sram-bytes")
        for tile, b in added.items():
            self._tile_bytes[tile] = self._tile_bytes.get(tile, 0) + b
        var = Variable(name, shape, dt, intervals)
        self.variables[name] = var
        return var

    def add_constant(self, name: str, data, tile_mapping, dtype=None) -> Variable:
        """Create a variable whose initial value is ``data`` (written into the tile images
        by :func:`~tessera.toolchain.graph.compile_graph`; ``Engine.write_tensor`` may still change it).

        Parameters
        ----------
        name : str
        data : array_like of int
            The value; its shape is the variable's shape. Values must fit ``dtype``.
        tile_mapping : as for :meth:`add_variable`
        dtype : str or numpy dtype, optional
            ``int8``, ``uint8`` or ``int32``; default ``data``'s dtype.

        Returns
        -------
        Variable
            With attribute ``initial`` (the data, in the variable's dtype).

        Raises
        ------
        GraphError
            As :meth:`add_variable`, or ``data`` is not integer or does not fit ``dtype``.
        """
        arr = np.asarray(data)
        where = f"add_constant({name!r})"
        if arr.dtype.kind not in "iu":
            raise GraphError(f"{where}: data must be integers, not {arr.dtype}")
        if dtype is None and arr.dtype.name not in ("int8", "uint8", "int32"):
            raise GraphError(f"{where}: data is {arr.dtype.name}; pass dtype='int8', 'uint8' "
                             "or 'int32' (e.g. add_constant(name, np.arange(8), tile, "
                             "dtype='int32'))")
        dt = _dtype(arr.dtype if dtype is None else dtype, where)
        info = np.iinfo(dt)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise GraphError(f"{where}: values {arr.min()}..{arr.max()} do not fit {dt.name}")
        var = self.add_variable(name, arr.shape if arr.ndim else (1,), dt, tile_mapping)
        var.initial = arr.astype(dt).reshape(var.shape)
        return var

    def add_late_constant(self, name: str, nbytes: int, tile: int, build, *,
                          align: int = 8) -> Variable:
        """A uint8 constant on ``tile`` whose bytes are computed at compile time, once every
        tensor has its address: ``build(addr)`` returns ``nbytes`` bytes, where ``addr(t)``
        is the byte address of Tensor ``t`` (a contiguous view on one tile). Used for
        matrix-engine descriptor tables (docs/compiler.md, "Matrix engine").

        Raises
        ------
        GraphError
            As :meth:`add_variable`, or ``nbytes`` is not positive.
        """
        if not isinstance(nbytes, (int, np.integer)) or nbytes < 1:
            raise GraphError(f"add_late_constant({name!r}): nbytes must be a positive int")
        var = self.add_variable(name, (int(nbytes),), "uint8", tile)
        var.align = max(var.align, int(align))
        var.late = build
        return var

    # -- codelets and vertices ---------------------------------------------------------
    def add_codelet(self, name: str, source, fields) -> Codelet:
        """Register a C codelet (a function ``name`` in file ``source``).

        Parameters
        ----------
        name : str
            The C function's name.
        source : str or Path
            C file; compiled with ``tessera.h`` and ``tsr_graph.h`` on the include path.
        fields : sequence of Field or (name, kind[, dtype]) tuples
            In the order of the codelet's field struct.

        Raises
        ------
        GraphError
            Name already used, source missing, or bad field declarations.
        """
        if not isinstance(name, str) or not re.match(r"^[A-Za-z_]\w*$", name):
            raise GraphError(f"add_codelet: {name!r} is not a C identifier")
        if name in self.codelets:
            raise GraphError(f"add_codelet: codelet {name!r} already exists")
        source = Path(source)
        if not source.is_file():
            raise GraphError(f"add_codelet({name!r}): source file not found: {source}")
        flds = tuple(f if isinstance(f, Field) else Field(*f) for f in fields)
        c = Codelet(name, source.resolve(), flds)
        self.codelets[name] = c
        return c

    def add_compute_set(self, name: str) -> ComputeSet:
        """Create an empty compute set."""
        cs = ComputeSet(name)
        self.compute_sets.append(cs)
        return cs

    def add_vertex(self, compute_set: ComputeSet, codelet, tile: int | None = None,
                   **fields) -> Vertex:
        """Add a vertex running ``codelet`` to ``compute_set``.

        Parameters
        ----------
        compute_set : ComputeSet
        codelet : Codelet or str
            A registered codelet or its name.
        tile : int, optional
            The tile; by default the tile of the tensor fields.
        **fields
            Field name -> Tensor (a contiguous view lying on one tile) or int (scalar).

        Raises
        ------
        GraphError
            Unknown codelet or field, a missing field, a tensor field that is not
            contiguous or spans tiles, fields on different tiles, a bad tile, or a compute
            set or variable of another graph.
        """
        if not isinstance(compute_set, ComputeSet):
            raise GraphError(f"add_vertex: compute_set must be a ComputeSet, not {compute_set!r}")
        if not any(c is compute_set for c in self.compute_sets):
            raise GraphError(f"add_vertex: compute set {compute_set.name!r} belongs to another "
                             "graph; create it with this graph's add_compute_set")
        if isinstance(codelet, str):
            if codelet not in self.codelets:
                raise GraphError(f"add_vertex: unknown codelet {codelet!r}")
            codelet = self.codelets[codelet]
        where = f"add_vertex({codelet.name!r} in compute set {compute_set.name!r})"
        bound = codelet.bind(fields, where)
        tiles = set()
        for fname, v in bound.items():
            if isinstance(v, Tensor):
                if v.variable.name not in self.variables or \
                        self.variables[v.variable.name] is not v.variable:
                    raise GraphError(f"{where}: field {fname!r} uses a variable of another graph")
                iv, _ = v.contiguous_interval(f"{where}, field {fname!r}")
                tiles.add(iv.tile)
        if tile is None:
            if len(tiles) != 1:
                raise GraphError(f"{where}: cannot infer the tile: tensor fields lie on tiles "
                                 f"{sorted(tiles)}; pass tile=")
            tile = tiles.pop()
        elif not 0 <= tile < self.config.tiles:
            raise GraphError(f"{where}: tile {tile} out of range 0..{self.config.tiles - 1}")
        elif tiles - {tile}:
            raise GraphError(f"{where}: tensor fields lie on tiles {sorted(tiles)}, not on "
                             f"tile {tile}")
        v = Vertex(codelet, tile, bound)
        compute_set.vertices.append(v)
        return v
