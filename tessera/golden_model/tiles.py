"""Per-tile state of the golden model outside the contexts and the SRAM: [N] arrays.

docs/architecture.md §3.2 (the ``xprog`` CSR), §6 (a tile's exchange phase), §7 (the fault
record) and §8 (the cycle counters, kept event-driven: a tile's category and the cycle it
entered it). The arrays are allocated once per host start and then only written in place
(the compiled fast engine receives pointers to them).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import sync
from .contexts import NEVER

__all__ = ["Tiles", "FAULT_RING"]

#: Rows of :attr:`Tiles.insn_fault_vis`: more than the STATE_VISIBLE_DELAY + 1 cycles between
#: the oldest instruction fault that can tie with an engine step and the newest one recorded.
FAULT_RING = 8


@dataclasses.dataclass(frozen=True, eq=False)
class Tiles:
    """The [N] per-tile state (N tiles).

    Members
    -------
    xprog : numpy.ndarray, uint32, shape (N,)
        The ``xprog`` CSR: byte address of the tile's exchange program (§3.2, §6).
    xphase : numpy.ndarray, bool, shape (N,)
        The tile is in its exchange phase (§6: from the ARRAY release to END + 1).
    xphase_end : numpy.ndarray, int64, shape (N,)
        First cycle after the phase (END + 1), :data:`tessera.golden_model.contexts.NEVER`
        while unknown or no phase.
    category : numpy.ndarray, int8, shape (N,)
        The §8 counter category (``sync.CAT_*``) of the tile since cycle ``since``.
    since : numpy.ndarray, int64, shape (N,)
        Cycle at which the tile entered ``category``.
    acc : numpy.ndarray, int64, shape (4, N)
        Cycles counted per category (``COUNTER_NAMES[:4]`` order) before ``since``; the
        counter of cycles 0..C-1 adds ``C - since`` to the current category.
    macs : numpy.ndarray, uint64, shape (N,)
        §8 ``macs``: multiply-accumulates of ``dot4`` and of the matrix engine (shared with
        :class:`tessera.golden_model.engine.MatrixEngines`).
    faults : list of (tessera.spec.result.Fault or None), length N
        §7 fault record of each tile: the fault that became visible first (an instruction's
        on a tie with an engine step's, §12); None: none.
    fault_vis : numpy.ndarray, int64, shape (N,)
        The cycle from which the kept record is visible (t + 5 for an instruction issued at
        t, c + 1 for an exchange step at c, s + 1 for an engine step at s; §7 "Stop");
        :data:`tessera.golden_model.contexts.NEVER` while there is none.
    insn_fault_vis : numpy.ndarray, int64, shape (N, FAULT_RING)
        The visibility cycles of the tile's latest instruction faults, ``v`` in row
        ``v % FAULT_RING`` (-1: none): an engine fault visible from the same cycle as an
        instruction fault of its tile is dropped (§12 "Engine faults").
    """

    xprog: np.ndarray
    xphase: np.ndarray
    xphase_end: np.ndarray
    category: np.ndarray
    since: np.ndarray
    acc: np.ndarray
    macs: np.ndarray
    faults: list
    fault_vis: np.ndarray
    insn_fault_vis: np.ndarray

    @classmethod
    def start(cls, tiles: int) -> "Tiles":
        """The state after a host start (§9): no phase, no fault, counters 0 (compute)."""
        n = tiles
        return cls(xprog=np.zeros(n, dtype=np.uint32),
                   xphase=np.zeros(n, dtype=bool),
                   xphase_end=np.full(n, NEVER, dtype=np.int64),
                   category=np.full(n, sync.CAT_COMPUTE, dtype=np.int8),
                   since=np.zeros(n, dtype=np.int64),
                   acc=np.zeros((4, n), dtype=np.int64),
                   macs=np.zeros(n, dtype=np.uint64),
                   faults=[None] * n,
                   fault_vis=np.full(n, NEVER, dtype=np.int64),
                   insn_fault_vis=np.full((n, FAULT_RING), -1, dtype=np.int64))
