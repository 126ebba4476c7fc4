"""Register file of all contexts: x0..x31 × T in one ``amaranth.lib.memory.Memory``.

Reads are synchronous (address in one cycle, data the next): the core presents the
rs1/rs2/rd fields of the instruction word arriving in D and receives the values in X.
A valid bit per (context, register) implements the reset of x1..x31 on ``start``
without spending cycles: a register never written since ``start`` reads as 0. x0 is
never written, so it always reads 0.

The valid bits are one 32-bit row per context. The pipeline's row is selected a cycle ahead
(``r_ctx_next``, the issue slot's context, which the core knows before the instruction word
arrives) and registered, patched with that cycle's write and clear; it is registered once more
with the register numbers, and the bit is selected in the cycle of the data, so that the
register numbers, which come out of the SRAM with the instruction word, only address the block
RAM (docs/synthesis.md: the fetch word → valid-bit select was the tile's worst path).

The host's debug read has no port of its own: while ``dbg_en`` is high (the pipeline is idle:
the core drives it with ``~run``, and the host reads registers only while the array is
stopped), the row selected ahead is the debug context's, and port 3 (rd) reads the debug
register a cycle later, so the debug word is on ``dbg_data`` two cycles after its select
(docs/synthesis.md: one block RAM, one row select and one zero mask fewer).

No read port ever reads a (context, register) in the cycle it is written (the write is in V,
t + 6, of an instruction issued at t; a read of the same context is in I of one of its later
slots, t + kT + 1, and T >= 6 does not divide 5; the host's read comes after the run's last
write). The read ports are not transparent, which the simulators honour; the synthesis flow
marks their collisions as don't-care so that yosys does not emulate the block RAM's
read-during-write in logic (:func:`tessera.cli.bench.synth.regfile_collisions_undefined`).
"""

from amaranth import Array, C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig

__all__ = ["RegFile"]


class RegFile(wiring.Component):
    """T × 32 registers with three read ports for the pipeline (the third one also serves the
    debug read while the pipeline is idle) and one write port.

    Parameters
    ----------
    config : ArrayConfig
        Gives T (``contexts``).

    Members
    -------
    clear : In(1)
        Invalidate every register (all read as 0 from the next cycle on).
    r_ctx : In(context_bits)
        Context of the pipeline reads.
    r_ctx_next : In(context_bits)
        ``r_ctx`` of the next cycle (the valid-bit row is selected a cycle ahead; a read
        whose ``r_ctx`` differs from the previous cycle's ``r_ctx_next`` gets that context's
        valid bits, which is wrong).
    r_addr1, r_addr2, r_addr3 : In(5)
        Register numbers (rs1, rs2, rd); data the next cycle on ``r_data1..3``.
    r_data1, r_data2, r_data3 : Out(32)
    dbg_en : In(1)
        The pipeline is idle, in the cycle of its row select (like ``r_ctx_next``): when it
        is high in cycle k - 1, the row selected ahead in k - 1 is ``dbg_ctx``'s and port 3
        reads (``dbg_ctx``, ``dbg_addr``) of cycle k instead of (``r_ctx``, ``r_addr3``);
        ports 1 and 2 read nothing useful in k.
    dbg_ctx : In(context_bits)
    dbg_addr : In(5)
        Debug read: with ``dbg_en`` high in k - 1 and ``dbg_ctx`` the same in k - 1 and k,
        x[``dbg_addr`` of k] of that context is on ``dbg_data`` (= ``r_data3``) in k + 1.
    dbg_data : Out(32)
    w_en : In(1)
    w_ctx : In(context_bits)
    w_addr : In(5)
        Writes to x0 are dropped.
    w_data : In(32)
    """

    def __init__(self, config: ArrayConfig):
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise TypeError(f"RegFile: config must be an ArrayConfig, not {config!r}")
        self.config = config
        cb = config.context_bits
        super().__init__({
            "clear": In(1),
            "r_ctx": In(cb), "r_ctx_next": In(cb), "r_addr1": In(5), "r_addr2": In(5), "r_addr3": In(5),
            "r_data1": Out(32), "r_data2": Out(32), "r_data3": Out(32),
            "dbg_en": In(1), "dbg_ctx": In(cb), "dbg_addr": In(5), "dbg_data": Out(32),
            "w_en": In(1), "w_ctx": In(cb), "w_addr": In(5), "w_data": In(32),
        })

    def elaborate(self, platform):
        m = Module()
        t = self.config.contexts
        m.submodules.mem = mem = Memory(shape=32, depth=t * 32, init=[])
        wp = mem.write_port()
        # One row of 32 valid bits per context: a read selects its context's row, then the
        # register's bit (the three pipeline ports share r_ctx, so they share the row select).
        rows = [Signal(32, name=f"valid{c}") for c in range(t)]
        # contexts t..2^cb-1 do not exist: their (never valid) rows read as 0
        row_of = Array(rows + [C(0, 32)] * ((1 << self.config.context_bits) - t))

        do_write = self.w_en & (self.w_addr != 0)
        m.d.comb += [
            wp.addr.eq(Cat(self.w_addr, self.w_ctx)),
            wp.data.eq(self.w_data),
            wp.en.eq(do_write),
        ]
        with m.If(self.clear):
            m.d.sync += [r.eq(0) for r in rows]
        with m.Elif(do_write):
            for c, row in enumerate(rows):
                with m.If(self.w_ctx == c):
                    m.d.sync += row.bit_select(self.w_addr, 1).eq(1)

        # The pipeline's row, registered: the row of r_ctx_next as it is after this cycle's
        # clear and write, i.e. as the next cycle's row_of[r_ctx] (rows only gain bits
        # between clears).
        # While the pipeline is idle, the debug context's row, and port 3 a cycle later the
        # debug register (dbg_q: dbg_en of the row select's cycle).
        row_ctx = Signal(self.config.context_bits)
        dbg_q = Signal()
        m.d.comb += row_ctx.eq(Mux(self.dbg_en, self.dbg_ctx, self.r_ctx_next))
        m.d.sync += dbg_q.eq(self.dbg_en)
        r_row = Signal(32)
        w_hit = Signal(32)
        m.d.comb += w_hit.eq(Mux(do_write & (self.w_ctx == row_ctx),
                                 C(1, 32) << self.w_addr, 0))
        m.d.sync += r_row.eq(Mux(self.clear, 0, row_of[row_ctx] | w_hit))
        reads = [
            (self.r_ctx, self.r_addr1, self.r_data1),
            (self.r_ctx, self.r_addr2, self.r_data2),
            (Mux(dbg_q, self.dbg_ctx, self.r_ctx), Mux(dbg_q, self.dbg_addr, self.r_addr3),
             self.r_data3),
        ]
        m.d.comb += self.dbg_data.eq(self.r_data3)
        # The pipeline's valid bit is selected in the cycle of the data (beside the block
        # RAM's clock-to-out), from the row and register number of the read cycle, both
        # registered: the register number out of the SRAM's fetch word only addresses the
        # block RAM (the select in the read cycle was the tile's worst path, docs/synthesis.md).
        r_row_q = Signal(32)
        clear_q = Signal()
        m.d.sync += [r_row_q.eq(r_row), clear_q.eq(self.clear)]
        for n, (ctx, addr, data) in enumerate(reads):
            rp = mem.read_port(transparent_for=())
            v = Signal(name=f"valid{n}")
            addr_q = Signal(5, name=f"addr_q{n}")
            m.d.comb += [rp.addr.eq(Cat(addr, ctx)), rp.en.eq(1)]
            m.d.sync += addr_q.eq(addr)
            m.d.comb += [v.eq(r_row_q.bit_select(addr_q, 1) & ~clear_q),
                         data.eq(Mux(v, rp.data, 0))]
        return m
