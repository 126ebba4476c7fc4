"""Exchange STEP runs (docs/architecture.md §6 "Runs"; format word0 [27:20] = run length − 1 in
tessera/spec/exchange.py): a STEP of run length n moves n consecutive words in n cycles. The
golden model's two engines are checked against values derived by hand from the text; the RTL
must give the same result and memory."""

import struct
from types import SimpleNamespace

import pytest

from tessera.golden_model import Array
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.exchange import MAX_RUN, Step, decode_step, encode_program, encode_step
from tessera.spec.faults import FaultCause
from tessera.toolchain import asm

SRAM = 16 * 1024
N, L = 4, 4
CFG = ArrayConfig(tiles=N, contexts=4, sram_bytes=SRAM, exchange_latency=L)
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
    # 4 contexts issue sync ARRAY at 8..11: k* = 14, r = 14 + S(4 tiles) = 14 + 4 = 18;
    # e = r + 8 = 26; RUNNING from 27: context c's lw at its first slot >= 27, csrr 4 later,
    # ecall 8 later: the last ecall is context 2's at 30 + 8 = 38, cycles = 39.
    assert res.status == "halted" and res.cycles == 39
    for t in range(N):
        for i in range(4):
            assert word(arr, t, RBUF + 4 * i) == data_word((t - 1) % N, i)
        assert res.tiles[t].counters["exchange"] == 26 - 18 + 1
        c3 = res.tiles[t].contexts[3]
        assert (c3.regs[10], c3.regs[11]) == (data_word((t - 1) % N, 0), 27 + 4)


@pytest.mark.parametrize("engine", ENGINES)
def test_fault_in_the_middle_of_a_run(engine):
    arr, res = run_model(engine, bad_tile=1)
    # tile 1's receive run starts at r + 4 = 22 at SRAM - 8: cycle 22 writes SRAM - 8, 23
    # writes SRAM - 4, 24 would write SRAM: exchange_fault at t_f = 24 (pc = the step's
    # address XP + 8, addr = the byte address SRAM); cycles = 25. Every other tile's step of
    # cycle 24 completes (its third word), the fourth (cycle 25) does not happen.
    assert res.status == "fault" and res.cycles == 25
    f = res.tiles[1].fault
    assert (f.context, FaultCause(f.cause), f.pc, f.addr) == (
        None, FaultCause.EXCHANGE_FAULT, XP + 8, SRAM)
    assert word(arr, 1, SRAM - 8) == data_word(0, 0)
    assert word(arr, 1, SRAM - 4) == data_word(0, 1)
    for t in (0, 2, 3):
        assert res.tiles[t].fault is None
        got = [word(arr, t, RBUF + 4 * i) for i in range(4)]
        assert got == [data_word((t - 1) % N, i) for i in range(3)] + [0]


@pytest.mark.parametrize("engine", ENGINES)
def test_send_fault_in_the_middle_of_a_run(engine):
    arr, res = run_model(engine, bad_send_tile=2)
    # tile 2's send run starts at r = 18 at SRAM - 8: cycles 18 and 19 send SRAM - 8 and
    # SRAM - 4, cycle 20 would send SRAM: exchange_fault at t_f = 20 (pc = the step's address
    # XP, addr = SRAM); cycles = 21. No receive step has started (they start at r + 4 = 22).
    assert res.status == "fault" and res.cycles == 21
    f = res.tiles[2].fault
    assert (f.context, FaultCause(f.cause), f.pc, f.addr) == (
        None, FaultCause.EXCHANGE_FAULT, XP, SRAM)
    assert all(res.tiles[t].fault is None for t in (0, 1, 3))
    assert all(word(arr, t, RBUF) == 0 for t in range(N))


@pytest.mark.rtl
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
