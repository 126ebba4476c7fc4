"""Exchange STEP runs (docs/architecture.md §6 "Runs"; format word0 [27:20] = run length − 1 in
tessera/spec/exchange.py): a STEP of run length n moves n consecutive words in n cycles. The
golden model's two engines are checked against values derived by hand from the text; the RTL
must give the same result and memory. Contract v2: T = 6, k* = t + 5 after the last sync ARRAY
at t, r = k* + D (D(4) = 4), an exchange step's fault at c is visible from c + 1 and the array
stops at the end of t_s = c + 1 + D - 1 = c + D (cycles = c + 1 + D); every other tile's steps
up to t_s take effect; the faulting tile does no further step (docs/design/contract-v2.md:
the settlement of "a fault in cycle c + i stops the run there")."""

import struct
from types import SimpleNamespace

import pytest

from tessera.golden_model import Array
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.exchange import MAX_RUN, Step, decode_step, encode_program, encode_step
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState
from tessera.toolchain import asm

SRAM = 16 * 1024
N, L = 4, 4
CFG = ArrayConfig(tiles=N, contexts=6, sram_bytes=SRAM, exchange_latency=L)
XP, DATA, RBUF = 0x400, 0x700, 0x600
ENGINES = ("vector", "fast")


def code():
    # pc 0: addi t0, x0, XP (one word: XP < 2048); 4: csrw xprog; 8: sync ARRAY; 12: lw a0,
    # RBUF; 16: csrr a1, cycle; 20: ecall
    return [*asm.li(5, XP), asm.csrw(Csr.XPROG, 5), asm.sync_array(), asm.lw(10, RBUF, 0),
            asm.csrr(11, Csr.CYCLE), asm.ecall()]


def data_word(t, i):
    return 0x1000 + 0x100 * t + i


def program(recv_addr=RBUF, send_addr=DATA):
    # r: STEP run 4 sending DATA + 4i (cycles r..r+3); r+4 = r+L: STEP run 4 receiving from
    # tile t-1 (relative N-1) into recv_addr + 4i the words sent at r..r+3; END at r+8 = e.
    return encode_program([Step.send_recv(send_addr=send_addr, run=4),
                           Step.send_recv(recv_src=N - 1, recv_addr=recv_addr, relative=True,
                                          run=4)])


def preload(bad_tile=None, bad_send_tile=None):
    out = [(None, XP, program())]
    for t in range(N):
        out.append((t, DATA, struct.pack("<4I", *(data_word(t, i) for i in range(4)))))
    if bad_tile is not None:    # its receive run reaches past the SRAM in its third cycle
        out.append((bad_tile, XP, program(recv_addr=SRAM - 8)))
    if bad_send_tile is not None:   # its send run reaches past the SRAM in its third cycle
        out.append((bad_send_tile, XP, program(send_addr=SRAM - 8)))
    return out


def run_model(engine, bad_tile=None, bad_send_tile=None):
    arr = Array(CFG, engine=engine)
    arr.write_mem(None, 0, asm.program(code()))
    for t, a, b in preload(bad_tile, bad_send_tile):
        arr.write_mem(t, a, b)
    arr.start(0)
    return arr, arr.run(2000)


def word(arr, t, addr):
    return struct.unpack("<I", arr.read_mem(t, addr, 4))[0]


def test_format_round_trip():
    s = Step.send_recv(send_addr=0x40, recv_src=3, recv_addr=0x80, run=MAX_RUN)
    w0, w1 = encode_step(s)
    assert (w0 >> 20) & 0xFF == MAX_RUN - 1
    assert decode_step(w0, w1) == s
    with pytest.raises(ValueError, match="run length 257 outside 1..256"):
        encode_step(Step.send_recv(send_addr=0, run=MAX_RUN + 1))


@pytest.mark.parametrize("engine", ENGINES)
def test_runs_move_consecutive_words(engine):
    arr, res = run_model(engine)
    # 6 contexts issue sync ARRAY (slot 2) at 12..17, visible 17..22: k* = 22,
    # r = 22 + D(4 tiles) = 22 + 4 = 26; e = r + 8 = 34; RUNNING from 35: context c's lw at
    # its first slot >= 35 (c5 35, c0 36, c1 37, c2 38, c3 39, c4 40), csrr 6 later, ecall 12
    # later: the last ecall is context 4's at 52, all HALTED from 57, cycles = 57 + 4 = 61.
    assert res.status == "halted" and res.cycles == 61
    for t in range(N):
        for i in range(4):
            assert word(arr, t, RBUF + 4 * i) == data_word((t - 1) % N, i)
        assert res.tiles[t].counters["exchange"] == 34 - 26 + 1
        c3 = res.tiles[t].contexts[3]
        assert (c3.regs[10], c3.regs[11]) == (data_word((t - 1) % N, 0), 39 + 6)


@pytest.mark.parametrize("engine", ENGINES)
def test_fault_in_the_middle_of_a_run(engine):
    arr, res = run_model(engine, bad_tile=1)
    # tile 1's receive run starts at r + 4 = 30 at SRAM - 8: cycle 30 writes SRAM - 8, 31
    # writes SRAM - 4, 32 would write SRAM: exchange_fault at c = 32 (pc = the step's
    # address XP + 8, addr = the byte address SRAM), visible from 33: t_s = 33 + D - 1 = 36,
    # cycles = 37. Every other tile's receive steps of cycles 32 and 33 complete (all four
    # words arrive); their END at 34 <= t_s ends their exchange phase, their contexts are
    # RUNNING from 35 and contexts 5 and 0 issue their lw at 35 and 36 = t_s.
    assert res.status == "fault" and res.cycles == 37
    f = res.tiles[1].fault
    assert (f.context, FaultCause(f.cause), f.pc, f.addr) == (
        None, FaultCause.EXCHANGE_FAULT, XP + 8, SRAM)
    assert word(arr, 1, SRAM - 8) == data_word(0, 0)
    assert word(arr, 1, SRAM - 4) == data_word(0, 1)
    for t in (0, 2, 3):
        assert res.tiles[t].fault is None
        got = [word(arr, t, RBUF + 4 * i) for i in range(4)]
        assert got == [data_word((t - 1) % N, i) for i in range(4)]
        # contexts 5 and 0 issued their lw (pc 12) at 35 and 36; the others are RUNNING at pc 12
        ctx = res.tiles[t].contexts
        assert [c.pc for c in ctx] == [16, 12, 12, 12, 12, 16]
        assert ctx[5].regs[10] == ctx[0].regs[10] == data_word((t - 1) % N, 0)
        assert all(c.state == ContextState.RUNNING for c in ctx)
    # tile 1 stays in its exchange phase (no END): its contexts keep waiting
    assert all(c.state == ContextState.WAIT_ARRAY for c in res.tiles[1].contexts)


@pytest.mark.parametrize("engine", ENGINES)
def test_send_fault_in_the_middle_of_a_run(engine):
    arr, res = run_model(engine, bad_send_tile=2)
    # tile 2's send run starts at r = 26 at SRAM - 8: cycles 26 and 27 send SRAM - 8 and
    # SRAM - 4 (zero words), cycle 28 would send SRAM: exchange_fault at c = 28 (pc = the
    # step's address XP, addr = SRAM), visible from 29: t_s = 32, cycles = 33. The other
    # tiles' sends (26..29) and receive steps of 30, 31, 32 take effect (33 does not); tile 2
    # does no further step (no send at 29, no receive).
    assert res.status == "fault" and res.cycles == 33
    f = res.tiles[2].fault
    assert (f.context, FaultCause(f.cause), f.pc, f.addr) == (
        None, FaultCause.EXCHANGE_FAULT, XP, SRAM)
    assert all(res.tiles[t].fault is None for t in (0, 1, 3))
    got = [[word(arr, t, RBUF + 4 * i) for i in range(4)] for t in range(N)]
    # tile t receives from tile t - 1 the words sent at 26, 27, 28 (received at 30, 31, 32)
    assert got[0] == [data_word(3, i) for i in range(3)] + [0]
    assert got[1] == [data_word(0, i) for i in range(3)] + [0]
    assert got[2] == [0] * 4                 # its own receive run never started
    assert got[3] == [0] * 4                 # tile 2 sent the zero words of SRAM - 8, - 4



@pytest.mark.rtl
@pytest.mark.slow       # the default suite runs the same three runs on the same RTL in the
#                         Amaranth simulator (below) and the exchange on Verilator in
#                         test_rtl_array; this one costs a Verilator build of its own (L = 4)
@pytest.mark.parametrize("bad_tile, bad_send_tile", [(None, None), (1, None), (None, 2)])
def test_rtl_equals_the_model(bad_tile, bad_send_tile):
    from tessera.backends import run_program_io
    image = SimpleNamespace(entry=0, segments=[SimpleNamespace(addr=0,
                                                               data=asm.program(code()))])
    pre = []
    for t, a, b in preload(bad_tile, bad_send_tile):
        pre += [(tt, a, b) for tt in (range(N) if t is None else [t])]
    back = [(t, RBUF, 16) for t in range(N)] + [(1, SRAM - 8, 8)]
    res, mem = run_program_io("rtl", CFG, image, 2000, preload=pre, readback=back)
    rtl = res.to_json()
    rtl.pop("backend", None)
    for engine in ENGINES:
        arr, m = run_model(engine, bad_tile, bad_send_tile)
        doc = m.to_json()
        doc.pop("backend", None)
        assert rtl == doc, engine
        assert mem == [bytes(arr.read_mem(t, a, n)) for t, a, n in back], engine


@pytest.mark.parametrize("bad_tile, bad_send_tile", [(None, None), (1, None), (None, 2)])
def test_amaranth_sim_equals_the_model(bad_tile, bad_send_tile):
    """The same three runs on the array RTL in the Amaranth simulator (no Verilator build:
    cheap enough per RTL mutant of the exchange engine, scripts/mutants.py), compared with the
    golden model field by field (tests/helpers/hdl_parity.py)."""
    from helpers.hdl_parity import compare
    images = [[(0, asm.program(code()))] for _ in range(N)]
    for t, a, b in preload(bad_tile, bad_send_tile):
        for tt in (range(N) if t is None else [t]):
            images[tt].append((a, b))
    got = compare(CFG, images, 2000, [(RBUF, RBUF + 16), (SRAM - 8, SRAM)])
    assert got["status"] == ("halted" if bad_tile is None and bad_send_tile is None
                             else "fault")
