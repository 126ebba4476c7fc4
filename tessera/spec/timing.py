"""Pipeline timing constants of docs/architecture.md §4 ("Barrel timing").

An instruction issued at cycle t goes through F (t), D (t+1), X (t+2) and W (t+3); there are
no stalls, so these offsets hold for every instruction on every tile. The golden model and
the RTL take every timing offset from here.
"""

from __future__ import annotations

import enum

__all__ = ["Stage", "PIPELINE_STAGES", "STATE_VISIBLE_DELAY", "COMMIT_DELAY"]


class Stage(enum.IntEnum):
    """Pipeline stages; the value is the stage's cycle offset from the issue cycle t."""
    F = 0   # fetch: pc sent to the SRAM
    D = 1   # decode; register reads
    X = 2   # execute; store writes the SRAM; CSR access; state change decided
    W = 3   # load data; register write; retire trace


#: Cycles one instruction occupies (F-D-X-W); T >= this so that an instruction's effects are
#: complete before its context's next issue slot.
PIPELINE_STAGES = len(Stage)

#: A state change (RUNNING -> WAIT_TILE / WAIT_ARRAY / HALTED / FAULT) of an instruction
#: issued at t is visible from cycle t + STATE_VISIBLE_DELAY.
STATE_VISIBLE_DELAY = 3

#: Cycles after cycle k until the RTL knows whether k belongs to the run (the run's last
#: ``ecall`` or a fault is seen that late) and the instruction issued at k has left W: the
#: delay of the cycle-class counters and of the end of a run (docs/rtl.md).
COMMIT_DELAY = int(Stage.W)
