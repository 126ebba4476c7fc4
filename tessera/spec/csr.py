"""CSR numbers of Tessera's Zicsr subset (docs/architecture.md, "CSRs").

Access rules (RISC-V Privileged spec 1.12, section 2.1, for the number ranges; the
Unprivileged spec chapter 9 for the instructions): reading any CSR below is allowed;
writing a read-only CSR (CSRRW/CSRRWI always write; CSRRS/CSRRC/CSRRSI/CSRRCI write
unless rs1 = x0 / uimm = 0) or touching an unlisted number is an illegal instruction.
"""

from __future__ import annotations

import enum

__all__ = ["Csr", "READ_ONLY", "WRITABLE", "CSR_DESCRIPTIONS"]


class Csr(enum.IntEnum):
    CYCLE = 0xC00      # issue cycle of the csr instruction, low 32 bits (array cycle counter)
    INSTRET = 0xC02    # instructions retired by this context before this one, low 32 bits
    CYCLEH = 0xC80     # high 32 bits of CYCLE
    INSTRETH = 0xC82   # high 32 bits of INSTRET
    TILE_ID = 0xCC0    # this tile's index, 0..N-1
    CONTEXT_ID = 0xCC1 # this context's index, 0..T-1
    TILE_COUNT = 0xCC2 # N
    CONTEXT_COUNT = 0xCC3  # T
    SRAM_BYTES = 0xCC4 # bytes of SRAM per tile
    XPROG = 0x800      # read/write, per tile: byte address of the exchange program (0 = none)
    STACK_LIMIT = 0x801  # read/write, per context: lowest allowed sp (0 = no limit), §7


WRITABLE = frozenset({Csr.XPROG, Csr.STACK_LIMIT})
READ_ONLY = frozenset(c for c in Csr if c not in WRITABLE)

CSR_DESCRIPTIONS = {
    Csr.CYCLE: "issue cycle of this instruction (low word)",
    Csr.CYCLEH: "issue cycle of this instruction (high word)",
    Csr.INSTRET: "instructions retired by this context before this one (low word)",
    Csr.INSTRETH: "instructions retired by this context before this one (high word)",
    Csr.TILE_ID: "tile index 0..N-1",
    Csr.CONTEXT_ID: "context index 0..T-1",
    Csr.TILE_COUNT: "number of tiles N",
    Csr.CONTEXT_COUNT: "contexts per tile T",
    Csr.SRAM_BYTES: "SRAM bytes per tile",
    Csr.XPROG: "exchange-program byte address run at the next ARRAY release (0 = none); per tile",
    Csr.STACK_LIMIT: "lowest address sp may hold (stack_overflow below it; 0 = none); per context",
}
