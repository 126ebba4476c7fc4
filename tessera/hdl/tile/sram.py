"""A tile's SRAM and its three ports, shared by the core, the exchange engine and the host.

The SRAM is one :class:`amaranth.lib.memory.Memory` of ``sram_bytes / 8`` 64-bit words with
synchronous read ports only (BRAM friendly) and one write port with byte granularity
(docs/rtl.md "Tile SRAM"; users in priority order):

* port A (transparent to the write port): the exchange engine's step words (an exchange step
  is two words, so the 64-bit width gives a whole step per read), else the core's fetch;
* port B (not transparent): exchange send, else core load, else host read;
* write port: exchange receive, else core store, else host write (never two in the same
  cycle: a tile in its exchange phase has no running context, and the host only writes while
  stopped).

Port A is transparent so that a fetch or step read issued in cycle c sees a write of cycle c
(architecturally: a store issued at t is seen by the fetch of an instruction issued at t + 2,
memory effects in issue order). Port B is not transparent so that a send at cycle c reads the
SRAM as after the writes of cycles < c (architecture §6) even when a receive writes the same
word at c.

Matrix engine (architecture §12): its step reads use port B (after the load, before the
host: in an engine cycle there is no load, store or send), its writes the write port. A write
of the engine step of cycle k is held in the **pending write** P and written in k + 1 if that
step belongs to the run (``xcommit`` in k + 1, as for the deferred receive), or later if a store
owns the write port in k + 1 (the store is architecturally later: its bytes are removed from
P). While P waits, every read that must see it is patched with its bytes: port B reads (loads,
engine reads) in the cycle after the read, and port A (fetch) also with the write of the engine
step of the fetch's own cycle (a fetch at k sees the engine write of k, §12 "Memory order").

Deferred receive write: the word received by the exchange step of cycle k is written in
k + 1, and only if that step belongs to the run (``xcommit``), since a core fault issued at
k − 1 is only seen at k + 1. Reads of cycle k + 1 that must see it (a send on port B, the
next step's words on port A) get it forwarded.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig

from ..interfaces import (EngineSramSignature, ExchangeSramSignature, FetchSignature,
                          MemorySignature, check_config)

__all__ = ["TileSram"]


class TileSram(wiring.Component):
    """The tile SRAM with its port multiplexers and the deferred receive write.

    Parameters
    ----------
    config : ArrayConfig
        Gives ``sram_bytes``.

    Members
    -------
    clear : In(1)
        Start pulse: drop a pending receive write and the send bus.
    xcommit : In(1)
        The exchange step of the previous cycle belongs to the run: its receive is written.
    fetch : In(FetchSignature())
        The core's fetch (port A; ``fetch.en`` is not needed: port A reads every cycle).
    data : In(MemorySignature())
        The core's loads (port B) and stores (write port).
    host : In(MemorySignature(addr_width=sram_addr_bits))
        The host port's SRAM window (port B, write port).
    xchg : In(ExchangeSramSignature(config))
        The exchange engine: step reads, send reads and receives.
    eng : In(EngineSramSignature(config))
        The matrix engine's step reads and writes (only with ``engine_macs`` > 0).
    x_data : In(32)
        The fabric's word for a receive in this cycle.
    x_send : Out(32)
        The word sent in the previous cycle (0 when not sending).

    Attributes
    ----------
    mem : amaranth.lib.memory.Memory
        The storage: byte address b is bits 8·(b mod 8) … of word b // 8.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("TileSram", config)
        self.mem = Memory(shape=64, depth=config.sram_bytes // 8, init=[])
        super().__init__({
            "clear": In(1), "xcommit": In(1),
            "fetch": In(FetchSignature()), "data": In(MemorySignature()),
            "host": In(MemorySignature(addr_width=config.sram_addr_bits)),
            "xchg": In(ExchangeSramSignature(config)),
            "eng": In(EngineSramSignature(config)),
            "x_data": In(32), "x_send": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        ab = self.config.sram_addr_bits
        fetch, data, host, xchg = self.fetch, self.data, self.host, self.xchg
        m.submodules.mem = mem = self.mem
        wp = mem.write_port(granularity=8)
        pa = mem.read_port(transparent_for=(wp,))
        pb = mem.read_port()

        # -- deferred receive write (see the module docstring)
        pw_valid = Signal()
        pw_addr = Signal(ab - 2)
        pw_data = Signal(32)
        with m.If(self.clear):
            m.d.sync += pw_valid.eq(0)
        with m.Else():
            m.d.sync += [pw_valid.eq(xchg.recv), pw_addr.eq(xchg.recv_addr),
                         pw_data.eq(self.x_data)]

        # -- the engine's pending write P (see the module docstring)
        eng = self.eng
        p_valid = Signal()
        p_ok = Signal()            # committed (its step belongs to the run)
        p_addr = Signal(ab - 3)
        p_data = Signal(64)
        p_mask = Signal(8)
        p_live = Signal()          # P holds a write that will be written
        m.d.comb += p_live.eq(p_valid & (p_ok | self.xcommit))
        recv_w = pw_valid & self.xcommit
        store_w = data.we != 0
        p_write = Signal()
        m.d.comb += p_write.eq(p_live & ~recv_w & ~store_w)
        st_mask8 = Signal(8)       # bytes a store of this cycle writes in P's word
        m.d.comb += st_mask8.eq(Mux(store_w & (data.addr[3:ab] == p_addr),
                                    Mux(data.addr[2], data.we << 4, data.we), 0))
        p_mask_eff = Signal(8)
        m.d.comb += p_mask_eff.eq(p_mask & ~st_mask8)
        with m.If(self.clear):
            m.d.sync += p_valid.eq(0)
        with m.Elif(eng.wr_en):
            m.d.sync += [p_valid.eq(1), p_ok.eq(0), p_addr.eq(eng.wr_addr),
                         p_data.eq(eng.wr_data), p_mask.eq(eng.wr_mask)]
        with m.Elif(p_write | ~p_live):
            m.d.sync += p_valid.eq(0)
        with m.Else():
            m.d.sync += [p_ok.eq(1), p_mask.eq(p_mask_eff)]

        def patch(word, addr, dat, mask):
            """``word`` with the bytes of ``mask`` replaced by ``dat``'s."""
            return Cat(*(Mux(mask[i], dat[8 * i:8 * i + 8], word[8 * i:8 * i + 8])
                         for i in range(8)))

        # -- port A: exchange step words, else core fetch (transparent: sees this cycle's write)
        fa_lane = Signal()
        pa_addr_q = Signal(ab - 3)
        pa_data = Signal(64)
        m.d.comb += pa.en.eq(1)
        with m.If(xchg.step_en):
            m.d.comb += pa.addr.eq(xchg.step_addr)
        with m.Else():
            m.d.comb += pa.addr.eq(fetch.addr[3:ab])
        m.d.sync += [fa_lane.eq(fetch.addr[2]), pa_addr_q.eq(pa.addr)]
        # a step read in cycle k-1 must see the receive of k-1, written only now (k): patch it
        m.d.comb += pa_data.eq(pa.data)
        with m.If(pw_valid & (pw_addr[1:] == pa_addr_q)):
            with m.If(pw_addr[0]):
                m.d.comb += pa_data[32:].eq(pw_data)
            with m.Else():
                m.d.comb += pa_data[:32].eq(pw_data)
        # a fetch in cycle k sees the engine write of k and a pending P (not yet written)
        fp_valid = Signal()
        fp_addr = Signal(ab - 3)
        fp_data = Signal(64)
        fp_mask = Signal(8)
        with m.If(eng.wr_en):
            m.d.sync += [fp_valid.eq(1), fp_addr.eq(eng.wr_addr), fp_data.eq(eng.wr_data),
                         fp_mask.eq(eng.wr_mask)]
        with m.Else():
            m.d.sync += [fp_valid.eq(p_live & ~self.clear), fp_addr.eq(p_addr),
                         fp_data.eq(p_data), fp_mask.eq(p_mask_eff)]
        fa_data = Signal(64)
        m.d.comb += fa_data.eq(Mux(fp_valid & (fp_addr == pa_addr_q),
                                   patch(pa_data, fp_addr, fp_data, fp_mask), pa_data))
        m.d.comb += [fetch.data.eq(Mux(fa_lane, fa_data[32:], fa_data[:32])),
                     xchg.step_data.eq(pa_data)]

        # -- port B: send, else load, else host read
        b_lane = Signal()
        send_q = Signal()
        m.d.comb += pb.en.eq(1)
        with m.If(xchg.send):
            m.d.comb += pb.addr.eq(xchg.send_addr[1:])
            m.d.sync += b_lane.eq(xchg.send_addr[0])
        with m.Elif(data.re):
            m.d.comb += pb.addr.eq(data.addr[3:ab])
            m.d.sync += b_lane.eq(data.addr[2])
        with m.Elif(eng.rd_en):
            m.d.comb += pb.addr.eq(eng.rd_addr)
        with m.Else():
            m.d.comb += pb.addr.eq(host.addr[3:ab])
            m.d.sync += b_lane.eq(host.addr[2])
        with m.If(self.clear):
            m.d.sync += send_q.eq(0)
        with m.Else():
            m.d.sync += send_q.eq(xchg.send)
        # a send in cycle k must see the receive of k-1, written only in k: forward it
        fwd_q = Signal()
        fwd_data = Signal(32)
        m.d.sync += [fwd_q.eq(xchg.send & pw_valid & (pw_addr == xchg.send_addr)),
                     fwd_data.eq(pw_data)]
        # a port B read in cycle k misses P if P is written in k or later: patch it
        bp_hit = Signal()
        bp_data = Signal(64)
        bp_mask = Signal(8)
        m.d.sync += [bp_hit.eq(p_live & (pb.addr == p_addr) & ~self.clear),
                     bp_data.eq(p_data), bp_mask.eq(p_mask)]
        pb_data = Signal(64)
        m.d.comb += pb_data.eq(Mux(bp_hit, patch(pb.data, None, bp_data, bp_mask), pb.data))
        m.d.comb += eng.rd_data.eq(pb_data)
        b_word = Signal(32)
        m.d.comb += b_word.eq(Mux(fwd_q, fwd_data, Mux(b_lane, pb_data[32:], pb_data[:32])))
        m.d.comb += [data.rdata.eq(b_word), host.rdata.eq(b_word),
                     self.x_send.eq(Mux(send_q, b_word, 0))]

        # -- write port: receive, else store, else host
        def write(word_lane, addr_dword, wdata, mask4):
            m.d.comb += [wp.addr.eq(addr_dword), wp.data.eq(Cat(wdata, wdata)),
                         wp.en.eq(Mux(word_lane, mask4 << 4, mask4))]

        with m.If(pw_valid & self.xcommit):
            write(pw_addr[0], pw_addr[1:], pw_data, 0xF)
        with m.Elif(data.we != 0):
            write(data.addr[2], data.addr[3:ab], data.wdata, data.we)
        with m.Elif(p_write):
            m.d.comb += [wp.addr.eq(p_addr), wp.data.eq(p_data), wp.en.eq(p_mask)]
        with m.Elif(host.we != 0):
            write(host.addr[2], host.addr[3:ab], host.wdata, host.we)
        return m
