"""A tile's SRAM and its three ports, shared by the core, the exchange engine and the host.

The SRAM is ``sram_bytes / 8`` 64-bit words held in two banks, each an
:class:`amaranth.lib.memory.Memory` of ``sram_bytes / 16`` 64-bit words with synchronous read
ports only (block RAM: DP16KD on the ECP5): the **even** bank holds the words 2i (bytes 16i ..
16i + 7) in its row i, the **odd** bank the words 2i + 1. Each bank has its own write port with
byte granularity, so the matrix engine writes two consecutive words (at a and a + 8, always one
in each bank, architecture §12 "Why two write words") in one cycle; every other user reads and
writes one word, the bank of its address (docs/rtl.md "Tile SRAM"; users in priority order):

* port A (**not** transparent): two consecutive words for the exchange engine's step window
  (an exchange step is one 64-bit word; word d from bank d mod 2 and word d + 1 from the other
  bank, each at its own row), else the core's fetch;
* port B (not transparent): exchange send, else core load, else matrix-engine read, else host
  read;
* write ports (one per bank): exchange receive, else core store, else matrix-engine write
  (one or two words), else host write. Never two users in the same cycle: a tile in its
  exchange phase has no instruction in M (its contexts wait from k* and the phase starts at
  r = k* + D >= k* + 2), a matrix-engine cycle has no LOAD/STORE in M and is not in the
  exchange phase (architecture §12 "Engine cycles"), and the host only writes while stopped.

Every write of cycle k is written at the end of k (contract v2: nothing is deferred, since
every write of a cycle <= t_s takes effect, architecture §7 "Stop"). Every read is the SRAM as
after the writes of cycles < its cycle:

* a fetch at t sees the stores whose M is <= t - 1 (issued <= t - ``FETCH_STORE_DELAY``), the
  receives and engine writes of cycles <= t - 1 (architecture §4, §6, §12);
* a load (M at k), an engine read, a send at k see the writes of cycles < k (§4, §6, §12);
* the word of the exchange step that starts at c must be the SRAM as after the writes of
  cycles < c (§6), and it must come from a register (no SRAM output may reach the send
  address: that was the tile's worst path, docs/synthesis.md). The SRAM keeps the engine's
  **step window**: the word of the current step and the next one, which are always in
  different banks, so it is one register per bank, patched in every cycle with the bytes that
  cycle's write to that bank puts into its word. While the tile is waiting, the engine reads
  its program's first two words each cycle and ``step_load`` takes them (the read of r - 2,
  loaded at the end of r - 1); while it runs, it reads the two words after the current step's
  next one in every cycle (the words at pc + 16 and pc + 24 of the step of that cycle), and on
  ``step_adv`` (the current step ends) the current step's bank takes its word of that read:
  the word after the next one (pc + 16 of the new current step, whether or not the step
  advanced in the cycle before, is in the same bank as the leaving word). A word read on port
  A in k - 1 misses the writes of k - 1 (a register of each bank's write patches it) and of k
  (patched like the window).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.engine import ENGINE_WRITE_WORDS

from ..interfaces import (EngineSramSignature, ExchangeSramSignature, FetchSignature,
                          MemorySignature, check_config)

__all__ = ["TileSram"]


class TileSram(wiring.Component):
    """The tile SRAM (two banks of 64-bit words) with its port multiplexers.

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
        The matrix engine's step reads and writes of one or two words (only with
        ``engine_macs`` > 0).
    x_data : In(32)
        The fabric's word for a receive in this cycle.
    x_send : Out(32)
        The word sent in the previous cycle (0 when not sending).

    Attributes
    ----------
    banks : tuple of amaranth.lib.memory.Memory
        The storage, (even, odd): byte address b is bits 8·(b mod 8) … of row b // 16 of bank
        (b // 8) mod 2 (see :meth:`word`).

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("TileSram", config)
        assert ENGINE_WRITE_WORDS == 2, "the two banks hold the two words of an engine write"
        self.banks = tuple(Memory(shape=64, depth=config.sram_bytes // 16, init=[])
                           for _ in range(2))
        super().__init__({
            "clear": In(1),
            "fetch": In(FetchSignature()), "data": In(MemorySignature()),
            "host": In(MemorySignature(addr_width=config.sram_addr_bits)),
            "xchg": In(ExchangeSramSignature(config)),
            "eng": In(EngineSramSignature(config)),
            "x_data": In(32), "x_send": Out(32),
        })

    def word(self, index: int):
        """The simulation value of 8-byte word ``index`` (for backdoor reads and writes).

        Parameters
        ----------
        index : int
            Word index 0 .. ``sram_bytes`` / 8 − 1 (byte address / 8).

        Returns
        -------
        amaranth.hdl.Value
            Row ``index // 2`` of bank ``index % 2`` (64 bits; byte b of the word in bits
            8b .. 8b + 7), for ``ctx.get`` / ``ctx.set`` in a simulator testbench.

        Raises
        ------
        ValueError
            ``index`` is not a word index of this SRAM.
        """
        n = self.config.sram_bytes // 8
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
            raise ValueError(f"TileSram.word: index must be an int in 0..{n - 1}, not {index!r}")
        return self.banks[index % 2].data[index // 2]

    def elaborate(self, platform):
        m = Module()
        ab = self.config.sram_addr_bits
        rb = ab - 4                       # row bits of a bank
        fetch, data, host, xchg, eng = self.fetch, self.data, self.host, self.xchg, self.eng
        m.submodules.mem_even, m.submodules.mem_odd = self.banks
        wps = [mem.write_port(granularity=8) for mem in self.banks]
        pas = [mem.read_port(transparent_for=()) for mem in self.banks]
        pbs = [mem.read_port(transparent_for=()) for mem in self.banks]

        # -- write ports: receive, else store, else engine, else host (written this cycle).
        # One word (dword index d): bank d mod 2, row d // 2. The engine's two words at a and
        # a + 1: word a in bank a mod 2 at row a // 2, word a + 1 in the other bank at row
        # (a + 1) // 2 (a mask of zeros for a word the engine does not write).
        def write(word_lane, addr_dword, wdata, mask4):
            for b, wp in enumerate(wps):
                m.d.comb += [wp.addr.eq(addr_dword[1:]), wp.data.eq(Cat(wdata, wdata)),
                             wp.en.eq(Mux(addr_dword[0] == b,
                                          Mux(word_lane, mask4 << 4, mask4), 0))]

        with m.If(xchg.recv):
            write(xchg.recv_addr[0], xchg.recv_addr[1:], self.x_data, 0xF)
        with m.Elif(data.we != 0):
            write(data.addr[2], data.addr[3:ab], data.wdata, data.we)
        with m.Elif(eng.wr_en):
            a = eng.wr_addr
            a1 = eng.wr_addr1                 # a + 1: wraps past the end only with a zero mask
            first = [eng.wr_data[:64], eng.wr_mask[:8]]
            second = [eng.wr_data[64:], eng.wr_mask[8:]]
            for b, wp in enumerate(wps):
                mine = a[0] == b              # the first word is in this bank
                m.d.comb += [wp.addr.eq(Mux(mine, a[1:], a1[1:])),
                             wp.data.eq(Mux(mine, first[0], second[0])),
                             wp.en.eq(Mux(mine, first[1], second[1]))]
        with m.Elif(host.we != 0):
            write(host.addr[2], host.addr[3:ab], host.wdata, host.we)

        # -- port A: two consecutive words d, d + 1 for the exchange engine, else the core's
        # fetch (d = d + 1 = the fetched word: both banks read its row). Word d is in bank
        # d mod 2 at row d // 2, word d + 1 in the other bank at row (d + 1) // 2: so each
        # bank delivers one of the two words.
        pa_d = Signal(ab - 3)
        pa_d1 = Signal(ab - 3)
        fa_lane = Signal()
        pa_bank_q = Signal()        # bank of word d (of the fetched word)
        with m.If(xchg.step_en):
            m.d.comb += [pa_d.eq(xchg.step_addr), pa_d1.eq(xchg.step_addr1)]
        with m.Else():
            m.d.comb += [pa_d.eq(fetch.addr[3:ab]), pa_d1.eq(fetch.addr[3:ab])]
        pa_rows = [Mux(pa_d[0], pa_d1[1:], pa_d[1:]), Mux(pa_d[0], pa_d[1:], pa_d1[1:])]
        pa_rows_q = [Signal(rb, name=f"pa_row_q{b}") for b in range(2)]
        for b, pa in enumerate(pas):
            m.d.comb += [pa.en.eq(1), pa.addr.eq(pa_rows[b])]
            m.d.sync += pa_rows_q[b].eq(pa_rows[b])
        m.d.sync += [fa_lane.eq(fetch.addr[2]), pa_bank_q.eq(pa_d[0])]
        pa_word = Signal(64)           # the fetched word (word d of the previous cycle's read)
        m.d.comb += pa_word.eq(Mux(pa_bank_q, pas[1].data, pas[0].data))

        # The exchange engine's step window (see the module docstring): the current step's
        # word and the next one, always one in each bank, so it is held as one register per
        # bank (``win[b]`` at row ``win_row[b]``) patched only by that bank's write port, and
        # ``win_cur`` says which bank holds the current step. A word read on port A in k - 1
        # misses the write of k - 1 (``wq_*``, a register of each bank's write) and the write
        # of k; the window registers take the write of every cycle.
        wq_addr = [Signal(rb, name=f"wq_addr{b}") for b in range(2)]
        wq_data = [Signal(64, name=f"wq_data{b}") for b in range(2)]
        wq_mask = [Signal(8, name=f"wq_mask{b}") for b in range(2)]
        for b, wp in enumerate(wps):
            m.d.sync += [wq_addr[b].eq(wp.addr), wq_data[b].eq(wp.data),
                         wq_mask[b].eq(Mux(self.clear, 0, wp.en))]

        def patch(word, row, w_row, w_data, w_mask, name):
            """``word`` (row ``row`` of a bank) with the bytes of that bank's write (row
            ``w_row``, ``w_data`` under ``w_mask``)."""
            hit = Signal(name=f"{name}_hit")
            out = Signal(64, name=name)
            m.d.comb += [hit.eq(w_row == row), out.eq(Cat(*(
                Mux(hit & w_mask[n], w_data[8 * n:8 * n + 8], word[8 * n:8 * n + 8])
                for n in range(8))))]
            return out

        win = [Signal(64, name=f"win{b}") for b in range(2)]
        win_row = [Signal(rb, name=f"win_row{b}") for b in range(2)]
        win_cur = Signal()          # the bank of the current step's word
        for b, wp in enumerate(wps):
            rd = patch(patch(pas[b].data, pa_rows_q[b], wq_addr[b], wq_data[b], wq_mask[b],
                             f"rd{b}_prev"), pa_rows_q[b], wp.addr, wp.data, wp.en, f"rd{b}")
            held = patch(win[b], win_row[b], wp.addr, wp.data, wp.en, f"win{b}_cur")
            # a step ends: the current word leaves and the word after the next one, in the
            # same bank, arrives (it is this bank's word of the previous cycle's read)
            with m.If(xchg.step_load | (xchg.step_adv & (win_cur == b))):
                m.d.sync += [win[b].eq(rd), win_row[b].eq(pa_rows_q[b])]
            with m.Else():
                m.d.sync += win[b].eq(held)
        with m.If(xchg.step_load):
            m.d.sync += win_cur.eq(pa_bank_q)
        with m.Elif(xchg.step_adv):
            m.d.sync += win_cur.eq(~win_cur)
        m.d.comb += [fetch.data.eq(Mux(fa_lane, pa_word[32:], pa_word[:32])),
                     xchg.step_data.eq(Mux(win_cur, win[1], win[0]))]

        # -- port B: send, else load, else engine read, else host read
        pb_addr = Signal(ab - 3)
        pb_bank = Signal()
        b_lane = Signal()
        send_q = Signal()
        with m.If(xchg.send):
            m.d.comb += pb_addr.eq(xchg.send_addr[1:])
            m.d.sync += b_lane.eq(xchg.send_addr[0])
        with m.Elif(data.re):
            m.d.comb += pb_addr.eq(data.addr[3:ab])
            m.d.sync += b_lane.eq(data.addr[2])
        with m.Elif(eng.rd_en):
            m.d.comb += pb_addr.eq(eng.rd_addr)
        with m.Else():
            m.d.comb += pb_addr.eq(host.addr[3:ab])
            m.d.sync += b_lane.eq(host.addr[2])
        for pb in pbs:
            m.d.comb += [pb.en.eq(1), pb.addr.eq(pb_addr[1:])]
        m.d.sync += pb_bank.eq(pb_addr[0])
        with m.If(self.clear):
            m.d.sync += send_q.eq(0)
        with m.Else():
            m.d.sync += send_q.eq(xchg.send)
        pb_word = Signal(64)
        m.d.comb += [pb_word.eq(Mux(pb_bank, pbs[1].data, pbs[0].data)),
                     eng.rd_data.eq(pb_word)]
        b_word = Signal(32)
        m.d.comb += b_word.eq(Mux(b_lane, pb_word[32:], pb_word[:32]))
        m.d.comb += [data.rdata.eq(b_word), host.rdata.eq(b_word),
                     self.x_send.eq(Mux(send_q, b_word, 0))]
        return m
