"""Pooling kernels vs loops over windows and hand-computed rounding ties."""

import numpy as np
import pytest

from tessera.golden_model.kernels import avgpool2d, global_avgpool, maxpool2d


def loop_pool(x, k, stride, pads, out_hw, op):
    n_, h, w, c = x.shape
    (pt, _), (pl, _) = pads
    out = np.zeros((n_, out_hw[0], out_hw[1], c), dtype=np.int64)
    for n in range(n_):
        for oy in range(out_hw[0]):
            for ox in range(out_hw[1]):
                for ch in range(c):
                    vals = [int(x[n, y, xx, ch])
                            for y in range(oy * stride[0] - pt, oy * stride[0] - pt + k[0])
                            for xx in range(ox * stride[1] - pl, ox * stride[1] - pl + k[1])
                            if 0 <= y < h and 0 <= xx < w]
                    out[n, oy, ox, ch] = op(vals)
    return out


def avg_half_away(vals):
    # float64 formulation: exact here (ties k + 1/2 are representable)
    m = sum(vals) / len(vals)
    return int(np.sign(m) * np.floor(abs(m) + 0.5))


@pytest.mark.parametrize("shape, k, stride, padding, pads, out_hw", [
    ((2, 6, 6, 3), (2, 2), (2, 2), "valid", ((0, 0), (0, 0)), (3, 3)),
    ((1, 5, 5, 2), (2, 2), (2, 2), "same", ((0, 1), (0, 1)), (3, 3)),
    ((1, 5, 7, 2), (3, 3), (1, 2), "same", ((1, 1), (1, 1)), (5, 4)),
    ((1, 4, 4, 1), (3, 2), (1, 1), ((1, 0), (1, 1)), ((1, 0), (1, 1)), (3, 5)),
])
def test_pools_vs_loops(shape, k, stride, padding, pads, out_hw):
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    mx = maxpool2d(x, k, stride=stride, padding=padding)
    av = avgpool2d(x, k, stride=stride, padding=padding)
    assert mx.dtype == av.dtype == np.int8
    np.testing.assert_array_equal(mx, loop_pool(x, k, stride, pads, out_hw, max))
    np.testing.assert_array_equal(av, loop_pool(x, k, stride, pads, out_hw, avg_half_away))


def test_avgpool_ties_round_away_from_zero():
    # four 2x2 windows side by side in a [1, 2, 8, 1] image
    windows = [[1, 2, -1, -2], [1, 2, 3, 4], [-1, -2, -3, -4], [0, 1, 0, -1]]
    x = np.zeros((1, 2, 8, 1), dtype=np.int8)
    for i, (a, b, c, d) in enumerate(windows):
        x[0, 0, 2 * i:2 * i + 2, 0] = (a, b)
        x[0, 1, 2 * i:2 * i + 2, 0] = (c, d)
    out = avgpool2d(x, 2)[0, 0, :, 0]
    # 0/4 = 0; 10/4 = 2.5 -> 3; -10/4 = -2.5 -> -3; 0/4 = 0
    assert out.tolist() == [0, 3, -3, 0]
    # pairs: 1.5 -> 2, -1.5 -> -2, 0.5 -> 1, -0.5 -> -1
    y = np.array([1, 2, -1, -2, 0, 1, 0, -1], dtype=np.int8).reshape(1, 1, 8, 1)
    assert avgpool2d(y, (1, 2))[0, 0, :, 0].tolist() == [2, -2, 1, -1]


def test_avgpool_same_counts_only_real_taps():
    x = np.full((1, 3, 3, 1), 100, dtype=np.int8)
    # 2x2 stride 2 'same' on 3x3: windows at the bottom/right edge hold 2 or 1 real taps.
    # Averages stay 100 only if padding taps are not counted (counted zeros would give 50, 25).
    out = avgpool2d(x, 2, padding="same")
    assert out.shape == (1, 2, 2, 1) and (out == 100).all()


def test_maxpool_padding_never_wins():
    x = np.full((1, 3, 3, 1), -128, dtype=np.int8)
    assert (maxpool2d(x, 3, stride=1, padding="same") == -128).all()
    x[0, 1, 1, 0] = -100
    assert (maxpool2d(x, 3, stride=1, padding="same") == -100).all()


def test_global_avgpool():
    rng = np.random.default_rng(10)
    x = rng.integers(-128, 128, (3, 4, 5, 6), dtype=np.int8)
    got = global_avgpool(x)
    assert got.shape == (3, 6) and got.dtype == np.int8
    ref = [[avg_half_away(x[n, :, :, c].ravel().tolist()) for c in range(6)] for n in range(3)]
    assert got.tolist() == ref
    assert global_avgpool(x, keepdims=True).shape == (3, 1, 1, 6)
    # hand tie: mean of [-1, -2] over a 1x2 image is -1.5 -> -2
    assert global_avgpool(np.array([[[[-1], [-2]]]], dtype=np.int8)).tolist() == [[-2]]


def test_pool_bad_input():
    with pytest.raises(TypeError, match="maxpool2d: x must be a int8"):
        maxpool2d(np.zeros((1, 2, 2, 1), np.int32), 2)
    with pytest.raises(ValueError, match="avgpool2d: kernel size 3 exceeds"):
        avgpool2d(np.zeros((1, 2, 2, 1), np.int8), 3)
    with pytest.raises(ValueError, match="global_avgpool: x must have 4 dimensions"):
        global_avgpool(np.zeros((2, 2), np.int8))
