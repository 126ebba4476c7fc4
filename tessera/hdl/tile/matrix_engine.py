"""The tile's matrix engine (docs/architecture.md §12): M = P/8 lanes of 8 int8 MACs.

Architectural step schedule (§12 "Step schedule"): step s is the s-th engine cycle after the
accept cycle x; the engine advances only in engine cycles (``run`` high — the tile runs and is
not in its exchange phase — and no LOAD/STORE word in the core's M stage, ``core.m_mem``), so
the whole pipeline below has one enable, ``adv`` = busy, not frozen and an engine cycle.

Internally a step goes through four parts, each advancing with ``adv``:

* **stage 0** (the step itself): the address generator (descriptor words, parameter words,
  W(m, b), X(j, b): the j0/j1/k0/k1 nest with 32-bit strides) issues the step's SRAM read on
  port B; read-address faults (check 1) are decided here.
* **stage 1** (the next step): the read word (captured in the cycle after the read even if that
  is not an engine cycle) goes into the descriptor fields, the channel parameters, the lane's
  stationary vector, or, for a stream step, through the M·8 multipliers into the product
  registers (**MAC stage 1**); the accumulator read acc[j] is issued here.
* **MAC stage 2** (the step after): each lane's 3-deep adder tree and the add to acc[j]
  (b = 0: to bias) write acc[j] — in the last block the output register ``out`` instead.
* **the output pipeline** (steps s_j + 3 .. s_j + WRITE_DELAY + OW − 1): :data:`OUT_DELAY` =
  WRITE_DELAY − 1 − :data:`MAC_STAGES` register stages, each loading in the engine's steps
  (``adv``), never in the cycles the core's loads / stores or the exchange own, so element j
  reaches the last one in step s_j + WRITE_DELAY whatever cycles those take. The TFLITE and
  FLOAT32 bytes are requantized by the REQUANT_STAGES-stage chains of :mod:`.requant` (then
  plain delay stages if WRITE_DELAY leaves more); the RAW int32 lanes and C(j) ride plain delay
  stages, which hold an element until the next one arrives (OW steps later). In the write step
  s_j + WRITE_DELAY + w the engine adds ``zp``, clamps and places the bytes (or picks RAW lanes
  4w .. 4w + 3: up to two consecutive 8-byte words, ``ENGINE_WRITE_WORDS``) and writes; write
  faults (check 4) are decided in that step.

**Depth from WRITE_DELAY.** The stages above are the shape built for ``WRITE_DELAY`` = 8 (the
contract from 2026-12-01 to 2026-12-07: 7 register stages between an element's last read and
its write, 2 MAC + 5 requantization). The RTL derives its depth from the constant, so a larger
one buys registers where synthesis needs them, with no other edit; the contract's 10 (since
2026-12-07) builds both of the following: with WRITE_DELAY ≥ 1 + 3 + REQUANT_STAGES the stream
word is registered in the step after its read (``xw``; nothing of the SRAM's output reaches a
multiplier in the cycle it arrives), the products follow one step later and the adder tree
one step after that (:data:`MAC_STAGES` = 3, acc[j] read in the products' step); with one
step more (:data:`OUT_Q`) a stage after the requantization adds ``zp``, clamps, places the
bytes and decides their write's check 4, so the write step takes data, mask and check from
registers. The rest of the suite tests the contract's shape; tests/test_hdl_engine_deep.py runs
the others (WRITE_DELAY = 8 and 9) against the golden model built with the same constant;
docs/synthesis.md has what they measure.

The MAC is two stages with WRITE_DELAY = 8 and three with the contract's 10 (issue #13: in one
clock, port B → multipliers → adder tree → acc was the tile's worst path; then port B →
multipliers in one clock, docs/synthesis.md). None of it is architectural (§12 puts only the reads, the writes in s_j +
WRITE_DELAY + w, the counters and the faults on steps), so the cut needs two arguments:

* **Accumulate-again distance.** X(j, b) is read in step s; acc[j] is next accumulated by
  X(j, b + 1), read in step s'. Between the two §12 puts the stream steps of elements
  j + 1 .. J − 1 of block b, the gather step of block b + 1 if it has one (``K_GATHER``, k0 = 0),
  its C lane loads and the stream steps of elements 0 .. j − 1 (the OW − 1 steps without a read
  only follow the last block, which no block follows), so s' − s = J + C (+ 1) ≥ 2 in every
  mode (C ≥ 1 and J ≥ 1 by check 2; the shortest case is J = 1, C = 1, any KB ≥ 2, also with
  RAW, TFLITE, FLOAT32 alike). X(j, b + 1) reads acc[j] in MAC stage 1, step s' + 1 ≥ s + 3;
  X(j, b) writes it in MAC stage 2, at the end of step s + 2, and a read in step k sees the
  writes of the steps before k: no forwarding is needed. (Reading in stage 0, as the one-stage
  MAC did, would need J + C ≥ 3 and fail for J = 1, C = 1.) Stalls change nothing: all these
  registers and both accumulator ports move only with ``adv``.
  With MAC_STAGES = 3 the read is in s' + 2 ≥ s + 4 and the write at the end of s + 3.
* **Stationary vectors.** MAC stage 1 of X(j, b) (step s + 1) uses S[m]; the lane load of
  W(m, b + 1) is read in step s_{J−1,b} + 1 + m (+ 1 with a gather step) at the earliest and
  writes S[m] at the end of the step after, s_{J−1,b} + 2 + m > s_{J−1,b} + 1; W(C − 1, b) is
  written at the end of step s_{0,b}, before X(0, b) multiplies in s_{0,b} + 1. Only the
  products are registered, so MAC stage 2 needs no lane state but ``bias``. With
  MAC_STAGES = 3, X(j, b) multiplies in s + 2: X(J − 1, b) reads S[0] in s_{J−1,b} + 2, the step
  at whose end the lane load of W(0, b + 1) writes it at the earliest, so it reads the old
  vector; the products' step is followed by the adder tree's, which needs only ``bias``.

Faults (§7 "Stop", §12 "Engine faults"). A read-address or write fault (checks 1, 4) of step s
is known in s, presented on ``core.fault`` in s and visible from s + 1, like an instruction fault
decided in M at s (the core lets its own instruction fault of that cycle win, §12; the tile's
record holds it from s + 1). The data checks (check 2 in step 7, check 3 in steps 8 + 2m /
9 + 2m) need the word read in s, on port B in s + 1: they are decided in s + 1 and the result
is **registered** at the end of s + 1 (``now_q``, with its address ``now_addr``), then
presented in s + 2 on ``core.fault`` with ``core.fault_now`` = 1: visible in s + 2 itself
(``ENGINE_DATA_FAULT_VISIBLE_DELAY``). So nothing of the port-B word reaches the core's fault,
the context states or the tile's fault record combinationally (the path port B → check 3 →
``core.fault`` → the record's cause mux and the scheduler's state enables was the tile's worst
path, 25.7 ns on the ECP5). The core shows c_e FAULT in s + 2 (a Mux on the registered bit in
the scheduler), the tile's ``faulted`` is ``record.valid | fault_now`` and the record is
written at the end of s + 2 (tessera/hdl/tile/core/core.py, fault_record.py).

Step order (§12): a step made in s + 1 after a data-checked step s (``chk``: the stage-1 tag,
from registers only) has no effect and no fault of its own if step s's data check fails.
Whether its address fault (check 1) counts is therefore known only from the word, so it is not
presented in s + 1 but goes through the same register: ``now_q`` in s + 2, visible from s + 2
= its step + 1, as any address fault (a data fault of step s masks it and wins). After a
faulting step the engine is **frozen** (§12): no further step, still busy, until the start of
the next run; the engine makes no step after s + 1.

SRAM writes are handed to the tile SRAM (:mod:`.sram`), which writes them at the end of the step's
cycle, like a store whose M is that cycle (§12 "Memory order").
"""

from __future__ import annotations

import enum

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.engine import (ACC_DEPTH, BYTE_MODES, DESC_CHECK_STEP, DESC_FIELDS, DESC_WORDS,
                                 F32_EXP_SPECIAL, MAX_SHIFT, MIN_SHIFT, VECTOR_BYTES,
                                 ENGINE_WRITE_WORDS, WRITE_DELAY, Flag, Mode, output_words)
from tessera.spec.faults import FaultCause
from tessera.spec.timing import ENGINE_DATA_FAULT_VISIBLE_DELAY

from ..compare import at_least, in_signed_range
from ..interfaces import EngineSramSignature, MatrixEngineSignature, check_config
from .requant import REQUANT_STAGES, SAT_LOG2, Stages, f32_stages, tflite_stages

__all__ = ["MatrixEngine", "Phase", "MAC_STAGES", "OUT_DELAY", "OUT_Q"]

#: MAC stages after the read step: the products (step s + 1), then the adder tree and the
#: accumulate into acc[j] or ``out`` (step s + 2).
#: With room in WRITE_DELAY (>= 1 + 3 + REQUANT_STAGES) the stream word is registered first
#: (MAC stage 1, step s + 1: nothing of the SRAM's output reaches a multiplier in the cycle it
#: arrives), the products follow in step s + 2 and the adder tree and accumulate in s + 3.
MAC_STAGES = 3 if WRITE_DELAY >= 1 + 3 + REQUANT_STAGES else 2
#: Register stages between the MAC's output register ``out`` and the write step (§12: output
#: word w of element j is written in step s_j + WRITE_DELAY + w; ``out`` is loaded in step
#: s_j + MAC_STAGES).
OUT_DELAY = WRITE_DELAY - 1 - MAC_STAGES
#: A stage after the requantization that adds ``zp``, clamps and places the TFLITE / FLOAT32
#: bytes (and decides their write's check 4) one step before the write, when OUT_DELAY leaves
#: one: the write step then takes the bytes, mask and check from registers.
OUT_Q = OUT_DELAY > REQUANT_STAGES
if OUT_DELAY < REQUANT_STAGES:
    raise ValueError(f"tessera.spec.engine.WRITE_DELAY = {WRITE_DELAY} is too small for the "
                     f"matrix engine's output pipeline: it needs WRITE_DELAY >= "
                     f"{1 + MAC_STAGES + REQUANT_STAGES} ({MAC_STAGES} MAC stages in steps "
                     f"s_j + 1 .. s_j + {MAC_STAGES}, {REQUANT_STAGES} requantization stages, "
                     f"the write in step s_j + WRITE_DELAY)")
assert VECTOR_BYTES == 8 and DESC_CHECK_STEP == DESC_WORDS - 1
# a data check of step s: the word on port B in s + 1, registered (``now_q``), visible in s + 2
assert ENGINE_DATA_FAULT_VISIBLE_DELAY == 2


class Phase(enum.IntEnum):
    """Address-generator phase."""
    IDLE = 0
    DESC = 1      # steps 0..7: descriptor words
    PARAM = 2     # steps 8..8+2C-1: channel parameter words
    WLOAD = 3     # C steps: W(0, b) .. W(C-1, b)
    STREAM = 4    # one step per element (+ OW-1 steps without a read in the last block)
    TAIL = 5      # the last WRITE_DELAY steps (writes only)
    GATHER = 6    # K_GATHER: one step before the lane loads of each k1 (the gather word)


class Kind(enum.IntEnum):
    """What the word read in a step is (stage 1's tag)."""
    NONE = 0
    DESC = 1
    PARAM = 2
    W = 3
    X = 4
    G = 5         # a gather word (K_GATHER)


_FIELD_BITS = {"I": (32, False), "H": (16, False), "B": (8, False), "h": (16, True)}


def _fields():
    """name -> (word index, bit offset in the 64-bit word, width, signed) from DESC_FIELDS."""
    out = {}
    for name, code, off in DESC_FIELDS:
        width, signed = _FIELD_BITS[code]
        out[name] = (off // 8, 8 * (off % 8), width, signed)
    return out


FIELDS = _fields()


class MatrixEngine(wiring.Component):
    """One tile's matrix engine (architecture §12).

    Parameters
    ----------
    config : ArrayConfig
        Gives P = ``engine_macs`` (> 0: M = P/8 lanes), ``sram_bytes``, ``context_bits``.

    Members
    -------
    clear : In(1)
        The start pulse: the engine becomes idle.
    run : In(1)
        This cycle may be an engine cycle: the tile's ``run`` (cycle ≤ t_s) and the tile is not
        in its exchange phase. The engine adds the core's ``m_mem`` (a LOAD/STORE word in M).
    core : In(MatrixEngineSignature(config))
        ``mrun`` accept from the core's M stage; busy, counters and the engine fault back
        (``core.fault_now``: the registered fault ``now_q``, visible in this cycle).
    sram : Out(EngineSramSignature(config))
        Port B reads and the writes (committed by the SRAM).

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    ValueError
        ``config.engine_macs`` is 0 (a configuration without an engine builds none).
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("MatrixEngine", config)
        if config.engine_lanes == 0:
            self._MustUse__silence = True
            raise ValueError("MatrixEngine needs engine_macs > 0")
        self.acc = Memory(shape=32 * config.engine_lanes, depth=ACC_DEPTH, init=[])
        super().__init__({
            "clear": In(1), "run": In(1),
            "core": In(MatrixEngineSignature(config)),
            "sram": Out(EngineSramSignature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        M = cfg.engine_lanes
        sb = cfg.sram_bytes
        core, sram = self.core, self.sram
        clear = self.clear

        # ---- command state ------------------------------------------------------------
        busy = Signal()
        phase = Signal(Phase)
        c_e = Signal(cfg.context_bits)
        pc_e = Signal(32)
        adv = Signal()
        frozen = Signal()                 # a step faulted (§12): no further step
        wfault_now = Signal()             # this step's write faults (check 4, stage 2)
        m.d.comb += [
            adv.eq(busy & ~frozen & self.run & ~core.m_mem),
            core.busy.eq(busy),
            core.active.eq(busy | core.accept),
        ]

        # descriptor fields (written by stage 1 as the words arrive)
        f = {name: Signal(w, name=f"d_{name}") for name, (_, _, w, _) in FIELDS.items()}

        def fv(name):
            sig = f[name]
            return sig.as_signed() if FIELDS[name][3] else sig

        n_c = f["C"]
        raw = f["mode"] == Mode.RAW
        ow = Signal(3)                    # OW: write steps per element (§12 "Step schedule")
        ow_raw = Array(Const(output_words(Mode.RAW, c), 3) for c in range(16))
        m.d.comb += ow.eq(Mux(raw, ow_raw[n_c[:4]], output_words(Mode.TFLITE, 1)))

        # per channel parameters and stationary vectors
        bias = Array(Signal(32, name=f"bias{i}") for i in range(M))
        mult = Array(Signal(32, name=f"mult{i}") for i in range(M))
        shift = Array(Signal(6, name=f"shift{i}") for i in range(M))
        stat = Array(Signal(64, name=f"stat{i}") for i in range(M))

        # ---- stage 0: address generator -----------------------------------------------
        cnt = Signal(8)
        ptr = Signal(32)                  # descriptor / parameter read pointer
        k0 = Signal(16)
        k1 = Signal(16)
        j0 = Signal(16)
        j1 = Signal(16)
        j = Signal(8)
        sub = Signal(3)                   # step within an element of the last block
        x_kblk = Signal(32)               # a_base + k1·ak_s1
        x_blk = Signal(32)                # ... + 8·k0
        x_row = Signal(32)                # ... + j1·a_s1
        x_ptr = Signal(32)                # ... + j0·a_s0
        w_blk = Signal(32)                # w_base + 8b
        w_ptr = Signal(32)                # ... + m·w_sm
        c_row = Signal(32)
        c_ptr = Signal(32)
        g_ptr = Signal(32)                # ak_s1 + 8·k1: the gather word (K_GATHER)
        xb_now = Signal(32)               # x_blk, or a gather word still in stage 1 (C = 1)
        gat = (f["flags"] & Flag.K_GATHER) != 0

        last_blk = (k0 == f["K0"] - 1) & (k1 == f["K1"] - 1)
        first_blk = (k0 == 0) & (k1 == 0)

        rd = Signal()
        raddr = Signal(32)
        kind = Signal(Kind)
        with m.Switch(phase):
            with m.Case(Phase.DESC, Phase.PARAM):
                m.d.comb += [rd.eq(1), raddr.eq(ptr),
                             kind.eq(Mux(phase == Phase.DESC, Kind.DESC, Kind.PARAM))]
            with m.Case(Phase.WLOAD):
                m.d.comb += [rd.eq(1), raddr.eq(w_ptr), kind.eq(Kind.W)]
            with m.Case(Phase.GATHER):
                m.d.comb += [rd.eq(1), raddr.eq(g_ptr), kind.eq(Kind.G)]
            with m.Case(Phase.STREAM):
                m.d.comb += [rd.eq(sub == 0), raddr.eq(x_ptr),
                             kind.eq(Mux(sub == 0, Kind.X, Kind.NONE))]
        rfault = Signal()                 # check 1
        m.d.comb += rfault.eq(rd & ((raddr[:3] != 0) | at_least(raddr, sb)))

        with m.If(clear):
            m.d.sync += [busy.eq(0), phase.eq(Phase.IDLE)]
        with m.Elif(core.accept):
            m.d.sync += [busy.eq(1), phase.eq(Phase.DESC), cnt.eq(0), ptr.eq(core.desc),
                         c_e.eq(core.ctx), pc_e.eq(core.pc)]
        with m.Elif(adv):
            with m.Switch(phase):
                with m.Case(Phase.DESC):
                    m.d.sync += [ptr.eq(ptr + 8), cnt.eq(cnt + 1)]
                    with m.If(cnt == DESC_WORDS - 1):
                        m.d.sync += [phase.eq(Phase.PARAM), cnt.eq(0), ptr.eq(f["p_base"])]
                with m.Case(Phase.PARAM):
                    m.d.sync += [ptr.eq(ptr + 8), cnt.eq(cnt + 1)]
                    with m.If(cnt == (Cat(0, n_c) - 1)[:8]):
                        m.d.sync += [phase.eq(Mux(gat, Phase.GATHER, Phase.WLOAD)), cnt.eq(0),
                                     w_blk.eq(f["w_base"]), w_ptr.eq(f["w_base"]),
                                     x_kblk.eq(f["a_base"]), x_blk.eq(f["a_base"]),
                                     g_ptr.eq(f["ak_s1"]), k0.eq(0), k1.eq(0)]
                with m.Case(Phase.GATHER):
                    m.d.sync += [phase.eq(Phase.WLOAD), cnt.eq(0)]
                with m.Case(Phase.WLOAD):
                    m.d.sync += [w_ptr.eq(w_ptr + f["w_sm"]), cnt.eq(cnt + 1)]
                    with m.If(cnt == n_c - 1):
                        m.d.sync += [phase.eq(Phase.STREAM), sub.eq(0), j.eq(0), j0.eq(0),
                                     j1.eq(0), x_row.eq(xb_now), x_ptr.eq(xb_now),
                                     c_row.eq(f["c_base"]), c_ptr.eq(f["c_base"])]
                with m.Case(Phase.STREAM):
                    with m.If(last_blk & (sub != ow - 1)):
                        m.d.sync += sub.eq(sub + 1)
                    with m.Else():
                        m.d.sync += [sub.eq(0), j.eq(j + 1)]
                        with m.If(j0 != f["J0"] - 1):
                            m.d.sync += [j0.eq(j0 + 1), x_ptr.eq(x_ptr + f["a_s0"]),
                                         c_ptr.eq(c_ptr + f["c_s0"])]
                        with m.Elif(j1 != f["J1"] - 1):
                            nx = x_row + f["a_s1"]
                            nc = c_row + f["c_s1"]
                            m.d.sync += [j0.eq(0), j1.eq(j1 + 1), x_row.eq(nx), x_ptr.eq(nx),
                                         c_row.eq(nc), c_ptr.eq(nc)]
                        with m.Elif(last_blk):
                            m.d.sync += [phase.eq(Phase.TAIL), cnt.eq(0)]
                        with m.Else():
                            nw = w_blk + 8
                            m.d.sync += [phase.eq(Phase.WLOAD), cnt.eq(0),
                                         w_blk.eq(nw), w_ptr.eq(nw)]
                            with m.If(k0 != f["K0"] - 1):
                                m.d.sync += [k0.eq(k0 + 1), x_blk.eq(x_blk + 8)]
                            with m.Else():
                                nk = x_kblk + f["ak_s1"]
                                m.d.sync += [k0.eq(0), k1.eq(k1 + 1), x_kblk.eq(nk),
                                             x_blk.eq(nk), g_ptr.eq(g_ptr + 8)]
                                with m.If(gat):   # x_kblk/x_blk come from the gather word
                                    m.d.sync += phase.eq(Phase.GATHER)
                with m.Case(Phase.TAIL):
                    m.d.sync += cnt.eq(cnt + 1)
                    with m.If((cnt == WRITE_DELAY - 1) & ~wfault_now):
                        m.d.sync += [busy.eq(0), phase.eq(Phase.IDLE)]

        # SRAM read of this step (the accumulator read is in stage 1, below)
        m.submodules.acc = acc = self.acc
        acc_rp = acc.read_port()
        acc_wp = acc.write_port()
        m.d.comb += [sram.rd_en.eq(adv & rd & ~rfault),
                     sram.rd_addr.eq(raddr[3:cfg.sram_addr_bits])]

        # stage-1 tag
        s1_kind = Signal(Kind)
        s1_idx = Signal(8)
        s1_j = Signal(8)
        s1_first = Signal()
        s1_last = Signal()
        s1_caddr = Signal(32)
        s1_raddr = Signal(32)
        with m.If(clear):
            m.d.sync += s1_kind.eq(Kind.NONE)
        with m.Elif(adv):
            m.d.sync += [s1_kind.eq(Mux(rfault, Kind.NONE, kind)), s1_idx.eq(cnt), s1_j.eq(j),
                         s1_first.eq(first_blk), s1_last.eq(last_blk), s1_caddr.eq(c_ptr),
                         s1_raddr.eq(raddr)]
        with m.Elif(core.accept):
            m.d.sync += s1_kind.eq(Kind.NONE)

        # the read word: on port B in the cycle after the read, held until stage 1 takes it
        fresh = Signal()
        held = Signal(64)
        m.d.sync += fresh.eq(sram.rd_en & ~clear)
        with m.If(fresh):
            m.d.sync += held.eq(sram.rd_data)
        word = Signal(64)
        m.d.comb += word.eq(Mux(fresh, sram.rd_data, held))

        # ---- data checks in the cycle after the read (checks 2 and 3) -------------------
        def now(name):
            """Field value as of the end of step 7 (word 7's fields come from ``word``)."""
            wi, bit, width, signed = FIELDS[name]
            if wi == DESC_WORDS - 1:
                v = word[bit:bit + width]
                return v.as_signed() if signed else v
            return fv(name)

        tfl = Cat(*(now("mode") == md for md in BYTE_MODES)).any()    # zp/qmin/qmax checked
        outu = (now("flags") & Flag.OUT_UNSIGNED) != 0

        # the output type's range without a 16-bit carry chain (``qmax`` is the word's: these
        # checks are made in the cycle it arrives from the SRAM)
        def out_of_type(v):
            return ~Mux(outu, in_signed_range(v, 0, 255), in_signed_range(v, -128, 127))

        def low9(v):
            """v as a 9-bit signed value: v itself whenever v is not out of type."""
            return v[:9].as_signed()

        jprod = Signal(18)
        m.d.comb += jprod.eq(now("J0")[:9] * now("J1")[:9])
        big_j = (now("J0") > ACC_DEPTH) | (now("J1") > ACC_DEPTH) | (jprod > ACC_DEPTH)
        desc_bad = ((now("C") == 0) | (now("C") > M)
                    | (now("J0") == 0) | (now("J1") == 0) | (now("K0") == 0) | (now("K1") == 0)
                    | big_j | (now("mode") > max(Mode))
                    | ((now("flags") & ~int(Flag.A_UNSIGNED | Flag.OUT_UNSIGNED | Flag.K_GATHER)
                        & 0xFF) != 0)
                    # qmin > qmax on 9 bits: exact when neither is out of type, and
                    # either being out of type faults by itself
                    | (tfl & ((low9(now("qmin")) > low9(now("qmax"))) | out_of_type(now("zp"))
                              | out_of_type(now("qmin")) | out_of_type(now("qmax")))))
        shv = word[:32].as_signed()
        shift_bad = (f["mode"] == Mode.TFLITE) & ~in_signed_range(shv, MIN_SHIFT, MAX_SHIFT)
        mult_bad = (f["mode"] == Mode.FLOAT32) & (word[32 + 23:32 + 31] == F32_EXP_SPECIAL)
        dfault = Signal()
        dfault_addr = Signal(32)
        d_addr = Signal(32)               # d = the address of word 7 − 56
        m.d.comb += d_addr.eq(s1_raddr - 8 * DESC_CHECK_STEP)
        # the word read in the previous cycle's step is one the data checks look at (from
        # registers only: the tag and the mode, never the word itself)
        chk_desc = fresh & (s1_kind == Kind.DESC) & (s1_idx == DESC_CHECK_STEP)
        chk_shift = fresh & (s1_kind == Kind.PARAM) & s1_idx[0] & (f["mode"] == Mode.TFLITE)
        chk_mult = fresh & (s1_kind == Kind.PARAM) & ~s1_idx[0] & (f["mode"] == Mode.FLOAT32)
        chk = Signal()
        m.d.comb += chk.eq(chk_desc | chk_shift | chk_mult)
        # chk_desc, chk_shift and chk_mult exclude each other (kind, index), so the fault's
        # address depends only on which check it is, not on the word
        m.d.comb += [
            dfault.eq((chk_desc & desc_bad) | (chk_shift & shift_bad) | (chk_mult & mult_bad)),
            dfault_addr.eq(Mux(chk_desc, d_addr, s1_raddr)),
        ]

        # ---- stage 1 ------------------------------------------------------------------
        g_base = Signal(32)               # a_base + g[k1] of the gather word in stage 1
        m.d.comb += [g_base.eq(f["a_base"] + word[:32]),
                     xb_now.eq(Mux(s1_kind == Kind.G, g_base, x_blk))]
        a_uns = (f["flags"] & Flag.A_UNSIGNED) != 0
        s1_x = s1_kind == Kind.X

        def tag_stage(prev, name):
            """The next MAC stage's tag (x, j, first, last, caddr), loading with adv."""
            tag = (Signal(name=f"{name}_x"), Signal(8, name=f"{name}_j"),
                   Signal(name=f"{name}_first"), Signal(name=f"{name}_last"),
                   Signal(32, name=f"{name}_caddr"))
            with m.If(clear):
                m.d.sync += tag[0].eq(0)
            with m.Elif(adv):
                m.d.sync += [t.eq(v) for t, v in zip(tag, prev)]
            with m.Elif(core.accept):
                m.d.sync += tag[0].eq(0)
            return tag

        s1_tag = (s1_x, s1_j, s1_first, s1_last, s1_caddr)
        if MAC_STAGES == 3:
            # MAC stage 1 registers the stream word; the products are MAC stage 2
            xw = Signal(64)
            with m.If(adv & s1_x):
                m.d.sync += xw.eq(word)
            p_tag = tag_stage(s1_tag, "sp")
            xsrc = xw
        else:
            p_tag = s1_tag
            xsrc = word
        p_x, p_j = p_tag[0], p_tag[1]
        xs = [xsrc[8 * i:8 * i + 8] for i in range(8)]
        # the 8 products of each lane (one 9 × 9 multiply each), registered: MAC stage 1 of an
        # X read in step s is step s + 1 and uses S[m] as of step s + 1 (the first lane load
        # of the next block writes S[0] at the end of step s + 2 at the earliest)
        prods = []
        for lane in range(M):
            w8 = [stat[lane][8 * i:8 * i + 8].as_signed() for i in range(8)]
            pl = []
            for i in range(8):
                xv = Mux(a_uns, xs[i].as_unsigned(), xs[i].as_signed())
                pr = Signal(signed(16), name=f"prod{lane}_{i}")
                with m.If(adv & p_x):
                    m.d.sync += pr.eq(xv * w8[i])
                pl.append(pr)
            prods.append(pl)

        # ---- MAC stage 2 (step s + 2): the adder tree and the accumulate ---------------
        s2_x, s2_j, s2_first, s2_last, s2_caddr = tag_stage(p_tag, "s2")
        # acc[j] is read in the products' stage (address p_j) and written in the next: an
        # element read again in step s' >= s + 2 (module docstring) reads in s' + MAC_STAGES
        # − 1 > s + MAC_STAGES
        m.d.comb += [acc_rp.en.eq(adv), acc_rp.addr.eq(p_j)]
        sums = []
        for lane in range(M):
            level, n = list(prods[lane]), 0
            while len(level) > 1:             # a balanced tree: 3 adders deep
                nxt = []
                for a, b in zip(level[0::2], level[1::2]):
                    t = Signal(signed(len(a) + 1), name=f"dot{lane}_{n}")
                    m.d.comb += t.eq(a + b)
                    nxt.append(t)
                    n += 1
                level = nxt
            dot = level[0]
            base = Mux(s2_first, bias[lane], acc_rp.data[32 * lane:32 * lane + 32])
            s = Signal(32, name=f"sum{lane}")
            m.d.comb += s.eq(base + dot)          # mod 2^32
            sums.append(s)

        out = [Signal(32, name=f"out{i}") for i in range(M)]
        out_caddr = Signal(32)
        wcnt = Signal(3)                   # output words of the element still to write
        m.d.comb += [acc_wp.addr.eq(s2_j), acc_wp.data.eq(Cat(*sums)),
                     acc_wp.en.eq(adv & s2_x & ~s2_last)]
        with m.If(adv & s2_x & s2_last):
            m.d.sync += [o.eq(s) for o, s in zip(out, sums)]
            m.d.sync += out_caddr.eq(s2_caddr)

        with m.If(adv):
            with m.Switch(s1_kind):
                with m.Case(Kind.DESC):
                    for name, (wi, bit, width, _) in FIELDS.items():
                        with m.If(s1_idx == wi):
                            m.d.sync += f[name].eq(word[bit:bit + width])
                with m.Case(Kind.PARAM):
                    lane = s1_idx[1:]
                    with m.If(s1_idx[0]):
                        m.d.sync += shift[lane].eq(word[:6])
                    with m.Else():
                        m.d.sync += [bias[lane].eq(word[:32]), mult[lane].eq(word[32:])]
                with m.Case(Kind.W):
                    m.d.sync += stat[s1_idx].eq(word)
                with m.Case(Kind.G):
                    m.d.sync += [x_kblk.eq(g_base), x_blk.eq(g_base)]

        # ---- output pipeline: OUT_DELAY stages advancing with adv, then the write step ------
        # v[k]: stage k holds an element (stage 0 = ``out``, loaded in step s_j + 2); element
        # j is in stage k in step s_j + 3 + k and written from stage OUT_DELAY in step
        # s_j + WRITE_DELAY (+ w for the RAW words w > 0: each stage holds its element until the
        # next one arrives, OW steps later).
        v = [Signal(name=f"ov{k}") for k in range(OUT_DELAY)]
        with m.If(clear | core.accept):
            m.d.sync += [vk.eq(0) for vk in v]
        with m.Elif(adv):
            m.d.sync += v[0].eq(s2_x & s2_last)
            m.d.sync += [v[k].eq(v[k - 1]) for k in range(1, OUT_DELAY)]

        def hold(value, k, name):
            """A stage-k register taking ``value`` (of stage k − 1) when an element moves in."""
            sig = Signal.like(value, name=f"{name}_{k}")
            with m.If(adv & v[k - 1]):
                m.d.sync += sig.eq(value)
            return sig

        o_caddrs, o_raw = [out_caddr], list(out)
        for k in range(1, OUT_DELAY + 1):
            o_caddrs.append(hold(o_caddrs[-1], k, "o_caddr"))
            o_raw = [hold(r, k, f"o_raw{i}") for i, r in enumerate(o_raw)]
        o_caddr = o_caddrs[-1]
        # TFLITE / FLOAT32: REQUANT_STAGES stages loading in every step (OW = 1: each element
        # leaves a stage one step after it came), then OUT_DELAY − REQUANT_STAGES plain ones
        f32 = f["mode"] == Mode.FLOAT32
        ys = []
        for lane in range(M):
            yt = tflite_stages(Stages(m, adv, f"tfl{lane}"), out[lane], mult[lane],
                               shift[lane].as_signed())
            yf = f32_stages(Stages(m, adv, f"f32{lane}"), out[lane], mult[lane])
            y = Signal(signed(SAT_LOG2 + 2), name=f"oy{lane}")
            m.d.comb += y.eq(Mux(f32, yf, yt))
            ys.append(y)

        def clamp_zp(y, lane):
            """+ zp and the clamp to qmin..qmax (exact: no wrap), the low byte."""
            yz = Signal(signed(SAT_LOG2 + 3), name=f"yz{lane}")
            m.d.comb += yz.eq(y + fv("zp"))
            c = Signal(8, name=f"q{lane}")
            m.d.comb += c.eq(Mux(yz < fv("qmin"), fv("qmin"),
                                 Mux(yz > fv("qmax"), fv("qmax"), yz))[:8])
            return c

        def placed(qs, caddr):
            """The C bytes at C(j) = caddr within its word: data, mask, check 4."""
            off = caddr[:3]
            cmask = Signal(8)
            m.d.comb += cmask.eq((Const(1, 9) << n_c[:4])[:9] - 1)
            return (Cat(*qs) << (off << 3))[:64], (cmask << off)[:8], \
                (off + n_c > 8) | at_least(caddr, sb)

        # + zp, clamp, the bytes placed and check 4 decided on the requantization's last stage;
        # with OUT_Q the result rides the stages after it (none without: the write step's)
        bdata, bmask, bfault = placed([clamp_zp(y, lane) for lane, y in enumerate(ys)],
                                      o_caddrs[REQUANT_STAGES])
        for k in range(REQUANT_STAGES + 1, OUT_DELAY + 1):
            bdata, bmask, bfault = (hold(bdata, k, "o_bdata"), hold(bmask, k, "o_bmask"),
                                    hold(bfault, k, "o_bfault"))

        # ---- the write step: output write w = OW − wcnt of the element in stage OUT_DELAY ----
        # (§12 "Step schedule"): TFLITE / FLOAT32 the element's C bytes at C(j), within one
        # word; RAW bytes 16w .. min(16w + 16, 4C) − 1 of the element's 4C bytes (lanes 4w ..
        # min(4w + 4, C) − 1) at C(j) + 16w: the word there and, when 4C > 16w + 8, the next.
        assert ENGINE_WRITE_WORDS == 2
        # w = OW − wcnt, kept as a register counting up while wcnt counts down (it is 0 when
        # wcnt loads OW, and wi + wcnt = OW while writing), so the write address and the
        # write-fault check do not start with the OW lookup and a subtraction
        wi = Signal(3)
        # C(j) + 16w and C(j) + 16w + 8 as registers: loaded with C(j) (+ 8) as the element
        # moves into the last stage (w = 0), + 16 with every write step of it (w + 1), so
        # wbyte = o_caddr + 16·wi whenever it is read (while writing), and the write's address,
        # its second word's address and check 4 start at registers, not at an adder. In the
        # byte modes OW = 1, so w = 0 in the write step: wbyte = C(j) there too.
        wbyte = Signal(33)
        wbyte8 = Signal(33)
        writing = wcnt != 0
        wdata = Signal(64 * ENGINE_WRITE_WORDS)
        wmask = Signal(8 * ENGINE_WRITE_WORDS)
        wfault = Signal()
        wf_addr = Signal(32)
        n_groups = (M + 3) // 4            # RAW: 4 lanes (16 bytes) per write
        group_data = Array(Cat(*(o_raw[4 * g + i] if 4 * g + i < M else Const(0, 32)
                                 for i in range(4)))
                           for g in range(n_groups))
        rem = Signal(5)                    # lanes left from 4w: C − 4w (≥ 1 while writing)
        m.d.comb += rem.eq(n_c[:4] - (wi << 2))
        second = Signal()                  # RAW: the write has a second word (4C > 16w + 8)
        m.d.comb += second.eq(rem > 2)
        with m.If(raw):
            m.d.comb += [
                wdata.eq(group_data[wi[:max(1, (n_groups - 1).bit_length())]]),
                # 4 bytes per lane left, at most 16
                wmask.eq(Mux(rem >= 4, 0xFFFF, Mux(rem == 3, 0x0FFF,
                                                   Mux(rem == 2, 0x00FF, 0x000F)))),
            ]
            # check 4 (RAW): the first word, then the second
            with m.If((wbyte[:3] != 0) | at_least(wbyte, sb)):
                m.d.comb += [wfault.eq(1), wf_addr.eq(wbyte)]
            # (wbyte is 8-aligned here: wbyte + 8 >= sb iff wbyte >= sb or wbyte's word
            # index is the last one, sb / 8 − 1 — no adder before the check)
            with m.Elif(second & (at_least(wbyte, sb)
                                  | wbyte[3:cfg.sram_addr_bits].all())):
                m.d.comb += [wfault.eq(1), wf_addr.eq(wbyte8)]
        with m.Else():
            m.d.comb += [wdata.eq(bdata), wmask.eq(bmask), wfault.eq(bfault),
                         wf_addr.eq(o_caddr)]
        m.d.comb += wfault_now.eq(adv & writing & wfault)
        m.d.comb += [
            sram.wr_en.eq(adv & writing & ~wfault & ~rfault),
            sram.wr_addr.eq(wbyte[3:cfg.sram_addr_bits]),
            sram.wr_addr1.eq(wbyte8[3:cfg.sram_addr_bits]),
            sram.wr_data.eq(wdata), sram.wr_mask.eq(wmask),
        ]
        # stream steps count 8·C MACs (the faulting step has no effect)
        m.d.comb += core.macs.eq(Mux(adv & (kind == Kind.X) & ~rfault & ~wfault_now,
                                     n_c << 3, 0))
        with m.If(clear | core.accept):
            m.d.sync += [wcnt.eq(0), wi.eq(0)]
        with m.Elif(adv):
            with m.If(v[OUT_DELAY - 1]):
                m.d.sync += [wcnt.eq(ow), wi.eq(0), wbyte.eq(o_caddrs[OUT_DELAY - 1]),
                             wbyte8.eq(o_caddrs[OUT_DELAY - 1] + 8)]
            with m.Elif(writing):
                m.d.sync += [wcnt.eq(wcnt - 1), wi.eq(wi + 1), wbyte.eq(wbyte + 16),
                             wbyte8.eq(wbyte8 + 16)]

        # ---- faults (§7 "Stop", §12 "Engine faults") --------------------------------------
        # An address fault (checks 1, 4) of the step of cycle k is presented on core.fault in
        # k (visible from k + 1), unless the step of cycle k - 1 read a word the data checks
        # look at (``chk``): then whether the step of k has any effect depends on that word,
        # so its address fault goes, like the data fault of the step of k - 1, into the
        # register ``now_q`` at the end of k. ``now_q`` is presented in k + 1 on core.fault
        # with ``fault_now`` (visible in k + 1 itself: s + 2 for the data fault of step
        # s = k - 1, s + 1 for the address fault of step s = k). Nothing of the SRAM word
        # reaches core.fault combinationally.
        afault_any = Signal()             # this step's address / write fault (checks 1, 4)
        afault = Signal()                 # ... presented now (visible from the next cycle)
        dq = Signal()                     # a data fault of the previous cycle's step
        now_d = Signal()                  # a fault visible from the next cycle via now_q
        now_q = Signal()                  # a registered fault, visible in this cycle
        # now_q's address, read only in the cycle now_q is 1 (now_q is 1 for one cycle: the
        # engine is frozen after it). Both candidates are registered in every cycle and
        # ``now_dsel`` picks one, so the SRAM word reaches only 1-bit registers (now_q,
        # now_dsel, frozen), not the enable or the select of 32 address bits.
        now_daddr = Signal(32)            # the data check's address (of the previous step)
        now_aaddr = Signal(32)            # this step's address / write fault address
        now_dsel = Signal()               # now_q is the data fault
        now_addr = Signal(32)
        m.d.comb += [
            dq.eq(dfault & ~frozen),
            afault_any.eq(adv & (rfault | wfault_now)),
            afault.eq(afault_any & ~chk),
            now_d.eq(dq | (afault_any & chk)),
        ]
        with m.If(clear | core.accept):
            m.d.sync += [frozen.eq(0), now_q.eq(0)]
        with m.Else():
            m.d.sync += now_q.eq(now_d)
            with m.If(afault | now_d):
                m.d.sync += frozen.eq(1)
        # the earlier step's data fault first (step order, §12)
        m.d.sync += [now_daddr.eq(dfault_addr), now_aaddr.eq(Mux(rfault, raddr, wf_addr)),
                     now_dsel.eq(dq)]
        m.d.comb += now_addr.eq(Mux(now_dsel, now_daddr, now_aaddr))
        m.d.comb += [
            core.fault.valid.eq(afault | now_q), core.fault.xchg.eq(0),
            core.fault_now.eq(now_q),
            core.fault.context.eq(c_e), core.fault.cause.eq(FaultCause.ENGINE_FAULT),
            core.fault.pc.eq(pc_e),
            core.fault.addr.eq(Mux(now_q, now_addr, Mux(rfault, raddr, wf_addr))),
        ]
        return m
