"""tessera.golden_model.kernels.matmul against float64 (exact for these ranges) and hand-computed sums."""

import numpy as np
import pytest

from tessera.golden_model.kernels import matmul


def wrap32(v: int) -> int:
    """Two's-complement wrap of a Python int to 32 bits (independent of the kernel's helper)."""
    return (v + 2**31) % 2**32 - 2**31


def test_random_matches_float64():
    rng = np.random.default_rng(1)
    for m, k, n in [(1, 1, 1), (3, 7, 5), (16, 64, 32), (2, 257, 3)]:
        a = rng.integers(-128, 128, (m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        got = matmul(a, b)
        assert got.dtype == np.int32 and got.shape == (m, n)
        ref = a.astype(np.float64) @ b.astype(np.float64)   # |sum| <= 2^14 * 257: exact
        np.testing.assert_array_equal(got, ref.astype(np.int64))


def test_products_are_widened():
    # -128 * -128 = 16384 overflows int8 and, summed 4 times (65536), int16 too.
    a = np.full((1, 4), -128, dtype=np.int8)
    b = np.full((4, 1), -128, dtype=np.int8)
    assert matmul(a, b)[0, 0] == 65536
    # Mixed extremes: -128 * 127 = -16256 per term.
    assert matmul(a, np.full((4, 1), 127, dtype=np.int8))[0, 0] == -65024


def test_int32_wraps_like_hardware_adds():
    k = 131073                       # 16384 * 131073 = 2^31 + 16384 does not fit int32
    a = np.full((1, k), -128, dtype=np.int8)
    b = np.full((k, 1), -128, dtype=np.int8)
    assert matmul(a, b)[0, 0] == -2**31 + 16384
    assert wrap32(16384 * k) == -2**31 + 16384


def test_zero_points():
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, (4, 9), dtype=np.int8)
    b = rng.integers(-128, 128, (9, 6), dtype=np.int8)
    got = matmul(a, b, a_zero_point=-128, b_zero_point=7)
    ref = (a.astype(np.float64) + 128) @ (b.astype(np.float64) - 7)
    np.testing.assert_array_equal(got, ref.astype(np.int64))


def test_hand_example():
    a = np.array([[1, -2, 3]], dtype=np.int8)
    b = np.array([[4, 0], [5, -1], [-6, 2]], dtype=np.int8)
    # [1*4 - 2*5 - 3*6, 0 + 2 + 6]
    np.testing.assert_array_equal(matmul(a, b), [[-24, 8]])


@pytest.mark.parametrize("a, b, exc, text", [
    (np.zeros((2, 3), np.int16), np.zeros((3, 2), np.int8), TypeError, "a must be a int8"),
    (np.zeros((2, 3), np.int8), np.zeros((4, 2), np.int8), ValueError, "inner dimensions"),
    (np.zeros((3,), np.int8), np.zeros((3, 2), np.int8), ValueError, "2 dimensions"),
])
def test_bad_input(a, b, exc, text):
    with pytest.raises(exc, match=text):
        matmul(a, b)


def test_bad_zero_point():
    z = np.zeros((1, 1), np.int8)
    with pytest.raises(ValueError, match="a_zero_point"):
        matmul(z, z, a_zero_point=200)
