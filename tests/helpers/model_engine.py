"""Shared set-up of the golden-model matrix-engine tests (tests/test_model_engine*.py):
the program layout, the standard command issuer, memory images and fault checks of
docs/architecture.md §12 (the derivations, contract v2 with T = 6, are in tests/test_model_engine.py's docstring)."""

import numpy as np
import pytest

from tessera.golden_model import Array
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.engine import ChannelParams, Descriptor, Mode
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState
from tessera.toolchain import asm

SRAM = 16 * 1024
CFG = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM)      # engine_macs 32: M = 4 lanes
D0, D1 = 0x400, 0x440            # descriptor addresses
XP = 0x780                        # exchange program
A, W, P, OUT = 0x800, 0x1800, 0x2800, 0x3000   # streamed, stationary, parameters, output
CODE = 0x80                       # context c's code at CODE * (c + 1)


@pytest.fixture(autouse=True, params=["fast", "vector"])
def model_engine(request, monkeypatch):
    """Every test runs on both golden-model engines (the default of ``Array(engine=None)``);
    tests that name an engine run it on both passes."""
    monkeypatch.setenv("TESSERA_MODEL_ENGINE", request.param)
    return request.param


def image(codes: dict, T: int = 6) -> bytes:
    """Dispatch + per-context code blocks (default: ``ecall``)."""
    img = bytearray(asm.program([asm.csrr(6, Csr.CONTEXT_ID), asm.slli(7, 6, 7),
                                 asm.jalr(0, 7, CODE)]))
    img += bytes(CODE - len(img))
    for c in range(T):
        blk = asm.program(codes.get(c, [asm.ecall()]))
        assert len(blk) <= CODE
        img += blk + bytes(CODE - len(blk))
    return bytes(img)


def issue(j: int, c: int, T: int = 6) -> int:
    """Issue cycle of instruction j of context c's code block, no retries before it."""
    return (3 + j) * T + c


def params(bias, mult=None, shift=None) -> bytes:
    n = len(bias)
    mult = [0] * n if mult is None else mult
    shift = [0] * n if shift is None else shift
    return b"".join(ChannelParams(int(b), int(m), int(s)).pack()
                    for b, m, s in zip(bias, mult, shift))


def make(codes, mem, cfg=CFG, engine=None, tile=None):
    """An Array with the program and ``mem`` ({addr: bytes}) written to every tile."""
    arr = Array(cfg, engine=engine)
    arr.write_mem(None, 0, image(codes, cfg.contexts))
    for addr, data in mem.items():
        arr.write_mem(tile, addr, bytes(data))
    return arr


def i32(arr, addr, n, tile=0):
    return np.frombuffer(arr.read_mem(tile, addr, 4 * n), dtype="<i4").astype(np.int64)


def fault(res, tile=0):
    f = res.tiles[tile].fault
    return None if f is None else (f.context, f.cause, f.pc, f.addr)


def wrap32(v):
    v = np.asarray(v, dtype=np.int64) & 0xFFFFFFFF
    return np.where(v >= 1 << 31, v - (1 << 32), v)


# Context 0: the standard command issuer. j0 li x5 (one addi, t = 18), j1 mrun (t = 24, so
# x = 28 and step s at 29 + s with no stall), j2 mwait (t = 30 + 6r, M = 34 + 6r), then csrr
# x10, cycle and ecall. mrun's pc = 0x80 + 4. The other contexts' default code (ecall at
# j0, 18 + c) halts them by 28.
def issuer(d=D0, extra_before_mwait=()):
    return [*asm.li(5, d), asm.mrun(5), *extra_before_mwait, asm.mwait(),
            asm.csrr(10, Csr.CYCLE), asm.ecall()]


PC_MRUN = CODE + 4

# A small RAW command: C = 1, K = 8 (KB = 1), J elements X(j) at SA + 8j, output at SOUT + 8j
# (all below 2048, so that loads and stores reach them with an x0-relative offset).
SA, SW, SP, SOUT, SOUT2 = 0x500, 0x540, 0x560, 0x600, 0x700
X_ROWS = np.array([[1, 2, 3, 4, 5, 6, 7, 8], [-1, -2, -3, -4, -5, -6, -7, -8],
                   [127] * 8], dtype=np.int8)
W_ROW = np.array([1, 2, 3, 4, 5, 6, 7, 8], dtype=np.int8)
# acc(j) = 1000 + sum_i X(j)[i] * W[i]: sum i^2 (1..8) = 204, 127 * 36 = 4572
RAW_ACC = [1204, 796, 5572]
# two more rows for J up to 5 (SA + 40 <= SW): [2]*8 -> 1000 + 72, [-1]*8 -> 1000 - 36
X_ROWS5 = np.vstack([X_ROWS, np.array([[2] * 8, [-1] * 8], dtype=np.int8)])
RAW_ACC5 = RAW_ACC + [1072, 964]


def raw_small(J):
    desc = Descriptor(a_base=SA, a_s0=8, w_base=SW, w_sm=8, c_base=SOUT, c_s0=8, p_base=SP,
                      J0=J, C=1, mode=Mode.RAW)
    return {D0: desc.pack(), SA: X_ROWS5[:J].tobytes(), SW: W_ROW.tobytes(),
            SP: params([1000])}


def run_cmd(desc: Descriptor, mem: dict, cfg=CFG, code=None):
    mem = dict(mem)
    mem[D0] = desc.pack()
    arr = make({0: code or issuer()}, mem, cfg=cfg)
    res = arr.run(200_000)
    assert res.status == "halted", fault(res)
    return arr, res


def fault_case(desc=None, mem=None, cfg=CFG, d=D0, codes=None):
    mem = dict(mem or {})
    if desc is not None:
        mem[d] = desc.pack()
    arr = make(codes or {0: issuer(d)}, mem, cfg=cfg)
    return arr, arr.run(2000)


def good(**kw):
    base = dict(a_base=A, a_s0=8, J0=2, w_base=W, w_sm=8, c_base=OUT, c_s0=8, p_base=P, C=1,
                mode=Mode.TFLITE)
    base.update(kw)
    return Descriptor(**base)


STD_MEM = {A: X_ROWS.tobytes(), W: np.tile(W_ROW, 8).tobytes(),
           P: params([0] * 8, [1 << 30] * 8, [0] * 8)}


def check_fault(res, arr, step, addr, mrun_pc=PC_MRUN, x=28, data=False):
    """Engine fault in step ``step``: cycle t_f = x + 1 + step (no stalls), visible from
    v = t_f + 1 (checks 1 and 4, addresses) or, ``data``, v = t_f + 2 (checks 2 and 3, the data
    of the word read; §7 "Stop", §12 "Engine faults" since 2026-12-02), cycles = v + D (D = 2).
    The engine makes no further step and stays busy (§12 "Engine faults": frozen until the
    stop) through the last cycle of the run; context 0 (c_e) is FAULT with pc = pc_e."""
    assert res.status == "fault"
    assert fault(res) == (0, FaultCause.ENGINE_FAULT, mrun_pc, addr)
    assert res.cycles == x + 1 + step + (2 if data else 1) + 2
    assert res.tiles[0].contexts[0].state == ContextState.FAULT
    assert res.tiles[0].contexts[0].pc == mrun_pc
    assert res.tiles[0].counters["engine"] == res.cycles - x     # busy x .. cycles - 1
