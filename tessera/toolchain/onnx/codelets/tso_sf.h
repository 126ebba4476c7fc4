/* IEEE-754 binary32 arithmetic with integer instructions only (docs/architecture.md §11):
 * every function returns the correctly rounded (round to nearest, ties to even) result of one
 * float32 operation, on bit patterns in 32-bit words, so that codelets can repeat a float32
 * computation of onnxruntime's CPU kernels operation by operation. Finite operands only
 * (the importer's callers never produce infinities or NaN from their constant tables);
 * results that overflow give +-infinity. Bit-exact references:
 * tessera.golden_model.kernels.qlinear (numpy float32 and fma_float32). */
#ifndef TSO_SF_H
#define TSO_SF_H
#include <stdint.h>
#include "tso_common.h"

/* value = m * 2^e (m < 2^24, subnormals have e = -149) */
static inline int32_t sf_unpack(uint32_t x, uint32_t *m)
{
    uint32_t ex = (x >> 23) & 0xffu, f = x & 0x7fffffu;
    if (ex == 0) {
        *m = f;
        return -149;
    }
    *m = f | 0x800000u;
    return (int32_t)ex - 150;
}

/* (-1)^sign * m * 2^e rounded to float32 (m != 0 may carry a sticky bit in its LSB; callers
 * keep its LSB below the rounding position). */
static uint32_t sf_round_pack(uint32_t sign, int32_t e, uint64_t m)
{
    if (m == 0)
        return sign << 31;
    int32_t L = (int32_t)bitlen64(m);
    int32_t shift = L - 24;
    if (e + L - 1 < -126)
        shift = -149 - e;                       /* subnormal quantum 2^-149 */
    uint32_t q;
    if (shift <= 0) {
        q = (uint32_t)(m << (uint32_t)(-shift));
    } else if (shift > 64) {
        q = 0;
    } else if (shift == 64) {
        q = m > (1ull << 63) ? 1u : 0u;
    } else {
        uint64_t rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
        q = (uint32_t)(m >> shift);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
    }
    int32_t eq = e + shift;                     /* exponent of q's LSB, >= -149 */
    uint32_t bits = ((uint32_t)(eq + 149) << 23) + q;
    if (q == 0)
        bits = 0;
    if (bits >= 0x7f800000u)
        bits = 0x7f800000u;
    return bits | (sign << 31);
}

/* fl32(a * b + c), one rounding (fused multiply-add) */
static uint32_t sf_fma(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t ma, mb, mc;
    int32_t ea = sf_unpack(a, &ma), eb = sf_unpack(b, &mb), ec = sf_unpack(c, &mc);
    uint32_t sp = (a ^ b) >> 31, sc = c >> 31;
    uint64_t mp = (uint64_t)ma * mb;
    int32_t ep = ea + eb;
    if (mp == 0)
        return mc == 0 ? ((sp & sc) << 31) : c;
    if (mc == 0)
        return sf_round_pack(sp, ep, mp);
    /* both with the leading bit at bit 61 */
    uint32_t kp = 62u - bitlen64(mp), kc = 62u - bitlen32(mc);
    uint64_t x = mp << kp, y = (uint64_t)mc << kc;
    int32_t ex = ep - (int32_t)kp, ey = ec - (int32_t)kc;
    uint32_t sx = sp, sy = sc;
    if (ey > ex) {
        uint64_t t = x; x = y; y = t;
        int32_t te = ex; ex = ey; ey = te;
        uint32_t ts = sx; sx = sy; sy = ts;
    }
    uint32_t d = (uint32_t)(ex - ey);
    if (d >= 63)
        y = 1;                                  /* sticky (x has its low 14 bits clear) */
    else if (d > 0)
        y = (y >> d) | ((y & ((1ull << d) - 1)) != 0);
    uint64_t s;
    uint32_t sign = sx;
    if (sx == sy) {
        s = x + y;
    } else if (x >= y) {
        s = x - y;
    } else {
        s = y - x;
        sign = sy;
    }
    if (s == 0)
        return 0;
    return sf_round_pack(sign, ex, s);
}

static inline uint32_t sf_add(uint32_t a, uint32_t b) { return sf_fma(a, 0x3f800000u, b); }

static inline uint32_t sf_mul(uint32_t a, uint32_t b)
{
    uint32_t ma, mb;
    int32_t ea = sf_unpack(a, &ma), eb = sf_unpack(b, &mb);
    uint32_t sign = (a ^ b) >> 31;
    uint64_t mp = (uint64_t)ma * mb;
    return mp == 0 ? sign << 31 : sf_round_pack(sign, ea + eb, mp);
}

/* fl32(a / b), b != 0 */
static uint32_t sf_div(uint32_t a, uint32_t b)
{
    uint32_t ma, mb;
    int32_t ea = sf_unpack(a, &ma), eb = sf_unpack(b, &mb);
    uint32_t sign = (a ^ b) >> 31;
    if (ma == 0)
        return sign << 31;
    if (mb == 0)
        return (sign << 31) | 0x7f800000u;
    uint32_t na = 24u - bitlen32(ma), nb = 24u - bitlen32(mb);
    ma <<= na;
    mb <<= nb;
    int32_t e = ea - (int32_t)na - eb + (int32_t)nb;
    uint32_t r = ma;
    if (r < mb) {
        r <<= 1;
        e--;
    }
    uint32_t q = 0;
    for (int i = 0; i < 27; i++) {              /* 27 quotient bits, leading bit at 26 */
        q <<= 1;
        if (r >= mb) {
            r -= mb;
            q |= 1u;
        }
        r <<= 1;
    }
    q |= (r != 0);
    return sf_round_pack(sign, e - 26, q);
}

/* fl32(v) of an int32 */
static inline uint32_t sf_from_int(int32_t v)
{
    uint32_t sign = (uint32_t)v >> 31;
    uint32_t m = sign ? 0u - (uint32_t)v : (uint32_t)v;
    return sf_round_pack(sign, 0, m);
}

/* x86 cvtps2dq (and cvtss2si) in the default rounding mode: round to nearest even; NaN,
 * infinities and values outside the int32 range give INT32_MIN. */
static int32_t sf_cvt_rne(uint32_t x)
{
    if (((x >> 23) & 0xffu) == 0xffu)
        return INT32_MIN;
    uint32_t m;
    int32_t e = sf_unpack(x, &m);
    uint32_t sign = x >> 31, q;
    if (e >= 0) {
        if (e >= 8 || ((uint64_t)m << e) > (sign ? 0x80000000ull : 0x7fffffffull))
            return INT32_MIN;
        q = m << e;
    } else {
        uint32_t d = (uint32_t)-e;
        if (d >= 32)
            return 0;
        uint32_t rem = m & ((1u << d) - 1u), half = 1u << (d - 1);
        q = m >> d;
        if (rem > half || (rem == half && (q & 1u)))
            q++;
    }
    return sign ? (int32_t)(0u - q) : (int32_t)q;
}

#endif
