"""Requantization vs a literal Python transcription of the gemmlowp/TFLite C code and hand cases.

The reference functions below emulate C semantics with Python ints: ``/`` truncates toward zero,
``>>`` is arithmetic, and they are written from the C source, not from the kernel's formulas.
"""

import math

import numpy as np
import pytest

from tessera.golden_model.kernels import (
    multiply_by_quantized_multiplier, quantize_multiplier, requantize,
    rounding_divide_by_pot, saturating_rounding_doubling_high_mul,
)

I32_MIN, I32_MAX = -2**31, 2**31 - 1


def c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def c_int32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def ref_srdhm(a, b):
    overflow = a == b == I32_MIN
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else (1 - (1 << 30))
    high = c_div(ab + nudge, 1 << 31)
    return I32_MAX if overflow else high


def ref_rdbpot(x, exponent):
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def ref_mbqm(x, m, shift):
    left = shift if shift > 0 else 0
    right = 0 if shift > 0 else -shift
    return ref_rdbpot(ref_srdhm(c_int32(x * (1 << left)), m), right)


def ref_quantize_multiplier(d):
    if d == 0.0:
        return 0, 0
    q, shift = math.frexp(d)
    t = q * (1 << 31)
    q_fixed = int(math.floor(t + 0.5)) if t >= 0 else int(math.ceil(t - 0.5))  # std::round
    assert q_fixed <= 1 << 31
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q_fixed, shift


# ---------------------------------------------------------------- SRDHM / RDBPOT hand cases
@pytest.mark.parametrize("a, expected", [
    (3, 2), (-3, -1),      # ±1.5: ties toward +inf (NOT away from zero for negatives)
    (5, 3), (-5, -2),      # ±2.5
    (1, 1), (-1, 0),       # ±0.5
    (4, 2), (-4, -2), (7, 4), (-7, -3),
])
def test_srdhm_ties_toward_plus_infinity(a, expected):
    # b = 2^30 means a * b / 2^31 = a / 2 exactly.
    assert saturating_rounding_doubling_high_mul(a, 1 << 30) == expected
    assert ref_srdhm(a, 1 << 30) == expected


def test_srdhm_saturation_and_extremes():
    assert saturating_rounding_doubling_high_mul(I32_MIN, I32_MIN) == I32_MAX
    assert saturating_rounding_doubling_high_mul(I32_MIN, I32_MAX) == -I32_MAX
    assert saturating_rounding_doubling_high_mul(I32_MAX, I32_MAX) == I32_MAX - 1
    assert saturating_rounding_doubling_high_mul(0, I32_MIN) == 0


@pytest.mark.parametrize("x, e, expected", [
    (5, 1, 3), (-5, 1, -3), (3, 1, 2), (-3, 1, -2),          # ±2.5, ±1.5: away from zero
    (6, 2, 2), (-6, 2, -2), (7, 2, 2), (-7, 2, -2),          # ±1.5, ±1.75
    (2, 2, 1), (-2, 2, -1), (1, 2, 0), (-1, 2, 0),           # ±0.5, ±0.25
    (123, 0, 123), (-123, 0, -123),
    (I32_MAX, 31, 1), (I32_MIN, 31, -1), (1 << 30, 31, 1), (-(1 << 30), 31, -1),
])
def test_rdbpot_ties_away_from_zero(x, e, expected):
    assert rounding_divide_by_pot(x, e) == expected
    assert ref_rdbpot(x, e) == expected


def test_srdhm_rdbpot_random_vs_c_transcription():
    rng = np.random.default_rng(3)
    a = np.concatenate([rng.integers(I32_MIN, I32_MAX, 3000, endpoint=True),
                        rng.integers(-70000, 70000, 2000), [I32_MIN, I32_MAX, 0, -1, 1]])
    b = np.concatenate([rng.integers(I32_MIN, I32_MAX, 3000, endpoint=True),
                        rng.integers(1 << 30, 1 << 31, 2000), [I32_MIN, I32_MIN, 5, 7, -9]])
    e = rng.integers(0, 32, a.size)
    got = saturating_rounding_doubling_high_mul(a, b)
    assert got.dtype == np.int32
    assert got.tolist() == [ref_srdhm(int(x), int(y)) for x, y in zip(a, b)]
    got = rounding_divide_by_pot(a, e)
    assert got.tolist() == [ref_rdbpot(int(x), int(y)) for x, y in zip(a, e)]


def test_mbqm_random_vs_c_transcription():
    rng = np.random.default_rng(4)
    x = rng.integers(-2**20, 2**20, 3000)
    m = rng.integers(1 << 30, 1 << 31, 3000)
    s = rng.integers(-31, 9, 3000)
    got = multiply_by_quantized_multiplier(x, m, s)
    assert got.tolist() == [ref_mbqm(int(a), int(b), int(c)) for a, b, c in zip(x, m, s)]


def test_mbqm_double_rounding_hand_case():
    # real multiplier 0.25 = 2^30 * 2^(-1-31). 5 * 0.25 = 1.25, but TFLite rounds twice:
    # SRDHM(5, 2^30) = round(2.5) = 3, then RDBPOT(3, 1) = round(1.5) = 2.
    assert multiply_by_quantized_multiplier(5, 1 << 30, -1) == 2
    assert multiply_by_quantized_multiplier(-5, 1 << 30, -1) == -1     # -2.5 -> -2, -1.0 -> -1
    assert multiply_by_quantized_multiplier(6, 1 << 30, -1) == 2       # 3 -> 1.5 -> 2
    assert multiply_by_quantized_multiplier(-6, 1 << 30, -1) == -2     # -3 -> -1.5 -> -2
    # Left shift: multiplier 2.0 = 2^30 * 2^(2-31): 7 * 2 = 14 exactly.
    assert multiply_by_quantized_multiplier(7, 1 << 30, 2) == 14


# ---------------------------------------------------------------- QuantizeMultiplier
@pytest.mark.parametrize("real, expected", [
    (0.0, (0, 0)), (0.5, (1 << 30, 0)), (1.0, (1 << 30, 1)), (0.25, (1 << 30, -1)),
    (0.75, (3 << 29, 0)), (2.0, (1 << 30, 2)),
    (2.0**-32, (1 << 30, -31)),           # smallest representable shift
    (2.0**-33, (0, 0)),                   # shift < -31 collapses to zero
    (1 - 2.0**-40, (1 << 30, 1)),         # mantissa rounds up to 2^31: renormalised
    (0.1, (1717986918, -3)),              # 0.8 * 2^31 = 1717986918.4 -> 1717986918
])
def test_quantize_multiplier_hand_cases(real, expected):
    assert quantize_multiplier(real) == expected
    assert ref_quantize_multiplier(real) == expected


def test_quantize_multiplier_per_channel_and_accuracy():
    rng = np.random.default_rng(5)
    reals = np.exp(rng.uniform(np.log(1e-6), np.log(100.0), 500))
    m, s = quantize_multiplier(reals)
    assert m.dtype == np.int32 and s.dtype == np.int32 and m.shape == reals.shape
    assert ((m >= 1 << 30) & (m < 2**31)).all()
    approx = m.astype(np.float64) * np.exp2(s.astype(np.float64) - 31)
    assert np.all(np.abs(approx - reals) <= reals * 2.0**-30)
    assert [(int(a), int(b)) for a, b in zip(m, s)] == [ref_quantize_multiplier(float(r)) for r in reals]


@pytest.mark.parametrize("bad, exc", [(-0.5, ValueError), (float("nan"), ValueError),
                                      (float("inf"), ValueError), (2.0**31, ValueError),
                                      ("0.5", TypeError)])
def test_quantize_multiplier_rejects(bad, exc):
    with pytest.raises(exc, match="real_multiplier"):
        quantize_multiplier(bad)


# ---------------------------------------------------------------- requantize
def test_requantize_hand_cases_per_tensor():
    acc = np.array([3, -3, 5, -5, 0, 1000, -1000], dtype=np.int32)
    # real 0.5: SRDHM ties toward +inf -> [2, -1, 3, -2, 0, 500 -> 127, -500 -> -128]
    out = requantize(acc, 1 << 30, 0, 0)
    assert out.dtype == np.int8
    assert out.tolist() == [2, -1, 3, -2, 0, 127, -128]
    # zero point 10 shifts and saturates: [12, 9, 13, 8, 10, 127, -128]
    assert requantize(acc, 1 << 30, 0, 10).tolist() == [12, 9, 13, 8, 10, 127, -128]
    # ReLU clamps at the zero point, not at 0 (500 - 5 still saturates at 127)
    assert requantize(acc, 1 << 30, 0, -5, relu=True).tolist() == [-3, -5, -2, -5, -5, 127, -5]


def test_requantize_saturation_edges():
    acc = np.array([254, 255, 256, 257, -256, -257, -258, -259], dtype=np.int32)
    # real 0.5 -> [127, 128, 128, 129, -128, -128(-128.5->-128), -129, -129(-129.5->-129)]
    assert requantize(acc, 1 << 30, 0, 0).tolist() == [127, 127, 127, 127, -128, -128, -128, -128]
    assert requantize(acc, 1 << 30, 0, -1).tolist() == [126, 127, 127, 127, -128, -128, -128, -128]


def test_requantize_bias_wraps_int32():
    acc = np.array([I32_MAX, 10], dtype=np.int32)
    # I32_MAX + 1 wraps to I32_MIN; times 0.5 -> -2^30 -> clamps at -128
    out = requantize(acc, 1 << 30, 0, 0, bias=1)
    assert out.tolist() == [-128, 6]  # (10 + 1) * 0.5 = 5.5 -> 6


def test_requantize_per_channel_equals_per_tensor_slices():
    rng = np.random.default_rng(6)
    acc = rng.integers(-50000, 50000, (5, 4, 6)).astype(np.int32)
    reals = rng.uniform(1e-4, 1e-2, 6)
    m, s = quantize_multiplier(reals)
    bias = rng.integers(-3000, 3000, 6).astype(np.int32)
    out = requantize(acc, m, s, 3, bias=bias, relu=True)
    for c in range(6):
        ref = requantize(acc[..., c], int(m[c]), int(s[c]), 3, bias=int(bias[c]), relu=True)
        np.testing.assert_array_equal(out[..., c], ref)
    # channel axis 0
    m0, s0 = quantize_multiplier(reals[:5])
    out0 = requantize(acc, m0, s0, -7, axis=0)
    for c in range(5):
        np.testing.assert_array_equal(out0[c], requantize(acc[c], int(m0[c]), int(s0[c]), -7))


def test_requantize_random_vs_c_transcription():
    rng = np.random.default_rng(7)
    acc = rng.integers(-2**24, 2**24, (40, 8)).astype(np.int32)
    m, s = quantize_multiplier(rng.uniform(1e-7, 3.0, 8))
    bias = rng.integers(-2**20, 2**20, 8).astype(np.int32)
    zp = -17
    got = requantize(acc, m, s, zp, bias=bias)
    for (i, c), v in np.ndenumerate(acc):
        y = ref_mbqm(c_int32(int(v) + int(bias[c])), int(m[c]), int(s[c])) + zp
        assert got[i, c] == max(-128, min(127, y)), (i, c)


@pytest.mark.parametrize("kwargs, exc, text", [
    (dict(acc=np.zeros(3, np.int64)), TypeError, "acc must be a int32"),
    (dict(multiplier=np.ones(2, np.int32)), ValueError, "multiplier must be a scalar or have shape"),
    (dict(shift=-40), ValueError, "shift must be in"),
    (dict(out_zero_point=128), ValueError, "out_zero_point"),
    (dict(bias=np.ones(4, np.int32)), ValueError, "bias"),
    (dict(axis=3), ValueError, "axis"),
])
def test_requantize_bad_input(kwargs, exc, text):
    args = dict(acc=np.zeros(3, np.int32), multiplier=1 << 30, shift=0, out_zero_point=0)
    args.update(kwargs)
    acc = args.pop("acc")
    with pytest.raises(exc, match=text):
        requantize(acc, args.pop("multiplier"), args.pop("shift"), args.pop("out_zero_point"), **args)
