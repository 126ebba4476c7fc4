"""The requantize codelet's arithmetic (tessera/toolchain/codelets/requantize.c) compiled for the host
and checked against the golden model over the full int32 range, every shift and the saturating
multiplier, plus end-to-end runs of ``tsr_requant`` on the golden-model array with edge values.

The codelet replaces the 64-bit SRDHM/RDBPOT formulation with 32-bit mul/mulh code (see the
comment at the top of the C file), so this checks the intermediate scaled value ``y`` (before
the int8 clamp hides most of it), not only the int8 output. Expected values come from
``tessera.golden_model.kernels.requantize`` (an independent numpy int64 formulation) or by hand."""

import ctypes
import subprocess
import sys

import numpy as np
import pytest

from tessera.golden_model import kernels as ref
from tessera.golden_model.kernels.requantize import MAX_SHIFT, MIN_SHIFT
from tessera.toolchain import TOOLCHAIN_DIR
from tessera.toolchain.graph import control

CODELETS = TOOLCHAIN_DIR / "codelets"
I32 = np.iinfo(np.int32)

# Appended to the codelet's text (pasted, not #included: the compiler cache of the ziglang
# wheel keys on the main file's content, so an edit of requantize.c always rebuilds).
_HARNESS = r"""
/* y = MultiplyByQuantizedMultiplier(x, m, s) through the codelet's per-channel dispatch. */
void host_y(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *y, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (m[i] == INT32_MIN) {
            uint32_t left = s[i] > 0 ? (uint32_t)s[i] : 0u, right = s[i] < 0 ? (uint32_t)-s[i] : 0u;
            y[i] = rdbpot(srdhm((int32_t)((uint32_t)x[i] << left), m[i]), right);
        } else if (s[i] < 0) {
            uint32_t e = (uint32_t)-s[i];
            y[i] = rq_right(x[i], m[i], 1u + (1u << e), e - 1u);
        } else {
            y[i] = rq_left((int32_t)((uint32_t)x[i] << (uint32_t)s[i]), m[i]);
        }
    }
}
/* The whole vertex: every part of an nparts split, as the contexts would run it. */
void host_requant(const int32_t *acc, int8_t *out, uint32_t n, const int32_t *params,
                  uint32_t channels, uint32_t c0, int32_t zp, uint32_t relu, uint32_t nparts)
{
    tsr_requant_fields f = {acc, n, out, n, params, 3 * channels, channels, c0, zp, relu};
    for (uint32_t p = 0; p < nparts; p++)
        tsr_requant(&f, p, nparts);
}
"""


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory):
    d = tmp_path_factory.mktemp("rq_host")
    (d / "harness.c").write_text((CODELETS / "requantize.c").read_text() + _HARNESS)
    so = d / "rq.so"
    cmd = [sys.executable, "-m", "ziglang", "cc", "-shared", "-fPIC", "-O2", "-I", str(CODELETS),
           "-I", str(control.include_dir()), "-o", str(so), str(d / "harness.c")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lib = ctypes.CDLL(str(so))
    p32 = np.ctypeslib.ndpointer(np.int32, flags="C_CONTIGUOUS")
    p8 = np.ctypeslib.ndpointer(np.int8, flags="C_CONTIGUOUS")
    u32 = ctypes.c_uint32
    lib.host_y.argtypes = [p32, p32, p32, p32, u32]
    lib.host_y.restype = None
    lib.host_requant.argtypes = [p32, p8, u32, p32, u32, u32, ctypes.c_int32, u32, u32]
    lib.host_requant.restype = None
    return lib


def _y(lib, x, m, s):
    x, m, s = (np.ascontiguousarray(np.broadcast_to(v, np.broadcast_shapes(
        np.shape(x), np.shape(m), np.shape(s))), dtype=np.int32).ravel() for v in (x, m, s))
    y = np.empty_like(x)
    lib.host_y(x, m, s, y, x.size)
    return x, m, s, y


EDGE_X = np.array([I32.min, I32.min + 1, -2**30 - 1, -2**30, -2**30 + 1, -65537, -65536, -3, -2,
                   -1, 0, 1, 2, 3, 65535, 65536, 2**30 - 1, 2**30, 2**30 + 1, I32.max - 1,
                   I32.max], dtype=np.int64)
EDGE_M = np.array([I32.min, I32.min + 1, -2**30, -1, 0, 1, 2, 3, 2**30 - 1, 2**30, 2**30 + 1,
                   1518500250, I32.max - 1, I32.max], dtype=np.int64)


def test_scaled_value_edge_grid_every_shift(host_lib):
    shifts = np.arange(MIN_SHIFT, MAX_SHIFT + 1)
    x, m, s = np.meshgrid(EDGE_X, EDGE_M, shifts, indexing="ij")
    x, m, s, y = _y(host_lib, x, m, s)
    np.testing.assert_array_equal(y, ref.multiply_by_quantized_multiplier(x, m, s))
    # the saturating case is in the grid: SRDHM(INT32_MIN, INT32_MIN) = INT32_MAX
    sat = (x == I32.min) & (m == I32.min) & (s == 0)
    assert sat.sum() == 1 and y[sat][0] == I32.max


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scaled_value_random_full_range(host_lib, seed):
    rng = np.random.default_rng(seed)
    n = 400_000
    x = rng.integers(I32.min, I32.max, n, endpoint=True)
    # small |x| too, where the rounding ties of both steps are frequent
    x[: n // 4] = rng.integers(-300, 300, n // 4)
    m = rng.integers(I32.min, I32.max, n, endpoint=True)
    m[: n // 2] = rng.integers(2**30, 2**31, n // 2)           # what quantize_multiplier makes
    m[: n // 8] = 2**30                                        # 0.5: ties at odd x
    s = rng.integers(MIN_SHIFT, MAX_SHIFT + 1, n)
    x, m, s, y = _y(host_lib, x, m, s)
    np.testing.assert_array_equal(y, ref.multiply_by_quantized_multiplier(x, m, s))


def test_scaled_value_ties_by_hand(host_lib):
    # m = 2^30 is 0.5: SRDHM(x) = round(x / 2), ties toward +inf; shift -1 then rounds
    # half away from zero (same values as tests/test_kernel_lib.py, computed by hand there)
    _, _, _, y = _y(host_lib, np.array([1, 3, -1, -3, 5, -5, 6, -6]), 2**30, -1)
    np.testing.assert_array_equal(y, [1, 1, 0, -1, 2, -1, 2, -2])
    # shift 0: only SRDHM: 1/2 -> 1, -1/2 -> 0, -3/2 -> -1
    _, _, _, y = _y(host_lib, np.array([1, -1, -3, 4]), 2**30, 0)
    np.testing.assert_array_equal(y, [1, 0, -1, 2])
    # largest right shift: (2^31 - 1) * (2^31 - 1) / 2^31 / 2^31 = 0.99999... -> 1, -> -1
    _, _, _, y = _y(host_lib, np.array([I32.max, -I32.max, I32.min]), I32.max, -31)
    np.testing.assert_array_equal(y, [1, -1, -1])


def _acc_in_window(rng, n, m, s, b, ch):
    """int32 accumulators whose scaled value y lands in about -130..130 (so the int8 clamp does
    not hide the rounding), half of them at or next to a rounding tie."""
    r = m[ch].astype(np.float64) * 2.0 ** s[ch] / 2.0**31      # real scale of element i
    t = rng.integers(-260, 261, n) / 2.0                       # k or k + 0.5
    x = np.round(t / r) + rng.integers(-2, 3, n) * (rng.random(n) < 0.5)
    x = np.clip(x, I32.min, I32.max).astype(np.int64)
    return ((x - b[ch] + 2**31) % 2**32 - 2**31).astype(np.int32)


@pytest.mark.parametrize("channels,c0,nparts", [(1, 0, 6), (5, 3, 6), (32, 0, 6), (7, 6, 4),
                                                (3, 1, 1), (10, 9, 13)])
def test_vertex_on_host_matches_reference(host_lib, channels, c0, nparts):
    rng = np.random.default_rng(channels * 100 + c0)
    n = 997
    m = rng.integers(2**30, 2**31, channels)
    m[0] = I32.min                                              # the generic (saturating) loop
    s = rng.integers(-20, 4, channels)
    s[-1] = 0
    s[0] = 0 if channels % 2 else -3                            # saturates at shift >= 0 only
    b = rng.integers(-5000, 5000, channels)
    ch = (c0 + np.arange(n)) % channels                         # element i's channel
    acc = _acc_in_window(rng, n, m, s, b, ch)
    acc[::7] = rng.integers(I32.min, I32.max, acc[::7].size, endpoint=True)
    first0 = int(np.flatnonzero(ch == 0)[0])                     # x = INT32_MIN in channel 0
    acc[first0] = (I32.min - int(b[0]) + 2**31) % 2**32 - 2**31
    params = np.ascontiguousarray(np.stack([b, m, s], axis=1), dtype=np.int32)
    x = ((acc.astype(np.int64) + b[ch] + 2**31) % 2**32 - 2**31)
    y = ref.multiply_by_quantized_multiplier(x, m[ch], s[ch]).astype(np.int64)
    assert (np.abs(y) <= 127).mean() > 0.7                      # the window is hit
    for zp, relu in ((-7, False), (12, True)):
        out = np.full(n, 99, dtype=np.int8)
        host_lib.host_requant(acc, out, n, params.ravel(), channels, c0, zp, int(relu), nparts)
        want = np.clip(y + zp, zp if relu else -128, 127)
        np.testing.assert_array_equal(out, want)
