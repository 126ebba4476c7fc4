"""Backend-neutral run result and its JSON form (docs/architecture.md, "Run result").

Both backends (golden model and RTL) fill a :class:`RunResult`; ``to_json`` is the one
place that turns it into the ``tessera exec`` JSON, so equal state gives equal JSON.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field

from .config import ArrayConfig
from .faults import FaultCause

__all__ = ["ContextState", "RunStatus", "Fault", "ContextResult", "TileResult", "RunResult",
           "COUNTER_NAMES", "not_arrived"]

#: Per-tile counters, in this order everywhere (JSON, host map, profiles).
COUNTER_NAMES = ("compute", "sync", "exchange", "halted", "retired", "macs", "engine")


class ContextState(enum.IntEnum):
    RUNNING = 0
    WAIT_TILE = 1     # in `sync TILE`
    WAIT_ARRAY = 2    # in `sync ARRAY`, before release or during this tile's exchange
    HALTED = 3        # ecall; exit code = a0 at the ecall
    FAULT = 4         # this context's instruction faulted

    @property
    def label(self) -> str:
        return self.name.lower()


class RunStatus(str, enum.Enum):
    HALTED = "halted"
    FAULT = "fault"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class Fault:
    """A tile's fault record.

    ``context`` is None for an exchange fault. ``pc`` is the faulting instruction's (or
    exchange step's) byte address; ``addr`` the offending byte address (the target for
    fetch faults, the data address for loads/stores, the instruction word for
    illegal_instruction, the pc for breakpoint).
    """
    context: int | None
    cause: FaultCause
    pc: int
    addr: int

    def to_json(self) -> dict:
        return {"context": self.context, "cause": FaultCause(self.cause).label,
                "pc": self.pc, "addr": self.addr}


@dataclass
class ContextResult:
    context: int
    state: ContextState
    pc: int
    exit_code: int | None
    retired: int
    regs: list[int]

    def to_json(self) -> dict:
        return {"context": self.context, "state": ContextState(self.state).label,
                "pc": self.pc, "exit_code": self.exit_code, "retired": self.retired,
                "regs": [int(r) & 0xFFFFFFFF for r in self.regs]}


@dataclass
class TileResult:
    tile: int
    counters: dict[str, int]
    fault: Fault | None
    contexts: list[ContextResult]

    def to_json(self) -> dict:
        return {"tile": self.tile,
                "counters": {k: int(self.counters[k]) for k in COUNTER_NAMES},
                "fault": None if self.fault is None else self.fault.to_json(),
                "contexts": [c.to_json() for c in self.contexts]}


@dataclass
class RunResult:
    """Everything a run leaves behind, in the same form for every backend.

    ``not_arrived`` lists, on timeout, the tiles that have not arrived at the ARRAY
    barrier (see :func:`not_arrived`; empty otherwise).
    """
    config: ArrayConfig
    status: RunStatus
    cycles: int
    tiles: list[TileResult]
    not_arrived: list[int] = field(default_factory=list)
    backend: str = "model"

    def to_json(self) -> dict:
        return {"status": RunStatus(self.status).value,
                "cycles": int(self.cycles),
                "config": self.config.to_dict(),
                "not_arrived": list(self.not_arrived),
                "tiles": [t.to_json() for t in self.tiles]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1)

    @classmethod
    def from_json(cls, d: dict, backend: str = "model") -> "RunResult":
        """Rebuild a :class:`RunResult` from its :meth:`to_json` form (the inverse; §10).

        Raises
        ------
        ValueError
            A field is missing or has an unknown value (the message names it).
        """
        try:
            cfg = ArrayConfig.from_dict(d["config"])
            tiles = []
            for t in d["tiles"]:
                f = t["fault"]
                fault = None if f is None else Fault(f["context"], FaultCause.from_label(f["cause"]),
                                                     f["pc"], f["addr"])
                ctxs = [ContextResult(c["context"], ContextState[c["state"].upper()], c["pc"],
                                      c["exit_code"], c["retired"], list(c["regs"]))
                        for c in t["contexts"]]
                tiles.append(TileResult(t["tile"], dict(t["counters"]), fault, ctxs))
            return cls(cfg, RunStatus(d["status"]), d["cycles"], tiles,
                       list(d["not_arrived"]), backend)
        except (KeyError, TypeError) as e:
            raise ValueError(f"malformed run-result JSON: missing or bad field {e}") from None

    @property
    def exit_code(self) -> int:
        """Process exit code of ``tessera exec``: 0 halted, 3 fault or timeout."""
        return 0 if self.status == RunStatus.HALTED else 3


def not_arrived(states) -> list[int]:
    """Tiles not arrived at the ARRAY barrier, from final context states (architecture §7).

    Parameters
    ----------
    states : array-like of int, shape [N, T]
        :class:`ContextState` values per tile and context.

    Returns
    -------
    list of int
        The tiles having a context that is neither WAIT_ARRAY nor HALTED, or ``[]`` when no
        context of the array is WAIT_ARRAY.
    """
    rows = [[int(s) for s in row] for row in states]
    if not any(s == ContextState.WAIT_ARRAY for row in rows for s in row):
        return []
    ok = (ContextState.WAIT_ARRAY, ContextState.HALTED)
    return [i for i, row in enumerate(rows) if any(s not in ok for s in row)]
