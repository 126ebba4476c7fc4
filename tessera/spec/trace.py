"""The retire-trace record: one per retired instruction (docs/rtl.md, "Core ↔ tile").

The RTL exports it as ``trace_*`` ports in the cycle after W, when it writes the register file
(issue cycle + :data:`TRACE_DELAY`), one lane per tile; the golden model (``Array(trace=True)``) produces the same records as dicts; the
parity check compares the two. The fields, their port names, widths and order are defined here
once: :func:`trace_ports` gives the ports (core, tile and array top), :data:`RECORD_KEYS` the
record keys.
"""

from __future__ import annotations

import dataclasses

from tessera.spec.timing import Stage

__all__ = ["TraceField", "TRACE_FIELDS", "VALID_PORT", "RECORD_KEYS", "trace_ports", "TRACE_DELAY"]

#: Cycles from an instruction's issue to its trace record on the RTL's ``trace_*`` ports: the
#: cycle after W, in which the RTL writes the register file (docs/rtl.md "Core pipeline"; not
#: program-visible, architecture §4: a context's next slot reads its registers from t + T + 1).
TRACE_DELAY = int(Stage.W) + 1


@dataclasses.dataclass(frozen=True)
class TraceField:
    """One field of a retire record.

    Parameters
    ----------
    key : str
        Record key (golden model, monitor and parity).
    port : str
        RTL port suffix (``trace_<port>``).
    width : int or None
        Bits; None means ``config.context_bits``.
    doc : str
    """
    key: str
    port: str
    width: int | None
    doc: str


#: The record fields in port order (after ``trace_valid``).
TRACE_FIELDS = (
    TraceField("context", "context", None, "context of the retired instruction"),
    TraceField("pc", "pc", 32, "its pc"),
    TraceField("insn", "insn", 32, "its word"),
    TraceField("rd", "rd", 5, "register written (0: none)"),
    TraceField("value", "value", 32, "value written (0 when rd = 0)"),
    TraceField("store_mask", "st_mask", 4, "byte enables of a store (0: not a store)"),
    TraceField("store_addr", "st_addr", 32, "word-aligned byte address of the store"),
    TraceField("store_data", "st_data", 32, "the store's SRAM write-port word (bytes in lanes)"),
)
#: Port suffix of the per-tile valid bit.
VALID_PORT = "valid"
#: Keys of a record: the issue cycle, the tile, then the fields.
RECORD_KEYS = ("cycle", "tile") + tuple(f.key for f in TRACE_FIELDS)


def trace_ports(config) -> list[tuple[str, int]]:
    """``(port name, width)`` of one core's retire-trace ports, in port order.

    Parameters
    ----------
    config : tessera.spec.config.ArrayConfig
        Gives ``context_bits``.
    """
    return [(f"trace_{VALID_PORT}", 1)] + [
        (f"trace_{f.port}", config.context_bits if f.width is None else f.width)
        for f in TRACE_FIELDS]
