"""Load/store unit: address, alignment and range checks, store lanes, load align/extend.

docs/architecture.md §2: A = rs1 + sext(imm) mod 2^32; alignment is checked before range;
the range check is A ≥ ``sram_bytes`` (unsigned, first byte). Little-endian.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.instructions import FUNCT3_MEM_UNSIGNED_BIT, Funct3, MemWidth
from ...compare import at_least

__all__ = ["LsuAddr", "LoadAlign"]


class LsuAddr(wiring.Component):
    """X-stage part of a load or store.

    Parameters
    ----------
    config : ArrayConfig
        Gives ``sram_bytes`` for the range check.

    Members
    -------
    base, offset : In(32)
        rs1 value and the sign-extended immediate.
    funct3 : In(3)
        Width code of LOAD/STORE (bits [1:0]: 0 byte, 1 half, 2 word).
    wdata_in : In(32)
        rs2 value (stores).
    addr : Out(32)
        The byte address A.
    misaligned : Out(1)
        Half not even / word not a multiple of 4.
    out_of_range : Out(1)
        A ≥ ``sram_bytes``.
    mask : Out(4)
        Byte enables of a store at A (lane i = byte address A & ~3 | i).
    wdata : Out(32)
        rs2 shifted into the lanes of ``mask``.
    """

    base: In(32)
    offset: In(32)
    funct3: In(3)
    wdata_in: In(32)
    addr: Out(32)
    misaligned: Out(1)
    out_of_range: Out(1)
    mask: Out(4)
    wdata: Out(32)

    def __init__(self, config: ArrayConfig):
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise TypeError(f"LsuAddr: config must be an ArrayConfig, not {config!r}")
        self.config = config
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        a = self.addr
        size = self.funct3[0:FUNCT3_MEM_UNSIGNED_BIT]
        lo = a[0:2]
        m.d.comb += a.eq(self.base + self.offset)
        m.d.comb += [
            self.misaligned.eq(((size == MemWidth.HALF) & a[0]) | ((size == MemWidth.WORD) & (lo != 0))),
            self.out_of_range.eq(at_least(a, self.config.sram_bytes)),
        ]
        d = self.wdata_in
        with m.Switch(size):
            with m.Case(MemWidth.BYTE):
                m.d.comb += [
                    self.mask.eq(1 << lo),
                    self.wdata.eq(d[0:8].replicate(4)),
                ]
            with m.Case(MemWidth.HALF):
                m.d.comb += [
                    self.mask.eq(Mux(a[1], 0b1100, 0b0011)),
                    self.wdata.eq(d[0:16].replicate(2)),
                ]
            with m.Default():
                m.d.comb += [
                    self.mask.eq(0b1111),
                    self.wdata.eq(d),
                ]
        return m


class LoadAlign(wiring.Component):
    """W-stage part of a load: pick and extend the accessed bytes from the SRAM word.

    Members
    -------
    word : In(32)
        The aligned SRAM word containing the access.
    addr_lo : In(2)
        A[1:0].
    funct3 : In(3)
        0 LB, 1 LH, 2 LW, 4 LBU, 5 LHU.
    value : Out(32)
        The value written to rd.
    """

    word: In(32)
    addr_lo: In(2)
    funct3: In(3)
    value: Out(32)

    def elaborate(self, platform):
        m = Module()
        shifted = Signal(32)
        m.d.comb += shifted.eq(self.word >> Cat(0, 0, 0, self.addr_lo))
        b = shifted[0:8]
        h = shifted[0:16]
        with m.Switch(self.funct3):
            with m.Case(Funct3.LB):
                m.d.comb += self.value.eq(b.as_signed())
            with m.Case(Funct3.LH):
                m.d.comb += self.value.eq(h.as_signed())
            with m.Case(Funct3.LBU):
                m.d.comb += self.value.eq(b)
            with m.Case(Funct3.LHU):
                m.d.comb += self.value.eq(h)
            with m.Default():
                m.d.comb += self.value.eq(self.word)
        return m
