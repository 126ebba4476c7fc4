"""conv2d / im2col vs explicit loops that skip out-of-image taps (TFLite reference style)."""

import numpy as np
import pytest

from tessera.golden_model.kernels import conv2d, im2col, matmul


def loop_conv(x, w, stride, pads, out_hw, izp, wzp, depthwise=False):
    """Direct convolution: taps outside the image are skipped (contribute 0)."""
    n_, h, wd, c = x.shape
    kh, kw, _, co = w.shape
    (pt, _), (pl, _) = pads
    oc = c * co if depthwise else co
    out = np.zeros((n_, out_hw[0], out_hw[1], oc), dtype=np.int64)
    for n in range(n_):
        for oy in range(out_hw[0]):
            for ox in range(out_hw[1]):
                for o in range(oc):
                    s = 0
                    for i in range(kh):
                        for j in range(kw):
                            y, xx = oy * stride[0] + i - pt, ox * stride[1] + j - pl
                            if not (0 <= y < h and 0 <= xx < wd):
                                continue
                            if depthwise:
                                ci, m = divmod(o, co)
                                s += (int(x[n, y, xx, ci]) - izp) * (int(w[i, j, ci, m]) - wzp)
                            else:
                                for ci in range(c):
                                    s += (int(x[n, y, xx, ci]) - izp) * (int(w[i, j, ci, o]) - wzp)
                    out[n, oy, ox, o] = s
    return out


CASES = [
    # (H, W, KH, KW, stride, padding, expected pads, expected out_hw)  -- geometry by hand
    (5, 5, 3, 3, (1, 1), "valid", ((0, 0), (0, 0)), (3, 3)),
    (5, 5, 3, 3, (1, 1), "same", ((1, 1), (1, 1)), (5, 5)),
    (6, 5, 3, 3, (2, 2), "same", ((0, 1), (1, 1)), (3, 3)),   # H: out 3, total 1 -> (0, 1)
    (7, 4, 2, 3, (2, 1), "same", ((0, 1), (1, 1)), (4, 4)),
    (5, 6, 3, 2, (1, 2), ((2, 0), (1, 1)), ((2, 0), (1, 1)), (5, 4)),
    (4, 4, 3, 3, (1, 1), 1, ((1, 1), (1, 1)), (4, 4)),
]


@pytest.mark.parametrize("h, w_, kh, kw, stride, padding, pads, out_hw", CASES)
@pytest.mark.parametrize("depthwise", [False, True])
def test_conv2d_vs_loops(h, w_, kh, kw, stride, padding, pads, out_hw, depthwise):
    rng = np.random.default_rng(h * 100 + w_ * 10 + kh + depthwise)
    c, co = 3, (2 if depthwise else 4)
    x = rng.integers(-128, 128, (2, h, w_, c), dtype=np.int8)
    w = rng.integers(-128, 128, (kh, kw, c, co), dtype=np.int8)
    izp, wzp = -37, (0 if depthwise else 5)
    got = conv2d(x, w, stride=stride, padding=padding, input_zero_point=izp,
                 weight_zero_point=wzp, depthwise=depthwise)
    assert got.dtype == np.int32
    ref = loop_conv(x, w, stride, pads, out_hw, izp, wzp, depthwise)
    np.testing.assert_array_equal(got, ref)


def test_padding_is_the_zero_point_not_zero():
    # An input equal to its zero point everywhere is real 0: the output must be 0 everywhere,
    # including the border, which only holds if padding taps are filled with the zero point.
    x = np.full((1, 4, 4, 2), -128, dtype=np.int8)
    w = np.full((3, 3, 2, 3), 127, dtype=np.int8)
    out = conv2d(x, w, padding="same", input_zero_point=-128)
    assert out.shape == (1, 4, 4, 3) and not out.any()
    # The same input with zero point 0: the corner sees 4 real taps, the centre 9.
    out0 = conv2d(x, w, padding="same", input_zero_point=0)
    assert out0[0, 0, 0, 0] == 4 * 2 * (-128 * 127)
    assert out0[0, 1, 1, 0] == 9 * 2 * (-128 * 127)


def test_1x1_conv_is_matmul():
    rng = np.random.default_rng(8)
    x = rng.integers(-128, 128, (2, 3, 5, 16), dtype=np.int8)
    w = rng.integers(-128, 128, (1, 1, 16, 7), dtype=np.int8)
    got = conv2d(x, w)
    ref = matmul(x.reshape(-1, 16), w.reshape(16, 7)).reshape(2, 3, 5, 7)
    np.testing.assert_array_equal(got, ref)


def test_im2col_layout_matches_weight_reshape():
    rng = np.random.default_rng(9)
    x = rng.integers(-128, 128, (1, 5, 4, 3), dtype=np.int8)
    w = rng.integers(-128, 128, (3, 2, 3, 6), dtype=np.int8)
    cols = im2col(x, (3, 2), stride=(2, 1), padding="same", pad_value=9)
    assert cols.dtype == np.int8 and cols.shape == (1, 3, 4, 18)
    # patch (oy=0, ox=0) with 'same' pads ((1,1),(0,1)): first kernel row is padding = 9
    assert (cols[0, 0, 0, :6] == 9).all()
    np.testing.assert_array_equal(cols[0, 0, 0, 6:9], x[0, 0, 0])
    got = matmul(cols.reshape(-1, 18), w.reshape(18, 6), a_zero_point=9).reshape(1, 3, 4, 6)
    np.testing.assert_array_equal(got, conv2d(x, w, stride=(2, 1), padding="same", input_zero_point=9))


@pytest.mark.parametrize("kwargs, exc, text", [
    (dict(x=np.zeros((1, 4, 4, 2), np.uint8)), TypeError, "x must be a int8"),
    (dict(w=np.zeros((3, 3, 5, 1), np.int8)), ValueError, "input channels"),
    (dict(w=np.zeros((6, 6, 2, 1), np.int8)), ValueError, "exceeds the padded input"),
    (dict(padding="full"), ValueError, "padding must be"),
    (dict(stride=0), ValueError, "stride"),
    (dict(input_zero_point=-129), ValueError, "input_zero_point"),
    (dict(padding=((3, 0), (0, 0))), ValueError, "smaller than the kernel"),
])
def test_bad_input(kwargs, exc, text):
    args = dict(x=np.zeros((1, 4, 4, 2), np.int8), w=np.zeros((3, 3, 2, 1), np.int8))
    args.update(kwargs)
    with pytest.raises(exc, match=text):
        conv2d(args.pop("x"), args.pop("w"), **args)
