"""The Tessera core: T barrel contexts, RV32IM + Zicsr subset + dot4/sync, F-D-X-W.

Cycle-exact to docs/architecture.md §3-§8; ports in docs/rtl.md ("Core ↔ tile").

Pipeline of an instruction issued at cycle t by context c = t mod T:

* F (t): ``f_en``/``f_addr`` = pc of c (fetch faults are decided here, reported in X).
* D (t+1): ``f_data`` arrives; its rs1/rs2/rd fields address the register file's
  synchronous read ports (so the register values arrive in X).
* X (t+2): decode, execute, next pc, load/store request (``m_*``; stores write the SRAM
  at the end of this cycle), CSR access, fault / state change (visible from t+3),
  retired/macs counters.
* W (t+3): load data (``m_rdata``) aligned and extended; register write; ``trace_*``.

A division (DIV/DIVU/REM/REMU) goes through this pipeline in each of its DIV_TURNS turns;
:mod:`.divider` keeps its per-context state, and only the last turn retires (§4, "Division").

Tile counters (§8): the class of cycle k (compute/sync/exchange/halted, from the visible
states and ``in_exchange`` at k) goes through a 3-stage delay line and is added in cycle
k+3 only if ``count_commit`` is high then; the array drives ``count_commit`` in cycle p
exactly when p-3 is one of the run's cycles 0..C-1 (docs/rtl.md). So the counters hold
exactly cycles 0..C-1 although the end of the run is learnt up to 3 cycles late.
"""

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.faults import FaultCause
from tessera.spec.isa import MACS_PER_DOT4
from tessera.spec.result import ContextState

from .alu import Alu, BranchCmp
from .csr import CsrUnit
from .decoder import Decoder
from .dot4 import Dot4
from .lsu import LoadAlign, LsuAddr
from .divider import Divider
from .mul import Multiplier
from .regfile import RegFile
from .scheduler import CycleClass, Scheduler

__all__ = ["Core", "core_signature"]


def core_signature(config: ArrayConfig) -> wiring.Signature:
    """The :class:`Core`'s port signature for ``config`` (see docs/rtl.md)."""
    cb = config.context_bits
    return wiring.Signature({
        # control
        "start": In(1), "entry": In(32), "run": In(1), "kill": In(1), "cycle": In(64),
        "count_commit": In(1),
        # fetch
        "f_en": Out(1), "f_addr": Out(32), "f_data": In(32),
        # data memory
        "m_re": Out(1), "m_we": Out(4), "m_addr": Out(32), "m_wdata": Out(32),
        "m_rdata": In(32),
        # barriers / exchange
        "arrive": Out(1), "resume": In(1), "in_exchange": In(1), "xprog": Out(32),
        "all_halted": Out(1), "halting": Out(1),
        # fault in X this cycle
        "fault_valid": Out(1), "fault_context": Out(cb), "fault_cause": Out(5),
        "fault_pc": Out(32), "fault_addr": Out(32),
        # debug (host, while stopped)
        "dbg_ctx": In(cb), "dbg_state": Out(3), "dbg_pc": Out(32), "dbg_retired": Out(64),
        "dbg_reg": In(5), "dbg_x": Out(32),
        "dbg_fault_valid": Out(1), "dbg_fault_context": Out(cb), "dbg_fault_cause": Out(5),
        "dbg_fault_pc": Out(32), "dbg_fault_addr": Out(32),
        "dbg_compute": Out(64), "dbg_sync": Out(64), "dbg_exchange": Out(64),
        "dbg_halted": Out(64), "dbg_retired_tile": Out(64), "dbg_macs": Out(64),
        # retire trace (W stage)
        "trace_valid": Out(1), "trace_context": Out(cb), "trace_pc": Out(32),
        "trace_insn": Out(32), "trace_rd": Out(5), "trace_value": Out(32),
        "trace_st_mask": Out(4), "trace_st_addr": Out(32), "trace_st_data": Out(32),
    })


class Core(wiring.Component):
    """Barrel-threaded RV32IM core of one tile.

    Parameters
    ----------
    config : ArrayConfig
        Array configuration (T contexts, ``sram_bytes``, N for the CSRs).
    tile_id : int
        This tile's index 0..N-1 (CSR ``tile_id``).

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    ValueError
        If ``tile_id`` is not in ``0..config.tiles-1``.

    Notes
    -----
    Ports (all in the ``sync`` domain; widths for ``context_bits`` = cb):

    start, entry[32]
        Pulse in the cycle before cycle 0: every context RUNNING with pc = ``entry``,
        x1..x31 = 0, per-context retired = 0, xprog = 0, counters and fault record
        cleared, pipeline emptied.
    run
        Issue allowed this cycle. Must be high in every cycle 0..C-1 of a run and low
        afterwards; the issue slot advances with it (slot = t mod T).
    kill
        Asserted in cycle m when a fault issued at m-2 (in any tile) is in X: the run's
        last cycle is m-2. Squashes F and D, and undoes barrier releases decided in
        cycles m-1 and m (they are after the run's end).
    count_commit
        Cycle p: cycle p-3 belongs to the run (see the module docstring).
    cycle[64]
        Array cycle counter; its value in F is the instruction's issue cycle (CSR cycle).
    f_en, f_addr[32] / f_data[32]
        Fetch request (word-aligned byte address inside the SRAM) / word, next cycle.
    m_re, m_we[4], m_addr[32], m_wdata[32] / m_rdata[32]
        Data access in X: ``m_addr`` is the byte address A (the SRAM uses its word
        index), ``m_we`` the byte enables, ``m_wdata`` the data already in its lanes.
        Load word on ``m_rdata`` the next cycle. A store writes at the end of X.
    arrive, resume, in_exchange, xprog[32]
        ARRAY barrier (§5): arrived condition of the contexts; pulse in cycle e
        (WAIT_ARRAY → RUNNING from e+1); exchange phase (counters); the xprog CSR.
    all_halted, halting
        Every context HALTED; every context HALTED or halting by the ecall in X
        this cycle (lets the array detect the run's last ``ecall`` in its X cycle).
    fault_valid, fault_context[cb], fault_cause[5], fault_pc[32], fault_addr[32]
        A fault decided in X this cycle (issue cycle = ``cycle`` - 2).
    dbg_ctx[cb] -> dbg_state[3], dbg_pc[32], dbg_retired[64]
        Combinational per-context read (state is a ContextState value).
    dbg_ctx[cb], dbg_reg[5] -> dbg_x[32]
        Register read, data in the next cycle (exit code = x10 of a HALTED context).
    dbg_fault_*
        The tile's (first) core fault record, held until the next ``start``.
    dbg_compute, dbg_sync, dbg_exchange, dbg_halted, dbg_retired_tile, dbg_macs [64]
        Tile counters (§8); retired/macs count at X of each retired instruction.
    trace_*
        Retire trace in W (issue cycle + 3): ``trace_valid`` for every retired
        instruction; ``trace_rd`` = 0 and ``trace_value`` = 0 when no register is
        written; ``trace_st_mask`` ≠ 0 for a store, with ``trace_st_addr`` = A & ~3 and
        ``trace_st_data`` the lane-aligned data (as written to the SRAM word).
    """

    def __init__(self, config: ArrayConfig, tile_id: int):
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise TypeError(f"Core: config must be an ArrayConfig, not {config!r}")
        if not isinstance(tile_id, int) or isinstance(tile_id, bool) \
                or not 0 <= tile_id < config.tiles:
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise ValueError(
                f"Core: tile_id must be an int in 0..{config.tiles - 1}, not {tile_id!r}")
        self.config = config
        self.tile_id = tile_id
        super().__init__(core_signature(config))

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        T = cfg.contexts
        cb = cfg.context_bits
        S = ContextState
        F = FaultCause

        m.submodules.sched = sched = Scheduler(cfg)
        m.submodules.regs = regs = RegFile(cfg)
        m.submodules.dec = dec = Decoder()
        m.submodules.alu = alu = Alu()
        m.submodules.bcmp = bcmp = BranchCmp()
        m.submodules.mul = mul = Multiplier()
        m.submodules.div = div = Divider(cfg)
        m.submodules.dot4 = dot4 = Dot4()
        m.submodules.lsu = lsu = LsuAddr(cfg)
        m.submodules.ldalign = ldalign = LoadAlign()
        m.submodules.csr = csr = CsrUnit(cfg, self.tile_id)

        start = self.start
        kill = self.kill

        # ---- architectural state ------------------------------------------------------
        pcs = Array(Signal(32, name=f"pc{i}") for i in range(T))
        ctx_retired = Array(Signal(64, name=f"retired{i}") for i in range(T))
        xprog = Signal(32)
        m.d.comb += self.xprog.eq(xprog)

        # ---- scheduler ----------------------------------------------------------------
        m.d.comb += [
            sched.start.eq(start), sched.run.eq(self.run), sched.kill.eq(kill),
            sched.resume.eq(self.resume), sched.in_exchange.eq(self.in_exchange),
            self.arrive.eq(sched.arrive), self.all_halted.eq(sched.all_halted),
            self.halting.eq(sched.halting),
        ]

        # ---- F ------------------------------------------------------------------------
        f_ctx = sched.slot
        f_valid = sched.issue
        f_pc = Signal(32)
        m.d.comb += f_pc.eq(pcs[f_ctx])
        f_misaligned = f_pc[0:2] != 0
        f_range = f_pc >= cfg.sram_bytes
        m.d.comb += [
            self.f_en.eq(f_valid & ~f_misaligned & ~f_range),
            self.f_addr.eq(f_pc),
        ]

        # ---- F -> D -------------------------------------------------------------------
        d_valid = Signal()
        d_ctx = Signal(cb)
        d_pc = Signal(32)
        d_misaligned = Signal()
        d_range = Signal()
        d_cycle = Signal(64)
        m.d.sync += [
            d_valid.eq(f_valid & ~kill & ~start),
            d_ctx.eq(f_ctx), d_pc.eq(f_pc), d_misaligned.eq(f_misaligned),
            d_range.eq(f_range), d_cycle.eq(self.cycle),
        ]

        # ---- D: register reads addressed by the arriving instruction word --------------
        d_insn = self.f_data
        m.d.comb += [
            regs.r_ctx.eq(d_ctx),
            regs.r_addr1.eq(d_insn[15:20]),
            regs.r_addr2.eq(d_insn[20:25]),
            regs.r_addr3.eq(d_insn[7:12]),
            div.r_ctx.eq(d_ctx),
        ]

        # ---- D -> X -------------------------------------------------------------------
        x_valid = Signal()
        x_ctx = Signal(cb)
        x_pc = Signal(32)
        x_insn = Signal(32)
        x_misaligned = Signal()
        x_range = Signal()
        x_cycle = Signal(64)
        m.d.sync += [
            x_valid.eq(d_valid & ~kill & ~start),
            x_ctx.eq(d_ctx), x_pc.eq(d_pc), x_insn.eq(d_insn),
            x_misaligned.eq(d_misaligned), x_range.eq(d_range), x_cycle.eq(d_cycle),
        ]

        # ---- X ------------------------------------------------------------------------
        rs1v, rs2v, rdv = regs.r_data1, regs.r_data2, regs.r_data3
        imm = dec.imm
        m.d.comb += [
            dec.insn.eq(x_insn),
            alu.a.eq(rs1v), alu.b.eq(Mux(dec.op_imm, imm, rs2v)),
            alu.funct3.eq(dec.funct3), alu.alt.eq(dec.alu_alt),
            bcmp.a.eq(rs1v), bcmp.b.eq(rs2v), bcmp.funct3.eq(dec.funct3),
            mul.a.eq(rs1v), mul.b.eq(rs2v), mul.funct3.eq(dec.funct3[0:2]),
            div.a.eq(rs1v), div.b.eq(rs2v), div.insn.eq(x_insn), div.ctx.eq(x_ctx),
            dot4.a.eq(rs1v), dot4.b.eq(rs2v), dot4.acc.eq(rdv), dot4.su.eq(dec.dot4_su),
            lsu.base.eq(rs1v), lsu.offset.eq(imm), lsu.funct3.eq(dec.funct3),
            lsu.wdata_in.eq(rs2v),
            csr.csr.eq(x_insn[20:32]), csr.funct3.eq(dec.funct3), csr.rs1.eq(dec.rs1),
            csr.rs1_value.eq(rs1v), csr.cycle.eq(x_cycle), csr.instret.eq(ctx_retired[x_ctx]),
            csr.context.eq(x_ctx), csr.xprog.eq(xprog),
        ]

        pc_plus4 = Signal(32)
        m.d.comb += pc_plus4.eq(x_pc + 4)
        target = Signal(32)
        jump = Signal()   # control transfer (JAL, JALR, taken branch)
        with m.If(dec.jalr):
            m.d.comb += target.eq((rs1v + imm) & ~1)
        with m.Else():
            m.d.comb += target.eq(x_pc + imm)
        m.d.comb += jump.eq(dec.jal | dec.jalr | (dec.branch & bcmp.taken))

        is_div = Signal()
        m.d.comb += is_div.eq(dec.muldiv & dec.funct3[2])
        result = Signal(32)
        with m.If(dec.lui):
            m.d.comb += result.eq(imm)
        with m.Elif(dec.auipc):
            m.d.comb += result.eq(x_pc + imm)
        with m.Elif(dec.jal | dec.jalr):
            m.d.comb += result.eq(pc_plus4)
        with m.Elif(dec.muldiv):
            m.d.comb += result.eq(Mux(is_div, div.result, mul.result))
        with m.Elif(dec.csr):
            m.d.comb += result.eq(csr.rdata)
        with m.Elif(dec.dot4):
            m.d.comb += result.eq(dot4.result)
        with m.Else():
            m.d.comb += result.eq(alu.result)

        # Fault decision (priority order of docs/architecture.md §2, §3, §7).
        fault = Signal()
        cause = Signal(5)
        faddr = Signal(32)
        with m.If(x_misaligned):
            m.d.comb += [fault.eq(1), cause.eq(F.MISALIGNED_FETCH), faddr.eq(x_pc)]
        with m.Elif(x_range):
            m.d.comb += [fault.eq(1), cause.eq(F.ACCESS_FAULT_FETCH), faddr.eq(x_pc)]
        with m.Elif(~dec.legal | (dec.csr & ~csr.legal)):
            m.d.comb += [fault.eq(1), cause.eq(F.ILLEGAL_INSTRUCTION), faddr.eq(x_insn)]
        with m.Elif(dec.ebreak):
            m.d.comb += [fault.eq(1), cause.eq(F.BREAKPOINT), faddr.eq(x_pc)]
        with m.Elif(dec.load & lsu.misaligned):
            m.d.comb += [fault.eq(1), cause.eq(F.MISALIGNED_LOAD), faddr.eq(lsu.addr)]
        with m.Elif(dec.load & lsu.out_of_range):
            m.d.comb += [fault.eq(1), cause.eq(F.ACCESS_FAULT_LOAD), faddr.eq(lsu.addr)]
        with m.Elif(dec.store & lsu.misaligned):
            m.d.comb += [fault.eq(1), cause.eq(F.MISALIGNED_STORE), faddr.eq(lsu.addr)]
        with m.Elif(dec.store & lsu.out_of_range):
            m.d.comb += [fault.eq(1), cause.eq(F.ACCESS_FAULT_STORE), faddr.eq(lsu.addr)]
        with m.Elif(jump & (target[0:2] != 0)):
            m.d.comb += [fault.eq(1), cause.eq(F.MISALIGNED_FETCH), faddr.eq(target)]

        # A division retires only in its last turn (§4, "Division"); its earlier turns have
        # no architectural effect.
        div_wait = is_div & ~div.last
        m.d.comb += [
            div.start.eq(start), div.issue.eq(x_valid & ~fault),
            div.is_div.eq(is_div),
        ]

        x_fault = Signal()
        x_retire = Signal()
        m.d.comb += [
            x_fault.eq(x_valid & fault),
            x_retire.eq(x_valid & ~fault & ~div_wait),
            self.fault_valid.eq(x_fault),
            self.fault_context.eq(x_ctx),
            self.fault_cause.eq(cause),
            self.fault_pc.eq(x_pc),
            self.fault_addr.eq(faddr),
        ]

        # Memory request.
        x_load = x_retire & dec.load
        x_store = x_retire & dec.store
        m.d.comb += [
            self.m_re.eq(x_load),
            self.m_we.eq(Mux(x_store, lsu.mask, 0)),
            self.m_addr.eq(lsu.addr),
            self.m_wdata.eq(lsu.wdata),
        ]

        # State change (visible from t+3).
        new_state = Signal(3)
        with m.If(fault):
            m.d.comb += new_state.eq(S.FAULT)
        with m.Elif(dec.ecall):
            m.d.comb += new_state.eq(S.HALTED)
        with m.Elif(dec.sync_array):
            m.d.comb += new_state.eq(S.WAIT_ARRAY)
        with m.Else():
            m.d.comb += new_state.eq(S.WAIT_TILE)
        m.d.comb += [
            sched.x_set.eq(x_valid & ~start & (fault | dec.ecall | dec.sync)),
            sched.x_ctx.eq(x_ctx),
            sched.x_state.eq(new_state),
        ]

        # pc, CSR, per-context and tile retire counters.
        next_pc = Mux(jump, target, pc_plus4)
        retired = Signal(64)
        macs = Signal(64)
        m.d.comb += [self.dbg_retired_tile.eq(retired), self.dbg_macs.eq(macs)]
        with m.If(start):
            for i in range(T):
                m.d.sync += [pcs[i].eq(self.entry), ctx_retired[i].eq(0)]
            m.d.sync += [xprog.eq(0), retired.eq(0), macs.eq(0)]
        with m.Elif(x_retire):
            m.d.sync += [
                pcs[x_ctx].eq(next_pc),
                ctx_retired[x_ctx].eq(ctx_retired[x_ctx] + 1),
                retired.eq(retired + 1),
            ]
            with m.If(dec.dot4):
                m.d.sync += macs.eq(macs + MACS_PER_DOT4)
            with m.If(dec.csr & csr.xprog_we):
                m.d.sync += xprog.eq(csr.xprog_wdata)

        # Cycle-class counters (§8): class of cycle k, added in cycle k+3 if count_commit.
        cls_pipe = [sched.cls]
        for n in range(3):
            q = Signal(2, name=f"cls_q{n + 1}")
            m.d.sync += q.eq(cls_pipe[-1])
            cls_pipe.append(q)
        counters = {
            CycleClass.COMPUTE: self.dbg_compute, CycleClass.SYNC: self.dbg_sync,
            CycleClass.EXCHANGE: self.dbg_exchange, CycleClass.HALTED: self.dbg_halted,
        }
        for cls_value, port in counters.items():
            reg = Signal(64, name=f"cnt_{CycleClass(cls_value).name.lower()}")
            m.d.comb += port.eq(reg)
            with m.If(start):
                m.d.sync += reg.eq(0)
            with m.Elif(self.count_commit & (cls_pipe[3] == cls_value)):
                m.d.sync += reg.eq(reg + 1)

        # Fault record.
        rec_valid = Signal()
        rec_ctx = Signal(cb)
        rec_cause = Signal(5)
        rec_pc = Signal(32)
        rec_addr = Signal(32)
        with m.If(start):
            m.d.sync += rec_valid.eq(0)
        with m.Elif(x_fault & ~rec_valid):
            m.d.sync += [rec_valid.eq(1), rec_ctx.eq(x_ctx), rec_cause.eq(cause),
                         rec_pc.eq(x_pc), rec_addr.eq(faddr)]
        m.d.comb += [
            self.dbg_fault_valid.eq(rec_valid), self.dbg_fault_context.eq(rec_ctx),
            self.dbg_fault_cause.eq(rec_cause), self.dbg_fault_pc.eq(rec_pc),
            self.dbg_fault_addr.eq(rec_addr),
        ]

        # ---- X -> W -------------------------------------------------------------------
        w_valid = Signal()
        w_ctx = Signal(cb)
        w_pc = Signal(32)
        w_insn = Signal(32)
        w_rd = Signal(5)
        w_value = Signal(32)
        w_load = Signal()
        w_funct3 = Signal(3)
        w_addr_lo = Signal(2)
        w_st_mask = Signal(4)
        w_st_addr = Signal(32)
        w_st_data = Signal(32)
        m.d.sync += [
            w_valid.eq(x_retire & ~start),
            w_ctx.eq(x_ctx), w_pc.eq(x_pc), w_insn.eq(x_insn),
            w_rd.eq(Mux(dec.writes_rd, dec.rd, 0)),
            w_value.eq(result), w_load.eq(dec.load), w_funct3.eq(dec.funct3),
            w_addr_lo.eq(lsu.addr[0:2]),
            w_st_mask.eq(Mux(dec.store, lsu.mask, 0)),
            w_st_addr.eq(Cat(0, 0, lsu.addr[2:32])),
            w_st_data.eq(Mux(dec.store, lsu.wdata, 0)),
        ]

        # ---- W ------------------------------------------------------------------------
        w_data = Signal(32)
        m.d.comb += [
            ldalign.word.eq(self.m_rdata), ldalign.addr_lo.eq(w_addr_lo),
            ldalign.funct3.eq(w_funct3),
            w_data.eq(Mux(w_load, ldalign.value, w_value)),
            regs.clear.eq(start),
            regs.w_en.eq(w_valid & (w_rd != 0)),
            regs.w_ctx.eq(w_ctx), regs.w_addr.eq(w_rd), regs.w_data.eq(w_data),
        ]
        m.d.comb += [
            self.trace_valid.eq(w_valid),
            self.trace_context.eq(w_ctx),
            self.trace_pc.eq(w_pc),
            self.trace_insn.eq(w_insn),
            self.trace_rd.eq(w_rd),
            self.trace_value.eq(Mux(w_rd != 0, w_data, 0)),
            self.trace_st_mask.eq(w_st_mask),
            self.trace_st_addr.eq(Mux(w_st_mask != 0, w_st_addr, 0)),
            self.trace_st_data.eq(w_st_data),
        ]

        # ---- debug --------------------------------------------------------------------
        states = Array(sched.states[i] for i in range(T))
        m.d.comb += [
            self.dbg_state.eq(states[self.dbg_ctx]),
            self.dbg_pc.eq(pcs[self.dbg_ctx]),
            self.dbg_retired.eq(ctx_retired[self.dbg_ctx]),
            regs.dbg_ctx.eq(self.dbg_ctx), regs.dbg_addr.eq(self.dbg_reg),
            self.dbg_x.eq(regs.dbg_data),
        ]
        return m
