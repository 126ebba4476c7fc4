"""Implementation variants of the RTL, chosen by a parameter of ``Core`` / ``Tile`` / ``Array``.

The contract design (docs/architecture.md) is :data:`CONTRACT`, the default everywhere. Other
variants exist only to measure what a block costs (``tessera bench --only synth``); they are
*not* the contract design and are never simulated against the golden model.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Variant", "CONTRACT"]


@dataclass(frozen=True, kw_only=True)
class Variant:
    """Which optional blocks the RTL contains.

    Parameters
    ----------
    divider : bool
        ``True`` (the contract design): DIV/DIVU/REM/REMU occupy ``DIV_TURNS`` turns of their
        context (architecture §4, "Division"; :class:`tessera.hdl.tile.core.divider.Divider`).
        ``False``: synthesis what-if, **not** the contract design — no division hardware,
        every division retires in its first turn with result 0
        (:class:`tessera.hdl.tile.core.divider.NoDivider`).

    Raises
    ------
    TypeError
        A field is not a bool.
    """

    divider: bool = True

    def __post_init__(self):
        if not isinstance(self.divider, bool):
            raise TypeError(f"Variant: divider must be a bool, not {self.divider!r}")

    @property
    def is_contract(self) -> bool:
        """True for the contract design (every optional block present)."""
        return self == CONTRACT


#: The contract design.
CONTRACT = Variant()
