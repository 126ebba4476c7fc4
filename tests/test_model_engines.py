"""The two golden-model engines against each other: the compiled fast engine
(``golden_model/fast``) and the vectorized numpy engine (``golden_model/array.py``) must give
the same RunResult JSON and the same SRAM, bit for bit, on random programs: RV32IM + dot4
streams with planted faults (``tb.randprog``), and programs mixing sync TILE / sync ARRAY,
exchange programs (incl. exchange faults), divisions, stores into code, CSR reads, ecalls and
timeouts with continued runs, at several N, T and L.
"""

import copy
import os
import random

import struct

import numpy as np
import pytest

from tessera.golden_model import Array
from tessera.golden_model.array import _fast_has_matrix_engine
from tessera.golden_model.decode import decode
from tessera.golden_model.fast import run as fast_run
from tessera.golden_model.fast.run import decode_fast
from tessera.tb import randprog
from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.exchange import Step, XOp, encode_program
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState, RunStatus

SRAM = 16 * 1024
XP = 0x1800          # exchange programs
DATA = 0x1000        # data window (base register x21): words 0..255
CODE2 = 0x2000       # a second code block, rewritten at run time by stores


@pytest.fixture(params=[None, pytest.param(4096, marks=pytest.mark.slow), 64],
                ids=["window-default", "window-4096", "window-64"])
def undo_log(request, monkeypatch):
    """Undo-log sizes of the fast engine: the default (long windows), 4096 entries (windows
    of 4096 / N cycles) and 64 (windows of 64 / N cycles; lock step only above 8 tiles). The
    middle size runs in ``make test-all`` (slow): the default suite keeps the two ends."""
    if request.param is not None:
        monkeypatch.setattr(fast_run, "ULOG_ENTRIES", request.param)
    return request.param


#: The vectorized engine's runs of the fuzz cases, by case. Its result does not depend on the
#: fast engine's undo-log size (the ``undo_log`` fixture), so a worker runs each case once on
#: it and compares the fast engine's runs at every size with that one (the vector side is most
#: of a fuzz test's time). Read-only: nothing changes a kept Array after its run.
_VECTOR_RUNS: dict = {}


def _run_on(eng, cfg, segments, max_cycles, chunks, entry):
    arr = Array(cfg, engine=eng)
    assert arr.engine == eng
    for tile, addr, data in segments:
        arr.write_mem(tile, addr, bytes(data))
    arr.start(entry)
    # both engines continue timed-out runs at the same cuts: under contract v2 a cut run
    # is not the same as an uninterrupted one (the M-stage work in flight at the cut is
    # applied at the cut with the engines frozen, and a cut with a fault recorded ends
    # the run with status fault: docs/design/contract-v2.md §6 points 4 and 5)
    for lim in chunks or ():
        arr.run(lim)
    return arr.run(max_cycles).to_json(), arr


def _run_both(cfg, segments, max_cycles, *, chunks=None, entry=0):
    """Run on both engines; return (json_fast, json_vector, arrays)."""
    fj, fast = _run_on("fast", cfg, segments, max_cycles, chunks, entry)
    key = (cfg, tuple((t, a, bytes(d)) for t, a, d in segments), max_cycles,
           tuple(chunks or ()), entry)
    if key not in _VECTOR_RUNS:
        _VECTOR_RUNS[key] = _run_on("vector", cfg, segments, max_cycles, chunks, entry)
    vj, vec = _VECTOR_RUNS[key]
    return fj, copy.deepcopy(vj), [fast, vec]


@pytest.fixture(autouse=True, scope="module")
def _forget_vector_runs():
    yield
    _VECTOR_RUNS.clear()
    _FULL_RUNS.clear()


def _assert_same(cfg, fj, vj, arrs, what):
    assert fj == vj, f"{what}: RunResult JSON differs between engines"
    for t in range(cfg.tiles):
        assert arrs[0].read_mem(t, 0, cfg.sram_bytes) == arrs[1].read_mem(t, 0, cfg.sram_bytes), \
            f"{what}: SRAM of tile {t} differs"
    assert arrs[0].faults == arrs[1].faults, what


# ----------------------------------------------------------------------------- decode
def test_compiled_decoder_equals_python_decoder():
    rng = random.Random(16)
    words = [rng.getrandbits(32) for _ in range(60_000)]
    # every opcode x funct3 x a few funct7, all register fields random
    for opc in range(128):
        for f3 in range(8):
            for f7 in (0, 1, 0x20, 0x21, 0x40, 0x7F):
                words.append(opc | f3 << 12 | f7 << 25 | rng.getrandbits(5) << 7
                             | rng.getrandbits(5) << 15 | rng.getrandbits(5) << 20)
    # every CSR number under every CSR funct3, rs1 = 0 and != 0
    for num in range(4096):
        for f3 in (1, 2, 3, 5, 6, 7):
            for rs1 in (0, 3):
                words.append(0x73 | 5 << 7 | f3 << 12 | rs1 << 15 | num << 20)
    words += [0, 0xFFFFFFFF, 0x73, 0x100073, 0x2B, 0x10002B, 0x20002B, 0x13, 0x100F, 0xF]
    # the compiled decoder has the matrix engine only once FAST_HAS_MATRIX_ENGINE (until then
    # Array.run falls back to the vector engine for programs with mrun/mwait)
    engine = _fast_has_matrix_engine()
    words += [0x0000300B, 0x0002A00B, 0x000FA00B, 0x0010A00B]          # mwait, mrun t0/t6, bad
    for w in words:
        d = decode(w, engine)
        assert decode_fast(w) == (int(d.op), d.rd, d.rs1, d.rs2, d.imm), hex(w)


# ----------------------------------------------------------------------------- randprog
@pytest.mark.parametrize("tiles,contexts,seed", [(1, 6, 1), (2, 6, 2), (3, 7, 3), (4, 16, 4),
                                                 (8, 6, 5), (16, 8, 6)])     # T >= 6 (v2)
def test_fast_equals_vector_random_streams(tiles, contexts, seed):
    cfg = ArrayConfig(tiles=tiles, contexts=contexts, sram_bytes=SRAM)
    p = randprog.generate(cfg, seed, total=3000)
    fj, vj, arrs = _run_both(cfg, p.segments, p.max_cycles)
    assert fj["status"] == "halted"
    assert sum(t["counters"]["retired"] for t in fj["tiles"]) > 3000 * tiles
    _assert_same(cfg, fj, vj, arrs, f"randprog N={tiles} T={contexts} seed {seed}")


@pytest.mark.parametrize("kind", sorted(randprog.FAULT_KINDS))
def test_fast_equals_vector_random_streams_with_faults(kind, undo_log):
    cfg = ArrayConfig(tiles=3, contexts=7, sram_bytes=SRAM)
    p = randprog.generate(cfg, 100 + len(kind), total=1500, fault=kind)
    fj, vj, arrs = _run_both(cfg, p.segments, p.max_cycles)
    assert fj["status"] == "fault"
    tile = p.fault[0]
    assert fj["tiles"][tile]["fault"]["cause"] == randprog.FAULT_KINDS[kind].name.lower() \
        or int(arrs[0].faults[tile].cause) == int(randprog.FAULT_KINDS[kind])
    _assert_same(cfg, fj, vj, arrs, f"randprog fault {kind}")


# ----------------------------------------------------------------------------- store log
_STORE_KEYS = ("cycle", "tile", "context", "pc", "store_addr", "store_data", "store_mask")


def _store_logs(cfg, segments, max_cycles, chunks=None, capacity=1 << 16):
    """The fast engine's store log (Array(stores=capacity)) and the vectorized engine's
    retire-trace stores of the same runs, as lists of tuples (_STORE_KEYS order)."""
    fast = Array(cfg, engine="fast", stores=capacity)
    vec = Array(cfg, engine="vector", trace=True)
    for arr in (fast, vec):
        for tile, addr, data in segments:
            arr.write_mem(tile, addr, bytes(data))
        arr.start(0)
        for lim in (chunks or []) + [max_cycles]:
            res = arr.run(lim)
    got = [tuple(int(v) for v in row) for row in zip(*(fast.stores[k] for k in _STORE_KEYS))]
    want = [tuple(r[k] for k in _STORE_KEYS) for r in vec.trace if r["store_mask"]]
    return fast, got, want, res


def test_fast_store_log_equals_vector_trace_stores(monkeypatch):
    """The store log of the checked graph runs (tessera/toolchain/graph/checked.py): every
    retired store of the fast engine, with the store fields of the vectorized engine's retire
    trace, in (cycle, tile) order — on random streams with each planted fault and on BSP /
    exchange programs with timeouts and continued runs, with windows of 64 / N cycles so that
    rolled-back windows (whose stores are logged again in lock step) are in the sample. (The
    fault kinds here are 3 of randprog's 8: a store, a load and an ebreak; each rolls back a
    window; test_fast_equals_vector_random_streams_with_faults runs all 8 without the log.)"""
    monkeypatch.setattr(fast_run, "ULOG_ENTRIES", 64)
    rollbacks = stores = 0
    cases = []
    for kind in ("access_fault_store", "misaligned_load", "ebreak"):
        cfg = ArrayConfig(tiles=3, contexts=7, sram_bytes=SRAM)
        p = randprog.generate(cfg, 200 + len(kind), total=250, fault=kind)
        cases.append((f"fault {kind}", cfg, p.segments, p.max_cycles, None))
    for seed in range(8):
        cfg, segs, max_cycles, chunks = _bsp_case(seed)
        cases.append((f"bsp seed {seed}", cfg, segs, max_cycles, chunks))
    for what, cfg, segs, max_cycles, chunks in cases:
        fast, got, want, _ = _store_logs(cfg, segs, max_cycles, chunks)
        assert got == want, what
        assert fast.stores_needed == len(want), what
        rollbacks += fast._fast_stats["rollbacks"]
        stores += len(want)
    assert rollbacks > 0 and stores > 1000, (rollbacks, stores)


def test_store_log_capacity_counts_what_it_cannot_keep():
    """A log smaller than the run's stores keeps ``capacity`` entries and counts them all;
    a new start empties it; the vectorized engine has no store log."""
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM)
    p = randprog.generate(cfg, 7, total=800)
    fast, _, want, res = _store_logs(cfg, p.segments, p.max_cycles, capacity=10)
    assert res.status == RunStatus.HALTED and len(want) > 10
    assert fast.stores_needed == len(want) and len(fast.stores) == 10
    fast.start(0)
    assert fast.stores_needed == 0 and len(fast.stores) == 0
    with pytest.raises(ValueError, match="stores=4 needs the fast engine"):
        Array(cfg, engine="vector", stores=4)
    with pytest.raises(ValueError, match="capacity >= 0"):
        Array(cfg, stores=-1)
    assert Array(cfg).stores is None


def test_fast_equals_vector_timeout_and_continuation(undo_log):
    cfg = ArrayConfig(tiles=4, contexts=6, sram_bytes=SRAM)
    p = randprog.generate(cfg, 7, total=4000)
    # a run continued in uneven pieces (the same pieces on both engines)
    fj, vj, arrs = _run_both(cfg, p.segments, p.max_cycles, chunks=[1, 2, 3, 97, 1000, 1001])
    _assert_same(cfg, fj, vj, arrs, "continued run")
    # a run cut short: status timeout on both, same partial state
    fj, vj, arrs = _run_both(cfg, p.segments, 2345)
    assert fj["status"] == "timeout"
    _assert_same(cfg, fj, vj, arrs, "timeout")


# ----------------------------------------------------------------------------- BSP + exchange
def _gen_code(rng, T, N):
    """Random code for one tile: ALU, divisions, loads/stores, stores into code, syncs,
    CSR reads, xprog writes, ecalls on some contexts, an occasional fault."""
    code = [asm.csrr(5, Csr.CONTEXT_ID), asm.csrr(6, Csr.TILE_ID), *asm.li(9, XP),
            asm.csrw(Csr.XPROG, 9), *asm.li(20, CODE2), *asm.li(21, DATA)]
    body = []
    for _ in range(rng.randrange(10, 40)):
        r = rng.random()
        if r < 0.12:
            body.append([asm.sync_array()])
        elif r < 0.18:
            body.append([asm.sync_tile()])
        elif r < 0.30:
            op = rng.choice([asm.div, asm.divu, asm.rem, asm.remu])
            body.append([asm.addi(13, 0, rng.randrange(-3, 4)), op(14, 8, 13), asm.add(8, 8, 14)])
        elif r < 0.40:
            body.append([asm.csrr(7, rng.choice([Csr.CYCLE, Csr.INSTRET, Csr.CYCLEH,
                                                 Csr.XPROG])), asm.add(8, 8, 7)])
        elif r < 0.50:
            body.append([asm.lw(11, 4 * rng.randrange(64), 21), asm.xor(8, 8, 11)])
        elif r < 0.58:
            body.append([asm.sw(8, 4 * rng.randrange(64, 128), 21)])
        elif r < 0.64:
            # rewrite the shared subroutine (another context may be about to fetch it)
            w = asm.addi(15, 15, rng.randrange(1, 100))
            body.append([*asm.li(16, w), asm.sw(16, 0, 20), asm.jalr(1, 20, 0)])
        elif r < 0.72:
            body.append([asm.dot4(10, 8, 11), asm.mul(12, 10, 8), asm.mulh(17, 12, 8)])
        elif r < 0.80:
            skip = rng.randrange(1, 3)
            body.append(("skip", rng.randrange(T), skip))
        elif r < 0.86:
            body.append([asm.addi(12, 0, rng.randrange(T)), asm.bne(5, 12, 8), asm.ecall()])
        elif r < 0.88:
            body.append([asm.addi(12, 0, rng.randrange(N)), asm.bne(6, 12, 8),
                         rng.choice([asm.ebreak(), 0, asm.lw(1, 1, 0)])])
        else:
            body.append([asm.addi(10, 10, rng.randrange(1, 50))])
    sizes = [3 if isinstance(b, tuple) else len(b) for b in body]
    out = list(code)
    for i, b in enumerate(body):
        if isinstance(b, tuple):
            _, ctx, cnt = b
            off = 4 * (2 + sum(sizes[i + 1:i + 1 + cnt]))
            out += [asm.addi(12, 0, ctx), asm.beq(5, 12, off), asm.nop()]
        else:
            out += b
    out.append(asm.ecall())
    return out


def _gen_xprog(rng, N):
    steps = []
    for _ in range(rng.randrange(0, 10)):
        r = rng.random()
        if r < 0.2:
            steps.append(Step.idle(rng.randrange(1, 6)))
        else:
            send = DATA + 4 * rng.randrange(64) if rng.random() < 0.7 else None
            if rng.random() < 0.7:
                rel = rng.random() < 0.5
                src = rng.randrange(2048 if rel else N + (1 if rng.random() < 0.05 else 0))
                recv = DATA + 4 * rng.randrange(128, 256) if rng.random() < 0.97 else None
                if recv is None:
                    steps.append(Step.send_recv(send))
                else:
                    steps.append(Step.send_recv(send, src, recv, rel))
            else:
                steps.append(Step.send_recv(send))
    prog = bytearray(encode_program(steps))
    if rng.random() < 0.03 and len(prog) >= 16:        # a reserved op: exchange fault
        w0 = int.from_bytes(prog[8:12], "little") | (int(XOp.RESERVED) << 30)
        prog[8:12] = w0.to_bytes(4, "little")
    return bytes(prog)


def _bsp_case(seed):
    rng = random.Random(f"engines-bsp-{seed}")
    N = rng.choice([1, 2, 3, 5, 8])
    T = rng.choice([6, 7, 8, 9])          # T >= 6, L >= 2 (contract v2)
    L = rng.choice([2, 3, 4, 5])
    cfg = ArrayConfig(tiles=N, contexts=T, sram_bytes=SRAM, exchange_latency=L)
    segs = []
    for t in range(N):
        segs.append((t, 0, asm.program(_gen_code(rng, T, N))))
        segs.append((t, XP, _gen_xprog(rng, N)))
        segs.append((t, DATA, bytes(rng.getrandbits(8) for _ in range(1024))))
        segs.append((t, CODE2, asm.program([asm.addi(15, 15, 1), asm.jalr(0, 1, 0)])))
    max_cycles = rng.choice([80, 300, 1200, 5000])
    chunks = sorted(rng.sample(range(1, max_cycles), 3)) if rng.random() < 0.4 else None
    return cfg, segs, max_cycles, chunks


def test_fast_equals_vector_bsp_exchange_fuzz(undo_log):
    statuses, causes, exchanged = [], set(), 0
    windows = rollbacks = 0
    for seed in range(150):
        cfg, segs, max_cycles, chunks = _bsp_case(seed)
        fj, vj, arrs = _run_both(cfg, segs, max_cycles, chunks=chunks)
        _assert_same(cfg, fj, vj, arrs, f"bsp seed {seed} (N={cfg.tiles} T={cfg.contexts} "
                                        f"L={cfg.exchange_latency})")
        statuses.append(fj["status"])
        windows += arrs[0]._fast_stats["windows"]
        rollbacks += arrs[0]._fast_stats["rollbacks"]
        for t in fj["tiles"]:
            c = t["counters"]
            assert c["compute"] + c["sync"] + c["exchange"] + c["halted"] == fj["cycles"]
            exchanged += c["exchange"] > 1
            if t["fault"]:
                causes.add(t["fault"]["cause"])
    # the sample covers every way a run ends, exchange programs and exchange faults
    assert {"halted", "fault", "timeout"} <= set(statuses), statuses
    assert exchanged > 50
    assert {"exchange_fault", "breakpoint", "illegal_instruction", "misaligned_load"} <= causes
    # both loops of the fast engine ran: run-ahead windows, and fault windows rolled back
    assert windows > 150 and rollbacks > 5, (windows, rollbacks)


def test_runs_switch_engines_midway():
    """Both engines share one state: a run started on one continues exactly on the other.
    The reference makes the same cuts on the vectorized engine alone (a cut is part of the
    run under contract v2: the work in flight is applied at it, docs/design/contract-v2.md §6
    point 4), and every cut's state must agree too."""
    for seed in range(20):
        cfg, segs, _, _ = _bsp_case(seed)
        ref = Array(cfg, engine="vector")
        mixed = Array(cfg, engine="fast")
        for arr in (ref, mixed):
            for t, a, d in segs:
                arr.write_mem(t, a, bytes(d))
        for i, lim in enumerate((37, 38, 200, 555, 1201, 3000)):
            mixed.engine = ("fast", "vector")[i % 2]
            rm = mixed.run(lim)
            rv = ref.run(lim)
            assert rm.to_json() == rv.to_json(), f"seed {seed} cut {lim}"


# ----------------------------------------------------------------------------- selection
def test_engine_selection():
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM)
    assert Array(cfg).engine == "fast"
    assert Array(cfg, trace=True).engine == "vector"
    assert Array(cfg, engine="vector").engine == "vector"
    with pytest.raises(ValueError, match="trace=True needs engine='vector'"):
        Array(cfg, trace=True, engine="fast")
    with pytest.raises(ValueError, match="engine must be one of"):
        Array(cfg, engine="turbo")


def test_engine_env_default(monkeypatch):
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM)
    monkeypatch.setenv("TESSERA_MODEL_ENGINE", "vector")
    assert Array(cfg).engine == "vector"
    monkeypatch.setenv("TESSERA_MODEL_ENGINE", "fast")
    assert Array(cfg).engine == "fast"
    assert os.environ["TESSERA_MODEL_ENGINE"] == "fast"


def test_fast_engine_counts_and_registers_by_hand():
    """A fixed program with known results (not produced by either engine)."""
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM)
    words = [asm.csrr(10, Csr.TILE_ID), asm.addi(10, 10, 7), *asm.li(11, 5), asm.div(12, 10, 11),
             asm.ecall()]
    arr = Array(cfg, engine="fast")
    arr.write_mem(None, 0, asm.program(words))
    res = arr.run(10_000)
    assert res.status == "halted"
    assert len(words) == 5
    for t in range(2):
        for c in range(6):
            ctx = res.tiles[t].contexts[c]
            assert ctx.exit_code == t + 7
            assert ctx.regs[12] == (t + 7) // 5
            assert ctx.retired == 5
    # 4 single-turn instructions then a 10-turn division then ecall, one slot every 6 cycles:
    # context 5 issues the ecall in its 4 + 10 = 14th slot, at cycle 5 + 6 * 13 = 83; every
    # context HALTED from 88; D(2) = 3 (contract v2): cycles = 91.
    assert res.cycles == 91
    assert np.asarray(arr.regs)[1, 2, 10] == 8


# ----------------------------------------------------------------------------- matrix engine
# Memory map of the engine fuzz (16 KiB tiles): code 0, DATA 0x1000 (random loads/stores),
# XP 0x1800, CODE2 0x2000 as above; descriptors, channel parameters, streamed and stationary
# operands and outputs below. Random loads and stores also hit the operand and output regions
# (the §12 memory order against the engine's own reads and writes).
E_DESC = 0x2400      # 8 descriptors of 64 bytes
E_PARAM = 0x2600     # 8 channel records of 16 bytes
E_GATHER = 0x2700    # a K_GATHER table: 4 entries (offsets 24, 0, 16, 8; junk high halves)
GATHER_OFFS = (24, 0, 16, 8)
E_A = 0x2800         # streamed operand region (2 KiB)
E_W = 0x3000         # stationary operand region (1 KiB)
E_OUT = 0x3400       # outputs (2 KiB)
E_END = 0x3C00


def _rand_desc(rng, lanes, bad: bool):
    """One random descriptor (mostly valid, small) as bytes; ``bad``: plant one fault."""
    from tessera.spec.engine import Descriptor, Mode, Flag
    while True:
        J0, J1 = rng.randrange(1, 5), rng.randrange(1, 4)
        K0, K1 = rng.randrange(1, 3), rng.randrange(1, 3)
        C = rng.randrange(1, lanes + 1)
        mode = rng.choice([Mode.RAW, Mode.TFLITE, Mode.FLOAT32])
        # 8-byte words of one element's output (a layout, not the step count OW): RAW 4C
        # bytes, else C bytes in one word
        words = (C + 1) // 2 if mode == Mode.RAW else 1
        a_s0 = 8 * rng.choice([K0, K0 * K1, K0 * K1 + 1, 0])
        gather = rng.random() < 0.3       # k1 offsets from E_GATHER (entries from 0..2)
        ak_s1 = E_GATHER + 8 * rng.randrange(3) if gather else 8 * rng.choice([K0, K0 * J0, 1])
        a_s1 = 8 * rng.choice([J0 * K0 * K1, J0 * K0 * K1 + 2, 3])
        span_a = ((J1 - 1) * a_s1 + (J0 - 1) * a_s0 + (max(GATHER_OFFS) if gather else
                                                       (K1 - 1) * ak_s1) + 8 * (K0 - 1) + 8)
        w_sm = 8 * K0 * K1 * rng.choice([1, 2])
        span_w = (C - 1) * w_sm + 8 * K0 * K1
        c_s0 = 8 * words * rng.choice([1, 2])
        c_s1 = c_s0 * J0 + 8 * rng.choice([0, 1])
        span_c = (J1 - 1) * c_s1 + (J0 - 1) * c_s0 + 8 * words
        if span_a <= E_W - E_A and span_w <= E_OUT - E_W and span_c <= E_END - E_OUT:
            break
    a_base = E_A + 8 * rng.randrange((E_W - E_A - span_a) // 8 + 1)
    w_base = E_W + 8 * rng.randrange((E_OUT - E_W - span_w) // 8 + 1)
    c_base = E_OUT + 8 * rng.randrange((E_END - E_OUT - span_c) // 8 + 1)
    if mode != Mode.RAW and C < 8 and rng.random() < 0.3:
        c_base += rng.randrange(0, 8 - C + 1)          # C bytes inside one 8-byte word
    flags = rng.randrange(4) | (Flag.K_GATHER if gather else 0)
    unsigned_out = bool(flags & Flag.OUT_UNSIGNED)
    lo, hi = (0, 255) if unsigned_out else (-128, 127)
    qmin = rng.randrange(lo, hi + 1)
    qmax = rng.randrange(qmin, hi + 1)
    zp = rng.randrange(lo, hi + 1)
    f = dict(a_base=a_base, a_s0=a_s0, a_s1=a_s1, ak_s1=ak_s1, w_base=w_base, w_sm=w_sm,
             c_base=c_base, c_s0=c_s0, c_s1=c_s1, p_base=E_PARAM, J0=J0, J1=J1, K0=K0, K1=K1,
             C=C, mode=int(mode), flags=flags, zp=zp, qmin=qmin, qmax=qmax)
    if bad:
        kind = rng.choice(["C0", "Cbig", "J0", "K1", "mode", "flags", "qrange", "qorder", "fmode", "g_bad",
                           "a_mis", "a_oor", "w_oor", "c_oor", "c_mis", "c_end", "p_oor", "J"])
        if kind == "C0":
            f["C"] = 0
        elif kind == "Cbig":
            f["C"] = lanes + 1
        elif kind == "J0":
            f["J0"] = 0
        elif kind == "K1":
            f["K1"] = 0
        elif kind == "mode":
            f["mode"] = rng.choice([3, 4, 255])
        elif kind == "g_bad":        # K_GATHER with a misaligned or outside gather word
            f["flags"] |= Flag.K_GATHER
            f["ak_s1"] = rng.choice([E_GATHER + 4, SRAM - 8, SRAM])
            f["K1"] = 2
        elif kind == "fmode":        # FLOAT32 reads the multipliers as binary32: may fault
            f["mode"] = int(Mode.FLOAT32)
        elif kind == "flags":
            f["flags"] |= 8 << rng.randrange(5)
        elif kind == "qrange":
            f["mode"] = int(Mode.TFLITE)
            f["qmax"] = 300
        elif kind == "qorder":
            f["mode"] = int(Mode.TFLITE)
            f["qmin"], f["qmax"] = 5, 4
        elif kind == "a_mis":
            f["a_s1"] += 4 if J1 > 1 else 0
            f["a_base"] += 0 if J1 > 1 else 4
        elif kind == "a_oor":
            f["a_base"] = SRAM - 8 * rng.randrange(0, 2)
        elif kind == "w_oor":
            f["w_sm"] = 0x10000
        elif kind == "c_oor":
            f["c_s1"] = 0x20000
            f["J1"] = max(J1, 2)
        elif kind == "c_end":        # outputs up to the end of the SRAM: in RAW the first or
            f["c_base"] = SRAM - 8 * rng.randrange(1, 4)     # the second word of a write outside
            f["c_s0"], f["c_s1"] = 0, 0
        elif kind == "c_mis":
            f["c_base"] += 4 if f["mode"] == int(Mode.RAW) else 8 - (C - 1) + 0 if C > 1 else 0
            if C == 1 and f["mode"] != int(Mode.RAW):
                f["c_base"] = SRAM + 1
        elif kind == "p_oor":
            f["p_base"] = SRAM - 16 * rng.randrange(0, 2) + 8
        elif kind == "J":
            f["J0"], f["J1"] = 17, 16
    return Descriptor(**f).pack()


def _rand_params(rng, bad: bool):
    from tessera.spec.engine import ChannelParams
    out = b""
    for m in range(8):
        shift = rng.randrange(-31, 31) if rng.random() < 0.8 else rng.randrange(-8, 4)
        if bad and rng.random() < 0.3:
            shift = rng.choice([31, -32, 100, -(1 << 31)])
        mult = rng.choice([rng.randrange(1 << 30, 1 << 31), rng.randrange(-(1 << 31), 1 << 31),
                           -(1 << 31), rng.randrange(100, 141) << 23 | rng.randrange(1 << 23)])
        if ((mult >> 23) & 0xFF) == 0xFF:      # finite as a FLOAT32 multiplier ...
            mult &= ~(1 << 30)
            if bad and rng.random() < 0.3:     # ... unless a fault is planted (§12 check 3)
                mult |= 0x7F800000
        bias = rng.randrange(-(1 << 31), 1 << 31) if rng.random() < 0.3 else rng.randrange(-5000, 5000)
        out += ChannelParams(bias, mult, shift).pack()
    return out


def _gen_engine_code(rng, T, N, has_engine):
    """Random code for one tile: the BSP fuzz's instruction mix plus mrun (several contexts,
    descriptors picked at random, sometimes a bad address), mwait, loads of the outputs and
    stores into the operands and outputs; some contexts ecall without waiting."""
    code = [asm.csrr(5, Csr.CONTEXT_ID), asm.csrr(6, Csr.TILE_ID), *asm.li(9, XP),
            asm.csrw(Csr.XPROG, 9), *asm.li(20, CODE2), *asm.li(21, DATA),
            *asm.li(23, E_OUT), *asm.li(24, E_A), *asm.li(25, E_DESC)]
    body = []
    for _ in range(rng.randrange(10, 40)):
        r = rng.random()
        if r < 0.14:
            d = E_DESC + 64 * rng.randrange(8)
            if rng.random() < 0.03:
                d = rng.choice([d + 4, SRAM, SRAM - 32, 0x7FFFFFF8])
            body.append([*asm.li(22, d), asm.mrun(22)])
        elif r < 0.24:
            body.append([asm.mwait()])
        elif r < 0.32:
            body.append([asm.lw(11, 4 * rng.randrange(512), 23), asm.xor(8, 8, 11)])
        elif r < 0.36:
            body.append([rng.choice([asm.lb, asm.lhu])(11, rng.randrange(0, 2000, 2), 23),
                         asm.add(8, 8, 11)])
        elif r < 0.42:
            body.append([asm.sw(8, 4 * rng.randrange(512), rng.choice([23, 24]))])
        elif r < 0.44:
            body.append([asm.sb(8, rng.randrange(2000), rng.choice([23, 24]))])
        elif r < 0.50:
            body.append([asm.sync_array()])
        elif r < 0.53:
            body.append([asm.sync_tile()])
        elif r < 0.58:
            op = rng.choice([asm.div, asm.remu])
            body.append([asm.addi(13, 0, rng.randrange(-3, 4)), op(14, 8, 13), asm.add(8, 8, 14)])
        elif r < 0.64:
            body.append([asm.lw(11, 4 * rng.randrange(64), 21), asm.sw(8, 4 * rng.randrange(64, 128), 21)])
        elif r < 0.70:
            body.append([asm.dot4(10, 8, 11), asm.mul(12, 10, 8)])
        elif r < 0.76:
            body.append(("skip", rng.randrange(T), rng.randrange(1, 3)))
        elif r < 0.80:
            body.append([asm.addi(12, 0, rng.randrange(T)), asm.bne(5, 12, 8), asm.ecall()])
        elif r < 0.81:
            body.append([asm.addi(12, 0, rng.randrange(N)), asm.bne(6, 12, 8),
                         rng.choice([asm.ebreak(), asm.lw(1, 1, 0)])])
        elif r < 0.85:
            body.append([asm.csrr(7, Csr.CYCLE), asm.add(8, 8, 7)])
        else:
            body.append([asm.addi(10, 10, rng.randrange(1, 50))])
    sizes = [3 if isinstance(b, tuple) else len(b) for b in body]
    out = list(code)
    for i, b in enumerate(body):
        if isinstance(b, tuple):
            _, ctx, cnt = b
            off = 4 * (2 + sum(sizes[i + 1:i + 1 + cnt]))
            out += [asm.addi(12, 0, ctx), asm.beq(5, 12, off), asm.nop()]
        else:
            out += b
    if rng.random() < 0.8:
        out.append(asm.mwait())
    out.append(asm.ecall())
    return out


def _engine_case(seed):
    rng = random.Random(f"engines-matrix-{seed}")
    N = rng.choice([1, 1, 2, 3, 4])
    T = rng.choice([6, 7, 8, 9])          # T >= 6, L >= 2 (contract v2)
    L = rng.choice([2, 3, 4])
    P = rng.choice([16, 32, 32, 64] + ([0] if seed % 17 == 0 else []))
    cfg = ArrayConfig(tiles=N, contexts=T, sram_bytes=SRAM, exchange_latency=L, engine_macs=P)
    lanes = max(P // 8, 1)
    segs = []
    nbad = rng.random() < 0.35
    for t in range(N):
        segs.append((t, 0, asm.program(_gen_engine_code(rng, T, N, P > 0))))
        segs.append((t, XP, _gen_xprog(rng, N)))
        segs.append((t, DATA, bytes(rng.getrandbits(8) for _ in range(1024))))
        segs.append((t, CODE2, asm.program([asm.addi(15, 15, 1), asm.jalr(0, 1, 0)])))
        descs = b"".join(_rand_desc(rng, lanes, nbad and rng.random() < 0.15) for _ in range(8))
        segs.append((t, E_DESC, descs))
        segs.append((t, E_PARAM, _rand_params(rng, nbad)))
        segs.append((t, E_GATHER, b"".join(struct.pack("<II", o, rng.randrange(1 << 32))
                                           for o in GATHER_OFFS)))
        segs.append((t, E_A, bytes(rng.getrandbits(8) for _ in range(E_W - E_A))))
        segs.append((t, E_W, bytes(rng.getrandbits(8) for _ in range(E_OUT - E_W))))
    max_cycles = rng.choice([150, 600, 2500, 8000])
    chunks = sorted(rng.sample(range(1, max_cycles), 3)) if rng.random() < 0.3 else None
    return cfg, segs, max_cycles, chunks


#: Seeds of the engine fuzz whose runs differ between the engines on a known, reported point
#: (none: seed 85, an mrun issued the cycle before a faulting last step, is fixed and tested by
#: test_mrun_issued_before_a_faulting_last_step).
KNOWN_DIVERGENT: dict = {}


def test_fast_equals_vector_matrix_engine_fuzz(undo_log):
    statuses, causes, engine_cycles, macs = [], set(), 0, 0
    for seed in range(120):
        if seed in KNOWN_DIVERGENT:
            continue
        cfg, segs, max_cycles, chunks = _engine_case(seed)
        fj, vj, arrs = _run_both(cfg, segs, max_cycles, chunks=chunks)
        assert arrs[1].last_engine == "vector"
        assert arrs[0].last_engine == "fast"
        _assert_same(cfg, fj, vj, arrs, f"engine seed {seed} (N={cfg.tiles} T={cfg.contexts} "
                                        f"L={cfg.exchange_latency} P={cfg.engine_macs})")
        statuses.append(fj["status"])
        for t in fj["tiles"]:
            engine_cycles += t["counters"]["engine"]
            macs += t["counters"]["macs"]
            if t["fault"]:
                causes.add(t["fault"]["cause"])
    assert {"halted", "fault", "timeout"} <= set(statuses), statuses
    assert "engine_fault" in causes, causes
    assert engine_cycles > 10_000, engine_cycles


def _spmd_elements(P):
    """J0 of :func:`_spmd_store_race`: 120 / OW (RAW, C = P / 8; 120 or 60 elements)."""
    from tessera.spec.engine import Mode, output_words
    return 120 // output_words(Mode.RAW, P // 8)


def _spmd_store_race(tiles, contexts, P):
    """Every tile runs the same program (SPMD, as the graph runtime runs a codelet): context 0
    starts one RAW command whose J0 = 120 / OW stream steps all read the same 8-byte vector
    (``a_s0`` = 0) and waits (OW = ⌈C/4⌉, §12 "Step schedule": the last block's stream then
    lasts 120 steps at every P, as at P = 32 before the two-word writes of 2026-12-02); every other context stores a new value into that vector in each
    of its slots. So many stream reads at k come right after a store whose M is k − 1 (issued at
    k − 5, contract v2) or right before one whose M is k + 1 (issued at k − 3)."""
    from tessera.spec.engine import ChannelParams, Descriptor, Mode
    C = P // 8
    desc = Descriptor(a_base=E_A, a_s0=0, a_s1=0, ak_s1=8, w_base=E_W, w_sm=8, c_base=E_OUT,
                      c_s0=8 * ((C + 1) // 2), c_s1=0, p_base=E_PARAM,
                      J0=_spmd_elements(P), J1=1, K0=1,
                      K1=1, C=C, mode=int(Mode.RAW), flags=0, zp=0, qmin=0, qmax=0).pack()
    params = b"".join(ChannelParams(m, 1 << 30, 0).pack() for m in range(C))
    loop = [asm.sw(8, 0, 24), asm.sw(9, 4, 24), asm.addi(8, 8, 0x101), asm.addi(9, 9, -7),
            asm.addi(10, 10, -1), asm.bne(10, 0, -20), asm.ecall()]
    code = [asm.csrr(5, Csr.CONTEXT_ID), *asm.li(24, E_A), *asm.li(25, E_DESC),
            asm.addi(8, 5, 3), asm.addi(9, 5, 11), asm.addi(10, 0, 60),
            asm.bne(5, 0, 16), asm.mrun(25), asm.mwait(), asm.ecall(), *loop]
    w = bytes((m * 8 + i) * 7 % 256 for m in range(C) for i in range(8))
    segs = []
    for t in range(tiles):
        segs += [(t, 0, asm.program(code)), (t, E_DESC, desc), (t, E_PARAM, params),
                 (t, E_A, bytes(range(1, 9))), (t, E_W, w)]
    cfg = ArrayConfig(tiles=tiles, contexts=contexts, sram_bytes=SRAM, engine_macs=P)
    return cfg, segs


# T >= 6 (v2); at P = 16 the race leaves only 3..5 versions of the vector (T = 6..9), too few
# for the check below (> 5), so the 3-tile case moved from (T = 4, P = 16) to (T = 7, P = 32)
@pytest.mark.parametrize("tiles,contexts,P", [(2, 6, 32), (3, 7, 32), (4, 8, 64)])
def test_fast_equals_vector_spmd_engine_reads_after_stores(tiles, contexts, P):
    """An engine read at k sees the SRAM after the writes of cycles < k (§12 "Memory order"):
    contract v2, a store issued at t writes in its M cycle t + 4, so a read at k sees the
    stores issued at <= k − 5 and not one issued at k − 3 (M = k + 1); cycle k itself is no
    engine cycle when the word in M at k (issued at k − 4) is a store. Tiles in lock step are
    stepped as one group by the vector engine; it must apply the same rule as for one tile
    (mutant M037bd9 of docs/verification.md let the group see a later store; the v1 case
    T = 4, P = 16 is below v2's T >= 6 and becomes T = 7, P = 32). Oracles: the fast engine (separate code),
    and the tiles against each other and against a 1-tile run of the same program (SPMD:
    identical)."""
    cfg, segs = _spmd_store_race(tiles, contexts, P)
    fj, vj, arrs = _run_both(cfg, segs, 20_000)
    assert fj["status"] == "halted", fj["status"]
    _assert_same(cfg, fj, vj, arrs, f"SPMD store race N={tiles} T={contexts} P={P}")
    one_cfg, one_segs = _spmd_store_race(1, contexts, P)
    oj, _, one = _run_both(one_cfg, one_segs, 20_000)
    J0 = _spmd_elements(P)
    n_out = J0 * 8 * ((P // 8 + 1) // 2)
    ref = one[1].sram.read(0, E_OUT, n_out)
    for t in range(tiles):
        assert arrs[1].sram.read(t, E_OUT, n_out) == ref, f"tile {t} differs from the 1-tile run"
    # the race is real: the stream saw more than one version of the vector
    outs = np.frombuffer(ref, dtype="<i4").reshape(J0, -1)
    assert len({tuple(r) for r in outs}) > 5


def test_runs_switch_engines_midway_with_matrix_engines():
    """The matrix-engine state is shared too: a run with busy engines continued on the other
    engine at random cycles (commands in flight, a command queued behind a last step, the
    first engine cycle after the switch ordered against the instructions in flight)."""
    for seed in range(40):
        if seed in KNOWN_DIVERGENT:
            continue
        cfg, segs, max_cycles, _ = _engine_case(seed)
        ref = Array(cfg, engine="vector")
        mixed = Array(cfg, engine="fast")
        for arr in (ref, mixed):
            for t, a, d in segs:
                arr.write_mem(t, a, bytes(d))
        rng = random.Random(seed)
        for i, lim in enumerate(sorted(rng.sample(range(1, max_cycles), 5)) + [max_cycles]):
            mixed.engine = ("fast", "vector")[(i + seed) % 2]
            rm = mixed.run(lim)
            rv = ref.run(lim).to_json()       # the same cuts (see test_runs_switch_engines_midway)
            assert rm.to_json() == rv, f"seed {seed} cut {lim}"
        for t in range(cfg.tiles):
            assert mixed.read_mem(t, 0, SRAM) == ref.read_mem(t, 0, SRAM), f"seed {seed} tile {t}"


@pytest.mark.parametrize("eng", ["fast", "vector"])
def test_mrun_issued_before_a_faulting_last_step(eng):
    """An mrun issued at t whose M (t + 4) is the cycle after the running command's last step,
    and that step faults. The faulting step has no effect, so the command never ended: the
    engine is busy at t + 4 and the mrun does not retire. (The vectorized engine retired it
    before this test; seed 85 of the engine fuzz; re-derived for contract v2, T = 6, and
    for WRITE_DELAY = 10: the second issuer is context 5, was 3.)"""
    from tessera.spec.engine import Descriptor, Mode
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM)
    # J = C = K0 = K1 = 1, RAW: 8 + 2 + 1 + 0 + 1 + 10 = 22 steps (WRITE_DELAY = 10), the
    # write (step s_0 + 10 = 11 + 10 = 21, after the last stream step 11) faults: c_base is
    # outside the SRAM (addr = c_base).
    desc = Descriptor(a_base=E_A, w_base=E_W, c_base=SRAM + 800, p_base=E_PARAM, C=1,
                      mode=Mode.RAW).pack()
    ctx5 = 40
    code = [asm.csrr(5, Csr.CONTEXT_ID),          # 0
            asm.addi(12, 0, 5),                    # 4
            asm.beq(5, 12, ctx5 - 8),              # 8: context 5 -> 40
            asm.bne(5, 0, 36 - 12),                # 12: contexts 1, 2, 3, 4 -> ecall at 36
            *asm.li(22, E_DESC),                   # 16, 20
            asm.mrun(22),                          # 24
            asm.mwait(),                           # 28
            asm.ecall(),                           # 32
            asm.ecall(),                           # 36
            *asm.li(22, E_DESC),                   # 40, 44
            asm.nop(), asm.nop(), asm.nop(),       # 48, 52, 56
            asm.mrun(22),                          # 60
            asm.mwait(), asm.ecall()]
    assert len(code) == 18 and len(asm.li(22, E_DESC)) == 2
    arr = Array(cfg, engine=eng)
    arr.write_mem(None, 0, asm.program(code))
    arr.write_mem(0, E_DESC, desc)
    res = arr.run(1000)
    # context 0 issues at 0, 6, ..., the mrun (pc 24) at 36: x = 40, steps at 41..62, the
    # last one faults at 62, visible 63: cycles = 63 + D(1) = 65. Context 5 issues at 5, 11,
    # 17 (beq), li at 23, 29, nops at 35, 41, 47, the mrun at 53 (M 57), 59 (M 63, right after
    # the faulting last step): busy every time, never retires; its next slot 65 is after
    # t_s = 64. Retired: csrr, addi, beq, 2 li words, 3 nops = 8.
    assert res.status == "fault" and res.cycles == 65
    f = res.tiles[0].fault
    assert (f.context, f.cause, f.pc, f.addr) == (0, FaultCause.ENGINE_FAULT, 24, SRAM + 800)
    assert res.tiles[0].contexts[5].pc == 60
    assert res.tiles[0].contexts[5].retired == 8


def test_fast_matrix_engine_runs_continued_every_few_cycles():
    """Runs cut every 1..7 cycles and continued on the fast engine equal the same cuts on the
    vectorized engine (contract v2: at a cut the M-stage work in flight is applied with the
    engines frozen; a continued run's first engine cycles then skip the cycles whose M the
    LOAD/STORE words issued before the cut own, §12, the flags handed over in PortSlots)."""
    for seed in range(16):
        if seed in KNOWN_DIVERGENT:
            continue
        cfg, segs, max_cycles, _ = _engine_case(seed)
        max_cycles = min(max_cycles, 1500)
        ref = Array(cfg, engine="vector")
        arr = Array(cfg, engine="fast")
        for a in (ref, arr):
            for t, addr, data in segs:
                a.write_mem(t, addr, bytes(data))
        rng = random.Random(seed)
        k = 0
        while k < max_cycles:
            k = min(max_cycles, k + rng.randrange(1, 8))
            rf = arr.run(k).to_json()
            assert rf == ref.run(k).to_json(), f"seed {seed} cut {k}"
            if rf["status"] != "timeout":
                break
        rv = ref.run(max_cycles).to_json()
        assert arr.run(max_cycles).to_json() == rv, f"seed {seed}"
        for t in range(cfg.tiles):
            assert arr.read_mem(t, 0, SRAM) == ref.read_mem(t, 0, SRAM), f"seed {seed} tile {t}"


# ----------------------------------------------------------------------------- v2: the stop
# Hand-derived cases of §7 "Stop" (contract v2), on both engines: every expected number below
# comes from the text, not from a run.
def _stop_window_program():
    """Every context: j0 csrr x6 tile_id, j1 csrr x5 context_id, j2 slli x8 = 2 * tile, j3 sub
    x7 = context - 2 * tile, j4 bne x7 -> 24; j5 (pc 20) ebreak for (tile 0, context 0) and
    (tile 1, context 2); the others loop at 24: addi x10 += 1, jal -> 24."""
    return asm.program([asm.csrr(6, Csr.TILE_ID), asm.csrr(5, Csr.CONTEXT_ID),
                        asm.slli(8, 6, 1), asm.sub(7, 5, 8), asm.bne(7, 0, 8), asm.ebreak(),
                        asm.addi(10, 10, 1), asm.jal(0, -4)])


@pytest.mark.parametrize("eng", ["fast", "vector"])
def test_fault_stop_window_by_hand(eng):
    """N = 2 (D = ceil(log2 2) + 2 = 3), T = 6: context c issues its j-th instruction at
    6j + c. Tile 0 context 0 issues the ebreak (j5) at 30: FAULT visible from v = 35, the array
    stops at the end of t_s = v + D - 1 = 37, cycles = 38. Everything issued at <= 37 takes
    effect on both tiles: tile 1 context 2's ebreak issued at 32 faults too (recorded, its own
    stop 37 + 3 = 40 comes later). Retired: a faulting context j0..j4 = 5 (pc 20); the others
    issue at 6j + c <= 37, i.e. floor((37 - c) / 6) + 1 = 7 for c <= 1 (the 7th, j6, is the
    jal: pc 24) and 6 for c >= 2 (the 6th, j5, is the addi at 24: pc 28); x10 = 1 everywhere
    but in the faulting contexts. Every cycle counts compute (a context is RUNNING)."""
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM)
    arr = Array(cfg, engine=eng)
    arr.write_mem(None, 0, _stop_window_program())
    res = arr.run(10_000)
    assert arr.last_engine == eng
    assert (res.status, res.cycles) == ("fault", 38)
    faulting = {(0, 0), (1, 2)}
    for t in range(2):
        f = res.tiles[t].fault
        assert (f.context, f.cause, f.pc, f.addr) == (0 if t == 0 else 2,
                                                      FaultCause.BREAKPOINT, 20, 20)
        assert res.tiles[t].counters["compute"] == 38
        for c in range(6):
            ctx = res.tiles[t].contexts[c]
            if (t, c) in faulting:
                assert (ctx.state, ctx.retired, ctx.pc) == (ContextState.FAULT, 5, 20)
            else:
                n = (37 - c) // 6 + 1
                assert (ctx.state, ctx.retired, ctx.pc) == (ContextState.RUNNING, n,
                                                            24 if n == 7 else 28)
                assert ctx.regs[10] == 1


@pytest.mark.parametrize("eng", ["fast", "vector"])
def test_timeout_inside_the_stop_window_by_hand(eng):
    """The program above cut by max_cycles = 36, inside the window (v = 35, t_s = 37): cycles
    0..35 are simulated (§7 "Timeout"), both faults (issued at 30 and 32) are recorded, so
    status = fault with cycles = 36. Retired: the issues at 6j + c <= 35, floor((35 - c) / 6)
    + 1 = 6 for every c; the faulting contexts 5."""
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM)
    arr = Array(cfg, engine=eng)
    arr.write_mem(None, 0, _stop_window_program())
    res = arr.run(36)
    assert (res.status, res.cycles) == ("fault", 36)
    assert [res.tiles[t].fault.context for t in range(2)] == [0, 2]
    assert [[c.retired for c in res.tiles[t].contexts] for t in range(2)] == \
        [[5, 6, 6, 6, 6, 6], [6, 6, 5, 6, 6, 6]]
    assert arr.run(10_000).cycles == 36        # a faulted run is not continued (§6 point 5)


@pytest.mark.parametrize("eng", ["fast", "vector"])
@pytest.mark.parametrize("case", ["valid", "step7", "step0"])
def test_halt_with_a_busy_engine_by_hand(eng, case):
    """mrun issued at 18 by context 0: M = 22 = x (idle: accepted), steps s = 0, 1, ... at
    23 + s (no load, store or exchange). The last ecall is context 0's at 24: every context
    HALTED from v = 29, stop at the end of t_s = 30, cycles = v + D(1) = 31 (§7).

    valid: a valid command (C = 1, J = K = 1, TFLITE: 8 + 2 + 1 + 0 + 1 + 8 = 20 steps) is still
    busy at the stop (steps 0..7 at 23..30 done): status halted, engine counter 31 - 22 = 9.
    step7: C = 0, step 7 (cycle 30 <= t_s) faults (addr = d), visible 31: recorded, status
    fault, cycles 31; context 0 FAULT with pc = pc_e = 12; engine counter 9 (frozen, busy).
    step0: d = SRAM bytes (outside), step 0 at 23 faults (addr = d), visible 24: that stop
    comes first, t_s = 25, cycles = 26; context 0 is FAULT from 24, so its ecall slot at 24 is
    empty (retired j0..j3 = 4 with the mrun, retired in M); the others' ecalls (18..23) take
    effect (HALTED); engine counter 26 - 22 = 4."""
    from tessera.spec.engine import Descriptor
    d = {"valid": 0x400, "step7": 0x400, "step0": SRAM}[case]
    desc = Descriptor(C=0 if case == "step7" else 1, p_base=0x500).pack()
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM, engine_macs=32)
    # j0 li x22 = d (one word), j1 csrr x5 context_id, j2 bne x5 -> 16, j3 (pc 12) mrun x22
    # (context 0 only), then ecall (pc 16): context 0's at j4 = 24, the others' at 18 + c
    code = [*asm.li(22, d), asm.csrr(5, Csr.CONTEXT_ID), asm.bne(5, 0, 8), asm.mrun(22),
            asm.ecall()]
    assert len(code) == 5
    arr = Array(cfg, engine=eng)
    arr.write_mem(0, 0, asm.program(code))
    arr.write_mem(0, 0x400, desc)
    res = arr.run(10_000)
    assert arr.last_engine == eng
    t = res.tiles[0]
    others = [(c.state, c.retired, c.pc) for c in t.contexts[1:]]
    assert others == [(ContextState.HALTED, 4, 20)] * 5
    c0 = t.contexts[0]
    if case == "valid":
        assert (res.status, res.cycles, t.fault) == ("halted", 31, None)
        assert (c0.state, c0.retired, c0.pc) == (ContextState.HALTED, 5, 20)
        assert t.counters["engine"] == 9
    else:
        f = t.fault
        assert (f.context, f.cause, f.pc, f.addr) == (0, FaultCause.ENGINE_FAULT, 12, d)
        assert res.status == "fault"
        assert res.cycles == (31 if case == "step7" else 26)
        assert (c0.state, c0.pc) == (ContextState.FAULT, 12)
        assert c0.retired == (5 if case == "step7" else 4)
        assert t.counters["engine"] == (9 if case == "step7" else 4)


# The v2 stop fuzz: every context of every tile runs a short store/load loop of its own length
# and then ends with an ecall, a fault, an mrun left running (or waited for) before its ecall, or
# a longer loop; the loop lengths are close, so faults of several tiles and contexts fall inside
# one stop window (v .. v + D - 1), busy engines meet the halt decision, and engine faults come
# before, inside or after it. A third of the runs is cut by max_cycles inside the window of the
# uninterrupted run (the cut found with the vectorized engine: only the cut cycle, no expected
# value, comes from a run).
_BLOCK = 128                 # bytes of code per context (32 words)
_STOP_BASE = 0x100


def _stop_block(rng, c, T, has_engine, p_fault):
    n = rng.randrange(1, 6)
    blk = [asm.addi(10, 0, n),
           asm.sw(10, 4 * c, 21), asm.lw(11, 4 * ((c + 1) % T), 21),      # loop: 4 words
           asm.addi(10, 10, -1), asm.bne(10, 0, -12)]
    r = rng.random()
    if r < p_fault:
        blk += rng.choice([[asm.ebreak()], [0], [asm.lw(1, 1, 0)], [*asm.li(7, SRAM), asm.sw(1, 0, 7)],
                           [asm.jalr(0, 0, 2)], [*asm.li(7, SRAM), asm.jalr(0, 7, 0)],
                           [*asm.li(7, 0x3F00), asm.csrw(Csr.STACK_LIMIT, 7), asm.addi(2, 0, 16)]])
    elif r < p_fault + 0.3:
        blk += [asm.ecall()]
    elif r < p_fault + 0.6 and has_engine:
        d = E_DESC + 64 * rng.randrange(8)      # late: after a loop as long as the longest
        blk += [asm.addi(10, 0, rng.randrange(6, 12)), asm.addi(10, 10, -1), asm.bne(10, 0, -4)]
        blk += [*asm.li(22, d), asm.mrun(22)] + ([asm.mwait()] if rng.random() < 0.3 else [])
        blk += [asm.ecall()]
    else:
        blk += [asm.addi(10, 0, rng.randrange(3, 10)), asm.sw(10, 4 * c, 21),
                asm.addi(10, 10, -1), asm.bne(10, 0, -8), asm.ecall()]
    assert len(blk) <= _BLOCK // 4
    return blk


def _stop_case(seed):
    rng = random.Random(f"engines-stop-{seed}")
    N = rng.choice([1, 2, 3, 4, 6, 8, 16])
    T = rng.choice([6, 7, 8])
    P = rng.choice([0, 16, 32, 64])
    cfg = ArrayConfig(tiles=N, contexts=T, sram_bytes=SRAM, engine_macs=P)
    lanes = max(P // 8, 1)
    p_fault = rng.choice([0.0, 0.0, 0.01, 0.05, 0.3])
    head = [asm.csrr(5, Csr.CONTEXT_ID), *asm.li(21, DATA), asm.slli(6, 5, 7),
            asm.addi(6, 6, _STOP_BASE), asm.jalr(0, 6, 0)]
    assert 4 * len(head) <= _STOP_BASE
    segs = []
    for t in range(N):
        img = bytearray(asm.program(head).ljust(_STOP_BASE, b"\0"))
        for c in range(T):
            img += asm.program(_stop_block(rng, c, T, P > 0, p_fault)).ljust(_BLOCK, b"\0")
        segs.append((t, 0, bytes(img)))
        segs.append((t, DATA, bytes(rng.getrandbits(8) for _ in range(256))))
        descs = b"".join(_rand_desc(rng, lanes, p_fault > 0 and rng.random() < 0.1 + p_fault) for _ in range(8))
        segs.append((t, E_DESC, descs))
        segs.append((t, E_PARAM, _rand_params(rng, p_fault > 0 and rng.random() < 0.2)))
        segs.append((t, E_GATHER, b"".join(struct.pack("<II", o, 0) for o in GATHER_OFFS)))
        segs.append((t, E_A, bytes(rng.getrandbits(8) for _ in range(E_W - E_A))))
        segs.append((t, E_W, bytes(rng.getrandbits(8) for _ in range(E_OUT - E_W))))
    return cfg, segs, rng


_FULL_RUNS: dict = {}


def _vector_full_run(cfg, segs):
    """The vectorized engine's uninterrupted run (20,000 cycles) of a stop-fuzz case, once per
    case in a worker (as _VECTOR_RUNS)."""
    key = (cfg, tuple((t, a, bytes(d)) for t, a, d in segs))
    if key not in _FULL_RUNS:
        ref = Array(cfg, engine="vector")
        for t, a, d in segs:
            ref.write_mem(t, a, bytes(d))
        _FULL_RUNS[key] = ref.run(20_000)
    return _FULL_RUNS[key]


def test_fast_equals_vector_stop_fuzz(undo_log):
    runs = multi = in_window = busy_at_halt = 0
    statuses, causes = [], set()
    for seed in range(120):
        cfg, segs, rng = _stop_case(seed)
        full = _vector_full_run(cfg, segs)
        max_cycles = 20_000
        if rng.random() < 0.35 and full.status != "timeout":
            # a cut inside the stop window of the uninterrupted run: v <= cut < v + D
            D = cfg.decision_latency
            max_cycles = rng.randrange(max(1, full.cycles - D), full.cycles + 1)
            in_window += max_cycles < full.cycles
        fj, vj, arrs = _run_both(cfg, segs, max_cycles)
        _assert_same(cfg, fj, vj, arrs, f"stop seed {seed} (N={cfg.tiles} T={cfg.contexts} "
                                        f"P={cfg.engine_macs}, max_cycles {max_cycles})")
        runs += 1
        statuses.append(fj["status"])
        nf = sum(t["fault"] is not None for t in fj["tiles"])
        multi += nf >= 2
        busy_at_halt += fj["status"] == "halted" and any(
            arrs[0]._mx.busy[t] for t in range(cfg.tiles))
        for t in fj["tiles"]:
            if t["fault"]:
                causes.add(t["fault"]["cause"])
    assert {"halted", "fault", "timeout"} <= set(statuses), sorted(statuses)
    # the sample has what the v2 stop rules are about
    assert multi > 10 and in_window > 10 and busy_at_halt > 5, (multi, in_window, busy_at_halt)
    assert {"engine_fault", "breakpoint", "stack_overflow", "access_fault_store"} <= causes, causes


@pytest.mark.parametrize("cut", [11, 12, 13])
@pytest.mark.parametrize("first, then", [("vector", "fast"), ("fast", "vector")])
def test_array_barrier_cut_between_arrival_and_release_by_hand(first, then, cut):
    """A run cut after the ARRAY barrier's k* and before (or at) its release r, continued on
    the other engine, releases at r = k* + D all the same (§5: r is fixed by k*; nothing is
    in flight at such a cut, so the continued run is the uninterrupted one). The barrier's
    armed flag is part of the shared state: the vectorized engine visits no cycle between k*
    and r, so it never re-reads the flag itself; only the other engine sees a lost flag
    (mutant M03c31e, ``bar.armed = True`` dropped: the fast engine re-armed at the cut,
    r = cut + D). Expected values by hand, as in tests/test_model_timing.py
    ``test_array_barrier_timing`` (N = 2, T = 6, D = ceil(log2 2) + 2 = 3)."""
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=SRAM)
    assert cfg.decision_latency == 3
    arr = Array(cfg, engine=first)
    arr.write_mem(None, 0, asm.program([asm.sync_array(), asm.csrr(10, Csr.CYCLE), asm.ecall()]))
    arr.start(0)
    # sync ARRAY of context c issues at c (c = 0..5), the last at t = 5: visible WAIT_ARRAY
    # from t + 5, so k* = 10 and r = k* + D = 13; a cut at 11..13 runs cycles < cut
    res = arr.run(cut)
    assert arr.last_engine == first
    assert res.status == "timeout" and res.cycles == cut
    arr.engine = then
    res = arr.run(1000)
    assert arr.last_engine == then
    # xprog = 0: e = r = 13, RUNNING from 14, in slot order: csrr of context k % 6 at
    # k = 14..19, ecall at 20..25, all HALTED from v = 25 + 5 = 30, cycles = v + D = 33
    assert res.status == "halted" and res.cycles == 33
    for t in range(2):
        assert [int(arr.regs[t, c, 10]) for c in range(6)] == [18, 19, 14, 15, 16, 17]


def test_switch_to_fast_with_loads_in_flight_beside_a_busy_engine():
    """Written for golden-model mutant M025d7e (fast/run.py: the LOAD/STORE flags of the words
    issued in the 4 cycles before a hand-over not copied into the compiled loop's M-stage
    ring), which survived: the random cuts of the test above never fell where another
    context's load was in M while the engine was streaming. §12 "Engine cycles": a cycle
    whose M-stage word is a LOAD or STORE owns the SRAM's data ports and the engine does not
    step in it; that holds across a cut, since a continued run is the same run.

    Context 0 runs one RAW command of 66 steps (C = 1, J = 5, K0 = 8: 8 + 2 + 8 + 7·5 + 5 + 8,
    accepted at x = 28, so the engine is busy until about cycle 100 plus the stalls);
    contexts 1..5 each load a word 20 times in a 3-instruction loop, so some context's load
    is in M in most cycles of the command. Every cut k in 24..140: the run to k on the
    vectorized engine, continued on the fast one, equals the same cuts on the vectorized
    engine alone (status, cycles, counters, every context, the output words)."""
    from helpers.model_engine import SOUT, image, issuer, raw_small
    from tessera.spec.engine import Descriptor, Mode
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM)
    mem = raw_small(5)
    mem[0x400] = Descriptor(a_base=0x500, a_s0=8, w_base=0x540, w_sm=8, c_base=SOUT, c_s0=8,
                            p_base=0x560, J0=5, K0=8, C=1, mode=Mode.RAW).pack()
    # (x6, x7 hold the dispatch's context id and code offset: the loop counts in x9)
    loads = [asm.addi(8, 0, 20), asm.lw(10, 0x100, 0), asm.addi(9, 9, 1), asm.bne(9, 8, -8),
             asm.ecall()]
    codes = {0: issuer(0x400), **{c: loads for c in range(1, 6)}}
    img = image(codes, 6)

    def fresh(engine):
        a = Array(cfg, engine=engine)
        a.write_mem(None, 0, img)
        for addr, data in mem.items():
            a.write_mem(0, addr, bytes(data))
        return a

    whole = fresh("vector").run(5000)
    assert whole.status == "halted"
    assert whole.tiles[0].counters["engine"] > 66         # stalls by the loads were counted
    for k in range(24, 141):
        ref, mixed = fresh("vector"), fresh("vector")
        r1, m1 = ref.run(k), mixed.run(k)
        assert m1.to_json() == r1.to_json(), f"cut {k}"
        mixed.engine = "fast"
        r2, m2 = ref.run(5000), mixed.run(5000)
        assert m2.to_json() == r2.to_json(), f"cut {k}: continued on the fast engine"
        assert mixed.read_mem(0, SOUT, 40) == ref.read_mem(0, SOUT, 40), f"cut {k}"
