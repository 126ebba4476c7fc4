"""Per-tile exchange engine (docs/architecture.md §6, format in :mod:`tessera.spec.exchange`).

Timing (architecture §6): on an ARRAY release at cycle r the engine runs the program at the tile's
``xprog``: step 0 at r, END lasts one cycle, IDLE n and a STEP of run length n last n cycles
(a run's i-th cycle uses the step's addresses + i words), each step starts right
after the previous one; ``in_exchange`` is high for r..e and ``resume`` pulses at the END cycle e
(e = r and no program when xprog = 0).

Implementation with a synchronous-read SRAM: the step executed at cycle c comes from a
register, the SRAM's step window (tessera/hdl/tile/sram.py), so no SRAM output reaches the
send address. Step words are read two cycles ahead on port A: while the tile waits at the
barrier (``arrived``, from k* <= r - 2) the program's first two words, taken by the window at
the end of every cycle up to r - 1; from r - 1 (``prerelease``) to e the two words after the
next step's, taken when a step ends (``step_adv``). The window holds the SRAM as after all
writes of cycles < c (it is patched with every write), so step words and sends see the SRAM as
after all writes of cycles < c. A STEP that sends reads its word on port B in cycle c; the tile
SRAM puts it on the exchange link in cycle c + 1. A receive at k is handed to the SRAM
(``sram.recv`` / ``sram.recv_addr``, source ``src``), which writes it at the end of k. This
sustains one word sent and one word received per cycle.

Faults (``exchange_fault``, checked in this order, the faulting step has no effect): step address
outside the SRAM or not 8-byte aligned (pc = addr = step address); op = 3 (pc = addr = step
address); send address outside the SRAM (addr = that byte address); absolute source ≥ N (addr =
the source index); receive address outside the SRAM (addr = that byte address). The fault of
the step at c is presented in c (the tile's record holds it, visible, from c + 1); after it the
engine makes no further step and stays in the exchange phase (``in_exchange`` high, no
``resume``) until the array stops (architecture §6, contract v2).

Steps happen only while ``enable`` (the tile's ``run``: cycles ≤ t_s) is high; a release in a
cycle without ``enable`` (after the stop) starts nothing (architecture §5).
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.exchange import (ADDR_BITS, ADDR_SHIFT, OP_BITS, OP_SHIFT, RECV_EN_BIT,
                                   RELATIVE_BIT, RUN_BITS, RUN_SHIFT, SEND_EN_BIT, SRC_BITS,
                                   SRC_SHIFT, STEP_BYTES, XOp)
from tessera.spec.faults import FaultCause

from ..interfaces import ExchangeSramSignature, FaultSignature
from ..compare import at_least


__all__ = ["ExchangeEngine", "relative_source"]


def relative_source(m: Module, tile_id: int, n: int, s) -> Signal:
    """Build ``(tile_id + s) mod n`` for an 11-bit value ``s`` (restoring subtraction chain).

    Parameters
    ----------
    m : Module
        Module receiving the combinational logic.
    tile_id, n : int
        This tile's index and the tile count N (constants).
    s : Value
        The 11-bit relative source field.

    Returns
    -------
    Signal
        Width ``max(1, (n - 1).bit_length())``, the absolute source tile.
    """
    width = max(1, (n - 1).bit_length())
    out = Signal(width, name="rel_src")
    if n & (n - 1) == 0:
        m.d.comb += out.eq((s + tile_id)[:width] if n > 1 else 0)
        return out
    v = Signal(SRC_BITS + 1, name="rel_sum")
    m.d.comb += v.eq(s + tile_id)
    top = (2 ** SRC_BITS - 1 + tile_id) // n        # largest possible quotient
    j = top.bit_length()
    cur = v
    while j > 0:
        j -= 1
        k = n << j
        nxt = Signal(SRC_BITS + 1, name=f"rel_mod{j}")
        m.d.comb += nxt.eq(Mux(cur >= k, cur - k, cur))
        cur = nxt
    m.d.comb += out.eq(cur[:width])
    return out


class ExchangeEngine(wiring.Component):
    """Runs a tile's exchange program.

    Parameters
    ----------
    config : ArrayConfig
        Array configuration (N, SRAM size).
    tile_id : int
        This tile's index, for relative sources.

    Members
    -------
    prerelease, release : In(1)
        Pulses in cycles r − 1 and r from the sync controller.
    xprog : In(32)
        The tile's xprog CSR (byte address, 0 = no program).
    enable : In(1)
        The tile's ``run``: the step of this cycle happens (cycle ≤ t_s, architecture §7).
    clear : In(1)
        Start pulse: abandon any program.
    arrived : In(1)
        The tile's core is arrived at the ARRAY barrier (its visible context states, a
        register): no context issues, so port A is free for the program's first two words
        (from k* up to r - 1, and k* <= r - 2).
    sram : Out(ExchangeSramSignature(config))
        Step-window reads (port A) and moves, send reads (port B) and receive writes.
    src : Out(tile_bits)
        Receive mux select of this cycle (the source of ``sram.recv``).
    resume : Out(1)
        Pulse in the END cycle e.
    in_exchange : Out(1)
        The tile is in its exchange phase (r..e; after a faulting step until the stop).
    fault : Out(FaultSignature(config))
        Exchange fault detected in this cycle's step (``xchg`` = 1, ``context`` = 0, ``cause``
        = EXCHANGE_FAULT: constants).

    Raises
    ------
    TypeError, ValueError
        On a bad ``config`` or ``tile_id`` outside 0..N-1.
    """

    def __init__(self, config: ArrayConfig, tile_id: int):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"ExchangeEngine needs an ArrayConfig, not {config!r}")
        if not isinstance(tile_id, int) or not 0 <= tile_id < config.tiles:
            raise ValueError(f"ExchangeEngine tile_id must be in 0..{config.tiles - 1}, "
                             f"not {tile_id!r}")
        self.config = config
        self.tile_id = tile_id
        super().__init__({
            "prerelease": In(1), "release": In(1), "xprog": In(32), "enable": In(1),
            "clear": In(1), "arrived": In(1),
            "sram": Out(ExchangeSramSignature(config)), "src": Out(config.tile_bits),
            "resume": Out(1), "in_exchange": Out(1),
            "fault": Out(FaultSignature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        sram = cfg.sram_bytes
        ab = cfg.sram_addr_bits

        busy = Signal()                 # executing a program (cycles after r up to e)
        pc = Signal(32)                 # address of the current step (valid when busy)
        in_idle = Signal()              # continuing an IDLE that started in an earlier cycle
        idle_rem = Signal(ADDR_BITS)    # further IDLE cycles after the current one
        # a STEP run (§6 "Runs") after its first cycle: the latched step, advanced addresses
        in_run = Signal()
        run_rem = Signal(RUN_BITS)      # further run cycles after the current one
        run_send = Signal(ADDR_BITS + RUN_BITS)   # word addresses of the current run cycle
        run_recv = Signal(ADDR_BITS + RUN_BITS)
        run_send_en = Signal()
        run_recv_en = Signal()
        run_src = Signal(cfg.tile_bits)

        dead = Signal()                 # a step faulted: no further step until the stop (§6)
        # xprog's derived values, registered (from the xprog of the cycle before): every
        # cycle that reads them (the tile arrived, r - 1, r) has the xprog of the cycle
        # before. A csrrw of xprog issued at t writes it in W (visible from t + 6), and its
        # context must still issue `sync ARRAY` or halt, at t + T or later, so the tile is
        # arrived from t + T + 5 >= t + 11 at the earliest; no context issues until the resume after e.
        # (After a start the contexts run: the tile is not arrived in the cycle after it.)
        has_prog = Signal()
        xp8 = Signal(ab - 3)            # word rows of xprog + 8, + 16, + 24
        xp16 = Signal(ab - 3)
        xp24 = Signal(ab - 3)
        xrow = self.xprog[3:ab]
        m.d.sync += [has_prog.eq(self.xprog != 0), xp8.eq(xrow + 1), xp16.eq(xrow + 2),
                     xp24.eq(xrow + 3)]
        # rows of pc + 16 and pc + 24 (valid while busy), loaded with pc
        p16 = Signal(ab - 3)
        p24 = Signal(ab - 3)
        start_prog = self.release & self.enable & has_prog
        active = busy | start_prog
        cur = Signal(32)
        m.d.comb += cur.eq(Mux(busy, pc, self.xprog))
        m.d.comb += self.in_exchange.eq(busy | (self.release & self.enable))

        w0 = self.sram.step_data[:32]
        w1 = self.sram.step_data[32:]
        op = w0[OP_SHIFT:OP_SHIFT + OP_BITS]
        send_en = w0[SEND_EN_BIT]
        recv_en = w0[RECV_EN_BIT]
        addr0 = w0[ADDR_SHIFT:ADDR_SHIFT + ADDR_BITS]    # send word address / IDLE n - 1
        addr1 = w1[ADDR_SHIFT:ADDR_SHIFT + ADDR_BITS]    # receive word address
        send_byte = Signal(ADDR_BITS + 2)
        recv_byte = Signal(ADDR_BITS + 2)
        m.d.comb += [send_byte.eq(addr0 << 2), recv_byte.eq(addr1 << 2)]
        relative = w1[RELATIVE_BIT]
        s = w1[SRC_SHIFT:SRC_SHIFT + SRC_BITS]
        is_step = op == XOp.STEP
        run_len_m1 = w0[RUN_SHIFT:RUN_SHIFT + RUN_BITS]
        r_send_byte = Signal(ADDR_BITS + RUN_BITS + 2)
        r_recv_byte = Signal(ADDR_BITS + RUN_BITS + 2)
        m.d.comb += [r_send_byte.eq(run_send << 2), r_recv_byte.eq(run_recv << 2)]
        r_f_send = run_send_en & at_least(r_send_byte, sram)
        r_f_recv = run_recv_en & at_least(r_recv_byte, sram)
        in_run_now = active & in_run

        f_step = (cur[:3] != 0) | at_least(cur, sram)
        f_op = op == XOp.RESERVED
        f_send = is_step & send_en & at_least(send_byte, sram)
        f_src = is_step & recv_en & ~relative & at_least(s, cfg.tiles)
        f_recv = is_step & recv_en & at_least(recv_byte, sram)
        fault = Signal()
        fresh = active & ~in_idle & ~in_run
        m.d.comb += fault.eq((fresh & (f_step | f_op | f_send | f_src | f_recv))
                             | (in_run_now & (r_f_send | r_f_recv)))
        m.d.comb += [self.fault.xchg.eq(1), self.fault.context.eq(0),
                     self.fault.cause.eq(FaultCause.EXCHANGE_FAULT), self.fault.pc.eq(cur)]
        with m.If(in_run):
            m.d.comb += self.fault.addr.eq(Mux(r_f_send, r_send_byte, r_recv_byte))
        with m.Elif(f_step | f_op):
            m.d.comb += self.fault.addr.eq(cur)
        with m.Elif(f_send):
            m.d.comb += self.fault.addr.eq(send_byte)
        with m.Elif(f_src):
            m.d.comb += self.fault.addr.eq(s)
        with m.Else():
            m.d.comb += self.fault.addr.eq(recv_byte)
        m.d.comb += self.fault.valid.eq(fault & self.enable & ~dead)

        rel_src = relative_source(m, self.tile_id, cfg.tiles, s)
        next_pc = Signal(32)
        m.d.comb += next_pc.eq(cur + STEP_BYTES)

        # Port A and the SRAM's step window (tessera/hdl/tile/sram.py): the step of cycle c
        # comes from a register loaded at the end of c - 1. Active (r .. e, and r - 1): read
        # the two words after the next step's (cur + 16, cur + 24), which the window takes
        # when a step ends; waiting at the barrier: read the program's first two words, which
        # the window takes every cycle until r - 1 (the read of r - 2 is the last one).
        x16 = Signal(ab - 3)            # rows of cur + 16 and cur + 24
        x24 = Signal(ab - 3)
        m.d.comb += [x16.eq(Mux(busy, p16, xp16)), x24.eq(Mux(busy, p24, xp24))]
        with m.If(active | self.prerelease):
            m.d.comb += [self.sram.step_en.eq(1), self.sram.step_addr.eq(x16),
                         self.sram.step_addr1.eq(x24)]
        with m.Elif(self.arrived & has_prog):
            m.d.comb += [self.sram.step_en.eq(1), self.sram.step_addr.eq(xrow),
                         self.sram.step_addr1.eq(xp8)]
        m.d.comb += self.sram.step_load.eq(~active)

        def pc_next():
            """The next step starts at cur + 8."""
            m.d.sync += [pc.eq(next_pc), p16.eq(x24), p24.eq(x24 + 1)]

        def pc_same():
            """The step at cur continues (a run or an IDLE)."""
            m.d.sync += [pc.eq(cur), p16.eq(x16), p24.eq(x24)]

        def advance():
            m.d.comb += self.sram.step_adv.eq(1)

        with m.If(self.clear):
            m.d.sync += [busy.eq(0), in_idle.eq(0), in_run.eq(0), dead.eq(0)]
        with m.Elif(self.enable & ~dead):
            with m.If(active & in_idle):
                with m.If(idle_rem == 0):
                    m.d.sync += in_idle.eq(0)
                    pc_next()
                    advance()
                with m.Else():
                    m.d.sync += idle_rem.eq(idle_rem - 1)
            with m.Elif(in_run_now & fault):
                m.d.sync += dead.eq(1)          # busy stays: still in the exchange phase
            with m.Elif(in_run_now):
                m.d.comb += [
                    self.sram.send.eq(run_send_en), self.sram.send_addr.eq(run_send[:ab - 2]),
                    self.sram.recv.eq(run_recv_en), self.sram.recv_addr.eq(run_recv[:ab - 2]),
                    self.src.eq(run_src),
                ]
                with m.If(run_rem == 0):
                    m.d.sync += in_run.eq(0)
                    pc_next()
                    advance()
                with m.Else():
                    m.d.sync += [run_rem.eq(run_rem - 1), run_send.eq(run_send + 1),
                                 run_recv.eq(run_recv + 1)]
            with m.Elif(fresh & fault):
                m.d.sync += [busy.eq(1), dead.eq(1)]
            with m.Elif(fresh):
                m.d.sync += busy.eq(1)
                with m.Switch(op):
                    with m.Case(XOp.STEP):
                        with m.If(run_len_m1 == 0):
                            pc_next()
                            advance()
                        with m.Else():      # a run: stay on this step for n - 1 more cycles
                            m.d.sync += [
                                in_run.eq(1), run_rem.eq(run_len_m1 - 1),
                                run_send.eq(addr0 + 1), run_recv.eq(addr1 + 1),
                                run_send_en.eq(send_en), run_recv_en.eq(recv_en),
                                run_src.eq(Mux(relative, rel_src, s[:cfg.tile_bits])),
                            ]
                            pc_same()
                        m.d.comb += [
                            self.sram.send.eq(send_en), self.sram.send_addr.eq(addr0[:ab - 2]),
                            self.sram.recv.eq(recv_en), self.sram.recv_addr.eq(addr1[:ab - 2]),
                            self.src.eq(Mux(relative, rel_src, s[:cfg.tile_bits])),
                        ]
                    with m.Case(XOp.IDLE):
                        with m.If(addr0 == 0):
                            pc_next()
                            advance()
                        with m.Else():
                            m.d.sync += [in_idle.eq(1), idle_rem.eq(addr0 - 1)]
                            pc_same()
                    with m.Case(XOp.END):
                        m.d.sync += busy.eq(0)
                        m.d.comb += self.resume.eq(1)
            with m.If(self.release & ~has_prog):
                m.d.comb += self.resume.eq(1)
        return m
