"""A tile's SRAM and its three ports, shared by the core, the exchange engine and the host.

The SRAM is one :class:`amaranth.lib.memory.Memory` of ``sram_bytes / 8`` 64-bit words with
synchronous read ports only (block RAM: DP16KD on the ECP5) and one write port with byte
granularity (docs/rtl.md "Tile SRAM"; users in priority order):

* port A (**not** transparent): the exchange engine's step words (an exchange step is two
  words, so the 64-bit width gives a whole step per read), else the core's fetch;
* port B (not transparent): exchange send, else core load, else matrix-engine read, else host
  read;
* write port: exchange receive, else core store, else matrix-engine write, else host write.
  Never two in the same cycle: a tile in its exchange phase has no instruction in M (its
  contexts wait from k* and the phase starts at r = k* + D >= k* + 2), a matrix-engine cycle
  has no LOAD/STORE in M and is not in the exchange phase (architecture §12 "Engine cycles"),
  and the host only writes while stopped.

Every write of cycle k is written at the end of k (contract v2: nothing is deferred, since
every write of a cycle <= t_s takes effect, architecture §7 "Stop"). Every read is the SRAM as
after the writes of cycles < its cycle:

* a fetch at t sees the stores whose M is <= t - 1 (issued <= t - ``FETCH_STORE_DELAY``), the
  receives and engine writes of cycles <= t - 1 (architecture §4, §6, §12);
* a load (M at k), an engine read, a send at k see the writes of cycles < k (§4, §6, §12);
* the words of the exchange step that starts at c are read at c - 1 and must be the SRAM as
  after the writes of cycles < c (§6): the port-A read of c - 1 misses the write of c - 1 (a
  receive, or an engine write at r - 1), so a step read is patched with the bytes of the write
  of its own cycle (a register of that write, compared in the next cycle).
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
    """The tile SRAM with its port multiplexers.

    Parameters
    ----------
    config : ArrayConfig
        Gives ``sram_bytes``.

    Members
    -------
    clear : In(1)
        Start pulse: drop the send bus.
    fetch : In(FetchSignature())
        The core's fetch (port A; ``fetch.en`` is not needed: port A reads every cycle).
    data : In(MemorySignature())
        The core's loads (port B) and stores (write port), both in the core's M stage.
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
            "clear": In(1),
            "fetch": In(FetchSignature()), "data": In(MemorySignature()),
            "host": In(MemorySignature(addr_width=config.sram_addr_bits)),
            "xchg": In(ExchangeSramSignature(config)),
            "eng": In(EngineSramSignature(config)),
            "x_data": In(32), "x_send": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        ab = self.config.sram_addr_bits
        fetch, data, host, xchg, eng = self.fetch, self.data, self.host, self.xchg, self.eng
        m.submodules.mem = mem = self.mem
        wp = mem.write_port(granularity=8)
        pa = mem.read_port(transparent_for=())
        pb = mem.read_port(transparent_for=())

        # -- write port: receive, else store, else engine, else host (written this cycle)
        def write(word_lane, addr_dword, wdata, mask4):
            m.d.comb += [wp.addr.eq(addr_dword), wp.data.eq(Cat(wdata, wdata)),
                         wp.en.eq(Mux(word_lane, mask4 << 4, mask4))]

        with m.If(xchg.recv):
            write(xchg.recv_addr[0], xchg.recv_addr[1:], self.x_data, 0xF)
        with m.Elif(data.we != 0):
            write(data.addr[2], data.addr[3:ab], data.wdata, data.we)
        with m.Elif(eng.wr_en):
            m.d.comb += [wp.addr.eq(eng.wr_addr), wp.data.eq(eng.wr_data),
                         wp.en.eq(eng.wr_mask)]
        with m.Elif(host.we != 0):
            write(host.addr[2], host.addr[3:ab], host.wdata, host.we)

        # -- port A: exchange step words, else core fetch
        fa_lane = Signal()
        step_q = Signal()          # the read of the previous cycle was a step read
        pa_addr_q = Signal(ab - 3)
        m.d.comb += pa.en.eq(1)
        with m.If(xchg.step_en):
            m.d.comb += pa.addr.eq(xchg.step_addr)
        with m.Else():
            m.d.comb += pa.addr.eq(fetch.addr[3:ab])
        m.d.sync += [fa_lane.eq(fetch.addr[2]), pa_addr_q.eq(pa.addr), step_q.eq(xchg.step_en)]
        # a step read in cycle k must see the write of k (see the module docstring): patch it
        wq_addr = Signal(ab - 3)
        wq_data = Signal(64)
        wq_mask = Signal(8)
        m.d.sync += [wq_addr.eq(wp.addr), wq_data.eq(wp.data),
                     wq_mask.eq(Mux(self.clear, 0, wp.en))]
        step_data = Signal(64)
        hit = step_q & (wq_addr == pa_addr_q)
        m.d.comb += step_data.eq(Cat(*(
            Mux(hit & wq_mask[n], wq_data[8 * n:8 * n + 8], pa.data[8 * n:8 * n + 8])
            for n in range(8))))
        m.d.comb += [fetch.data.eq(Mux(fa_lane, pa.data[32:], pa.data[:32])),
                     xchg.step_data.eq(step_data)]

        # -- port B: send, else load, else engine read, else host read
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
        m.d.comb += eng.rd_data.eq(pb.data)
        b_word = Signal(32)
        m.d.comb += b_word.eq(Mux(b_lane, pb.data[32:], pb.data[:32]))
        m.d.comb += [data.rdata.eq(b_word), host.rdata.eq(b_word),
                     self.x_send.eq(Mux(send_q, b_word, 0))]
        return m
