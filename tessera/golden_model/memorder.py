"""Memory-order records of the golden model's issue-time execution.

The vectorized engine applies an instruction's effects at issue (cycle k), but the contract
orders SRAM accesses by the X cycle (k + 2) and the write at k + 3 (docs/architecture.md §4
"Memory"; §12 "Memory order"). These records keep what the corrections need:

* :class:`StoreRecord`: the stores of the latest cycle with stores. A fetch at k must not see a
  store issued at k − 1 (§4), and a matrix-engine step of cycle k must not see it either but
  must keep its bytes over its own write (§12).
* :class:`LoadRecord`: the loads of the latest cycle with loads while an engine is busy: an
  engine write of cycle k must reach a load issued at k − 1 (§12).
* :class:`PortSlots`: per cycle parity, the tiles whose instruction issued at that cycle is a
  LOAD/STORE (it takes the SRAM ports in its X cycle, which is then no engine cycle, §12).
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["StoreRecord", "LoadRecord", "PortSlots"]


@dataclasses.dataclass(eq=False, slots=True)
class StoreRecord:
    """The stores issued in cycle ``cycle`` (the latest cycle with stores).

    Members
    -------
    cycle : int
        Their issue cycle, -1 before the first store.
    word : numpy.ndarray, int64, shape (N,)
        Per tile the SRAM word index the store wrote, -1: the tile stored nothing then.
    old : numpy.ndarray, uint32, shape (N,)
        The word before the store (what a fetch at ``cycle + 1`` sees).
    mask : numpy.ndarray, uint8, shape (N,)
        The store's byte enables (4 bits; kept only while a matrix engine is busy).
    """

    cycle: int
    word: np.ndarray
    old: np.ndarray
    mask: np.ndarray

    @classmethod
    def start(cls, tiles: int) -> "StoreRecord":
        """No store yet (host start)."""
        return cls(-1, np.full(tiles, -1, dtype=np.int64), np.zeros(tiles, dtype=np.uint32),
                   np.zeros(tiles, dtype=np.uint8))

    def begin(self, k: int) -> None:
        """Make the record the one of cycle ``k`` (forget older stores) if it is not yet."""
        if self.cycle != k:
            self.cycle = k
            self.word[:] = -1


@dataclasses.dataclass(frozen=True, eq=False)
class LoadRecord:
    """The loads issued in one cycle (at most one context per cycle issues, §4).

    Members
    -------
    cycle : int
        The issue cycle.
    context : int
        The issuing context.
    tiles : dict
        tile → (rd, byte address, size in bytes, sign-extended) of its load.
    """

    cycle: int
    context: int
    tiles: dict


@dataclasses.dataclass(frozen=True, eq=False)
class PortSlots:
    """Which tiles issued a LOAD/STORE, per cycle parity (kept while an engine is busy).

    Members
    -------
    ls : numpy.ndarray, bool, shape (2, N)
        ``ls[k & 1, tile]``: the tile's instruction issued at ``cycle[k & 1]`` is a LOAD/STORE.
    cycle : list of int, length 2
        The cycle each row belongs to (-1: none).
    """

    ls: np.ndarray
    cycle: list

    @classmethod
    def start(cls, tiles: int) -> "PortSlots":
        """No LOAD/STORE recorded (host start)."""
        return cls(np.zeros((2, tiles), dtype=bool), [-1, -1])

    def at(self, k: int, tiles: np.ndarray) -> np.ndarray:
        """LOAD/STORE issued at ``k`` on ``tiles``, bool (False where ``k`` is not recorded)."""
        if self.cycle[k & 1] == k:
            return self.ls[k & 1, tiles]
        return np.zeros(len(tiles), dtype=bool)
