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

from ..interfaces import ExchangeSramSignature, FetchSignature, MemorySignature
from ..interfaces import check_config

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
        m.d.comb += [fetch.data.eq(Mux(fa_lane, pa_data[32:], pa_data[:32])),
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
        b_word = Signal(32)
        m.d.comb += b_word.eq(Mux(fwd_q, fwd_data, Mux(b_lane, pb.data[32:], pb.data[:32])))
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
        with m.Elif(host.we != 0):
            write(host.addr[2], host.addr[3:ab], host.wdata, host.we)
        return m
