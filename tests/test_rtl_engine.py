"""Directed tests of the matrix engine RTL (docs/architecture.md §12) on the Verilator build of
the ``tiny`` preset (1 tile, T = 6, 16 KiB, P = 32: M = 4 lanes; contract v2).

Every expected value is derived by hand from §12 (comments) — the step schedule, the busy
window, the engine cycles, the fault cycle and record — and the arithmetic from the numpy
references in ``tessera.golden_model.kernels`` (``matmul``, ``multiply_by_quantized_multiplier``).

Program layout: every context runs the same 3-instruction prologue (``csrr t0, context_id`` at
t = c, ``slli t0, t0, 8`` at c + 6, ``jalr x0, 0x100(t0)`` at c + 12), so context c's own code,
at 0x100 + 256c, starts issuing at t = c + 18 and then at every T = 6 cycles (its i-th word at
c + 18 + 6i). Context 0 issues ``lui a0, DESC`` at 18 and ``mrun a0`` at 24, decided in its M
cycle 24 + 4 (§12), so the command is accepted at x = 28 and, with no load or store in M and
no exchange on the tile, step s is at cycle 29 + s. Contract v2 timing used below (§4, §7):
a state change of an instruction issued at t is visible from t + 5; a stop condition (a fault
visible, or every context HALTED) that first holds at v gives cycles = v + D, D = 2 for the one
tile, with everything issued or stepped at <= t_s = v + D - 1 taking effect; an engine step
fault at s is visible from s + 1, except a fault of checks 2 and 3 (the data of the word the
step read), visible from s + 2 (§7 "Stop", since 2026-12-02). Output write w of element j is
made in step s_j + WRITE_DELAY + w with WRITE_DELAY = 10 (§12 "Step schedule", since
2026-12-07; 8 from 2026-12-01, 2 before), so a command that does not fault has 8 + 2C + G·K1 +
KB·C + (KB − 1)·J + J·OW + 10 steps, with OW = ⌈C/4⌉ in RAW mode (one write step of up to two 8-byte
words, 16 bytes, since 2026-12-02; ⌈C/2⌉ until then) and OW = 1 in the byte modes.
"""

from dataclasses import dataclass, field

import numpy as np
import pytest

from tessera.golden_model.kernels import (matmul, multiply_by_quantized_multiplier,
                                          requantize_float32)
from tessera.spec.config import PRESETS
from tessera.spec.csr import Csr
from tessera.spec.exchange import Step, encode_program
from tessera.spec.engine import ChannelParams, Descriptor, Flag, Mode, command_steps
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState as CS
from tessera.spec.result import RunStatus
from tessera.toolchain import asm

pytestmark = pytest.mark.rtl

CFG = PRESETS["tiny"]
T = CFG.contexts


def test_expected_cycles_of_this_file_are_for_the_tiny_preset_of_v2():
    # The expected cycles below are derived by hand for the v2 tiny preset (T = 6, N = 1 so
    # D = 2, F-I-R-X-M-W); another preset needs them re-derived.
    assert (T, CFG.engine_lanes, CFG.sram_bytes, CFG.tiles) == (6, 4, 16 * 1024, 1), \
        "tests/test_rtl_engine.py: the expected cycles are derived for v2 tiny (T = 6, N = 1)"

CODE = 0x100            # context c's code at CODE + 256c
DESC = 0x1000           # descriptors
DESC2 = 0x1040
PAR = 0x1100            # channel parameters
A = 0x1400              # streamed operand
W = 0x2000              # stationary operand
OUT = 0x3000            # outputs
XP = 0x700              # exchange program
MIS = 0x7FC             # a misaligned descriptor address (one addi)
X0 = 28                 # accept cycle of context 0's mrun (issued at 24, M at 28)
D = 2                   # array decision latency of one tile (§7: ceil(log2 1) + 2)


def prologue():
    return [asm.csrrs(5, Csr.CONTEXT_ID, 0), asm.slli(5, 5, 8), asm.jalr(0, 5, CODE)]


def code_of(progs):
    """Image bytes: prologue at 0, context c's words at CODE + 256c (others: ecall)."""
    mem = bytearray(CODE + 256 * T)
    for i, w in enumerate(prologue()):
        mem[4 * i:4 * i + 4] = w.to_bytes(4, "little")
    for c in range(T):
        words = progs.get(c, [asm.ecall()])
        assert len(words) <= 64
        for i, w in enumerate(words):
            a = CODE + 256 * c + 4 * i
            mem[a:a + 4] = w.to_bytes(4, "little")
    return bytes(mem)


def set_a0(v):
    """One instruction a0 = v (v < 2048, or a multiple of 4096)."""
    if v < 2048:
        return asm.addi(10, 0, v)
    assert v % 4096 == 0
    return asm.lui(10, v >> 12)


def main_prog(desc=DESC):
    """Context 0: a0 = desc (18), mrun a0 (24), mwait (30, 36, ...), csrr a1 cycle, ecall."""
    return [set_a0(desc), asm.mrun(10), asm.mwait(), asm.csrrs(11, Csr.CYCLE, 0), asm.ecall()]


@dataclass
class Job:
    name: str
    progs: dict
    data: list = field(default_factory=list)      # (addr, bytes)
    readback: list = field(default_factory=list)  # (addr, n)
    max_cycles: int = 20000
    ops: list = field(default_factory=lambda: ["load", "start", "wait", "collect"])


def job_dict(j):
    segs = [[0, 0, code_of(j.progs).hex()]] + [[0, a, bytes(d).hex()] for a, d in j.data]
    ops = list(j.ops)
    if j.readback:
        ops.append({"op": "readback", "regions": [[0, a, n] for a, n in j.readback]})
    return {"name": j.name, "segments": segs, "entry": 0, "max_cycles": j.max_cycles,
            "ops": ops}


# -- operands -------------------------------------------------------------------------------

RNG = np.random.default_rng(12)


def raw_case():
    """RAW, C = 3, J = J0·J1 = 2·3, KB = K0·K1 = 2·2 (K = 32), non-trivial strides."""
    d = Descriptor(a_base=A, a_s0=64, a_s1=256, ak_s1=24, w_base=W, w_sm=40,
                   c_base=OUT, c_s0=16, c_s1=48, p_base=PAR, J0=2, J1=3, K0=2, K1=2, C=3,
                   mode=Mode.RAW)
    x = RNG.integers(-128, 128, size=(3, 2, 2, 2, 8), dtype=np.int64)   # [j1][j0][k1][k0][i]
    wt = RNG.integers(-128, 128, size=(3, 4, 8), dtype=np.int64)        # [m][b][i]
    bias = [123456, -7, 2 ** 31 - 5]
    abytes = bytearray(3 * 256)
    for j1 in range(3):
        for j0 in range(2):
            for k1 in range(2):
                for k0 in range(2):
                    a = j1 * 256 + j0 * 64 + k1 * 24 + 8 * k0
                    abytes[a:a + 8] = x[j1, j0, k1, k0].astype(np.int8).tobytes()
    wbytes = bytearray(3 * 40)
    for m in range(3):
        wbytes[m * 40:m * 40 + 32] = wt[m].astype(np.int8).tobytes()
    params = b"".join(ChannelParams(bias=b, multiplier=0, shift=0).pack() for b in bias)
    xm = x.reshape(6, 32)                       # j = j1·J0 + j0, K index = b·8 + i
    wm = wt.reshape(3, 32)
    acc = (matmul(xm.astype(np.int8), wm.T.astype(np.int8)).astype(np.int64)
           + np.array(bias)) & 0xFFFF_FFFF
    data = [(DESC, d.pack()), (PAR, params), (A, bytes(abytes)), (W, bytes(wbytes)),
            (OUT, b"\xee" * 160)]
    return d, data, acc


def raw_expected_out(acc):
    """OUT region after the command: element j = j1·2 + j0 at OUT + 48 j1 + 16 j0, 12 bytes."""
    out = bytearray(b"\xee" * 160)
    for j1 in range(3):
        for j0 in range(2):
            j = j1 * 2 + j0
            a = 48 * j1 + 16 * j0
            out[a:a + 12] = b"".join(int(v).to_bytes(4, "little") for v in acc[j])
    return bytes(out)


TFL_MULT = [(1 << 30) + 12345, (1 << 31) - 1, 1 << 22, 1 << 30]
TFL_SHIFT = [-12, -10, 1, -31]


def tflite_case(flags=0, zp=-3, qmin=-100, qmax=90):
    """TFLITE, C = 4, J = 5 (J1 = 1), KB = 3 (K0 = 3), negative a_s0, C(j) ≡ 4 (mod 8)."""
    lo = 0 if flags & Flag.A_UNSIGNED else -128
    x = RNG.integers(lo, lo + 256, size=(5, 24), dtype=np.int64)
    x[0] = lo                                    # extreme rows
    x[1] = lo + 255
    wt = RNG.integers(-128, 128, size=(4, 24), dtype=np.int64)
    wt[:, :8] = -128
    bias = [1000, -20000, 77, -5]
    # element j at A + 0x200 - 32 j (a_s0 = -32)
    abytes = bytearray(0x220)
    for j in range(5):
        a = 0x200 - 32 * j
        abytes[a:a + 24] = bytes(int(v) & 0xFF for v in x[j])
    wbytes = b"".join(bytes(int(v) & 0xFF for v in wt[m]) + bytes(8) for m in range(4))
    d = Descriptor(a_base=A + 0x200, a_s0=-32, a_s1=0, ak_s1=0, w_base=W, w_sm=32,
                   c_base=OUT + 4, c_s0=8, c_s1=0, p_base=PAR, J0=5, J1=1, K0=3, K1=1, C=4,
                   mode=Mode.TFLITE, flags=flags, zp=zp, qmin=qmin, qmax=qmax)
    params = b"".join(ChannelParams(bias=b, multiplier=mu, shift=s).pack()
                      for b, mu, s in zip(bias, TFL_MULT, TFL_SHIFT))
    acc = (x @ wt.T + np.array(bias)) & 0xFFFF_FFFF
    acc = np.where(acc >= 2 ** 31, acc - 2 ** 32, acc)
    y = multiply_by_quantized_multiplier(acc, np.array(TFL_MULT), np.array(TFL_SHIFT))
    q = np.clip(y.astype(np.int64) + zp, qmin, qmax)
    out = bytearray(b"\xee" * 48)
    for j in range(5):
        out[4 + 8 * j:8 + 8 * j] = bytes(int(v) & 0xFF for v in q[j])
    data = [(DESC, d.pack()), (PAR, params), (A, bytes(abytes)), (W, wbytes),
            (OUT, b"\xee" * 48)]
    return d, data, bytes(out)


# FLOAT32 multipliers (binary32 bit patterns: sign | exponent (bias 127) << 23 | fraction):
# 0.5, 2.0, 2^-24, and 0xAAAAAB·2^-26 (exponent 124, fraction 0x2AAAAB: about 1/6, with
# 3·0xAAAAAB = 2^25 + 1)
F32_MULT = [0x3F000000, 0x40000000, 0x33800000, 0x3E2AAAAB]
F32_BIAS = [0, 0, 5 * (1 << 23) + 1, 0]
F32_X = [1, 3, 5, 7, -1, -3, -5, -7, 4, 0, 2, 6, 127, -128, 15, 9]


def float32_case():
    """FLOAT32, C = 4, J = 16, KB = 1: X(j) = [x_j, 0, ..., 0], W(m) = [1, 0, ..., 0], so
    acc(j, m) = bias[m] + x_j; zp = -3, qmin = -128, qmax = 127 (§12 "Semantics")."""
    x = np.zeros((16, 8), np.int8)
    x[:, 0] = F32_X
    w = np.zeros((4, 8), np.int8)
    w[:, 0] = 1
    d = Descriptor(a_base=A, a_s0=8, w_base=W, w_sm=8, c_base=OUT, c_s0=8, p_base=PAR,
                   J0=16, C=4, mode=Mode.FLOAT32, zp=-3)
    params = b"".join(ChannelParams(bias=b, multiplier=mu).pack()
                      for b, mu in zip(F32_BIAS, F32_MULT))
    acc = np.array(F32_X)[:, None] + np.array(F32_BIAS)[None, :]
    m = np.array(F32_MULT, np.uint32).view(np.float32)
    q = requantize_float32(acc, m, -3)
    out = bytearray(b"\xee" * 128)
    for j in range(16):
        out[8 * j:8 * j + 4] = q[j].astype(np.int8).tobytes()
    data = [(DESC, d.pack()), (PAR, params), (A, x.tobytes()), (W, w.tobytes()),
            (OUT, b"\xee" * 128)]
    return d, data, bytes(out)


GT = 0x1200            # K_GATHER tables (8 bytes per entry: u32 offset, ignored junk)


def gtable(offsets):
    return b"".join(int(o).to_bytes(4, "little") + b"\xa5" * 4 for o in offsets)


def gather1_case():
    """K_GATHER, C = 1, J = 1, K0 = 1, K1 = 3 (the lane-load bypass of a gather word): rows
    of 8 bytes r + 1 at A + 8r, W(0, b) = [b + 1]·8, g = (40, 8, 56) -> rows 5, 1, 7:
    acc = 100 + 8·(6·1 + 2·2 + 8·3) = 372."""
    d = Descriptor(a_base=A, ak_s1=GT, w_base=W, w_sm=24, c_base=OUT, p_base=PAR, K1=3, C=1,
                   mode=Mode.RAW, flags=Flag.K_GATHER)
    rows = bytes(r + 1 for r in range(8) for _ in range(8))
    w = bytes(b + 1 for b in range(3) for _ in range(8))
    data = [(DESC, d.pack()), (PAR, ChannelParams(bias=100).pack()), (A, rows), (W, w),
            (GT, gtable([40, 8, 56])), (OUT, b"\xee" * 8)]
    return d, data, (372).to_bytes(4, "little") + b"\xee" * 4


def gather3_case():
    """K_GATHER, RAW, C = 3, J = 5 (rows 64 bytes apart), K0 = 2, K1 = 2, g = (48, 16)."""
    rows = RNG.integers(-128, 128, size=(5, 64), dtype=np.int64)
    wt = RNG.integers(-128, 128, size=(3, 32), dtype=np.int64)
    d = Descriptor(a_base=A, a_s0=64, ak_s1=GT, w_base=W, w_sm=32, c_base=OUT, c_s0=16,
                   p_base=PAR, J0=5, K0=2, K1=2, C=3, mode=Mode.RAW, flags=Flag.K_GATHER)
    bias = [7, -9, 1 << 20]
    x = np.concatenate([rows[:, 48:64], rows[:, 16:32]], axis=1)      # X(j, b), b = 0..3
    acc = (x @ wt.T + np.array(bias)) & 0xFFFF_FFFF
    out = bytearray(b"\xee" * 80)
    for j in range(5):
        out[16 * j:16 * j + 12] = b"".join(int(v).to_bytes(4, "little") for v in acc[j])
    data = [(DESC, d.pack()), (PAR, b"".join(ChannelParams(bias=b).pack() for b in bias)),
            (A, bytes(int(v) & 0xFF for v in rows.reshape(-1))),
            (W, bytes(int(v) & 0xFF for v in wt.reshape(-1))), (GT, gtable([48, 16])),
            (OUT, b"\xee" * 80)]
    return d, data, bytes(out)



def pipe_case():
    """RAW, C = 1, J = 1, KB = K0 = 4 (the MAC's shortest accumulate-again distance: acc[0] is
    accumulated every 2 steps, issue #13): random X(0, b) at A + 8b, W(0, b) at W + 8b."""
    rng = np.random.default_rng(13)         # its own: the other cases' operands stay as they were
    x = rng.integers(-128, 128, size=(4, 8), dtype=np.int64)
    wt = rng.integers(-128, 128, size=(4, 8), dtype=np.int64)
    bias = -1234567
    d = Descriptor(a_base=A, w_base=W, c_base=OUT, p_base=PAR, K0=4, C=1, mode=Mode.RAW)
    acc = (int((x * wt).sum()) + bias) & 0xFFFF_FFFF
    data = [(DESC, d.pack()), (PAR, ChannelParams(bias=bias).pack()),
            (A, bytes(int(v) & 0xFF for v in x.reshape(-1))),
            (W, bytes(int(v) & 0xFF for v in wt.reshape(-1))), (OUT, b"\xee" * 8)]
    return d, data, acc.to_bytes(4, "little") + b"\xee" * 4

SHORT_X = [10, -7, 100]
SHORT_BIAS = [0, 1, -3, 50]
SHORT_SHIFT = [0, 1, -1, -2]
# By hand (§11 rule 1, multiplier 2^30): acc(j, m) = bias[m] + x_j; SRDHM(a, 2^30) =
# floor((a·2^30 + 2^30) / 2^31) = floor((a + 1) / 2); shift 1 doubles a first (SRDHM = a);
# shift −1 / −2 then divide h = floor((a + 1) / 2) by 2 / 4 rounding ties away from zero.
#   m = 0 (shift 0):  acc 10, −7, 100 -> 5, −3, 50
#   m = 1 (shift 1):  acc 11, −6, 101 -> 11, −6, 101
#   m = 2 (shift −1): acc 7, −10, 97  -> h 4, −5, 49 -> 2, −3 (−2.5), 25 (24.5)
#   m = 3 (shift −2): acc 60, 43, 150 -> h 30, 22, 75 -> 8 (7.5), 6 (5.5), 19 (18.75)
# + zp = 2, no clamp (−128..127):
SHORT_Q = [[7, 13, 4, 10], [-1, -4, -1, 8], [52, 103, 27, 21]]


def short_case():
    """TFLITE, C = 4, J = 3, KB = 1 (J·OW = 3 < 8: every write comes after the last stream
    step): X(j) = [x_j, 0, ..., 0] at A + 8j, W(m) = [1, 0, ..., 0], multiplier 2^30, C(j) =
    OUT + 8j, zp = 2."""
    x = np.zeros((3, 8), np.int8)
    x[:, 0] = SHORT_X
    w = np.zeros((4, 8), np.int8)
    w[:, 0] = 1
    d = Descriptor(a_base=A, a_s0=8, w_base=W, w_sm=8, c_base=OUT, c_s0=8, p_base=PAR,
                   J0=3, C=4, mode=Mode.TFLITE, zp=2, qmin=-128, qmax=127)
    params = b"".join(ChannelParams(bias=b, multiplier=1 << 30, shift=s).pack()
                      for b, s in zip(SHORT_BIAS, SHORT_SHIFT))
    # the hand values agree with the numpy reference of §11 rule 1
    acc = np.array(SHORT_X)[:, None] + np.array(SHORT_BIAS)[None, :]
    y = multiply_by_quantized_multiplier(acc, np.full(4, 1 << 30), np.array(SHORT_SHIFT))
    assert (y.astype(np.int64) + 2).tolist() == SHORT_Q
    out = bytearray(b"\xee" * 24)
    for j in range(3):
        out[8 * j:8 * j + 4] = bytes(v & 0xFF for v in SHORT_Q[j])
    data = [(DESC, d.pack()), (PAR, params), (A, x.tobytes()), (W, w.tobytes()),
            (OUT, b"\xee" * 24)]
    return d, data, bytes(out)


def raw4_odd_case():
    """RAW, C = 4, J = 2, KB = 1, C(j) = OUT + 8 + 16j ≡ 8 (mod 16): each element's 16 bytes
    are one write step of two words (§12 "Step schedule": OW = ⌈4/4⌉ = 1), the odd word at
    C(j) and the even word after it (the SRAM's two banks, "Why two write words")."""
    rng = np.random.default_rng(17)         # its own: the other cases' operands stay as they were
    x = rng.integers(-128, 128, size=(2, 8), dtype=np.int64)
    wt = rng.integers(-128, 128, size=(4, 8), dtype=np.int64)
    bias = [1, -2, 1 << 30, -(1 << 31)]
    d = Descriptor(a_base=A, a_s0=8, w_base=W, w_sm=8, c_base=OUT + 8, c_s0=16, p_base=PAR,
                   J0=2, C=4, mode=Mode.RAW)
    acc = (x @ wt.T + np.array(bias)) & 0xFFFF_FFFF
    out = bytearray(b"\xee" * 48)
    for j in range(2):
        out[8 + 16 * j:24 + 16 * j] = b"".join(int(v).to_bytes(4, "little") for v in acc[j])
    data = [(DESC, d.pack()), (PAR, b"".join(ChannelParams(bias=b).pack() for b in bias)),
            (A, bytes(int(v) & 0xFF for v in x.reshape(-1))),
            (W, bytes(int(v) & 0xFF for v in wt.reshape(-1))), (OUT, b"\xee" * 48)]
    return d, data, bytes(out)


RAW_D, RAW_DATA, RAW_ACC = raw_case()
R4_D, R4_DATA, R4_OUT = raw4_odd_case()
PIPE_D, PIPE_DATA, PIPE_OUT = pipe_case()
SHORT_D, SHORT_DATA, SHORT_OUT = short_case()
G1_D, G1_DATA, G1_OUT = gather1_case()
G3_D, G3_DATA, G3_OUT = gather3_case()
F32_D, F32_DATA, F32_OUT = float32_case()
TFL_D, TFL_DATA, TFL_OUT = tflite_case()
TFLU_D, TFLU_DATA, TFLU_OUT = tflite_case(flags=Flag.A_UNSIGNED | Flag.OUT_UNSIGNED, zp=10,
                                          qmin=12, qmax=250)


def steps_by_hand(d):
    """§12: 8 descriptor + 2C parameter steps, per block C W steps and J stream steps, OW − 1
    extra steps per element in the last block, + WRITE_DELAY = 10 (the last element's last
    write is step s_{J−1} + 10 + OW − 1, OW − 1 steps after its last sub-step); OW = ⌈C/4⌉ in
    RAW (16 bytes a write step), 1 in the byte modes."""
    c, j, kb = d.C, d.J0 * d.J1, d.K0 * d.K1
    ow = -(-c // 4) if d.mode == Mode.RAW else 1
    g = d.K1 if d.flags & Flag.K_GATHER else 0             # one gather step per k1
    return 8 + 2 * c + g + kb * (c + j) + j * (ow - 1) + 10


def mwait_retire(last_step_cycle, first=30):
    """Issue cycle of context 0's retiring mwait: the first slot t ≡ 0 (mod 6), t ≥ first,
    whose M (t + 4) is after the last step (the engine is idle from last_step_cycle + 1)."""
    t = first
    while t + 4 < last_step_cycle + 1:
        t += T
    return t


def step_cycles(x, n, blocked):
    """Cycles of steps 0..n-1: the engine cycles after x (not in ``blocked``)."""
    out, k = [], x
    while len(out) < n:
        k += 1
        if k not in blocked:
            out.append(k)
    return out


# -- the jobs -------------------------------------------------------------------------------

STORES = [asm.sw(0, 0x7F0, 0)] * 6 + [asm.lw(6, 0x7F0, 0)] * 2


def jobs():
    js = [
        Job("raw", {0: main_prog()}, RAW_DATA, [(OUT, 160)]),
        Job("tflite", {0: main_prog()}, TFL_DATA, [(OUT, 48)]),
        Job("tflite_u", {0: main_prog()}, TFLU_DATA, [(OUT, 48)]),
        Job("float32", {0: main_prog()}, F32_DATA, [(OUT, 128)]),
        Job("gather1", {0: main_prog()}, G1_DATA, [(OUT, 8)]),
        Job("gather3", {0: main_prog()}, G3_DATA, [(OUT, 80)]),
        # context 1 stores and loads while the engine runs (its M cycles are not engine cycles)
        Job("stall", {0: main_prog(), 1: STORES + [asm.ecall()]}, RAW_DATA, [(OUT, 160)]),
        # context 1's loads of element 0's output word take the engine cycles 71, 77 and 83,
        # between the last block's stream steps and their writes (test_stalls_between_...)
        Job("stall_pipe", {0: main_prog(),
                           1: [asm.lui(14, OUT >> 12)] + [asm.addi(0, 0, 0)] * 7
                           + [asm.lw(12, 4, 14), asm.lw(13, 4, 14), asm.lw(15, 4, 14),
                              asm.ecall()]},
            TFL_DATA, [(OUT, 48)]),
        # J·OW < 10, and context 1's loads (M 53, 59, 65) in and after the steps that follow
        # the last stream step
        Job("short", {0: main_prog(),
                      1: [asm.lui(14, OUT >> 12)] + [asm.addi(0, 0, 0)] * 4
                      + [asm.lw(12, 0, 14), asm.lw(13, 0, 14), asm.lw(15, 0, 14),
                         asm.ecall()]},
            SHORT_DATA, [(OUT, 24)]),
        # context 1's stores (M 23, 29, .., 59) and context 3's loads (M 37, 43, 49; of the
        # output word at 55 and, after a nop, 67) between the steps of the shortest
        # accumulate-again distance
        Job("pipe", {0: main_prog(), 1: [asm.sw(0, 0x7F0, 0)] * 7 + [asm.ecall()],
                     3: [asm.lui(14, OUT >> 12), asm.addi(0, 0, 0)] + [asm.lw(6, 0x7F0, 0)] * 3
                     + [asm.lw(12, 0, 14), asm.addi(0, 0, 0), asm.lw(13, 0, 14), asm.ecall()]},
            PIPE_DATA, [(OUT, 8)]),
        # context 2 issues a second mrun while the first command runs: it retries
        Job("busy", {0: main_prog(),
                     2: [asm.lui(10, DESC2 >> 12), asm.addi(10, 10, DESC2 & 0xFFF),
                         asm.mrun(10), asm.csrrs(11, Csr.CYCLE, 0), asm.mwait(), asm.ecall()]},
            RAW_DATA + [(DESC2, Descriptor(**{**RAW_D.__dict__, "c_base": OUT + 160}).pack()),
                        (OUT + 160, b"\xee" * 160)], [(OUT, 320)]),
        # context 1's mrun is retried until it is accepted in the cycle right after the first
        # command's last step (back to back: busy without a gap; with T = 6 only context 1's
        # M cycles, 1 + 4 mod 6, meet that cycle 89 = 5 mod 6)
        Job("busy_b2b", {0: main_prog(),
                         1: [asm.lui(10, DESC2 >> 12), asm.addi(10, 10, DESC2 & 0xFFF),
                             asm.mrun(10), asm.mwait(), asm.csrrs(11, Csr.CYCLE, 0), asm.ecall()]},
            RAW_DATA + [(DESC2, Descriptor(**{**RAW_D.__dict__, "c_base": OUT + 160}).pack()),
                        (OUT + 160, b"\xee" * 160)], [(OUT, 320)]),
    ]
    js.append(Job("raw4_odd", {0: main_prog()}, R4_DATA, [(OUT, 48)]))
    # the engine pauses in the tile's exchange phase: sync ARRAY with an IDLE 5 program
    js.append(Job("exchange", {0: [set_a0(DESC), asm.mrun(10), asm.addi(6, 0, XP),
                                   asm.csrrw(0, Csr.XPROG, 6), asm.sync_array(), asm.mwait(),
                                   asm.csrrs(11, Csr.CYCLE, 0), asm.ecall()]},
                  RAW_DATA + [(XP, encode_program([Step.idle(5)]))], [(OUT, 160)]))
    bad = []
    bad.append(("f_misaligned", MIS, RAW_DATA))
    d0 = Descriptor(**{**RAW_D.__dict__, "C": 0})
    bad.append(("f_c0", DESC, [(DESC, d0.pack())] + RAW_DATA[1:]))
    dq = Descriptor(**{**TFL_D.__dict__, "qmax": 128})          # > 127 for int8 output
    bad.append(("f_qmax", DESC, [(DESC, dq.pack())] + TFL_DATA[1:]))
    shift_bad = b"".join(ChannelParams(bias=0, multiplier=1 << 30, shift=s).pack()
                         for s in (0, 31, 0, 0))
    bad.append(("f_shift", DESC, TFL_DATA + [(PAR, shift_bad)]))
    inf_mult = b"".join(ChannelParams(bias=0, multiplier=mu).pack()
                        for mu in (0x3F000000, 0x7F800000, 0x3F000000, 0x3F000000))
    bad.append(("f_fmult", DESC, F32_DATA + [(PAR, inf_mult)]))
    dg = Descriptor(**{**G1_D.__dict__, "ak_s1": 0x4000 - 8, "K1": 2})
    bad.append(("f_gather", DESC, [(DESC, dg.pack())] + G1_DATA[1:] + [(0x3FF8, bytes(8))]))
    dw = Descriptor(**{**TFL_D.__dict__, "c_base": OUT + 6})     # 6 + 4 > 8
    bad.append(("f_write", DESC, [(DESC, dw.pack())] + TFL_DATA[1:]))
    dx = Descriptor(**{**RAW_D.__dict__, "a_s1": 0x4000})        # X(j, b) of j1 = 1 outside
    bad.append(("f_xrange", DESC, [(DESC, dx.pack())] + RAW_DATA[1:]))
    for name, desc, data in bad:
        js.append(Job(name, {0: main_prog(desc)}, data))
    # an instruction fault on the tile visible in the cycle the engine's step-0 fault (cycle 29)
    # is visible (30): context 1's ebreak issued at 25 (M 29); one issued at 31 instead is
    # later (visible 36) but still inside the window (t_s = 31); context 4's ebreak at 22
    # (visible 27) stops the run before step 0
    nop = asm.addi(0, 0, 0)
    js.append(Job("f_same_cycle", {0: main_prog(MIS), 1: [nop, asm.ebreak()]}))
    js.append(Job("f_engine_first", {0: main_prog(MIS), 1: [nop, nop, asm.ebreak()]}))
    js.append(Job("f_insn_first", {0: main_prog(MIS), 4: [asm.ebreak()]}))
    # a data-check fault (checks 2, 3) of step s is visible from s + 2 (§7 "Stop"): FLOAT32,
    # channel 2's multiplier +inf (check 3 in step 12); context 0 issues at s + 1 = 42
    f2 = b"".join(ChannelParams(bias=0, multiplier=mu).pack()
                  for mu in (0x3F000000, 0x3F000000, 0x7F800000))
    df2 = Descriptor(a_base=A, w_base=W, c_base=OUT, p_base=PAR, C=3, mode=Mode.FLOAT32)
    js.append(Job("f_data_s2", {0: [set_a0(DESC), asm.mrun(10), nop, nop, asm.addi(12, 0, 42),
                                    asm.ecall()]}, [(DESC, df2.pack()), (PAR, f2)]))
    # check 2 in step 7 (C = 0, visible 38) and context 3's ebreak issued at 33 (visible 38)
    js.append(Job("f_data_tie", {0: main_prog(), 3: [nop, nop, asm.ebreak()]},
                  [(DESC, d0.pack())] + RAW_DATA[1:]))
    # an engine write of cycle k is seen by fetches from k + 1 (§12 "Memory order", v2): a RAW
    # command (C = J = 1, KB = 3, zero operands) writes bias = `addi a2, x0, 77` over the
    # `addi a2, x0, 5` at 0x118 in step 25 (cycle 54); context 4 (jal, its word 4, at 46)
    # fetches 0x118 at 52, context 5 (jal at 47) at 53, context 0 (its word 6) at 54, context 1
    # (jal, its word 5, at 49) at 55
    old, new = asm.addi(12, 0, 5), asm.addi(12, 0, 77)
    dfe = Descriptor(a_base=A, w_base=W, c_base=0x118, p_base=PAR, J0=1, J1=1, K0=3, K1=1, C=1,
                     mode=Mode.RAW)
    js.append(Job("fetch_order", {
        0: [set_a0(DESC), asm.mrun(10), nop, nop, nop, nop, old, asm.mwait(), asm.ecall()],
        1: [nop, nop, nop, nop, nop, asm.jal(0, 0x118 - pc_of(1, 5))],
        4: [nop, nop, nop, nop, asm.jal(0, 0x118 - pc_of(4, 4))],
        5: [nop, nop, nop, nop, asm.jal(0, 0x118 - pc_of(5, 4))]},
        [(DESC, dfe.pack()), (PAR, ChannelParams(bias=new - (1 << 32) if new >> 31 else new).pack()),
         (A, bytes(24)), (W, bytes(24))]))
    # a store in M in the cycle after an engine write to a byte of the same word: the store is
    # later, its byte wins; a later load sees both
    dst = Descriptor(a_base=A, w_base=W, c_base=0x7F0, p_base=PAR, J0=1, J1=1, K0=3, K1=1, C=1,
                     mode=Mode.RAW)
    js.append(Job("store_after_write", {
        0: [set_a0(DESC), asm.mrun(10), nop, nop, nop, nop, asm.lw(12, 0x7F0, 0), asm.mwait(),
            asm.lw(13, 0x7F0, 0), asm.lw(14, 0x7F4, 0), asm.ecall()],
        3: [asm.addi(6, 0, 0xAB), nop, nop, nop, nop, asm.sb(6, 0x7F1, 0), asm.ecall()]},
        [(DESC, dst.pack()), (PAR, ChannelParams(bias=0x11223344).pack()),
         (A, bytes(24)), (W, bytes(24)), (0x7F0, bytes.fromhex("eeeeeeeeddccbbaa"))]))
    # start resets the engine: a first run ends by a fault while the engine is busy (context
    # 3's ebreak at 27, visible 32); the host then patches the ebreak into an ecall and starts
    # again
    from tessera.spec.hostmap import sram_addr
    js.append(Job("restart", {0: main_prog(), 3: [nop, asm.ebreak(), asm.ecall()]}, RAW_DATA,
                  [(OUT, 160)],
                  ops=["load", "start", "wait",
                       {"op": "write", "addr": sram_addr(0, pc_of(3, 1)), "data": asm.ecall()},
                       "start", "wait", "collect"]))
    # the engine faults (step 1 reads 0x4000 = sram_bytes) in the cycle of the run's last ecall
    js.append(Job("fault_at_halt", {0: [asm.lui(10, 4), asm.addi(10, 10, -8), asm.mrun(10),
                                        asm.ecall()]}, [(0x3FF8, bytes(8))]))
    # without mwait: the run halts (last ecall) while the engine is busy
    js.append(Job("halt_busy", {0: [set_a0(DESC), asm.mrun(10), asm.ecall()]},
                  RAW_DATA, [(OUT, 160)]))
    return js


@pytest.fixture(scope="module")
def results():
    from tessera.tb.backend import result_from_json
    from tessera.tb.runner import build_array
    model = build_array(CFG)
    js = jobs()
    out = model.run({"jobs": [job_dict(j) for j in js]})
    res = {}
    for j, r in zip(js, out["jobs"]):
        assert r["error"] is None, (j.name, r["error"])
        data = [bytes.fromhex(h) for h in r.get("readback", [])]
        res[j.name] = (result_from_json(r["result"]), data)
    return res


def pc_of(c, i):
    return CODE + 256 * c + 4 * i


MRUN_PC = pc_of(0, 1)       # a0 = desc, mrun


def check_halted_run(res, d, extra_busy=0):
    """Context 0 ran one command with no stalls: last step at 28 + N, mwait retires at
    t_w = mwait_retire(28 + N), csrr reads t_w + 6, the ecall at t_w + 12 is the last one:
    HALTED visible from v = t_w + 17, cycles = v + D = t_w + 19."""
    n = steps_by_hand(d)
    assert n == command_steps(d)
    t_w = mwait_retire(X0 + n)
    t0 = res.tiles[0]
    assert res.status == RunStatus.HALTED
    assert res.cycles == t_w + 12 + 5 + D
    assert t0.contexts[0].regs[11] == t_w + 6
    # mrun retires once; mwait retries (t = 30 .. t_w - 6) retire nothing
    assert t0.contexts[0].retired == 3 + 1 + 1 + 1 + 1 + 1   # prologue, lui, mrun, mwait, csrr, ecall
    assert t0.counters["engine"] == n + 1 + extra_busy       # cycles 28 .. 28 + N
    kb, j = d.K0 * d.K1, d.J0 * d.J1
    assert t0.counters["macs"] == 8 * d.C * j * kb
    return n, t_w


def test_raw_result_and_timing(results):
    res, (out,) = results["raw"]
    n, t_w = check_halted_run(res, RAW_D)
    # by hand (C = 3: OW = ⌈3/4⌉ = 1, each element's 12 bytes in one write step: its word at
    # C(j) and 4 bytes of the next): 8 + 6 + 4·3 + 3·6 + 6·1 + 10 = 60 steps (step s at
    # 29 + s), last at 28 + 60 = 88, idle from 89; mwait at 90 (M 94 ≥ 89; the slot before, 84,
    # has M 88). (OW = 2 until 2026-12-02: 66 steps.)
    assert n == 60 and t_w == 90
    assert out == raw_expected_out(RAW_ACC)


@pytest.mark.parametrize("name", ["tflite", "tflite_u"])
def test_tflite_result_and_timing(results, name):
    res, (out,) = results[name]
    d, want = {"tflite": (TFL_D, TFL_OUT), "tflite_u": (TFLU_D, TFLU_OUT)}[name]
    n, t_w = check_halted_run(res, d)
    # by hand: 8 + 8 + 3·4 + 2·5 + 5·1 + 10 = 53 steps, last at 28 + 53 = 81; mwait M 82 ≥ 82:
    # t = 78 (72 has M 76)
    assert n == 53 and t_w == 78
    assert out == want


def test_float32_result_and_timing(results):
    res, (out,) = results["float32"]
    n, t_w = check_halted_run(res, F32_D)
    # by hand: 8 + 8 + 4 + 0 + 16 + 10 = 46 steps, last at 28 + 46 = 74; mwait M 76 >= 75:
    # t = 72 (66 has M 70)
    assert n == 46 and t_w == 72
    assert out == F32_OUT
    q = np.frombuffer(out, np.int8).reshape(16, 8)[:, :4].astype(int) + 3      # rne(p), zp 3
    at = {x: j for j, x in enumerate(F32_X)}
    # by hand (§12): M = 0.5 ties to even: 1 -> 0, 3 -> 2, 5 -> 2, 7 -> 4, -1 -> 0, -3 -> -2
    assert [q[at[x], 0] for x in (1, 3, 5, 7, -1, -3, -5, -7)] == [0, 2, 2, 4, 0, -2, -2, -4]
    # M = 2: 127 -> 254 - 3 and -128 -> -256 - 3 saturate (127 - (-3) = 130, -128 + 3 = -125)
    assert (q[at[127], 1], q[at[-128], 1]) == (130, -125)
    # M = 2^-24, acc = 5·2^23 + 1 + x: fl32(acc) = 5·2^23 for x in {0, 1 (a tie to the even
    # mantissa 5·2^21), -1}: 2.5 -> 2; x = 2, 6 round up to 5·2^23 + 4, + 8: 3
    assert [q[at[x], 2] for x in (0, 1, -1, 2, 6)] == [2, 2, 2, 3, 3]
    # M ≈ 1/6: acc = 3 -> 0.5 + 2^-26, fl32 = 0.5 -> 0; 15 -> 2.5 + 5·2^-26 -> 2.5 -> 2
    assert [q[at[x], 3] for x in (3, -3, 15, 9, 6)] == [0, 0, 2, 2, 1]


@pytest.mark.parametrize("name", ["gather1", "gather3"])
def test_gather_result_and_timing(results, name):
    res, (out,) = results[name]
    d, want, steps = {"gather1": (G1_D, G1_OUT, 29),
                      "gather3": (G3_D, G3_OUT, 58)}[name]
    n, _ = check_halted_run(res, d)
    # by hand: gather1 8 + 2C + K1 + KB·(C + J) + J·(OW − 1) + 10 = 8 + 2 + 3 + 6 + 0 + 10 =
    # 29 (J·OW = 1 < 10: the write, step 18 + 10 = 28, comes 10 steps after the last stream
    # step); gather3 (C = 3: OW = ⌈3/4⌉ = 1): 8 + 6 + 2 + 32 + 0 + 10 = 58
    assert n == steps
    assert out == want


def test_loads_and_stores_stall_the_engine(results):
    res, (out,) = results["stall"]
    # context 1 issues 6 sw + 2 lw at 19, 25, ..., 61: M at 23, 29, ..., 65 — the engine
    # cycles after x = 28 skip 29, 35, ..., 65 (7 of them inside the busy window)
    blocked = {19 + 6 * i + 4 for i in range(8)}
    n = steps_by_hand(RAW_D)
    cyc = step_cycles(X0, n, blocked)
    last = cyc[-1]
    assert last == X0 + n + 7 == 95    # 60 steps, 7 stalls (29, 35, .., 65) in 29..95
    t_w = mwait_retire(last)
    t0 = res.tiles[0]
    assert res.status == RunStatus.HALTED
    assert t_w == 96                   # M 100 >= 96 (90: M 94)
    assert t0.contexts[0].regs[11] == t_w + 6
    assert t0.counters["engine"] == last - X0 + 1
    assert out == raw_expected_out(RAW_ACC)


def test_stalls_between_stream_steps_and_writes(results):
    """The output pipeline advances by engine steps, not clocks (§12: the write of element j
    is step s_j + 10, whatever cycles lie between)."""
    res, (out,) = results["stall_pipe"]
    # TFLITE, C = 4, J = 5, KB = 3 (tflite_case): steps 0..7, 8..15, blocks of 4 W + 5 X
    # steps: X(j, 2) is s_j = 16 + 2·9 + 4 + j = 38 + j, element j is written in step 48 + j
    # (48..52), 53 steps. Context 1: lui 19, nops 25..61, lw (word 8) at 67 (M 71), lw at 73
    # (M 77), lw at 79 (M 83), ecall 85: the engine cycles skip 71, 77 and 83. Steps 0..41 at
    # 29..70, 42..46 at 72..76, 47..51 at 78..82, 52 at 84: s_0 = 38 at 67, its write (step
    # 48) at 79, 12 cycles later; s_4 = 42 at 72, its write (step 52) at 84
    n = steps_by_hand(TFL_D)
    assert n == 53
    cyc = step_cycles(X0, n, {71, 77, 83})
    assert (cyc[38], cyc[48], cyc[42], cyc[52]) == (67, 79, 72, 84)
    t0 = res.tiles[0]
    assert res.status == RunStatus.HALTED
    # the lws of M 71 and 77 see element 0's word before its write (cycle 79), the lw of M 83
    # after it (an engine write of cycle k is seen by loads from k + 1); with WRITE_DELAY = 8
    # the write would have been step 46, cycle 77
    c1 = t0.contexts[1]
    assert c1.regs[12] == 0xEEEE_EEEE and c1.regs[13] == 0xEEEE_EEEE
    assert c1.regs[15] == int.from_bytes(TFL_OUT[4:8], "little")
    # last step at 84, idle from 85: mwait at 84 (M 88; 78 has M 82), csrr 90, ecall 96 (the
    # last one, visible 101): cycles = 101 + D
    assert t0.contexts[0].regs[11] == 90 and res.cycles == 103
    assert t0.counters["engine"] == 84 - X0 + 1
    assert t0.counters["macs"] == 8 * 4 * 5 * 3
    assert out == TFL_OUT


def test_writes_after_the_last_stream_step(results):
    """J·OW = 3 < WRITE_DELAY: the writes follow the last stream step (§12 "Step schedule")."""
    res, (out,) = results["short"]
    # steps 0..7, 8..15, W 16..19, X(j) = s_j = 20 + j; element j written in step 30 + j
    # (steps 23..29 neither read nor write); 8 + 8 + 4 + 0 + 3 + 10 = 33 steps. Context 1: lui
    # 19, nops 25..43, lw at 49 (M 53), lw at 55 (M 59), lw at 61 (M 65), ecall 67: the engine
    # cycles skip 53 and 59 (65 is after the last step). Steps 0..23 at 29..52, 24..28 at
    # 54..58, 29..32 at 60..63: element 0 is written at 61, element 1 at 62, element 2 at 63
    # (the last step)
    n = steps_by_hand(SHORT_D)
    assert n == 33
    cyc = step_cycles(X0, n, {53, 59})
    assert (cyc[20], cyc[22], cyc[30], cyc[31], cyc[32]) == (49, 51, 61, 62, 63)
    t0 = res.tiles[0]
    assert res.status == RunStatus.HALTED
    # M 53 and M 59: not written yet (with WRITE_DELAY = 2 it would have been, in step 22 at
    # 51); M 65: written at 61
    c1 = t0.contexts[1]
    assert c1.regs[12] == 0xEEEE_EEEE and c1.regs[13] == 0xEEEE_EEEE
    assert c1.regs[15] == int.from_bytes(bytes(v & 0xFF for v in SHORT_Q[0]), "little")
    # idle from 64: mwait at 60 (M 64), csrr 66, ecall 72 (visible 77; context 1's at 67):
    # cycles = 77 + D
    assert t0.contexts[0].regs[11] == 66 and res.cycles == 79
    assert t0.counters["engine"] == 63 - X0 + 1
    assert t0.counters["macs"] == 8 * 4 * 3
    assert out == SHORT_OUT



def test_shortest_accumulate_again_distance_with_stalls(results):
    """J = 1, C = 1, KB = 4 (acc[0] accumulated every 2 steps; the engine's MAC is three
    stages with WRITE_DELAY = 10, issue #13), with loads and stores between the steps; the
    timing of §12 is unchanged."""
    res, (out,) = results["pipe"]
    # steps 8 + 2 + 4·1 + 3·1 + 1·1 + 10 = 28: W(0, b) in step 10 + 2b, X(0, b) in 11 + 2b,
    # s_0 = 17, the write in step 27. Not engine cycles: context 1's store M cycles 29, 35,
    # 41, 47, 53, 59 and context 3's load M cycles 37, 43, 49, 55, 67 (its word i issues at
    # 21 + 6i; word 6, M 61, is a nop); steps 0..27 at 30..34, 36, 38..40, 42, 44..46, 48,
    # 50..52, 54, 56..58, 60..66: X(0, b) at 45, 48, 51, 54, the write at 66
    n = steps_by_hand(PIPE_D)
    assert n == 28
    blocked = {29, 35, 41, 47, 53, 59, 37, 43, 49, 55, 67}
    cyc = step_cycles(X0, n, blocked)
    assert [cyc[s] for s in (11, 13, 15, 17, 27)] == [45, 48, 51, 54, 66]
    t0 = res.tiles[0]
    assert res.status == RunStatus.HALTED
    # idle from 67: mwait at 66 (M 70), csrr 72, ecall 78 (the last; context 3's is at 69),
    # visible 83: cycles = 83 + D
    assert t0.contexts[0].regs[11] == 72 and res.cycles == 85
    assert t0.counters["engine"] == 66 - X0 + 1
    assert t0.counters["macs"] == 8 * 4
    # the load of M 55 is before the write (cycle 66), the one of M 67 after it
    c3 = t0.contexts[3]
    assert c3.regs[12] == 0xEEEE_EEEE
    assert c3.regs[13] == int.from_bytes(PIPE_OUT[:4], "little")
    assert out == PIPE_OUT

def test_mrun_while_busy_retries(results):
    res, (out,) = results["busy"]
    n1 = n2 = steps_by_hand(RAW_D)
    # context 2: lui 20, addi 26, mrun 32, 38, ... retry until M ≥ 28 + n1 + 1 = 89 (n1 = 60):
    # t = 86 (≡ 2 mod 6, M 90; 80 has M 84), accepted at x2 = 90; csrr at 92
    t_a = 32
    while t_a + 4 < X0 + n1 + 1:
        t_a += T
    assert n1 == 60 and t_a == 86
    t0 = res.tiles[0]
    assert t0.contexts[2].regs[11] == t_a + 6
    x2 = t_a + 4
    # context 0's mwait (M = 34 + 6r): M 88 is the first command's last step, M 94 finds the
    # second (accepted at 90; the engine is idle only in 89): it waits for both. The second
    # command's last step is x2 + n2 = 150: context 0 retires at 150 (M 154; 144 has M 148),
    # csrr at 156
    assert t0.contexts[0].regs[11] == 156
    assert t0.counters["engine"] == (n1 + 1) + (n2 + 1)
    assert res.status == RunStatus.HALTED
    # context 2's mwait: first at t_a + 12 = 98, retires at the first t ≡ 2 with
    # t + 4 ≥ x2 + n2 + 1 = 151: 152; its ecall at t_w2 + 6 = 158; context 0's at 162 is the
    # last one: cycles = 162 + 5 + D = 169
    t_w2 = t_a + 12
    while t_w2 + 4 < x2 + n2 + 1:
        t_w2 += T
    assert t_w2 == 152 and res.cycles == 169
    assert out == raw_expected_out(RAW_ACC) * 2


def test_back_to_back_commands(results):
    res, (out,) = results["busy_b2b"]
    n = steps_by_hand(RAW_D)
    # first command: busy 28 .. 28 + n = 88 (n = 60). Context 1: lui 19, addi 25, mrun 31,
    # 37, ...; the issue at 85 has M = 89, the first idle cycle: accepted at x2 = 89 (no gap),
    # busy 89 .. 89 + n = 149; its mwait (91, 97, ...) retires at the first t ≡ 1 with
    # t + 4 ≥ 150: 151
    assert n == 60
    x2 = 89
    t_w = 91
    while t_w + 4 < x2 + n + 1:
        t_w += T
    assert t_w == 151
    t0 = res.tiles[0]
    assert res.status == RunStatus.HALTED
    assert t0.contexts[1].regs[11] == t_w + 6
    # context 0's mwait (30, 36, ...): at 84 its M (88) finds the first command busy, at 90
    # its M (94) the second, so it also waits for it: t = 150 (M 154 ≥ 150), csrr at 156,
    # ecall at 162; context 1's ecall at 163 is the last one: visible 168, cycles = 168 + D
    assert t0.contexts[0].regs[11] == 156 and res.cycles == 170
    assert t0.counters["engine"] == 2 * (n + 1)          # cycles 28 .. 149, every one busy
    assert t0.counters["macs"] == 2 * 8 * 3 * 6 * 4
    assert out == raw_expected_out(RAW_ACC) * 2


def test_engine_pauses_in_the_exchange_phase(results):
    res, (out,) = results["exchange"]
    n = steps_by_hand(RAW_D)
    # context 0: a0 (18), mrun (24, x = 28), addi (30), csrrw xprog (36), sync ARRAY (42,
    # visible 47 = k*); D = 2 (N = 1): r = 49; IDLE 5 at 49..53, END at e = 54. The steps
    # skip 49..54: the last one (n = 60) is at 28 + 60 + 6 = 94. RUNNING from 55: mwait 60,
    # 66, ... retires at 96 (M 100 ≥ 95; 90 has M 94), csrr at 102, ecall at 108 (visible
    # 113): cycles = 115
    last = step_cycles(X0, n, set(range(49, 55)))[-1]
    assert last == 94
    t0 = res.tiles[0]
    assert res.status == RunStatus.HALTED and res.cycles == 115
    assert t0.contexts[0].regs[11] == 102
    assert t0.counters["engine"] == last - X0 + 1
    assert t0.counters["exchange"] == 6 and t0.counters["sync"] == 2
    assert out == raw_expected_out(RAW_ACC)


#: §7 "Stop": a fault of checks 1 and 4 (addresses) of the step at t_f is visible from t_f + 1,
#: one of checks 2 and 3 (the data of the word the step read) from t_f + 2 (since 2026-12-02)
ADDRESS, DATA = 1, 2

FAULTS = {
    # name: (fault step, addr, ADDRESS or DATA) — the step is at cycle t_f = 29 + step, its
    # fault visible from v = t_f + 1 (checks 1, 4) or t_f + 2 (checks 2, 3), so cycles = v + D
    "f_misaligned": (0, MIS, ADDRESS),               # check 1 on descriptor word 0
    "f_c0": (7, DESC, DATA),                         # check 2 in step 7
    "f_qmax": (7, DESC, DATA),                       # qmax (word 7) out of the int8 range
    "f_shift": (9 + 2 * 1, PAR + 16 + 8, DATA),      # check 3: channel 1's shift = 31
    "f_fmult": (8 + 2 * 1, PAR + 16, DATA),          # check 3: FLOAT32, channel 1's M = +inf
    # check 1 on k1 = 1's gather word at 0x4000 = sram_bytes: steps 0..9 desc/params, 10
    # gather (k1 = 0, at 0x3FF8), 11 W(0, 0), 12 X(0, 0), 13 the gather word of k1 = 1
    "f_gather": (13, 0x4000, ADDRESS),
    # check 4: C(0) = OUT + 6, 6 + 4 > 8; KB = 3: steps 0..7, 8..15, then 3 blocks of
    # 4 W + 5 X steps; the last block's X(0) is step 16 + 2·9 + 4 = 38, its write step
    # 38 + 10 = 48 (the stream steps 39..42 of elements 1..4 and five tail steps come first)
    "f_write": (48, OUT + 6, ADDRESS),
    # check 1 on X(j = 2, b = 0) (j1 = 1): steps 0..13 desc/params, W 14..16, X(0) 17,
    # X(1) 18, X(2) 19 at A + 0x4000 = 0x5400 >= 16 KiB
    "f_xrange": (19, A + 0x4000, ADDRESS),
}


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_engine_faults(results, name):
    res, _ = results[name]
    step, addr, delay = FAULTS[name]
    t_f = X0 + 1 + step
    v = t_f + delay
    t0 = res.tiles[0]
    assert res.status == RunStatus.FAULT
    assert res.cycles == v + D
    f = t0.fault
    assert (f.context, f.cause, f.pc, f.addr) == (0, FaultCause.ENGINE_FAULT, MRUN_PC, addr)
    assert t0.contexts[0].state == CS.FAULT and t0.contexts[0].pc == MRUN_PC
    # frozen after the faulting step, still busy until the stop (§12): 28 .. t_s = v + D − 1
    assert t0.counters["engine"] == v + D - 1 - X0 + 1
    assert all(t0.contexts[c].state == CS.HALTED for c in range(1, T))


def test_same_cycle_instruction_fault_wins(results):
    res, _ = results["f_same_cycle"]
    # the engine faults in step 0 = cycle 29 (visible 30); context 1's ebreak is issued at 25
    # (its code starts at 19), M 29, visible 30 too: the record is the ebreak's and the engine
    # fault is dropped (§12), context 0 is not faulted; cycles = 30 + D
    t0 = res.tiles[0]
    assert res.status == RunStatus.FAULT and res.cycles == 32
    f = t0.fault
    assert (f.context, f.cause, f.pc) == (1, FaultCause.BREAKPOINT, pc_of(1, 1))
    assert t0.contexts[1].state == CS.FAULT
    assert t0.contexts[0].state == CS.RUNNING and t0.contexts[0].pc == pc_of(0, 2)  # at mwait


def test_engine_fault_before_instruction_fault(results):
    res, _ = results["f_engine_first"]
    # the engine fault of step 0 (29) is visible from 30: t_s = 31, cycles = 32. Context 1's
    # ebreak issued at 31 <= t_s faults too (visible 36): context 1 enters FAULT, but the tile
    # keeps the fault visible first, the engine's (§7 "Stop")
    t0 = res.tiles[0]
    assert res.status == RunStatus.FAULT and res.cycles == 32
    f = t0.fault
    assert (f.context, f.cause, f.pc, f.addr) == (0, FaultCause.ENGINE_FAULT, MRUN_PC, MIS)
    assert t0.contexts[0].state == CS.FAULT and t0.contexts[0].pc == MRUN_PC
    assert t0.contexts[1].state == CS.FAULT and t0.contexts[1].pc == pc_of(1, 2)


def test_instruction_fault_before_engine_fault(results):
    res, _ = results["f_insn_first"]
    t0 = res.tiles[0]
    # context 4's ebreak at 22 is visible from 27: t_s = 28, cycles = 29. The mrun issued at
    # 24 <= t_s is accepted in its M cycle 28; step 0 would be at 29 > t_s: the engine never
    # steps, and its misaligned descriptor never faults
    assert res.status == RunStatus.FAULT and res.cycles == 29
    f = t0.fault
    assert (f.context, f.cause, f.pc) == (4, FaultCause.BREAKPOINT, pc_of(4, 0))
    assert t0.contexts[0].state == CS.RUNNING and t0.contexts[0].pc == pc_of(0, 2)
    assert t0.counters["engine"] == 1                     # the accept cycle 28


def test_raw_two_word_writes_at_8_mod_16(results):
    res, (out,) = results["raw4_odd"]
    n, t_w = check_halted_run(res, R4_D)
    # by hand: 8 + 8 + 4 + 0 + 2·1 + 10 = 32 steps, last at 28 + 32 = 60, idle from 61; mwait
    # at 60 (M 64; 54 has M 58)
    assert n == 32 and t_w == 60
    assert out == R4_OUT


def test_data_fault_visible_at_s_plus_2(results):
    res, _ = results["f_data_s2"]
    # step 12 (channel 2's multiplier word, check 3) at t_f = 41, visible from 43: t_s = 44,
    # cycles = 43 + D = 45. Context 0 (c_e, slot t ≡ 0 mod 6) is RUNNING in 42 and issues its
    # addi there (≤ t_s: it completes); FAULT from 43 with pc = pc_e. Record addr = p_base + 32
    t0 = res.tiles[0]
    assert res.status == RunStatus.FAULT and res.cycles == 45
    f = t0.fault
    assert (f.context, f.cause, f.pc, f.addr) == (0, FaultCause.ENGINE_FAULT, MRUN_PC, PAR + 32)
    c0 = t0.contexts[0]
    assert c0.state == CS.FAULT and c0.pc == MRUN_PC and c0.regs[12] == 42
    assert c0.retired == 3 + 5                              # prologue, a0, mrun, nop, nop, addi
    assert t0.counters["engine"] == 44 - X0 + 1 and t0.counters["macs"] == 0


def test_instruction_fault_wins_the_tie_at_s_plus_2(results):
    res, _ = results["f_data_tie"]
    # check 2 in step 7 (cycle 36) is visible from 38; context 3's ebreak (issued 33, M 37)
    # too: the record is the instruction's, the engine fault is dropped (§12), context 0 is
    # not faulted (still at its mwait); cycles = 38 + D = 40
    t0 = res.tiles[0]
    assert res.status == RunStatus.FAULT and res.cycles == 40
    f = t0.fault
    assert (f.context, f.cause, f.pc) == (3, FaultCause.BREAKPOINT, pc_of(3, 2))
    assert t0.contexts[3].state == CS.FAULT
    assert t0.contexts[0].state == CS.RUNNING and t0.contexts[0].pc == pc_of(0, 2)


def test_engine_write_seen_by_the_fetch_of_its_cycle(results):
    res, _ = results["fetch_order"]
    d = Descriptor(J0=1, J1=1, K0=3, K1=1, C=1, mode=Mode.RAW)
    # steps: 0..7, 8..9, blocks b = 0..2: W at 10 + 2b, X at 11 + 2b; X(0, 2) = 15, write
    # 15 + 10 = 25 at cycle 29 + 25 = 54 (no load or store before it)
    assert steps_by_hand(d) == 26
    t0 = res.tiles[0]
    assert res.status == RunStatus.HALTED
    assert t0.contexts[4].regs[12] == 5           # fetched at 52
    assert t0.contexts[5].regs[12] == 5           # fetched at 53
    assert t0.contexts[0].regs[12] == 5           # fetched at 54 = the write's cycle
    assert t0.contexts[1].regs[12] == 77          # fetched at 55 = the write's cycle + 1


def test_store_after_engine_write_wins(results):
    res, _ = results["store_after_write"]
    # the engine writes 0x11223344 to 0x7F0 in step 15 + 10 = 25 = cycle 54 (no stall before;
    # its last step, so idle from 55); context 3's sb (its word 5, issued 51, M 55) writes byte
    # 0x7F1 = 0xAB; context 0's lw (issued 54, M 58) and the lw after mwait read 0x1122AB44;
    # the word at 0x7F4 (RAW, C = 1: 4 bytes) is untouched
    c0 = res.tiles[0].contexts[0]
    assert res.status == RunStatus.HALTED
    assert (c0.regs[12], c0.regs[13], c0.regs[14]) == (0x1122AB44, 0x1122AB44, 0xAABBCCDD)


def test_start_resets_the_engine(results):
    res, (out,) = results["restart"]
    # the second run is the "raw" run (context 3 now: nop 21, ecall 27): the engine is idle at
    # the start, so context 0's mrun at 24 is accepted at 28 as before
    check_halted_run(res, RAW_D)
    assert out == raw_expected_out(RAW_ACC)


def test_engine_fault_in_the_cycle_of_the_last_ecall(results):
    res, _ = results["fault_at_halt"]
    # context 0: lui 18, addi 24, mrun 30 (x = 34), ecall 36 (the last one, HALTED visible
    # from 41); step 0 (35) reads d = 0x3FF8, step 1 (36) reads 0x4000: engine fault at 36,
    # visible from v = 37 (first): t_s = 38, cycles = 39. The ecall, issued at 36 <= t_s,
    # completes and retires, but c_e is FAULT from 37 and stays FAULT (§7 "Stop", contract-v2
    # §6 reading 6) with pc = pc_e
    t0 = res.tiles[0]
    assert res.status == RunStatus.FAULT and res.cycles == 39
    f = t0.fault
    assert (f.context, f.cause, f.pc, f.addr) == (0, FaultCause.ENGINE_FAULT, pc_of(0, 2), 0x4000)
    assert t0.contexts[0].state == CS.FAULT and t0.contexts[0].pc == pc_of(0, 2)
    assert t0.contexts[0].retired == 3 + 4               # prologue, lui, addi, mrun, ecall
    assert t0.counters["engine"] == 5                    # 34 .. 38


def test_halt_while_busy_leaves_later_steps_undone(results):
    res, (out,) = results["halt_busy"]
    # context 0: lui 18, mrun 24 (x = 28), ecall 30 = the last ecall, visible 35: t_s = 36,
    # cycles = 37; the engine ran steps 0..7 (cycles 29..36, descriptor reads) and wrote nothing
    t0 = res.tiles[0]
    assert res.status == RunStatus.HALTED and res.cycles == 37
    assert t0.counters["engine"] == 9 and t0.counters["macs"] == 0       # 28 .. 36
    assert out == b"\xee" * 160
