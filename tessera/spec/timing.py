"""Pipeline and array-decision timing of docs/architecture.md §4 ("Barrel timing") and §7
("Array decisions", "Stop"), contract v2.

An instruction issued at cycle t goes through F (t), I (t+1), R (t+2), X (t+3), M (t+4) and
W (t+5); there are no stalls, so these offsets hold for every instruction on every tile. Every
array-wide decision (ARRAY release, the stop on a fault or on halt) whose condition on the
visible states first holds at cycle v acts at v + :func:`decision_latency` (N). The golden
model and the RTL take every timing offset from here.
"""

from __future__ import annotations

import enum
import math

__all__ = ["Stage", "PIPELINE_STAGES", "STATE_VISIBLE_DELAY", "COMMIT_DELAY",
           "FETCH_STORE_DELAY", "STEP_FAULT_VISIBLE_DELAY", "ENGINE_DATA_FAULT_VISIBLE_DELAY",
           "decision_latency"]


class Stage(enum.IntEnum):
    """Pipeline stages; the value is the stage's cycle offset from the issue cycle t (§4)."""
    F = 0   # fetch: pc sent to the SRAM
    I = 1   # instruction word from the SRAM; decode; register-file read addresses  # noqa: E741
    R = 2   # register values; operand selection
    X = 3   # execute; next pc; load/store address
    M = 4   # every data-memory effect (store writes, load reads); CSR access; state change decided
    W = 5   # load data; register write; retire trace


#: Cycles one instruction occupies (F-I-R-X-M-W); T >= this so that an instruction's effects
#: are complete before its context's next issue slot (§1: T >= 6).
PIPELINE_STAGES = len(Stage)

#: A state change (RUNNING -> WAIT_TILE / WAIT_ARRAY / HALTED / FAULT) of an instruction
#: issued at t is visible from cycle t + STATE_VISIBLE_DELAY (decided in M, §4).
STATE_VISIBLE_DELAY = int(Stage.W)

#: The fetch of an instruction issued at t sees the stores issued at cycles <= t -
#: FETCH_STORE_DELAY (their M is at <= t - 1; the fetch port is not write-transparent, §4). In
#: general an SRAM write of cycle k (a store's M, an exchange receive, an engine write) is seen
#: by fetches from cycle k + 1.
FETCH_STORE_DELAY = int(Stage.M) + 1

#: A fault of an exchange step at cycle c or of a matrix-engine step at cycle s is visible from
#: c + 1 or s + 1 (§7 "Stop").
STEP_FAULT_VISIBLE_DELAY = 1

#: A matrix-engine fault of checks 2 and 3 (the data of the word the step at cycle s read, on
#: the SRAM's output in s + 1) is visible from s + ENGINE_DATA_FAULT_VISIBLE_DELAY (§7 "Stop",
#: §12 "Engine faults"; 1 until 2026-12-02).
ENGINE_DATA_FAULT_VISIBLE_DELAY = 2

#: Cycles after cycle k until the RTL knows whether k belongs to the run (the run's last
#: ``ecall`` or a fault is seen that late) and the instruction issued at k has left W: the
#: delay of the cycle-class counters and of the end of a run (docs/rtl.md).
COMMIT_DELAY = int(Stage.W)


def decision_latency(tiles: int) -> int:
    """The array decision latency D(N) of §7 ("Array decisions").

    Parameters
    ----------
    tiles : int
        N, the number of tiles (>= 1).

    Returns
    -------
    int
        ``ceil(log2 N) + 2`` cycles (2 for N = 1): one register leaving each tile, one per level
        of a binary reduction tree, one entering each tile. A decision whose visible-state
        condition first holds at cycle v acts at v + D on every tile.

    Raises
    ------
    ValueError
        If ``tiles`` is not an int >= 1.
    """
    if not isinstance(tiles, int) or isinstance(tiles, bool) or tiles < 1:
        raise ValueError(f"decision_latency: tiles must be an int >= 1, not {tiles!r}")
    return math.ceil(math.log2(tiles)) + 2 if tiles > 1 else 2
