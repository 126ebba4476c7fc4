"""Variables, tile mappings and tensor views (docs/compiler.md, "Tensors and mappings").

A :class:`Variable` is an n-dimensional array of int8, uint8 or int32 elements whose
row-major element range ``0 .. size-1`` is cut into contiguous intervals, each placed on
one tile. A :class:`Tensor` is a view of a variable: any numpy-style indexing or reshape of
it, remembered as the array of the variable's flat element indices it covers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import GraphError

__all__ = ["DTYPES", "Interval", "TileMapping", "map_linearly", "map_to_tile", "Variable",
           "Tensor"]

#: Element types a variable may have, by name; values are little-endian numpy dtypes.
DTYPES = {"int8": np.dtype("int8"), "uint8": np.dtype("uint8"), "int32": np.dtype("<i4")}


def _dtype(dtype, where: str) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.name not in DTYPES:
        raise GraphError(f"{where}: dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    return DTYPES[dt.name]


@dataclass(frozen=True)
class Interval:
    """Elements ``start .. stop-1`` (flat, row-major) of a variable, stored on ``tile``."""
    tile: int
    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start


class TileMapping:
    """A rule that cuts a variable's elements into per-tile intervals.

    Use :func:`map_linearly` or :func:`map_to_tile`, or pass a list of
    ``(tile, start, stop)`` triples to :meth:`Graph.add_variable` directly.
    """

    def intervals(self, size: int, tiles: int) -> list[Interval]:  # pragma: no cover
        raise NotImplementedError


class _OneTile(TileMapping):
    def __init__(self, tile):
        self.tile = tile

    def intervals(self, size, tiles):
        return [Interval(self.tile, 0, size)]

    def __repr__(self):
        return f"map_to_tile({self.tile})"


class _Linear(TileMapping):
    def __init__(self, tiles, grain):
        self.tiles, self.grain = tiles, grain

    def intervals(self, size, ntiles):
        tiles = list(range(ntiles)) if self.tiles is None else list(self.tiles)
        if not tiles:
            raise GraphError("map_linearly: the tile list is empty")
        if size % self.grain:
            raise GraphError(
                f"map_linearly: {size} elements is not a multiple of the grain {self.grain}")
        grains = size // self.grain
        per, extra = divmod(grains, len(tiles))
        out, pos = [], 0
        for i, t in enumerate(tiles):
            n = (per + (i < extra)) * self.grain
            if n:
                out.append(Interval(t, pos, pos + n))
            pos += n
        return out

    def __repr__(self):
        return f"map_linearly(tiles={self.tiles}, grain={self.grain})"


def map_to_tile(tile: int) -> TileMapping:
    """Place a whole variable on ``tile``."""
    return _OneTile(tile)


def map_linearly(tiles=None, grain: int = 1) -> TileMapping:
    """Spread a variable evenly over ``tiles`` (default: every tile, in order).

    Parameters
    ----------
    tiles : int, sequence of int, or None
        The tiles to use: None for all tiles of the graph, an int ``n`` for tiles
        ``0..n-1``, or an explicit list.
    grain : int
        Intervals are multiples of ``grain`` elements (e.g. a row length, so each tile
        gets whole rows). The variable's size must be a multiple of ``grain``. The first
        ``(size/grain) % len(tiles)`` tiles get one grain more than the others.

    Raises
    ------
    GraphError
        If ``grain`` is not a positive int.
    """
    if not isinstance(grain, (int, np.integer)) or grain < 1:
        raise GraphError(f"map_linearly: grain must be a positive int, not {grain!r}")
    if isinstance(tiles, (int, np.integer)):
        tiles = range(int(tiles))
    return _Linear(None if tiles is None else [int(t) for t in tiles], int(grain))


def resolve_mapping(mapping, size: int, ntiles: int, where: str) -> list[Interval]:
    """Turn a mapping (TileMapping, tile int, or (tile, start, stop) list) into checked intervals."""
    if isinstance(mapping, (int, np.integer)) and not isinstance(mapping, bool):
        mapping = map_to_tile(int(mapping))
    if isinstance(mapping, TileMapping):
        ivs = mapping.intervals(size, ntiles)
    else:
        try:
            ivs = [Interval(int(t), int(a), int(b)) for t, a, b in mapping]
        except (TypeError, ValueError):
            raise GraphError(
                f"{where}: tile_mapping must be a TileMapping, a tile index or a list of "
                f"(tile, start, stop) triples, not {mapping!r}") from None
    ivs = sorted((iv for iv in ivs if iv.size != 0), key=lambda iv: iv.start)
    pos = 0
    for iv in ivs:
        if iv.stop < iv.start:
            raise GraphError(f"{where}: interval ({iv.tile}, {iv.start}, {iv.stop}) has stop < start")
        if not 0 <= iv.tile < ntiles:
            raise GraphError(f"{where}: tile {iv.tile} out of range 0..{ntiles - 1}")
        if iv.start < pos:
            raise GraphError(f"{where}: interval {iv.start}..{iv.stop} on tile {iv.tile} "
                             f"overlaps the previous one (ending at {pos})")
        if iv.start > pos:
            raise GraphError(f"{where}: elements {pos}..{iv.start - 1} are not mapped to any tile")
        pos = iv.stop
    if pos != size:
        raise GraphError(f"{where}: mapping covers elements 0..{pos - 1} but the variable has "
                         f"{size} elements")
    return ivs


class Variable:
    """A named n-dimensional array placed on tiles; created by :meth:`Graph.add_variable`.

    Attributes
    ----------
    name : str
    shape : tuple of int
    dtype : numpy.dtype (int8, uint8 or little-endian int32)
    intervals : list of Interval
        Sorted by start, covering ``0 .. size-1`` exactly once.
    align : int
        Byte alignment of each interval's address (default 4; the matrix-engine kernels
        raise it to 8 for their operands, architecture §12: 8-byte aligned reads).
    """

    def __init__(self, name, shape, dtype, intervals):
        self.name, self.shape, self.dtype, self.intervals = name, shape, dtype, intervals
        self.align = 4
        self.size = int(np.prod(shape, dtype=np.int64))
        starts = np.array([iv.start for iv in intervals], dtype=np.int64)
        self._starts = starts
        self._index = None     # the whole variable's flat indices, built once on first use

    def interval_of(self, flat: np.ndarray) -> np.ndarray:
        """Index into :attr:`intervals` of each flat element index."""
        return np.searchsorted(self._starts, flat, side="right") - 1

    def tiles(self) -> list[int]:
        """Tiles holding at least one element, ascending."""
        return sorted({iv.tile for iv in self.intervals})

    def tensor(self) -> "Tensor":
        """A view of the whole variable.

        The flat index array is built once per variable and shared (read-only) by every
        view, so slicing a variable costs memory proportional to the slice, not to the
        variable (basic slices are numpy views of the shared array).
        """
        if self._index is None:
            index = np.arange(self.size, dtype=np.int64).reshape(self.shape)
            index.flags.writeable = False
            self._index = index
        return Tensor(self, self._index)

    def __getitem__(self, idx):
        return self.tensor()[idx]

    def reshape(self, *shape) -> "Tensor":
        """A view of the whole variable with another shape (row-major, no data moved)."""
        return self.tensor().reshape(*shape)

    def flatten(self) -> "Tensor":
        """A 1-D view of the whole variable."""
        return self.tensor().flatten()

    def __repr__(self):
        return f"Variable({self.name!r}, shape={self.shape}, dtype={self.dtype.name})"


class Tensor:
    """A view of a :class:`Variable`: numpy indexing and reshapes, no data.

    Parameters
    ----------
    variable : Variable
    index : numpy.ndarray of int64
        The variable's flat element index of every element of the view; its shape is the
        view's shape.
    """

    def __init__(self, variable: Variable, index: np.ndarray):
        self.variable, self.index = variable, index

    @property
    def shape(self):
        return self.index.shape

    @property
    def dtype(self):
        return self.variable.dtype

    @property
    def size(self) -> int:
        return int(self.index.size)

    def __getitem__(self, idx) -> "Tensor":
        try:
            sub = self.index[idx]
        except IndexError as e:
            raise GraphError(f"bad index {idx!r} for tensor of {self.variable.name!r} with "
                             f"shape {self.shape}: {e}") from None
        return Tensor(self.variable, np.asarray(sub))

    def reshape(self, *shape) -> "Tensor":
        """The same elements with another shape (row-major order)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        try:
            return Tensor(self.variable, self.index.reshape(shape))
        except ValueError:
            raise GraphError(f"cannot reshape tensor of {self.variable.name!r} from "
                             f"{self.shape} to {shape}") from None

    def flatten(self) -> "Tensor":
        return Tensor(self.variable, self.index.reshape(-1))

    def contiguous_interval(self, where: str) -> tuple[Interval, int]:
        """The interval holding this view and the view's first element offset inside it.

        Raises
        ------
        GraphError
            If the view is empty, not contiguous in row-major order, or spans tiles or
            intervals (a vertex field must be one contiguous block of one tile's memory).
        """
        flat = self.index.reshape(-1)
        name = self.variable.name
        if flat.size == 0:
            raise GraphError(f"{where}: tensor view of {name!r} is empty")
        if flat.size > 1 and not np.all(np.diff(flat) == 1):
            raise GraphError(f"{where}: tensor view of {name!r} is not contiguous; "
                             "a vertex field needs consecutive elements")
        ivi = self.variable.interval_of(flat[[0, -1]])
        if ivi[0] != ivi[1]:
            a, b = (self.variable.intervals[i] for i in ivi)
            raise GraphError(f"{where}: tensor view of {name!r} (elements {flat[0]}..{flat[-1]}) "
                             f"spans tiles {a.tile} and {b.tile}; a vertex field must lie on "
                             "one tile")
        iv = self.variable.intervals[int(ivi[0])]
        return iv, int(flat[0]) - iv.start

    def __repr__(self):
        return f"Tensor({self.variable.name!r}, shape={self.shape})"
