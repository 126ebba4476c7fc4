"""Tests written for golden-model mutants that survived the fast suite (docs/verification.md,
"Mutation score"). Expected values are derived by hand from docs/architecture.md and the kernel
docstrings; each case names the mutant it kills.

Timing for the array cases (contract v2; T = 6, N = 2, 16 KiB, D(2) = 3): context c owns the
slots t ≡ c (mod 6), so context 0 issues its k-th instruction at t = 6k; a fault of an
instruction issued at t is visible from t + 5 and the run ends with cycles = t + 5 + D.
"""

import struct
from types import SimpleNamespace

import numpy as np
import pytest

from tessera.backends import run_program_io
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.toolchain import asm
from tessera.golden_model.kernels.conv2d import im2col
from tessera.golden_model.kernels.requantize import rounding_divide_by_pot

CFG = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
EMPTY = SimpleNamespace(entry=0, segments=[])


def _code(words):
    return b"".join(struct.pack("<I", w) for w in words)


def test_fetch_fault_on_one_tile_only():
    # Kills `oor = bad_range & ~bad` -> `bad_range | ~bad` (golden_model/array.py, fetch
    # checks): a tile that fetches normally in the cycle another tile's fetch faults must not
    # get a fault. Tile 0 jumps to 0x4000 = sram_bytes (aligned, outside the SRAM: taken, the
    # fetch there faults, §3.1/§2); tile 1 branches to a run of addi.
    a = asm
    code = [a.csrr(5, Csr.TILE_ID),          # 0x00  t = 0 (context 0)
            a.bne(5, 0, 16),                 # 0x04  t = 6: tile 1 -> 0x14
            a.addi(6, 0, 1),                 # 0x08  t = 12
            a.slli(6, 6, 14),                # 0x0C  t = 18: x6 = 0x4000
            a.jalr(0, 6, 0),                 # 0x10  t = 24: tile 0 -> 0x4000
            a.addi(7, 7, 1),                 # 0x14  tile 1: t = 12
            a.addi(7, 7, 1),                 # 0x18  t = 18
            a.addi(7, 7, 1),                 # 0x1C  t = 24
            a.addi(7, 7, 1),                 # 0x20  t = 30 (same slot as tile 0's fetch fault)
            a.ecall()]
    pre = [(t, 0, _code(code)) for t in (0, 1)]
    res, _ = run_program_io("model", CFG, EMPTY, 200, preload=pre)
    r = res.to_json()
    # tile 0, context 0 fetches 0x4000 at t = 30: visible from 35, cycles = 35 + 3 = 38
    # (tile 0's other contexts fault the same way at 31..35 <= t_s = 37; record: context 0)
    assert (r["status"], r["cycles"]) == ("fault", 38)
    assert r["tiles"][0]["fault"] == {"context": 0, "cause": "access_fault_fetch",
                                      "pc": 0x4000, "addr": 0x4000}
    assert r["tiles"][1]["fault"] is None


def test_store_fault_on_one_tile_different_words():
    # Kills dropping `rs2 = rs2[ok]` (golden_model/semantics.py, stores): tiles issue different
    # store words in the same cycle and one of them faults. At t = 0 (context 0) tile 0 issues
    # `sw x6, 1(x0)` (misaligned: fault, §2), tile 1 `sw x7, 0x100(x0)` (x7 = 0 at start):
    # the fault is visible from 5, the run ends with cycles = 5 + 3 = 8 and tile 1's store,
    # issued at t_f <= t_s = 7, takes effect (§7).
    a = asm
    pre = [(0, 0, _code([a.sw(6, 1, 0), a.ecall()])),
           (1, 0, _code([a.sw(7, 0x100, 0), a.ecall()])),
           (1, 0x100, struct.pack("<I", 0xFFFFFFFF))]
    res, data = run_program_io("model", CFG, EMPTY, 200, preload=pre,
                               readback=[(1, 0x100, 4)])
    r = res.to_json()
    assert (r["status"], r["cycles"]) == ("fault", 8)
    assert r["tiles"][0]["fault"] == {"context": 0, "cause": "misaligned_store",
                                      "pc": 0, "addr": 1}
    assert r["tiles"][1]["fault"] is None
    assert struct.unpack("<I", data[0])[0] == 0


def test_rounding_divide_by_pot_rejects_out_of_int32_range():
    # Kills dropping `x = _int32_values(...)` (kernels/requantize.py): the docstring says x
    # must be int32-ranged integers (ValueError / TypeError otherwise).
    with pytest.raises((ValueError, TypeError)):
        rounding_divide_by_pot(np.array([2 ** 31], dtype=np.int64), 1)
    # and a valid call: round-half-away-from-zero division by 2 (gemmlowp RoundingDivideByPOT)
    assert rounding_divide_by_pot(np.array([5, -5, 4], dtype=np.int32), 1).tolist() == [3, -3, 2]


def test_im2col_padding_must_be_non_negative():
    # Kills `lo=0` -> `lo=-1` for the last entry of a ((top, bottom), (left, right)) padding
    # (kernels/_geometry.py). The mutant fails later inside numpy ("index can't contain
    # negative values"); the contract of the kernel is a ValueError that names the argument.
    x = np.zeros((1, 3, 3, 1), dtype=np.int8)
    for pads in (((0, 0), (0, -1)), ((0, -1), (0, 0))):
        with pytest.raises(ValueError, match="padding"):
            im2col(x, 2, padding=pads)


def test_im2col_pad_value_int8_max_allowed():
    # Kills `value > hi` -> `value >= hi` (kernels/_checks.py as_int): the range is inclusive,
    # pad_value = 127 is a valid int8. 1x1 input, 2x2 kernel, one pixel of padding on the
    # bottom/right: the single window is [x, 127, 127, 127].
    x = np.full((1, 1, 1, 1), 5, dtype=np.int8)
    out = im2col(x, 2, padding=((0, 1), (0, 1)), pad_value=127)
    assert out.reshape(-1).tolist() == [5, 127, 127, 127]


def test_scalar_interpreter_directed_program():
    # Kills mutants of golden_model/scalar.py (the bench-only second formulation) that the
    # bench programs of test_model_trace do not reach: dot4/dot4su byte lanes, store address
    # and width, mul (M034307: `a * b` -> `a // b`), backward branch targets, jal, a context halting while others still run. The scalar interpreter and the vectorized model
    # must agree on every register; a few values are also checked by hand (RISC-V semantics,
    # architecture §3.3).
    from tessera.golden_model import Array
    from tessera.golden_model.scalar import ScalarArray
    a = asm
    prog = [
        a.csrr(2, Csr.CONTEXT_ID),
        a.slli(3, 2, 4),                    # x3 = 16 * context (per-context window)
        a.lui(1, 0x80FF8), a.addi(1, 1, -255),   # x1 = 0x80FF7F01
        a.lui(4, 0x7F810), a.addi(4, 4, -2046),  # x4 = 0x7F80F802
        a.dot4(5, 1, 4),                    # x5 = 0 + sum s8(x1_i) * s8(x4_i)
        a.dot4su(6, 1, 4),                  # x6 = 0 + sum s8(x1_i) * u8(x4_i)
        a.sw(4, 0x108, 3),                  # word at 0x108 + x3
        a.sw(1, 0x104, 3),                  # word at 0x104 + x3 (must not touch 0x108)
        a.lw(7, 0x104, 3), a.lw(8, 0x108, 3),
        a.mul(13, 1, 4),                    # low 32 bits of x1 * x4 (survivor M034307)
        a.mul(14, 4, 4),
        a.jal(9, 8),                        # skip the next instruction, x9 = return address
        a.addi(12, 0, 99),                  # skipped
        a.addi(11, 2, 3),                   # x11 = 3 + context: contexts halt in different
        a.addi(10, 10, 1),                  # rounds; loop: x10 = 1 .. x11
        a.bne(10, 11, -4),                  # backward taken branch
        a.ecall(),
    ]
    code = asm.program(prog)
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024)
    m = Array(cfg)
    m.write_mem(None, 0, code)
    res = m.run(10_000)
    s = ScalarArray(cfg)
    s.write_mem(None, 0, code)
    s.run(10_000)
    assert res.status == "halted" and res.cycles == s.cycle
    assert np.array_equal(m.regs, s.regs_array())
    r = s.regs_array()[0, 0]
    # by hand: bytes of x1 = [0x01, 0x7F, 0xFF, 0x80] = [1, 127, -1, -128] (signed);
    # x4 = [0x02, 0xF8, 0x80, 0x7F] = [2, -8, -128, 127] signed, [2, 248, 128, 127] unsigned
    assert int(r[1]) == 0x80FF7F01 and int(r[4]) == 0x7F80F802
    assert int(r[5]) == (1 * 2 + 127 * -8 + -1 * -128 + -128 * 127) & 0xFFFFFFFF
    assert int(r[6]) == (1 * 2 + 127 * 248 + -1 * 128 + -128 * 127) & 0xFFFFFFFF
    assert int(r[7]) == 0x80FF7F01 and int(r[8]) == 0x7F80F802
    # MUL: the low XLEN bits of the product, the same for signed and unsigned operands
    # (RISC-V unprivileged spec, "M" extension, "Multiplication Operations")
    assert int(r[13]) == (0x80FF7F01 * 0x7F80F802) & 0xFFFFFFFF
    assert int(r[14]) == (0x7F80F802 * 0x7F80F802) & 0xFFFFFFFF
    assert int(r[9]) == 4 * prog.index(a.jal(9, 8)) + 4
    assert int(r[12]) == 0 and int(r[10]) == 3


def test_ort_broadcast_kind_decides_on_the_outermost_dimension_too():
    # Kills golden-model mutant M049f10 (kernels/qlinear.py: the scan over the output's
    # dimensions stopped before dimension 0, so a decision that only dimension 0 can make fell
    # through to "scalar_a"). By the function's definition (onnxruntime's BroadcastLooper):
    # the innermost output dimension of size > 1 decides; A broadcast over it -> "scalar_a",
    # else B broadcast -> "scalar_b", else "vector"; no such dimension -> "scalar_a".
    from tessera.golden_model.kernels.qlinear import ort_broadcast_kind
    assert ort_broadcast_kind((4,), (4,)) == "vector"
    assert ort_broadcast_kind((4,), (1,)) == "scalar_b"
    assert ort_broadcast_kind((1,), (4,)) == "scalar_a"
    assert ort_broadcast_kind((3, 1, 1), (3, 1, 1)) == "vector"      # dims 1, 2 are size 1
    assert ort_broadcast_kind((3, 1), (1, 1)) == "scalar_b"
    assert ort_broadcast_kind((2, 5), (2, 1)) == "scalar_b"           # dimension 1 decides
    assert ort_broadcast_kind((1, 1), (1, 1)) == "scalar_a"           # nothing to decide
