"""Exchange engine + fabric (tessera/hdl/tile/exchange_engine.py, tessera/hdl/array/exchange_fabric.py) inside the array,
on the Amaranth simulator, with stub cores that wait at the ARRAY barrier from cycle 0.

Expected values come from a small reference written from architecture §6 in this file (the
send bus of cycle c is the SRAM word before the writes of cycle c; a receive at k writes the
source's bus of k − L, or 0), plus hand-computed directed cases.
"""

import random
import struct

import pytest

from tessera.spec.config import ArrayConfig
from tessera.spec.exchange import Step, XOp, encode_program, STEP_BYTES
from tessera.spec.faults import FaultCause
from tessera.spec.hostmap import Ctrl, Status, TileReg, tile_reg_addr

from helpers.hdl_sim import Axil, BarrierStubCore, sram_set, sram_get, simulate, wait_done
from tessera.hdl.array import Array


def reference(cfg, progs, mems, r):
    """Architecture §6 by hand. progs[i]: list of Step or None (xprog = 0); mems[i]: dict
    byte address -> word (modified in place). Returns the END cycle e of every tile."""
    n, L = cfg.tiles, cfg.exchange_latency
    timeline = []        # per tile: dict cycle -> Step (STEP only)
    ends = []
    for p in progs:
        tl, c = {}, r
        if p is None:
            ends.append(r)
            timeline.append(tl)
            continue
        for s in p:
            if s.op == XOp.STEP:
                tl[c] = s
            if s.op == XOp.END:
                break
            c += s.cycles
        ends.append(c)
        timeline.append(tl)
    bus = {}
    for c in range(r, max(ends) + 1):
        writes = []
        for i in range(n):
            s = timeline[i].get(c)
            if s is not None and s.send_addr is not None:
                bus[(i, c)] = mems[i].get(s.send_addr, 0)
        for i in range(n):
            s = timeline[i].get(c)
            if s is not None and s.recv_addr is not None:
                src = (i + s.recv_src) % n if s.relative else s.recv_src
                writes.append((i, s.recv_addr, bus.get((src, c - L), 0)))
        for i, a, v in writes:
            mems[i][a] = v
    return ends


def run_exchange(cfg, progs, xprogs, mems, maxc, extra_reads=()):
    """Load programs and data, start, run to the timeout/fault and return what the RTL did."""
    return run_exchanges(cfg, [(progs, xprogs, mems, maxc)], extra_reads)[0]


def run_exchanges(cfg, runs, extra_reads=()):
    """Several runs on one array, one after the other (the host starts it again after each
    ``done``; SRAM keeps its content, architecture §9). ``runs``: (progs, xprogs, mems, maxc)
    per run, loaded before its start. Returns one result dict per run, as run_exchange."""
    dut = Array(cfg, core_factory=BarrierStubCore)
    outs = []

    async def bench(ctx):
        ax = Axil(ctx, dut)
        for progs, xprogs, mems, maxc in runs:
            outs.append(await _one_run(ctx, ax, dut, cfg, progs, xprogs, mems, maxc,
                                       extra_reads))

    simulate(dut, bench)
    return outs


async def _one_run(ctx, ax, dut, cfg, progs, xprogs, mems, maxc, extra_reads):
    """Load one run's programs and data, start, sample every cycle until ``done``, read back."""
    out = {"resume": [[] for _ in range(cfg.tiles)], "inx": [0] * cfg.tiles}
    for i, t in enumerate(dut.tiles):
        ctx.set(t.core.xprog, xprogs[i])
        if progs[i] is not None:
            raw = progs[i] if isinstance(progs[i], bytes) else encode_program(progs[i])
            for k in range(0, len(raw), 4):
                sram_set(ctx, t, xprogs[i] + k, struct.unpack_from("<I", raw, k)[0])
        for a, v in mems[i].items():
            sram_set(ctx, t, a, v)
    await ax.write(Ctrl.MAX_CYCLES_LO, maxc)
    await ax.write(Ctrl.CONTROL, 1)
    # a run ends by its limit (architecture §7 "Timeout": cycles <= max_cycles), and `done`
    # follows within the stop's drain (COMMIT_DELAY + D) and the host port's few cycles:
    # 256 more clocks is a hang guard, not a timing check (a hung run fails here instead of
    # hanging the suite)
    guard = maxc + 256
    while not ctx.get(dut.done):
        guard -= 1
        assert guard >= 0, f"done did not rise within max_cycles + 256 = {maxc + 256} clocks"
        for i, t in enumerate(dut.tiles):
            if ctx.get(dut.status) == Status.RUNNING and ctx.get(t.run):
                if ctx.get(t.engine.resume):
                    out["resume"][i].append(ctx.get(t.cycle))
                out["inx"][i] += ctx.get(t.in_exchange)
        await ctx.tick()
    out["status"] = await ax.read_ok(Ctrl.STATUS)
    out["cycles"] = await ax.read_ok(Ctrl.CYCLES_LO)
    out["rec"] = [[await ax.read_ok(tile_reg_addr(i, r)) for r in
                   (TileReg.FAULT_VALID, TileReg.FAULT_CONTEXT, TileReg.FAULT_CAUSE,
                    TileReg.FAULT_PC, TileReg.FAULT_ADDR)] for i in range(cfg.tiles)]
    out["mem"] = [{a: sram_get(ctx, t, a) for a in mems[i]} for i, t in enumerate(dut.tiles)]
    out["extra"] = [sram_get(ctx, dut.tiles[i], a) for i, a in extra_reads]
    return out


DATA = list(range(0x800, 0x840, 4))


def random_case(cfg, rng):
    n = cfg.tiles
    progs, xprogs, mems = [], [], []
    for i in range(n):
        mems.append({a: rng.getrandbits(32) for a in DATA})
        if rng.random() < 0.15:
            progs.append(None)
            xprogs.append(0)
            continue
        steps = []
        for _ in range(rng.randrange(2, 12)):
            x = rng.random()
            if x < 0.15:
                steps.append(Step.idle(rng.randrange(1, 4)))
                continue
            send = rng.choice(DATA) if rng.random() < 0.7 else None
            if rng.random() < 0.7:
                rel = rng.random() < 0.4
                src = rng.randrange(0, 2048 if rel else n)
                steps.append(Step.send_recv(send, src, rng.choice(DATA), rel))
            else:
                steps.append(Step.send_recv(send))
        steps.append(Step.end())
        progs.append(steps)
        xprogs.append(0x100 + 0x100 * rng.randrange(0, 6))
    return progs, xprogs, mems


@pytest.mark.parametrize("tiles,lat,seed", [(4, 3, 1), (3, 2, 2), (4, 2, 3), (5, 4, 4),
                                            (2, 2, 5), (1, 2, 6)])
def test_random_schedules(tiles, lat, seed):
    cfg = ArrayConfig(tiles=tiles, contexts=6, sram_bytes=16 * 1024, exchange_latency=lat)
    rng = random.Random(seed)
    progs, xprogs, mems = random_case(cfg, rng)
    r = cfg.decision_latency                  # every tile arrived at cycle 0: k* = 0, r = k* + D
    exp_mem = [dict(m) for m in mems]
    ends = reference(cfg, progs, exp_mem, r)
    maxc = max(ends) + 6
    got = run_exchange(cfg, progs, xprogs, mems, maxc)
    assert got["status"] == Status.TIMEOUT and got["cycles"] == maxc
    assert got["resume"] == [[e] for e in ends]
    assert got["inx"] == [e - r + 1 for e in ends]
    for i in range(tiles):
        assert got["mem"][i] == exp_mem[i], f"tile {i}"
        assert got["rec"][i][0] == 0


def test_multicast_and_ordering_by_hand():
    # N = 3, L = 2, S = 4 -> r = 4. Tile 0 sends A (0x800) at r and r+1; tile 0 first
    # receives into A at r+2 from itself (value A of cycle r -> unchanged) ...
    cfg = ArrayConfig(tiles=3, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
    A, B, C = 0x800, 0x804, 0x808
    mems = [{A: 0x11111111, B: 0x22222222, C: 0}, {A: 0x33333333, B: 0, C: 0},
            {A: 0x44444444, B: 0, C: 0}]
    p0 = [Step.send_recv(B),                              # r: bus0 = 0x22222222
          Step.send_recv(A, 1, B),                        # r+1: bus0 = 0x11111111; recv from
                                                          #      tile 1 at r-1: nothing -> B = 0
          Step.send_recv(B, 1, A),                        # r+2: bus0 = 0 (B now 0); A <- bus1(r)
          Step.end()]
    p1 = [Step.send_recv(A),                              # r: bus1 = 0x33333333
          Step.idle(1),
          Step.send_recv(None, 0, B),                     # r+2: B <- bus0(r) = 0x22222222
          Step.send_recv(None, 2, C, relative=True),      # r+3: C <- tile 0 bus(r+1) = 0x11111111
          Step.end()]
    p2 = [Step.idle(2),
          Step.send_recv(None, 0, B),                     # r+2: multicast of bus0(r)
          Step.send_recv(None, 0, C),                     # r+3: bus0(r+1) = 0x11111111
          Step.send_recv(None, 0, A),                     # r+4: bus0(r+2) = 0 (B was cleared)
          Step.end()]
    expect = [{A: 0x33333333, B: 0, C: 0}, {A: 0x33333333, B: 0x22222222, C: 0x11111111},
              {A: 0, B: 0x22222222, C: 0x11111111}]
    r = 4
    got = run_exchange(cfg, [p0, p1, p2], [0x100, 0x200, 0x300], mems, 20)
    assert got["mem"] == expect
    assert got["resume"] == [[r + 3], [r + 4], [r + 5]]
    # cross-check the hand values with the reference too
    ref = [dict(m) for m in mems]
    reference(cfg, [p0, p1, p2], ref, r)
    assert ref == expect


def _fault_case(prog_raw, xprog, tiles=2, steps_before=0):
    cfg = ArrayConfig(tiles=tiles, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
    mems = [{0x800: 0x5A5A5A5A, 0x804: 7} for _ in range(tiles)]
    progs = [prog_raw] + [[Step.send_recv(0x800), Step.end()]] * (tiles - 1)
    xprogs = [xprog] + [0x200] * (tiles - 1)
    return cfg, run_exchange(cfg, progs, xprogs, mems, 60)


def _raw(*words):
    return b"".join(struct.pack("<I", w) for w in words)


@pytest.mark.parametrize("name,raw,xprog,cidx,addr", [
    # op = 3 at the third step (cycle r + 2): pc = addr = step address
    ("reserved_op", _raw(0, 0, 0, 0, 3 << 30, 0, 2 << 30, 0), 0x100, 2, 0x110),
    # send address beyond the SRAM (word 0x1000 = byte 0x4000); also an absolute source 9:
    # the send check comes first
    ("send_range", _raw((1 << 29) | (1 << 28) | 0x1000, (9 << 20) | 0x200, 2 << 30, 0), 0x100,
     0, 0x4000),
    ("abs_source", _raw((1 << 28), (9 << 20) | 0x200, 2 << 30, 0), 0x100, 0, 9),
    ("recv_range", _raw(1 << 30, 0, (1 << 28), (1 << 20) | 0xFFFFF, 2 << 30, 0), 0x100, 1,
     0xFFFFF * 4),
    ("xprog_misaligned", _raw(0, 0, 2 << 30, 0), 0x104, 0, 0x104),
    # IDLE 3 then runs off the SRAM end: steps at 16376 (idle) then 16384 -> fault at r + 3
    ("off_the_end", _raw((1 << 30) | 2, 0), 16 * 1024 - 8, 3, 16 * 1024),
])
def test_exchange_faults(name, raw, xprog, cidx, addr):
    # v2 (architecture §7 "Stop"): the fault of the step at c is visible from v = c + 1, the
    # array stops at the end of t_s = v + D - 1 and cycles = v + D = c + 1 + D (N = 2: D = 3,
    # r = k* + D = 3 since every stub tile is arrived at cycle 0).
    cfg, got = _fault_case(raw, xprog)
    D = cfg.decision_latency
    r = D
    c = r + cidx
    assert got["status"] == Status.FAULT
    assert got["cycles"] == c + 1 + D
    pc = addr if name in ("reserved_op", "xprog_misaligned", "off_the_end") else xprog + 8 * (
        cidx if name != "recv_range" else 1)
    assert got["rec"][0] == [1, 0xFFFFFFFF, FaultCause.EXCHANGE_FAULT, pc, addr]
    assert got["rec"][1][0] == 0
    assert got["mem"][0][0x800] == 0x5A5A5A5A


def test_fault_step_has_no_effect_and_others_run_until_the_stop():
    # v2, by hand (architecture §6, §7 "Stop"). N = 2, L = 2, D = 3; every stub tile is arrived
    # at cycle 0, so k* = 0 and r = k* + D = 3.
    # tile 0: r = 3: STEP sends 0x800 (1) and receives from tile 1 into 0x804: bus1(r - L = 1)
    #         carried nothing -> 0x804 = 0; r+1 = 4: op 3 -> exchange fault, pc = addr = 0x108,
    #         visible from v = 5, so t_s = v + D - 1 = 7 and cycles = v + D = 8; then frozen:
    #         the STEP at 0x110 (receive from tile 1 into 0x808) never happens, 0x808 stays 3,
    #         and the tile stays in its exchange phase until the stop (cycles 3..7: 5 cycles)
    #         and never resumes.
    # tile 1: r = 3: sends 0x800 (0xAB); 4: sends, receives bus0(2) = nothing -> 0x804 = 0;
    #         5 (<= t_s: takes effect in v2): sends, receives bus0(3) = 1 -> 0x808 = 1;
    #         6: END -> resume at 6; exchange phase 3..6 (4 cycles).
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
    p0 = _raw((1 << 29) | (1 << 28) | (0x800 // 4), (1 << 20) | (0x804 // 4), 3 << 30, 0,
              1 << 28, (1 << 20) | (0x808 // 4), 2 << 30, 0)
    p1 = [Step.send_recv(0x800), Step.send_recv(0x800, 0, 0x804), Step.send_recv(0x800, 0, 0x808),
          Step.end()]
    mems = [{0x800: 1, 0x804: 2, 0x808: 3}, {0x800: 0xAB, 0x804: 5, 0x808: 6}]
    got = run_exchange(cfg, [p0, p1], [0x100, 0x100], mems, 60)
    assert got["status"] == Status.FAULT and got["cycles"] == 8
    assert got["rec"][0] == [1, 0xFFFFFFFF, FaultCause.EXCHANGE_FAULT, 0x108, 0x108]
    assert got["rec"][1][0] == 0
    assert got["mem"][0] == {0x800: 1, 0x804: 0, 0x808: 3}
    assert got["mem"][1] == {0x800: 0xAB, 0x804: 0, 0x808: 1}
    assert got["resume"] == [[], [6]]
    assert got["inx"] == [5, 4]


def test_send_sees_sram_before_same_cycle_receive():
    # L = 2, N = 2, D = 3, r = 3. At r+2 tile 0 both sends A and receives into A (tile 1's bus
    # of r = 0x77): its bus of r+2 carries the OLD A (architecture §6: the SRAM before the
    # writes of that cycle), its bus of r+3 the new one. Tile 1 receives tile 0's bus of r+2
    # at r+4 (0x1234) and of r+3 at r+5 (0x77).
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
    A = 0x800
    p0 = [Step.idle(2), Step.send_recv(A, 1, A), Step.send_recv(A), Step.end()]
    p1 = [Step.send_recv(A), Step.idle(3), Step.send_recv(None, 0, 0x804),
          Step.send_recv(None, 0, 0x808), Step.end()]
    mems = [{A: 0x1234}, {A: 0x77, 0x804: 0, 0x808: 0}]
    got = run_exchange(cfg, [p0, p1], [0x100, 0x100], mems, 30)
    assert got["mem"][0] == {A: 0x77}
    assert got["mem"][1] == {A: 0x77, 0x804: 0x1234, 0x808: 0x77}


def test_step_words_read_after_earlier_receives():
    # Architecture §6: the step that starts at c is read as the SRAM is after all writes of
    # cycles < c. L = 2, N = 2, r = 3. Tile 1 sends an END word at r; tile 0 receives it at
    # r+2 into word0 of its step at 0x110, executed at r+3 (the very next cycle), which was a
    # STEP: it ends there (resume at r+3). Tile 1 ends at r+1.
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
    end_word = XOp.END << 30
    p0 = [Step.idle(2), Step.send_recv(None, 1, 0x110), Step.send_recv(0x800),
          Step.send_recv(0x800), Step.end()]
    p1 = [Step.send_recv(0x808), Step.end()]
    mems = [{0x800: 1}, {0x808: end_word}]
    got = run_exchange(cfg, [p0, p1], [0x100, 0x100], mems, 30)
    r = 3
    assert got["resume"] == [[r + 3], [r + 1]]


@pytest.mark.parametrize("ahead", [2, 3])
def test_step_words_two_and_three_steps_ahead_see_earlier_receives(ahead):
    # Architecture §6 as above, for a receive into a step further ahead: the word of the step
    # executed 2 steps after the receiving step (r+4; the RTL reads it in the receive's own
    # cycle r+2) and 3 steps after (r+5; read at r+3). L = 2, N = 2, D = 3, r = 3. Tile 0:
    # IDLE 2 at 0x100 (r, r+1), the receive at 0x108 (r+2) into word 0 of the step at
    # 0x108 + 8·ahead, then STEPs that send: that step is executed at r + 2 + ahead and is
    # END (tile 1's bus of r), so tile 0 resumes there, not one step later.
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
    end_word = XOp.END << 30
    target = 0x108 + 8 * ahead
    p0 = ([Step.idle(2), Step.send_recv(None, 1, target)]
          + [Step.send_recv(0x800)] * ahead + [Step.end()])
    p1 = [Step.send_recv(0x808), Step.end()]
    mems = [{0x800: 1}, {0x808: end_word}]
    got = run_exchange(cfg, [p0, p1], [0x100, 0x100], mems, 30)
    r = 3
    assert got["resume"] == [[r + 2 + ahead], [r + 1]]


@pytest.mark.parametrize("first", ["fault", "timeout_in_idle", "timeout_in_run"])
def test_start_abandons_the_previous_runs_exchange(first):
    # Architecture §9: a start resets the contexts and fault records and abandons whatever the
    # previous run left (the exchange engine's clear). Run 1 leaves tile 0's engine in the
    # middle of its exchange phase; run 2 on the same array must then be exactly a fresh run.
    # Written for mutant M0607ad (the clear's resets of busy/in_idle/in_run/dead dropped in
    # tessera/hdl/tile/exchange_engine.py): every other test starts the array once.
    # N = 2, L = 2, D = 3; the stub tiles are arrived from cycle 0 of each run: k* = 0, r = 3.
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
    D, r = cfg.decision_latency, 3
    assert D == 3
    if first == "fault":
        # op = 3 at r: fault presented at c = r = 3, visible from v = 4, cycles = v + D = 7;
        # tile 0 then stays in the exchange phase (frozen) until the stop
        p0, maxc1, exp1 = _raw(3 << 30, 0), 60, (Status.FAULT, r + 1 + D)
    elif first == "timeout_in_idle":
        # IDLE 40 from r = 3: still idling when the timeout ends the run at max_cycles = 8
        p0, maxc1, exp1 = [Step.idle(40), Step.end()], 8, (Status.TIMEOUT, 8)
    else:
        # a STEP run of 40 words from r = 3 (receives from tile 1): still running at 8
        p0, maxc1, exp1 = [Step.send_recv(0x900, 1, 0xA00, run=40), Step.end()], 8, \
            (Status.TIMEOUT, 8)
    run1 = ([p0, [Step.send_recv(0x800), Step.end()]], [0x100, 0x100],
            [{0x800: 1, 0x804: 2}, {0x800: 0xAB, 0x804: 5}], maxc1)
    # run 2 (fresh programs at 0x300): tile 0: IDLE 2 at r, r+1; at r+2 = 5 it receives tile
    # 1's bus of 5 - L = 3 = r, where tile 1 sent its 0x800 (0xAB) -> 0x804 = 0xAB; END at
    # r+3 = 6 (resume 6, exchange phase 3..6: 4 cycles). Tile 1: sends 0x800 at r, END at
    # r+1 = 4 (resume 4, 2 cycles). Timeout at max_cycles = 12, no fault record.
    p0b = [Step.idle(2), Step.send_recv(None, 1, 0x804), Step.end()]
    p1b = [Step.send_recv(0x800), Step.end()]
    mems2 = [{0x800: 1, 0x804: 2}, {0x800: 0xAB, 0x804: 5}]
    ref = [dict(m) for m in mems2]
    assert reference(cfg, [p0b, p1b], ref, r) == [6, 4]         # the file's §6 reference agrees
    assert ref == [{0x800: 1, 0x804: 0xAB}, {0x800: 0xAB, 0x804: 5}]
    got1, got2 = run_exchanges(cfg, [run1, ([p0b, p1b], [0x300, 0x300], mems2, 12)])
    assert (got1["status"], got1["cycles"]) == exp1
    assert got2["status"] == Status.TIMEOUT and got2["cycles"] == 12
    assert got2["resume"] == [[6], [4]]
    assert got2["inx"] == [4, 2]
    assert got2["mem"] == [{0x800: 1, 0x804: 0xAB}, {0x800: 0xAB, 0x804: 5}]
    assert got2["rec"][0][0] == 0 and got2["rec"][1][0] == 0
