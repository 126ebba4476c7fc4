"""The Tessera core: T barrel contexts, RV32IM + Zicsr subset + dot4/sync, F-D-X-W.

Cycle-exact to docs/architecture.md §3-§8; ports in docs/rtl.md ("Core ↔ tile").

Pipeline of an instruction issued at cycle t by context c = t mod T:

* F (t): ``fetch.en``/``fetch.addr`` = pc of c (fetch faults are decided here, reported
  in X).
* D (t+1): ``fetch.data`` arrives; its rs1/rs2/rd fields address the register file's
  synchronous read ports (so the register values arrive in X).
* X (t+2): decode, execute, next pc, load/store request (``mem``; stores write the SRAM
  at the end of this cycle), CSR access, fault / state change (visible from t+3),
  retired/macs counters.
* W (t+3): load data (``mem.rdata``) aligned and extended; register write; ``trace``.

The stage registers ``d`` and ``x`` hold the instruction's issue record (:func:`issue_layout`:
context, pc, fetch-fault flags, issue cycle); ``w`` holds what W needs (:func:`w_layout`).

A division (DIV/DIVU/REM/REMU) goes through this pipeline in each of its DIV_TURNS turns;
:mod:`.divider` keeps its per-context state, and only the last turn retires (§4, "Division").
``Variant(divider=False)`` (:mod:`tessera.hdl.variant`) builds the synthesis what-if without
division hardware instead (:class:`.divider.NoDivider`, not the contract design).

Tile counters (§8): the class of cycle k (compute/sync/exchange/halted, from the visible
states and ``in_exchange`` at k) goes through a 3-stage delay line and is added in cycle
k+3 only if ``count_commit`` is high then; the array drives ``count_commit`` in cycle p
exactly when p-3 is one of the run's cycles 0..C-1 (docs/rtl.md). So the counters hold
exactly cycles 0..C-1 although the end of the run is learnt up to 3 cycles late.

The core reports a fault in X on ``fault`` and keeps no record of it: the tile's one fault
record (:class:`tessera.hdl.tile.fault_record.FaultRecord`) holds the first fault.
"""

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.faults import FaultCause
from tessera.spec.instructions import CSR, FUNCT3_DIV_BIT, OPCODE, RD, RS1, RS2, Opcode
from tessera.spec.isa import MACS_PER_DOT4
from tessera.spec.result import ContextState
from tessera.spec.timing import COMMIT_DELAY

from ...interfaces import (DebugSignature, FaultSignature, FetchSignature, MatrixEngineSignature,
                           MemorySignature, TraceSignature)
from ...variant import CONTRACT, Variant
from .alu import Alu, BranchCmp
from .csr import CsrUnit
from .decoder import Decoder
from .dot4 import Dot4
from .lsu import LoadAlign, LsuAddr
from .divider import Divider, NoDivider
from .mul import Multiplier
from .regfile import RegFile
from .scheduler import CycleClass, Scheduler
from ...interfaces import check_config

__all__ = ["Core", "CoreSignature", "issue_layout", "w_layout"]


class CoreSignature(wiring.Signature):
    """The ports of a :class:`Core` (docs/rtl.md "Core ↔ tile"); also used by test stubs.

    Parameters
    ----------
    config : ArrayConfig
        Gives ``context_bits``.

    Members
    -------
    start, entry, run, kill, cycle, count_commit : In
        Run control (see :class:`Core`).
    fetch : Out(FetchSignature())
    mem : Out(MemorySignature())
    arrive, all_halted, halting, xprog : Out ; resume, in_exchange : In
        Barriers and exchange.
    fault : Out(FaultSignature(config))
        The fault of the instruction in X (``xchg`` = 0), else the matrix engine's.
    eng : Out(MatrixEngineSignature(config))
        The matrix engine (``mrun`` accept, busy, counters, engine fault).
    dbg : In(DebugSignature(config))
        Host read-back.
    trace : Out(TraceSignature(config))
        Retire trace (W stage).

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("CoreSignature", config)
        super().__init__({
            # control
            "start": In(1), "entry": In(32), "run": In(1), "kill": In(1), "cycle": In(64),
            "count_commit": In(1),
            # memories
            "fetch": Out(FetchSignature()), "mem": Out(MemorySignature()),
            # barriers / exchange
            "arrive": Out(1), "resume": In(1), "in_exchange": In(1), "xprog": Out(32),
            "all_halted": Out(1), "halting": Out(1),
            # fault in X this cycle; host read-back; retire trace (W stage)
            "fault": Out(FaultSignature(config)),
            "eng": Out(MatrixEngineSignature(config)),
            "dbg": In(DebugSignature(config)),
            "trace": Out(TraceSignature(config)),
        })

    def __eq__(self, other):
        return type(other) is type(self) and other.config == self.config

    def __repr__(self):
        return f"CoreSignature({self.config!r})"


def issue_layout(context_bits: int) -> data.StructLayout:
    """The issue record carried by the F, D and X stages: context, pc, fetch misaligned /
    out of range (decided in F, reported in X), issue cycle."""
    return data.StructLayout({"ctx": context_bits, "pc": 32, "misaligned": 1, "range": 1,
                              "cycle": 64})


def w_layout(context_bits: int) -> data.StructLayout:
    """The X → W stage register: what W needs for the register write and the trace."""
    return data.StructLayout({
        "ctx": context_bits, "pc": 32, "insn": 32, "rd": 5, "value": 32, "load": 1,
        "funct3": 3, "addr_lo": 2, "st_mask": 4, "st_addr": 32, "st_data": 32})


class Core(wiring.Component):
    """Barrel-threaded RV32IM core of one tile.

    Parameters
    ----------
    config : ArrayConfig
        Array configuration (T contexts, ``sram_bytes``, N for the CSRs).
    tile_id : int
        This tile's index 0..N-1 (CSR ``tile_id``).
    variant : Variant, keyword-only
        :data:`tessera.hdl.variant.CONTRACT` (default), or a synthesis what-if.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`~tessera.spec.config.ArrayConfig` or ``variant`` not
        a :class:`~tessera.hdl.variant.Variant`.
    ValueError
        If ``tile_id`` is not in ``0..config.tiles-1``.

    Notes
    -----
    Ports (:class:`CoreSignature`, all in the ``sync`` domain; widths for ``context_bits`` = cb):

    start, entry[32]
        Pulse in the cycle before cycle 0: every context RUNNING with pc = ``entry``,
        x1..x31 = 0, per-context retired = 0, xprog = 0, counters cleared, pipeline
        emptied.
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
    fetch.en, fetch.addr[32] / fetch.data[32]
        Fetch request (word-aligned byte address inside the SRAM) / word, next cycle.
    mem.re, mem.we[4], mem.addr[32], mem.wdata[32] / mem.rdata[32]
        Data access in X: ``mem.addr`` is the byte address A (the SRAM uses its word
        index), ``mem.we`` the byte enables, ``mem.wdata`` the data already in its lanes.
        Load word on ``mem.rdata`` the next cycle. A store writes at the end of X.
    arrive, resume, in_exchange, xprog[32]
        ARRAY barrier (§5): arrived condition of the contexts; pulse in cycle e
        (WAIT_ARRAY → RUNNING from e+1); exchange phase (counters); the xprog CSR.
    all_halted, halting
        Every context HALTED; every context HALTED or halting by the ecall in X
        this cycle (lets the array detect the run's last ``ecall`` in its X cycle).
    fault.valid, fault.context[cb], fault.cause, fault.pc[32], fault.addr[32]
        A fault decided in X this cycle (issue cycle = ``cycle`` - 2); ``fault.xchg`` = 0.
    dbg.ctx[cb] -> dbg.state, dbg.pc[32], dbg.retired[64]
        Combinational per-context read (state is a ContextState).
    dbg.ctx[cb], dbg.reg[5] -> dbg.x[32]
        Register read, data in the next cycle (exit code = x10 of a HALTED context).
    dbg.counters.{compute, sync, exchange, halted, retired, macs} [64]
        Tile counters (§8); retired/macs count at X of each retired instruction.
    trace.*
        Retire trace in W (issue cycle + 3): ``trace.valid`` for every retired
        instruction; ``trace.rd`` = 0 and ``trace.value`` = 0 when no register is
        written; ``trace.st_mask`` ≠ 0 for a store, with ``trace.st_addr`` = A & ~3 and
        ``trace.st_data`` the lane-aligned data (as written to the SRAM word).
    """

    def __init__(self, config: ArrayConfig, tile_id: int, *, variant: Variant = CONTRACT):
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise TypeError(f"Core: config must be an ArrayConfig, not {config!r}")
        if not isinstance(tile_id, int) or isinstance(tile_id, bool) \
                or not 0 <= tile_id < config.tiles:
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise ValueError(
                f"Core: tile_id must be an int in 0..{config.tiles - 1}, not {tile_id!r}")
        if not isinstance(variant, Variant):
            self._MustUse__silence = True  # no 'unused elaboratable' warning on bad input
            raise TypeError(f"Core: variant must be a Variant, not {variant!r}")
        self.config = config
        self.tile_id = tile_id
        self.variant = variant
        super().__init__(CoreSignature(config))

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        T = cfg.contexts
        cb = cfg.context_bits
        S = ContextState
        F = FaultCause

        m.submodules.sched = sched = Scheduler(cfg)
        m.submodules.regs = regs = RegFile(cfg)
        m.submodules.dec = dec = Decoder(engine=cfg.engine_macs > 0)
        m.submodules.alu = alu = Alu()
        m.submodules.bcmp = bcmp = BranchCmp()
        m.submodules.mul = mul = Multiplier()
        m.submodules.div = div = (Divider if self.variant.divider else NoDivider)(cfg)
        m.submodules.dot4 = dot4 = Dot4()
        m.submodules.lsu = lsu = LsuAddr(cfg)
        m.submodules.ldalign = ldalign = LoadAlign()
        m.submodules.csr = csr = CsrUnit(cfg, self.tile_id)

        start = self.start
        kill = self.kill
        counters = self.dbg.counters

        # ---- architectural state ------------------------------------------------------
        pcs = Array(Signal(32, name=f"pc{i}") for i in range(T))
        ctx_retired = Array(Signal(64, name=f"retired{i}") for i in range(T))
        slimits = Array(Signal(32, name=f"stack_limit{i}") for i in range(T))
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
        issue = issue_layout(cb)
        f = Signal(issue)
        f_valid = sched.issue
        m.d.comb += [
            f.ctx.eq(sched.slot),
            f.pc.eq(pcs[f.ctx]),
            f.misaligned.eq(f.pc[0:2] != 0),
            f.range.eq(f.pc >= cfg.sram_bytes),
            f.cycle.eq(self.cycle),
            self.fetch.en.eq(f_valid & ~f.misaligned & ~f.range),
            self.fetch.addr.eq(f.pc),
        ]

        # ---- F -> D -------------------------------------------------------------------
        d_valid = Signal()
        d = Signal(issue)
        m.d.sync += [d_valid.eq(f_valid & ~kill & ~start), d.eq(f)]

        # ---- D: register reads addressed by the arriving instruction word --------------
        d_insn = self.fetch.data
        m.d.comb += [
            regs.r_ctx.eq(d.ctx),
            regs.r_addr1.eq(d_insn[RS1.slice]),
            regs.r_addr2.eq(d_insn[RS2.slice]),
            regs.r_addr3.eq(d_insn[RD.slice]),
            div.r_ctx.eq(d.ctx),
        ]

        # ---- D -> X -------------------------------------------------------------------
        x_valid = Signal()
        x = Signal(issue)
        x_insn = Signal(32)
        m.d.sync += [x_valid.eq(d_valid & ~kill & ~start), x.eq(d), x_insn.eq(d_insn)]

        # ---- X ------------------------------------------------------------------------
        rs1v, rs2v, rdv = regs.r_data1, regs.r_data2, regs.r_data3
        imm = dec.imm
        m.d.comb += [
            dec.insn.eq(x_insn),
            alu.a.eq(rs1v), alu.b.eq(Mux(dec.op_imm, imm, rs2v)),
            alu.funct3.eq(dec.funct3), alu.alt.eq(dec.alu_alt),
            bcmp.a.eq(rs1v), bcmp.b.eq(rs2v), bcmp.funct3.eq(dec.funct3),
            mul.a.eq(rs1v), mul.b.eq(rs2v), mul.funct3.eq(dec.funct3[0:FUNCT3_DIV_BIT]),
            div.a.eq(rs1v), div.b.eq(rs2v), div.insn.eq(x_insn), div.ctx.eq(x.ctx),
            dot4.a.eq(rs1v), dot4.b.eq(rs2v), dot4.acc.eq(rdv), dot4.su.eq(dec.dot4_su),
            lsu.base.eq(rs1v), lsu.offset.eq(imm), lsu.funct3.eq(dec.funct3),
            lsu.wdata_in.eq(rs2v),
            csr.csr.eq(x_insn[CSR.slice]), csr.funct3.eq(dec.funct3), csr.rs1.eq(dec.rs1),
            csr.rs1_value.eq(rs1v), csr.cycle.eq(x.cycle), csr.instret.eq(ctx_retired[x.ctx]),
            csr.context.eq(x.ctx), csr.xprog.eq(xprog), csr.slimit.eq(slimits[x.ctx]),
        ]

        pc_plus4 = Signal(32)
        m.d.comb += pc_plus4.eq(x.pc + 4)
        target = Signal(32)
        jump = Signal()   # control transfer (JAL, JALR, taken branch)
        with m.If(dec.jalr):
            m.d.comb += target.eq((rs1v + imm) & ~1)
        with m.Else():
            m.d.comb += target.eq(x.pc + imm)
        m.d.comb += jump.eq(dec.jal | dec.jalr | (dec.branch & bcmp.taken))

        is_div = Signal()
        m.d.comb += is_div.eq(dec.muldiv & dec.funct3[FUNCT3_DIV_BIT])
        result = Signal(32)
        with m.If(dec.lui):
            m.d.comb += result.eq(imm)
        with m.Elif(dec.auipc):
            m.d.comb += result.eq(x.pc + imm)
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

        # §7 stack limit: a non-load instruction writing sp below the context's stack_limit
        # (a division only in its executing turn).
        sp_over = Signal()
        m.d.comb += sp_over.eq(dec.writes_rd & ~dec.load & (dec.rd == 2)
                               & (result < slimits[x.ctx])
                               & ~(dec.muldiv & dec.funct3[FUNCT3_DIV_BIT] & ~div.last))

        # Fault decision (priority order of docs/architecture.md §2, §3, §7).
        fault = Signal()
        cause = Signal(FaultCause)
        faddr = Signal(32)
        with m.If(x.misaligned):
            m.d.comb += [fault.eq(1), cause.eq(F.MISALIGNED_FETCH), faddr.eq(x.pc)]
        with m.Elif(x.range):
            m.d.comb += [fault.eq(1), cause.eq(F.ACCESS_FAULT_FETCH), faddr.eq(x.pc)]
        with m.Elif(~dec.legal | (dec.csr & ~csr.legal)):
            m.d.comb += [fault.eq(1), cause.eq(F.ILLEGAL_INSTRUCTION), faddr.eq(x_insn)]
        with m.Elif(dec.ebreak):
            m.d.comb += [fault.eq(1), cause.eq(F.BREAKPOINT), faddr.eq(x.pc)]
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
        with m.Elif(sp_over):
            m.d.comb += [fault.eq(1), cause.eq(F.STACK_OVERFLOW), faddr.eq(result)]

        # A division retires only in its last turn (§4, "Division"); its earlier turns have
        # no architectural effect.
        div_wait = is_div & ~div.last
        m.d.comb += [
            div.start.eq(start), div.issue.eq(x_valid & ~fault),
            div.is_div.eq(is_div),
        ]

        # mrun / mwait retry while the matrix engine is busy (§12), like a division turn.
        eng = self.eng
        eng_wait = dec.engine & eng.busy

        x_fault = Signal()
        x_retire = Signal()
        e_fault = Signal()     # the engine's fault is taken (no instruction fault on the tile)
        m.d.comb += [
            x_fault.eq(x_valid & fault),
            x_retire.eq(x_valid & ~fault & ~div_wait & ~eng_wait),
            e_fault.eq(eng.fault.valid & ~x_fault & ~start),
            self.fault.valid.eq(x_fault | e_fault),
            self.fault.xchg.eq(0),
            self.fault.context.eq(Mux(x_fault, x.ctx, eng.fault.context)),
            self.fault.cause.eq(Mux(x_fault, cause, eng.fault.cause)),
            self.fault.pc.eq(Mux(x_fault, x.pc, eng.fault.pc)),
            self.fault.addr.eq(Mux(x_fault, faddr, eng.fault.addr)),
            eng.x_mem.eq(x_valid & ((x_insn[OPCODE.slice] == Opcode.LOAD)
                                    | (x_insn[OPCODE.slice] == Opcode.STORE))),
            eng.accept.eq(x_retire & dec.engine & ~dec.mwait & ~start),
            eng.desc.eq(rs1v), eng.ctx.eq(x.ctx), eng.pc.eq(x.pc),
        ]

        # Memory request. ``x_retire & dec.load`` / ``x_retire & dec.store``, written without
        # the faults and waits a load or store cannot have (the decoder's classes are one-hot
        # by opcode: a LOAD/STORE word is no jump, CSR, ebreak, division or engine
        # instruction, and writes no rd for the stack-limit check): the same values, but the
        # SRAM's port-B address and write enables no longer wait for the ALU, multiplier,
        # dot4 and the stack-limit compare (docs/synthesis.md, "The clock").
        mem_fault = x.misaligned | x.range | ~dec.legal | lsu.misaligned | lsu.out_of_range
        x_load = Signal()
        x_store = Signal()
        m.d.comb += [x_load.eq(x_valid & dec.load & ~mem_fault),
                     x_store.eq(x_valid & dec.store & ~mem_fault)]
        m.d.comb += [
            self.mem.re.eq(x_load),
            self.mem.we.eq(Mux(x_store, lsu.mask, 0)),
            self.mem.addr.eq(lsu.addr),
            self.mem.wdata.eq(lsu.wdata),
        ]

        # State change (visible from t+3).
        new_state = Signal(ContextState)
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
            sched.x_ctx.eq(x.ctx),
            sched.x_state.eq(new_state),
            sched.e_set.eq(e_fault), sched.e_ctx.eq(eng.fault.context),
        ]

        # pc, CSR, per-context and tile retire counters.
        next_pc = Mux(jump, target, pc_plus4)
        retired = Signal(64)
        macs = Signal(64)
        eng_macs = Signal(8)
        m.d.comb += [counters.retired.eq(retired), counters.macs.eq(macs)]
        with m.If(start):
            for i in range(T):
                m.d.sync += [pcs[i].eq(self.entry), ctx_retired[i].eq(0), slimits[i].eq(0)]
            m.d.sync += [xprog.eq(0), retired.eq(0), macs.eq(0)]
        with m.Else():
            with m.If(x_retire):
                m.d.sync += [
                    pcs[x.ctx].eq(next_pc),
                    ctx_retired[x.ctx].eq(ctx_retired[x.ctx] + 1),
                    retired.eq(retired + 1),
                ]
                with m.If(dec.csr & csr.xprog_we):
                    m.d.sync += xprog.eq(csr.wdata)
                with m.If(dec.csr & csr.slimit_we):
                    m.d.sync += slimits[x.ctx].eq(csr.wdata)
            with m.If(e_fault):          # the engine's context c_e ends at the mrun's pc
                m.d.sync += pcs[eng.fault.context].eq(eng.fault.pc)
            m.d.sync += macs.eq(macs + Mux(x_retire & dec.dot4, MACS_PER_DOT4, 0) + eng_macs)

        # Engine counters (§8, §12): the busy cycle k and the MACs of its stream step are
        # added in k+3 if count_commit (k belongs to the run), like the cycle classes.
        busy_pipe = [eng.active]
        emacs_pipe = [eng.macs]
        for n in range(COMMIT_DELAY):
            bq = Signal(name=f"eng_busy_q{n + 1}")
            mq = Signal(8, name=f"eng_macs_q{n + 1}")
            m.d.sync += [bq.eq(busy_pipe[-1] & ~start), mq.eq(Mux(start, 0, emacs_pipe[-1]))]
            busy_pipe.append(bq)
            emacs_pipe.append(mq)
        m.d.comb += eng_macs.eq(Mux(self.count_commit, emacs_pipe[COMMIT_DELAY], 0))
        eng_cnt = Signal(64)
        m.d.comb += counters.engine.eq(eng_cnt)
        with m.If(start):
            m.d.sync += eng_cnt.eq(0)
        with m.Elif(self.count_commit & busy_pipe[COMMIT_DELAY]):
            m.d.sync += eng_cnt.eq(eng_cnt + 1)

        # Cycle-class counters (§8): class of cycle k, added in cycle k+3 if count_commit.
        cls_pipe = [sched.cls]
        for n in range(COMMIT_DELAY):
            q = Signal(CycleClass, name=f"cls_q{n + 1}")
            m.d.sync += q.eq(cls_pipe[-1])
            cls_pipe.append(q)
        class_counters = {
            CycleClass.COMPUTE: counters.compute, CycleClass.SYNC: counters.sync,
            CycleClass.EXCHANGE: counters.exchange, CycleClass.HALTED: counters.halted,
        }
        for cls_value, port in class_counters.items():
            reg = Signal(64, name=f"cnt_{CycleClass(cls_value).name.lower()}")
            m.d.comb += port.eq(reg)
            with m.If(start):
                m.d.sync += reg.eq(0)
            with m.Elif(self.count_commit & (cls_pipe[COMMIT_DELAY] == cls_value)):
                m.d.sync += reg.eq(reg + 1)

        # ---- X -> W -------------------------------------------------------------------
        w_valid = Signal()
        w = Signal(w_layout(cb))
        m.d.sync += [
            w_valid.eq(x_retire & ~start),
            w.ctx.eq(x.ctx), w.pc.eq(x.pc), w.insn.eq(x_insn),
            w.rd.eq(Mux(dec.writes_rd, dec.rd, 0)),
            w.value.eq(result), w.load.eq(dec.load), w.funct3.eq(dec.funct3),
            w.addr_lo.eq(lsu.addr[0:2]),
            w.st_mask.eq(Mux(dec.store, lsu.mask, 0)),
            w.st_addr.eq(Cat(0, 0, lsu.addr[2:32])),
            w.st_data.eq(Mux(dec.store, lsu.wdata, 0)),
        ]

        # ---- W ------------------------------------------------------------------------
        w_data = Signal(32)
        m.d.comb += [
            ldalign.word.eq(self.mem.rdata), ldalign.addr_lo.eq(w.addr_lo),
            ldalign.funct3.eq(w.funct3),
            w_data.eq(Mux(w.load, ldalign.value, w.value)),
            regs.clear.eq(start),
            regs.w_en.eq(w_valid & (w.rd != 0)),
            regs.w_ctx.eq(w.ctx), regs.w_addr.eq(w.rd), regs.w_data.eq(w_data),
        ]
        m.d.comb += [
            self.trace.valid.eq(w_valid),
            self.trace.context.eq(w.ctx),
            self.trace.pc.eq(w.pc),
            self.trace.insn.eq(w.insn),
            self.trace.rd.eq(w.rd),
            self.trace.value.eq(Mux(w.rd != 0, w_data, 0)),
            self.trace.st_mask.eq(w.st_mask),
            self.trace.st_addr.eq(Mux(w.st_mask != 0, w.st_addr, 0)),
            self.trace.st_data.eq(w.st_data),
        ]

        # ---- debug --------------------------------------------------------------------
        states = Array(sched.states[i] for i in range(T))
        m.d.comb += [
            self.dbg.state.eq(states[self.dbg.ctx]),
            self.dbg.pc.eq(pcs[self.dbg.ctx]),
            self.dbg.retired.eq(ctx_retired[self.dbg.ctx]),
            regs.dbg_ctx.eq(self.dbg.ctx), regs.dbg_addr.eq(self.dbg.reg),
            self.dbg.x.eq(regs.dbg_data),
        ]
        return m
