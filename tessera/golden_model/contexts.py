"""Per-context state of the golden model: every tile's T hardware contexts as [N, T] arrays.

docs/architecture.md §3 (registers, pc, the ``stack_limit`` CSR), §4 (barrel timing: the
division turn counter), §5/§7 (context states, exit codes) and §8 (retired instructions).
The arrays are allocated once per host start and then only written in place: the compiled
fast engine (:mod:`tessera.golden_model.fast`) receives pointers to them for each run.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tessera.spec.result import ContextState

__all__ = ["Contexts", "NEVER"]

FAULT = int(ContextState.FAULT)

#: "No pending change" in :attr:`Contexts.pend_cycle` (and "no event" in the schedule).
NEVER = np.iinfo(np.int64).max


@dataclasses.dataclass(frozen=True, eq=False)
class Contexts:
    """The [N, T] state of all contexts (N tiles, T contexts per tile).

    Members
    -------
    regs : numpy.ndarray, uint32, shape (N, T, 32)
        Register files x0..x31 (§3.1); x0 reads 0 (every write to it is dropped).
    pc : numpy.ndarray, uint32, shape (N, T)
        Byte address of the context's next instruction.
    state : numpy.ndarray, uint8, shape (N, T)
        The *visible* context state (:class:`tessera.spec.result.ContextState` values): the
        one the issue slot, the barriers (§5) and the counters (§8) see at the current cycle.
    pend_cycle : numpy.ndarray, int64, shape (N, T)
        Cycle at which a decided state change becomes visible (issue cycle + 5, §4 "State
        changes"; an engine fault of step s: s + 1, §7; a barrier release: its cycle + 1),
        :data:`NEVER` for none.
    pend_state : numpy.ndarray, uint8, shape (N, T)
        The state that change makes visible (meaningful where ``pend_cycle != NEVER``).
    retired : numpy.ndarray, uint64, shape (N, T)
        Instructions retired since the host start (§8 ``retired``; the ``instret`` CSR).
    exit_code : numpy.ndarray, uint32, shape (N, T)
        x10 at the context's ``ecall`` (§7; meaningful once it is HALTED).
    div_turn : numpy.ndarray, uint8, shape (N, T)
        The division turn counter n of §4 "Division" (0..DIV_TURNS-1).
    div_word : numpy.ndarray, uint32, shape (N, T)
        The instruction word of the context's last division turn (a turn continues only the
        same word).
    div_any : numpy.ndarray, bool, shape (T,)
        Cache: some tile's context c may have ``div_turn > 0`` (False: none has).
    stack_limit : numpy.ndarray, uint32, shape (N, T)
        The ``stack_limit`` CSR (§3.2; checked on every write of x2, §7).
    """

    regs: np.ndarray
    pc: np.ndarray
    state: np.ndarray
    pend_cycle: np.ndarray
    pend_state: np.ndarray
    retired: np.ndarray
    exit_code: np.ndarray
    div_turn: np.ndarray
    div_word: np.ndarray
    div_any: np.ndarray
    stack_limit: np.ndarray

    @classmethod
    def start(cls, tiles: int, contexts: int, entry: int) -> "Contexts":
        """The state after a host start (§9): every context RUNNING at ``entry``, all else 0.

        Parameters
        ----------
        tiles, contexts : int
            N and T.
        entry : int
            The start pc, 0..2^32-1 (validated by the caller).
        """
        n, t = tiles, contexts
        return cls(regs=np.zeros((n, t, 32), dtype=np.uint32),
                   pc=np.full((n, t), entry, dtype=np.uint32),
                   state=np.full((n, t), int(ContextState.RUNNING), dtype=np.uint8),
                   pend_cycle=np.full((n, t), NEVER, dtype=np.int64),
                   pend_state=np.zeros((n, t), dtype=np.uint8),
                   retired=np.zeros((n, t), dtype=np.uint64),
                   exit_code=np.zeros((n, t), dtype=np.uint32),
                   div_turn=np.zeros((n, t), dtype=np.uint8),
                   div_word=np.zeros((n, t), dtype=np.uint32),
                   div_any=np.zeros(t, dtype=bool),
                   stack_limit=np.zeros((n, t), dtype=np.uint32))

    def final_state(self) -> np.ndarray:
        """The §7 final-state view, uint8 [N, T] (a copy): ``state`` with every decided
        pending change applied, except that a context that is FAULT stays FAULT (§7 "Stop":
        each faulting context enters FAULT; docs/design/contract-v2.md §6 point 6)."""
        s = self.state.copy()
        m = (self.pend_cycle != NEVER) & ((s != FAULT) | (self.pend_state == FAULT))
        s[m] = self.pend_state[m]
        return s
