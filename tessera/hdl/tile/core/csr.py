"""Zicsr subset (docs/architecture.md §3.2): CSR read, write and legality.

CSR numbers come from :mod:`tessera.spec.csr`. The CSR state itself lives elsewhere: the
cycle counter is an input (issue cycle of the instruction), instret is the context's
retired count, ``xprog`` is a per-tile register and ``stack_limit`` a per-context register
held by the core.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr, WRITABLE
from tessera.spec.instructions import FUNCT3_CSR_IMM_BIT, Funct3

__all__ = ["CsrUnit"]


class CsrUnit(wiring.Component):
    """Combinational CSR access of one CSRRW/CSRRS/CSRRC(I) instruction in X.

    Parameters
    ----------
    config : ArrayConfig
        Supplies N, T and ``sram_bytes``.
    tile_id : int
        This tile's index (read-only CSR ``tile_id``).

    Members
    -------
    csr : In(12)
        CSR number (instruction bits [31:20]).
    funct3 : In(3)
        1 RW, 2 RS, 3 RC, 5 RWI, 6 RSI, 7 RCI (0 and 4 are never presented here).
    rs1 : In(5)
        The rs1 field (uimm for the immediate forms; "rs1 ≠ x0" test otherwise).
    rs1_value : In(32)
        The rs1 register value.
    cycle : In(64)
        Issue cycle of the instruction.
    instret : In(64)
        Instructions retired by this context before this one.
    context : In(context_bits)
        This context's index.
    xprog : In(32)
        Current value of the tile's ``xprog`` CSR.
    slimit : In(32)
        Current value of this context's ``stack_limit`` CSR.
    legal : Out(1)
        0 for an unlisted number or a write to a read-only CSR (illegal_instruction).
    rdata : Out(32)
        The old value (for rd).
    xprog_we, slimit_we : Out(1)
        The instruction writes ``xprog`` / ``stack_limit`` (only valid together with
        ``legal``).
    wdata : Out(32)
        The new value of the written CSR (from the old value ``rdata`` and the source).
    """

    def __init__(self, config: ArrayConfig, tile_id: int):
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise TypeError(f"CsrUnit: config must be an ArrayConfig, not {config!r}")
        if not isinstance(tile_id, int) or not 0 <= tile_id < config.tiles:
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise ValueError(f"CsrUnit: tile_id must be in 0..{config.tiles - 1}, not {tile_id!r}")
        self.config = config
        self.tile_id = tile_id
        super().__init__({
            "csr": In(12), "funct3": In(3), "rs1": In(5), "rs1_value": In(32),
            "cycle": In(64), "instret": In(64), "context": In(config.context_bits),
            "xprog": In(32), "slimit": In(32),
            "legal": Out(1), "rdata": Out(32), "xprog_we": Out(1), "slimit_we": Out(1),
            "wdata": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        f3 = self.funct3
        known = Signal()
        read_only = Signal()
        with m.Switch(self.csr):
            table = {
                Csr.CYCLE: self.cycle[0:32], Csr.CYCLEH: self.cycle[32:64],
                Csr.INSTRET: self.instret[0:32], Csr.INSTRETH: self.instret[32:64],
                Csr.TILE_ID: self.tile_id, Csr.CONTEXT_ID: self.context,
                Csr.TILE_COUNT: cfg.tiles, Csr.CONTEXT_COUNT: cfg.contexts,
                Csr.SRAM_BYTES: cfg.sram_bytes, Csr.XPROG: self.xprog,
                Csr.STACK_LIMIT: self.slimit,
            }
            for num, value in table.items():
                with m.Case(int(num)):
                    m.d.comb += [
                        known.eq(1),
                        read_only.eq(num not in WRITABLE),
                        self.rdata.eq(value),
                    ]
        # Source operand: register value or zero-extended uimm (the *I forms).
        src = Signal(32)
        m.d.comb += src.eq(Mux(f3[FUNCT3_CSR_IMM_BIT], self.rs1, self.rs1_value))
        kind = f3[0:FUNCT3_CSR_IMM_BIT]  # the operation: CSRRW, CSRRS or CSRRC
        writes = Signal()
        m.d.comb += writes.eq((kind == Funct3.CSRRW) | (self.rs1 != 0))
        with m.Switch(kind):
            with m.Case(Funct3.CSRRW):
                m.d.comb += self.wdata.eq(src)
            with m.Case(Funct3.CSRRS):
                m.d.comb += self.wdata.eq(self.rdata | src)
            with m.Default():
                m.d.comb += self.wdata.eq(self.rdata & ~src)
        we = Signal()
        m.d.comb += [
            self.legal.eq(known & ~(read_only & writes)),
            we.eq(known & ~read_only & writes),
            self.xprog_we.eq(we & (self.csr == Csr.XPROG)),
            self.slimit_we.eq(we & (self.csr == Csr.STACK_LIMIT)),
        ]
        return m
