"""The Tessera core: T barrel contexts, RV32IM + Zicsr subset + dot4/sync, F-I-R-X-M-W.

Cycle-exact to docs/architecture.md §3-§8 (contract v2); ports in docs/rtl.md ("Core ↔ tile").
The stage offsets are :class:`tessera.spec.timing.Stage`; the stage table and its reasons are in
docs/design/contract-v2.md §1. Pipeline of an instruction issued at cycle t by context
c = t mod T (T >= 6, so the instruction has left W before c issues again: no forwarding, no
interlock):

* F (t): ``fetch.en``/``fetch.addr`` = pc of c (read from the pc registers one cycle ahead,
  so a register drives the SRAM address); the fetch-fault flags are decided here and carried
  to M. The fetch port is a synchronous, not write-transparent read: the word is the SRAM as
  after the writes of cycles < t (stores issued <= t - ``FETCH_STORE_DELAY``).
* I (t+1): ``fetch.data`` arrives; its rs1/rs2/rd fields address the register file's
  synchronous read ports; the word and the CSR cycle half are registered.
* R (t+2): decode of the registered word; the register values arrive; operand select
  (immediate or rs2); the divider's state row is addressed. Everything is registered for X
  (the multiplier's input registers).
* X (t+3): ALU (without shifts), branch compare, jump target, next pc, load/store address
  and store lanes, dot4's products and pairwise sums, the multiplier's partial products (also
  of a shift: R replaced rs2 by the power of two of :mod:`.shift`), the first half of a
  division turn's steps, the CSR read
  (every CSR but ``xprog`` already has its M-time value: cycle and the ids are constants of
  the instruction, instret and stack_limit change only by the context's own earlier
  instructions, which completed >= T - 5 cycles ago), the stack-limit qualifiers.
* M (t+4): every data-memory effect (store write, load read), the range check, the stack-limit
  compare, the ``xprog`` CSR read (W's write bypassed) and every CSR write, the second half
  of the division steps, the multiplier's sum (the result of a multiplication or a shift),
  the fault and the state change (visible from t + ``STATE_VISIBLE_DELAY``), the pc, stack_limit and xprog writes decided (made in W), the
  matrix-engine command (``mrun``/``mwait``), dot4's sum with the old rd.
* W (t+5): pc, stack_limit and xprog writes (the pc bypassed into the fetch address of the
  context's next issue, xprog into M's read); retire counters; the load word registered.
* V (t+6): load data aligned and extended; register write; ``trace``.

A division goes through this pipeline in each of its DIV_TURNS turns; :mod:`.divider` keeps its
per-context state, and only the last turn retires (§4, "Division"). ``Variant(divider=False)``
(:mod:`tessera.hdl.variant`) builds the synthesis what-if without division hardware instead
(:class:`.divider.NoDivider`, not the contract design).

Tile counters (§8): the class of cycle k (compute/sync/exchange/halted, from the visible states
and ``in_exchange`` at k) is added in cycle k when ``run`` is high (k is one of the run's
cycles 0..C-1: in v2 the run's end is known in its last cycle t_s = C - 1, so no delay line).
``retired``/``macs`` count in W of each retired instruction (also after t_s, for the
instructions issued up to t_s).

The core reports a fault in M on ``fault`` and the matrix engine's on ``efault`` (the engine's
registered data-check fault, visible in the cycle it arrives, with ``fault_now``), apart, and
keeps no record of them: the tile's one fault record
(:class:`tessera.hdl.tile.fault_record.FaultRecord`) decides which one it holds.
"""

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.faults import FaultCause
from tessera.spec.instructions import CSR, FUNCT3_DIV_BIT, OPCODE, RD, RS1, RS2, Opcode
from tessera.spec.isa import MACS_PER_DOT4
from tessera.spec.result import ContextState

from ...interfaces import (DebugSignature, FaultSignature, FetchSignature, MatrixEngineSignature,
                           MemorySignature, TraceSignature)
from ...variant import CONTRACT, Variant
from ...compare import at_least
from .alu import Alu, BranchCmp
from .counter import SplitCounter
from .csr import CsrUnit
from .decoder import Decoder
from .dot4 import Dot4
from .lsu import LoadAlign, LsuAddr
from .divider import Divider, NoDivider
from .mul import Multiplier
from .regfile import RegFile
from .shift import ShiftOperand
from .scheduler import CycleClass, Scheduler
from ...interfaces import check_config

__all__ = ["Core", "CoreSignature", "issue_layout", "w_layout", "decode_layout"]

#: The one bit of the CSR number that tells ``cycleh`` from ``cycle`` (the I stage keeps only
#: the half of the issue cycle that a CSR read can return).
_CYCLE_HALF = (int(Csr.CYCLEH) ^ int(Csr.CYCLE)).bit_length() - 1
assert int(Csr.CYCLEH) ^ int(Csr.CYCLE) == 1 << _CYCLE_HALF
assert (int(Csr.INSTRETH) ^ int(Csr.INSTRET)) == 1 << _CYCLE_HALF


class CoreSignature(wiring.Signature):
    """The ports of a :class:`Core` (docs/rtl.md "Core ↔ tile"); also used by test stubs.

    Parameters
    ----------
    config : ArrayConfig
        Gives ``context_bits``.

    Members
    -------
    start, entry, run, cycle : In
        Run control (see :class:`Core`).
    fetch : Out(FetchSignature())
    mem : Out(MemorySignature())
    arrive, all_halted, xprog : Out ; resume, in_exchange : In
        Barriers and exchange.
    fault : Out(FaultSignature(config))
        The fault of the instruction in M (``xchg`` = 0), decided this cycle, visible from
        the next one.
    efault : Out(FaultSignature(config))
        The matrix engine's fault taken this cycle (never with ``fault`` unless
        ``fault_now``); visible from the next cycle, except with ``fault_now``.
    fault_now : Out(1)
        ``efault`` is the matrix engine's registered data-check fault, visible in this cycle
        (it wins over the instruction in M; see :class:`Core`).
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
            "start": In(1), "entry": In(32), "run": In(1), "cycle": In(64),
            # memories
            "fetch": Out(FetchSignature()), "mem": Out(MemorySignature()),
            # barriers / exchange
            "arrive": Out(1), "resume": In(1), "in_exchange": In(1), "xprog": Out(32),
            "all_halted": Out(1),
            # fault decided in M this cycle; host read-back; retire trace (W stage)
            "fault": Out(FaultSignature(config)), "efault": Out(FaultSignature(config)),
            "fault_now": Out(1),
            "eng": Out(MatrixEngineSignature(config)),
            "dbg": In(DebugSignature(config)),
            "trace": Out(TraceSignature(config)),
        })

    def __eq__(self, other):
        return type(other) is type(self) and other.config == self.config

    def __repr__(self):
        return f"CoreSignature({self.config!r})"


def issue_layout(context_bits: int) -> data.StructLayout:
    """The issue record carried from F to M: context, pc, fetch misaligned / out of range
    (decided in F, reported in M)."""
    return data.StructLayout({"ctx": context_bits, "pc": 32, "misaligned": 1, "range": 1})


def decode_layout(signature: wiring.Signature) -> data.StructLayout:
    """The record of a decoder's outputs: every ``Out`` member of ``signature`` (the
    :class:`.decoder.Decoder`'s), decoded once in R and carried to X and M."""
    return data.StructLayout({name: member.shape for name, member in signature.members.items()
                              if member.flow == wiring.Out})


def w_layout(context_bits: int) -> data.StructLayout:
    """The M → W stage register: what W needs for the register write and the trace."""
    return data.StructLayout({
        "ctx": context_bits, "pc": 32, "insn": 32, "rd": 5, "value": 32, "load": 1, "dot4": 1,
        "funct3": 3, "addr_lo": 2, "st_mask": 4, "st_addr": 32, "st_data": 32})


class Core(wiring.Component):
    """Barrel-threaded RV32IM core of one tile, six stages F-I-R-X-M-W (contract v2).

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
    Ports (:class:`CoreSignature`, all in the ``sync`` domain; widths for ``context_bits`` = cb;
    t is the issue cycle of an instruction, stage offsets :class:`tessera.spec.timing.Stage`):

    start, entry[32]
        Pulse in the cycle before cycle 0: every context RUNNING with pc = ``entry``,
        x1..x31 = 0, per-context retired = 0, stack limits and xprog = 0, division turn
        counters = 0, counters cleared, pipeline emptied.
    run
        Cycle k is one of the run's cycles 0..C-1 (C - 1 = t_s of §7 "Stop", or max_cycles - 1):
        the slot's context may issue, barrier releases (TILE, ``resume``) take effect and the
        cycle is counted. Must be high in every cycle 0..C-1 and low afterwards (the array
        drives it from a register: high in t_s, low from t_s + 1). The issue slot advances
        with it (slot = t mod T). The pipeline keeps clocking after ``run`` drops, so the
        instructions issued at <= t_s complete their I..W stages (§7 "Final state").
    cycle[64]
        Array cycle counter; its value in F is the instruction's issue cycle (CSR cycle).
    fetch.en, fetch.addr[32] / fetch.data[32]
        Fetch request in F (word-aligned byte address inside the SRAM) / word in I. The SRAM
        must answer as after the writes of cycles < t (not write-transparent, §4).
    mem.re, mem.we[4], mem.addr[32], mem.wdata[32] / mem.rdata[32]
        Data access in M (t+4): ``mem.addr`` is the byte address A (the SRAM uses its word
        index), ``mem.we`` the byte enables, ``mem.wdata`` the data already in its lanes. A
        store writes at the end of M; a load reads in M (the SRAM as after the writes of cycles
        < t+4) and its word is on ``mem.rdata`` in W (t+5).
    arrive, resume, in_exchange, xprog[32]
        ARRAY barrier (§5): the arrived condition of the visible states (a ``sync ARRAY``
        issued at t counts from t+5); pulse in cycle e (WAIT_ARRAY → RUNNING from e+1, only
        with ``run``); exchange phase (counters); the xprog CSR (written in M).
    all_halted
        Every context HALTED (visible states: the ``ecall`` issued at t counts from t+5).
        High out of reset (every context is HALTED before the first ``start``).
    fault.valid, fault.context[cb], fault.cause, fault.pc[32], fault.addr[32]
        The fault of the instruction in M decided in this cycle, visible from the next
        (issue cycle t = this cycle - 4, ``xchg`` = 0; its context is FAULT from t+5). The
        fields are the instruction's whether it faults or not (valid with ``fault.valid``).
    efault.*, fault_now
        With ``fault_now`` = 0 the matrix engine's address fault of this cycle, visible
        from the next (§12: an instruction fault of the same cycle wins; the engine fault is
        dropped and ``efault.valid`` is 0). With ``fault_now`` = 1
        the matrix engine's registered fault (``eng.fault_now``: a data check of step s,
        decided in s + 1, registered, presented in s + 2), visible in **this** cycle: it goes
        ahead of the instruction fault decided in M now (visible only from the next cycle;
        that context still enters FAULT) and is dropped when the instruction in M of the
        previous cycle faulted (visible from this cycle too: the instruction's wins, §12).
        c_e reads FAULT in this cycle (the scheduler's ``e_now`` Mux); the tile's fault
        record takes it at the end of this cycle and the tile's ``faulted`` ORs it in.
    eng.*
        Matrix engine (§12, :class:`~tessera.hdl.interfaces.MatrixEngineSignature`): ``m_mem``
        (a LOAD/STORE word in M this cycle), ``accept`` (an ``mrun`` retires in M), ``desc``,
        ``ctx``, ``pc``; ``busy`` is sampled in M (``mrun``/``mwait`` retry while busy);
        ``eng.fault`` in cycle k puts c_e into FAULT from k+1 (with ``eng.fault_now``: from
        k) with pc = pc_e (written at the end of k).
    dbg.ctx[cb] -> dbg.state, dbg.pc[32], dbg.retired[64]
        Combinational per-context read (state is a ContextState). pc and retired only while
        the core is stopped (``run`` low, pipeline drained): they share the pipeline's reads
        of the pcs (F's, with ``run`` low) and of the retire counts (X's, with X empty).
    dbg.ctx[cb], dbg.reg[5] -> dbg.x[32]
        Register read while the core is stopped, data two cycles after the selects (held
        for both cycles; the register file's third port, :class:`.regfile.RegFile`
        ``dbg_en``); the exit code is x10 of a HALTED context.
    dbg.counters.{compute, sync, exchange, halted, retired, macs, engine} [64]
        Tile counters (§8); retired/macs count in W of each retired instruction.
    trace.*
        Retire trace in W (t+5): ``trace.valid`` for every retired instruction;
        ``trace.rd`` = 0 and ``trace.value`` = 0 when no register is written;
        ``trace.st_mask`` ≠ 0 for a store, with ``trace.st_addr`` = A & ~3 and
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
        m.submodules.alu = alu = Alu(shifts=False)      # shifts run on the multiplier
        m.submodules.shiftop = shiftop = ShiftOperand()
        m.submodules.bcmp = bcmp = BranchCmp()
        m.submodules.mul = mul = Multiplier()
        m.submodules.div = div = (Divider if self.variant.divider else NoDivider)(cfg)
        m.submodules.dot4 = dot4 = Dot4()
        m.submodules.lsu = lsu = LsuAddr(cfg)
        m.submodules.ldalign = ldalign = LoadAlign()
        m.submodules.csr = csr = CsrUnit(cfg, self.tile_id)        # X: every CSR's read
        m.submodules.csr_m = csr_m = CsrUnit(cfg, self.tile_id)    # M: xprog (read and write)

        start = self.start
        run = self.run
        counters = self.dbg.counters
        eng = self.eng

        # ---- architectural state ------------------------------------------------------
        pcs = Array(Signal(32, name=f"pc{i}") for i in range(T))
        ctx_retired = Array(Signal(64, name=f"retired{i}") for i in range(T))
        slimits = Array(Signal(32, name=f"stack_limit{i}") for i in range(T))
        xprog = Signal(32)
        m.d.comb += self.xprog.eq(xprog)
        m_xprog = Signal(32)      # xprog as M sees it: W's write of this cycle bypassed

        # ---- scheduler ----------------------------------------------------------------
        m.d.comb += [
            sched.start.eq(start), sched.run.eq(run),
            sched.resume.eq(self.resume), sched.in_exchange.eq(self.in_exchange),
            self.arrive.eq(sched.arrive), self.all_halted.eq(sched.all_halted),
        ]

        # ---- F (t) ----------------------------------------------------------------------
        # The slot's pc is read one cycle ahead (a register feeds the SRAM address): context
        # c's pc is written in W of its previous issue, at the end of t - T + 5 <= t - 1; with
        # T = 6 that is this very cycle, so the W write is bypassed into the fetch address.
        # (The W registers are declared with the M stage below.)
        issue = issue_layout(cb)
        f = Signal(issue)
        f_valid = sched.issue
        f_pc = Signal(32)
        f_pc_next = Signal(32)
        m.d.comb += [
            f.ctx.eq(sched.slot),
            f.pc.eq(f_pc),
            f.misaligned.eq(f.pc[0:2] != 0),
            f.range.eq(at_least(f.pc, cfg.sram_bytes)),
            self.fetch.en.eq(f_valid & ~f.misaligned & ~f.range),
            self.fetch.addr.eq(f.pc),
        ]

        # ---- F -> I -----------------------------------------------------------------------
        i_valid = Signal()
        i = Signal(issue)
        i_cycle = Signal(64)
        m.d.sync += [i_valid.eq(f_valid & ~start), i.eq(f), i_cycle.eq(self.cycle)]

        # ---- I (t+1): register reads addressed by the arriving instruction word -----------
        i_insn = self.fetch.data
        m.d.comb += [
            regs.r_ctx.eq(i.ctx), regs.r_ctx_next.eq(f.ctx),
            regs.r_addr1.eq(i_insn[RS1.slice]),
            regs.r_addr2.eq(i_insn[RS2.slice]),
            regs.r_addr3.eq(i_insn[RD.slice]),
        ]

        # ---- I -> R -----------------------------------------------------------------------
        r_valid = Signal()
        r = Signal(issue)
        r_insn = Signal(32)
        r_cyc = Signal(32)        # the half of the issue cycle a cycle/cycleh read returns
        m.d.sync += [
            r_valid.eq(i_valid & ~start), r.eq(i), r_insn.eq(i_insn),
            r_cyc.eq(Mux(i_insn[CSR.slice][_CYCLE_HALF], i_cycle[32:64], i_cycle[0:32])),
        ]

        # ---- R (t+2): decode, operands, operand select -----------------------------------
        rs1v, rs2v, rdv = regs.r_data1, regs.r_data2, regs.r_data3
        m.d.comb += [dec.insn.eq(r_insn), div.r_ctx.eq(r.ctx)]
        # A shift takes the multiplier (:mod:`.shift`): its power of two replaces rs2 (which
        # a shift does not use otherwise) and its mode MUL's funct3.
        m.d.comb += [shiftop.shamt.eq(Mux(dec.op_imm, dec.imm[0:5], rs2v[0:5])),
                     shiftop.funct3.eq(dec.funct3), shiftop.alt.eq(dec.alu_alt)]

        # ---- R -> X -----------------------------------------------------------------------
        dl = decode_layout(dec.signature)
        x_valid = Signal()
        x = Signal(issue)
        x_insn = Signal(32)
        x_cyc = Signal(32)
        xd = Signal(dl)           # the decoded word
        x_a = Signal(32)          # rs1
        x_rs2 = Signal(32)        # rs2
        x_b = Signal(32)          # ALU operand b: immediate or rs2
        x_acc = Signal(32)        # rd (dot4's accumulator)
        x_mulf = Signal(2)        # the multiplier's mode (a shift's, else MUL's funct3)
        m.d.sync += [
            x_valid.eq(r_valid & ~start), x.eq(r), x_insn.eq(r_insn), x_cyc.eq(r_cyc),
            x_a.eq(rs1v), x_rs2.eq(Mux(dec.shift, shiftop.b, rs2v)),
            x_b.eq(Mux(dec.op_imm, dec.imm, rs2v)), x_acc.eq(rdv),
            x_mulf.eq(Mux(dec.shift, shiftop.mode, dec.funct3[0:FUNCT3_DIV_BIT])),
        ]
        m.d.sync += [xd[name].eq(getattr(dec, name)) for name in dl.members]

        # ---- X (t+3): execute -------------------------------------------------------------
        imm = xd.imm
        m.d.comb += [
            alu.a.eq(x_a), alu.b.eq(x_b), alu.funct3.eq(xd.funct3), alu.alt.eq(xd.alu_alt),
            bcmp.a.eq(x_a), bcmp.b.eq(x_rs2), bcmp.funct3.eq(xd.funct3),
            mul.a.eq(x_a), mul.b.eq(x_rs2), mul.funct3.eq(x_mulf),
            div.a.eq(x_a), div.b.eq(x_rs2), div.x_insn.eq(x_insn), div.x_ctx.eq(x.ctx),
            dot4.a.eq(x_a), dot4.b.eq(x_rs2), dot4.su.eq(xd.dot4_su),
            lsu.base.eq(x_a), lsu.offset.eq(imm), lsu.funct3.eq(xd.funct3),
            lsu.wdata_in.eq(x_rs2),
        ]
        x_is_div = Signal()
        m.d.comb += [x_is_div.eq(xd.muldiv & xd.funct3[FUNCT3_DIV_BIT]),
                     div.x_is_div.eq(x_is_div)]
        # The context's retire count, read in X for the CSR and carried to W, where the
        # count + 1 is written back: the context's previous instruction was counted in W at
        # t - T + 5 <= t - 1, before this X (t + 3), and only W writes the counts, so the
        # write needs no read mux of its own (docs/synthesis.md).
        x_instret = Signal(64)
        m.d.comb += x_instret.eq(ctx_retired[Mux(x_valid, x.ctx, self.dbg.ctx)])
        x_instret_half = Signal(32)
        m.d.comb += x_instret_half.eq(Mux(x_insn[CSR.slice][_CYCLE_HALF], x_instret[32:64],
                                          x_instret[0:32]))
        # CSR read in X: every CSR but xprog has its M-time value already (cycle, ids; instret
        # and stack_limit change only by this context's own earlier instructions); xprog is
        # read and written in M (csr_m), where the other contexts' writes are ordered.
        m.d.comb += [
            csr.csr.eq(x_insn[CSR.slice]), csr.funct3.eq(xd.funct3), csr.rs1.eq(xd.rs1),
            csr.rs1_value.eq(x_a),
            # x_cyc is already the half the CSR number names (I stage), so both halves of
            # the unit's 64-bit input carry it
            csr.cycle.eq(Cat(x_cyc, x_cyc)),
            # likewise the instret half (instret / instreth) is selected before the unit
            csr.instret.eq(Cat(x_instret_half, x_instret_half)),
            # xprog's value read in X is never used (M reads it again: ``sources`` below)
            csr.context.eq(x.ctx), csr.xprog.eq(0), csr.slimit.eq(slimits[x.ctx]),
        ]

        pc_plus4 = Signal(32)
        m.d.comb += pc_plus4.eq(x.pc + 4)
        target = Signal(32)
        jump = Signal()   # control transfer (JAL, JALR, taken branch)
        with m.If(xd.jalr):
            m.d.comb += target.eq((x_a + imm) & ~1)
        with m.Else():
            m.d.comb += target.eq(x.pc + imm)
        m.d.comb += jump.eq(xd.jal | xd.jalr | (xd.branch & bcmp.taken))

        # the results known in X (multiplication, shift, dot4, division and CSR results join
        # in M)
        x_result = Signal(32)
        with m.If(xd.lui):
            m.d.comb += x_result.eq(imm)
        with m.Elif(xd.auipc):
            m.d.comb += x_result.eq(x.pc + imm)
        with m.Elif(xd.jal | xd.jalr):
            m.d.comb += x_result.eq(pc_plus4)
        with m.Elif(xd.dot4):
            m.d.comb += x_result.eq(x_acc)           # the accumulator; dot4's sum in M
        with m.Elif(xd.muldiv):
            m.d.comb += x_result.eq(div.result)      # a division's last turn; MUL in M
        with m.Elif(xd.csr):
            m.d.comb += x_result.eq(csr.rdata)       # xprog: replaced in M
        with m.Else():
            m.d.comb += x_result.eq(alu.result)

        # ---- X -> M -----------------------------------------------------------------------
        m_valid = Signal()
        mm = Signal(issue)
        m_insn = Signal(32)
        m_cyc = Signal(32)
        md = Signal(dl)
        m_a = Signal(32)          # rs1 (CSR source, mrun descriptor address)
        m_xres = Signal(32)
        m_instret = Signal(64)    # the context's retire count as read in X
        m_next_pc = Signal(32)
        m_jump_bad = Signal()     # a control transfer to a target that is not 4-aligned
        m_target = Signal(32)
        m_addr = Signal(32)
        m_lsu_mis = Signal()
        m_lsu_oor = Signal()
        m_mask = Signal(4)
        m_wdata = Signal(32)
        m_div_last = Signal()
        m_sp_check = Signal()     # a non-load writing sp (a division only in its last turn)
        m_slimit = Signal(32)
        m_csr_legal = Signal()
        m_csr_xprog = Signal()    # the CSR is xprog
        m_slimit_we = Signal()
        m_csr_wdata = Signal(32)
        m.d.sync += [
            m_sp_check.eq(xd.writes_rd & ~xd.load & (xd.rd == 2) & ~(x_is_div & ~div.last)),
            m_slimit.eq(slimits[x.ctx]),
            m_csr_legal.eq(csr.legal), m_csr_xprog.eq(x_insn[CSR.slice] == int(Csr.XPROG)),
            m_slimit_we.eq(csr.slimit_we), m_csr_wdata.eq(csr.wdata),
        ]
        m.d.sync += [
            m_valid.eq(x_valid & ~start), mm.eq(x), m_insn.eq(x_insn), m_cyc.eq(x_cyc),
            m_a.eq(x_a), m_xres.eq(x_result), m_instret.eq(x_instret),
            m_next_pc.eq(Mux(jump, target, pc_plus4)),
            m_jump_bad.eq(jump & (target[0:2] != 0)), m_target.eq(target),
            m_addr.eq(lsu.addr), m_lsu_mis.eq(lsu.misaligned), m_lsu_oor.eq(lsu.out_of_range),
            m_mask.eq(lsu.mask), m_wdata.eq(lsu.wdata), m_div_last.eq(div.last),
        ]
        m.d.sync += [md[name].eq(xd[name]) for name in dl.members]
        # The memory request's qualifiers, decided in X from what M would decide them from
        # (the fetch faults, the decoded word, the address checks): a load / store of M
        # without a fault it can have (the decoder's classes are one-hot by opcode: a
        # LOAD/STORE word is no jump, CSR, ebreak, division or engine instruction, and writes
        # no rd for the stack-limit check), so M's port-B enables are a register and ``start``.
        m_ld_ok = Signal()
        m_st_ok = Signal()
        x_mem_ok = (x_valid & ~start & ~x.misaligned & ~x.range & xd.legal
                    & ~lsu.misaligned & ~lsu.out_of_range)
        m.d.sync += [m_ld_ok.eq(x_mem_ok & xd.load), m_st_ok.eq(x_mem_ok & xd.store)]

        # ---- M (t+4): memory, CSR, faults, state change, commit ---------------------------
        # xprog, read in M (W's write bypassed) and written in W (the other CSR inputs of
        # this unit are unused)
        m.d.comb += [
            csr_m.csr.eq(m_insn[CSR.slice]), csr_m.funct3.eq(md.funct3), csr_m.rs1.eq(md.rs1),
            csr_m.rs1_value.eq(m_a), csr_m.xprog.eq(m_xprog),
        ]
        m_is_div = Signal()
        m.d.comb += m_is_div.eq(md.muldiv & md.funct3[FUNCT3_DIV_BIT])
        m.d.comb += dot4.acc.eq(m_xres)
        # M's result sources in priority order (the last one is the default), used for the
        # result and, below, for the stack-limit compare
        sources = [((md.muldiv & ~m_is_div) | md.shift, mul.result), (md.dot4, dot4.result),
                   (md.csr & m_csr_xprog, csr_m.rdata), (None, m_xres)]

        def by_source(out, f):
            """``out`` = f(value) of the first source whose condition holds."""
            for i, (cond, value) in enumerate(sources):
                with (m.Else() if cond is None else m.If(cond) if i == 0 else m.Elif(cond)):
                    m.d.comb += out.eq(f(value))

        result = Signal(32)
        by_source(result, lambda v: v)

        # §7 stack limit: a non-load instruction writing sp below the context's stack_limit
        # (a division only in its executing turn); the qualifiers and the limit come from X.
        # Each result source is compared with the limit in parallel and the comparison is
        # selected like the result, so the compare's carry chain does not follow the result
        # mux on the way to the fault (docs/synthesis.md).
        below = Signal()
        by_source(below, lambda v: v < m_slimit)
        sp_over = Signal()
        m.d.comb += sp_over.eq(m_sp_check & below)

        # Fault decision (priority order of docs/architecture.md §2, §3, §7).
        fault = Signal()
        cause = Signal(FaultCause)
        faddr = Signal(32)
        with m.If(mm.misaligned):
            m.d.comb += [fault.eq(1), cause.eq(F.MISALIGNED_FETCH), faddr.eq(mm.pc)]
        with m.Elif(mm.range):
            m.d.comb += [fault.eq(1), cause.eq(F.ACCESS_FAULT_FETCH), faddr.eq(mm.pc)]
        with m.Elif(~md.legal | (md.csr & ~m_csr_legal)):
            m.d.comb += [fault.eq(1), cause.eq(F.ILLEGAL_INSTRUCTION), faddr.eq(m_insn)]
        with m.Elif(md.ebreak):
            m.d.comb += [fault.eq(1), cause.eq(F.BREAKPOINT), faddr.eq(mm.pc)]
        with m.Elif(md.load & m_lsu_mis):
            m.d.comb += [fault.eq(1), cause.eq(F.MISALIGNED_LOAD), faddr.eq(m_addr)]
        with m.Elif(md.load & m_lsu_oor):
            m.d.comb += [fault.eq(1), cause.eq(F.ACCESS_FAULT_LOAD), faddr.eq(m_addr)]
        with m.Elif(md.store & m_lsu_mis):
            m.d.comb += [fault.eq(1), cause.eq(F.MISALIGNED_STORE), faddr.eq(m_addr)]
        with m.Elif(md.store & m_lsu_oor):
            m.d.comb += [fault.eq(1), cause.eq(F.ACCESS_FAULT_STORE), faddr.eq(m_addr)]
        with m.Elif(m_jump_bad):
            m.d.comb += [fault.eq(1), cause.eq(F.MISALIGNED_FETCH), faddr.eq(m_target)]
        with m.Elif(sp_over):
            m.d.comb += [fault.eq(1), cause.eq(F.STACK_OVERFLOW), faddr.eq(result)]

        # A division retires only in its last turn (§4, "Division"); mrun / mwait retry while
        # the matrix engine is busy in M (§12), like a division turn.
        div_wait = m_is_div & ~m_div_last
        eng_wait = md.engine & eng.busy
        # The divider's row and turn counter are written without the fault decision (the
        # stack-limit compare, the fault priority chain): they are the faulting context's
        # own (one row and counter per context), that context is FAULT until the next
        # start (§7), which clears every turn counter, and a row is read only by a turn
        # whose counter is not 0, so what a faulting turn writes is never read.
        m.d.comb += [div.start.eq(start), div.m_issue.eq(m_valid & ~start)]

        m_fault = Signal()
        m_retire = Signal()
        e_fault = Signal()     # the engine's fault of this cycle is taken (not dropped, §12)
        e_now = Signal()       # the engine's registered fault, visible in this cycle, is taken
        m_fault_q = Signal()   # the instruction in M faulted in the previous cycle
        # Two kinds of engine fault (:class:`~tessera.hdl.tile.matrix_engine.MatrixEngine`):
        # * ``eng.fault`` without ``eng.fault_now``: an address fault of this cycle's step s,
        #   visible from s + 1 like the instruction fault decided in M now, which wins (§12);
        # * ``eng.fault_now``: the engine's registered fault (a data check of step s, decided
        #   in s + 1 and registered: in s + 2; or the address fault of a step s + 1 made after
        #   a data-checked step s, in s + 2), visible in this cycle. The instruction fault
        #   visible in the same cycle is the one decided in M in the previous cycle
        #   (``m_fault_q``): that one wins and the engine fault is dropped (§12). An
        #   instruction fault decided now is visible only from the next cycle: the engine's
        #   is reported (the instruction's context still enters FAULT).
        m.d.sync += m_fault_q.eq(m_fault)
        m.d.comb += [
            m_fault.eq(m_valid & fault & ~start),
            m_retire.eq(m_valid & ~fault & ~div_wait & ~eng_wait & ~start),
            e_fault.eq(eng.fault.valid & ~eng.fault_now & ~m_fault & ~start),
            e_now.eq(eng.fault.valid & eng.fault_now & ~m_fault_q & ~start),
            # the two faults go to the tile's record apart (it decides which one it keeps
            # and takes the fields a cycle later, from registers): no fault decision selects
            # the fields here
            self.fault.valid.eq(m_fault), self.fault.xchg.eq(0),
            self.fault.context.eq(mm.ctx), self.fault.cause.eq(cause),
            self.fault.pc.eq(mm.pc), self.fault.addr.eq(faddr),
            self.efault.valid.eq(e_fault | e_now), self.efault.xchg.eq(0),
            self.efault.context.eq(eng.fault.context), self.efault.cause.eq(eng.fault.cause),
            self.efault.pc.eq(eng.fault.pc), self.efault.addr.eq(eng.fault.addr),
            self.fault_now.eq(e_now),
            # the word in M (any turn, faulting or not; a failed fetch has no word) owns the
            # SRAM's data ports if it is a LOAD or STORE (§12 "Engine cycles")
            eng.m_mem.eq(m_valid & ~mm.misaligned & ~mm.range
                         & ((m_insn[OPCODE.slice] == Opcode.LOAD)
                            | (m_insn[OPCODE.slice] == Opcode.STORE))),
            eng.accept.eq(m_retire & md.engine & ~md.mwait),
            eng.desc.eq(m_a), eng.ctx.eq(mm.ctx), eng.pc.eq(mm.pc),
        ]

        # Memory request: ``m_retire & md.load`` / ``m_retire & md.store``, from the
        # qualifiers registered in X (``m_ld_ok`` / ``m_st_ok``): the same values, but the
        # SRAM's port-B enables and the step window's clock enables behind them depend on
        # one register and ``start`` (the M-stage decode of the qualifiers was the head of
        # the tile's worst path into the window, docs/synthesis.md).
        m_load = Signal()
        m_store = Signal()
        m.d.comb += [m_load.eq(m_ld_ok & ~start), m_store.eq(m_st_ok & ~start)]
        m.d.comb += [
            self.mem.re.eq(m_load),
            self.mem.we.eq(Mux(m_store, m_mask, 0)),
            self.mem.addr.eq(m_addr),
            self.mem.wdata.eq(m_wdata),
        ]

        # State change (visible from t + STATE_VISIBLE_DELAY).
        new_state = Signal(ContextState)
        with m.If(fault):
            m.d.comb += new_state.eq(S.FAULT)
        with m.Elif(md.ecall):
            m.d.comb += new_state.eq(S.HALTED)
        with m.Elif(md.sync_array):
            m.d.comb += new_state.eq(S.WAIT_ARRAY)
        with m.Else():
            m.d.comb += new_state.eq(S.WAIT_TILE)
        m.d.comb += [
            sched.m_set.eq(m_valid & ~start & (fault | md.ecall | md.sync)),
            sched.m_ctx.eq(mm.ctx),
            sched.m_state.eq(new_state),
            sched.e_set.eq(e_fault), sched.e_now.eq(e_now), sched.e_ctx.eq(eng.fault.context),
        ]

        # pc, CSR, per-context and tile retire counters. A context that is FAULT (an engine
        # fault of its mrun while this instruction was in flight) keeps the pc pc_e (§12).
        # The pc, stack_limit and xprog writes are decided in M and registered, and made in W
        # (t+5), so the M-stage fault decision ends in a few registers instead of the
        # 2·32·T + 32 write enables (docs/synthesis.md). Not program-visible: the context's
        # next issue reads its pc in t+T-1 >= t+5 (the F bypass below) and its stack_limit
        # in X (t+T+3); another context's M reads xprog in the next cycle through the W
        # bypass (``m_xprog``), and the exchange engine reads it only while the tile is
        # arrived, t+T+5 or later.
        states = Array(sched.states[n] for n in range(T))
        m_ctx_faulted = states[mm.ctx] == int(S.FAULT)
        w_valid = Signal()        # the M -> W registers (filled below)
        w_instret = Signal(64)    # the context's retire count as read in X
        w = Signal(w_layout(cb))
        w_pc_we = Signal()        # W: pcs[w.ctx] <- w_next_pc
        w_next_pc = Signal(32)
        w_e_we = Signal()         # W: pcs[w_e_ctx] <- w_e_pc (after w_pc_we: it wins)
        w_e_ctx = Signal(cb)
        w_e_pc = Signal(32)
        w_sl_we = Signal()        # W: slimits[w.ctx] <- w_sl
        w_sl = Signal(32)
        w_xp_we = Signal()        # W: xprog <- w_xp
        w_xp = Signal(32)
        m.d.sync += [
            w_pc_we.eq(m_retire & ~m_ctx_faulted), w_next_pc.eq(m_next_pc),
            # the engine's context c_e ends at the mrun's pc
            w_e_we.eq(e_fault | e_now), w_e_ctx.eq(eng.fault.context), w_e_pc.eq(eng.fault.pc),
            w_sl_we.eq(m_retire & md.csr & m_slimit_we), w_sl.eq(m_csr_wdata),
            w_xp_we.eq(m_retire & md.csr & m_csr_xprog & csr_m.xprog_we),
            w_xp.eq(csr_m.wdata),
        ]
        m.d.comb += m_xprog.eq(Mux(w_xp_we, w_xp, xprog))
        with m.If(start):
            for n in range(T):
                m.d.sync += [pcs[n].eq(self.entry), slimits[n].eq(0)]
            m.d.sync += xprog.eq(0)
        with m.Else():
            with m.If(w_xp_we):
                m.d.sync += xprog.eq(w_xp)
            with m.If(w_pc_we):
                m.d.sync += pcs[w.ctx].eq(w_next_pc)
            with m.If(w_e_we):
                m.d.sync += pcs[w_e_ctx].eq(w_e_pc)
            with m.If(w_sl_we):
                m.d.sync += slimits[w.ctx].eq(w_sl)
        # One read of the pcs: the next slot's while the run issues, else the host's context
        # (the host reads a context's pc only while the array is stopped, docs/rtl.md)
        pc_read = Signal(32)
        m.d.comb += pc_read.eq(pcs[Mux(run, sched.next_slot, self.dbg.ctx)])
        # F's fetch address for the next slot, with the W writes of this cycle bypassed
        with m.If(w_e_we & (w_e_ctx == sched.next_slot)):
            m.d.comb += f_pc_next.eq(w_e_pc)
        with m.Elif(w_pc_we & (w.ctx == sched.next_slot)):
            m.d.comb += f_pc_next.eq(w_next_pc)
        with m.Else():
            m.d.comb += f_pc_next.eq(pc_read)
        m.d.sync += f_pc.eq(Mux(start, self.entry, f_pc_next))

        # Engine counter (§8, §12): the busy cycles k of the run (k < C: ``run``). The tile
        # counters are 64-bit SplitCounters (a registered carry into the high half).
        m.submodules.cnt_engine = cnt_engine = SplitCounter()
        m.d.comb += [cnt_engine.clear.eq(start), cnt_engine.inc.eq(run & eng.active),
                     counters.engine.eq(cnt_engine.value)]

        # Cycle-class counters (§8): class of cycle k, added in k if k is one of the run's.
        class_counters = {
            CycleClass.COMPUTE: counters.compute, CycleClass.SYNC: counters.sync,
            CycleClass.EXCHANGE: counters.exchange, CycleClass.HALTED: counters.halted,
        }
        for cls_value, port in class_counters.items():
            cnt = SplitCounter()
            m.submodules[f"cnt_{CycleClass(cls_value).name.lower()}"] = cnt
            m.d.comb += [cnt.clear.eq(start), cnt.inc.eq(run & (sched.cls == cls_value)),
                         port.eq(cnt.value)]

        # ---- M -> W -------------------------------------------------------------------
        m.d.sync += [
            w_valid.eq(m_retire), w.dot4.eq(md.dot4), w_instret.eq(m_instret),
            w.ctx.eq(mm.ctx), w.pc.eq(mm.pc), w.insn.eq(m_insn),
            w.rd.eq(Mux(md.writes_rd, md.rd, 0)),
            w.value.eq(result), w.load.eq(md.load), w.funct3.eq(md.funct3),
            w.addr_lo.eq(m_addr[0:2]),
            w.st_mask.eq(Mux(md.store, m_mask, 0)),
            w.st_addr.eq(Cat(0, 0, m_addr[2:32])),
            w.st_data.eq(Mux(md.store, m_wdata, 0)),
        ]

        # ---- W (t+5) --------------------------------------------------------------------
        # Retire counters (per context and tile), counted in W from the M decision (an
        # instret read of the context's next instruction is in X, >= t+T+3).
        m.submodules.cnt_retired = cnt_retired = SplitCounter()
        m.submodules.cnt_macs = cnt_macs = SplitCounter(inc_width=len(eng.macs) + 1)
        m.d.comb += [
            cnt_retired.clear.eq(start), cnt_retired.inc.eq(w_valid),
            counters.retired.eq(cnt_retired.value),
            cnt_macs.clear.eq(start),
            cnt_macs.inc.eq(Mux(w_valid & w.dot4, MACS_PER_DOT4, 0) + eng.macs),
            counters.macs.eq(cnt_macs.value),
        ]
        with m.If(start):
            m.d.sync += [r.eq(0) for r in ctx_retired]
        with m.Elif(w_valid):
            m.d.sync += ctx_retired[w.ctx].eq(w_instret + 1)
        # ---- W -> V: the load word and W's record, registered ---------------------------
        # The register write and the trace are a cycle after W (t+6, ``TRACE_DELAY``), so
        # the SRAM's load word ends in a register instead of running through the alignment
        # into the register file (docs/synthesis.md). Not program-visible: the context's next
        # issue is at t+T >= t+6 and reads its registers in I (t+T+1), and the register
        # file's valid row, selected at t+T, is patched with that cycle's write; at the
        # run's end the last issue is at C - 1, its register write at C + COMMIT_DELAY, and
        # STATUS leaves RUNNING at the end of C + COMMIT_DELAY + D - 2 >= C + COMMIT_DELAY
        # (D >= 2, architecture §7), so the host reads final registers.
        v_valid = Signal()
        v = Signal(w_layout(cb))
        v_word = Signal(32)
        m.d.sync += [v_valid.eq(w_valid & ~start), v.eq(w), v_word.eq(self.mem.rdata)]

        # ---- V (t+6) --------------------------------------------------------------------
        w_data = Signal(32)
        m.d.comb += [
            ldalign.word.eq(v_word), ldalign.addr_lo.eq(v.addr_lo),
            ldalign.funct3.eq(v.funct3),
            w_data.eq(Mux(v.load, ldalign.value, v.value)),
            regs.clear.eq(start),
            regs.w_en.eq(v_valid & (v.rd != 0)),
            regs.w_ctx.eq(v.ctx), regs.w_addr.eq(v.rd), regs.w_data.eq(w_data),
        ]
        m.d.comb += [
            self.trace.valid.eq(v_valid),
            self.trace.context.eq(v.ctx),
            self.trace.pc.eq(v.pc),
            self.trace.insn.eq(v.insn),
            self.trace.rd.eq(v.rd),
            self.trace.value.eq(Mux(v.rd != 0, w_data, 0)),
            self.trace.st_mask.eq(v.st_mask),
            self.trace.st_addr.eq(Mux(v.st_mask != 0, v.st_addr, 0)),
            self.trace.st_data.eq(v.st_data),
        ]

        # ---- debug --------------------------------------------------------------------
        m.d.comb += [
            self.dbg.state.eq(states[self.dbg.ctx]),
            self.dbg.pc.eq(pc_read),
            self.dbg.retired.eq(x_instret),
            regs.dbg_en.eq(~run), regs.dbg_ctx.eq(self.dbg.ctx), regs.dbg_addr.eq(self.dbg.reg),
            self.dbg.x.eq(regs.dbg_data),
        ]
        return m
