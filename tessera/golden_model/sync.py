"""BSP barrier decisions, the ARRAY barrier's state and the per-cycle tile category
(docs/architecture.md §5 and §8).

The decisions are pure functions of the context states visible at a cycle k (shape [N, T],
values :class:`tessera.spec.result.ContextState`) and the tiles' exchange-phase flags (shape
[N]); :class:`Barrier` is the state the ARRAY barrier keeps between its decision and its
release.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tessera.spec.result import ContextState

from .contexts import NEVER

__all__ = ["Barrier", "tile_release", "arrived", "categories", "CAT_COMPUTE", "CAT_SYNC", "CAT_EXCHANGE",
           "CAT_HALTED"]

RUNNING = ContextState.RUNNING
WAIT_TILE = ContextState.WAIT_TILE
WAIT_ARRAY = ContextState.WAIT_ARRAY
HALTED = ContextState.HALTED
FAULT = ContextState.FAULT

# Index into the first four entries of tessera.spec.result.COUNTER_NAMES.
CAT_COMPUTE, CAT_SYNC, CAT_EXCHANGE, CAT_HALTED = 0, 1, 2, 3


@dataclasses.dataclass(eq=False, slots=True)
class Barrier:
    """The ARRAY barrier between its decision and its release (§5).

    Members
    -------
    release : int
        The release cycle r = k* + D (D: the array decision latency, §5, §7) once every tile
        arrived at k* (int64 max: not decided).
    armed : bool
        Decided and not yet released: no further decision until the release.
    """

    release: int = NEVER
    armed: bool = False


def tile_release(state: np.ndarray) -> np.ndarray:
    """Tiles whose TILE barrier releases at this cycle, bool [N].

    Every non-halted context is WAIT_TILE and at least one is (§5).
    """
    wt = state == WAIT_TILE
    return ((wt | (state == HALTED)).all(axis=1)) & wt.any(axis=1)


def arrived(state: np.ndarray, xphase: np.ndarray) -> np.ndarray:
    """Tiles arrived at the ARRAY barrier, bool [N] (§5).

    Every non-halted context is WAIT_ARRAY (at least one), or every context is HALTED; a tile
    in its exchange phase is not arrived.
    """
    wa = state == WAIT_ARRAY
    halted = state == HALTED
    return ~xphase & ((((wa | halted).all(axis=1)) & wa.any(axis=1)) | halted.all(axis=1))


def categories(state: np.ndarray, xphase: np.ndarray) -> np.ndarray:
    """The §8 counter category of every tile at this cycle, int8 [N]."""
    done = ((state == HALTED) | (state == FAULT)).all(axis=1)
    running = (state == RUNNING).any(axis=1)
    return np.where(xphase, CAT_EXCHANGE,
                    np.where(done, CAT_HALTED,
                             np.where(running, CAT_COMPUTE, CAT_SYNC))).astype(np.int8)
