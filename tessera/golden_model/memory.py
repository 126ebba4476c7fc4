"""Tile SRAMs of the golden model: one uint32 array [N, words] with byte/half views.

docs/architecture.md §2: byte addresses 0..sram_bytes-1 per tile, little-endian, unified code
and data. The host accessors validate their arguments (§9: the model is always "stopped"
between :meth:`Array.run` calls, so host accesses are always allowed).
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["Sram"]

if sys.byteorder != "little":  # pragma: no cover - the byte views assume a little-endian host
    raise ImportError("tessera.golden_model needs a little-endian host")


class Sram:
    """All tiles' SRAM.

    Parameters
    ----------
    tiles : int
        Number of tiles N.
    sram_bytes : int
        Bytes per tile (a multiple of 4).

    Members
    -------
    w32 : numpy.ndarray, uint32, shape (N, sram_bytes // 4)
    w16 : numpy.ndarray, uint16, shape (N, sram_bytes // 2)  (view of ``w32``)
    w8 : numpy.ndarray, uint8, shape (N, sram_bytes)  (view of ``w32``)
    """

    def __init__(self, tiles: int, sram_bytes: int):
        self.tiles = tiles
        self.nbytes = sram_bytes
        self.w32 = np.zeros((tiles, sram_bytes // 4), dtype=np.uint32)
        self.w16 = self.w32.view(np.uint16)
        self.w8 = self.w32.view(np.uint8)

    def _check(self, what: str, tile, addr, nbytes: int, allow_all: bool):
        if tile is None and allow_all:
            pass
        elif not isinstance(tile, (int, np.integer)) or isinstance(tile, bool) \
                or not 0 <= tile < self.tiles:
            raise ValueError(f"{what}: tile {tile!r} is not a tile index 0..{self.tiles - 1}"
                             + (" or None" if allow_all else ""))
        if not isinstance(addr, (int, np.integer)) or isinstance(addr, bool):
            raise ValueError(f"{what}: addr must be an int, not {addr!r}")
        if addr < 0 or nbytes < 0 or addr + nbytes > self.nbytes:
            raise ValueError(
                f"{what}: tile {tile} addr {int(addr):#x} len {nbytes} is outside the "
                f"{self.nbytes}-byte SRAM (0..{self.nbytes - 1:#x})")

    def write(self, tile: int | None, addr: int, data: bytes) -> None:
        """Host write of ``data`` at byte ``addr`` of ``tile`` (None = every tile).

        Raises
        ------
        ValueError
            If the tile index, the address or the length is out of range (message names them).
        TypeError
            If ``data`` is not bytes-like.
        """
        try:
            buf = np.frombuffer(bytes(data), dtype=np.uint8)
        except TypeError:
            raise TypeError(f"write_mem: data must be bytes-like, not {type(data).__name__}") \
                from None
        self._check("write_mem", tile, addr, len(buf), allow_all=True)
        if tile is None:
            self.w8[:, addr:addr + len(buf)] = buf
        else:
            self.w8[tile, addr:addr + len(buf)] = buf

    def read(self, tile: int, addr: int, nbytes: int) -> bytes:
        """Host read of ``nbytes`` bytes at ``addr`` of ``tile``.

        Raises
        ------
        ValueError
            If the tile index, address or length is out of range.
        """
        if not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise ValueError(f"read_mem: nbytes must be a non-negative int, not {nbytes!r}")
        self._check("read_mem", tile, addr, int(nbytes), allow_all=False)
        return self.w8[tile, addr:addr + nbytes].tobytes()
