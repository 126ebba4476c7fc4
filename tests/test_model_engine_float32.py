"""Golden model: the matrix engine's ``FLOAT32`` output mode (docs/architecture.md §12,
"Semantics", "Engine faults" 2-4; the rule of §11 rule 2, onnxruntime's float32 requantize).

Expected bytes are derived by hand from the contract text below (fl32 = nearest binary32, ties
to even; rne = nearest integer, ties to even) and compared with the independent numpy reference
``tessera.golden_model.kernels.requantize_float32`` and with onnxruntime's ``QLinearMatMul``;
never with recorded model output. Both golden-model engines run every test (the fixture of
``test_model_engine``).
"""

import struct

import numpy as np
import pytest

from tessera.golden_model.kernels import float32_multiplier, matmul, requantize_float32
from tessera.spec.engine import ChannelParams, Descriptor, Flag, Mode, command_steps

from helpers.model_engine import (A, OUT, P, STD_MEM, W, check_fault, fault, fault_case, good,
                               model_engine, run_cmd)  # noqa: F401 (fixture)


def f32_bits(v: float) -> int:
    """int32 word of the binary32 value ``v`` (which must be exact in binary32)."""
    b = struct.pack("<f", v)
    assert struct.unpack("<f", b)[0] == v
    return struct.unpack("<i", b)[0]


def fparams(bias, mult_bits) -> bytes:
    return b"".join(ChannelParams(int(b), int(m), 0).pack() for b, m in zip(bias, mult_bits))


# Channel multipliers of the ties test (bit patterns written out by hand from the binary32
# layout: sign | exponent (bias 127) << 23 | fraction):
M_HALF = 0x3F000000            # 0.5 = 2^-1: exponent 126
M_TWO = 0x40000000             # 2.0: exponent 128
M_2P24 = 0x33800000            # 2^-24: exponent 103
# 0xAAAAAB · 2^-26: the 24-bit mantissa 0xAAAAAB = 1.0101..·2^23, value 1.333..·2^-3:
# exponent 124 (0x7C << 23 = 0x3E000000), fraction 0xAAAAAB - 0x800000 = 0x2AAAAB.
M_THIRD = 0x3E2AAAAB
# 3 · 0xAAAAAB = 0x2000001 = 2^25 + 1, so acc · M_THIRD = acc/3 · (2^25 + 1) · 2^-26
# (about acc / 6).


def test_multiplier_bit_patterns_are_the_stated_values():
    f = lambda bits: struct.unpack("<f", struct.pack("<i", bits))[0]    # noqa: E731
    assert (f(M_HALF), f(M_TWO), f(M_2P24)) == (0.5, 2.0, 2.0 ** -24)
    assert f(M_THIRD) == 0xAAAAAB * 2.0 ** -26 and 3 * 0xAAAAAB == (1 << 25) + 1
    assert ChannelParams.float32(7, np.float32(0.5)) == ChannelParams(7, M_HALF, 0)


def _ties_command(flags=0, zp=-3, qmin=-128, qmax=127):
    """C = 4, J = 256, x_j = j - 128 in byte 0 of X(j), W(m) = [1, 0, ..., 0]: acc(j, m) =
    bias[m] + x_j (K = 8, one block)."""
    J = 256
    xs = np.arange(J) - 128
    x = np.zeros((J, 8), np.int8)
    x[:, 0] = xs
    w = np.zeros((4, 8), np.int8)
    w[:, 0] = 1
    bias = [0, 0, 5 * (1 << 23) + 1, 0]
    mults = [M_HALF, M_TWO, M_2P24, M_THIRD]
    desc = Descriptor(a_base=A, a_s0=8, J0=16, J1=16, a_s1=128, w_base=W, w_sm=8,
                      c_base=OUT, c_s0=8, c_s1=128, p_base=P, C=4, mode=Mode.FLOAT32,
                      flags=flags, zp=zp, qmin=qmin, qmax=qmax)
    mem = {A: x.tobytes(), W: w.tobytes(), P: fparams(bias, mults)}
    return desc, mem, xs, np.array(bias)


def test_ties_saturation_and_int32_to_float32_rounding():
    desc, mem, xs, bias = _ties_command()
    arr, res = run_cmd(desc, mem)
    got = np.frombuffer(arr.read_mem(0, OUT, 8 * 256), np.int8).reshape(256, 8)
    at = {int(v): j for j, v in enumerate(xs)}
    g = lambda x, m: int(got[at[x], m])                       # noqa: E731
    zp = -3
    # channel 0, M = 0.5: p = x/2 exact; rne ties to even: 1 -> 0.5 -> 0, 3 -> 1.5 -> 2,
    # 5 -> 2.5 -> 2, 7 -> 3.5 -> 4; negative ties: -1 -> -0.5 -> 0, -3 -> -2, -5 -> -2
    assert [g(x, 0) - zp for x in (1, 3, 5, 7, -1, -3, -5, -7, 4)] == \
        [0, 2, 2, 4, 0, -2, -2, -4, 2]
    # channel 1, M = 2: y = 2x - 3 clamped to -128..127: both sides saturate
    assert [g(x, 1) for x in (-128, -63, -62, 0, 64, 65, 127)] == \
        [-128, -128, -127, -3, 125, 127, 127]
    # channel 2, M = 2^-24, acc = 5·2^23 + 1 + x (in [2^25, 2^26): binary32 spacing 4):
    #   x = 0: 5·2^23 + 1 -> 5·2^23 (nearest) -> p = 2.5 -> 2   (exact arithmetic: 3)
    #   x = 1: 5·2^23 + 2, a tie between 5·2^23 (mantissa 5·2^21, even) and + 4 -> 2.5 -> 2
    #   x = 2: 5·2^23 + 3 -> 5·2^23 + 4 -> 2.5 + 2^-22 -> 3
    #   x = -1: 5·2^23 -> 2;  x = 6: 5·2^23 + 7 -> + 8 -> 3;  x = -3: 5·2^23 - 2, a tie
    #   between 5·2^23 - 4 (mantissa 5·2^21 - 1, odd) and 5·2^23 -> 2.5 -> 2
    assert [g(x, 2) - zp for x in (0, 1, 2, -1, 6, -3)] == [2, 2, 3, 2, 3, 2]
    # channel 3, M = 0xAAAAAB·2^-26 (double rounding of the product):
    #   acc = 3: (2^25 + 1)·2^-26 = 0.5 + 2^-26; binary32 spacing at 0.5 is 2^-24, so fl32 =
    #   0.5 and rne(0.5) = 0 (the exact product would round to 1); acc = -3: -0.5 -> 0
    #   acc = 15: 2.5 + 5·2^-26, spacing 2^-22 = 16·2^-26: 5/16 < 1/2 -> 2.5 -> 2 (exact: 3)
    #   acc = 9: 1.5 + 3·2^-26, spacing 2^-23 = 8·2^-26 -> 1.5 -> 2
    #   acc = 6: 1 + 2^-25 -> 1.0 -> 1;  acc = 127: 21.17.. -> 21;  acc = -128: -21.33.. -> -21
    assert [g(x, 3) - zp for x in (3, -3, 15, 9, 6, 127, -128)] == [0, 0, 2, 2, 1, 21, -21]
    # every element against the independent reference (per-channel multiplier and bias)
    m = np.array([struct.unpack("<f", struct.pack("<i", b))[0] for b in
                  (M_HALF, M_TWO, M_2P24, M_THIRD)], np.float32)
    ref = requantize_float32(xs[:, None] + np.zeros((1, 4), np.int64), m, zp, bias=bias)
    assert (got[:, :4] == ref).all()
    assert not got[:, 4:].any()                                # bytes C..7 not written
    # the schedule is TFLITE's (OW = 1): 8 + 8 + 4 + 0 + 256 + 10 = 286 steps (WRITE_DELAY 10)
    assert command_steps(desc) == 286 and res.tiles[0].counters["engine"] == 287


def test_unsigned_output_with_relu():
    # OUT_UNSIGNED, zp = 128 = qmin (ReLU), qmax = 200: y = min(max(rne(p) + 128, 128), 200)
    desc, mem, xs, bias = _ties_command(flags=Flag.OUT_UNSIGNED, zp=128, qmin=128, qmax=200)
    arr, _ = run_cmd(desc, mem)
    got = np.frombuffer(arr.read_mem(0, OUT, 8 * 256), np.uint8).reshape(256, 8)
    at = {int(v): j for j, v in enumerate(xs)}
    # channel 1 (M = 2): x = -1 -> -2 -> 126 -> 128; x = 36 -> 200; x = 37 -> 202 -> 200;
    # x = 3 -> 134; channel 0 (M = 0.5): x = 5 -> 2 -> 130, x = -7 -> -4 -> 128
    assert [int(got[at[x], 1]) for x in (-1, 36, 37, 3)] == [128, 200, 200, 134]
    assert [int(got[at[x], 0]) for x in (5, -7)] == [130, 128]
    m = np.array([struct.unpack("<f", struct.pack("<i", b))[0] for b in
                  (M_HALF, M_TWO, M_2P24, M_THIRD)], np.float32)
    ref = requantize_float32(xs[:, None] + np.zeros((1, 4), np.int64), m, 128, dtype="uint8",
                             bias=bias)
    assert (got[:, :4] == np.clip(ref, 128, 200)).all()


def test_large_accumulators_and_extreme_multipliers():
    # One channel per case, acc = bias (x = 0, K = 8 with X all zero), zp = 0, int8:
    #  ch0: acc = -2^31, M = 2^-24: fl32 exact, p = -128 -> -128
    #  ch1: acc = 2^31 - 1 -> fl32 = 2^31 (rounds up), M = 2^-24 -> 128 -> saturates to 127
    #  ch2: acc = 2^31 - 1, M = 2^127 (largest power of two): p = 2^158 -> +inf -> 127
    #  ch3: acc = -5, M = smallest subnormal 2^-149 (bits 1): p = -5·2^-149 -> 0
    x = np.zeros((1, 8), np.int8)
    w = np.zeros((4, 8), np.int8)
    bias = [-(1 << 31), (1 << 31) - 1, (1 << 31) - 1, -5]
    mults = [M_2P24, M_2P24, 0x7F000000, 1]
    desc = Descriptor(a_base=A, w_base=W, w_sm=8, c_base=OUT, p_base=P, C=4,
                      mode=Mode.FLOAT32, zp=0)
    arr, _ = run_cmd(desc, {A: x.tobytes(), W: w.tobytes(), P: fparams(bias, mults)})
    got = list(np.frombuffer(arr.read_mem(0, OUT, 4), np.int8))
    assert got == [-128, 127, 127, 0]
    # negative multiplier (sign bit): -0.5 = 0xBF000000, acc = 5 -> -2.5 -> -2; -0.0 -> 0
    desc = Descriptor(a_base=A, w_base=W, w_sm=8, c_base=OUT, p_base=P, C=2,
                      mode=Mode.FLOAT32, zp=1)
    arr, _ = run_cmd(desc, {A: x.tobytes(), W: w.tobytes(),
                            P: fparams([5, 5], [0xBF000000 - (1 << 32), -(1 << 31)])})
    assert list(np.frombuffer(arr.read_mem(0, OUT, 2), np.int8)) == [-1, 1]


@pytest.mark.parametrize("out_unsigned", [False, True])
def test_random_matmul_against_the_reference(out_unsigned):
    rng = np.random.default_rng(41 + out_unsigned)
    J, K, C = 24, 40, 4                  # K0 = 5
    a = rng.integers(-128, 128, (J, K)).astype(np.int8)
    w = rng.integers(-128, 128, (C, K)).astype(np.int8)
    bias = rng.integers(-3000, 3000, C)
    mult = float32_multiplier(np.float32(0.02), rng.uniform(0.001, 0.01, C).astype(np.float32),
                              np.float32(0.3))
    zp, qmin, qmax = (130, 0, 255) if out_unsigned else (-7, -128, 127)
    desc = Descriptor(a_base=A, a_s0=K, K0=K // 8, J0=J, w_base=W, w_sm=K, c_base=OUT,
                      c_s0=8, p_base=P, C=C, mode=Mode.FLOAT32,
                      flags=Flag.OUT_UNSIGNED if out_unsigned else 0, zp=zp, qmin=qmin,
                      qmax=qmax)
    prm = b"".join(ChannelParams.float32(int(b), m).pack() for b, m in zip(bias, mult))
    arr, _ = run_cmd(desc, {A: a.tobytes(), W: w.tobytes(), P: prm})
    got = np.frombuffer(arr.read_mem(0, OUT, 8 * J), np.uint8).reshape(J, 8)[:, :C]
    ref = requantize_float32(matmul(a, w.T.copy()), mult, zp,
                             dtype="uint8" if out_unsigned else "int8", bias=bias)
    assert (got.view(ref.dtype) == ref).all()
    assert len(np.unique(ref)) > 20                # the values are not all saturated


def test_against_onnxruntime_qlinearmatmul():
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper
    rng = np.random.default_rng(77)
    J, K, C = 16, 32, 4
    a = rng.integers(-128, 128, (J, K), dtype=np.int8)
    b = rng.integers(-128, 128, (K, C), dtype=np.int8)
    a_s, b_s, y_s, y_zp = np.float32(0.05), np.float32(0.01), np.float32(0.7), -4
    inits = [helper.make_tensor("as", TensorProto.FLOAT, [], [a_s]),
             helper.make_tensor("az", TensorProto.INT8, [], [0]),
             helper.make_tensor("bs", TensorProto.FLOAT, [], [b_s]),
             helper.make_tensor("bz", TensorProto.INT8, [], [0]),
             helper.make_tensor("ys", TensorProto.FLOAT, [], [y_s]),
             helper.make_tensor("yz", TensorProto.INT8, [], [y_zp])]
    node = helper.make_node("QLinearMatMul", ["A", "as", "az", "B", "bs", "bz", "ys", "yz"],
                            ["Y"])
    graph = helper.make_graph([node], "qmm",
                              [helper.make_tensor_value_info("A", TensorProto.INT8, [J, K]),
                               helper.make_tensor_value_info("B", TensorProto.INT8, [K, C])],
                              [helper.make_tensor_value_info("Y", TensorProto.INT8, [J, C])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, {"A": a, "B": b})
    mult = float32_multiplier(a_s, b_s, y_s)
    desc = Descriptor(a_base=A, a_s0=K, K0=K // 8, J0=J, w_base=W, w_sm=K, c_base=OUT,
                      c_s0=8, p_base=P, C=C, mode=Mode.FLOAT32, zp=y_zp)
    prm = b"".join(ChannelParams.float32(0, mult).pack() for _ in range(C))
    arr, _ = run_cmd(desc, {A: a.tobytes(), W: b.T.copy().tobytes(), P: prm})
    got = np.frombuffer(arr.read_mem(0, OUT, 8 * J), np.int8).reshape(J, 8)[:, :C]
    assert (got == ref).all()
    assert len(np.unique(ref)) > 20


# ------------------------------------------------------------------------------ faults
def test_fault_multiplier_infinity_or_nan_in_step_8_plus_2m():
    # C = 2, channel 1's multiplier is +inf (0x7F800000): step 8 + 2 = 10, addr p_base + 16;
    # a NaN (0x7FC00000) in channel 0: step 8, addr p_base; -inf (0xFF800000) in channel 0 too.
    # Check 3 (the data of the word read): visible from the step's cycle + 2 (§7 "Stop")
    for mults, step, addr in (([M_HALF, 0x7F800000], 10, P + 16),
                              ([0x7FC00000, M_HALF], 8, P),
                              ([0xFF800000 - (1 << 32), M_HALF], 8, P)):
        mem = dict(STD_MEM)
        mem[P] = fparams([0, 0], mults)
        arr, res = fault_case(good(C=2, mode=Mode.FLOAT32), mem)
        check_fault(res, arr, step, addr, data=True)


def test_multiplier_is_not_checked_in_other_modes_and_shift_not_in_float32():
    # TFLITE reads an int32 0x7F800000 as a multiplier (no check); FLOAT32 ignores shift 31
    mem = dict(STD_MEM)
    mem[P] = ChannelParams(0, 0x7F800000, 0).pack() + ChannelParams(0, M_HALF, 31).pack()
    _, res = fault_case(good(C=1, mode=Mode.TFLITE), mem)
    assert res.status == "halted", fault(res)
    mem[P] = ChannelParams(0, M_HALF, 31).pack()
    _, res = fault_case(good(C=1, mode=Mode.FLOAT32), mem)
    assert res.status == "halted", fault(res)


@pytest.mark.parametrize("change", [
    dict(mode=3), dict(qmin=5, qmax=4), dict(zp=128), dict(qmax=200),
    dict(flags=Flag.OUT_UNSIGNED, qmin=-1, qmax=10, zp=0),
])
def test_fault_float32_descriptor_fields(change):
    from helpers.model_engine import D0
    arr, res = fault_case(good(**{"mode": Mode.FLOAT32, "zp": 0, **change}), dict(STD_MEM))
    check_fault(res, arr, 7, D0, data=True)     # check 2: visible from step 7's cycle + 2


def test_fault_float32_write_crossing_a_word():
    # C = 2 bytes at OUT + 7 cross the 8-byte word: check 4 in the write step of element 0:
    # s_0 + WRITE_DELAY with s_0 = 8 + 4 + 2 = 14 (the stream step of X(0, 0)) -> step
    # 14 + 10 = 24, after the last stream step 15 (J = 2 < WRITE_DELAY)
    mem = dict(STD_MEM)
    mem[P] = fparams([0, 0], [M_HALF, M_HALF])
    arr, res = fault_case(good(C=2, mode=Mode.FLOAT32, c_base=OUT + 7), mem)
    check_fault(res, arr, 24, OUT + 7)


def test_channel_params_float32_refuses_inexact_values():
    with pytest.raises(ValueError, match="not a float32"):
        ChannelParams.float32(0, 0.1)
    with pytest.raises(ValueError, match="not finite"):
        ChannelParams.float32(0, float("inf"))
    with pytest.raises(ValueError, match="float32 range"):
        ChannelParams.float32(0, 1e39)
    # fl32(0.1) = 13421773 · 2^-27: exponent 123 (0x3D800000), fraction 0x4CCCCD
    assert ChannelParams.float32(0, np.float32(0.1)).multiplier == 0x3DCCCCCD
