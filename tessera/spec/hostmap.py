"""Host memory map of the array's AXI4-Lite slave port (docs/architecture.md, "Host interface").

All registers are 32 bits wide; 64-bit counters are two words, low word first.
Addresses are byte addresses on the AXI4-Lite bus (32-bit data, 32-bit address).
"""

from __future__ import annotations

import enum

__all__ = ["Ctrl", "Status", "TileReg", "CTRL_BASE", "TILE_REG_BASE", "TILE_REG_STRIDE",
           "SRAM_BASE", "SRAM_STRIDE", "tile_reg_addr", "sram_addr", "context_reg_addr",
           "MAGIC", "ContextReg", "CONTEXT_STRIDE"]

MAGIC = 0x54535241  # "TSRA"

CTRL_BASE = 0x0000_0000
TILE_REG_BASE = 0x0010_0000   # tile t's register block at TILE_REG_BASE + t * TILE_REG_STRIDE
TILE_REG_STRIDE = 0x2000      # 8 KiB: room for 16 context blocks after CONTEXT_BASE
SRAM_BASE = 0x8000_0000       # tile t's SRAM at SRAM_BASE + t * SRAM_STRIDE (1 MiB window)
SRAM_STRIDE = 0x0010_0000


class Ctrl(enum.IntEnum):
    """Global registers at CTRL_BASE."""
    MAGIC = 0x00          # RO  MAGIC
    TILES = 0x04          # RO  N
    CONTEXTS = 0x08       # RO  T
    SRAM_BYTES = 0x0C     # RO  bytes per tile
    XLATENCY = 0x10       # RO  exchange latency L
    CONTROL = 0x14        # WO  write 1: start (reset contexts, counters; all contexts pc = ENTRY)
    STATUS = 0x18         # RO  a Status value
    ENTRY = 0x1C          # RW  entry pc used by the next start
    MAX_CYCLES_LO = 0x20  # RW  cycle limit (0 = none) for the next start
    MAX_CYCLES_HI = 0x24
    CYCLES_LO = 0x28      # RO  cycles of the current / last run
    CYCLES_HI = 0x2C
    FAULT_TILES = 0x30    # RO  number of tiles holding a fault record


class Status(enum.IntEnum):
    IDLE = 0      # never started since reset
    RUNNING = 1
    HALTED = 2
    FAULT = 3
    TIMEOUT = 4


class TileReg(enum.IntEnum):
    """Per-tile registers at tile_reg_addr(t, reg). Counters are 64-bit (LO, HI)."""
    COMPUTE_LO = 0x00
    COMPUTE_HI = 0x04
    SYNC_LO = 0x08
    SYNC_HI = 0x0C
    EXCHANGE_LO = 0x10
    EXCHANGE_HI = 0x14
    RETIRED_LO = 0x18
    RETIRED_HI = 0x1C
    MACS_LO = 0x20
    MACS_HI = 0x24
    HALTED_LO = 0x28     # cycles with every context halted
    HALTED_HI = 0x2C
    ENGINE_LO = 0x30     # cycles with the matrix engine busy (architecture §12)
    ENGINE_HI = 0x34
    FAULT_VALID = 0x40   # 1 if this tile faulted
    FAULT_CONTEXT = 0x44 # context index, or 0xFFFFFFFF for an exchange fault
    FAULT_CAUSE = 0x48   # a FaultCause value
    FAULT_PC = 0x4C
    FAULT_ADDR = 0x50
    XPROG = 0x54         # RO  the xprog CSR
    # Per-context block: CONTEXT_BASE + c * CONTEXT_STRIDE
    CONTEXT_BASE = 0x100


CONTEXT_STRIDE = 0x100


class ContextReg(enum.IntEnum):
    """Offsets inside a context block (tile_reg_addr + CONTEXT_BASE + c * CONTEXT_STRIDE)."""
    STATE = 0x00     # a tessera.spec.result.ContextState value
    PC = 0x04
    RETIRED_LO = 0x08
    RETIRED_HI = 0x0C
    REGS = 0x80      # x0..x31 at REGS + 4 * i


def tile_reg_addr(tile: int, reg: int) -> int:
    return TILE_REG_BASE + tile * TILE_REG_STRIDE + int(reg)


def context_reg_addr(tile: int, context: int, reg: int) -> int:
    return tile_reg_addr(tile, TileReg.CONTEXT_BASE + context * CONTEXT_STRIDE + int(reg))


def sram_addr(tile: int, offset: int) -> int:
    return SRAM_BASE + tile * SRAM_STRIDE + offset
