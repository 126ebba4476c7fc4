"""Golden model: exchange engine (docs/architecture.md §5 release/resume, §6 exchange), contract
v2: T = 6 (context c's slot i at 6i + c), k* = t + 5 after the last sync ARRAY at t,
r = k* + D with D(4 tiles) = 4, L >= 2; a run whose last ecall issues at t ends with
cycles = t + 5 + D; an exchange step's fault at c is visible from c + 1: cycles = c + 1 + D."""

import struct

import pytest

from tessera.golden_model import Array
from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.exchange import Step, encode_program
from tessera.spec.faults import FaultCause

SRAM = 16 * 1024
XP = 0x400
DATA = 0x700
RECV = 0x600
RECV2 = 0x604
GATHER = 0x680
N = 4


def code(xp=XP):
    return [*asm.li(5, xp), asm.csrw(Csr.XPROG, 5), asm.sync_array(),
            asm.lw(10, RECV, 0), asm.csrr(11, Csr.CYCLE), asm.ecall()]


def value(t):
    return 0x1000 + 0x11 * t


def setup(L, xprog_bytes, tiles=N, xp=XP, per_tile_code=None):
    cfg = ArrayConfig(tiles=tiles, contexts=6, sram_bytes=SRAM, exchange_latency=L)
    arr = Array(cfg)
    arr.write_mem(None, 0, asm.program(code(xp)))
    for t, w in (per_tile_code or {}).items():
        arr.write_mem(t, 0, asm.program(w))
    arr.write_mem(None, XP, xprog_bytes)
    arr.write_mem(None, RECV2, struct.pack("<I", 0xDEADBEEF))
    for t in range(tiles):
        arr.write_mem(t, DATA, struct.pack("<I", value(t)))
    return arr


def word(arr, t, addr):
    return struct.unpack("<I", arr.read_mem(t, addr, 4))[0]


def ring_program(L):
    steps = [Step.send_recv(send_addr=DATA, recv_src=1, recv_addr=RECV2, relative=True)]
    if L > 1:
        steps.append(Step.idle(L - 1))
    steps.append(Step.send_recv(recv_src=N - 1, recv_addr=RECV, relative=True))
    return encode_program(steps)


@pytest.mark.parametrize("L", [2, 3, 5])
def test_ring_shift_timing_and_not_sent(L):
    arr = setup(L, ring_program(L))
    res = arr.run(2000)
    assert res.status == "halted"
    # li = 1 word: syncs (slot 2) at 12..17, visible 17..22 -> k* = 22, r = 22 + D(4) = 26.
    # steps: r STEP(send, recv from k-L < r: nobody sent -> 0), IDLE L-1, r+L STEP(recv), END
    # at r+L+1 = e; RUNNING from e+1; lw in the next 6 slots, csrr in the 6 after, ecall in
    # the 6 after that (the last at e + 18).
    r = 26
    e = r + L + 1
    for t in range(N):
        assert word(arr, t, RECV) == value((t - 1) % N)
        assert word(arr, t, RECV2) == 0
        for c in range(6):
            first = next(k for k in range(e + 1, e + 7) if k % 6 == c)
            assert int(arr.regs[t, c, 10]) == value((t - 1) % N)
            assert int(arr.regs[t, c, 11]) == first + 6
        cnt = res.tiles[t].counters
        assert cnt["exchange"] == e - r + 1 == L + 2
        assert cnt["sync"] == r - 22
    assert res.cycles == e + 18 + 5 + 4     # last ecall e + 18, HALTED + 5, + D


@pytest.mark.parametrize("L", [2, 3, 4])
def test_all_gather_multicast(L):
    steps = []
    for j in range(N + L + 1):
        send = DATA if j < N else None
        if L <= j:
            steps.append(Step.send_recv(send_addr=send, recv_src=j - L,
                                        recv_addr=GATHER + 4 * (j - L)))
        else:
            steps.append(Step.send_recv(send_addr=send))
    # the last step (j = N + L) receives from tile N % N... use source 0: it sent only for j < N
    steps[-1] = Step.send_recv(recv_src=0, recv_addr=GATHER + 4 * N)
    arr = setup(L, encode_program(steps))
    arr.write_mem(None, GATHER + 4 * N, struct.pack("<I", 0x5555AAAA))
    res = arr.run(3000)
    assert res.status == "halted"
    for t in range(N):
        got = [word(arr, t, GATHER + 4 * i) for i in range(N + 1)]
        assert got == [value(i) for i in range(N)] + [0]
        assert res.tiles[t].counters["exchange"] == N + L + 1 + 1   # steps + END


def test_wrong_latency_reads_zero():
    # receiving one cycle too early (step L-1) gets 0: L = 3, receive at step 2 from the
    # source that sent at step 0 -> its bus at cycle r-1 was not driven.
    L = 3
    steps = [Step.send_recv(send_addr=DATA), Step.idle(1),
             Step.send_recv(recv_src=N - 1, recv_addr=RECV, relative=True)]
    arr = setup(L, encode_program(steps))
    arr.write_mem(None, RECV, struct.pack("<I", 0x12345678))
    res = arr.run(2000)
    assert res.status == "halted"
    assert [word(arr, t, RECV) for t in range(N)] == [0] * N


def test_halted_tile_runs_its_exchange_and_no_program_tile():
    halt = [*asm.li(5, XP), asm.csrw(Csr.XPROG, 5), asm.ecall()]
    noprog = [asm.sync_array(), asm.lw(10, RECV, 0), asm.csrr(11, Csr.CYCLE), asm.ecall()]
    arr = setup(3, ring_program(3), per_tile_code={1: halt, 3: noprog})
    res = arr.run(2000)
    assert res.status == "halted"
    assert word(arr, 2, RECV) == value(1)       # sent by the halted tile 1
    assert word(arr, 1, RECV) == value(0)       # the halted tile received too
    assert word(arr, 0, RECV) == 0              # tile 3 has no program: sent nothing
    # tile 3 (xprog = 0): its syncs at 0..5, but k* = 22 (tiles 0/2 waiting, tile 1 all
    # HALTED from 17 + 5), r = 26 = e: RUNNING from 27: lw at 27 (context 3) .. 32 (context
    # 2), csrr 6 later: contexts 0..5 at 36, 37, 38, 33, 34, 35
    assert [int(arr.regs[3, c, 11]) for c in range(6)] == [36, 37, 38, 33, 34, 35]
    assert res.tiles[3].counters["exchange"] == 1
    assert res.tiles[1].counters["exchange"] == 5


def fault_run(xprog_bytes, xp=XP, tiles=N):
    arr = setup(3, xprog_bytes, tiles=tiles, xp=xp)
    return arr, arr.run(2000)


R = 26     # r of code() (see test_ring_shift_timing_and_not_sent)


@pytest.mark.parametrize("prog,xp,cycle,pc,addr", [
    (struct.pack("<II", 0xC0000000, 0), XP, R, XP, XP),                         # op 3
    (encode_program([Step.end()]), XP + 4, R, XP + 4, XP + 4),                 # misaligned
    (encode_program([Step.idle(2), Step.end()]) + struct.pack("<II", 0xC0000000, 0),
     XP, R, None, None),                                                       # not reached
    (encode_program([Step.idle(2), Step.send_recv(send_addr=SRAM)]), XP, R + 2, XP + 8, SRAM),
    (encode_program([Step.send_recv(recv_src=N, recv_addr=RECV)]), XP, R, XP, N),
    (encode_program([Step.send_recv(recv_src=1, recv_addr=SRAM + 8)]), XP, R, XP, SRAM + 8),
    # check order: a bad send address wins over a bad source
    (encode_program([Step.send_recv(send_addr=SRAM + 4, recv_src=N + 3, recv_addr=RECV)]),
     XP, R, XP, SRAM + 4),
    # relative source is never out of range
    (encode_program([Step.send_recv(recv_src=N + 3, recv_addr=RECV, relative=True)]),
     XP, R, None, None),
])
def test_exchange_faults(prog, xp, cycle, pc, addr):
    arr, res = fault_run(prog, xp=xp)
    if pc is None:
        assert res.status == "halted"
        return
    # the step at `cycle` faults on every tile: visible from cycle + 1, cycles = cycle + 1 + D
    assert res.status == "fault" and res.cycles == cycle + 1 + 4
    for t in res.tiles:
        f = t.fault
        assert (f.context, f.cause, f.pc, f.addr) == (None, FaultCause.EXCHANGE_FAULT, pc, addr)
        # no END after the fault: the exchange phase lasts from R to the stop
        assert t.counters["exchange"] == res.cycles - R


def test_xprog_outside_sram_faults():
    arr, res = fault_run(encode_program([Step.end()]), xp=SRAM)
    # li SRAM = one lui: same r; the step at R faults, visible R + 1, cycles = R + 1 + D
    assert res.status == "fault" and res.cycles == R + 1 + 4
    f = res.tiles[0].fault
    assert (f.context, f.cause, f.pc, f.addr) == (None, FaultCause.EXCHANGE_FAULT, SRAM, SRAM)


def test_only_one_tile_faults_others_complete_their_steps():
    arr = setup(2, ring_program(2))
    bad = encode_program([Step.send_recv(send_addr=DATA, recv_src=1, recv_addr=RECV2,
                                         relative=True),
                          Step.send_recv(recv_src=9, recv_addr=RECV)])
    arr.write_mem(2, XP, bad)
    res = arr.run(2000)
    # L = 2. step 1 at r+1 = 27: tile 2 faults (absolute source 9 >= N), visible from 28:
    # t_s = 28 + D - 1 = 31, cycles = 32. The others idle at 27, receive at r + 2 = 28 the
    # words sent at 26 (tile 2's send of step 0 took effect), END at 29.
    assert res.status == "fault" and res.cycles == 32
    assert [t.fault is not None for t in res.tiles] == [False, False, True, False]
    assert res.tiles[2].fault.addr == 9
    assert word(arr, 3, RECV) == value(2)
    assert word(arr, 1, RECV) == value(0)
    assert word(arr, 2, RECV) == 0   # faulting step had no effect (memory was 0)


def test_exchange_trace_events():
    cfg = ArrayConfig(tiles=N, contexts=6, sram_bytes=SRAM, exchange_latency=3)
    arr = Array(cfg, trace=True)
    arr.write_mem(None, 0, asm.program(code()))
    arr.write_mem(None, XP, ring_program(3))
    for t in range(N):
        arr.write_mem(t, DATA, struct.pack("<I", value(t)))
    assert arr.run(2000).status == "halted"
    ev = [e for e in arr.xtrace if e["tile"] == 2]
    # r = 26: step 0 sends (and receives 0 into RECV2), step 2 at r + 3 receives from tile 1
    assert ev == [{"cycle": 26, "tile": 2, "step_addr": XP, "send": value(2),
                   "recv": (3, RECV2, 0)},
                  {"cycle": 29, "tile": 2, "step_addr": XP + 16, "send": None,
                   "recv": (1, RECV, value(1))}]


def test_run_zero_cycles():
    arr = Array(ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM))
    res = arr.run(0)
    assert res.status == "timeout" and res.cycles == 0 and res.not_arrived == []
    assert all(t.counters == {"compute": 0, "sync": 0, "exchange": 0, "halted": 0,
                              "retired": 0, "macs": 0, "engine": 0} for t in res.tiles)
