"""The two golden-model engines against each other: the compiled fast engine
(``golden_model/fast``) and the vectorized numpy engine (``golden_model/array.py``) must give
the same RunResult JSON and the same SRAM, bit for bit, on random programs: RV32IM + dot4
streams with planted faults (``tb.randprog``), and programs mixing sync TILE / sync ARRAY,
exchange programs (incl. exchange faults), divisions, stores into code, CSR reads, ecalls and
timeouts with continued runs, at several N, T and L.
"""

import os
import random

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

SRAM = 16 * 1024
XP = 0x1800          # exchange programs
DATA = 0x1000        # data window (base register x21): words 0..255
CODE2 = 0x2000       # a second code block, rewritten at run time by stores


@pytest.fixture(params=[None, 4096, 64], ids=["window-default", "window-4096", "window-64"])
def undo_log(request, monkeypatch):
    """Undo-log sizes of the fast engine: the default (long windows), 4096 entries (windows
    of 4096 / N cycles) and 64 (windows of 64 / N cycles; lock step only above 8 tiles)."""
    if request.param is not None:
        monkeypatch.setattr(fast_run, "ULOG_ENTRIES", request.param)
    return request.param


def _run_both(cfg, segments, max_cycles, *, chunks=None, entry=0):
    """Run on both engines; return (json_fast, json_vector, arrays)."""
    out = []
    arrs = []
    for eng in ("fast", "vector"):
        arr = Array(cfg, engine=eng)
        assert arr.engine == eng
        for tile, addr, data in segments:
            arr.write_mem(tile, addr, bytes(data))
        arr.start(entry)
        if chunks and eng == "fast":      # the fast engine continues timed-out runs
            for lim in chunks:
                arr.run(lim)
        res = arr.run(max_cycles)
        out.append(res.to_json())
        arrs.append(arr)
    return out[0], out[1], arrs


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
@pytest.mark.parametrize("tiles,contexts,seed", [(1, 4, 1), (2, 6, 2), (3, 5, 3), (4, 16, 4),
                                                 (8, 6, 5), (16, 4, 6)])
def test_fast_equals_vector_random_streams(tiles, contexts, seed):
    cfg = ArrayConfig(tiles=tiles, contexts=contexts, sram_bytes=SRAM)
    p = randprog.generate(cfg, seed, total=3000)
    fj, vj, arrs = _run_both(cfg, p.segments, p.max_cycles)
    assert fj["status"] == "halted"
    assert sum(t["counters"]["retired"] for t in fj["tiles"]) > 3000 * tiles
    _assert_same(cfg, fj, vj, arrs, f"randprog N={tiles} T={contexts} seed {seed}")


@pytest.mark.parametrize("kind", sorted(randprog.FAULT_KINDS))
def test_fast_equals_vector_random_streams_with_faults(kind, undo_log):
    cfg = ArrayConfig(tiles=3, contexts=5, sram_bytes=SRAM)
    p = randprog.generate(cfg, 100 + len(kind), total=1500, fault=kind)
    fj, vj, arrs = _run_both(cfg, p.segments, p.max_cycles)
    assert fj["status"] == "fault"
    tile = p.fault[0]
    assert fj["tiles"][tile]["fault"]["cause"] == randprog.FAULT_KINDS[kind].name.lower() \
        or int(arrs[0].faults[tile].cause) == int(randprog.FAULT_KINDS[kind])
    _assert_same(cfg, fj, vj, arrs, f"randprog fault {kind}")


def test_fast_equals_vector_timeout_and_continuation(undo_log):
    cfg = ArrayConfig(tiles=4, contexts=6, sram_bytes=SRAM)
    p = randprog.generate(cfg, 7, total=4000)
    # full run in one go on the vector engine, in uneven pieces on the fast engine
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
    T = rng.choice([4, 5, 6, 8])
    L = rng.choice([1, 2, 3, 5])
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
    """Both engines share one state: a run started on one continues exactly on the other."""
    for seed in range(20):
        cfg, segs, _, _ = _bsp_case(seed)
        ref = Array(cfg, engine="vector")
        mixed = Array(cfg, engine="fast")
        for arr in (ref, mixed):
            for t, a, d in segs:
                arr.write_mem(t, a, bytes(d))
        rv = ref.run(3000).to_json()
        for i, lim in enumerate((37, 38, 200, 555, 1201, 3000)):
            mixed.engine = ("fast", "vector")[i % 2]
            rm = mixed.run(lim)
        assert rm.to_json() == rv, f"seed {seed}"


# ----------------------------------------------------------------------------- selection
def test_engine_selection():
    cfg = ArrayConfig(tiles=1, contexts=4, sram_bytes=SRAM)
    assert Array(cfg).engine == "fast"
    assert Array(cfg, trace=True).engine == "vector"
    assert Array(cfg, engine="vector").engine == "vector"
    with pytest.raises(ValueError, match="trace=True needs engine='vector'"):
        Array(cfg, trace=True, engine="fast")
    with pytest.raises(ValueError, match="engine must be one of"):
        Array(cfg, engine="turbo")


def test_engine_env_default(monkeypatch):
    cfg = ArrayConfig(tiles=1, contexts=4, sram_bytes=SRAM)
    monkeypatch.setenv("TESSERA_MODEL_ENGINE", "vector")
    assert Array(cfg).engine == "vector"
    monkeypatch.setenv("TESSERA_MODEL_ENGINE", "fast")
    assert Array(cfg).engine == "fast"
    assert os.environ["TESSERA_MODEL_ENGINE"] == "fast"


def test_fast_engine_counts_and_registers_by_hand():
    """A fixed program with known results (not produced by either engine)."""
    cfg = ArrayConfig(tiles=2, contexts=4, sram_bytes=SRAM)
    words = [asm.csrr(10, Csr.TILE_ID), asm.addi(10, 10, 7), *asm.li(11, 5), asm.div(12, 10, 11),
             asm.ecall()]
    arr = Array(cfg, engine="fast")
    arr.write_mem(None, 0, asm.program(words))
    res = arr.run(10_000)
    assert res.status == "halted"
    assert len(words) == 5
    for t in range(2):
        for c in range(4):
            ctx = res.tiles[t].contexts[c]
            assert ctx.exit_code == t + 7
            assert ctx.regs[12] == (t + 7) // 5
            assert ctx.retired == 5
    # 4 single-turn instructions then a 10-turn division then ecall, one slot every 4 cycles:
    # context 3 issues the ecall in its 4 + 10 = 14th slot, at cycle 3 + 4 * 13 = 55.
    assert res.cycles == 56
    assert np.asarray(arr.regs)[1, 2, 10] == 8
