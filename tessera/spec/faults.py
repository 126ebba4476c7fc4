"""Fault causes (docs/architecture.md, "Faults").

The numeric values follow the RISC-V mcause exception codes where one exists
(Privileged spec 1.12, table 3.6); ``exchange_fault`` is Tessera's own (24, in the
custom range), and so are ``engine_fault`` (25) and ``stack_overflow`` (26).
"""

from __future__ import annotations

import enum

__all__ = ["FaultCause"]


class FaultCause(enum.IntEnum):
    MISALIGNED_FETCH = 0     # taken branch/jump to an address that is not 4-byte aligned
    ACCESS_FAULT_FETCH = 1   # fetch from an address outside the tile SRAM
    ILLEGAL_INSTRUCTION = 2
    BREAKPOINT = 3           # ebreak
    MISALIGNED_LOAD = 4
    ACCESS_FAULT_LOAD = 5
    MISALIGNED_STORE = 6
    ACCESS_FAULT_STORE = 7
    EXCHANGE_FAULT = 24      # bad exchange step (reserved op, or an address outside the SRAM)
    ENGINE_FAULT = 25        # bad matrix-engine descriptor, parameter or stream address (§12)
    STACK_OVERFLOW = 26      # an instruction would set sp below the context's stack_limit (§7)

    @property
    def label(self) -> str:
        """The lower-case name used in JSON results, e.g. ``"illegal_instruction"``."""
        return self.name.lower()

    @classmethod
    def from_label(cls, label: str) -> "FaultCause":
        return cls[label.upper()]
