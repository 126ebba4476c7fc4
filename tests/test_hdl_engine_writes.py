"""The matrix engine's write steps of up to two 8-byte words and its data-check faults visible
from s + 2 (docs/architecture.md §12 "Step schedule", "Why two write words", "Engine faults"
check 4; §7 "Stop"; contract change of 2026-12-02) on the Amaranth-simulated array (1 tile,
T = 6, 16 KiB; P = 32: M = 4 lanes, or P = 64: M = 8). No Verilator build.

Every expected value is derived by hand from the contract text (comments); the int32
accumulators of §12 "Semantics" (acc(j, m) = bias[m] + Σ_i X(j)[i]·W(m)[i] mod 2^32) in numpy.
Each run is also compared with the golden model's run of the same image
(``helpers.hdl_parity.compare``: status, cycles, counters, record, contexts, SRAM words).

Program layout (tests/helpers/model_engine.py): context c's word j issues at (3 + j)·6 + c.
Context 0 issues ``li x5, D0`` at 18 and ``mrun x5`` at 24, accepted in its M cycle x = 28, so
step s is at cycle 29 + s (no load, store or exchange); ``mwait`` at 30 + 6r retries until its
M (34 + 6r) is after the last step, ``csrr x10, cycle`` 6 cycles later, ``ecall`` 6 after that,
the last one of the run (the other contexts' ``ecall`` at 18 + c): HALTED visible 5 cycles
later and cycles = that + D, D = 2 (one tile, §7).

RAW write steps (§12 "Step schedule"): OW = ⌈C/4⌉ write steps per element; write w of element
j is bytes 16w .. min(16w + 16, 4C) − 1 of its 4C bytes (acc(j, 4w) .. acc(j, min(4w + 4, C)
− 1), little-endian int32) at C(j) + 16w: the word at C(j) + 16w and, when 4C > 16w + 8, the
next one. A command with KB = 1 (K0 = K1 = 1) has 8 + 2C + C + J·OW + 10 steps (the 10 is
WRITE_DELAY).
"""

import numpy as np
import pytest

from tessera.spec.config import ArrayConfig
from tessera.spec.engine import Descriptor, Mode
from tessera.spec.faults import FaultCause
from tessera.toolchain import asm

from helpers.hdl_parity import compare
from helpers.model_engine import A, CODE, D0, OUT, P, PC_MRUN, SRAM, W, image, issuer, params

CFG32 = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM, engine_macs=32)    # M = 4
CFG64 = ArrayConfig(tiles=1, contexts=6, sram_bytes=SRAM, engine_macs=64)    # M = 8
X0 = 28                     # accept cycle of context 0's mrun
D = 2                       # decision latency of one tile (§7)
FILL = 0xEE                 # the output area's bytes before the command
REGION = 0x100              # bytes read back from OUT


def _raw(seed, c, j, c_base, c_s0):
    """RAW, C = c, J = J0 = j, KB = 1: X(j) at A + 8j, W(m) at W + 8m, C(j) = c_base + c_s0·j.
    Returns the descriptor, the memory image and acc (J × C, int64 in 0 .. 2^32 − 1)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(j, 8))
    wt = rng.integers(-128, 128, size=(c, 8))
    bias = rng.integers(-2 ** 31, 2 ** 31, size=c)
    d = Descriptor(a_base=A, a_s0=8, w_base=W, w_sm=8, c_base=c_base, c_s0=c_s0, p_base=P,
                   J0=j, C=c, mode=Mode.RAW)
    acc = (x @ wt.T + bias[None, :]) % 2 ** 32
    mem = {D0: d.pack(), A: bytes(int(v) & 0xFF for v in x.reshape(-1)),
           W: bytes(int(v) & 0xFF for v in wt.reshape(-1)), P: params(bias)}
    return d, mem, acc


def _img(codes, mem, extra=()):
    return [(0, image(codes))] + sorted(mem.items()) + list(extra)


def _words(b):
    return [int.from_bytes(b[i:i + 4], "little") for i in range(0, len(b), 4)]


def _halted_timing(n):
    """(csrr value, cycles) of the issuer's run of one command of n steps (module docstring):
    the last step at 28 + n, the engine idle from 29 + n; mwait retires at the first
    t = 30 + 6r with t + 4 ≥ 29 + n."""
    t_w = 30
    while t_w + 4 < X0 + n + 1:
        t_w += 6
    return t_w + 6, t_w + 12 + 5 + D


RAW_CASES = {
    # name: (config, C, J, C(0), c_s0, steps by hand, OW by hand)
    # C = 3: OW = ⌈3/4⌉ = 1; 12 bytes: the word at C(j) and 4 bytes of the next;
    # 8 + 6 + 3 + 2·1 + 10 = 29 steps (⌈3/2⌉ = 2 until 2026-12-02: 31)
    "c3": (CFG32, 3, 2, OUT, 16, 29, 1),
    # C = 4: OW = 1; 16 bytes: two whole words; 8 + 8 + 4 + 2 + 10 = 32 steps
    "c4": (CFG32, 4, 2, OUT, 16, 32, 1),
    # C(j) = OUT + 8 + 16j ≡ 8 (mod 16): the first word of each write is an odd word (bank
    # "odd"), the second the next even word, in the next row of the other bank
    "c4_odd": (CFG32, 4, 2, OUT + 8, 16, 32, 1),
    "c3_odd": (CFG32, 3, 2, OUT + 8, 24, 29, 1),
    # P = 64, C = 5: OW = ⌈5/4⌉ = 2; write 0 = bytes 0..15 (two words), write 1 = bytes
    # 16..19 at C(j) + 16 (4C = 20 is not > 16 + 8: one word, 4 bytes of it);
    # 8 + 10 + 5 + 2·2 + 10 = 37 steps
    "c5_p64": (CFG64, 5, 2, OUT, 32, 37, 2),
    # P = 64, C = 8: OW = 2, both writes two words (4C = 32 > 16 + 8); 8 + 16 + 8 + 4 + 10 = 46
    "c8_p64": (CFG64, 8, 2, OUT + 8, 40, 46, 2),
}


@pytest.mark.parametrize("name", sorted(RAW_CASES))
def test_raw_write_steps(name):
    cfg, c, j, c0, cs0, steps, ow = RAW_CASES[name]
    assert -(-c // 4) == ow                                   # OW = ⌈C/4⌉ (§12)
    assert 8 + 2 * c + c + j * ow + 10 == steps
    d, mem, acc = _raw(10 + c + 7 * j + c0 % 16, c, j, c0, cs0)
    img = _img({0: issuer()}, mem, [(OUT, bytes([FILL]) * REGION)])
    got = compare(cfg, [img], 2000, [(OUT, OUT + REGION)])
    t0 = got["tiles"][0]
    assert got["status"] == "halted" and t0["fault"] is None
    csrr, cycles = _halted_timing(steps)
    assert t0["contexts"][0]["regs"][10] == csrr and got["cycles"] == cycles
    assert t0["counters"]["engine"] == steps + 1            # cycles 28 .. 28 + steps
    assert t0["counters"]["macs"] == 8 * c * j
    want = bytearray([FILL]) * REGION
    for e in range(j):
        a = c0 - OUT + cs0 * e
        want[a:a + 4 * c] = b"".join(int(v).to_bytes(4, "little") for v in acc[e])
    assert got["mem"][0] == _words(want)


def test_raw_write_fault_on_the_second_word_writes_neither():
    """Check 4 (RAW): C(0) = sram_bytes − 8 is a multiple of 8 and C(0) + 16·0 < sram_bytes, but
    the write's second word (4C = 16 > 8) is at C(0) + 8 = sram_bytes: addr = sram_bytes, and
    neither word is written."""
    c0 = SRAM - 8
    d, mem, _acc = _raw(5, 4, 1, c0, 16)
    # steps 0..7 descriptor, 8..15 parameters, 16..19 W, 20 = X(0) = s_0, its write in step
    # s_0 + WRITE_DELAY = 30 at t_f = 29 + 30 = 59; check 4 is an address check: visible from
    # 60 (§7 "Stop"), t_s = 60 + D − 1 = 61, cycles = 60 + D = 62
    img = _img({0: issuer()}, mem, [(c0, bytes([FILL]) * 8)])
    got = compare(CFG32, [img], 2000, [(c0, SRAM)])
    t0 = got["tiles"][0]
    assert got["status"] == "fault" and got["cycles"] == 62
    assert t0["fault"] == {"context": 0, "cause": FaultCause.ENGINE_FAULT.label,
                           "pc": PC_MRUN, "addr": SRAM}
    assert t0["contexts"][0]["state"] == "fault" and t0["contexts"][0]["pc"] == PC_MRUN
    assert got["mem"][0] == [0xEEEEEEEE] * 2                # the first word is not written
    # the stream step 20 counted its 8·C MACs; busy 28 .. t_s = 61
    assert t0["counters"]["macs"] == 32 and t0["counters"]["engine"] == 61 - X0 + 1


INF = 0x7F800000            # binary32 +inf: exponent 255 (check 3 in FLOAT32 mode)


def test_data_fault_visible_at_s_plus_2_and_c_e_issues_at_s_plus_1():
    """FLOAT32, C = 3, channel 2's multiplier +inf: check 3 in step 8 + 2·2 = 12, at
    t_f = 29 + 12 = 41, visible from t_f + 2 = 43 (§7 "Stop", §12 "Engine faults").
    Context 0 (c_e) issues at 30, 36, 42 = t_f + 1 (its slot, t ≡ 0 mod 6): it is still
    RUNNING in 42 (FAULT from 43), so ``addi x12, x0, 42`` issued at 42 ≤ t_s = 43 + D − 1 = 44
    takes effect and retires; cycles = 43 + D = 45. (Until 2026-12-02 the fault was visible
    from 42: context 0 would not have issued at 42.) The record: (0, engine_fault, pc_e,
    p_base + 16·2); c_e's final pc is pc_e."""
    d = Descriptor(a_base=A, w_base=W, c_base=OUT, p_base=P, C=3, mode=Mode.FLOAT32)
    par = params([0, 0, 0], [0x3F000000, 0x3F000000, INF], [0, 0, 0])
    nop = asm.addi(0, 0, 0)
    code = [*asm.li(5, D0), asm.mrun(5), nop, nop, asm.addi(12, 0, 42), asm.ecall()]
    assert len(asm.li(5, D0)) == 1                          # li at 18, mrun at 24
    img = _img({0: code}, {D0: d.pack(), P: par})
    got = compare(CFG32, [img], 2000, [])
    t0 = got["tiles"][0]
    c0 = t0["contexts"][0]
    assert got["status"] == "fault" and got["cycles"] == 45
    assert t0["fault"] == {"context": 0, "cause": FaultCause.ENGINE_FAULT.label,
                           "pc": PC_MRUN, "addr": P + 32}
    assert c0["state"] == "fault" and c0["pc"] == PC_MRUN
    assert c0["regs"][12] == 42
    # the dispatch (3), li, mrun, nop, nop, addi: the addi issued at 42 retired
    assert c0["retired"] == 3 + 5
    assert t0["counters"]["engine"] == 44 - X0 + 1            # busy 28 .. t_s = 44
    assert t0["counters"]["macs"] == 0


def _tie_case(insn_ctx):
    """Check 2 in step 7 (C = 0) at t_f = 36, visible from 38 (§12: checks 2, 3 from s + 2);
    context ``insn_ctx`` runs nop, nop, ebreak (its word 2 issues at 30 + insn_ctx)."""
    d = Descriptor(a_base=A, w_base=W, c_base=OUT, p_base=P, C=0, mode=Mode.RAW)
    nop = asm.addi(0, 0, 0)
    img = _img({0: issuer(), insn_ctx: [nop, nop, asm.ebreak()]}, {D0: d.pack()})
    return compare(CFG32, [img], 2000, [])


def _ebreak_recorded(got, ctx, cycles):
    """The run faulted at ``cycles`` with the record of context ``ctx``'s ebreak (its word 2,
    at pc CODE·(ctx + 1) + 8) and ``ctx`` in FAULT; returns tile 0's result."""
    t0 = got["tiles"][0]
    assert got["status"] == "fault" and got["cycles"] == cycles
    f = t0["fault"]
    assert (f["context"], f["cause"], f["pc"]) == (ctx, FaultCause.BREAKPOINT.label,
                                                   CODE * (ctx + 1) + 8)
    assert t0["contexts"][ctx]["state"] == "fault"
    return t0


def test_instruction_fault_visible_with_the_data_fault_at_s_plus_2_wins():
    # context 3's ebreak issued at 33 (M 37) is visible from 38 = t_f + 2, the cycle the data
    # fault is visible: the record is the instruction's, the engine fault is dropped and
    # context 0 is not faulted (§12 "Engine faults", §7 "Stop"); cycles = 38 + D = 40
    t0 = _ebreak_recorded(_tie_case(3), 3, 40)
    # context 0 retries mwait (its word 2, pc 0x88) at 30, 36 (t_s = 39)
    assert t0["contexts"][0]["state"] == "running" and t0["contexts"][0]["pc"] == CODE + 8


def test_instruction_fault_visible_at_s_plus_1_is_first():
    # context 2's ebreak issued at 32 is visible from 37 = t_f + 1, before the data fault
    # (38): the record is the ebreak's (the fault visible first), t_s = 37 + D − 1 = 38 and
    # cycles = 39; the engine fault, visible from 38 <= t_s, still puts c_e into FAULT with
    # pc = pc_e (as an instruction fault visible after the first, §7 "Stop")
    t0 = _ebreak_recorded(_tie_case(2), 2, 39)
    assert t0["contexts"][0]["state"] == "fault" and t0["contexts"][0]["pc"] == PC_MRUN


def test_c_e_instruction_of_s_plus_1_faulting_keeps_the_engine_record():
    # as the s + 2 case above (check 3 in step 12 at t_f = 41, visible from 43, t_s = 44),
    # with context 0's ebreak issued at 42 = t_f + 1: it is issued (c_e is RUNNING in 42) and
    # completes (42 ≤ t_s), faulting in its M (46), visible from 47; the tile keeps the fault
    # visible first, the engine's (§7 "Stop"); c_e stays FAULT with pc = pc_e (the ebreak
    # does not retire); cycles = 43 + D = 45
    d = Descriptor(a_base=A, w_base=W, c_base=OUT, p_base=P, C=3, mode=Mode.FLOAT32)
    par = params([0, 0, 0], [0x3F000000, 0x3F000000, INF], [0, 0, 0])
    nop = asm.addi(0, 0, 0)
    code = [*asm.li(5, D0), asm.mrun(5), nop, nop, asm.ebreak(), asm.ecall()]
    got = compare(CFG32, [_img({0: code}, {D0: d.pack(), P: par})], 2000, [])
    t0 = got["tiles"][0]
    c0 = t0["contexts"][0]
    assert got["status"] == "fault" and got["cycles"] == 45
    assert t0["fault"] == {"context": 0, "cause": FaultCause.ENGINE_FAULT.label,
                           "pc": PC_MRUN, "addr": P + 32}
    assert c0["state"] == "fault" and c0["pc"] == PC_MRUN
    assert c0["retired"] == 3 + 4                            # dispatch, li, mrun, nop, nop


def test_data_fault_and_exchange_fault_visible_together_keep_the_engine_record():
    """§7 "Stop" (contract of 2026-12-02): an engine fault and an exchange fault of one tile
    visible from the same cycle (a data-check fault of the step just before the exchange
    phase and the fault of the phase's first step): the engine's.

    Context 0: li x5, D0 (18); li x6, XPM (24); csrrw xprog, x6 (30; M 34); mrun x5 (36,
    accepted at x = 40: step s at 41 + s); sync ARRAY (42, visible 47 = k*). D = 2: the
    exchange phase starts at r = k* + D = 49, its first step (at XPM = 0x784, not 8-byte
    aligned: an exchange fault, §6) is at 49 and visible from 50. Step 7 (cycle 48 = r − 1)
    reads descriptor word 7 of a descriptor with C = 0 (check 2): visible from 48 + 2 = 50.
    The record is the engine's (context 0, pc of the mrun, addr d); cycles = 50 + D = 52."""
    xpm = 0x784
    d = Descriptor(a_base=A, w_base=W, c_base=OUT, p_base=P, C=0, mode=Mode.RAW)
    from tessera.spec.csr import Csr
    code = [*asm.li(5, D0), *asm.li(6, xpm), asm.csrrw(0, Csr.XPROG, 6), asm.mrun(5),
            asm.sync_array(), asm.mwait(), asm.ecall()]
    assert len(asm.li(5, D0)) == len(asm.li(6, xpm)) == 1
    got = compare(CFG32, [_img({0: code}, {D0: d.pack()})], 2000, [])
    t0 = got["tiles"][0]
    assert got["status"] == "fault" and got["cycles"] == 52
    assert t0["fault"] == {"context": 0, "cause": FaultCause.ENGINE_FAULT.label,
                           "pc": CODE + 12, "addr": D0}
    assert t0["contexts"][0]["state"] == "fault" and t0["contexts"][0]["pc"] == CODE + 12
    # the same program with a valid descriptor (C = 1): the exchange fault alone, visible from
    # 50 too (context null, pc = addr = the step address, §6)
    ok = Descriptor(a_base=A, w_base=W, c_base=OUT, p_base=P, C=1, mode=Mode.RAW)
    got = compare(CFG32, [_img({0: code}, {D0: ok.pack()})], 2000, [])
    assert got["status"] == "fault" and got["cycles"] == 52
    assert got["tiles"][0]["fault"] == {"context": None, "cause": FaultCause.EXCHANGE_FAULT.label,
                                        "pc": xpm, "addr": xpm}
