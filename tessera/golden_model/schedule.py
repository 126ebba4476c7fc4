"""Run control of the golden model's cycle loop: the scalars of the event-driven schedule.

docs/architecture.md §4 (issue slots: context c = t mod T issues at t), §7 ("Stop": the stop
condition, every context HALTED or a fault visible, first holds at v; the run ends after
t_s = v + D − 1 with ``cycles = v + D``) and the model's event-driven stepping (the module docstring of
:mod:`tessera.golden_model.array`): cycles in which nothing becomes visible are not visited.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tessera.spec.result import RunStatus

from .contexts import NEVER

__all__ = ["Schedule"]


@dataclasses.dataclass(eq=False, slots=True)
class Schedule:
    """Where the cycle loop is and when it next has to look at the state.

    Members
    -------
    cycle : int
        Cycles simulated since the host start (the C of §7 once a run ended).
    live : int
        Contexts that have not issued an ``ecall`` (every context is HALTED from the last
        ``ecall``'s t + 5 when it reaches 0, §7).
    stop_at : int
        ``cycles`` C = v + D of the stop once its condition held at v (§7 "Stop"): the loop
        simulates cycles < C; :data:`tessera.golden_model.contexts.NEVER` while no stop is
        decided.
    status : tessera.spec.result.RunStatus or None
        Status of the latest run (None before the first).
    next_pend : int
        Earliest ``Contexts.pend_cycle`` (:data:`tessera.golden_model.contexts.NEVER`: none).
    next_event : int
        Earliest cycle at which a state change, a phase end or a barrier release is due.
    running_ctx : numpy.ndarray, bool, shape (T,)
        Some tile's context c is visibly RUNNING (its issue slot has work).
    """

    cycle: int
    live: int
    stop_at: int
    status: RunStatus | None
    next_pend: int
    next_event: int
    running_ctx: np.ndarray

    @classmethod
    def start(cls, tiles: int, contexts: int) -> "Schedule":
        """Cycle 0 of a host start: every context running, nothing pending."""
        return cls(cycle=0, live=tiles * contexts, stop_at=NEVER, status=None, next_pend=NEVER,
                   next_event=NEVER, running_ctx=np.ones(contexts, dtype=bool))
