"""Memory-order records of the golden model: the M-stage work in flight and the SRAM port slots.

Contract v2 (docs/architecture.md §4 "Barrel timing"): an instruction issued at cycle t makes
**every data-memory effect in M = t + 4** (a store writes the SRAM, a load reads it) and an
``mrun``/``mwait`` is decided in M (§12 "Instructions"). The vectorized engine applies register
and pc effects at issue (exact: they are only seen by the context's next slot, ≥ t + 6) but
queues these M-stage effects and applies them in loop iteration t + 4; with them in their own
cycle, the fetch rule (a fetch at k sees the SRAM writes of cycles < k, §4) and the matrix
engine's memory order (§12) hold without corrections. The records:

* :class:`StoreWork`, :class:`LoadWork`, :class:`EngineWork`: one instruction's M-stage effect
  on a set of tiles (one context issues per cycle, §4, so one item per issue and kind).
* :class:`MStageQueue`: those items by their M cycle.
* :class:`PortSlots`: per issue cycle (a ring of :data:`PORT_RING` cycles, each row stamped with
  its cycle), the tiles whose word issued then is a LOAD or STORE: it owns the SRAM data ports
  in its M cycle, which is then no engine cycle of the tile (§12 "Engine cycles").
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tessera.spec.timing import Stage

__all__ = ["StoreWork", "LoadWork", "EngineWork", "MStageQueue", "PortSlots", "PORT_RING",
           "LoadRecord"]

#: Rows of :class:`PortSlots`: a power of two > Stage.M, so that the row of the word issued at
#: k − 4 (in M at k) is still there at k.
PORT_RING = 8
assert PORT_RING > int(Stage.M)


@dataclasses.dataclass(frozen=True, eq=False)
class StoreWork:
    """Stores issued by one context in one cycle, written in their M cycle (§4).

    Members
    -------
    tiles : numpy.ndarray, int64, shape (M,)
        The storing tiles.
    addrs : numpy.ndarray, uint32, shape (M,)
        Byte addresses (checked at issue: aligned, inside the SRAM, §2).
    values : numpy.ndarray, uint32, shape (M,)
        rs2 as read in R (the low ``size`` bytes are written).
    size : int
        1, 2 or 4 bytes.
    """

    tiles: np.ndarray
    addrs: np.ndarray
    values: np.ndarray
    size: int


@dataclasses.dataclass(frozen=True, eq=False)
class LoadWork:
    """Loads issued by one context in one cycle: the SRAM is read in their M cycle (§4) and rd
    is written (the context reads it at its next slot, ≥ t + 6, after W = t + 5).

    Members
    -------
    context : int
        The issuing context c.
    tiles : numpy.ndarray, int64, shape (M,)
        The loading tiles.
    rd : int or numpy.ndarray (int64 [M])
        Destination registers (x0: dropped).
    addrs : numpy.ndarray, uint32, shape (M,)
        Byte addresses (checked at issue).
    size : int
        1, 2 or 4 bytes.
    signed : bool
        Sign-extend (LB, LH).
    trace : dict or None
        While tracing, the retire records of the issue cycle (tile → record): the load's
        ``value`` is filled in when it is read.
    """

    context: int
    tiles: np.ndarray
    rd: object
    addrs: np.ndarray
    size: int
    signed: bool
    trace: dict | None


@dataclasses.dataclass(frozen=True, eq=False)
class EngineWork:
    """``mrun``/``mwait`` issued by one context in one cycle, decided in their M cycle (§12).

    Members
    -------
    op : tessera.golden_model.decode.Op
        ``Op.MRUN`` or ``Op.MWAIT``.
    context : int
        The issuing context c.
    tiles : numpy.ndarray, int64, shape (M,)
        The issuing tiles.
    pcs : numpy.ndarray, uint32, shape (M,)
        Their pcs (pc_e of an accepted command).
    desc : numpy.ndarray, int64, shape (M,), or None
        ``mrun``: the descriptor address d = rs1 as read in R; None for ``mwait``.
    words : numpy.ndarray, uint32, shape (M,)
        The instruction words (retire trace).
    trace : bool
        Record a retire record for each issue that retires.
    """

    op: object
    context: int
    tiles: np.ndarray
    pcs: np.ndarray
    desc: np.ndarray | None
    words: np.ndarray
    trace: bool


@dataclasses.dataclass(frozen=True, eq=False)
class MStageQueue:
    """The M-stage work in flight, by M cycle.

    Members
    -------
    work : dict
        M cycle → list of :class:`StoreWork`, :class:`LoadWork` and :class:`EngineWork`, in
        issue order (one issue cycle per M cycle).
    """

    work: dict

    @classmethod
    def start(cls) -> "MStageQueue":
        """Nothing in flight (host start)."""
        return cls({})

    def add(self, m: int, item) -> None:
        """Queue ``item`` for its M cycle ``m``."""
        self.work.setdefault(m, []).append(item)

    def pop(self, m: int) -> list | None:
        """The work of M cycle ``m`` (removed), or None."""
        return self.work.pop(m, None)

    def __bool__(self) -> bool:
        return bool(self.work)

    def drain(self):
        """Yield (M cycle, work) of everything still in flight, in M order (removed)."""
        for m in sorted(self.work):
            yield m, self.work.pop(m)


@dataclasses.dataclass(frozen=True, eq=False)
class PortSlots:
    """Which tiles issued a LOAD/STORE, per issue cycle (ring of :data:`PORT_RING` rows).

    Kept while the configuration has a matrix engine (an engine accepted at x steps from x + 1,
    so the flags of words issued before x are needed).

    Members
    -------
    ls : numpy.ndarray, bool, shape (PORT_RING, N)
        ``ls[k % PORT_RING, tile]``: the tile's word issued at ``cycle[k % PORT_RING]`` has
        opcode LOAD or STORE (faulting or not, any division turn).
    cycle : list of int, length PORT_RING
        The issue cycle each row belongs to (-1: none).
    """

    ls: np.ndarray
    cycle: list

    @classmethod
    def start(cls, tiles: int) -> "PortSlots":
        """No LOAD/STORE recorded (host start)."""
        return cls(np.zeros((PORT_RING, tiles), dtype=bool), [-1] * PORT_RING)

    def record(self, k: int, tiles: np.ndarray, is_ls: np.ndarray) -> None:
        """The words issued at ``k`` on ``tiles`` (the other tiles issued nothing then)."""
        i = k % PORT_RING
        self.ls[i] = False
        self.ls[i, tiles] = is_ls
        self.cycle[i] = k

    def at(self, k: int) -> np.ndarray | None:
        """bool [N]: LOAD/STORE issued at ``k``; None if nothing was recorded for ``k`` (no
        tile issued then)."""
        i = k % PORT_RING
        return self.ls[i] if self.cycle[i] == k else None


@dataclasses.dataclass(frozen=True, eq=False)
class LoadRecord:
    """Contract v1's record of the loads of one issue cycle (tile → (rd, address, size,
    signed)), kept **only** so that ``tessera/golden_model/fast/run.py`` (the v1 hand-off of
    the compiled fast engine, refused while ``fast.CONTRACT_VERSION`` is 1) still imports; the
    v2 vector engine does not use it. It goes when the fast engine is ported (branch v2-fast).

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
