"""Run control of the golden model's cycle loop: the scalars of the event-driven schedule.

docs/architecture.md §4 (issue slots: context c = t mod T issues at t), §7 (run end: every
context halted, or a fault) and the model's event-driven stepping (the module docstring of
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
        Contexts that have not issued an ``ecall`` (the run halts when it reaches 0, §7).
    stop : bool
        The run ends after the current cycle (all halted, or a fault).
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
    stop: bool
    status: RunStatus | None
    next_pend: int
    next_event: int
    running_ctx: np.ndarray

    @classmethod
    def start(cls, tiles: int, contexts: int) -> "Schedule":
        """Cycle 0 of a host start: every context running, nothing pending."""
        return cls(cycle=0, live=tiles * contexts, stop=False, status=None, next_pend=NEVER,
                   next_event=NEVER, running_ctx=np.ones(contexts, dtype=bool))
