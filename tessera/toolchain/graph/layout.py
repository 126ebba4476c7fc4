"""Per-tile memory layout and the memory report (docs/compiler.md, "Memory layout").

Each tile's SRAM, from address 0::

    code      the SPMD binary (same on every tile), up to __image_end
    control   control table (at the first 8-aligned address after the code; the runtime
              finds it there), worklists
    tensors   every interval of every variable mapped to the tile (4-byte aligned)
    vertices  vertex field records
    exchange  exchange programs (8-byte aligned)
    free
    stacks    T x stack_bytes at the top (crt0: sp = sram_bytes - context * stack_bytes)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import GraphMemoryError

__all__ = ["CATEGORIES", "TileMemory", "check_fits", "format_report"]

#: Report categories, in address order.
CATEGORIES = ("code", "control", "tensors", "vertices", "exchange", "stacks")


@dataclass
class TileMemory:
    """Bump allocator of one tile's data region; remembers every item for the report.

    Parameters
    ----------
    tile : int
    code_bytes : int
        Bytes below the data region (the binary).
    base : int
        First data address (8-aligned, at or after ``code_bytes``).
    """
    tile: int
    code_bytes: int
    base: int
    top: int = 0
    items: list = field(default_factory=list)  # (category, name, addr, nbytes)

    def __post_init__(self):
        self.top = self.base
        self.items.append(("code", "code (SPMD binary)", 0, self.base))

    def alloc(self, category: str, name: str, nbytes: int, align: int = 4) -> int:
        """Reserve ``nbytes`` (rounded up to ``align``) and return the address; the
        alignment gap is charged to the item."""
        addr = -(-self.top // align) * align
        size = -(-nbytes // align) * align
        self.items.append((category, name, self.top, addr + size - self.top))
        self.top = addr + size
        return addr

    def usage(self, contexts: int, stack_bytes: int, sram_bytes: int) -> dict:
        """Bytes per category plus ``used`` and ``free`` (may be negative when over)."""
        out = {c: 0 for c in CATEGORIES}
        for cat, _, _, n in self.items:
            out[cat] += n
        out["stacks"] = contexts * stack_bytes
        out["used"] = self.top + out["stacks"]
        out["free"] = sram_bytes - out["used"]
        return out

    def largest(self, contexts: int, stack_bytes: int, k: int = 3) -> list:
        """The ``k`` largest items as ``(name, bytes)``, stacks included."""
        items = [(name, n) for _, name, _, n in self.items]
        items.append((f"stacks ({contexts} x {stack_bytes} B)", contexts * stack_bytes))
        return sorted(items, key=lambda x: -x[1])[:k]


def check_fits(mems, contexts: int, stack_bytes: int, sram_bytes: int) -> None:
    """Raise GraphMemoryError for the first tile whose layout exceeds ``sram_bytes``."""
    for m in mems:
        used = m.top + contexts * stack_bytes
        if used > sram_bytes:
            raise GraphMemoryError(m.tile, used, sram_bytes, m.largest(contexts, stack_bytes))


def format_report(report: list) -> str:
    """A text table of a per-tile report (list of dicts from :meth:`TileMemory.usage`)."""
    cols = (*CATEGORIES, "used", "free")
    lines = ["tile " + " ".join(f"{c:>9}" for c in cols)]
    for t, r in enumerate(report):
        lines.append(f"{t:>4} " + " ".join(f"{r[c]:>9}" for c in cols))
    return "\n".join(lines)
