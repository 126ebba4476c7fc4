"""The matrix engine's pipelined MAC (tessera/hdl/tile/matrix_engine.py, issue #13) at the
shortest accumulate-again distances, with stalls between the steps, on the Amaranth simulator
of the whole array (``tiny`` preset: 1 tile, T = 6, 16 KiB, P = 32; no Verilator build).

With the contract's WRITE_DELAY = 10 the MAC has three stages (``MAC_STAGES`` = 3): the engine
registers X(j, b) in the step after its read, multiplies it one step later and adds the
products to acc[j] one step after that; acc[j] is read again by X(j, b + 1), read §12-wise
J + C steps after X(j, b) (plus a gather step). J = 1 with C = 1 is the shortest distance
(2 steps), then J = 1, C = 2 and J = 2, C = 1 (3 steps). Every case uses random
operands (a stale or skipped accumulation changes the result) and other contexts' loads and
stores, whose M cycles are not engine cycles (§12 "Engine cycles"), so non-engine cycles fall
between a MAC stage 2 and the next MAC stage 1 of the same accumulator.

Expected values are derived by hand from §12 (comments): the step count 8 + 2C + G·K1 + KB·C +
(KB − 1)·J + J·OW + 10, the engine cycles (the cycles after the accept cycle x = 28 that are not
an M cycle of a LOAD / STORE), the write of output word w of element j in step
s_j + WRITE_DELAY + w (WRITE_DELAY = 10); the arithmetic from §12 "Semantics" in numpy int64
(acc = bias + Σ_b Σ_i X·W mod 2^32) and, for TFLITE, the reference
``tessera.golden_model.kernels.multiply_by_quantized_multiplier`` (§11 rule 1).

Program layout (as tests/test_rtl_engine.py): every context runs a 3-instruction prologue and
then its own code at 0x100 + 256c, whose i-th word issues at c + 18 + 6i (M at c + 22 + 6i).
Context 0: ``a0 = DESC`` at 18, ``mrun a0`` at 24 (accepted in its M cycle x = 28), ``mwait``
from 30 every 6 cycles, ``csrr a1, cycle``, ``ecall``. Context 1: 7 stores (M 23, 29, 35, 41,
47, 53, 59), ecall. Context 3: ``lui`` (M 25), nop (M 31), 3 loads (M 37, 43, 49), a load of
the first output word (M 55), nop (M 61), a second load of it (M 67), ecall at 69. So the
cycles 29, 35, 37, 41, 43, 47, 49, 53, 55, 59, 67 (after x) are not engine cycles.
"""

import numpy as np
import pytest

from tessera.golden_model.kernels import multiply_by_quantized_multiplier
from tessera.spec.config import PRESETS
from tessera.spec.csr import Csr
from tessera.spec.engine import ChannelParams, Descriptor, Flag, Mode, command_steps
from tessera.toolchain import asm

from helpers.hdl_parity import rtl_run

CFG = PRESETS["tiny"]
T = CFG.contexts
CODE = 0x100            # context c's code at CODE + 256c
DESC = 0x1000
PAR = 0x1100
A = 0x1400
W = 0x2000
OUT = 0x3000
SCRATCH = 0x7F0         # the other contexts' load / store word
X0 = 28                 # accept cycle of context 0's mrun
D = 2                   # array decision latency of one tile (§7)
#: the M cycles of contexts 1 and 3's loads and stores after x (module docstring)
BLOCKED = {29, 35, 41, 47, 53, 59} | {37, 43, 49, 55, 67}


def _image(progs):
    mem = bytearray(CODE + 256 * T)
    pro = [asm.csrrs(5, Csr.CONTEXT_ID, 0), asm.slli(5, 5, 8), asm.jalr(0, 5, CODE)]
    for i, w in enumerate(pro):
        mem[4 * i:4 * i + 4] = w.to_bytes(4, "little")
    for c in range(T):
        for i, w in enumerate(progs.get(c, [asm.ecall()])):
            mem[CODE + 256 * c + 4 * i:CODE + 256 * c + 4 * i + 4] = w.to_bytes(4, "little")
    return bytes(mem)


def _progs():
    nop = asm.addi(0, 0, 0)
    return {
        0: [asm.lui(10, DESC >> 12), asm.mrun(10), asm.mwait(), asm.csrrs(11, Csr.CYCLE, 0),
            asm.ecall()],
        1: [asm.sw(0, SCRATCH, 0)] * 7 + [asm.ecall()],
        3: [asm.lui(14, OUT >> 12), nop] + [asm.lw(6, SCRATCH, 0)] * 3
           + [asm.lw(12, 0, 14), nop, asm.lw(13, 0, 14), asm.ecall()],
    }


def _step_cycles(n):
    """Cycles of steps 0..n−1: the engine cycles after x (§12 "Engine cycles")."""
    out, k = [], X0
    while len(out) < n:
        k += 1
        if k not in BLOCKED:
            out.append(k)
    return out


def _case(seed, c, j0, k0, mode, flags=0):
    """C = c lanes, J = j0 elements (J1 = 1), KB = k0 blocks (K1 = 1), random operands."""
    rng = np.random.default_rng(seed)
    uns = bool(flags & Flag.A_UNSIGNED)
    x = (rng.integers(0, 40, size=(j0, k0, 8)) if uns
         else rng.integers(-128, 128, size=(j0, k0, 8)))           # X(j, b) at A + 64j + 8b
    wt = rng.integers(-128, 128, size=(c, k0, 8))                   # W(m, b) at W + 64m + 8b
    if mode == Mode.TFLITE:
        wt = wt // 6
    bias = rng.integers(-2 ** 31, 2 ** 31, size=c)
    if mode == Mode.TFLITE:
        bias = bias % 1000 - 500
    d = Descriptor(a_base=A, a_s0=64, w_base=W, w_sm=64, c_base=OUT, c_s0=16, p_base=PAR,
                   J0=j0, K0=k0, C=c, mode=mode, flags=flags, zp=-3, qmin=-100, qmax=90)
    mult, shift = [(1 << 30) + 12345 * (m + 1) for m in range(c)], [-8 + m for m in range(c)]
    params = b"".join(ChannelParams(bias=int(b), multiplier=mu, shift=s).pack()
                      for b, mu, s in zip(bias, mult, shift))
    # §12 "Semantics": acc(j, m) = bias[m] + Σ_b Σ_i X(j, b)[i] · W(m, b)[i] mod 2^32
    acc = np.einsum("jbi,mbi->jm", x, wt) + bias[None, :]
    acc = (acc + 2 ** 31) % 2 ** 32 - 2 ** 31
    abytes, wbytes = bytearray(64 * j0), bytearray(64 * c)
    for j in range(j0):
        abytes[64 * j:64 * j + 8 * k0] = bytes(int(v) & 0xFF for v in x[j].reshape(-1))
    for m in range(c):
        wbytes[64 * m:64 * m + 8 * k0] = bytes(int(v) & 0xFF for v in wt[m].reshape(-1))
    out = bytearray(b"\xee" * 16 * j0)
    for j in range(j0):
        if mode == Mode.RAW:            # C int32 values from C(j) = OUT + 16j
            out[16 * j:16 * j + 4 * c] = b"".join(int(v % 2 ** 32).to_bytes(4, "little")
                                                 for v in acc[j])
        else:                           # C bytes: MBQM + zp, clamped to qmin..qmax
            y = multiply_by_quantized_multiplier(acc[j], np.array(mult), np.array(shift))
            q = np.clip(y.astype(np.int64) - 3, -100, 90)
            out[16 * j:16 * j + c] = bytes(int(v) & 0xFF for v in q)
    data = [(DESC, d.pack()), (PAR, params), (A, bytes(abytes)), (W, bytes(wbytes)),
            (OUT, b"\xee" * 16 * j0)]
    return d, data, bytes(out)


def _run(d, data, nout):
    img = [(0, _image(_progs()))] + data
    return rtl_run(CFG, [img], 2000, [(OUT, OUT + nout)])


def _words(b):
    return [int.from_bytes(b[i:i + 4], "little") for i in range(0, len(b), 4)]


def test_shortest_distance_j1_c1_raw_with_stalls():
    """J = 1, C = 1, KB = 4, RAW: acc[0] is accumulated every 2 steps."""
    d, data, out = _case(11, 1, 1, 4, Mode.RAW)
    # steps: 8 + 2 + 4·1 + 3·1 + 1·1 + 10 = 28; W(0, b) in step 10 + 2b, X(0, b) in 11 + 2b,
    # s_0 = 17, the write (OW = 1) in step 17 + 10 = 27
    n = 8 + 2 * 1 + 4 * 1 + 3 * 1 + 1 * 1 + 10
    assert n == command_steps(d) == 28
    cyc = _step_cycles(n)
    # steps 0..27 at 30..34, 36, 38..40, 42, 44..46, 48, 50..52, 54, 56..58, 60..66: X(0, b)
    # at 45, 48, 51, 54; X(0, 0)'s word is registered in step 12 (46), multiplied in step 13
    # (48) and accumulated in step 14 (50), where X(0, 1) (read in 13) is registered: the
    # non-engine cycles 47 and 49 fall between them, and so on
    assert [cyc[s] for s in (11, 12, 13, 14, 15, 17, 27)] == [45, 46, 48, 50, 51, 54, 66]
    got = _run(d, data, 16)
    t0 = got["tiles"][0]
    assert got["status"] == "halted"
    # idle from 67: context 0's mwait at 66 (M 70; at 60 its M 64 is still busy), csrr at 72,
    # ecall at 78, the last one (context 3's at 69): HALTED visible 83, cycles = 83 + D
    assert t0["contexts"][0]["regs"][11] == 72 and got["cycles"] == 85
    assert t0["counters"]["engine"] == 66 - X0 + 1            # busy in cycles 28 .. 66
    assert t0["counters"]["macs"] == 8 * 1 * 1 * 4
    # context 3's load at M 55 is before the write (cycle 66), the one at M 67 after it
    regs3 = t0["contexts"][3]["regs"]
    assert regs3[12] == 0xEEEE_EEEE and regs3[13] == _words(out)[0]
    assert got["mem"][0] == _words(out)


@pytest.mark.parametrize("c, j0, k0, mode, flags", [
    (1, 1, 3, Mode.TFLITE, Flag.A_UNSIGNED),    # distance 2, through the requantization
    (2, 1, 3, Mode.RAW, 0),                     # J = 1, C = 2: distance 3
    (1, 2, 3, Mode.RAW, 0),                     # C = 1, J = 2: distance 3
    (4, 1, 2, Mode.TFLITE, 0),                  # J = 1, C = M = 4: distance 5
])
def test_short_distances_with_stalls(c, j0, k0, mode, flags):
    d, data, out = _case(20 + 3 * c + j0, c, j0, k0, mode, flags)
    ow = -(-c // 4) if mode == Mode.RAW else 1     # §12: OW = ⌈C/4⌉ in RAW, else 1
    n = 8 + 2 * c + k0 * c + (k0 - 1) * j0 + j0 * ow + 10
    assert n == command_steps(d)
    last = _step_cycles(n)[-1]
    got = _run(d, data, 16 * j0)
    t0 = got["tiles"][0]
    assert got["status"] == "halted"
    assert t0["counters"]["engine"] == last - X0 + 1
    assert t0["counters"]["macs"] == 8 * c * j0 * k0
    assert got["mem"][0] == _words(out)
